"""The --shadow-self audit: the excluded own-vendor judge grades too, is recorded, and is never counted."""

from __future__ import annotations

import bank
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from tests.council.test_end_to_end import lines, subset


async def test_shadow_votes_are_recorded_never_counted_and_measure_leniency(tmp_path):
    responses = subset(tmp_path, 60)

    async def grade(run_id, shadow):
        return await run_council(RunRequest(
            bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
            backend="local", config=CouncilConfig(shadow_self=shadow)))

    plain, audited = await grade("plain", False), await grade("audit", True)
    rows = {r["row_id"]: r for r in lines(audited.run_dir / "rows.jsonl")}
    shadow = lines(audited.run_dir / "shadow.jsonl")
    council_vendors = {"anthropic", "google", "openai", "alibaba", "deepseek"}
    # exactly one shadow vote per row made by a council vendor's model, by that same vendor, round one
    assert sorted(r["row_id"] for r in shadow) == sorted(k for k, r in rows.items() if r["vendor"] in council_vendors)
    assert all(r["shadow"] and r["round"] == 1 and r["member"] == rows[r["row_id"]]["vendor"] for r in shadow)
    # never counted, never shown: verdicts and round-two prompts are those of the run without the audit
    assert (audited.run_dir / "verdicts.jsonl").read_bytes() == (plain.run_dir / "verdicts.jsonl").read_bytes()
    assert lines(audited.run_dir / "round2.jsonl") and not any(
        r["member"] == rows[r["row_id"]]["vendor"] for r in lines(audited.run_dir / "round2.jsonl"))
    sp = audited.summary["self_preference"]
    assert "self_preference" not in plain.summary
    assert set(sp) == council_vendors and all(v["rows"] == 60 for v in sp.values())
    # the provider plants strong self-preference in openai (0.8), little in anthropic (0.1)
    assert sp["openai"]["shadow_false_positive_rate"] > sp["openai"]["council_false_positive_rate"] + 0.4
    assert sp["openai"]["leniency"] > sp["anthropic"]["leniency"] + 0.05
