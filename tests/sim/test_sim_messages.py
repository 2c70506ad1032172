"""Anthropic's native Messages API on the embedded provider, through the official ``anthropic`` SDK: the same
answers, billing and faults as chat completions, in Anthropic's shapes."""

from __future__ import annotations

import json

import aiohttp
import pytest

from council.core.schema import BankItem, ResponseRow
from council.protocol.prompts import round1_messages
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from tests.sim._clients import anthropic_client, openai_client

QUIET = {"latency_ms": 0.0, "latency_jitter_ms": 0.0, "malformed_rate": 0.0, "name_drop_rate": 0.0,
         "prose_json_rate": 0.0, "fenced_rate": 0.0}
JUDGE = "claude-sonnet-4-5"  # Anthropic's Messages API wants its native ids (the gateway takes them too)
LLAMA = "meta-llama/llama-3.3-70b-instruct"


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def config(**kw: float | bool) -> SimConfig:
    return SimConfig(seed=3, default=VendorBehaviour(**{**QUIET, **kw}))


def rows(n: int) -> tuple[list[BankItem], list[ResponseRow]]:
    items = [BankItem(id=f"q{i}", probe="arithmetic", prompt=f"What is {i} + {i}?", reference=str(2 * i),
                      rationale="arithmetic") for i in range(n)]
    answers = [ResponseRow(item_id=it.id, model=LLAMA, response=f"It is {i * 7 % 13}, reply {i}.",
                           gold_verdict="correct" if i % 2 else "incorrect") for i, it in enumerate(items)]
    return items, answers


def native(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """A chat conversation as Anthropic's ``system`` and ``messages``."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    return (system[0] if system else None), [m for m in messages if m["role"] != "system"]


async def test_same_answers_and_billing_as_chat_completions() -> None:
    items, answers = rows(6)
    conversations = [round1_messages(i, r) for i, r in zip(items, answers)]
    async with await start_sim(config(), TruthTable.from_rows(items, answers)) as server:
        chat = openai_client(server)
        expected = [await chat.chat.completions.create(model=JUDGE, messages=m, max_tokens=300) for m in conversations]
        await server.reset()
        client = anthropic_client(server)
        for messages, want in zip(conversations, expected):
            system, turns = native(messages)
            got = await client.messages.create(model=JUDGE, max_tokens=300, system=system, messages=turns,
                                               extra_body={"temperature": 0})  # this SDK's create takes none
            assert got.type == "message" and got.role == "assistant" and got.id.startswith("msg_")
            assert got.stop_reason == "end_turn" and got.stop_sequence is None and got.model == JUDGE
            assert got.content[0].text == want.choices[0].message.content
            assert json.loads(got.content[0].text)["verdict"] in {"correct", "incorrect"}
            assert got.usage.input_tokens == want.usage.prompt_tokens
            assert got.usage.output_tokens == want.usage.completion_tokens
        stats = (await server.stats())["models"][JUDGE]
        assert stats["requests"] == stats["billed"] == 6
        assert stats["prompt_tokens"] == sum(e.usage.prompt_tokens for e in expected)
        short = await client.messages.create(model=JUDGE, max_tokens=5, messages=native(conversations[0])[1])
        assert short.stop_reason == "max_tokens" and short.usage.output_tokens == 5
        await client.close()
        await chat.close()


async def test_input_tokens_exclude_the_cached_ones() -> None:
    shared = "Grade the answer against the reference. " * 115  # 1,150 tokens
    system = [{"type": "text", "text": shared, "cache_control": {"type": "ephemeral"}}]
    turns = [{"role": "user", "content": [{"type": "text", "text": "Question one: 2 + 2?"}]}]
    cfg = config(prompt_cache_breakpoints=True)
    async with await start_sim(cfg, TruthTable(), clock=FakeClock()) as server:
        client = anthropic_client(server)
        first = await client.messages.create(model=JUDGE, max_tokens=50, system=system, messages=turns)
        second = await client.messages.create(model=JUDGE, max_tokens=50, system=system, messages=turns)
        prompt = (await server.stats())["models"][JUDGE]["prompt_tokens"] // 2
        assert first.usage.cache_creation_input_tokens >= 1024 and first.usage.cache_read_input_tokens == 0
        assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
        assert second.usage.cache_creation_input_tokens == 0
        for usage in (first.usage, second.usage):
            assert usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens == prompt
            assert usage.input_tokens < 20  # the uncached question only
        await client.close()


async def test_headers_and_bad_requests_are_refused_in_anthropics_shape() -> None:
    good = {"model": JUDGE, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    version = {"anthropic-version": "2023-06-01"}
    async with await start_sim(config()) as server, aiohttp.ClientSession() as session:
        url = f"{server.url}/messages"
        cases = [
            ({}, good, 401, "authentication_error"),
            ({"x-api-key": "k"}, good, 400, "invalid_request_error"),  # no anthropic-version
            ({"x-api-key": "k", **version}, {**good, "max_tokens": None}, 400, "invalid_request_error"),
            ({"x-api-key": "k", **version}, {**good, "messages": [{"role": "system", "content": "x"}]}, 400,
             "invalid_request_error"),
            ({"x-api-key": "k", **version}, {**good, "model": "nobody/none"}, 404, "not_found_error"),
            ({"x-api-key": "k", **version}, good, 200, None),
        ]
        for headers, body, status, kind in cases:
            async with session.post(url, json=body, headers=headers) as resp:
                got = await resp.json()
                assert resp.status == status, (headers, body, got)
                if kind is not None:
                    assert got["type"] == "error" and got["error"]["type"] == kind and got["error"]["message"]
        assert (await server.stats())["models"][JUDGE]["requests"] == 1


async def test_quota_storm_and_server_errors_in_anthropics_shape() -> None:
    import anthropic

    clock = FakeClock()
    turns = [{"role": "user", "content": "hi"}]
    async with await start_sim(config(rpm=60), clock=clock) as server:
        client = anthropic_client(server)
        await client.messages.create(model=JUDGE, max_tokens=10, messages=turns)
        with pytest.raises(anthropic.RateLimitError) as limited:
            await client.messages.create(model=JUDGE, max_tokens=10, messages=turns)
        assert limited.value.status_code == 429 and limited.value.response.headers["retry-after"] == "1"
        assert limited.value.body["error"]["type"] == "rate_limit_error"
        stats = (await server.stats())["models"][JUDGE]
        assert stats["rate_limited"] == 1 and stats["billed"] == 1
        await client.close()
    async with await start_sim(config(storm_429=5.0), clock=clock) as server:
        client = anthropic_client(server)
        with pytest.raises(anthropic.APIStatusError) as storm:
            await client.messages.create(model=JUDGE, max_tokens=10, messages=turns)
        assert storm.value.status_code == 529 and storm.value.body["error"]["type"] == "overloaded_error"
        assert storm.value.response.headers["retry-after"] == "5"
        await client.close()
    async with await start_sim(config(error_rate=1.0)) as server:
        client = anthropic_client(server)
        with pytest.raises(anthropic.InternalServerError) as failed:
            await client.messages.create(model=JUDGE, max_tokens=10, messages=turns)
        assert failed.value.body["error"]["type"] == "api_error"
        stats = (await server.stats())["models"][JUDGE]
        assert stats["errors"] == 1 and stats["billed"] == 0
        await client.close()
