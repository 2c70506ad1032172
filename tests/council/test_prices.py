"""Prices come from genai-prices unless the config sets one; every run says what it cost, and how it adds up."""

from __future__ import annotations

from importlib.metadata import version

import genai_prices
import orjson
import pytest

from council.cli import main
from council.core.errors import ConfigError
from council.core.schema import MemberSpec, Usage
from council.protocol.config import CouncilConfig
from council.protocol.prices import batch_pages, table_price
from council.run.runner import check_budget
from tests.council.test_end_to_end import lines, subset

TABLE = f"genai-prices {version('genai-prices')}"
UNKNOWN = "mistralai/no-such-model-9"  # a mistral id no table lists
CONFIGURED = {"openai/gpt-5": (2.0, 8.0)}  # a price the config sets for one judge


BATCH = {"processing": "batch"}  # genai-prices' price context of a batch API


def genai_usd(model: str, provider: str, context: dict | None = None, **tokens: int) -> float:
    """What genai-prices itself says the usage costs, asked by the table's own model id and provider (in the
    price ``context``, e.g. a batch API's)."""
    return float(genai_prices.calc_price(genai_prices.Usage(**tokens), model, provider_id=provider,
                                         price_context=context).total_price)


def paid(record: dict, price: dict) -> float:
    """A vote's cost: at the config's price, or as genai-prices works it out for the table's provider."""
    usage = record["usage"]
    tokens_in, tokens_out, cached = usage["prompt_tokens"], usage["completion_tokens"], usage.get("cached_tokens", 0)
    if price["source"] == "config":
        return (tokens_in * price["input_mtok"] + tokens_out * price["output_mtok"]) / 1e6
    model = record["judge_model"]
    ref = model if price["provider"] == "openrouter" else model.split("/", 1)[1]
    return genai_usd(ref, price["provider"], input_tokens=tokens_in, output_tokens=tokens_out, cache_read_tokens=cached)


@pytest.mark.parametrize(("model", "vendor", "provider", "ref"), [
    ("anthropic/claude-sonnet-4.5", "anthropic", "anthropic", "claude-sonnet-4.5"),
    ("google/gemini-2.5-pro", "google", "google", "gemini-2.5-pro"),
    ("openai/gpt-5", "openai", "openai", "gpt-5"),
    ("deepseek/deepseek-v3.2", "deepseek", "deepseek", "deepseek-v3.2"),
    ("qwen/qwen3-max", "alibaba", "openrouter", "qwen/qwen3-max"),  # no provider of its own: OpenRouter's
    ("mistralai/mistral-medium-3.1", "mistral", "openrouter", "mistralai/mistral-medium-3.1"),
    ("openrouter/anthropic/claude-haiku-4.5", "anthropic", "anthropic", "claude-haiku-4.5"),  # a routed id
])
def test_a_table_price_costs_what_genai_prices_says(model, vendor, provider, ref):
    price = table_price(model, vendor)
    assert price is not None and price.source == TABLE and price.provider == provider
    tokens_in, tokens_out = 1234, 567
    ours = (tokens_in * price.input_mtok + tokens_out * price.output_mtok) / 1e6
    assert ours == pytest.approx(genai_usd(ref, provider, input_tokens=tokens_in, output_tokens=tokens_out), rel=1e-9)
    if price.cache_read_mtok is not None:  # every input token read from the cache
        assert price.cache_read_mtok * 1e-6 * tokens_in == pytest.approx(
            genai_usd(ref, provider, input_tokens=tokens_in, cache_read_tokens=tokens_in), rel=1e-9)


def test_the_config_beats_the_table_and_an_unset_vendor_price_does_not():
    vendors = {"anthropic": {"price_in_per_mtok": 4.0, "price_out_per_mtok": 20.0}, "google": {"rpm": 10}}
    config = CouncilConfig(model_prices=CONFIGURED, vendors=vendors)
    assert config.price("openai/gpt-5", "openai").source == "config"
    assert config.price_for("openai/gpt-5", "openai") == (2.0, 8.0)
    assert config.price_for("anthropic/claude-sonnet-4.5", "anthropic") == (4.0, 20.0)
    table = table_price("google/gemini-2.5-pro", "google")
    assert config.price("google/gemini-2.5-pro", "google") == table and table.input_mtok > 0  # 0 means unset
    qwen = table_price("qwen/qwen3-max", "alibaba")
    assert config.price_for("qwen/qwen3-max", "alibaba") == (qwen.input_mtok, qwen.output_mtok)


def test_a_budget_needs_no_written_price_but_refuses_a_model_no_table_knows():
    check_budget(CouncilConfig(budget_usd=1.0), ["openai/gpt-4.1-mini", "meta-llama/llama-3.3-70b-instruct"])
    roster = [MemberSpec(vendor=m.vendor, judge_model=UNKNOWN if m.vendor == "mistral" else m.judge_model,
                         reserve=m.reserve) for m in CouncilConfig().roster]
    config = CouncilConfig(roster=roster, budget_usd=1.0)
    assert table_price(UNKNOWN, "mistral") is None and config.unpriced(["acme/own-7b"]) == [UNKNOWN, "acme/own-7b"]
    with pytest.raises(ConfigError, match=rf"no price for: {UNKNOWN}.*model_prices"):
        check_budget(config, [])
    check_budget(config.model_copy(update={"model_prices": {UNKNOWN: (1.0, 3.0)}}), [])  # priced by the config


def test_a_simulated_run_records_its_prices_and_what_it_would_have_cost(tmp_path, capsys):
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"model_prices": CONFIGURED, "shadow_self": True}))
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r",
            "--responses", str(subset(tmp_path, 4)), "--simulate", "--config", str(config)]
    assert main(args) == 0
    out = capsys.readouterr().out
    folder = tmp_path / "runs" / "r"
    manifest, summary = (orjson.loads((folder / name).read_bytes()) for name in ("manifest.json", "summary.json"))
    judges = {m.judge_model for m in CouncilConfig().roster}
    assert manifest["price_table"] == TABLE and set(manifest["prices"]) == judges
    assert manifest["prices"]["openai/gpt-5"] == {"input_mtok": 2.0, "output_mtok": 8.0, "cache_read_mtok": None,
                                                   "cache_write_mtok": None, "source": "config", "provider": None}
    assert {p["source"] for m, p in manifest["prices"].items() if m != "openai/gpt-5"} == {TABLE}

    records = [*lines(folder / "round1.jsonl"), *lines(folder / "round2.jsonl"), *lines(folder / "shadow.jsonl")]
    assert any(r["shadow"] for r in records)  # shadow votes are paid too, and counted in round one
    for r in records:  # each vote costs its tokens at the recorded price, as genai-prices works it out
        assert r["cost_usd"] == pytest.approx(paid(r, manifest["prices"][r["judge_model"]]), rel=1e-6, abs=1e-9)

    total = summary["cost_usd"]
    assert total == pytest.approx(sum(r["cost_usd"] for r in records), abs=1e-5) and total > 0
    assert sum(summary["cost_by_round_usd"].values()) == pytest.approx(total, abs=1e-5)
    assert sum(summary["cost_by_vendor_usd"].values()) == pytest.approx(total, abs=1e-5)
    assert set(summary["cost_by_vendor_usd"]) == {r["member"] for r in records}
    assert summary["cost_by_round_usd"]["1"] == pytest.approx(
        sum(r["cost_usd"] for r in records if r["round"] == 1), abs=1e-5)
    assert "what it would have cost on the real providers" in out and f"total: ${total:.4f}" in out
    assert f"prices from: config, {TABLE}" in out


def test_prompt_tokens_the_provider_served_from_its_cache_cost_the_cache_read_rate(tmp_path):
    """Items with a long reference make round-one prompts of over 1,024 tokens: the embedded provider serves a
    judge's second prompt on an item its shared prefix from its cache, the client reads
    ``prompt_tokens_details.cached_tokens``, and each vote costs what genai-prices says with those tokens at the
    cache-read rate."""
    import bank

    long_reference = " Worked answer, step by step:" + " each step is shown and checked." * 160  # ~5,000 chars
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines() if x.strip()]
    bank_path = tmp_path / "bank.jsonl"
    bank_path.write_bytes(b"".join(orjson.dumps({**i, "reference": i["reference"] + long_reference}) + b"\n"
                                   for i in items))
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "c", "--bank",
            str(bank_path), "--responses", str(subset(tmp_path, 3)), "--simulate", "--no-report"]
    assert main(args) == 0
    folder = tmp_path / "runs" / "c"
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    records = [*lines(folder / "round1.jsonl"), *lines(folder / "round2.jsonl")]
    cached = [r for r in records if r["usage"]["cached_tokens"]]
    assert cached and all(r["usage"]["cached_tokens"] % 128 == 0 for r in cached)
    for r in records:
        assert r["cost_usd"] == pytest.approx(paid(r, manifest["prices"][r["judge_model"]]), rel=1e-6, abs=1e-9)
    # Some judge's price has a cache-read rate below its input rate, so its cached tokens were paid for at less
    # (a price without one, e.g. one the table sells through OpenRouter only, pays them at the input rate).
    discounted = [r for r in cached if (manifest["prices"][r["judge_model"]]["cache_read_mtok"] or 1e9)
                  < manifest["prices"][r["judge_model"]]["input_mtok"]]
    assert discounted, {r["judge_model"] for r in cached}


def test_a_hand_worked_vote_with_cached_tokens():
    """gpt-5 in the table: $1.25 per million input tokens, $0.125 read from the cache, $10 output (genai-prices
    0.2.3). A round-two vote of 3,000 prompt tokens, 2,048 of them served from the cache, and a 40-token answer:
    952 x 1.25 + 2,048 x 0.125 + 40 x 10 = 1,190 + 256 + 400 = 1,846 millionths of a dollar."""
    from council.core.schema import Usage

    rates = CouncilConfig().rates_for("openai/gpt-5", "openai")
    if version("genai-prices") == "0.2.3":
        assert rates == pytest.approx((1.25, 10.0, 0.125, 1.25))  # no cache-write rate listed: the input rate
    usage = Usage(prompt_tokens=3000, cached_tokens=2048, completion_tokens=40, total_tokens=3040)
    assert usage.cost_usd(1.25, 10.0, 0.125) == pytest.approx(0.001846, abs=1e-12)
    assert usage.cost_usd(*rates) == pytest.approx(
        genai_usd("gpt-5", "openai", input_tokens=3000, cache_read_tokens=2048, output_tokens=40), rel=1e-9)
    assert usage.cost_usd(1.25, 10.0) == pytest.approx(0.00415, abs=1e-12)  # no cache rate: all input, 3,000 x 1.25


def test_a_hand_worked_vote_that_wrote_to_the_cache():
    """claude-sonnet-4.5 in the table: $3 input, $3.75 written to the cache, $0.30 read, $15 output (genai-prices
    0.2.3). A round-one vote of 3,000 prompt tokens, 2,048 of them written at its breakpoint, and 40 out:
    952 x 3 + 2,048 x 3.75 + 40 x 15 = 2,856 + 7,680 + 600 = 11,136 millionths of a dollar."""
    from council.core.schema import Usage

    rates = CouncilConfig().rates_for("anthropic/claude-sonnet-4.5", "anthropic")
    if version("genai-prices") == "0.2.3":
        assert rates == pytest.approx((3.0, 15.0, 0.3, 3.75))
    usage = Usage(prompt_tokens=3000, cache_write_tokens=2048, completion_tokens=40, total_tokens=3040)
    assert usage.cost_usd(3.0, 15.0, 0.3, 3.75) == pytest.approx(0.011136, abs=1e-12)
    assert usage.cost_usd(*rates) == pytest.approx(genai_usd(
        "claude-sonnet-4.5", "anthropic", input_tokens=3000, cache_write_tokens=2048, output_tokens=40), rel=1e-9)


def test_a_batched_request_s_usage_is_shared_out_whole_cache_counts_too():
    """A batched request's usage is split among its votes: every count, the cache reads and writes included,
    adds up to the request's, and so do the votes' costs (a split that dropped the cache writes would pay them
    at no rate at all)."""
    from council.core.schema import Usage
    from council.transport.judge import split_usage

    whole = Usage(prompt_tokens=9001, completion_tokens=203, total_tokens=9204, reasoning_tokens=7,
                  cached_tokens=4096, cache_write_tokens=2049)
    parts = split_usage(whole, 4)
    assert len(parts) == 4 and sum(parts[1:], parts[0]) == whole
    rates = (3.0, 15.0, 0.3, 3.75)
    assert sum(p.cost_usd(*rates) for p in parts) == pytest.approx(whole.cost_usd(*rates), abs=1e-9)


# ---- batch prices ----------------------------------------------------------------------------------------------


def table_entry(ref: str, provider: str):
    return genai_prices.data_snapshot.get_snapshot().find_provider_model(ref, None, provider, None)[1]


@pytest.mark.parametrize(("model", "vendor", "ref"), [
    ("openai/gpt-5", "openai", "gpt-5"),
    ("anthropic/claude-sonnet-4.5", "anthropic", "claude-sonnet-4.5"),
    ("google/gemini-2.5-pro", "google", "gemini-2.5-pro"),
])
def test_a_batch_price_is_the_table_s_batch_variant(model, vendor, ref):
    """Judges of the default roster whose provider lists batch rates: the batch price costs what genai-prices
    says in the batch context, and less than the standard price."""
    assert any(v.when == BATCH for v in table_entry(ref, vendor).price_variants)  # the table has one
    batch, standard = table_price(model, vendor, batch=True), table_price(model, vendor)
    assert batch is not None and batch.source == TABLE and batch.provider == vendor
    tokens = {"input_tokens": 20_000, "cache_read_tokens": 4096, "output_tokens": 567}
    rates = CouncilConfig().batch_rates_for(model, vendor)
    ours = Usage(prompt_tokens=20_000, cached_tokens=4096, completion_tokens=567).cost_usd(*rates)
    assert ours == pytest.approx(genai_usd(ref, vendor, BATCH, **tokens), rel=1e-9)
    assert ours < genai_usd(ref, vendor, **tokens)  # the standard price, asked the same way
    assert (batch.input_mtok, batch.output_mtok) < (standard.input_mtok, standard.output_mtok)


def test_a_model_without_a_batch_variant_or_page_rate_has_no_batch_price_and_falls_back():
    """Asked in the batch context, the table answers such a model with its standard rates: that must not pass for
    a batch price. Mistral's batch API states no rate on its page: the config counts the standard rates and names
    the model, when its vendor batches."""
    model, vendor, ref = "mistralai/mistral-medium-3.1", "mistral", "mistralai/mistral-medium-3.1"
    assert genai_usd(ref, "openrouter", BATCH, input_tokens=1000) == genai_usd(ref, "openrouter", input_tokens=1000) > 0
    assert table_price(model, vendor) is not None and table_price(model, vendor, batch=True) is None
    config = CouncilConfig(vendors={vendor: {"transport": "batch"}})
    assert config.batch_price(model, vendor) is None
    assert config.batch_rates_for(model, vendor) == config.rates_for(model, vendor) == config.vote_rates(model, vendor)
    assert config.batch_unpriced() == [model]
    assert CouncilConfig().batch_unpriced() == []  # sync: its standard price is the right one


def test_a_batch_rate_the_table_lacks_comes_from_the_vendor_s_page_which_it_names():
    """qwen3-max: no batch variant in the table; Alibaba's batch page states half the real-time price, and no cache
    discount for batch requests. The price names the page and the day it was read."""
    assert genai_usd("qwen/qwen3-max", "openrouter", BATCH, input_tokens=1000) == genai_usd(
        "qwen/qwen3-max", "openrouter", input_tokens=1000) > 0
    standard, batch = table_price("qwen/qwen3-max", "alibaba"), table_price("qwen/qwen3-max", "alibaba", batch=True)
    pages = batch_pages()
    entry = pages["vendors"]["alibaba"]
    assert batch is not None and (batch.input_mtok, batch.output_mtok) == (
        standard.input_mtok * entry["share_of_standard"], standard.output_mtok * entry["share_of_standard"])
    assert batch.source.startswith(f"{entry['page']} (read {pages['read']})") and standard.source in batch.source
    assert CouncilConfig().batch_rates_for("qwen/qwen3-max", "alibaba") == (batch.input_mtok, batch.output_mtok,
                                                                            batch.input_mtok, batch.input_mtok)
    # every entry of the table names a page, and a rate only where its page states one
    for name, vendor in pages["vendors"].items():
        assert vendor["page"].startswith("https://") and vendor["says"], name
        assert ("share_of_standard" in vendor) == ("models" in vendor), name
    assert all(host["page"].startswith("https://") for host in pages["hosts"].values())


def test_a_vendor_without_a_batch_api_or_whose_endpoint_serves_none_stays_synchronous_in_a_batch_run():
    config = CouncilConfig(transport="batch")
    assert config.batching == ["anthropic", "google", "openai", "alibaba", "mistral"]
    assert config.transport_of("deepseek") == "sync" and "no batch API" in config.batch_refusal("deepseek")
    assert config.vote_rates("deepseek/deepseek-v3.2", "deepseek") == config.rates_for("deepseek/deepseek-v3.2",
                                                                                        "deepseek")
    forced = CouncilConfig(transport="batch", vendors={"deepseek": {"transport": "batch"}})
    assert forced.transport_of("deepseek") == "sync"  # said explicitly, still none to send it through
    # At a vendor's own API: the batch API must be one the council speaks, for that model.
    native = CouncilConfig(transport="batch", vendors={
        "openai": {"base_url": "https://api.openai.com/v1"},
        "mistral": {"base_url": "https://api.mistral.ai/v1"},
        "alibaba": {"base_url": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"}})
    assert native.transport_of("openai") == "batch"
    assert native.transport_of("mistral") == "sync" and "/v1/batch/jobs" in native.batch_refusal("mistral")
    assert native.transport_of("alibaba") == "sync" and "not qwen3-max" in native.batch_refusal("alibaba")
    beijing = CouncilConfig(transport="batch", vendors={
        "alibaba": {"base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1"}})
    assert beijing.transport_of("alibaba") == "batch"


def test_a_configured_batch_price_wins_and_the_transport_says_which_rates_a_vote_pays():
    vendors = {"openai": {"batch_price_in_per_mtok": 0.5, "batch_price_out_per_mtok": 4.0},
               "deepseek": {"batch_price_in_per_mtok": 0.1, "batch_price_out_per_mtok": 0.2, "transport": "sync"}}
    config = CouncilConfig(vendors=vendors, transport="batch")  # every vendor batches but deepseek
    assert config.batch_price("openai/gpt-5", "openai").source == "config"
    assert config.batch_rates_for("openai/gpt-5", "openai") == (0.5, 4.0, 0.5, 0.5)  # cache rates: the input's
    assert config.vote_rates("openai/gpt-5", "openai") == (0.5, 4.0, 0.5, 0.5)
    assert config.vote_rates("deepseek/deepseek-v3.2", "deepseek") == config.rates_for("deepseek/deepseek-v3.2",
                                                                                        "deepseek")
    table = table_price("google/gemini-2.5-pro", "google", batch=True)  # no config batch price: the table's
    assert config.batch_price("google/gemini-2.5-pro", "google") == table
    assert config.vote_rates("google/gemini-2.5-pro", "google")[:2] == (table.input_mtok, table.output_mtok)
    assert config.batch_unpriced() == ["mistralai/mistral-medium-3.1"]  # deepseek is sync; qwen has its page
