"""The batch-effect audit: a seeded sample of batched votes asked again alone, batched-vs-solo agreement
with an interval. A contrast effect planted in the embedded provider must show; none must show without."""

from __future__ import annotations

import orjson

import bank
from council.protocol.config import CouncilConfig, VendorSettings
from council.run.runner import RunRequest, resume_council, run_council
from council.sim import SimConfig
from tests.council.test_end_to_end import lines, subset

RPM = 3000
BATCHING = {"openai": VendorSettings(rpm=RPM, max_batch=6), "google": VendorSettings(rpm=RPM, max_batch=6)}


def sim_file(tmp_path, contrast: float):
    base = SimConfig.planted(seed=0)
    vendors = {v: b.model_copy(update={"malformed_rate": 0.0, "latency_ms": 1.0, "latency_jitter_ms": 1.0,
                                      **({"rpm": RPM, "batch_contrast": contrast} if v in BATCHING else {})})
               for v, b in base.vendors.items()}
    path = tmp_path / f"sim-{contrast}.json"
    path.write_bytes(orjson.dumps(base.model_copy(update={"vendors": vendors}).model_dump(mode="json")))
    return path


async def audited_run(tmp_path, contrast: float, run_id: str, **config):
    return await run_council(RunRequest(
        bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 20), runs_dir=tmp_path / "runs", run_id=run_id,
        backend="local", sim_config=sim_file(tmp_path, contrast),
        config=CouncilConfig(vendors=BATCHING, batch_audit=0.5, **config)))


def differing_pairs(run_dir) -> tuple[int, int]:
    """(batch-audit pairs, those whose solo verdict differs from the batched vote as archived), from the records."""
    batched = {(r["row_id"], r["member"], r["round"]): r["verdict"]
               for name in ("round1.jsonl", "round2.jsonl") for r in lines(run_dir / name)}
    records = lines(run_dir / "audit.jsonl")
    return len(records), sum(batched[(r["row_id"], r["member"], r["round"])] != r["verdict"] for r in records)


async def test_audit_detects_a_planted_contrast_effect(tmp_path):
    planted = await audited_run(tmp_path, 0.3, "planted")
    audit = planted.summary["batch_audit"]
    openai = audit["by_group"]["openai"]
    assert openai["pairs"] >= 30
    assert openai["ci_high"] < 0.95, openai  # batching changes verdicts, and the interval says so
    assert 0.55 <= openai["agreement"] <= 0.85, openai  # about 1 - 0.3 of the batched votes agree alone
    records = lines(planted.run_dir / "audit.jsonl")
    assert records and all(r["batch_size"] == 1 and r["audit_of"] for r in records)
    batched = {r["request_id"] for name in ("round1.jsonl", "round2.jsonl") for r in lines(planted.run_dir / name)
               if r["batch_size"] > 1}
    assert {r["audit_of"] for r in records} <= batched  # each audit re-asks a vote that was batched
    # Audit votes are never counted: where the solo vote differs, the row shows the batched one (a round two
    # that counts: a row whose round two was a deliberation audit shows round one's votes in its place).
    counted = {(v["row_id"], m, k): votes[m] for v in lines(planted.run_dir / "verdicts.jsonl")
               for k, votes in ((1, v["votes_round1"]), (2, v["votes_round2"])) if k == 1 or v["deliberated"]
               for m in votes}
    batched_votes = {(r["row_id"], r["member"], r["round"]): r["verdict"]
                     for name in ("round1.jsonl", "round2.jsonl") for r in lines(planted.run_dir / name)}
    differing = [r for r in records if batched_votes[(r["row_id"], r["member"], r["round"])] != r["verdict"]]
    assert len(differing) == audit["pairs"] - audit["agree"] > 0
    shown = [r for r in differing if (r["row_id"], r["member"], r["round"]) in counted]
    assert shown and all(counted[(r["row_id"], r["member"], r["round"])] != r["verdict"] for r in shown)


async def test_audit_finds_nothing_where_nothing_was_planted(tmp_path):
    clean = await audited_run(tmp_path, 0.0, "clean")
    audit = clean.summary["batch_audit"]
    assert audit["pairs"] >= 60 and audit["agreement"] == 1.0 and audit["ci_high"] == 1.0
    assert audit["ci_low"] > 0.9


async def test_a_resumed_run_does_not_audit_twice(tmp_path):
    first = await audited_run(tmp_path, 0.3, "r")
    before = lines(first.run_dir / "audit.jsonl")
    again = await resume_council(tmp_path / "runs", "r")
    assert lines(again.run_dir / "audit.jsonl") == before and again.issued == 0
    assert again.summary["batch_audit"] == first.summary["batch_audit"]


async def test_a_deliberation_audit_row_s_round_two_is_audited_against_its_own_batched_vote(tmp_path):
    """With every skipped row in the deliberation audit, batched round-two votes of rows whose round two is never
    counted are audited too: each pair sets the solo vote against the batched vote as it was archived, not
    against the round-one vote that stands in the row's round two."""
    run = await audited_run(tmp_path, 0.3, "both", deliberate="disputed", deliberation_audit=1.0,
                            deliberation_audit_stop=0.0)  # the whole share: no early stop
    audit_rows = {v["row_id"] for v in lines(run.run_dir / "verdicts.jsonl") if v["deliberation_audit"]}
    on_audit_rows = [r for r in lines(run.run_dir / "audit.jsonl") if r["round"] == 2 and r["row_id"] in audit_rows]
    assert on_audit_rows  # the case is there
    pairs, differ = differing_pairs(run.run_dir)
    summary = run.summary["batch_audit"]
    assert summary["pairs"] == pairs and summary["pairs"] - summary["agree"] == differ
