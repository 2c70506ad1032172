"""The run folder's reference (``council.store.run_fields``, rendered into the docs site) describes exactly what a
run writes: a field of ``summary.json`` or a file of the folder that it lacks, or one it says every run has that
the run lacks, fails here."""

from __future__ import annotations

import json
import re
from itertools import islice
from pathlib import Path

import pytest

from council.cli import main
from council.store.run_fields import FILES, SUMMARY

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "bank" / "samples" / "neo_sample_responses.jsonl"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run of a slice of the shipped sample, graded by the embedded provider through the command line."""
    tmp = tmp_path_factory.mktemp("fields")
    responses = tmp / "responses.jsonl"
    with SAMPLE.open(encoding="utf-8") as f:
        responses.write_text("".join(islice(f, 120)), encoding="utf-8")
    assert main(["run", "--backend", "local", "--simulate", "--responses", str(responses), "--runs-dir",
                 str(tmp / "runs"), "--run-id", "fields", "--progress-every", "0"]) == 0
    return tmp / "runs" / "fields"


def _always(described: dict[str, tuple[str, str | None]]) -> set[str]:
    return {name for name, (_, when) in described.items() if when is None}


def test_every_field_of_summary_json_is_described_and_every_constant_one_is_there(run: Path) -> None:
    fields = set(json.loads((run / "summary.json").read_text(encoding="utf-8")))
    assert fields - set(SUMMARY) == set(), "fields summary.json has that council.store.run_fields lacks"
    assert _always(SUMMARY) - fields == set(), "fields described as in every run that this run lacks"


def test_every_file_of_the_run_folder_is_described_and_every_constant_one_is_there(run: Path) -> None:
    entries = {p.name + ("/" if p.is_dir() else "") for p in run.iterdir()}
    assert entries - set(FILES) == set(), "files the run folder has that council.store.run_fields lacks"
    assert _always(FILES) - entries == set(), "files described as in every run that this run lacks"


def test_a_field_only_some_runs_have_is_one_the_scoring_writes() -> None:
    """A conditional field's name is written by the code that builds the summary (it cannot be checked on the
    sample, which has no ``--models``, scales or audits): a field renamed there and not here fails."""
    source = "".join(p.read_text(encoding="utf-8") for p in (REPO / "council" / "scoring").glob("*.py"))
    for name in set(SUMMARY) - _always(SUMMARY):
        assert re.search(rf"""["']{re.escape(name)}["']""", source), name
