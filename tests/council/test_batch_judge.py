"""The batch judge against the embedded provider's batch APIs, without a run around it: what the official SDKs
create the council's batch client reads alike; a judge on a journal whose batches ended reads their results
again instead of sending; two votes with one prompt share one request and its usage; a batch that fails
validation stops the vendor with the provider's reasons; a stop fails every waiting vote at once, and the next
judge on the journal polls the batch it left. Requests pack rows as the synchronous judge's do (see
test_batch_packing.py); ``max_batch=1`` asks each vote alone."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from aiohttp import web

from council.batching.api import AnthropicBatches, OpenAIBatches, Packed
from council.batching.journal import Journal
from council.batching.judge import BatchJudge
from council.core.errors import ProviderUnavailable
from council.core.schema import BankItem, MemberSpec, ResponseRow
from council.grading.stop import Stopped
from council.protocol.config import BatchSettings, Endpoint, JudgeParams, VendorSettings
from council.protocol.prompts import request_key, round1_body
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from council.transport.judge import JudgeTask, one_request
from council.transport.shape import seat_shape
from council.transport.wire import Reply
from tests.council._loopback import serving
from tests.sim.test_sim_batches import QUIET, clients, line, native, submit

GPT, CLAUDE = "openai/gpt-5", "anthropic/claude-sonnet-4.5"
LLAMA = "meta-llama/llama-3.3-70b-instruct"
FAST = BatchSettings(flush_s=0.02, poll_s=0.1, sync_below=0)
PARAMS = JudgeParams()


def world(n: int) -> tuple[TruthTable, list[JudgeTask]]:
    items = [BankItem(id=f"q{i}", probe="arithmetic", prompt=f"What is {i} + {i}?", reference=str(2 * i),
                      rationale="arithmetic") for i in range(n)]
    rows = [ResponseRow(row_id=f"r{i}", item_id=it.id, model=LLAMA, response=f"It is {i * 7 % 13}, reply {i}.",
                        gold_verdict="correct" if i % 2 else "incorrect") for i, it in enumerate(items)]
    tasks = []
    for item, row in zip(items, rows):
        body = round1_body(item, row)
        tasks.append(JudgeTask(row.row_id, 1, body, request_key=request_key(GPT, 1, body, 0.0, PARAMS.max_tokens),
                               item_id=item.id))
    return TruthTable.from_rows(items, rows), tasks


def sim(span: float = 0.2) -> SimConfig:
    return SimConfig(seed=3, batch_completion_s=span, default=VendorBehaviour(**QUIET))


def judge(server, journal: Journal, api: str = "openai", max_batch: int = 8) -> BatchJudge:
    """GPT-5's judge on OpenAI's batches, Claude's on Anthropic's (which take only Claude's own ids), each request
    fitted to its model as the run's pool fits it (council.transport.shape)."""
    endpoint = Endpoint(base_url=server.url)
    cls = AnthropicBatches if api == "anthropic" else OpenAIBatches
    member = MemberSpec(vendor="anthropic", judge_model=CLAUDE) if api == "anthropic" else MemberSpec(
        vendor="openai", judge_model=GPT)
    return BatchJudge(member, PARAMS, cls(endpoint, member.vendor), journal,
                      settings=VendorSettings(api=api, max_batch=max_batch), batch=FAST, prices=(1.0, 2.0, 0.5, 1.0),
                      shape=seat_shape(member.judge_model, member.vendor, PARAMS, endpoint, api))


def journal_votes(folder) -> dict[str, set[str]]:
    """Each local batch's votes (request keys), from the journal's packs."""
    out: dict[str, set[str]] = {}
    for raw in (folder / "batches.jsonl").read_bytes().splitlines():
        event = json.loads(raw)
        if event["event"] == "intent":
            out[event["local"]] = {key for members in event["packs"].values() for key, _ in members}
    return out


async def test_the_council_reads_the_batches_the_official_sdks_create() -> None:
    _, tasks = world(6)
    conversations = [one_request(PARAMS, t)[0] for t in tasks]
    async with await start_sim(sim(), world(6)[0]) as server:
        openai_sdk, anthropic_sdk = clients(server)
        endpoint = Endpoint(base_url=server.url)
        ours_openai, ours_anthropic = OpenAIBatches(endpoint, "openai"), AnthropicBatches(endpoint, "anthropic")
        created = await submit(openai_sdk, [line(f"r{i}", m) for i, m in enumerate(conversations)])
        message_batch = await anthropic_sdk.messages.batches.create(
            requests=[{"custom_id": f"r{i}", "params": native(m)} for i, m in enumerate(conversations)])
        await asyncio.sleep(0.3)
        theirs = await openai_sdk.batches.retrieve(created.id)
        polled = await ours_openai.poll(created.id)
        assert (polled.status, polled.ended, polled.counts["total"], polled.output_file_id) == (
            theirs.status, True, theirs.request_counts.total, theirs.output_file_id)
        outcomes = await ours_openai.results(created.id, polled)
        text = (await openai_sdk.files.content(theirs.output_file_id)).text.splitlines()
        assert len(text) == len(outcomes) == 6
        for raw in text:
            sdk_line = json.loads(raw)
            reply = outcomes[sdk_line["custom_id"]]
            assert isinstance(reply, Reply)
            assert reply.content == sdk_line["response"]["body"]["choices"][0]["message"]["content"]
            assert reply.usage.prompt_tokens == sdk_line["response"]["body"]["usage"]["prompt_tokens"]
        polled = await ours_anthropic.poll(message_batch.id)
        assert polled.ended and polled.counts == {"total": 6, "succeeded": 6, "errored": 0, "canceled": 0,
                                                  "expired": 0}
        outcomes = await ours_anthropic.results(message_batch.id, polled)
        async for result in await anthropic_sdk.messages.batches.results(message_batch.id):
            assert outcomes[result.custom_id].content == result.result.message.content[0].text
        assert await ours_openai.find("nobody's", 0.0, 6) is None  # our metadata key is not the SDK batch's
        await ours_openai.close()
        await ours_anthropic.close()


async def test_a_judge_on_a_journal_whose_batch_ended_reads_it_again_and_sends_nothing(tmp_path) -> None:
    truth, tasks = world(8)
    async with await start_sim(sim(), truth) as server:
        first = judge(server, Journal(tmp_path))
        records = await asyncio.gather(*(first.submit(t) for t in tasks))
        await first.close()
        assert {r.batch_id for r in records} and all(r.verdict for r in records)
        billed = (await server.stats())["models"][GPT]["batch_billed"]
        # A process killed after the batch ended, before its votes were archived: the next one asks again.
        again = judge(server, Journal(tmp_path))
        records_again = await asyncio.gather(*(again.submit(t) for t in tasks))
        await again.close()
        assert again.stats.batches == 0 and again.stats.read_again == len(tasks)
        assert (await server.stats())["models"][GPT]["batch_billed"] == billed
        for a, b in zip(records, records_again):
            assert (a.verdict, a.reason, a.batch_id, a.usage, a.cost_usd) == (b.verdict, b.reason, b.batch_id,
                                                                             b.usage, b.cost_usd)
            assert a.cost_usd == pytest.approx((a.usage.prompt_tokens * 1.0 + a.usage.completion_tokens * 2.0) / 1e6)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_two_votes_with_one_prompt_share_one_request_and_split_its_usage(tmp_path, api) -> None:
    truth, tasks = world(2)
    twin = dataclasses.replace(tasks[0], row_id="r0-twin")  # the same prompt for another row
    async with await start_sim(sim(), truth) as server:
        j = judge(server, Journal(tmp_path), api)
        a, b, c = await asyncio.gather(j.submit(tasks[0]), j.submit(twin), j.submit(tasks[1]))
        await j.close()
        stats = (await server.stats())["models"][j.shape.model]
    # One request packs r0 and r1; the twin shares r0's place in it: three votes split its usage.
    assert stats["batch_billed"] == 1 and j.stats.shared == 1 and j.stats.votes == 2
    assert (a.verdict, a.reason, a.batch_id, a.request_id) == (b.verdict, b.reason, b.batch_id, b.request_id)
    assert a.row_id != b.row_id and a.batch_rows == b.batch_rows == c.batch_rows == ["r0", "r1"]
    assert a.usage.prompt_tokens + b.usage.prompt_tokens + c.usage.prompt_tokens == stats["prompt_tokens"]
    assert max(r.usage.prompt_tokens for r in (a, b, c)) - min(r.usage.prompt_tokens for r in (a, b, c)) <= 1


async def test_a_batch_that_fails_validation_stops_the_vendor_with_the_provider_s_reasons(tmp_path) -> None:
    truth, tasks = world(3)
    async with await start_sim(sim(), truth) as server:
        j = judge(server, Journal(tmp_path), max_batch=1)
        real_spool = j.sender.api.spool

        def broken(requests, folder) -> list[Packed]:  # a file whose second line says GET
            (packed,) = real_spool(requests, folder)
            lines = packed.path.read_bytes().splitlines(keepends=True)
            lines[1] = lines[1].replace(b'"method":"POST"', b'"method":"GET"')
            packed.path.write_bytes(b"".join(lines))
            return [packed]

        j.sender.api.spool = broken
        results = await asyncio.gather(*(j.submit(t) for t in tasks), return_exceptions=True)
        await j.close()
    assert all(isinstance(r, ProviderUnavailable) for r in results), results
    assert "failed validation" in str(results[0]) and "The method must be POST. (line 2)" in str(results[0])


async def test_a_stop_fails_every_waiting_vote_at_once_and_the_next_judge_polls_the_open_batch(tmp_path) -> None:
    truth, tasks = world(6)
    async with await start_sim(sim(span=0.5), truth) as server:
        j = judge(server, Journal(tmp_path))
        sent = [j.submit(t) for t in tasks[:3]]
        while j.stats.batches == 0:  # bounded by the test's timeout
            await asyncio.sleep(0.01)
        queued = [j.submit(t) for t in tasks[3:]]
        await asyncio.sleep(0)
        assert j.cancel_queued(Stopped("stop")) == 6
        done = await asyncio.gather(*sent, *queued, return_exceptions=True)
        await j.close()
        assert all(isinstance(r, Stopped) for r in done)
        (held,) = [e for e in Journal(tmp_path).entries.values() if e.batch_id]
        assert held.ended_at is None and journal_votes(tmp_path)[held.local] == {t.request_key for t in tasks[:3]}
        again = judge(server, Journal(tmp_path))  # the resume: the open batch is polled, the rest sent
        records = await asyncio.gather(*(again.submit(t) for t in tasks))
        await again.close()
        stats = (await server.stats())["models"][GPT]
    # The three held votes were one packed request; the resume reads them from it and packs the other three.
    assert again.stats.batches == 1 and again.stats.requests == 1 and again.stats.read_again == 3
    assert [r.batch_id for r in records[:3]] == [held.batch_id] * 3 and records[3].batch_id != held.batch_id
    assert [r.batch_rows for r in records] == [["r0", "r1", "r2"]] * 3 + [["r3", "r4", "r5"]] * 3
    assert stats["batch_billed"] == 2 and stats["batch_billed_twice"] == 0


async def test_a_provider_without_a_batch_api_stops_the_vendor_with_a_clear_error(tmp_path) -> None:
    _, tasks = world(2)

    async def chat_only(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "Not found", "code": None}}, status=404)

    async with serving("/v1/chat/completions", chat_only) as url:  # /v1/files is not served: aiohttp's 404
        member = MemberSpec(vendor="openai", judge_model=GPT)
        j = BatchJudge(member, PARAMS, OpenAIBatches(Endpoint(base_url=url), "openai"), Journal(tmp_path),
                       settings=VendorSettings(), batch=FAST, prices=(0.0, 0.0))
        results = await asyncio.gather(*(j.submit(t) for t in tasks), return_exceptions=True)
        await j.close()
    assert all(isinstance(r, ProviderUnavailable) for r in results), results
    assert "does this provider serve a batch API?" in str(results[0]) and "404" in str(results[0])
    assert all(e.gone for e in Journal(tmp_path).entries.values())  # announced, never made


async def test_a_repair_is_a_new_request_whose_sends_are_its_own(tmp_path) -> None:
    """A request lost in two batches and then answered unparseably gets a repair request; the repair starts its own
    count of sends, so one lost batch sends it again (or as a chat call) instead of handing its votes back as errors,
    as a request sent three times is."""
    from council.batching.judge import REPAIR
    from council.batching.sender import MAX_SENDS
    from council.core.schema import Usage

    truth, tasks = world(1)
    async with await start_sim(sim(), truth) as server:
        j = judge(server, Journal(tmp_path))
        added = []
        j.sender.add = added.append  # the requests the judge makes, held here instead of sent
        j.sender.wake = lambda: None
        vote = j.submit(tasks[0])
        (first,) = j._take(8)  # the request the sender would put in a batch
        first.sends = MAX_SENDS - 1  # lost in two batches before this answer came
        first.done(Reply("no vote in this answer", "stop", Usage(prompt_tokens=10, completion_tokens=5)), "batch_x")
        (repair,) = added
        assert repair.custom_id.endswith(REPAIR)
        assert repair.sends == 0 and not vote.done()
        vote.cancel()
        await j.close()
