"""End to end against the embedded provider: the run folder, the protocol invariants on real records,
and the council's accuracy and self-exclusion on the shipped sample with the provider's ground truth."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

import bank
from council.cli import main
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from tests.council._roster import SMALL_ROSTER


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


def expected_panel(manifest: dict, vendor: str) -> set[str]:
    """The panel rule written out plainly: regular seats minus the row's vendor, emptied seats filled by
    reserves of other vendors."""
    regulars = [m["vendor"] for m in manifest["roster"] if not m["reserve"]]
    reserves = [m["vendor"] for m in manifest["roster"] if m["reserve"] and m["vendor"] != vendor]
    seated = [v for v in regulars if v != vendor]
    return {*seated, *reserves[: len(regulars) - len(seated)]}


def check_run_folder(result, n_rows: int) -> None:
    folder = result.run_dir
    for name in ("manifest.json", "rows.jsonl", "round1.jsonl", "round2.jsonl", "verdicts.jsonl", "summary.json",
                 "log.jsonl", "provider_stats.json"):
        assert (folder / name).is_file(), name
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    rows = {r["row_id"]: r for r in lines(folder / "rows.jsonl")}
    assert len(rows) == n_rows == manifest["rows"]
    verdicts = {v["row_id"]: v for v in lines(folder / "verdicts.jsonl")}
    # Round two went where the run's rule sends it: every row (deliberate all), or the disputed rows and the
    # audited share of the others (disputed); a row that skipped it keeps its round-one consensus.
    sent = {rid for rid, v in verdicts.items() if v["deliberated"] or v["deliberation_audit"]}
    if manifest["config"]["deliberate"] == "all":
        assert sent == set(rows)
    else:
        assert sent < set(rows) and all(v["consensus"] == v["consensus_round1"] for v in verdicts.values()
                                        if not v["deliberated"])
    for round_ in (1, 2):
        records = lines(folder / f"round{round_}.jsonl")
        keys = Counter((r["row_id"], r["member"]) for r in records)
        assert max(keys.values()) == 1  # one record per vote
        expected = {(rid, vendor) for rid, row in rows.items() for vendor in expected_panel(manifest, row["vendor"])
                    if round_ == 1 or rid in sent}
        audit = {(rid, m) for rid, m in expected if round_ == 2 and verdicts[rid]["deliberation_audit"]}
        # every panel member, and no judge of the row's own vendor; an audit row asks half its panel at least,
        # until its change is decided (council.protocol.deliberation.audit_wave)
        assert expected - audit <= set(keys) <= expected
        for rid in {rid for rid, _ in audit}:
            asked = sum(k[0] == rid for k in keys)
            assert asked >= (len(expected_panel(manifest, rows[rid]["vendor"])) + 1) // 2
        for r in records:
            assert r["round"] == round_ and r["judge_prompt_version"] == manifest["judge_prompt_version"]
            assert r["judge_prompt_hash"] == manifest["prompt_hashes"][f"round{round_}"]
            assert r["methodology_version"] == manifest["methodology_version"] and r["rubric_hash"]
            assert r["request"]["model"] == r["judge_model"] and len(r["request_key"]) == 32
            assert r["ok"] == (r["verdict"] is not None)
            assert r["raw_outputs"]  # the raw output is kept, parsed or not
    assert len(verdicts) == n_rows
    summary = orjson.loads((folder / "summary.json").read_bytes())
    for key in ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift", "models"):
        assert key in summary
    assert sum(m["rows"] for m in summary["models"].values()) == n_rows
    stats = orjson.loads((folder / "provider_stats.json").read_bytes())
    # The provider's own world says who made each model: no judge received a row of its own vendor.
    assert all(v["own_vendor_rows"] == 0 for v in stats["vendors"].values()), stats["vendors"]
    assert manifest["simulated"] and summary["simulated"]
    billed = sum(m["billed"] for m in stats["models"].values())
    records = lines(folder / "round1.jsonl") + lines(folder / "round2.jsonl")
    assert billed >= len({r["request_id"] for r in records if r["parse_status"] != "error"})


async def test_local_backend_end_to_end(tmp_path):
    result = await grade(tmp_path, subset(tmp_path, 10))
    check_run_folder(result, 60)
    log = lines(result.run_dir / "log.jsonl")
    assert {e["event"] for e in log} >= {"run.start", "run.done"}
    assert b"Bearer" not in (result.run_dir / "log.jsonl").read_bytes()


async def test_ray_backend_end_to_end(tmp_path, ray_session):
    import ray

    result = await grade(tmp_path, subset(tmp_path, 8), backend="ray", roster=SMALL_ROSTER)
    check_run_folder(result, 48)
    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}  # Ray stays on the loopback


def test_a_command_run_where_ray_is_up_leaves_that_ray_running(tmp_path, ray_session):
    """`council run` called by a program that has Ray up already (here the suite's) stops only a Ray it started
    itself: a local run used to shut the caller's Ray down as its grading ended."""
    import ray

    address = ray.get_runtime_context().gcs_address
    assert main(["run", "--backend", "local", "--simulate", "--responses", str(subset(tmp_path, 2)), "--runs-dir",
                 str(tmp_path / "runs"), "--progress-every", "0"]) == 0
    assert ray.is_initialized() and ray.get_runtime_context().gcs_address == address


async def test_same_seed_same_verdicts(tmp_path):
    responses = subset(tmp_path, 6)
    a = await grade(tmp_path, responses, run_id="a", seed=3)
    b = await grade(tmp_path, responses, run_id="b", seed=3)
    va, vb = lines(a.run_dir / "verdicts.jsonl"), lines(b.run_dir / "verdicts.jsonl")
    assert va == vb


@pytest.fixture(scope="module")
async def sample_runs(tmp_path_factory):
    """The whole shipped sample, with and without self-exclusion, under the planted provider and under a
    control provider identical but for self-preference (zero everywhere)."""
    from council.sim import SimConfig

    tmp = tmp_path_factory.mktemp("sample")
    planted = SimConfig.planted(seed=0)
    control = planted.model_copy(update={"vendors": {
        v: b.model_copy(update={"self_preference": 0.0}) for v, b in planted.vendors.items()}})
    out = {}
    for name, sim in (("planted", planted), ("control", control)):
        sim_file = tmp / f"{name}.json"
        sim_file.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
        for exclusion in (True, False):
            req = RunRequest(bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp / "runs",
                             run_id=f"{name}-{exclusion}", backend="local", sim_config=sim_file,
                             config=CouncilConfig(self_exclusion=exclusion))
            out[name, exclusion] = await run_council(req)
    return out


def scores(result) -> dict[str, float]:
    return {m: v["score"] for m, v in result.summary["models"].items()}


async def test_self_exclusion_removes_planted_self_preference(sample_runs):
    # Exclusion on: no judge sees its own vendor's rows, so the planted leniency changes nothing.
    assert scores(sample_runs["planted", True]) == scores(sample_runs["control", True])
    # Exclusion off: the self-preferring vendors' models can only gain against the control, meta's (no
    # council member of its vendor) not at all. How much a lenient member moves a five-judge majority is
    # what the world says; the member's own leniency is measured directly below.
    off, ctl = scores(sample_runs["planted", False]), scores(sample_runs["control", False])
    gain = {m: off[m] - ctl[m] for m in off}
    assert gain["meta-llama/llama-3.3-70b-instruct"] == 0, gain
    assert all(g >= 0 for g in gain.values()), gain
    # Whether a lenient member moves a five-judge majority at this seed is chance (one to three rows of the
    # 320 swing in round one across seeds): what is guaranteed is where leniency acts. A round-one vote differs
    # from the control's only where the member grades its own vendor's model, and some do.
    from council.sim import WORLD

    model_of = {r["row_id"]: r["model"] for r in lines(sample_runs["planted", False].run_dir / "rows.jsonl")}
    votes = {name: {(r["row_id"], r["member"]): r["verdict"]
                    for r in lines(sample_runs[name, False].run_dir / "round1.jsonl")} for name in ("planted", "control")}
    moved = [(row, member) for (row, member), verdict in votes["planted"].items()
             if verdict != votes["control"][row, member]]
    assert moved and all(WORLD[model_of[row]] == member for row, member in moved), moved[:5]


def own_leniency(folder: Path, member: str) -> tuple[float, float]:
    """The member's round-one 'correct' rate on wrong answers of its own vendor's models and of others',
    with 'own' decided by the embedded provider's world, not by the council's vendor resolution."""
    from council.sim import WORLD

    rows = {r["row_id"]: r for r in lines(folder / "rows.jsonl")}
    own, other = [], []
    for r in lines(folder / "round1.jsonl"):
        row = rows[r["row_id"]]
        if r["member"] == member and row["gold_verdict"] == "incorrect" and r["verdict"]:
            (own if WORLD[row["model"]] == member else other).append(r["verdict"] == "correct")
    return (sum(own) / len(own) if own else float("nan")), sum(other) / len(other)


async def test_own_vendor_judge_is_lenient_only_when_allowed_to_grade_itself(sample_runs):
    folder = sample_runs["planted", False].run_dir
    own, other = own_leniency(folder, "openai")
    assert own > 0.6 > 0.3 > other, (own, other)
    ctl_own, _ = own_leniency(sample_runs["control", False].run_dir, "openai")
    assert ctl_own < 0.3, ctl_own  # the control world plants no leniency
    excluded = sample_runs["planted", True].run_dir
    from council.sim import WORLD

    rows = {r["row_id"]: r for r in lines(excluded / "rows.jsonl")}
    assert not any(WORLD[rows[r["row_id"]]["model"]] == r["member"] for r in lines(excluded / "round1.jsonl"))


async def test_council_versus_its_best_member_is_measured_not_assumed(sample_runs):
    """The summary reports council and member accuracy against the truth with bootstrap intervals, the
    council minus each member on exactly the rows that member voted (self-exclusion keeps it off its own
    vendor's rows), and the member hardest to beat on that basis: whatever the sign. Checked against the
    run's own verdicts.jsonl."""
    run = sample_runs["planted", True]
    acc = run.summary["accuracy_vs_gold"]
    verdicts = [v for v in lines(run.run_dir / "verdicts.jsonl") if v["gold_verdict"] and v["consensus"]]
    versus = acc["council_minus_member"]
    assert set(versus) == set(acc["members_round1"])
    for member, d in versus.items():
        mine = [v for v in verdicts if v["votes_round1"].get(member)]
        assert 0 < d["rows"] == len(mine) < len(verdicts)  # never its own vendor's rows
        council = sum(v["consensus"] == v["gold_verdict"] for v in mine)
        alone = sum(v["votes_round1"][member] == v["gold_verdict"] for v in mine)
        assert d["value"] == pytest.approx((council - alone) / len(mine), abs=1e-6), member
        assert d["ci_low"] <= d["value"] <= d["ci_high"]
    best = acc["best_member_round1"]
    assert best == min(versus, key=lambda m: versus[m]["value"])
    assert acc["council_minus_best_member"] == versus[best]
    assert acc["council_ci"]["ci_low"] <= acc["council"] <= acc["council_ci"]["ci_high"]


def test_cli_run_refuses_existing_run_and_reports_bad_bank(tmp_path, capsys):
    responses = subset(tmp_path, 2)
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--responses", str(responses),
            "--simulate"]
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


async def test_unparseable_votes_are_missing_after_one_repair(tmp_path):
    from council.sim import SimConfig, VendorBehaviour

    config = SimConfig.planted(seed=0)
    broken = config.model_copy(update={"vendors": {**config.vendors, "deepseek": VendorBehaviour(malformed_rate=1.0)}})
    sim_file = tmp_path / "sim.json"
    sim_file.write_bytes(orjson.dumps(broken.model_dump(mode="json")))
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 4), runs_dir=tmp_path / "runs", run_id="m",
                     backend="local", sim_config=sim_file)
    result = await run_council(req)
    records = lines(result.run_dir / "round1.jsonl") + lines(result.run_dir / "round2.jsonl")
    deepseek = [r for r in records if r["member"] == "deepseek"]
    assert deepseek and all(r["verdict"] is None and not r["ok"] for r in deepseek)
    assert all(r["parse_status"] == "unparseable" and len(r["raw_outputs"]) == 2 for r in deepseek)  # one repair
    assert all(r["raw_outputs"][0] for r in deepseek)  # raw output kept
    verdicts = lines(result.run_dir / "verdicts.jsonl")
    assert all("missing_votes" in v["flags"] for v in verdicts if "deepseek" in v["members"])
    assert all(v["votes_round2"].get("deepseek", None) is None for v in verdicts)


def test_sim_command_and_provider_url(tmp_path):
    """`council sim` as a separate process, and `council grade --provider-url` sending every call to it."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "council.cli", "sim", "--port", "0", "--seed", "1"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "embedded provider listening on http://127.0.0.1:PORT/v1"
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), line
        code = main(["grade", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "p",
                     "--responses", str(subset(tmp_path, 3)), "--provider-url", url])
        assert code == 0
        manifest = orjson.loads((tmp_path / "runs" / "p" / "manifest.json").read_bytes())
        assert manifest["provider_url"] == url and manifest["sim_config"] is None
        import urllib.request

        with urllib.request.urlopen(url + "/sim/stats", timeout=5) as resp:
            stats = orjson.loads(resp.read())
        billed = sum(v["billed"] for v in stats["vendors"].values())
        sent = [r for k in (1, 2) for r in lines(tmp_path / "runs" / "p" / f"round{k}.jsonl")]
        assert any(r["round"] == 2 for r in sent)
        assert billed >= len({r["request_id"] for r in sent})  # every request of both rounds went there
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_tie_rate_per_model_matches_the_flagged_rows(sample_runs):
    result = sample_runs["planted", True]
    verdicts = lines(result.run_dir / "verdicts.jsonl")
    for model, m in result.summary["models"].items():
        mine = [v for v in verdicts if v["model"] == model]
        assert m["tie_rate"] == pytest.approx(sum("tie" in v["flags"] for v in mine) / len(mine), abs=1e-6)
    # the default roster's reserve keeps every panel at five: a tie needs a missing vote
    panels = result.summary["panels"]
    assert panels["rows_by_size"] == {"5": 960} and panels["reserve_rows"] == 800
