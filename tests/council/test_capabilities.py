"""Per-model request capabilities (council.protocol.capabilities, council.transport.shape), each rule shown against
the embedded provider in its realistic (default) world: the request the council sends is accepted, and the same
request with the rule taken out is refused (or cut short) as the provider documents it. The table is checked against
its maintained source: rebuilt from pydantic-ai's model profiles, it must equal the shipped file."""

from __future__ import annotations

import dataclasses

import pytest
import pytest_asyncio

import bank
from council.core.errors import ProviderUnavailable, RateLimited
from council.protocol import capabilities_build
from council.protocol.capabilities import UNKNOWN, capabilities_of, native_id, table
from council.protocol.config import Endpoint, JudgeParams, Limits, RetryPolicy
from council.protocol.prompts import round1_body, single_messages
from council.sim import SimConfig, TruthTable, start_sim
from council.transport.client import ChatClient
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import QuotaLedger
from council.transport.shape import RequestShape, nearest_effort, reasoning_variant, seat_shape, shape_for

PARAMS = JudgeParams()
ITEMS = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
ROWS = bank.load_responses(bank.SAMPLE_RESPONSES, list(ITEMS.values()))
ROW = next(r for r in ROWS if r.vendor not in ("openai", "google", "anthropic"))
MESSAGES = single_messages(1, round1_body(ITEMS[ROW.item_id], ROW))
NATIVE = {"openai": "api.openai.com/v1", "anthropic": "api.anthropic.com/v1",
          "google": "generativelanguage.googleapis.com/v1beta/openai"}


@pytest_asyncio.fixture(loop_scope="function")
async def sim():
    server = await start_sim(SimConfig.planted(seed=0), TruthTable.from_rows(ITEMS.values(), ROWS))
    yield server
    await server.close()


def endpoint(sim, vendor: str | None = None) -> Endpoint:
    """The embedded provider's gateway, or (``vendor``) its stand-in for that vendor's own API."""
    if vendor is None:
        return Endpoint(base_url=sim.url, api_key_env=None, retry=RetryPolicy(max_attempts=1))
    host = NATIVE[vendor]
    return Endpoint(base_url=f"{sim.url.removesuffix('/v1')}/{host}", api_key_env=None, ids="native",
                    real_host=host.split("/")[0], retry=RetryPolicy(max_attempts=1))


async def ask(where: Endpoint, shape: RequestShape, api: str = "openai"):
    client = ChatClient(where, api=api)
    try:
        return await client.chat(shape.model, MESSAGES, max_tokens=PARAMS.max_tokens, shape=shape)
    finally:
        await client.close()


# -- the table and its source -----------------------------------------------------------------------------------------


def test_the_shipped_table_is_what_pydantic_ai_s_profiles_and_the_named_pages_give():
    assert capabilities_build.text(capabilities_build.build()) == capabilities_build.TABLE_PATH.read_text(), (
        "capabilities.json is stale: python -m council.protocol.capabilities_build")


def test_every_hand_written_fact_names_its_page():
    for facts in capabilities_build.HAND.values():
        assert facts["page"].startswith("https://")
    for name, entry in table().items():
        hand = [k for k in capabilities_build.HAND if k[0] == entry["maker"] and name.startswith(k[1])]
        assert bool(hand) == bool(entry["pages"]), name


@pytest.mark.parametrize(("model", "vendor", "name", "reasoning"), [
    ("openai/gpt-5", "openai", "gpt-5", "always"), ("gpt-5-2025-08-07", "openai", "gpt-5", "always"),
    ("openai/gpt-5-chat-latest", "openai", "gpt-5-chat", "none"), ("openai/o3-mini", "openai", "o3-mini", "always"),
    ("google/gemini-2.5-pro", "google", "gemini-2.5-pro", "always"),
    ("google/gemini-2.5-flash", "google", "gemini-2.5-flash", "default"),
    ("anthropic/claude-sonnet-4.5", "anthropic", "claude-sonnet-4-5", "optional"),
    ("deepseek/deepseek-r1", "deepseek", "deepseek-reasoner", "always"),
    ("deepseek/deepseek-v3.2", "deepseek", "deepseek-chat", "none"),
    ("qwen/qwq-32b", "alibaba", "qwq", "always"), ("qwen/qwen3-max", "alibaba", "qwen3-max", "none"),
])
def test_a_model_is_matched_by_its_longest_name_in_the_table(model, vendor, name, reasoning):
    caps = capabilities_of(model, vendor)
    assert (caps.name, caps.reasoning) == (name, reasoning)


@pytest.mark.parametrize(("model", "vendor", "native"), [
    ("anthropic/claude-sonnet-4.5", "anthropic", "claude-sonnet-4-5"), ("openai/gpt-5", "openai", "gpt-5"),
    ("google/gemini-2.5-pro", "google", "gemini-2.5-pro"), ("deepseek/deepseek-v3.2", "deepseek", "deepseek-chat"),
    ("mistralai/mistral-medium-3.1", "mistral", "mistral-medium-2508"), ("qwen/qwen3-max", "alibaba", "qwen3-max"),
    ("claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5-20250929"),
])
def test_native_ids(model, vendor, native):
    assert native_id(model, vendor) == native


def test_an_unknown_model_gets_safe_defaults_and_a_warning():
    shape = shape_for("acme/brainy-9", "acme", temperature=0.0, reasoning="auto", effort="low", thinking_budget=800)
    assert not capabilities_of("acme/brainy-9", "acme").known and UNKNOWN.reasoning == "default"
    assert shape.fields(256) == {"max_tokens": 256 + 800}  # no sampling, no effort: room for reasoning only
    assert shape.warnings and "not in the capability table" in shape.warnings[0]


def test_the_nearest_effort_a_model_takes():
    assert nearest_effort("minimal", ("high", "low", "medium")) == "low"
    assert nearest_effort("low", ("medium",)) == "medium"
    assert nearest_effort("high", ("low", "medium", "high", "minimal")) == "high"


def test_request_keys_change_only_for_a_seat_that_reasons():
    assert reasoning_variant("qwen/qwen3-max", "alibaba", PARAMS) == ""
    assert reasoning_variant("openai/gpt-5", "openai", PARAMS) == "reasoning:low:1024"
    assert reasoning_variant("openai/gpt-5", "openai", PARAMS.model_copy(update={"reasoning_effort": "high"})) != \
        reasoning_variant("openai/gpt-5", "openai", PARAMS)


def test_a_thinking_budget_outside_the_model_s_range_is_a_problem_before_any_request():
    low = PARAMS.model_copy(update={"thinking_budget": 64})
    shape = seat_shape("google/gemini-2.5-pro", "google", low, Endpoint(base_url="http://127.0.0.1:1/v1"))
    assert shape.problems and "128..32768" in shape.problems[0] and "gemini-2.5-pro" in shape.problems[0]
    on = PARAMS.model_copy(update={"reasoning": "on", "thinking_budget": 512})
    claude = seat_shape("anthropic/claude-sonnet-4.5", "anthropic", on, Endpoint(base_url="http://127.0.0.1:1/v1"),
                        "anthropic")
    assert claude.problems and "at least 1024" in claude.problems[0]


# -- each rule against the provider's documented behaviour ------------------------------------------------------------


async def test_openai_reasoning_models_get_max_completion_tokens_and_no_temperature(sim):
    shape = seat_shape("openai/gpt-5", "openai", PARAMS, endpoint(sim))
    assert shape.fields(256) == {"max_completion_tokens": 1280, "reasoning_effort": "low"}
    result = await ask(endpoint(sim), shape)
    assert result.content and result.finish_reason == "stop" and result.usage.reasoning_tokens > 0
    with pytest.raises(ProviderUnavailable, match="max_completion_tokens"):  # the rule removed: OpenAI's refusal
        await ask(endpoint(sim), dataclasses.replace(shape, budget_param="max_tokens"))
    with pytest.raises(ProviderUnavailable, match="temperature"):
        await ask(endpoint(sim), dataclasses.replace(shape, temperature=0.0))


async def test_an_effort_the_model_does_not_take_is_never_sent(sim):
    minimal = PARAMS.model_copy(update={"reasoning_effort": "minimal"})
    shape = seat_shape("openai/o3-mini", "openai", minimal, endpoint(sim))
    assert shape.reasoning == {"reasoning_effort": "low"}
    assert (await ask(endpoint(sim), shape)).content
    with pytest.raises(ProviderUnavailable, match="reasoning_effort"):
        await ask(endpoint(sim), dataclasses.replace(shape, reasoning={"reasoning_effort": "minimal"}))


async def test_a_model_that_does_not_reason_is_sent_no_effort(sim):
    shape = seat_shape("openai/gpt-4o", "openai", PARAMS, endpoint(sim))
    assert "reasoning_effort" not in shape.fields(256) and shape.temperature == 0.0
    assert (await ask(endpoint(sim), shape)).content
    with pytest.raises(ProviderUnavailable, match="reasoning_effort"):
        await ask(endpoint(sim), dataclasses.replace(shape, reasoning={"reasoning_effort": "low"}))


@pytest.mark.parametrize("native", [False, True])
async def test_reasoning_gets_room_on_top_of_the_answer(sim, native):
    where = endpoint(sim, "google" if native else None)
    shape = seat_shape("google/gemini-2.5-pro", "google", PARAMS, where)
    assert shape.headroom == PARAMS.thinking_budget
    result = await ask(where, shape)
    assert result.content and result.finish_reason == "stop" and 0 < result.usage.reasoning_tokens <= 1024
    # the rule removed: the answer's bound alone, thinking at the model's own (dynamic) budget fills it
    cut = await ask(where, dataclasses.replace(shape, headroom=0, reasoning={}))
    assert cut.finish_reason == "length" and not cut.content
    assert cut.usage.completion_tokens == PARAMS.max_tokens and cut.usage.reasoning_tokens > 0


async def test_a_native_endpoint_is_sent_the_provider_s_own_id(sim):
    where = endpoint(sim, "anthropic")
    shape = seat_shape("anthropic/claude-sonnet-4.5", "anthropic", PARAMS, where, "anthropic")
    assert shape.model == "claude-sonnet-4-5"
    assert (await ask(where, shape, "anthropic")).content
    with pytest.raises(ProviderUnavailable, match="unknown model"):
        await ask(where, dataclasses.replace(shape, model="anthropic/claude-sonnet-4.5"), "anthropic")


async def test_claude_s_extended_thinking_drops_the_temperature(sim):
    where = endpoint(sim, "anthropic")
    on = PARAMS.model_copy(update={"reasoning": "on"})
    shape = seat_shape("anthropic/claude-sonnet-4.5", "anthropic", on, where, "anthropic")
    assert shape.fields(256) == {"max_tokens": 1280, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    result = await ask(where, shape, "anthropic")
    assert result.content and result.usage.completion_tokens > 0
    with pytest.raises(ProviderUnavailable, match="temperature"):
        await ask(where, dataclasses.replace(shape, temperature=0.0), "anthropic")


async def test_gemini_refuses_a_thinking_budget_below_its_minimum(sim):
    where = endpoint(sim, "google")
    shape = seat_shape("google/gemini-2.5-pro", "google", PARAMS.model_copy(update={"thinking_budget": 64}), where)
    assert shape.problems  # found before any request; and the provider refuses it too
    with pytest.raises(ProviderUnavailable, match="HTTP 400"):
        await ask(where, shape)


# -- each provider's own rate-limit signals -------------------------------------------------------------------------


async def test_gemini_s_retry_delay_in_its_429_body_is_the_wait_hint():
    """Gemini's 429 has no rate-limit header; its RESOURCE_EXHAUSTED body carries RetryInfo's retryDelay."""
    config = SimConfig.planted(seed=0)
    config = config.model_copy(update={"vendors": {**config.vendors, "google": config.behaviour("google").model_copy(
        update={"rpm": 6})}})  # one request, then ten seconds to wait
    server = await start_sim(config, TruthTable.from_rows(ITEMS.values(), ROWS))
    try:
        where = endpoint(server, "google")
        shape = seat_shape("google/gemini-2.5-pro", "google", PARAMS, where)
        assert (await ask(where, shape)).content
        with pytest.raises(RateLimited) as info:
            await ask(where, shape)
    finally:
        await server.close()
    assert info.value.retry_after_s is not None and 5.0 <= info.value.retry_after_s <= 10.0


async def test_anthropic_s_own_headers_announce_its_limits():
    """The Messages API says its limits in anthropic-ratelimit-* headers, not OpenAI's x-ratelimit-*."""
    config = SimConfig.planted(seed=0)
    config = config.model_copy(update={"vendors": {**config.vendors, "anthropic": config.behaviour(
        "anthropic").model_copy(update={"rpm": 600, "tpm": 90_000})}})
    server = await start_sim(config, TruthTable.from_rows(ITEMS.values(), ROWS))
    where = endpoint(server, "anthropic")
    ledger = QuotaLedger(Limits())
    limiter = Limiter(LocalLedger(ledger), "judge:anthropic")
    client = ChatClient(where, api="anthropic", limiter=limiter, vendor="anthropic")
    shape = seat_shape("anthropic/claude-sonnet-4.5", "anthropic", PARAMS, where, "anthropic")
    try:
        await client.chat(shape.model, MESSAGES, max_tokens=PARAMS.max_tokens, shape=shape)
        await limiter.flush()
    finally:
        await client.close()
        await server.close()
    assert ledger.report()["announced"] == {"rpm": 600.0, "tpm": 90_000.0}
