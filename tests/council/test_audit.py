"""The audit trail: rescore from disk, torn lines, never overwriting, re-use of archived calls, diff and
diagnostics."""

from __future__ import annotations

import orjson
import pytest

import bank
from council.cli import main
from council.core.errors import RunFolderError
from council.core.schema import JudgeCallRecord
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, resume_council, run_council
from council.store.runfolder import RunFolder, read_jsonl
from tests.council.test_end_to_end import lines, subset


async def grade(tmp_path, run_id, responses, **kw):
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
                     backend="local", **kw)
    return await run_council(req)


@pytest.fixture
async def small_run(tmp_path):
    return await grade(tmp_path, "a", subset(tmp_path, 5))


def test_rescore_is_byte_identical(small_run, capsys):
    folder = small_run.run_dir
    summary, verdicts = (folder / "summary.json").read_bytes(), (folder / "verdicts.jsonl").read_bytes()
    (folder / "summary.json").unlink()
    (folder / "verdicts.jsonl").write_bytes(b"")
    assert main(["rescore", "a", "--runs-dir", str(folder.parent)]) == 0
    assert (folder / "summary.json").read_bytes() == summary
    assert (folder / "verdicts.jsonl").read_bytes() == verdicts


async def test_torn_last_line_is_survived(tmp_path, small_run):
    folder = small_run.run_dir
    verdicts = (folder / "verdicts.jsonl").read_bytes()
    r2 = folder / "round2.jsonl"
    data = r2.read_bytes()
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    torn = data[: len(data) - len(last) // 2 - 1]  # the last record cut in the middle, as a crash leaves it
    r2.write_bytes(torn)
    records = read_jsonl(r2, JudgeCallRecord)  # readable: the torn line is ignored
    assert len(records) == len(data.splitlines()) - 1
    result = await resume_council(tmp_path / "runs", "a", backend="local")
    assert result.issued == 1 and result.served_from_archive > 0  # only the torn vote is asked again
    assert r2.read_bytes().count(b"\n") == len(data.splitlines())
    assert all(orjson.loads(line) for line in r2.read_bytes().splitlines())  # no broken line left behind
    assert (folder / "verdicts.jsonl").read_bytes() == verdicts


def test_a_torn_line_elsewhere_is_an_error(tmp_path, small_run):
    r1 = small_run.run_dir / "round1.jsonl"
    lines_ = r1.read_bytes().splitlines(keepends=True)
    r1.write_bytes(lines_[0] + b'{"broken": \n' + b"".join(lines_[1:]))
    with pytest.raises(RunFolderError, match=r"round1.jsonl:2:"):
        RunFolder.open(small_run.run_dir).read_records(1)


async def test_existing_run_is_never_overwritten(tmp_path, small_run):
    with pytest.raises(RunFolderError, match="already exists"):
        await grade(tmp_path, "a", subset(tmp_path, 5))


async def test_reuse_from_serves_archived_calls(tmp_path, small_run):
    b = await grade(tmp_path, "b", subset(tmp_path, 5), reuse_from=["a"])
    votes = len(lines(b.run_dir / "round1.jsonl")) + len(lines(b.run_dir / "round2.jsonl"))
    assert b.issued == 0 and b.served_from_archive == votes and lines(b.run_dir / "round2.jsonl")
    stats = orjson.loads((b.run_dir / "provider_stats.json").read_bytes())
    assert sum(v["billed"] for v in stats["vendors"].values()) == 0  # not one call paid for
    assert (b.run_dir / "verdicts.jsonl").read_bytes() == (small_run.run_dir / "verdicts.jsonl").read_bytes()
    assert all(r["reused_from"] == "a" for r in lines(b.run_dir / "round2.jsonl"))
    assert orjson.loads((b.run_dir / "manifest.json").read_bytes())["reuse_from"] == ["a"]
    # a larger run re-uses what it can and asks the rest
    c = await grade(tmp_path, "c", subset(tmp_path, 7), reuse_from=["a"])
    assert c.served_from_archive == b.served_from_archive and c.issued > 0


async def test_diff_says_comparable_and_what_changed(tmp_path, small_run, capsys):
    await grade(tmp_path, "same", subset(tmp_path, 5))
    await grade(tmp_path, "audit", subset(tmp_path, 5), config=CouncilConfig(self_exclusion=False))
    runs = str(tmp_path / "runs")
    assert main(["diff", "a", "same", "--runs-dir", runs, "--json"]) == 0
    same = orjson.loads(capsys.readouterr().out)
    assert same["comparable"] and same["changed_rows"] == [] and same["rows_compared"] == 30
    assert all(m["delta"] == 0 for m in same["models"].values())
    assert main(["diff", "a", "audit", "--runs-dir", runs, "--json"]) == 6  # not comparable: its own exit code
    other = orjson.loads(capsys.readouterr().out)
    assert not other["comparable"] and [m["field"] for m in other["mismatches"]] == ["self_exclusion"]
    va = {v["row_id"]: v["consensus"] for v in lines(small_run.run_dir / "verdicts.jsonl")}
    vb = {v["row_id"]: v["consensus"] for v in lines(tmp_path / "runs" / "audit" / "verdicts.jsonl")}
    assert {r["row_id"] for r in other["changed_rows"]} == {k for k in va if va[k] != vb[k]}
    assert main(["diff", "a", "audit", "--runs-dir", runs]) == 6
    assert "not comparable" in capsys.readouterr().out


async def test_diff_marks_verdicts_on_rows_whose_response_changed(tmp_path, small_run, capsys):
    """Another answer to grade is not another grading: still comparable, but the changed verdicts on rows whose
    response changed are told apart from those the council changed its mind on."""
    rows = lines(subset(tmp_path, 5))
    edited = {r["row_id"] for r in rows[::5]}
    flip = {"correct": "incorrect", "incorrect": "correct"}
    for r in rows:
        if r["row_id"] in edited:
            r["response"] += " (revised)"
            r["gold_verdict"] = flip[r["gold_verdict"]]
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    await grade(tmp_path, "edited", path)
    assert main(["diff", "a", "edited", "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    d = orjson.loads(capsys.readouterr().out)
    assert d["comparable"] and d["responses_changed"]
    marked = {r["row_id"] for r in d["changed_rows"] if r["response_changed"]}
    assert marked and marked <= edited and d["responses_changed_rows"] == len(marked)
    assert {r["row_id"] for r in d["changed_rows"]} - marked == {r["row_id"] for r in d["changed_rows"]} - edited
    assert main(["diff", "a", "edited", "--runs-dir", str(tmp_path / "runs")]) == 0
    shown = capsys.readouterr().out
    assert "responses differ" in shown and sum(line.endswith(" *") for line in shown.splitlines()) == len(marked)
    assert main(["diff", "a", "a", "--runs-dir", str(tmp_path / "runs"), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["responses_changed"] is False


def test_diagnostics_count_truncation_and_warn(tmp_path, capsys):
    from council.sim import SimConfig

    # A truncated reply is asked again, so a vote ends truncated only when both replies were: at a rate of 0.5,
    # about one google vote in four, and in one CI run of the suite 2% of the votes, the warning's threshold. At
    # 0.9 about four in five are.
    base = SimConfig.planted(seed=0)
    sim = base.model_copy(update={"vendors": {**base.vendors, "google": base.vendors["google"].model_copy(
        update={"truncation_rate": 0.9})}})
    path = tmp_path / "sim.json"
    path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    responses = subset(tmp_path, 4)
    assert main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "t",
                 "--responses", str(responses), "--sim-config", str(path), "--simulate"]) == 0
    err = capsys.readouterr().err
    summary = orjson.loads((tmp_path / "runs" / "t" / "summary.json").read_bytes())
    diag = summary["diagnostics"]
    records = lines(tmp_path / "runs" / "t" / "round1.jsonl") + lines(tmp_path / "runs" / "t" / "round2.jsonl")
    assert diag["truncated"] == sum(r["finish_reason"] == "length" for r in records) > 0
    assert diag["repair_reasks"] > 0 and diag["error_rate_per_member"]["anthropic"] <= diag["error_rate_per_member"]["google"]
    assert "truncated" in diag["warnings"] and "warning: truncated" in err
