"""The cross-judge report on the embedded provider's graded judges, whose leniency per vendor is known: a family
preference planted in the other judge's vendor is found (provider_spread above its no-preference interval, the
planted vendor on top), and nothing is found without it; the run's own results are never touched."""

from __future__ import annotations

import asyncio
import hashlib

import orjson
import pytest

import bank

from council.cli import main
from council.core.errors import ConfigError
from council.sim import SimConfig
from council.tools.crossjudge import crossjudge
from tests.council._provider import quiet
from tests.council.test_scales import grade, read, write_world

JUDGE = "meta-llama/llama-3.1-405b-instruct"  # Meta's: a vendor under test with no seat on the council
JUDGE_VENDOR = "meta"


def world(family_preference: float, seed: int, judge_leniency: float = 0.0) -> SimConfig:
    """The planted world with known leniencies: the other judge's vendor ``judge_leniency`` levels, every
    council member 0. Members that differ in leniency give the council itself a vendor-dependent offset, since
    self-exclusion seats a different panel on each vendor's rows; and a lenient judge's offset is cut at the
    top level more often on better models, which with one model per vendor reads as a vendor effect. Both are
    real, and the report flags them; this world leaves them out so that a family preference is all there is."""
    sim = quiet(SimConfig.planted(seed), latency_ms=0.0)
    vendors = {v: b.model_copy(update={"leniency": 0.0, "family_preference": 0.0}) for v, b in sim.vendors.items()}
    vendors[JUDGE_VENDOR] = vendors.get(JUDGE_VENDOR, sim.default).model_copy(update={
        "leniency": judge_leniency, "family_preference": family_preference})
    return sim.model_copy(update={"vendors": vendors})


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_planted_family_preference_is_found_and_nothing_without(tmp_path, seed):
    bank_path, responses = write_world(tmp_path, 40)
    readings = {}
    for planted in (0.0, 1.0):
        run_id = f"fp{planted}-{seed}"
        result = await grade(tmp_path, bank_path, responses, world(planted, seed), run_id=run_id, seed=seed)
        before = {n: digest(result.run_dir / n) for n in ("verdicts.jsonl", "summary.json", "round1.jsonl")}
        report = (await crossjudge(tmp_path / "runs", run_id, JUDGE)).report
        assert {n: digest(result.run_dir / n) for n in before} == before  # never over the run's results
        spread = report["provider_spread"]
        readings[planted] = report
        assert report["paired_rows"] == report["rows"] == 240
        assert spread["low"] <= spread["value"] <= spread["high"]
        for key in ("mean_delta", "rank_correlation", "provider_spread", "group_spread"):
            assert report[key]["reading"] in ("safe", "not_safe") and report[key]["rule"]
    found, none = readings[1.0]["provider_spread"], readings[0.0]["provider_spread"]
    assert found["reading"] == "not_safe" and found["value"] > found["null_high"]
    assert found["highest_vendor"] == JUDGE_VENDOR
    assert none["reading"] == "safe"
    assert found["value"] > 2 * none["value"]
    assert readings[0.0]["mean_delta"]["reading"] == "safe"  # an unbiased judge with no preference: nothing


async def test_a_lenient_judge_shows_in_the_mean_delta(tmp_path):
    bank_path, responses = write_world(tmp_path, 40)
    deltas = {}
    for leniency in (0.0, 1.0):
        run_id = f"len{leniency}"
        await grade(tmp_path, bank_path, responses, world(0.0, 4, judge_leniency=leniency), run_id=run_id, seed=4)
        deltas[leniency] = (await crossjudge(tmp_path / "runs", run_id, JUDGE)).report["mean_delta"]
    assert deltas[1.0]["reading"] == "not_safe" and deltas[1.0]["low"] > 5.0  # about a level: up to 25 points
    # An unbiased judge: its interval holds 0, the mean delta it should have, whatever the rule reads.
    assert deltas[0.0]["reading"] == "safe" and deltas[0.0]["low"] < 0 < deltas[0.0]["high"]


async def test_on_an_elicited_run_the_other_judge_grades_against_the_primed_truth(tmp_path):
    """The answers of a simulated run's models under test have a truth only the provider knows (``rows.jsonl``
    carries no gold for them). The report's provider is primed with it as the run's was, so the other judge
    grades against it: on the rows where it differs from the guess the judges fall back to without it
    (correct iff the response contains the reference: the honest-ignorance items, whose right answer is to
    abstain), the judge's verdicts follow the truth about as often as its accuracy says, not the guess."""
    from council.core.schema import BankItem, ResponseRow
    from council.run.runner import RunRequest, run_council
    from council.sim import TruthTable, prime
    from council.sim._truth import heuristic_verdict
    from council.store.runfolder import read_jsonl

    models = ["openai/gpt-4.1-mini", "qwen/qwen3-235b-a22b"]
    ignorance = [x for x in bank.SAMPLE_BANK.read_bytes().splitlines() if b'"honest_ignorance"' in x][:24]
    bank_path = tmp_path / "bank.jsonl"
    bank_path.write_bytes(b"\n".join(ignorance) + b"\n")
    sim = quiet(SimConfig.planted(0), latency_ms=0.0)
    sim_path = tmp_path / "sim.json"
    sim_path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    run = await run_council(RunRequest(bank=bank_path, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp_path / "runs",
                                       run_id="e", backend="local", models=models, sim_config=sim_path))
    report = await crossjudge(tmp_path / "runs", "e", JUDGE)
    items = {i.id: i for i in read_jsonl(run.run_dir / "items.jsonl", BankItem)}
    rows = list(read_jsonl(run.run_dir / "rows.jsonl", ResponseRow))
    assert rows and all(r.gold_verdict is None for r in rows)
    truth = TruthTable.from_rows(items.values(), rows)  # the sim's truth table, rebuilt here as the provider's
    prime(sim, truth, models)
    votes = {r["row_id"]: r["verdict"] for r in read(report.folder / "round1.jsonl")}
    differ = [(truth.lookup(items[r.item_id].prompt, r.response)[0], votes[r.row_id]) for r in rows
              if truth.lookup(items[r.item_id].prompt, r.response)[0]
              != heuristic_verdict(items[r.item_id].reference, r.response)]
    assert len(differ) >= 10, len(differ)
    follows = sum(t == v for t, v in differ) / len(differ)
    accuracy = sim.vendors.get(JUDGE_VENDOR, sim.default).accuracy
    assert follows > accuracy - 0.15, (follows, accuracy)  # unprimed it follows the guess: 1 - accuracy


async def test_report_folder_resume_and_single_member_rule(tmp_path):
    bank_path, responses = write_world(tmp_path, 10)
    result = await grade(tmp_path, bank_path, responses, world(0.0, 3), run_id="r")
    first = await crossjudge(tmp_path / "runs", "r", JUDGE)
    assert first.folder == result.run_dir / "crossjudge" / "meta-llama_llama-3.1-405b-instruct"
    assert first.asked == 60 and first.archived == 0
    assert {p.name for p in first.folder.iterdir()} == {"round1.jsonl", "scores.jsonl", "report.json"}
    again = await crossjudge(tmp_path / "runs", "r", JUDGE)  # every vote archived: nothing asked again
    assert again.asked == 0 and again.archived == 60 and again.report == first.report
    scores = [orjson.loads(x) for x in (first.folder / "scores.jsonl").read_bytes().splitlines()]
    assert len(scores) == 60 and all(s["delta"] == pytest.approx(s["cross"] - s["council"]) for s in scores)

    single = await crossjudge(tmp_path / "runs", "r", "single:google")
    assert single.asked == 0 and single.folder.name == "single_google"
    assert single.report["paired_rows"] == 50  # google never grades its own vendor's model (self-exclusion)
    with pytest.raises(ConfigError, match="not a member"):
        await crossjudge(tmp_path / "runs", "r", "single:nobody")


def test_the_crossjudge_command(tmp_path, capsys):
    bank_path, responses = write_world(tmp_path, 6)
    asyncio.run(grade(tmp_path, bank_path, responses, world(0.0, 3), run_id="r"))
    capsys.readouterr()
    assert main(["crossjudge", "r", "--runs-dir", str(tmp_path / "runs"), "--judge", "single:google", "--json"]) == 0
    printed = orjson.loads(capsys.readouterr().out)
    assert printed["grader"] == "single:google" and printed["paired_rows"] == 30
    assert printed == orjson.loads((tmp_path / "runs" / "r" / "crossjudge" / "single_google" / "report.json").read_bytes())
    assert main(["crossjudge", "r", "--runs-dir", str(tmp_path / "runs"), "--judge", JUDGE]) == 0
    text = capsys.readouterr().out
    for key in ("mean_delta", "Kendall", "Spearman", "provider_spread", "group_spread", "no-preference"):
        assert key in text


async def test_an_unusable_provider_stops_the_report_with_one_error(tmp_path, caplog):
    import gc

    from council.core.errors import ProviderUnavailable

    bank_path, responses = write_world(tmp_path, 6)
    await grade(tmp_path, bank_path, responses, world(0.0, 3), run_id="r")
    with pytest.raises(ProviderUnavailable, match="cannot connect"):
        await crossjudge(tmp_path / "runs", "r", JUDGE, provider_url="http://127.0.0.1:9/v1")
    await asyncio.sleep(0)
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert not (tmp_path / "runs" / "r" / "crossjudge" / "meta-llama_llama-3.1-405b-instruct" / "report.json").exists()
