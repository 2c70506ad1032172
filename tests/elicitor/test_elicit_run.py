"""Elicitation end to end: models under test answer every item (predict-then-answer), the council grades
the answers as they arrive, calibration is reported, truncation is counted, the budget holds."""

from __future__ import annotations

import math

import orjson
import pytest

import bank
from council.cli import main
from council.grading.pools import LocalPool
from council.protocol.config import CouncilConfig, Endpoint
from council.report.reading import reliability
from council.run.runner import RunHooks, RunRequest, resume_council, run_council
from council.sim import ModelBehaviour, SimConfig
from tests.council._roster import SMALL_ROSTER

MODELS = ["anthropic/claude-haiku-4.5", "google/gemini-2.5-flash", "openai/gpt-4.1-mini", "qwen/qwen3-235b-a22b",
          "deepseek/deepseek-chat-v3.1", "meta-llama/llama-3.3-70b-instruct"]
PRICES = {m: (1.0, 4.0) for m in MODELS}


# Two models with a known stated-confidence offset, p_true kept away from the clipping at 0 and 1.
CALIBRATION = {
    "openai/gpt-4.1-mini": {"accuracy": 0.55, "difficulty_sd": 0.1, "overconfidence": 0.25, "confidence_noise": 0.05},
    "anthropic/claude-haiku-4.5": {"accuracy": 0.55, "difficulty_sd": 0.1, "overconfidence": 0.0,
                                   "confidence_noise": 0.05},
}


def lines(path):
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def small_bank(tmp_path, n):
    items = [line for line in bank.SAMPLE_BANK.read_bytes().splitlines() if line.strip()]
    path = tmp_path / f"bank-{n}.jsonl"
    path.write_bytes(b"\n".join(items[::len(items) // n][:n]) + b"\n")
    return path


def sim_file(tmp_path, **models):
    base = SimConfig.planted(seed=0)
    cfg = base.model_copy(update={"models": {m: ModelBehaviour(**kw) for m, kw in models.items()}})
    path = tmp_path / "sim.json"
    path.write_bytes(orjson.dumps(cfg.model_dump(mode="json")))
    return path


async def test_six_models_elicited_graded_and_calibrated(tmp_path):
    judges = {v: {"price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0}
              for v in ("anthropic", "google", "openai", "alibaba", "deepseek")}
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp_path / "runs",
                     run_id="e", backend="local", models=MODELS, sim_config=sim_file(tmp_path, **CALIBRATION),
                     config=CouncilConfig(model_prices=PRICES, vendors=judges))
    result = await run_council(req)
    folder = result.run_dir
    elicited = lines(folder / "elicited.jsonl")
    assert len(elicited) == 160 * 6 and len({(r["item_id"], r["model"]) for r in elicited}) == 960
    for r in elicited:
        assert r["text"] and r["usage"]["completion_tokens"] > 0 and r["latency_s"] > 0 and r["cost_usd"] > 0
        assert r["elicit_prompt_hash"] and r["request_key"]
    rows = lines(folder / "rows.jsonl")
    assert len(rows) == sum(not r["truncated"] and not r["empty"] and r["error"] is None for r in elicited)
    summary = result.summary
    assert set(summary["elicitation"]) == set(MODELS)
    cal = summary["calibration"]
    for model in MODELS:
        assert cal[model]["brier"] is not None and 0 <= cal[model]["ece"] <= 1 and cal[model]["selective"] is not None
    diagram = reliability(folder)  # stated confidence against the council's verdicts, binned per model
    for model, kw in CALIBRATION.items():
        j = diagram.models.index(model)
        n, conf, share = diagram.n[j], diagram.mean_confidence[j], diagram.share_correct[j]
        used = n > 0
        confident = int(n.sum())
        assert confident == cal[model]["n_confident"]
        assert cal[model]["ece"] == pytest.approx(float((n[used] * abs(conf[used] - share[used])).sum()) / confident,
                                                abs=1e-6)
        # Mean stated confidence minus share correct: the configured offset, up to sampling. Per row the
        # variance of (confidence - correct) is at most Var(correct) + Var(confidence) <= 0.25 + sd^2 + noise^2
        # (the two covary positively through p_true), so its mean is within 3 standard errors of the offset.
        gap = float((n[used] * (conf[used] - share[used])).sum()) / confident
        tolerance = 3 * math.sqrt((0.25 + kw["difficulty_sd"] ** 2 + kw["confidence_noise"] ** 2) / confident)
        assert gap == pytest.approx(kw["overconfidence"], abs=tolerance), (model, confident, gap, tolerance)
    judging = sum(r["cost_usd"] for name in ("round1.jsonl", "round2.jsonl") for r in lines(folder / name))
    assert judging > 0
    assert summary["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in elicited) + judging, abs=1e-6)
    verdicts = lines(folder / "verdicts.jsonl")
    assert len(verdicts) == len(rows)


def test_truncation_is_counted_and_never_scored(tmp_path, capsys):
    path = sim_file(tmp_path, **{"openai/gpt-4.1-mini": {"truncation_rate": 0.4}})
    code = main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "t",
                 "--bank", str(small_bank(tmp_path, 40)), "--models", ",".join(MODELS[:3]),
                 "--sim-config", str(path), "--simulate"])
    assert code == 0
    folder = tmp_path / "runs" / "t"
    elicited = lines(folder / "elicited.jsonl")
    truncated = [r for r in elicited if r["truncated"]]
    assert truncated and all(r["model"] == "openai/gpt-4.1-mini" for r in truncated)
    summary = orjson.loads((folder / "summary.json").read_bytes())
    assert summary["elicitation"]["openai/gpt-4.1-mini"]["truncated"] == len(truncated)
    graded = {v["row_id"] for v in lines(folder / "verdicts.jsonl")}
    assert not graded & {r["row_id"] for r in truncated}  # never scored as wrong: not scored at all
    assert summary["models"]["openai/gpt-4.1-mini"]["rows"] == 40 - len(truncated)
    assert "model openai/gpt-4.1-mini truncated" in summary["diagnostics"]["warnings"]
    assert "truncated" in capsys.readouterr().err


async def test_budget_stops_before_overspending_and_resumes(tmp_path):
    config = CouncilConfig(model_prices=PRICES, vendors={v: {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0}
                                                          for v in ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")})
    small = small_bank(tmp_path, 40)
    whole = await run_council(RunRequest(bank=small, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp_path / "runs",
                                         run_id="whole", backend="local", models=MODELS[:3], config=config))
    full_cost = whole.summary["cost_usd"]
    limit = round(full_cost * 0.4, 6)
    stopped = await run_council(RunRequest(
        bank=small, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp_path / "runs", run_id="b", backend="local",
        models=MODELS[:3], config=config.model_copy(update={"budget_usd": limit})))
    assert stopped.stopped_by_budget
    spent = stopped.summary["cost_usd"]
    assert spent <= limit * 1.02  # in-flight calls may pass their projection only by a repair or retry
    assert spent >= limit * 0.5
    resumed = await resume_council(tmp_path / "runs", "b", budget_usd=full_cost * 3)
    assert not resumed.stopped_by_budget
    assert (resumed.run_dir / "verdicts.jsonl").read_bytes() == (whole.run_dir / "verdicts.jsonl").read_bytes()
    assert resumed.summary["cost_usd"] == pytest.approx(full_cost, rel=1e-6)  # nothing paid twice


def test_a_vendors_judge_and_elicitor_share_one_limiter():
    config = CouncilConfig()
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", api_key_env=None)
    pool = LocalPool(config, {v: endpoint for v in [*config.roster_vendors, "meta"]}, MODELS)
    for vendor in {v for v in config.roster_vendors if v in pool.elicitors}:  # vendors with models under test
        assert pool.elicitors[vendor].limiter is pool.judges[vendor].limiter
    assert "mistral" in pool.judges and "mistral" not in pool.elicitors  # the reserve judge has no model here
    assert "meta" in pool.elicitors and "meta" in pool.ledgers and "meta" not in pool.judges


async def test_elicitation_through_ray_shares_each_vendors_quota(tmp_path, ray_session):
    """Even for the only run on its Ray instance (where a vendor with one actor keeps its own ledger), a vendor
    with a judge and an elicitor has one account, in the quota actor."""
    from tests.council._ray import actors

    models = ["openai/gpt-4.1-mini", "meta-llama/llama-3.3-70b-instruct"]
    config = CouncilConfig(roster=SMALL_ROSTER, vendors={"openai": {"rpm": 100_000}, "meta": {"rpm": 100_000}})
    before = len(actors("QuotaActor", alive=False))
    result = await run_council(RunRequest(bank=small_bank(tmp_path, 8), responses=bank.SAMPLE_RESPONSES,
                                          runs_dir=tmp_path / "runs", run_id="r", backend="ray", models=models,
                                          config=config), hooks=RunHooks(sole_ray_run=True))
    assert len(lines(result.run_dir / "elicited.jsonl")) == 16
    assert result.summary["rows"] == len(lines(result.run_dir / "rows.jsonl")) > 0
    assert len(actors("QuotaActor", alive=False)) - before == 1
    quota = orjson.loads((result.run_dir / "quota_stats.json").read_bytes())
    holders = quota["openai"]["holders"]
    # one account: the openai judge and the openai elicitor (separate processes) lease from the same quota
    assert any(h.startswith("judge:openai:") for h in holders) and any(h.startswith("elicitor:openai:") for h in holders)
    assert [h.split(":")[0] for h in quota["meta"]["holders"]] == ["elicitor"] and quota["meta"]["requests"] >= 8
