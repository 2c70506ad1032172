"""``council estimate`` compares strategies: ``all`` vs ``disputed`` (round two on the share ``(1-u) + a·u``),
with and without a prompt cache (the cacheable prefix, OpenAI's 1024-token minimum and 128-token steps, paid
at genai-prices' cache-read rate), and a ``--pilot`` graded for real whose unanimity rate and interval are
carried to the figures."""

from __future__ import annotations

import math

import genai_prices
import orjson
import pytest

import bank
from council.cli import main
from council.protocol.config import CouncilConfig
from council.protocol.panels import eligible_members
from council.protocol.prompts import round1_messages
from council.tools import estimate as est_mod
from council.tools.estimate import EXPECTED_OUTPUT_TOKENS, Unanimity, cacheable_tokens, estimate
from council.transport.quota import estimate_tokens

ITEMS = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
ROWS = bank.load_responses(bank.SAMPLE_RESPONSES, list(ITEMS.values()))[:24]  # a small bank's worth of rows
# the default seats that reason (gpt-5, gemini-2.5-pro) and the room the default judge config gives their reasoning,
# which the estimate counts as output at most (judge.thinking_budget) until a pilot measures it
REASONING_BOUND = {"openai": 1024, "google": 1024}


def strategies(config: CouncilConfig, u: float, audit: float, rows=ROWS) -> tuple[dict, dict]:
    e = estimate(config, ITEMS, rows, unanimity=Unanimity.stated(u), audit_share=audit)
    (all_,), (disputed,) = ([s for s in e.strategies if s.name == name] for name in ("all", "disputed"))
    return all_.as_dict(), disputed.as_dict()


# ---- the strategies' arithmetic --------------------------------------------------------------------------------


def test_round_one_costs_its_tokens_at_the_rates_under_every_strategy():
    config = CouncilConfig()  # no limits: one row a request
    all_, disputed = strategies(config, 0.5, 0.2)
    for member in config.roster:
        mine = [r for r in ROWS if member in eligible_members(r, config.roster, config.self_exclusion)]
        tokens_in = sum(estimate_tokens(round1_messages(ITEMS[r.item_id], r), 0) for r in mine)
        rate_in, rate_out, *_ = config.rates_for(member.judge_model, member.vendor)
        out = EXPECTED_OUTPUT_TOKENS + REASONING_BOUND.get(member.vendor, 0)  # reasoning is billed as output
        by_hand = (tokens_in * rate_in + len(mine) * out * rate_out) / 1e6
        for s in (all_, disputed):
            v = s["vendors"][member.vendor]
            assert v["cost_by_round_usd"]["1"] == pytest.approx(by_hand, abs=1e-6), member.vendor
        # round two: every row under all; (1 - 0.5) + 0.2 * 0.5 = 0.6 of them under disputed
        assert all_["vendors"][member.vendor]["round2_requests"] == len(mine)
        assert disputed["vendors"][member.vendor]["round2_requests"] == math.ceil(0.6 * len(mine))
    assert disputed["round2_share"] == pytest.approx(0.6)
    assert disputed["cost_by_round_usd"]["2"] == pytest.approx(0.6 * all_["cost_by_round_usd"]["2"], rel=1e-3)


def test_unanimity_0_is_all_and_unanimity_1_is_the_audit_share_alone():
    config = CouncilConfig()
    all_, none_unanimous = strategies(config, 0.0, 0.25)
    for key in ("requests", "round2_requests", "input_tokens", "output_tokens", "cost_usd", "cost_by_round_usd"):
        assert none_unanimous[key] == all_[key], key
    _, all_unanimous = strategies(config, 1.0, 0.25)
    assert all_unanimous["round2_share"] == 0.25
    assert all_unanimous["cost_by_round_usd"]["1"] == all_["cost_by_round_usd"]["1"]
    assert all_unanimous["cost_by_round_usd"]["2"] == pytest.approx(0.25 * all_["cost_by_round_usd"]["2"], rel=1e-3)
    _, no_audit = strategies(config, 1.0, 0.0)
    assert no_audit["round2_requests"] == 0 and no_audit["cost_by_round_usd"]["2"] == 0.0
    assert no_audit["cost_usd"] == pytest.approx(all_["cost_by_round_usd"]["1"], abs=1e-5)


def test_a_sequential_audit_is_counted_at_its_first_slice_and_a_whole_share_audit_at_the_share():
    """The default audit stops after its first slice when none of its rows changes (what the estimate assumes);
    an audit that never stops early (deliberation_audit_stop 0) or a batching run's asks the whole share."""
    from council.protocol.deliberation import audit_first_slice
    from council.tools.estimate import audited_share

    first = audit_first_slice(CouncilConfig().deliberation_audit_stop)
    assert first == 16  # the fewest rows whose 95% Wilson bound of no change is under 0.2
    sequential = CouncilConfig()
    assert audited_share(sequential, 0.1, 0.8, 100_000) == pytest.approx(first / 80_000)
    assert audited_share(sequential, 0.1, 0.8, 100) == 0.1  # fewer candidates than a slice: the whole share
    assert audited_share(CouncilConfig(deliberation_audit_stop=0.0), 0.1, 0.8, 100_000) == 0.1
    assert audited_share(CouncilConfig(transport="batch"), 0.1, 0.8, 100_000) == 0.1
    rows = ROWS * 50  # 1,200 rows, 960 unanimous at u = 0.8: 96 in the share, 16 audited
    _, counted = strategies(sequential, 0.8, 0.1, rows)
    _, whole = strategies(CouncilConfig(deliberation_audit_stop=0.0), 0.8, 0.1, rows)
    assert counted["round2_share"] == pytest.approx(0.2 + first / len(rows), abs=1e-6)  # rounded to 6 places
    assert whole["round2_share"] == pytest.approx(0.2 + 0.1 * 0.8, abs=1e-6)


def test_round_two_requests_keep_the_batch_size_and_t_star_follows():
    config = CouncilConfig.model_validate({"vendors": {"google": {"rpm": 60, "max_batch": 4}}})
    all_, disputed = strategies(config, 0.5, 0.0)
    google = [all_["vendors"]["google"], disputed["vendors"]["google"]]
    assert [g["batch_size"] for g in google] == [4, 4]
    assert google[1]["round2_requests"] == math.ceil(0.5 * google[0]["votes"] / 2 / 4)
    for s, g in zip((all_, disputed), google, strict=True):  # google alone is limited: it is T*
        assert s["t_star_s"] == pytest.approx(60 * g["requests"] / 60, rel=1e-3)
    assert disputed["t_star_s"] < all_["t_star_s"]


def test_a_batching_vendor_packs_max_batch_rows_a_request_whatever_its_chat_limits():
    """A synchronous request packs rows only when the request limit binds; a batch request always packs
    ``max_batch`` rows (never two answers to one item), so its prompts cost less than one row a request."""
    config = CouncilConfig.model_validate({"vendors": {"google": {"max_batch": 4, "transport": "batch"},
                                                       "openai": {"max_batch": 4}}})
    all_, _ = strategies(config, 0.5, 0.0)
    google, openai = all_["vendors"]["google"], all_["vendors"]["openai"]
    assert google["batch_size"] == 4 and google["requests"] < google["votes"]
    assert openai["batch_size"] == 1 and openai["requests"] == openai["votes"]  # no request limit binds
    assert openai["cost_batch_usd"] < openai["cost_usd"] / 2  # what its votes would cost batched: packed, at half


# ---- the prompt cache --------------------------------------------------------------------------------------------


def pair(shared_chars: int) -> tuple[list[dict], list[dict]]:
    """Two requests whose flattened text (role, separator, content) shares exactly ``5 + shared_chars``
    characters: "user", one separator and ``shared_chars`` of content."""
    head = "a" * shared_chars
    return [{"role": "user", "content": head + "X"}], [{"role": "user", "content": head + "Y" * 8000}]


@pytest.mark.parametrize(("shared_tokens", "cached"), [(1023, 0), (1024, 1024), (1151, 1024), (1152, 1152),
                                                       (3000, 2944)])
def test_a_prefix_is_cached_from_1024_tokens_in_steps_of_128(shared_tokens, cached):
    first, second = pair(4 * shared_tokens - 5)  # ceil(chars / 4) tokens: exactly shared_tokens
    assert cacheable_tokens(first, second) == cached


def test_a_prefix_ends_at_the_first_difference_and_never_exceeds_the_request():
    system = {"role": "system", "content": "s" * 8000}
    assert cacheable_tokens([system, {"role": "user", "content": "a"}], [system, {"role": "user", "content": "b"}]) \
        == 1920  # 2000 tokens of system prompt and a few of roles, down to 15 steps of 128
    assert cacheable_tokens([system], [{**system, "role": "user"}]) == 0  # another role: nothing shared
    request = [system]
    assert cacheable_tokens(request, request) == estimate_tokens(request, 0) - estimate_tokens(request, 0) % 128


def test_cached_tokens_are_paid_at_the_cache_read_rate(monkeypatch):
    """With a round two that starts with round one's exact messages (as a new prompt layout will), round two's
    cost with caching is genai-prices' own price for the same usage with those tokens read from the cache."""
    config = CouncilConfig()
    long = [r.model_copy(update={"response": r.response + " lorem" * 1500}) for r in ROWS[:6]]

    def follow(first):  # round one's messages, a reply, then a long peers message
        return [*first, {"role": "assistant", "content": '{"verdict": "correct"}'},
                {"role": "user", "content": "peers: " + "p" * 600}]

    def after_round_one(items, rows, config):  # no limits: one row per request
        return follow(round1_messages(items[0], rows[0]))

    monkeypatch.setattr(est_mod, "_round2_messages", after_round_one)
    e = estimate(config, ITEMS, long)
    openai = next(v for v in e.vendors if v.vendor == "openai")
    mine = [r for r in long if next(m for m in config.roster if m.vendor == "openai")
            in eligible_members(r, config.roster, config.self_exclusion)]
    firsts = [round1_messages(ITEMS[r.item_id], r) for r in mine]
    by_hand = sum(cacheable_tokens(f, follow(f)) for f in firsts)
    assert openai.cached_tokens == by_hand and by_hand >= 1024 * len(mine)
    tokens_in2 = sum(estimate_tokens(follow(f), 0) for f in firsts)
    usage = genai_prices.Usage(input_tokens=tokens_in2, cache_read_tokens=by_hand,
                               output_tokens=len(mine) * (EXPECTED_OUTPUT_TOKENS + REASONING_BOUND["openai"]))
    table = float(genai_prices.calc_price(usage, "gpt-5", provider_id="openai").total_price)
    assert openai.cost_cached_by_round_usd["2"] == pytest.approx(table, abs=1e-6)
    assert openai.cost_cached_usd < openai.cost_usd  # without the cache, every input token at the input rate


# ---- synchronous and batch rates ------------------------------------------------------------------------------

BATCHING = {"openai": {"transport": "batch", "rpm": 60, "max_batch": 1},
            "mistral": {"transport": "batch", "max_batch": 1}, "deepseek": {"transport": "batch"},
            "google": {"rpm": 100}}


def batch_rates(ref: str, provider: str) -> tuple[float, float]:
    """genai-prices' own batch rates (input, output) of a model, or its standard ones if it has no batch variant."""
    from datetime import UTC, datetime

    info = genai_prices.data_snapshot.get_snapshot().find_provider_model(ref, None, provider, None)[1]
    rates = info.get_prices(datetime.now(UTC), {"processing": "batch"})
    return float(rates.input_mtok), float(rates.output_mtok)


def test_votes_are_costed_at_both_rates_and_this_run_at_each_vendor_s_transport():
    """openai batches (a batch variant in the table: half price), mistral batches with no batch rate known (its
    standard one), deepseek is asked to and cannot (no batch API), the rest are synchronous. Round one's batch cost
    is its tokens at genai-prices' batch rates; this run's cost takes each vendor at its own transport's; T*
    leaves the batched votes out."""
    config = CouncilConfig.model_validate({"vendors": BATCHING})
    all_, disputed = strategies(config, 0.5, 0.2)
    hand = {"openai": batch_rates("gpt-5", "openai"), "mistral": batch_rates("mistralai/mistral-medium-3.1",
                                                                             "openrouter")}
    for vendor, (rate_in, rate_out) in hand.items():
        member = next(m for m in config.roster if m.vendor == vendor)
        mine = [r for r in ROWS if member in eligible_members(r, config.roster, config.self_exclusion)]
        assert all_["vendors"][vendor]["batch_size"] == 1
        tokens_in = sum(estimate_tokens(round1_messages(ITEMS[r.item_id], r), 0) for r in mine)
        out = EXPECTED_OUTPUT_TOKENS + REASONING_BOUND.get(member.vendor, 0)  # reasoning is billed as output
        by_hand = (tokens_in * rate_in + len(mine) * out * rate_out) / 1e6
        for s in (all_, disputed):
            v = s["vendors"][vendor]
            assert v["transport"] == "batch" and v["cost_batch_by_round_usd"]["1"] == pytest.approx(by_hand, abs=1e-6)
            assert v["cost_run_usd"] == v["cost_batch_usd"]
    for s in (all_, disputed):
        vendors = s["vendors"]
        assert vendors["openai"]["cost_batch_usd"] == pytest.approx(vendors["openai"]["cost_usd"] / 2, abs=1e-5)
        assert vendors["mistral"]["cost_batch_usd"] == vendors["mistral"]["cost_usd"]  # standard rate assumed
        deepseek = vendors["deepseek"]  # synchronous: costed as it is sent
        assert deepseek["transport"] == "sync" and deepseek["cost_batch_usd"] == deepseek["cost_run_usd"] == deepseek[
            "cost_usd"]
        assert [v for v, x in vendors.items() if not x["batch_price_known"]] == ["mistral"]
        assert vendors["google"]["cost_run_usd"] == vendors["google"]["cost_usd"] > vendors["google"]["cost_batch_usd"]
        assert s["cost_batch_usd"] == pytest.approx(sum(v["cost_batch_usd"] for v in vendors.values()), abs=1e-6)
        assert s["cost_run_usd"] == pytest.approx(sum(v["cost_batch_usd" if v["transport"] == "batch" else "cost_usd"]
                                                      for v in vendors.values()), abs=1e-6)
        assert s["cost_batch_usd"] < s["cost_run_usd"] < s["cost_usd"]
        # openai's rpm is its synchronous quota: google alone bounds the run
        assert s["t_star_s"] == pytest.approx(60 * vendors["google"]["requests"] / 100, rel=1e-3)
        assert vendors["openai"]["minutes"] == 0.0 and vendors["openai"]["requests"] > 0


def test_the_command_shows_both_rates_and_says_what_batches(tmp_path, capsys):
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"vendors": BATCHING}))
    assert main(["estimate", "--config", str(config), "--unanimity", "0.7", "--json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["batching"] == ["openai", "mistral"] and data["batch_unpriced"] == ["mistralai/mistral-medium-3.1"]
    assert list(data["batch_sync"]) == ["deepseek"] and "no batch API" in data["batch_sync"]["deepseek"]
    assert data["cost_batch_usd"] < data["cost_run_usd"] < data["cost_usd"]
    assert main(["estimate", "--config", str(config), "--unanimity", "0.7"]) == 0
    out = capsys.readouterr().out
    disputed = next(s for s in data["strategies"] if s["name"] == "disputed")
    for figure in (data["cost_usd"], data["cost_batch_usd"], data["cost_run_usd"], disputed["cost_batch_usd"],
                   disputed["cost_run_usd"]):
        assert f"{figure:.4f}" in out
    assert "batch transport: openai, mistral" in out and "T* does not apply" in out and "24 h" in out
    assert "this run counts mistralai/mistral-medium-3.1 at it" in out
    assert "deepseek stays synchronous in this batch run: deepseek has no batch API" in out.replace("\n", " ")
    assert main(["estimate", "--unanimity", "0.7"]) == 0  # nothing batches: nothing said of a batch transport
    out = capsys.readouterr().out
    assert "batch $" in out and "batch transport:" not in out and "this run counts" not in out


# ---- the command: no rate, a stated rate, a pilot ---------------------------------------------------------------


def test_without_a_rate_only_all_is_estimated_and_the_way_to_compare_is_said(capsys):
    assert main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert "--unanimity P" in out and "--pilot N" in out and "disputed, u=" not in out
    assert main(["estimate", "--unanimity", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "disputed, u=0.800 (stated)" in out and "T* =" in out
    assert main(["estimate", "--simulate"]) == 2  # where a pilot runs, with no pilot
    assert "give --pilot N" in capsys.readouterr().err


def test_a_pilot_is_a_run_whose_unanimity_and_interval_carry_to_the_figures(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["estimate", "--pilot", "40", "--simulate", "--runs-dir", str(runs), "--json"]) == 0
    captured = capsys.readouterr()
    data = orjson.loads(captured.out)
    u = data["unanimity"]
    run_dir = runs / u["pilot"]["run_id"]
    assert u["source"] == "pilot" and u["pilot"]["run_id"] in captured.err
    summary = orjson.loads((run_dir / "summary.json").read_bytes())
    manifest = orjson.loads((run_dir / "manifest.json").read_bytes())
    assert manifest["rows"] == 40 and manifest["config"]["deliberate"] == "disputed"
    assert manifest["config"]["deliberation_audit"] == 0.0
    assert u["pilot"]["unanimous"] == summary["deliberation"]["rows_skipped"] and u["pilot"]["rows"] == 40
    assert u["pilot"]["cost_usd"] == summary["cost_usd"] > 0
    assert 0.0 <= u["low"] <= u["rate"] <= u["high"] <= 1.0 and u["low"] < u["high"]
    disputed = [s for s in data["strategies"] if s["name"] == "disputed"]
    assert [s["interval_end"] for s in disputed] == [None, "low", "high"]
    assert [s["unanimity"] for s in disputed] == [u["rate"], u["low"], u["high"]]
    rows = bank.load_responses(bank.SAMPLE_RESPONSES, list(ITEMS.values()))
    config = CouncilConfig()
    # each judge's reasoning a vote, measured by the pilot, carried to the figures in place of its bound
    measured = u["pilot"]["reasoning_per_vote"]
    assert measured == {v: j["reasoning_tokens_per_vote"] for v, j in summary["judge_tokens"].items()}
    assert 0 < measured["openai"] < 1024 and 0 < measured["google"] < 1024 and measured["anthropic"] == 0
    vendors = data["strategies"][0]["vendors"]
    assert vendors["openai"]["reasoning_measured"] and vendors["openai"]["reasoning_per_vote"] == measured["openai"]
    bounds = [estimate(config, ITEMS, rows, unanimity=Unanimity(x, x, x, "stated", {"reasoning_per_vote": measured}))
              .strategies[1].totals()["cost_usd"] for x in (1.0, 0.0)]
    costs = [s["cost_usd"] for s in disputed]
    assert bounds[0] <= costs[2] <= costs[0] <= costs[1] <= bounds[1]  # more unanimity, less round two
    assert bounds[1] == data["cost_usd"]  # u = 0 is all
