"""End to end against the embedded provider: the run folder, the protocol invariants on real records,
and the council's accuracy and self-exclusion on the shipped sample with the provider's ground truth."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

import bank
from council.cli import main
from council.config import CouncilConfig
from council.runner import RunRequest, run_council


def subset(tmp_path: Path, n_items: int) -> Path:
    """The first ``n_items`` items' responses from the shipped sample, as a responses file."""
    rows = [orjson.loads(line) for line in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if line.strip()]
    keep = sorted({r["item_id"] for r in rows})[:n_items]
    path = tmp_path / f"responses-{n_items}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows if r["item_id"] in keep))
    return path


def lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def grade(tmp_path, responses, backend="local", run_id="r", **config):
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
                     backend=backend, config=CouncilConfig(**config))
    return await run_council(req)


def check_run_folder(result, n_rows: int) -> None:
    folder = result.run_dir
    for name in ("manifest.json", "rows.jsonl", "round1.jsonl", "round2.jsonl", "verdicts.jsonl", "summary.json",
                 "log.jsonl", "provider_stats.json"):
        assert (folder / name).is_file(), name
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    rows = {r["row_id"]: r for r in lines(folder / "rows.jsonl")}
    assert len(rows) == n_rows == manifest["rows"]
    for round_ in (1, 2):
        records = lines(folder / f"round{round_}.jsonl")
        keys = Counter((r["row_id"], r["member"]) for r in records)
        assert max(keys.values()) == 1  # one record per vote
        expected = {(rid, m["vendor"]) for rid, row in rows.items() for m in manifest["roster"]
                    if m["vendor"] != row["vendor"]}
        assert set(keys) == expected  # every eligible member, and no judge of the row's own vendor
        for r in records:
            assert r["round"] == round_ and r["prompt_version"] and r["prompt_hash"] == manifest["prompt_hashes"][f"round{round_}"]
            assert r["ok"] == (r["verdict"] is not None)
            assert r["raw_outputs"]  # the raw output is kept, parsed or not
    verdicts = lines(folder / "verdicts.jsonl")
    assert len(verdicts) == n_rows
    summary = orjson.loads((folder / "summary.json").read_bytes())
    for key in ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift", "models"):
        assert key in summary
    assert sum(m["rows"] for m in summary["models"].values()) == n_rows
    stats = orjson.loads((folder / "provider_stats.json").read_bytes())
    billed = sum(m["billed"] for m in stats["models"].values())
    records = lines(folder / "round1.jsonl") + lines(folder / "round2.jsonl")
    assert billed >= len([r for r in records if r["parse_status"] != "error"])


async def test_local_backend_end_to_end(tmp_path):
    result = await grade(tmp_path, subset(tmp_path, 10))
    check_run_folder(result, 60)
    log = lines(result.run_dir / "log.jsonl")
    assert {e["event"] for e in log} >= {"run.start", "run.done"}
    assert b"Bearer" not in (result.run_dir / "log.jsonl").read_bytes()


async def test_ray_backend_end_to_end(tmp_path, ray_session):
    result = await grade(tmp_path, subset(tmp_path, 8), backend="ray")
    check_run_folder(result, 48)


async def test_same_seed_same_verdicts(tmp_path):
    responses = subset(tmp_path, 6)
    a = await grade(tmp_path, responses, run_id="a", seed=3)
    b = await grade(tmp_path, responses, run_id="b", seed=3)
    va, vb = lines(a.run_dir / "verdicts.jsonl"), lines(b.run_dir / "verdicts.jsonl")
    assert va == vb


@pytest.fixture(scope="module")
async def sample_runs(tmp_path_factory):
    """The whole shipped sample, graded with and without self-exclusion (local backend)."""
    tmp = tmp_path_factory.mktemp("sample")
    on = await grade(tmp, bank.SAMPLE_RESPONSES, run_id="on")
    off = await grade(tmp, bank.SAMPLE_RESPONSES, run_id="off", self_exclusion=False)
    return on.summary, off.summary


async def test_council_at_least_as_accurate_as_best_single_member(sample_runs):
    on, _ = sample_runs
    acc = on["accuracy_vs_gold"]
    best_member = max(v for v in acc["members_round1"].values())
    assert acc["council"] >= best_member, acc
    assert acc["round1"] >= best_member - 0.02, acc


async def test_self_exclusion_removes_planted_self_preference(sample_runs):
    on, off = sample_runs
    # The embedded provider's default plants strong self-preference in openai (0.8) and google (0.7).
    for model in ("openai/gpt-4.1-mini", "google/gemini-2.5-flash"):
        bias_on = on["models"][model]["score"] - on["models"][model]["true_score"]
        bias_off = off["models"][model]["score"] - off["models"][model]["true_score"]
        assert bias_off - bias_on >= 0.03, (model, bias_on, bias_off)
    # With exclusion on, the self-preferring vendors' models are not favoured over the rest.
    biases = {m: v["score"] - v["true_score"] for m, v in on["models"].items()}
    others = [b for m, b in biases.items() if not m.startswith(("openai/", "google/"))]
    assert biases["openai/gpt-4.1-mini"] <= max(others) + 0.02, biases


def test_cli_run_refuses_existing_run_and_reports_bad_bank(tmp_path, capsys):
    responses = subset(tmp_path, 2)
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--responses", str(responses)]
    assert main([*args, "--run-id", "x"]) == 0
    out = capsys.readouterr().out
    assert "council" in out and "deliberation_impact" in out and "truth" in out
    assert main([*args, "--run-id", "x"]) == 2
    assert "already exists" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "probe": "p", "prompt": "q", "reference": "r"}\nnot json\n')
    assert main([*args, "--run-id", "y", "--bank", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: rationale" in err and f"{bad}:2:" in err
