"""Real answers of real providers, recorded by another project's test suite (pydantic-ai's VCR cassettes; the
fixtures and their sources: tests/fixtures/recorded/README.md), replayed byte for byte by a server on 127.0.0.1 to
the council's own ChatClient (no mock of the client): OpenAI, Anthropic, Gemini's OpenAI-compatible endpoint, Groq,
Mistral, DeepSeek and OpenRouter. Each reply must read as what the provider said (content, finish reason) and be
counted and priced to the token: the expected figures are written out below and checked against the recorded JSON
by the providers' own definitions (not by our reader), and each cost is worked out by hand at the rates stated here.
Error bodies must raise the right class of error with the provider's words in its message."""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from council.core.errors import ProviderError, ProviderUnavailable, RateLimited
from council.core.schema import Usage
from council.protocol.config import Endpoint, RetryPolicy, Timeouts
from council.transport.client import ChatClient, ChatResult
from tests.council._loopback import serving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
PROVIDERS = ("openai", "anthropic", "gemini_openai", "groq", "mistral", "deepseek", "openrouter")
MESSAGES = [{"role": "system", "content": "You grade answers."}, {"role": "user", "content": "Grade this."}]


@functools.cache
def recording(provider: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{provider}.json").read_text(encoding="utf-8"))


def recorded(provider: str, name: str) -> dict[str, Any]:
    return recording(provider)["interactions"][name]


def api_of(provider: str) -> str:
    return "anthropic" if provider == "anthropic" else "openai"


class Replay:
    """Answers every request with one recorded response (its status, content type and body) and keeps the requests."""

    def __init__(self, response: dict[str, Any], body: Any = None) -> None:
        self.status = response["status"]
        self.content_type = response["headers"].get("content-type", "application/json")
        self.raw = json.dumps(response["body"] if body is None else body, ensure_ascii=False).encode()
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []

    async def handler(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.headers), json.loads(await request.read())))
        return web.Response(status=self.status, body=self.raw, headers={"Content-Type": self.content_type})


@contextlib.asynccontextmanager
async def replaying(provider: str, name: str, *, attempts: int = 1, body: Any = None):
    """A ChatClient of the provider's wire format against a server that replays the recorded response."""
    api = api_of(provider)
    replay = Replay(recorded(provider, name)["response"], body)
    async with serving("/v1/messages" if api == "anthropic" else "/v1/chat/completions", replay.handler) as url:
        endpoint = Endpoint(base_url=url, api_key_env=None, timeouts=Timeouts(read_s=5, total_s=6),
                            retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=0.05))
        client = ChatClient(endpoint, vendor=provider, api=api)
        try:
            yield client, replay
        finally:
            await client.close()


async def chat(provider: str, name: str, *, attempts: int = 1, body: Any = None) -> tuple[ChatResult, Replay]:
    async with replaying(provider, name, attempts=attempts, body=body) as (client, replay):
        result = await client.chat(recorded(provider, name)["request"]["body"]["model"], MESSAGES, max_tokens=256)
    return result, replay


# -- the recorded numbers, by each provider's own definition of its usage fields ------------------------------------


def openai_usage(u: dict[str, Any]) -> Usage:
    """Chat completions' usage as OpenAI defines it: reasoning tokens are part of completion_tokens, cached and
    cache-write tokens part of prompt_tokens (OpenRouter and OpenAI name the write ``cache_write_tokens``)."""
    prompt_details = u.get("prompt_tokens_details") or {}
    return Usage(prompt_tokens=u["prompt_tokens"], completion_tokens=u["completion_tokens"],
                 total_tokens=u["total_tokens"],
                 reasoning_tokens=(u.get("completion_tokens_details") or {}).get("reasoning_tokens", 0),
                 cached_tokens=prompt_details.get("cached_tokens", 0),
                 cache_write_tokens=prompt_details.get("cache_write_tokens", 0))


def anthropic_usage(u: dict[str, Any]) -> Usage:
    """A Message's usage: input_tokens are only the tokens after the last cache breakpoint, so the prompt is
    input + cache reads + cache writes; thinking is billed inside output_tokens (and counted apart only where the
    API reports ``output_tokens_details.thinking_tokens``)."""
    prompt = u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
    return Usage(prompt_tokens=prompt, completion_tokens=u["output_tokens"], total_tokens=prompt + u["output_tokens"],
                 reasoning_tokens=(u.get("output_tokens_details") or {}).get("thinking_tokens", 0),
                 cached_tokens=u["cache_read_input_tokens"], cache_write_tokens=u["cache_creation_input_tokens"])


def gemini_usage(u: dict[str, Any]) -> Usage:
    """Gemini's OpenAI-compatible endpoint (as recorded in 2025) leaves the thoughts out of completion_tokens but
    counts them in total_tokens, and bills them as output: the thoughts are total - prompt - completion."""
    thoughts = u["total_tokens"] - u["prompt_tokens"] - u["completion_tokens"]
    return Usage(prompt_tokens=u["prompt_tokens"], completion_tokens=u["completion_tokens"] + thoughts,
                 total_tokens=u["total_tokens"], reasoning_tokens=thoughts)


def mistral_usage(u: dict[str, Any]) -> Usage:
    """Mistral's usage: older answers name the cached prompt tokens ``num_cached_tokens`` (top level), newer ones
    ``prompt_tokens_details.cached_tokens``."""
    usage = openai_usage(u)
    return usage.model_copy(update={"cached_tokens": u.get("num_cached_tokens", usage.cached_tokens)})


def openrouter_gemini_usage(u: dict[str, Any]) -> Usage:
    """OpenRouter's Gemini answer that creates an explicit cache and reads it in the same request reports the same
    tokens as written and as read (2161 and 2161 of a 2168-token prompt): they are read tokens (billed at the
    cache-read rate; the write is a storage fee, see test_openrouter_gemini_cache_write_is_a_storage_fee)."""
    usage = openai_usage(u)
    assert usage.cached_tokens == usage.cache_write_tokens  # the overlap this rule is about
    return usage.model_copy(update={"cache_write_tokens": 0})


# -- the cases: content, finish reason, usage and cost, written out ------------------------------------------------

# USD per million tokens (input, output, cache read, cache write): list prices at the time of the recordings as far
# as we know them, or illustrative where a model's price is not known to us; the costs below are hand arithmetic at
# these rates (OpenRouter's are checked against the cost OpenRouter itself reported, to the last digit).
GPT_4O = (2.50, 10.00, 1.25, None)
O3_MINI = (1.10, 4.40, 0.55, None)
GPT_5_6_SOL = (1.25, 10.00, 0.125, 1.5625)  # illustrative: the model's price is not known to us
OPUS_3 = (15.00, 75.00, 1.50, 18.75)
SONNET_4 = (3.00, 15.00, 0.30, 3.75)  # Claude Sonnet 4.5 and 4.6, directly and through OpenRouter
OPUS_4_8 = (5.00, 25.00, 0.50, 6.25)  # illustrative
GEMINI_25_PRO = (1.25, 10.00, None, None)
LLAMA_33_70B = (0.59, 0.79, None, None)
GPT_OSS_120B = (0.15, 0.75, 0.075, None)
MISTRAL_LARGE = (2.00, 6.00, 0.20, None)  # illustrative cache-read rate
MISTRAL_SMALL = (0.10, 0.30, None, None)
MAGISTRAL_MEDIUM = (2.00, 5.00, None, None)
DEEPSEEK_REASONER = (0.55, 2.19, 0.14, None)
DEEPSEEK_V4_FLASH = (0.27, 1.10, 0.07, None)  # illustrative
GPT_5_MINI = (0.25, 2.00, 0.025, None)
GEMINI_25_FLASH = (0.30, 2.50, 0.03, 1 / 12)  # OpenRouter's cache write: $1 per million tokens an hour, for 5 minutes


def text_of(path: str) -> Callable[[dict[str, Any]], str]:
    """The recorded text at ``path`` (dotted keys and indices) of the response body."""
    def get(body: dict[str, Any]) -> str:
        value: Any = body
        for key in path.split("."):
            value = value[int(key)] if key.isdigit() else value[key]
        return value
    return get


MESSAGE = text_of("choices.0.message.content")


@dataclass(frozen=True)
class Case:
    provider: str
    name: str
    content: str | None | Callable[[dict[str, Any]], str]  # literal, or where the text is in the recorded body
    finish: str
    usage: Usage
    rates: tuple[float, float, float | None, float | None]
    cost: float  # by hand, at ``rates``
    recorded_as: Callable[[dict[str, Any]], Usage] = openai_usage

    @property
    def id(self) -> str:
        return f"{self.provider}-{self.name}"


def U(prompt: int, completion: int, total: int, reasoning: int = 0, cached: int = 0, written: int = 0) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total, reasoning_tokens=reasoning,
                 cached_tokens=cached, cache_write_tokens=written)


CASES = [
    # OpenAI, api.openai.com/v1/chat/completions
    Case("openai", "plain", "The capital of France is Paris.", "stop", U(24, 8, 32), GPT_4O,
         (24 * 2.50 + 8 * 10.00) / 1e6),
    Case("openai", "json_output", '{"city":"Mexico City","country":"Mexico"}', "stop", U(92, 15, 107), GPT_4O,
         (92 * 2.50 + 15 * 10.00) / 1e6),
    Case("openai", "reasoning_o3_mini", MESSAGE, "stop", U(13, 238, 251, reasoning=192), O3_MINI,
         (13 * 1.10 + 238 * 4.40) / 1e6),  # the 192 reasoning tokens are inside the 238, billed once as output
    Case("openai", "cache_write", "OK", "stop", U(4020, 4, 4024, written=4012), GPT_5_6_SOL,
         (8 * 1.25 + 4012 * 1.5625 + 4 * 10.00) / 1e6),
    Case("openai", "cache_read", "OK", "stop", U(4020, 4, 4024, cached=4012), GPT_5_6_SOL,
         (8 * 1.25 + 4012 * 0.125 + 4 * 10.00) / 1e6),
    # Anthropic, api.anthropic.com/v1/messages
    Case("anthropic", "plain", "The capital of France is Paris.", "stop", U(20, 10, 30), OPUS_3,
         (20 * 15.00 + 10 * 75.00) / 1e6, anthropic_usage),
    # thinking this model's answer does not count apart (no output_tokens_details): inside output_tokens all the same
    Case("anthropic", "thinking", text_of("content.1.text"), "stop", U(43, 321, 364), SONNET_4,
         (43 * 3.00 + 321 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "thinking_counted", text_of("content.1.text"), "stop", U(51, 168, 219, reasoning=112),
         SONNET_4, (51 * 3.00 + 168 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "redacted_thinking", text_of("content.1.text"), "stop", U(92, 196, 288), SONNET_4,
         (92 * 3.00 + 196 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "cache_read", text_of("content.0.text"), "stop", U(1114, 406, 1520, cached=1111), SONNET_4,
         (3 * 3.00 + 1111 * 0.30 + 406 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "cache_read_write", text_of("content.0.text"), "stop",
         U(1532, 33, 1565, cached=1111, written=418), SONNET_4,
         (3 * 3.00 + 1111 * 0.30 + 418 * 3.75 + 33 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "cache_write", "OK", "stop", U(1592, 4, 1596, written=1590), OPUS_4_8,
         (2 * 5.00 + 1590 * 6.25 + 4 * 25.00) / 1e6, anthropic_usage),
    Case("anthropic", "stop_sequence", "The beautiful city of ", "stop", U(32, 5, 37), SONNET_4,
         (32 * 3.00 + 5 * 15.00) / 1e6, anthropic_usage),
    Case("anthropic", "tool_use_only", None, "tool_calls", U(445, 23, 468), SONNET_4,
         (445 * 3.00 + 23 * 15.00) / 1e6, anthropic_usage),
    # Gemini's OpenAI-compatible endpoint: 28 and 62 thought tokens only in total_tokens, billed as output
    Case("gemini_openai", "plain", "The current time is Noon.", "stop", U(66, 34, 100, reasoning=28), GEMINI_25_PRO,
         (66 * 1.25 + (6 + 28) * 10.00) / 1e6, gemini_usage),
    Case("gemini_openai", "tool_call", None, "tool_calls", U(35, 74, 109, reasoning=62), GEMINI_25_PRO,
         (35 * 1.25 + (12 + 62) * 10.00) / 1e6, gemini_usage),
    # Groq
    Case("groq", "plain", "The capital of France is Paris.", "stop", U(48, 8, 56), LLAMA_33_70B,
         (48 * 0.59 + 8 * 0.79) / 1e6),
    Case("groq", "reasoning_gpt_oss", "4", "stop", U(84, 105, 189, reasoning=95), GPT_OSS_120B,
         (84 * 0.15 + 105 * 0.75) / 1e6),
    Case("groq", "reasoning_cached", MESSAGE, "stop", U(336, 96, 432, reasoning=59, cached=256), GPT_OSS_120B,
         (80 * 0.15 + 256 * 0.075 + 96 * 0.75) / 1e6),
    # Mistral
    Case("mistral", "plain", "cache probe one.", "stop", U(253, 5, 258), MISTRAL_LARGE,
         (253 * 2.00 + 5 * 6.00) / 1e6, mistral_usage),
    Case("mistral", "cache_read", "cache probe two.", "stop", U(268, 5, 273, cached=224), MISTRAL_LARGE,
         (44 * 2.00 + 224 * 0.20 + 5 * 6.00) / 1e6, mistral_usage),
    Case("mistral", "num_cached_tokens", MESSAGE, "stop", U(100, 29, 129, cached=99), MISTRAL_LARGE,
         (1 * 2.00 + 99 * 0.20 + 29 * 6.00) / 1e6, mistral_usage),
    # content as chunks: a thinking chunk, then the answer's text chunk (Mistral reports no reasoning count)
    Case("mistral", "thinking_chunks", "4", "stop", U(28, 35, 63), MISTRAL_SMALL,
         (28 * 0.10 + 35 * 0.30) / 1e6, mistral_usage),
    Case("mistral", "magistral_thinking_chunks", text_of("choices.0.message.content.1.text"), "stop",
         U(664, 747, 1411), MAGISTRAL_MEDIUM, (664 * 2.00 + 747 * 5.00) / 1e6, mistral_usage),
    # DeepSeek (its own prompt_cache_hit_tokens agree with prompt_tokens_details.cached_tokens)
    Case("deepseek", "reasoner", MESSAGE, "stop", U(12, 789, 801, reasoning=415), DEEPSEEK_REASONER,
         (12 * 0.55 + 789 * 2.19) / 1e6),
    Case("deepseek", "reasoning_cached", MESSAGE, "stop", U(976, 61, 1037, reasoning=25, cached=896),
         DEEPSEEK_V4_FLASH, (80 * 0.27 + 896 * 0.07 + 61 * 1.10) / 1e6),
    # OpenRouter
    Case("openrouter", "anthropic_cache_write_length", MESSAGE, "length", U(3214, 100, 3314, written=3211), SONNET_4,
         (3 * 3.00 + 3211 * 3.75 + 100 * 15.00) / 1e6),
    Case("openrouter", "anthropic_cache_read_write", MESSAGE, "stop", U(3329, 53, 3382, cached=3211, written=115),
         SONNET_4, (3 * 3.00 + 3211 * 0.30 + 115 * 3.75 + 53 * 15.00) / 1e6),
    Case("openrouter", "anthropic_reasoning", "ok", "stop", U(43, 53, 96, reasoning=48), SONNET_4,
         (43 * 3.00 + 53 * 15.00) / 1e6),
    Case("openrouter", "openai_reasoning", MESSAGE, "stop", U(17, 2177, 2194, reasoning=960), GPT_5_MINI,
         (17 * 0.25 + 2177 * 2.00) / 1e6),
    Case("openrouter", "gemini_cache_write_and_read", MESSAGE, "length", U(2168, 100, 2268, cached=2161),
         GEMINI_25_FLASH, (7 * 0.30 + 2161 * 0.03 + 100 * 2.50) / 1e6, openrouter_gemini_usage),
    Case("openrouter", "gemini_cache_read", MESSAGE, "length", U(2167, 99, 2266, cached=2161), GEMINI_25_FLASH,
         (6 * 0.30 + 2161 * 0.03 + 99 * 2.50) / 1e6),
]
REPLIES = {case.id: case for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_the_expected_figures_are_the_recorded_ones(case):
    """The figures the cases expect are the recording's, by the provider's definition of its fields."""
    response = recorded(case.provider, case.name)["response"]
    assert response["status"] == 200
    assert case.recorded_as(response["body"]["usage"]) == case.usage


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
async def test_a_recorded_reply_reads_and_prices_right(case):
    result, replay = await chat(case.provider, case.name)
    body = recorded(case.provider, case.name)["response"]["body"]
    [(path, headers, sent)] = replay.requests
    assert path == ("/v1/messages" if api_of(case.provider) == "anthropic" else "/v1/chat/completions")
    assert ("x-api-key" in headers) == (case.provider == "anthropic")
    assert sent["model"] == recorded(case.provider, case.name)["request"]["body"]["model"]
    content = case.content(body) if callable(case.content) else case.content
    assert isinstance(content, str | None) and (content is None or len(content) > 0)
    assert result.content == content
    assert result.finish_reason == case.finish
    assert result.attempts == 1
    assert result.usage == case.usage
    assert result.usage.cost_usd(*case.rates) == pytest.approx(case.cost, abs=1e-9)


# -- what the general cases do not say ----------------------------------------------------------------------------


def test_reasoning_and_thinking_are_billed_once_as_output():
    """Reasoning tokens are inside completion_tokens (OpenAI-shaped) and thinking inside output_tokens (Anthropic):
    the cost of the o3-mini answer is its 238 completion tokens at the output rate, not 238 + 192."""
    o3 = REPLIES["openai-reasoning_o3_mini"]
    assert o3.usage.reasoning_tokens < o3.usage.completion_tokens
    assert o3.usage.cost_usd(*O3_MINI) == pytest.approx((13 * 1.10 + 238 * 4.40) / 1e6, abs=1e-12)
    sonnet = REPLIES["anthropic-thinking_counted"]
    assert sonnet.usage.reasoning_tokens == 112 and sonnet.usage.completion_tokens == 168


@pytest.mark.parametrize("name", ["anthropic_cache_write_length", "anthropic_cache_read_write", "anthropic_reasoning",
                                  "openai_reasoning", "gemini_cache_read"])
def test_openrouter_s_own_cost_is_ours(name):
    """OpenRouter reports what it billed (usage.cost): our cost of its usage at the model's rates is the same."""
    case = REPLIES[f"openrouter-{name}"]
    billed = recorded("openrouter", name)["response"]["body"]["usage"]["cost"]
    assert case.cost == pytest.approx(billed, abs=1e-12)


def test_openrouter_gemini_cache_write_is_a_storage_fee():
    """The Gemini answer that made its cache and read it: OpenRouter billed the 7 fresh tokens, the 2161 read ones
    at the cache-read rate and, on top, 2161 tokens of cache storage (5 minutes at $1 per million an hour). Usage
    has no field for a storage fee: our cost is OpenRouter's less exactly that fee."""
    case = REPLIES["openrouter-gemini_cache_write_and_read"]
    billed = recorded("openrouter", "gemini_cache_write_and_read")["response"]["body"]["usage"]["cost"]
    assert billed - case.cost == pytest.approx(2161 * GEMINI_25_FLASH[3] / 1e6, abs=1e-12)
    assert case.usage.prompt_tokens - case.usage.cached_tokens - case.usage.cache_write_tokens == 7


async def test_an_anthropic_reply_of_thinking_alone_has_no_content():
    """No recording holds a reply of thinking alone (a max_tokens stop inside the thinking would give one): the
    recorded thinking reply, its text block taken out, stands in for it. Its usage is read as recorded."""
    body = json.loads(json.dumps(recorded("anthropic", "thinking_counted")["response"]["body"]))
    body["content"] = [block for block in body["content"] if block["type"] != "text"]
    assert [block["type"] for block in body["content"]] == ["thinking"]
    result, _ = await chat("anthropic", "thinking_counted", body=body)
    assert result.content is None and result.finish_reason == "stop"
    assert result.usage == REPLIES["anthropic-thinking_counted"].usage


# -- error bodies ---------------------------------------------------------------------------------------------------


def error_text(provider: str, name: str) -> str:
    return recorded(provider, name)["response"]["body"]["error"]["message"]


@pytest.mark.parametrize(("provider", "name", "model"), [
    ("openai", "error_model_not_found", "gpt-5.2-proo"),
    ("groq", "error_model_not_found", "non-existent"),
    ("anthropic", "error_model_not_found", "claude-sonet-4-5"),
])
async def test_an_unknown_model_stops_the_vendor_at_once(provider, name, model):
    async with replaying(provider, name, attempts=3) as (client, replay):
        with pytest.raises(ProviderUnavailable) as info:
            await client.chat(model, MESSAGES)
        assert client.breaker.state == "open"
    assert len(replay.requests) == 1
    assert info.value.status == 404
    assert str(info.value).endswith(f": HTTP 404: unknown model {model!r}: {error_text(provider, name)}")


async def test_a_refused_parameter_is_permanent_with_the_provider_s_words():
    """OpenAI's ``unsupported_value`` (o1-mini refuses the developer role): every request of the seat carries it, so
    the vendor stops at once instead of being refused row after row."""
    provider, name, model = "openai", "error_unsupported_value", "o1-mini"
    async with replaying(provider, name, attempts=3) as (client, replay):
        with pytest.raises(ProviderUnavailable) as info:
            await client.chat(model, MESSAGES)
        assert client.breaker.state == "open"
    assert info.value.status == 400 and len(replay.requests) == 1
    assert str(info.value).endswith(f"HTTP 400: {model} refuses the request's parameters (`council check` names the "
                                    f"fix): {error_text(provider, name)}")


@pytest.mark.parametrize(("provider", "name", "model"), [
    ("anthropic", "error_invalid_request", "claude-opus-4-6"),
])
async def test_a_refused_request_is_a_provider_error_with_the_provider_s_words(provider, name, model):
    """A 400 that names no missing model: not retried (the same request would be refused again), not permanent."""
    async with replaying(provider, name, attempts=3) as (client, replay):
        with pytest.raises(ProviderError) as info:
            await client.chat(model, MESSAGES)
        assert client.breaker.state == "closed"
    assert type(info.value) is ProviderError and info.value.status == 400 and info.value.attempts == 1
    assert len(replay.requests) == 1
    assert str(info.value).endswith(f": {model}: HTTP 400: {error_text(provider, name)}")


async def test_openrouter_s_upstream_rate_limit_is_retried_and_says_why():
    """OpenRouter's 429 says only "Provider returned error"; the upstream's own words are in error.metadata.raw."""
    error = recorded("openrouter", "error_rate_limited_upstream")["response"]["body"]["error"]
    async with replaying("openrouter", "error_rate_limited_upstream", attempts=2) as (client, replay):
        with pytest.raises(RateLimited) as info:
            await client.chat("google/gemini-2.0-flash-exp:free", MESSAGES)
    assert len(replay.requests) == 2 and info.value.attempts == 2 and info.value.status == 429
    message = str(info.value)
    assert f"google/gemini-2.0-flash-exp:free: HTTP 429: {error['message']}" in message
    assert error["metadata"]["provider_name"] in message
    assert "is temporarily rate-limited upstream" in message and message.endswith(error["metadata"]["raw"])


# -- the fixtures themselves ----------------------------------------------------------------------------------------

SECRET = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}|\bBearer\s+\S{8,}|x-api-key|authorization|cookie|AIza[0-9A-Za-z_-]{20,}",
                    re.IGNORECASE)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_fixtures_name_their_source_and_hold_no_secret(provider):
    text = (FIXTURES / f"{provider}.json").read_text(encoding="utf-8")
    assert not SECRET.search(text)
    data = recording(provider)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert data["source"]["repository"] == "https://github.com/pydantic/pydantic-ai"
    assert data["source"]["commit"] in readme and f"{provider}.json" in readme
    assert "MIT" in data["source"]["licence"]
    for interaction in data["interactions"].values():
        assert interaction["cassette"] in readme
        assert set(interaction["response"]["headers"]) <= {"content-type"}


def test_every_recorded_interaction_is_tested():
    tested = {case.id for case in CASES} | {
        "openai-error_model_not_found", "groq-error_model_not_found", "anthropic-error_model_not_found",
        "openai-error_unsupported_value", "anthropic-error_invalid_request", "openrouter-error_rate_limited_upstream"}
    assert {f"{p}-{name}" for p in PROVIDERS for name in recording(p)["interactions"]} == tested
