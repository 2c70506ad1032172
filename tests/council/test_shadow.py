"""The --shadow-self audit: the excluded own-vendor judge grades too, is recorded, and is never counted."""

from __future__ import annotations

import bank
from council.console.results import print_metrics
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig
from tests.council.test_end_to_end import lines, subset


async def test_shadow_votes_are_recorded_never_counted_and_measure_leniency(tmp_path, capsys):
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
    # The provider plants self-preference p per vendor (openai 0.8, google 0.7, deepseek 0.3, the others 0.1):
    # a wrong answer of the judge's own family that it would have called incorrect (probability: its accuracy
    # a) is called correct with probability p, so it calls a * p more of them correct than of the others'.
    planted = SimConfig.planted(0).vendors
    for vendor, audit in sp.items():
        expected = planted[vendor].accuracy * planted[vendor].self_preference
        got = audit["self_preference"]
        assert got["ci_low"] <= expected <= got["ci_high"], (vendor, expected, got)
    assert sp["openai"]["self_preference"]["ci_low"] > 0.2 and sp["google"]["self_preference"]["ci_low"] > 0.2
    capsys.readouterr()
    print_metrics(audited.summary)  # the console shows each judge's figure with its interval
    d = sp["openai"]["self_preference"]
    assert (f"self-preference of openai's judge ({d['rows_own']} wrong answers of its own): {100 * d['value']:+.1f} pts"
            in capsys.readouterr().out)


async def test_a_noisy_judge_without_self_preference_is_not_read_as_favouring_its_family(tmp_path):
    """A world where openai's judge is noisy (accuracy 0.55) and plants no self-preference, and its vendor's
    model answered only wrongly, while google's judge keeps its planted self-preference (0.7). A noisy judge's
    'correct' rate moves towards a half: on wrong answers it rises, so against the consensus (or any accurate
    member) it reads as lenient where it favours nobody. Its share of wrong answers called correct is the
    same on its family's rows and the others' (1 - accuracy): self_preference holds 0; google's does not."""
    import orjson

    from tests.council._provider import quiet

    sim = quiet(SimConfig.planted(0), latency_ms=0.0)
    vendors = {**sim.vendors, "openai": sim.vendors["openai"].model_copy(update={"accuracy": 0.3,
                                                                                 "self_preference": 0.0})}
    sim_path = tmp_path / "sim.json"
    sim_path.write_bytes(orjson.dumps(sim.model_copy(update={"vendors": vendors}).model_dump(mode="json")))
    responses = subset(tmp_path, 100)
    kept = [r for r in lines(responses) if r["model"] != "openai/gpt-4.1-mini" or r["gold_verdict"] == "incorrect"]
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    run = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs",
                                       run_id="noisy", backend="local", sim_config=sim_path,
                                       config=CouncilConfig(shadow_self=True)))
    sp = run.summary["self_preference"]
    verdicts = {v["row_id"]: v for v in lines(run.run_dir / "verdicts.jsonl")}
    shadow = [r for r in lines(run.run_dir / "shadow.jsonl") if r["member"] == "openai" and r["verdict"]]
    consensus_reading = (sum(r["verdict"] == "correct" for r in shadow)
                         - sum(verdicts[r["row_id"]]["consensus"] == "correct" for r in shadow)) / len(shadow)
    assert consensus_reading > 0.2  # what setting the one judge against the consensus reads: leniency
    noisy, planted = sp["openai"]["self_preference"], sp["google"]["self_preference"]
    assert noisy["ci_low"] < 0 < noisy["ci_high"]
    assert planted["ci_low"] > noisy["ci_high"] and planted["ci_low"] > 0.2
