"""The providers' documented request rules on the embedded provider (``SimConfig.api_rules``), over raw HTTP on
127.0.0.1: each maker refuses what its API refuses, with its own error body, and takes what it takes; reasoning
comes out of the output cap and is billed as output; the native hosts want their own vendor's native ids; each
vendor's rate-limit headers and 429 bodies; Anthropic's 529; and the permissive mode."""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import aiohttp
import pytest_asyncio

from council.core.schema import BankItem, ResponseRow
from council.protocol.prompts import round1_messages
from council.sim import WORLD, ModelBehaviour, SimConfig, TruthTable, VendorBehaviour, sim_config_doc, start_sim
from council.sim._apis import RULES, rule_for
from council.sim._hosts import HOSTS
from council.sim._world import NATIVE
from elicitor.prompts import elicit_messages

QUIET = {"latency_ms": 0.0, "latency_jitter_ms": 0.0, "malformed_rate": 0.0, "name_drop_rate": 0.0,
         "prose_json_rate": 0.0, "fenced_rate": 0.0}
AUTH = {"Authorization": "Bearer test"}
ANTHROPIC = {"x-api-key": "test", "anthropic-version": "2023-06-01"}
HI = [{"role": "user", "content": "hi"}]
GATEWAY = "/v1/chat/completions"
OPENAI = "/api.openai.com/v1/chat/completions"
GEMINI = "/generativelanguage.googleapis.com/v1beta/openai/chat/completions"
MESSAGES = "/v1/messages"


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def config(api_rules: bool = True, **kw: Any) -> SimConfig:
    return SimConfig(seed=7, api_rules=api_rules, default=VendorBehaviour(**{**QUIET, **kw}))


@pytest_asyncio.fixture(loop_scope="function")
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def call(session: aiohttp.ClientSession, server: Any, path: str, body: dict[str, Any],
               headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    """POST ``body`` to ``path`` of ``server``: the status, the headers (case-insensitive) and the decoded body."""
    if headers is None:
        headers = ANTHROPIC if "/messages" in path else AUTH
    async with session.post(f"http://127.0.0.1:{server.port}{path}", json=body, headers=headers) as resp:
        return resp.status, resp.headers.copy(), await resp.json()


def openai_error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def judged(n: int = 1) -> tuple[TruthTable, list[list[dict]]]:
    """A truth table of ``n`` rows and the round-one conversation grading each."""
    items = [BankItem(id=f"q{i}", probe="arithmetic", prompt=f"What is {i} + {i}?", reference=str(2 * i),
                      rationale="arithmetic") for i in range(n)]
    rows = [ResponseRow(item_id=it.id, model="meta-llama/llama-3.3-70b-instruct", response=f"It is {i}.",
                        gold_verdict="correct" if i % 2 else "incorrect") for i, it in enumerate(items)]
    return TruthTable.from_rows(items, rows), [round1_messages(i, r) for i, r in zip(items, rows)]


def content(body: dict[str, Any]) -> str:
    return body["choices"][0]["message"]["content"]


# ---- the rules table ---------------------------------------------------------------------------------------------


def test_each_rule_knows_its_models_in_both_forms_and_names_its_pages() -> None:
    cases = {
        "OpenAI GPT-5 reasoning models": ("openai/gpt-5", "gpt-5", "GPT-5-mini", "gpt-5-nano-2025-08-07"),
        "OpenAI o-series reasoning models": ("o1", "openai/o3", "o3-mini", "openai/o4-mini", "o4-mini-2025-04-16"),
        "OpenAI o1-mini": ("o1-mini",),
        "OpenAI chat models": ("gpt-4o", "openai/gpt-4.1-mini", "gpt-3.5-turbo", "gpt-5-chat-latest",
                               "openai/gpt-5-chat", "chatgpt-4o-latest"),
        "Gemini 2.5 Pro": ("google/gemini-2.5-pro", "gemini-2.5-pro", "vertex_ai/gemini-2.5-pro"),
        "Gemini 2.5 Flash": ("google/gemini-2.5-flash", "gemini/gemini-2.5-flash"),
        "Gemini 2.5 Flash-Lite": ("google/gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        "Claude with extended thinking": ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5",
                                          "claude-sonnet-4-5-20250929", "claude-opus-4-1", "claude-3-7-sonnet-latest",
                                          "anthropic/claude-haiku-4.5", "claude-sonnet-4-20250514"),
        "Claude without extended thinking": ("claude-3-5-haiku-20241022", "anthropic/claude-3.5-sonnet"),
        "DeepSeek reasoner": ("deepseek-reasoner", "deepseek/deepseek-r1", "deepseek/deepseek-r1-0528",
                              "deepseek-ai/DeepSeek-R1"),
        "DeepSeek chat": ("deepseek-chat", "deepseek/deepseek-v3.2"),
    }
    for name, ids in cases.items():
        for model in ids:
            rule = rule_for(model)
            assert rule is not None and rule.name == name, (model, rule and rule.name)
            assert model.lower() in {m.lower() for m in WORLD}, model
    for model in ("openai/gpt-oss-120b", "gpt-oss-20b", "meta-llama/llama-3.3-70b-instruct", "qwen/qwen3-max",
                  "gemini-2.0-flash", "anthropic.claude-3-5-sonnet-20241022-v2:0"):
        assert rule_for(model) is None, model
    doc = sim_config_doc()
    assert {rule.name for rule in RULES} == set(cases)
    for rule in RULES:
        assert rule.pages and all(page.startswith("https://") for page in rule.pages), rule.name
        assert f"| {rule.name} ({rule.maker}) |" in doc and all(f"<{page}>" in doc for page in rule.pages)
    for host in HOSTS:
        assert host.pages and f"| `/{host.host}` |" in doc and all(f"<{page}>" in doc for page in host.pages)


def test_native_ids_are_the_world_s_and_belong_to_their_vendor() -> None:
    world = {m.lower(): v for m, v in WORLD.items()}
    for vendor, ids in NATIVE.items():
        for model in ids:
            assert world[model.lower()] == vendor and "/" not in model, model
    assert {host.vendor for host in HOSTS} == set(NATIVE)


# ---- OpenAI ------------------------------------------------------------------------------------------------------


async def test_openai_reasoning_models_refuse_what_the_api_refuses(session) -> None:
    async with await start_sim(config()) as server:
        for path, model in ((GATEWAY, "openai/gpt-5"), (OPENAI, "gpt-5"), (OPENAI, "o3"), (GATEWAY, "openai/o4-mini")):
            status, _, body = await call(session, server, path, {"model": model, "messages": HI, "max_tokens": 300})
            assert status == 400 and body == openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
                "instead.", "max_tokens", "unsupported_parameter")
            for param, value, shown in (("temperature", 0, "0"), ("temperature", 0.7, "0.7"), ("top_p", 0.5, "0.5")):
                status, _, body = await call(session, server, path, {"model": model, "messages": HI, param: value})
                assert status == 400 and body == openai_error(
                    f"Unsupported value: '{param}' does not support {shown} with this model. Only the default (1) "
                    "value is supported.", param, "unsupported_value")
        status, _, body = await call(session, server, OPENAI, {"model": "o3", "messages": HI,
                                                               "reasoning_effort": "minimal"})
        assert status == 400 and body == openai_error(
            "Unsupported value: 'reasoning_effort' does not support \"minimal\" with this model. Supported values "
            "are: 'low', 'medium', and 'high'.", "reasoning_effort", "unsupported_value")
        status, _, body = await call(session, server, OPENAI, {"model": "gpt-5", "messages": HI,
                                                               "reasoning_effort": "none"})
        assert status == 400 and body["error"]["code"] == "unsupported_value"
        assert "'minimal', 'low', 'medium', and 'high'" in body["error"]["message"]
        status, _, body = await call(session, server, OPENAI, {"model": "o1-mini", "messages": HI,
                                                               "reasoning_effort": "low"})
        assert status == 400 and body == openai_error(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort",
            "unsupported_parameter")
        status, _, body = await call(session, server, OPENAI, {"model": "o1-mini", "messages": [
            {"role": "developer", "content": "Be brief."}, *HI]})
        assert status == 400 and body == openai_error(  # as OpenAI answered it (tests/fixtures/recorded/openai.json)
            "Unsupported value: 'messages[0].role' does not support 'developer' with this model.", "messages[0].role",
            "unsupported_value")
        stats = (await server.stats())["models"]
        assert stats["openai/gpt-5"]["refused"] == 4 and stats["openai/gpt-5"]["requests"] == 0
        assert stats["gpt-5"]["billed"] == 0 and stats["o3"]["refused"] == 5
        # What the API takes: max_completion_tokens, temperature 1, each documented effort.
        for model, effort in (("gpt-5", "minimal"), ("gpt-5-mini", "high"), ("o3", "low"), ("o4-mini", None)):
            body = {"model": model, "messages": HI, "max_completion_tokens": 8000, "temperature": 1, "top_p": 1}
            if effort:
                body["reasoning_effort"] = effort
            status, _, got = await call(session, server, OPENAI, body)
            assert status == 200 and got["choices"][0]["finish_reason"] == "stop", got
            assert got["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0


async def test_openai_chat_models_refuse_reasoning_effort_and_take_max_tokens(session) -> None:
    async with await start_sim(config()) as server:
        for path, model in ((GATEWAY, "openai/gpt-4o"), (OPENAI, "gpt-4.1-mini"), (OPENAI, "gpt-5-chat-latest")):
            status, _, body = await call(session, server, path, {"model": model, "messages": HI,
                                                                 "reasoning_effort": "low"})
            assert status == 400 and body == openai_error(
                "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort",
                "unsupported_parameter")
            for cap in ("max_tokens", "max_completion_tokens"):
                status, _, body = await call(session, server, path, {"model": model, "messages": HI, cap: 300,
                                                                     "temperature": 0})
                assert status == 200 and body["choices"][0]["finish_reason"] == "stop"
                assert body["usage"]["completion_tokens"] == math.ceil(len(content(body)) / 4)
                assert "completion_tokens_details" not in body["usage"]


# ---- reasoning spend ---------------------------------------------------------------------------------------------


async def test_reasoning_comes_out_of_the_cap_and_is_billed_as_output(session) -> None:
    truth, conversations = judged(1)
    messages = conversations[0]
    async with await start_sim(config(), truth) as server:
        status, _, cut = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": messages,
                                                               "max_completion_tokens": 256})
        assert status == 200 and content(cut) == "" and cut["choices"][0]["finish_reason"] == "length"
        usage = cut["usage"]
        assert usage["completion_tokens"] == 256 == usage["completion_tokens_details"]["reasoning_tokens"]
        status, _, full = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": messages,
                                                                "max_completion_tokens": 20000})
        reasoning = full["usage"]["completion_tokens_details"]["reasoning_tokens"]
        assert status == 200 and full["choices"][0]["finish_reason"] == "stop" and '"verdict"' in content(full)
        assert 450 <= reasoning <= 1350  # medium effort (mean 900), drawn 0.5x to 1.5x
        assert full["usage"]["completion_tokens"] == reasoning + math.ceil(len(content(full)) / 4)
        # The cap below the reasoning plus the answer cuts the answer, reasoning first.
        answer = math.ceil(len(content(full)) / 4)
        _, _, part = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": messages,
                                                           "max_completion_tokens": reasoning + answer // 2})
        assert part["choices"][0]["finish_reason"] == "length" and content(full).startswith(content(part))
        assert 0 < len(content(part)) < len(content(full))
        assert part["usage"]["completion_tokens_details"]["reasoning_tokens"] == reasoning  # the same request text
        stats = (await server.stats())["models"]["openai/gpt-5"]
        assert stats["billed"] == 3 and stats["reasoning_tokens"] == 256 + 2 * reasoning
        assert stats["completion_tokens"] == 256 + full["usage"]["completion_tokens"] + reasoning + answer // 2
        # A higher effort spends more on the same request; the vendor's means are configurable.
        _, _, high = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": messages,
                                                           "reasoning_effort": "high"})
        assert high["usage"]["completion_tokens_details"]["reasoning_tokens"] > reasoning
    cheap = config(reasoning_means={"medium": 100})
    assert cheap.default.reasoning_means["high"] == 2500  # keys left out keep their defaults
    async with await start_sim(cheap, truth) as server:
        _, _, body = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": messages})
        assert 50 <= body["usage"]["completion_tokens_details"]["reasoning_tokens"] <= 150


async def test_reasoning_counts_in_the_token_quota() -> None:
    truth, conversations = judged(2)
    statuses = {}
    for rules in (True, False):
        async with await start_sim(config(rules, tpm=60_000), truth, clock=FakeClock()) as server, \
                aiohttp.ClientSession() as session:  # a bucket of 1,000 tokens that does not refill
            got = [await call(session, server, GATEWAY, {"model": "openai/gpt-5", "messages": m})
                   for m in conversations]
            statuses[rules] = [status for status, _, _ in got]
    assert statuses == {True: [200, 429], False: [200, 200]}


async def test_models_under_test_reason_by_the_same_rules(session) -> None:
    items = [BankItem(id=f"e{i}", probe="calibration", prompt=f"What is {i} x 37?", reference=f"{i * 37:,}",
                      rationale="arithmetic") for i in range(12)]
    cfg = config().model_copy(update={"models": {"openai/o3": ModelBehaviour(reasoning_tokens=200)}})
    async with await start_sim(cfg, TruthTable.from_items(items)) as server:
        for model, low, high in (("openai/gpt-5", 450, 1350), ("openai/o3", 100, 300), ("openai/gpt-4o-mini", 0, 0)):
            for item in items:
                status, _, body = await call(session, server, GATEWAY, {"model": model,
                                                                        "messages": elicit_messages(item.prompt)})
                assert status == 200 and content(body).startswith("Confidence: ")
                assert low <= body["usage"]["completion_tokens_details"]["reasoning_tokens"] <= high, model
        _, _, cut = await call(session, server, GATEWAY, {"model": "openai/gpt-5", "max_completion_tokens": 100,
                                                          "messages": elicit_messages(items[0].prompt)})
        assert content(cut) == "" and cut["choices"][0]["finish_reason"] == "length"
        assert (await server.stats())["models"]["openai/gpt-5"]["elicitations"] == 13


# ---- Gemini ------------------------------------------------------------------------------------------------------


def google(code: int, status: str, message: str) -> list[dict[str, Any]]:
    return [{"error": {"code": code, "message": message, "status": status}}]


async def test_gemini_thinking_rules_on_its_own_endpoint(session) -> None:
    async with await start_sim(config()) as server:
        def budget(n: int) -> dict[str, Any]:
            return {"extra_body": {"google": {"thinking_config": {"thinking_budget": n}}}}

        refusals = [
            ("gemini-2.5-pro", {"reasoning_effort": "none"},
             "Budget 0 is invalid. This model only works in thinking mode."),
            ("gemini-2.5-pro", budget(0), "Budget 0 is invalid. This model only works in thinking mode."),
            ("gemini-2.5-pro", budget(64), "The thinking budget (64) is invalid. Please choose a value between 128 "
                                           "and 32768."),
            ("gemini-2.5-flash", budget(30000), "The thinking budget (30000) is invalid. Please choose a value "
                                                "between 0 and 24576."),
            ("gemini-2.5-flash-lite", budget(100), "The thinking budget (100) is invalid. Please choose a value "
                                                   "between 512 and 24576."),
            ("gemini-2.5-flash", {"reasoning_effort": "low", **budget(1024)},
             "reasoning_effort and thinking_budget cannot both be set: they overlap in functionality."),
        ]
        for model, extra, message in refusals:
            status, headers, body = await call(session, server, GEMINI, {"model": model, "messages": HI, **extra})
            assert status == 400 and body == google(400, "INVALID_ARGUMENT", message), (model, extra)
        status, _, body = await call(session, server, GEMINI, {"model": "gemini-2.5-pro", "messages": HI,
                                                               "reasoning_effort": "extreme"})
        assert status == 400 and body[0]["error"]["status"] == "INVALID_ARGUMENT"
        # No budget: dynamic thinking, a large draw that a 256-token cap leaves no answer to.
        for model in ("models/gemini-2.5-pro", "gemini-2.5-flash"):
            status, headers, body = await call(session, server, GEMINI, {"model": model, "messages": HI,
                                                                         "max_tokens": 256})
            assert status == 200 and content(body) == "" and body["choices"][0]["finish_reason"] == "length"
            assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 256
            assert not any(k.lower().startswith(("x-ratelimit", "retry-after")) for k in headers)
        accepted = [
            ("gemini-2.5-pro", {"reasoning_effort": "low"}, 1, 1024),
            ("gemini-2.5-pro", budget(128), 1, 128),
            ("gemini-2.5-pro", budget(-1), 1500, 4500),
            ("gemini-2.5-flash", budget(0), 0, 0),
            ("gemini-2.5-flash", {"reasoning_effort": "none"}, 0, 0),
            ("gemini-2.5-flash-lite", {}, 0, 0),
            ("gemini-2.5-flash-lite", budget(512), 1, 512),
        ]
        for model, extra, low, high in accepted:
            status, _, body = await call(session, server, GEMINI, {"model": model, "messages": HI,
                                                                   "max_completion_tokens": 8000, **extra})
            assert status == 200 and body["choices"][0]["finish_reason"] == "stop", (model, extra, body)
            spent = body["usage"].get("completion_tokens_details", {}).get("reasoning_tokens", 0)
            assert low <= spent <= high, (model, extra, spent)


async def test_gemini_on_the_gateway_takes_openrouter_s_reasoning(session) -> None:
    async with await start_sim(config()) as server:
        status, _, body = await call(session, server, GATEWAY, {"model": "google/gemini-2.5-pro", "messages": HI,
                                                                "reasoning": {"max_tokens": 64}})
        assert status == 400 and body == openai_error(
            "The thinking budget (64) is invalid. Please choose a value between 128 and 32768.", "thinking_budget",
            None)
        status, _, body = await call(session, server, GATEWAY, {"model": "google/gemini-2.5-pro", "messages": HI,
                                                                "reasoning": {"max_tokens": 200}})
        assert status == 200 and 0 < body["usage"]["completion_tokens_details"]["reasoning_tokens"] <= 200
        status, _, body = await call(session, server, GATEWAY, {"model": "google/gemini-2.5-flash", "messages": HI,
                                                                "reasoning": {"effort": "none"}})
        assert status == 200 and "completion_tokens_details" not in body["usage"]  # thinking off


async def test_gemini_quota_answers_resource_exhausted_with_a_retry_delay(session) -> None:
    async with await start_sim(config(rpm=6), clock=FakeClock()) as server:  # one request a burst, 10 s apart
        status, headers, _ = await call(session, server, GEMINI, {"model": "gemini-2.0-flash", "messages": HI})
        assert status == 200 and not any(k.lower().startswith("x-ratelimit") for k in headers)
        status, headers, body = await call(session, server, GEMINI, {"model": "gemini-2.0-flash", "messages": HI})
        assert status == 429 and "retry-after" not in headers and not any(k.startswith("x-rate") for k in headers)
        assert isinstance(body, list) and len(body) == 1
        error = body[0]["error"]
        assert error["code"] == 429 and error["status"] == "RESOURCE_EXHAUSTED" and error["message"]
        retry = [d for d in error["details"] if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo"]
        assert retry == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "10s"}]


async def test_gemini_endpoint_wants_native_ids(session) -> None:
    async with await start_sim(config()) as server:
        for model in ("google/gemini-2.5-pro", "gpt-5", "gemini-9-ultra"):
            status, _, body = await call(session, server, GEMINI, {"model": model, "messages": HI})
            assert status == 404 and body[0]["error"]["status"] == "NOT_FOUND" and body[0]["error"]["code"] == 404
        async with session.post(f"http://127.0.0.1:{server.port}{GEMINI}", json={"model": "gemini-2.5-pro"}) as resp:
            assert resp.status == 401 and (await resp.json())[0]["error"]["status"] == "UNAUTHENTICATED"


# ---- Anthropic ---------------------------------------------------------------------------------------------------


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


THINKING_DOCS = "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"


async def test_claude_thinking_rules_on_the_messages_api(session) -> None:
    async with await start_sim(config()) as server:
        base = {"model": "claude-sonnet-4-5", "max_tokens": 4000, "messages": HI}
        refusals = [
            ({"thinking": {"type": "enabled", "budget_tokens": 500}},
             "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
            ({"thinking": {"type": "enabled", "budget_tokens": 4000}},
             f"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
             f"{THINKING_DOCS}#max-tokens-and-context-window-size"),
            ({"thinking": {"type": "enabled", "budget_tokens": 2000}, "temperature": 0},
             f"`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at "
             f"{THINKING_DOCS}#feature-compatibility"),
            ({"thinking": {"type": "enabled"}}, "thinking.enabled.budget_tokens: Field required"),
        ]
        for extra, message in refusals:
            for path in (MESSAGES, "/api.anthropic.com/v1/messages"):
                status, _, body = await call(session, server, path, {**base, **extra})
                assert status == 400 and body == anthropic_error("invalid_request_error", message), extra
        status, _, body = await call(session, server, MESSAGES, {
            **base, "model": "claude-3-5-haiku-20241022", "thinking": {"type": "enabled", "budget_tokens": 2000}})
        assert status == 400 and body["error"]["type"] == "invalid_request_error"
        # Off by default, any temperature; on, a thinking block first and the thinking within output_tokens.
        status, _, plain = await call(session, server, MESSAGES, {**base, "temperature": 0})
        assert status == 200 and [c["type"] for c in plain["content"]] == ["text"]
        assert plain["usage"]["output_tokens"] == math.ceil(len(plain["content"][0]["text"]) / 4)
        status, _, thought = await call(session, server, MESSAGES, {
            **base, "thinking": {"type": "enabled", "budget_tokens": 2000}, "temperature": 1})
        assert status == 200 and [c["type"] for c in thought["content"]] == ["thinking", "text"]
        block = thought["content"][0]
        assert block["thinking"] and block["signature"] and thought["stop_reason"] == "end_turn"
        answer = math.ceil(len(thought["content"][1]["text"]) / 4)
        spent = thought["usage"]["output_tokens"] - answer
        assert 300 <= spent <= 900  # a thinking budget: a draw around 600, at most the budget
        stats = (await server.stats())["models"]["claude-sonnet-4-5"]
        assert stats["reasoning_tokens"] == spent and stats["refused"] == 8 and stats["billed"] == 2


async def test_claude_on_the_gateway_thinks_with_openrouter_s_reasoning(session) -> None:
    async with await start_sim(config()) as server:
        model = "anthropic/claude-sonnet-4.5"
        status, _, body = await call(session, server, GATEWAY, {"model": model, "messages": HI,
                                                                "reasoning": {"max_tokens": 500}})
        assert status == 400 and body["error"]["param"] == "reasoning.max_tokens"
        status, _, body = await call(session, server, GATEWAY, {"model": model, "messages": HI, "temperature": 0,
                                                                "reasoning": {"max_tokens": 2000}})
        assert status == 400 and body["error"]["message"].startswith("`temperature` may only be set to 1")
        status, _, body = await call(session, server, GATEWAY, {"model": model, "messages": HI, "temperature": 0})
        assert status == 200 and "completion_tokens_details" not in body["usage"]
        status, _, body = await call(session, server, GATEWAY, {"model": model, "messages": HI,
                                                                "reasoning": {"max_tokens": 2000}})
        assert status == 200 and 300 <= body["usage"]["completion_tokens_details"]["reasoning_tokens"] <= 900


async def test_anthropic_face_wants_native_ids(session) -> None:
    async with await start_sim(config()) as server:
        for path in (MESSAGES, "/api.anthropic.com/v1/messages"):
            for model in ("anthropic/claude-sonnet-4.5", "gpt-5", "anthropic.claude-3-5-sonnet-20241022-v2:0"):
                status, _, body = await call(session, server, path, {"model": model, "max_tokens": 10, "messages": HI})
                assert status == 404 and body == anthropic_error("not_found_error", f"model: {model}")
            for model in ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-3-5-haiku-latest"):
                status, _, body = await call(session, server, path, {"model": model, "max_tokens": 10, "messages": HI})
                assert status == 200 and body["model"] == model


async def test_anthropic_rate_limit_headers_and_retry_after(session) -> None:
    async with await start_sim(config(rpm=60, tpm=600_000), clock=FakeClock()) as server:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": HI}
        status, headers, _ = await call(session, server, MESSAGES, body)
        assert status == 200 and not any(k.lower().startswith("x-ratelimit") for k in headers)
        assert headers["anthropic-ratelimit-requests-limit"] == "60"
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
        for group in ("tokens", "input-tokens", "output-tokens"):
            assert headers[f"anthropic-ratelimit-{group}-limit"] == "600000"
            assert int(headers[f"anthropic-ratelimit-{group}-remaining"]) < 10_000
        for group in ("requests", "tokens", "input-tokens", "output-tokens"):
            reset = headers[f"anthropic-ratelimit-{group}-reset"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", reset)
            datetime.fromisoformat(reset.replace("Z", "+00:00"))
        status, headers, got = await call(session, server, "/api.anthropic.com/v1/messages", body)
        assert status == 429 and headers["retry-after"] == "1" and got["error"]["type"] == "rate_limit_error"
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
        # The gateway names the same vendor's quota OpenAI's way.
        status, headers, _ = await call(session, server, GATEWAY, {"model": "anthropic/claude-sonnet-4.5",
                                                                   "messages": HI})
        assert status == 429 and headers["x-ratelimit-limit-requests"] == "60" and "retry-after" in headers
        assert not any(k.lower().startswith("anthropic-") for k in headers)


async def test_anthropic_overloaded_529_is_not_billed(session) -> None:
    async with await start_sim(config(overloaded_rate=1.0, rpm=60), clock=FakeClock()) as server:
        for path in (MESSAGES, "/api.anthropic.com/v1/messages"):
            status, _, body = await call(session, server, path, {"model": "claude-sonnet-4-5", "max_tokens": 10,
                                                                 "messages": HI})
            assert status == 529 and body == anthropic_error("overloaded_error", "Overloaded")
        stats = (await server.stats())["models"]["claude-sonnet-4-5"]
        assert stats["overloaded"] == 2 and stats["billed"] == 0 and stats["rate_limited"] == 0
        # No quota used: the chat face (which never answers 529) still has the whole burst.
        status, _, _ = await call(session, server, GATEWAY, {"model": "anthropic/claude-sonnet-4.5", "messages": HI})
        assert status == 200


# ---- the other native hosts --------------------------------------------------------------------------------------


async def test_native_hosts_serve_their_own_vendor_s_native_ids(session) -> None:
    cases = [
        (OPENAI, ("gpt-5", "gpt-4o-mini", "o3"), ("openai/gpt-5", "claude-sonnet-4-5", "gpt-oss:20b")),
        ("/api.deepseek.com/chat/completions", ("deepseek-chat", "deepseek-reasoner"),
         ("deepseek/deepseek-r1", "gpt-5")),
        ("/api.deepseek.com/v1/chat/completions", ("deepseek-chat",), ("deepseek-ai/DeepSeek-V3",)),
        ("/dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions", ("qwen3-max", "qwen-plus"),
         ("qwen/qwen3-max", "Qwen/Qwen2.5-72B-Instruct", "deepseek-chat")),
        ("/api.mistral.ai/v1/chat/completions", ("mistral-medium-2508", "mistral-medium-latest"),
         ("mistralai/mistral-medium-3.1", "mistral:7b")),
    ]
    async with await start_sim(config()) as server:
        for path, good, bad in cases:
            for model in good:
                status, _, body = await call(session, server, path, {"model": model, "messages": HI,
                                                                     "max_completion_tokens": 8000})
                assert status == 200 and body["model"] == model, (path, model, body)
            for model in bad:
                status, _, body = await call(session, server, path, {"model": model, "messages": HI})
                assert status == 404 and body == {"error": {
                    "message": f"The model `{model}` does not exist or you do not have access to it.",
                    "type": "invalid_request_error", "param": None, "code": "model_not_found"}}, (path, model)
        status, _, body = await call(session, server, "/api.deepseek.com/chat/completions", {
            "model": "deepseek-reasoner", "messages": HI, "temperature": 0, "top_p": 0.1})
        assert status == 200 and body["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0
        status, _, body = await call(session, server, "/api.deepseek.com/chat/completions", {
            "model": "deepseek-reasoner", "messages": HI, "logprobs": True})
        assert status == 400 and body["error"]["param"] == "logprobs"
        status, _, body = await call(session, server, "/api.deepseek.com/chat/completions", {
            "model": "deepseek-chat", "messages": HI, "temperature": 0})
        assert status == 200 and "completion_tokens_details" not in body["usage"]
        async with session.get(f"http://127.0.0.1:{server.port}/api.openai.com/v1/models", headers=AUTH) as resp:
            listed = {m["id"] for m in (await resp.json())["data"]}
        assert listed == set(NATIVE["openai"])


async def test_the_openai_sdk_and_its_batch_api_on_openai_s_host() -> None:
    from openai import AsyncOpenAI

    truth, conversations = judged(3)
    clock = FakeClock()
    async with await start_sim(config(), truth, clock=clock) as server:
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/api.openai.com/v1", api_key="k",
                             max_retries=0)
        resp = await client.chat.completions.create(model="gpt-5", messages=conversations[0],
                                                    max_completion_tokens=8000, reasoning_effort="low")
        assert resp.choices[0].finish_reason == "stop" and resp.usage.completion_tokens_details.reasoning_tokens > 0
        outcomes = {}
        for model in ("gpt-5", "openai/gpt-5"):
            lines = b"".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                                         "body": {"model": model, "messages": m, "max_completion_tokens": 8000}
                                         }).encode() + b"\n" for i, m in enumerate(conversations))
            file = await client.files.create(file=("in.jsonl", lines), purpose="batch")
            batch = await client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                                completion_window="24h")
            clock.t += 10
            batch = await client.batches.retrieve(batch.id)
            outcomes[model] = (batch.status, batch.request_counts.completed, batch.request_counts.failed)
            if model == "openai/gpt-5":
                errors = [json.loads(x) for x in (await client.files.content(batch.error_file_id)).text.splitlines()]
                assert {e["response"]["status_code"] for e in errors} == {404}
                assert errors[0]["response"]["body"]["error"]["code"] == "model_not_found"
        assert outcomes == {"gpt-5": ("completed", 3, 0), "openai/gpt-5": ("completed", 0, 3)}
        await client.close()


async def test_anthropic_batches_on_its_host_name_the_host_in_results_url(session) -> None:
    truth, conversations = judged(2)
    clock = FakeClock()
    async with await start_sim(config(), truth, clock=clock) as server:
        base = f"http://127.0.0.1:{server.port}/api.anthropic.com/v1/messages/batches"
        requests = [{"custom_id": f"r{i}", "params": {"model": model, "max_tokens": 300, "messages": HI}}
                    for i, model in enumerate(("claude-sonnet-4-5", "anthropic/claude-sonnet-4.5"))]
        async with session.post(base, json={"requests": requests}, headers=ANTHROPIC) as resp:
            batch = await resp.json()
        clock.t += 10
        async with session.get(f"{base}/{batch['id']}", headers=ANTHROPIC) as resp:
            batch = await resp.json()
        assert batch["processing_status"] == "ended" and batch["results_url"] == f"{base}/{batch['id']}/results"
        async with session.get(batch["results_url"], headers=ANTHROPIC) as resp:
            results = {line["custom_id"]: line["result"] for line in map(json.loads, (await resp.text()).splitlines())}
        assert results["r0"]["type"] == "succeeded"
        assert results["r1"] == {"type": "errored", "error": anthropic_error(
            "not_found_error", "model: anthropic/claude-sonnet-4.5")}


# ---- the permissive mode -----------------------------------------------------------------------------------------


async def test_without_api_rules_anything_goes(session) -> None:
    async with await start_sim(config(api_rules=False)) as server:
        cases = [
            (GATEWAY, {"model": "openai/gpt-5", "max_tokens": 300, "temperature": 0, "reasoning_effort": "bogus"}),
            (GATEWAY, {"model": "openai/gpt-4o", "reasoning_effort": "low"}),
            (OPENAI, {"model": "openai/gpt-5", "max_tokens": 300}),
            (GEMINI, {"model": "gemini-2.5-pro", "reasoning_effort": "none", "max_tokens": 256}),
            (MESSAGES, {"model": "anthropic/claude-sonnet-4.5", "max_tokens": 300,
                        "thinking": {"type": "enabled", "budget_tokens": 10}, "temperature": 0}),
        ]
        for path, body in cases:
            status, _, got = await call(session, server, path, {"messages": HI, **body})
            assert status == 200, (path, body, got)
            if path != MESSAGES:
                assert got["choices"][0]["finish_reason"] == "stop" and content(got)
                assert "completion_tokens_details" not in got["usage"]  # no reasoning
            else:
                assert [c["type"] for c in got["content"]] == ["text"]
        stats = await server.stats()
        assert sum(m["reasoning_tokens"] + m["refused"] for m in stats["models"].values()) == 0


async def test_every_host_lists_and_serves_its_native_ids(session) -> None:
    async with await start_sim(config()) as server:
        for host in HOSTS:
            root = f"http://127.0.0.1:{server.port}/{host.host}"
            if host.models:
                async with session.get(root + host.models, headers=AUTH) as resp:
                    listed = [m["id"] for m in (await resp.json())["data"]]
                assert resp.status == 200 and sorted(listed, key=str.lower) == sorted(NATIVE[host.vendor],
                                                                                      key=str.lower)
            model = NATIVE[host.vendor][0]
            for path in host.chat:
                status, _, body = await call(session, server, f"/{host.host}{path}", {
                    "model": model, "messages": HI, "max_completion_tokens": 8000})
                assert status == 200 and body["object"] == "chat.completion", (host.host, path, body)
