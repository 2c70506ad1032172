"""Both providers' batch APIs on the embedded provider, through the official ``openai`` and ``anthropic`` SDKs:
the same answers as synchronous calls, results out of request order, the state machines, each fault, the
validation, and billing once per custom id."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import pytest

from council.core.schema import BankItem, ResponseRow
from council.protocol.prompts import round1_messages
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from tests.sim._clients import anthropic_client, openai_client

if TYPE_CHECKING:
    import anthropic
    from openai import AsyncOpenAI

QUIET = {"latency_ms": 0.0, "latency_jitter_ms": 0.0, "malformed_rate": 0.0, "name_drop_rate": 0.0,
         "prose_json_rate": 0.0, "fenced_rate": 0.0}
GPT, CLAUDE = "openai/gpt-5", "claude-sonnet-4-5"  # Anthropic's batches, like its Messages API, want native ids
GPT_CAP = {"max_completion_tokens": 4000}  # what a reasoning model takes: room for its reasoning and the answer
LLAMA = "meta-llama/llama-3.3-70b-instruct"
SPAN = 10.0  # batch_completion_s under the fake clock


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def config(span: float = SPAN, **kw: float) -> SimConfig:
    return SimConfig(seed=5, batch_completion_s=span, default=VendorBehaviour(**{**QUIET, **kw}))


def table(n: int) -> tuple[TruthTable, list[list[dict]]]:
    """A truth table of ``n`` rows and the round-one conversation grading each."""
    items = [BankItem(id=f"q{i}", probe="arithmetic", prompt=f"What is {i} + {i}?", reference=str(2 * i),
                      rationale="arithmetic") for i in range(n)]
    rows = [ResponseRow(item_id=it.id, model=LLAMA, response=f"It is {i * 7 % 13}, reply {i}.",
                        gold_verdict="correct" if i % 2 else "incorrect") for i, it in enumerate(items)]
    return TruthTable.from_rows(items, rows), [round1_messages(i, r) for i, r in zip(items, rows)]


def line(custom_id: str, messages: list[dict], model: str = GPT, **over) -> dict:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": messages, **GPT_CAP}, **over}


def jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def native(messages: list[dict]) -> dict:
    """A chat conversation as Anthropic Messages params."""
    return {"model": CLAUDE, "max_tokens": 300, "system": messages[0]["content"], "messages": messages[1:]}


async def submit(client: AsyncOpenAI, lines: list[dict] | bytes):
    file = await client.files.create(file=("in.jsonl", lines if isinstance(lines, bytes) else jsonl(lines)),
                                     purpose="batch")
    return await client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                       completion_window="24h", metadata={"run": "t"})


async def lines_of(client: AsyncOpenAI, file_id: str | None) -> list[dict]:
    if file_id is None:
        return []
    return [json.loads(x) for x in (await client.files.content(file_id)).text.splitlines()]


def clients(server) -> tuple[AsyncOpenAI, anthropic.AsyncAnthropic]:
    return openai_client(server), anthropic_client(server)


# ---- OpenAI ------------------------------------------------------------------------------------------------


async def test_openai_batch_answers_as_chat_completions_out_of_order_in_real_time() -> None:
    truth, conversations = table(12)
    async with await start_sim(config(span=0.3), truth) as server:
        client, _ = clients(server)
        sync = [(await client.chat.completions.create(model=GPT, messages=m, **GPT_CAP)).choices[0].message.content
                for m in conversations]
        await server.reset()
        batch = await submit(client, [line(f"row-{i}", m) for i, m in enumerate(conversations)])
        assert batch.status == "validating" and batch.metadata == {"run": "t"} and batch.id.startswith("batch_")
        for _ in range(100):  # bounded poll: the batch ends 0.3 s after its creation
            batch = await client.batches.retrieve(batch.id)
            if batch.status == "completed":
                break
            assert batch.status == "in_progress"
            await asyncio.sleep(0.02)
        assert batch.status == "completed" and batch.completed_at is not None and batch.error_file_id is None
        assert (batch.request_counts.completed, batch.request_counts.failed, batch.request_counts.total) == (12, 0, 12)
        out = await lines_of(client, batch.output_file_id)
        order = [x["custom_id"] for x in out]
        assert sorted(order) == sorted(f"row-{i}" for i in range(12)) and order != [f"row-{i}" for i in range(12)]
        for x in out:
            assert x["error"] is None and x["response"]["status_code"] == 200 and x["response"]["request_id"]
            i = int(x["custom_id"].removeprefix("row-"))
            assert x["response"]["body"]["choices"][0]["message"]["content"] == sync[i]
        stats = (await server.stats())["models"][GPT]
        assert stats["requests"] == stats["billed"] == stats["batch_requests"] == stats["batch_billed"] == 12
        assert stats["batch_billed_twice"] == 0 and stats["rate_limited"] == 0
        assert [b.id async for b in client.batches.list(limit=1)] == [batch.id]


async def test_openai_counts_advance_and_each_custom_id_is_billed_once() -> None:
    truth, conversations = table(10)
    clock = FakeClock()
    async with await start_sim(config(), truth, clock=clock) as server:
        client, _ = clients(server)
        lines = [line(f"r{i}", m) for i, m in enumerate(conversations)]
        batch = await submit(client, lines)
        clock.t += SPAN / 2
        half = await client.batches.retrieve(batch.id)
        assert half.status == "in_progress" and half.request_counts.completed == 5
        assert (await server.stats())["models"][GPT]["batch_billed"] == 5  # billed as produced
        clock.t += SPAN / 2
        assert (await client.batches.retrieve(batch.id)).status == "completed"
        await client.batches.retrieve(batch.id)
        assert (await server.stats())["models"][GPT]["batch_billed"] == 10  # looking again bills nothing
        again = await submit(client, lines[:4])  # a client that resubmits rows already billed
        clock.t += SPAN
        assert (await client.batches.retrieve(again.id)).status == "completed"
        stats = (await server.stats())["models"][GPT]
        assert stats["batch_billed"] == 14 and stats["batch_billed_twice"] == 4


async def test_openai_validation_names_the_line() -> None:
    _, conversations = table(2)
    m = conversations[0]
    cases = [
        (jsonl([line("a", m), line("b", m, url="/v1/embeddings")]), "invalid_url", 2),
        (jsonl([line("a", m), line("a", m)]), "duplicate_custom_id", 2),
        (jsonl([line("a", m), line("b", m), line("c", m, model=CLAUDE)]), "mismatched_model", 3),
        (jsonl([line("a", m), line("b", m, method="GET")]), "invalid_method", 2),
        (jsonl([line("a", m), {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": {}}]),
         "missing_required_parameter", 2),
        (jsonl([line("a", m)]) + b"{not json\n", "invalid_json_line", 2),
        (b"".join(b'{"custom_id":"%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}\n' % i
                  for i in range(50_001)), "too_many_requests", None),
    ]
    async with await start_sim(config()) as server:
        client, _ = clients(server)
        for data, code, where in cases:
            batch = await submit(client, data)
            batch = await client.batches.retrieve(batch.id)
            assert batch.status == "failed" and batch.failed_at is not None, code
            assert [(e.code, e.line) for e in batch.errors.data] == [(code, where)] and batch.errors.data[0].message
        assert (await server.stats())["vendors"]["openai"]["requests"] == 0


async def test_openai_expiry_request_errors_and_refusal() -> None:
    truth, conversations = table(8)
    lines = [line(f"r{i}", m) for i, m in enumerate(conversations)]
    clock = FakeClock()
    async with await start_sim(config(batch_expire_rate=1.0, batch_expire_done=0.5), truth, clock=clock) as server:
        client, _ = clients(server)
        batch = await submit(client, lines)
        clock.t += SPAN
        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "expired" and batch.expired_at is not None and batch.request_counts.completed == 4
        done, left = await lines_of(client, batch.output_file_id), await lines_of(client, batch.error_file_id)
        assert len(done) == 4 and {x["error"]["code"] for x in left} == {"batch_expired"} and len(left) == 4
        assert {x["custom_id"] for x in done + left} == {f"r{i}" for i in range(8)}
        assert all(x["response"] is None for x in left)
        assert (await server.stats())["models"][GPT]["batch_billed"] == 4
    async with await start_sim(config(batch_error_rate=1.0), truth, clock=clock) as server:
        client, _ = clients(server)
        batch = await submit(client, lines)
        clock.t += SPAN
        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "completed" and batch.output_file_id is None and batch.request_counts.failed == 8
        failed = await lines_of(client, batch.error_file_id)
        assert {x["response"]["status_code"] for x in failed} == {500}
        assert {x["response"]["body"]["error"]["type"] for x in failed} == {"server_error"}
        stats = (await server.stats())["models"][GPT]
        assert stats["errors"] == stats["requests"] == 8 and stats["billed"] == 0
    async with await start_sim(config(batch_fail_rate=1.0), truth, clock=clock) as server:
        client, _ = clients(server)
        batch = await client.batches.retrieve((await submit(client, lines)).id)
        assert batch.status == "failed" and batch.errors.data[0].code == "server_error"


async def test_openai_cancel_keeps_what_was_done() -> None:
    truth, conversations = table(8)
    clock = FakeClock()
    async with await start_sim(config(), truth, clock=clock) as server:
        client, _ = clients(server)
        batch = await submit(client, [line(f"r{i}", m) for i, m in enumerate(conversations)])
        clock.t += SPAN / 4
        cancelling = await client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        clock.t += SPAN
        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "cancelled" and batch.cancelled_at is not None
        done, left = await lines_of(client, batch.output_file_id), await lines_of(client, batch.error_file_id)
        assert len(done) == 2 and len(left) == 6 and {x["error"]["code"] for x in left} == {"batch_cancelled"}
        assert (await server.stats())["models"][GPT]["billed"] == 2


async def test_openai_queue_limit() -> None:
    truth, conversations = table(4)
    lines = [line(f"r{i}", m) for i, m in enumerate(conversations)]
    tokens = sum(-(-sum(len(x["content"]) for x in m) // 4) for m in conversations)
    clock = FakeClock()
    async with await start_sim(config(batch_queue_tokens=tokens), truth, clock=clock) as server:
        client, _ = clients(server)
        first = await submit(client, lines)
        refused = await client.batches.retrieve((await submit(client, lines)).id)
        assert refused.status == "failed" and refused.errors.data[0].code == "token_limit_exceeded"
        clock.t += SPAN
        assert (await client.batches.retrieve(first.id)).status == "completed"
        later = await submit(client, lines)  # the queue is empty again
        assert (await client.batches.retrieve(later.id)).status == "in_progress"


# ---- Anthropic ---------------------------------------------------------------------------------------------


async def test_anthropic_batch_answers_as_messages_out_of_order() -> None:
    truth, conversations = table(10)
    clock = FakeClock()
    async with await start_sim(config(), truth, clock=clock) as server:
        _, client = clients(server)
        sync = [(await client.messages.create(**native(m))).content[0].text for m in conversations]
        await server.reset()
        requests = [{"custom_id": f"row_{i}", "params": native(m)} for i, m in enumerate(conversations)]
        requests.append({"custom_id": "bad", "params": {**native(conversations[0]), "max_tokens": 0}})
        batch = await client.messages.batches.create(requests=requests)
        assert batch.type == "message_batch" and batch.id.startswith("msgbatch_") and batch.results_url is None
        clock.t += SPAN / 2
        half = await client.messages.batches.retrieve(batch.id)
        assert half.processing_status == "in_progress" and half.request_counts.processing == 11
        assert (await server.stats())["models"][CLAUDE]["batch_billed"] > 0  # billed as produced
        clock.t += SPAN / 2
        batch = await client.messages.batches.retrieve(batch.id)
        assert batch.processing_status == "ended" and batch.ended_at is not None and batch.results_url
        counts = batch.request_counts
        assert (counts.succeeded, counts.errored, counts.processing) == (10, 1, 0)
        results = [r async for r in await client.messages.batches.results(batch.id)]
        order = [r.custom_id for r in results]
        assert sorted(order) == sorted(x["custom_id"] for x in requests) and order != [x["custom_id"] for x in requests]
        for r in results:
            if r.custom_id == "bad":
                assert r.result.type == "errored" and r.result.error.error.type == "invalid_request_error"
            else:
                assert r.result.type == "succeeded"
                assert r.result.message.content[0].text == sync[int(r.custom_id.removeprefix("row_"))]
        stats = (await server.stats())["models"][CLAUDE]
        assert stats["batch_billed"] == stats["billed"] == 10 and stats["batch_billed_twice"] == 0
        assert [b.id async for b in client.messages.batches.list()] == [batch.id]


async def test_anthropic_cancel_expiry_errors_and_refusals() -> None:
    import anthropic

    truth, conversations = table(8)
    requests = [{"custom_id": f"r{i}", "params": native(m)} for i, m in enumerate(conversations)]
    clock = FakeClock()

    async def ended(client, batch_id: str) -> dict[str, str]:
        clock.t += SPAN
        batch = await client.messages.batches.retrieve(batch_id)
        assert batch.processing_status == "ended"
        return {r.custom_id: r.result.type async for r in await client.messages.batches.results(batch_id)}

    async with await start_sim(config(batch_queue_tokens=10**6), truth, clock=clock) as server:
        _, client = clients(server)
        batch = await client.messages.batches.create(requests=requests)
        clock.t += SPAN / 2
        canceling = await client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
        kinds = await ended(client, batch.id)
        assert sorted(kinds.values()) == ["canceled"] * 4 + ["succeeded"] * 4
        for bad in ([{"custom_id": "has space", "params": native(conversations[0])}],
                    [{"custom_id": "x", "params": native(conversations[0])}] * 2, []):
            with pytest.raises(anthropic.BadRequestError):
                await client.messages.batches.create(requests=bad)
    async with await start_sim(config(batch_expire_rate=1.0, batch_expire_done=0.25), truth, clock=clock) as server:
        _, client = clients(server)
        kinds = await ended(client, (await client.messages.batches.create(requests=requests)).id)
        assert sorted(kinds.values()) == ["expired"] * 6 + ["succeeded"] * 2
    async with await start_sim(config(batch_error_rate=1.0), truth, clock=clock) as server:
        _, client = clients(server)
        kinds = await ended(client, (await client.messages.batches.create(requests=requests)).id)
        assert set(kinds.values()) == {"errored"} and (await server.stats())["models"][CLAUDE]["billed"] == 0
    async with await start_sim(config(batch_fail_rate=1.0), truth, clock=clock) as server:
        _, client = clients(server)
        batch_id = (await client.messages.batches.create(requests=requests)).id
        clock.t += SPAN
        errors = {r.result.error.error.type async for r in await client.messages.batches.results(batch_id)}
        assert errors == {"api_error"} and (await server.stats())["models"][CLAUDE]["billed"] == 0
    async with await start_sim(config(batch_queue_tokens=50), truth, clock=clock) as server:
        _, client = clients(server)
        with pytest.raises(anthropic.RateLimitError) as full:
            await client.messages.batches.create(requests=requests)
        assert full.value.body["error"]["type"] == "rate_limit_error"
