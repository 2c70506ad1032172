"""The flat tables of a scored run (``scores.csv``, ``scores.parquet``, ``leaderboard.csv``): each opens in one line
in pandas and DuckDB and holds, value for value, what ``verdicts.jsonl`` and ``summary.json`` hold; ids with
``/``, commas, quotes and line breaks survive the round trip."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from council.scoring.scoring import rescore
from council.sim import SimConfig
from council.store import tables
from council.store.runfolder import RunFolder
from tests.council._provider import quiet
from tests.council.test_scales import grade, read, write_world

ODD_MODEL = 'acme/llama,"3.3" 70b'  # a comma, quotes and a space; mapped to its vendor
MEMBERS = ["anthropic", "google", "openai", "alibaba", "deepseek", "mistral"]


def odd_ids(tmp_path: Path) -> tuple[Path, Path]:
    """A bank of binary and graded items (every other item on the ``quality`` scale) whose ids hold commas,
    quotes and a line break, and responses with such row ids, one model renamed to :data:`ODD_MODEL`, stated
    confidences and an abstention."""
    bank_path, responses = write_world(tmp_path, 6, graded="half")
    rename = {}
    items = read(bank_path)
    for k, item in enumerate(items):
        rename[item["id"]] = item["id"] = f'{item["id"]},"x"' if k % 3 else f'{item["id"]}\nsecond line'
    bank_path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
    rows = read(responses)
    for k, row in enumerate(rows):
        row["item_id"] = rename[row["item_id"]]
        if row["model"] == "meta-llama/llama-3.3-70b-instruct":
            row["model"] = ODD_MODEL
        row["row_id"] = f'{row["item_id"]}::{row["model"]}, "#{k}"'
        if k % 4 == 0:
            row["confidence"] = round(0.05 + k / 100, 2)
        row["abstained"] = k == 5
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return bank_path, responses


@pytest.fixture(scope="module")
async def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("tables")
    bank_path, responses = odd_ids(tmp_path)
    result = await grade(tmp_path, bank_path, responses, quiet(SimConfig.planted(4), latency_ms=0.0),
                         vendor_map={ODD_MODEL: "meta"})
    return result.run_dir


def expected_rows(run_dir: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns of ``scores.csv`` and each row's values, written out plainly from ``verdicts.jsonl``."""
    scales = {}
    for item in read(run_dir / "items.jsonl"):
        if item.get("scale"):
            scales[item["scale"]["name"]] = [d["name"] for d in item["scale"]["dimensions"]]
    dims = [f"{s}.{d}" for s in sorted(scales) for d in scales[s]]
    columns = ["row_id", "item_id", "probe", "model", "vendor", "graded", "consensus", "consensus_round1",
               "council_score", "scale", "score_normalised", *dims, "gold_verdict", "confidence", "abstained",
               "deliberated", "deliberation_audit", "flags", "members", "reserves", *(f"{m}.round{r}" for m in MEMBERS for r in (1, 2))]
    rows = []
    for v in read(run_dir / "verdicts.jsonl"):
        row = {k: v[k] for k in ("row_id", "item_id", "probe", "model", "vendor", "graded", "consensus",
                                 "consensus_round1", "council_score", "scale", "score_normalised", "gold_verdict",
                                 "confidence", "abstained", "deliberated", "deliberation_audit")}
        row |= {"flags": ";".join(v["flags"]) or None, "members": ";".join(v["members"]),
                "reserves": ";".join(v["reserves"]) or None}
        for d in dims:
            scale, dim = d.split(".")
            row[d] = v["score"][dim] if v["scale"] == scale else None
        for m in MEMBERS:
            for r in (1, 2):
                if v["scale"] is None:
                    row[f"{m}.round{r}"] = v[f"votes_round{r}"].get(m)
                else:
                    levels = v[f"scores_round{r}"].get(m) or {}
                    row[f"{m}.round{r}"] = ";".join(f"{d}={levels[d]}" for d in scales[v["scale"]] if d in levels) or None
        rows.append(row)
    return columns, rows


def plain(value: Any) -> Any:
    """A cell as plain Python, whichever tool read it: missing is None, numbers are floats, text is text."""
    import pandas

    if value is None or value is pandas.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def same(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        for column, want in e.items():
            have, want = plain(g[column]), plain(want)
            if isinstance(want, float) and isinstance(have, float):
                assert have == pytest.approx(want, abs=1e-9), (e["row_id"], column)
            else:
                assert have == want, (e["row_id"], column, have, want)


async def test_verdicts_carry_every_field_a_reader_needs(run):
    rows = {r["row_id"]: r for r in read(run / "rows.jsonl")}
    verdicts = read(run / "verdicts.jsonl")
    assert any(v["scale"] for v in verdicts) and any(v["consensus"] for v in verdicts)
    for v in verdicts:
        row = rows[v["row_id"]]
        assert v["confidence"] == row.get("confidence") and v["abstained"] == row.get("abstained", False)
        if not v["graded"]:
            assert v["council_score"] is None
        elif v["scale"] is None:
            assert v["council_score"] == {"correct": 100.0, "incorrect": 0.0}[v["consensus"]]
        else:
            assert v["council_score"] == v["score_normalised"]
    assert any(v["confidence"] is not None for v in verdicts) and any(v["abstained"] for v in verdicts)
    assert any(v["model"] == ODD_MODEL for v in verdicts)


async def test_scores_csv_opens_in_pandas_and_duckdb_with_the_verdicts_rows(run):
    import duckdb
    import pandas

    columns, expected = expected_rows(run)
    path = run / "scores.csv"
    frame = pandas.read_csv(path)
    assert list(frame.columns) == columns
    same(frame.to_dict("records"), expected)
    relation = duckdb.sql(f"select * from '{path}'")
    assert relation.columns == columns
    same([dict(zip(columns, r, strict=True)) for r in relation.fetchall()], expected)
    ids = set(frame["row_id"])
    assert any("\n" in i for i in ids) and any('"' in i and "," in i for i in ids)
    assert (frame["model"] == ODD_MODEL).sum() == 6 and frame["model"].str.contains("/").all()


async def test_scores_parquet_opens_in_pandas_and_duckdb_typed(run):
    import duckdb
    import pandas
    import pyarrow.parquet as pq

    columns, expected = expected_rows(run)
    path = run / "scores.parquet"
    frame = pandas.read_parquet(path)
    assert list(frame.columns) == columns
    same(frame.to_dict("records"), expected)
    relation = duckdb.sql(f"select * from '{path}'")
    same([dict(zip(relation.columns, r, strict=True)) for r in relation.fetchall()], expected)
    schema = pq.read_schema(path)
    kinds = {name: str(schema.field(name).type) for name in schema.names}
    assert kinds["graded"] == kinds["abstained"] == kinds["deliberated"] == kinds["deliberation_audit"] == "bool"
    assert kinds["council_score"] == kinds["confidence"] == kinds["score_normalised"] == "double"
    assert kinds["quality.accuracy"] == "int64" and kinds["row_id"] == kinds["openai.round1"] == "string"


async def test_leaderboard_is_the_summary_per_model(run):
    import duckdb
    import pandas

    summary = orjson.loads((run / "summary.json").read_bytes())
    board = pandas.read_csv(run / "leaderboard.csv")
    assert list(board["model"]) == sorted(summary["models"])
    assert list(board.columns[:10]) == ["model", "vendor", "rows", "not_graded", "score", "ci_low", "ci_high",
                                        "score_round1", "tie_rate", "true_score"]
    for line in board.to_dict("records"):
        m = summary["models"][line["model"]]
        ci = summary["uncertainty"]["scores"][line["model"]]
        for key in ("vendor", "rows", "not_graded", "score", "score_round1", "tie_rate", "true_score"):
            assert plain(line[key]) == plain(m.get(key)), (line["model"], key)
        assert plain(line["ci_low"]) == plain(ci["ci_low"]) and plain(line["ci_high"]) == plain(ci["ci_high"])
        q = summary["scales"]["quality"]["models"][line["model"]]
        assert [plain(line[f"quality.{k}"]) for k in ("rows", "score", "ci_low", "ci_high")] == [
            plain(q[k]) for k in ("rows", "score", "ci_low", "ci_high")]
    duck = duckdb.sql(f"select model, score from '{run / 'leaderboard.csv'}' order by model").fetchall()
    assert [(m, plain(s)) for m, s in duck] == [(m, plain(summary["models"][m]["score"])) for m in sorted(summary["models"])]


async def test_rescore_writes_the_same_tables(run, tmp_path):
    import pandas

    before = {name: (run / name).read_bytes() for name in ("scores.csv", "leaderboard.csv")}
    frame = pandas.read_parquet(run / "scores.parquet")
    rescore(RunFolder.open(run))
    assert {name: (run / name).read_bytes() for name in before} == before
    assert pandas.read_parquet(run / "scores.parquet").equals(frame)
    assert not list(run.glob("*.tmp"))


def test_without_pyarrow_only_the_csv_tables(run, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("manifest.json", "items.jsonl", "verdicts.jsonl", "summary.json"):
        (copy / name).write_bytes((run / name).read_bytes())
    real = tables.importlib.util.find_spec
    monkeypatch.setattr(tables.importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    assert tables.write_scores(copy) == [copy / "scores.csv", copy / "leaderboard.csv"]
    assert (copy / "scores.csv").read_bytes() == (run / "scores.csv").read_bytes()
    assert not (copy / "scores.parquet").exists()


def test_score_columns_are_the_documented_order():
    columns = [c for c, _ in tables.score_columns({"b": ["y", "x"], "a": ["z"]}, ["openai", "google"])]
    assert columns == ["row_id", "item_id", "probe", "model", "vendor", "graded", "consensus", "consensus_round1",
                       "council_score", "scale", "score_normalised", "a.z", "b.y", "b.x", "gold_verdict",
                       "confidence", "abstained", "deliberated", "deliberation_audit", "flags", "members", "reserves", "openai.round1", "openai.round2",
                       "google.round1", "google.round2"]
    for column in ("council_score", "score_normalised", "<scale>.<dim>", "<member>.round1", "confidence", "flags"):
        assert f"``{column}``" in tables.__doc__


def test_the_tables_are_written_without_importing_pandas(run):
    """pyarrow's own converter imports pandas when it is installed (about 0.4 s of every run's scoring); the
    parquet columns are built from their buffers instead."""
    import subprocess
    import sys

    probe = ("import sys; from council.store import tables; tables.write_scores(sys.argv[1]); "
             "print('pandas' in sys.modules, 'pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, str(run)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
