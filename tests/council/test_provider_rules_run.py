"""The default roster grades every row of the shipped sample against the embedded provider in its realistic (default)
world, where reasoning models refuse what their APIs refuse and their thinking comes out of the output bound: through
one gateway (the default) and at each vendor's own API (`council init --layout native`), with 0 refused requests, 0
empty answers cut at length, every row graded; summary.json counts each judge's reasoning."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from council.cli import EXIT_OK, main
from council.store.runfolder import RunFolder

REASONING = {"openai", "google"}  # gpt-5 and gemini-2.5-pro reason, always; the other default seats do not


def grade(tmp_path: Path, *extra: str) -> RunFolder:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--backend", "local", "--no-report", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r",
                     *extra])
    assert code == EXIT_OK, err.getvalue()[-2000:]
    return RunFolder.open(tmp_path / "runs" / "r")


@pytest.mark.parametrize("layout", ["gateway", "native"])
def test_the_default_roster_grades_every_row_on_the_providers_as_they_behave(tmp_path, layout):
    extra: tuple[str, ...] = ()
    if layout == "native":
        assert main(["init", str(tmp_path / "native.toml"), "--layout", "native"]) == EXIT_OK
        extra = ("--config", str(tmp_path / "native.toml"), "--simulate")
    folder = grade(tmp_path, *extra)
    records = folder.read_records(1) + folder.read_records(2)
    assert records and not [r for r in records if r.parse_status == "error"]  # nothing refused
    assert not [r for r in records if r.finish_reason == "length" and not any(r.raw_outputs)]  # nothing cut empty
    summary = folder.read_json("summary.json")
    assert summary["complete"] and summary["not_graded_rows"] == 0 and summary["rows_total"] == 960
    sent = {r.member: r.request.sent for r in records}
    if layout == "native":
        assert sent["anthropic"]["model"] == "claude-sonnet-4-5" and sent["deepseek"]["model"] == "deepseek-chat"
        assert "extra_body" in sent["google"]
    else:
        assert sent["anthropic"] is None and sent["google"]["reasoning"] == {"max_tokens": 1024}
    assert sent["openai"]["max_completion_tokens"] == 256 + 1024 and "temperature" not in sent["openai"]
    tokens = summary["judge_tokens"]
    for vendor, judge in tokens.items():
        mine = [r for r in records if r.member == vendor and r.reused_from is None]
        assert judge["votes"] == len(mine)
        assert judge["reasoning_tokens"] == sum(r.usage.reasoning_tokens for r in mine)
        assert (judge["reasoning_tokens"] > 0) == (vendor in REASONING)
    for vendor in REASONING:  # reasoning billed as output, at the judge's output rate
        price = json.loads((folder.path / "manifest.json").read_text())["prices"][
            next(m["judge_model"] for m in summary_roster(folder) if m["vendor"] == vendor)]
        expected = tokens[vendor]["reasoning_tokens"] * price["output_mtok"] / 1e6
        assert tokens[vendor]["reasoning_cost_usd"] == pytest.approx(expected, abs=1e-6)
        assert tokens[vendor]["reasoning_share_of_cost"] > 0.5  # at these prices reasoning dominates both


def summary_roster(folder: RunFolder) -> list[dict]:
    return json.loads((folder.path / "manifest.json").read_text())["roster"]
