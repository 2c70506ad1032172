"""Batch requests pack rows as synchronous requests do: several rows of one round in one request, made by the
synchronous judge's own function (never two answers to one item, at most ``max_batch`` rows), read by the same
parsers; each vote keeps its request key and records its request's rows; a malformed packed answer gets one repair
request; a row the answer leaves out is asked again alone. Against the embedded provider's batch APIs."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from council.batching.api import OpenAIBatches
from council.batching.journal import Journal
from council.batching.judge import BatchJudge
from council.core.schema import BankItem, MemberSpec, ResponseRow
from council.protocol.config import BatchSettings, Endpoint, JudgeParams, VendorSettings
from council.protocol.prompts import request_key, round1_body
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from council.transport.judge import JudgeTask, request_for
from council.transport.shape import seat_shape
from tests.sim.test_sim_batches import QUIET

GPT = "openai/gpt-5"
LLAMA = "meta-llama/llama-3.3-70b-instruct"
FAST = BatchSettings(flush_s=0.02, poll_s=0.1, sync_below=0)
PARAMS = JudgeParams()
MEMBER = MemberSpec(vendor="openai", judge_model=GPT)


def world(items: int, answers: int) -> tuple[TruthTable, list]:
    """``answers`` responses to each of ``items`` items, one vote each (round one), in item order as the
    coordinator sends them."""
    bank = [BankItem(id=f"q{i}", probe="arithmetic", prompt=f"What is {i} + {i}?", reference=str(2 * i),
                     rationale="arithmetic") for i in range(items)]
    rows = [ResponseRow(row_id=f"r{i}-{k}", item_id=it.id, model=LLAMA, response=f"It is {i * 7 % 13 + k}.",
                        gold_verdict="correct" if (i + k) % 2 else "incorrect") for i, it in enumerate(bank)
            for k in range(answers)]
    items_by_id = {it.id: it for it in bank}
    tasks = []
    for row in rows:
        body = round1_body(items_by_id[row.item_id], row)
        tasks.append(JudgeTask(row.row_id, 1, body, request_key=request_key(GPT, 1, body, 0.0, PARAMS.max_tokens),
                               item_id=row.item_id))
    return TruthTable.from_rows(bank, rows), tasks


def judge(server, tmp_path, max_batch: int) -> BatchJudge:
    endpoint = Endpoint(base_url=server.url)
    return BatchJudge(MEMBER, PARAMS, OpenAIBatches(endpoint, "openai"), Journal(tmp_path),
                      settings=VendorSettings(max_batch=max_batch), batch=FAST, prices=(1.0, 2.0, 0.5, 1.0),
                      shape=seat_shape(GPT, "openai", PARAMS, endpoint, "openai"))


def sent_requests(j: BatchJudge) -> list:
    """Every request the judge's batches carried, as written to disk (recorded as they are made)."""
    seen = []
    bodies = j.sender._bodies

    def recording(requests):
        for request in bodies(requests):
            seen.append(request)
            yield request

    j.sender._bodies = recording
    return seen


async def test_requests_pack_rows_by_the_synchronous_judge_s_rule_and_messages(tmp_path) -> None:
    truth, tasks = world(items=7, answers=3)  # 21 votes, three answers to each item
    async with await start_sim(SimConfig(seed=5, batch_completion_s=0.2, default=VendorBehaviour(**QUIET)),
                               truth) as server:
        j = judge(server, tmp_path, max_batch=4)
        sent = sent_requests(j)
        records = await asyncio.gather(*(j.submit(t) for t in tasks))
        await j.close()
        stats = (await server.stats())["models"][GPT]
    by_row = {t.row_id: t for t in tasks}
    assert all(r.verdict and r.parse_status in ("ok", "extracted") for r in records)
    assert [r.request_key for r in records] == [t.request_key for t in tasks]  # each vote its own key
    packs = {r.request_id: r.batch_rows or [r.row_id] for r in records}
    assert sorted(row for rows in packs.values() for row in rows) == sorted(by_row)  # each row in one request
    for rows in packs.values():
        assert len(rows) <= 4 and len({by_row[row].item_id for row in rows}) == len(rows)  # never one item twice
    assert max(map(len, packs.values())) == 4 and len(sent) == len(packs) == stats["batch_billed"]
    for request in sent:  # the messages are the synchronous judge's for these rows, in key order
        rows = next(rows for rows in packs.values() if request.messages == request_for(
            PARAMS, 1, [by_row[row] for row in rows])[0])
        assert request.max_tokens == request_for(PARAMS, 1, [by_row[row] for row in rows])[1]
    # The request's usage is split among its votes, whole: the provider's tokens, every one counted once.
    assert sum(r.usage.prompt_tokens for r in records) == stats["prompt_tokens"]
    assert sum(r.usage.completion_tokens for r in records) == stats["completion_tokens"]
    # Packed requests are cheaper in tokens than one row a request.
    truth, _ = world(items=7, answers=3)
    async with await start_sim(SimConfig(seed=5, batch_completion_s=0.2, default=VendorBehaviour(**QUIET)),
                               truth) as server:
        alone = judge(server, tmp_path / "alone", max_batch=1)
        singles = await asyncio.gather(*(alone.submit(t) for t in tasks))
        await alone.close()
        alone_stats = (await server.stats())["models"][GPT]
    assert [r.verdict for r in singles] == [r.verdict for r in records]  # the provider reads a row alike
    assert alone_stats["batch_billed"] == len(tasks) and stats["prompt_tokens"] < 0.8 * alone_stats["prompt_tokens"]


async def test_a_row_left_out_is_asked_again_alone_and_a_malformed_answer_is_repaired(tmp_path) -> None:
    truth, tasks = world(items=16, answers=1)
    behaviour = VendorBehaviour(**{**QUIET, "batch_drop_rate": 0.15, "malformed_rate": 0.3})
    async with await start_sim(SimConfig(seed=11, batch_completion_s=0.2, default=behaviour), truth) as server:
        j = judge(server, tmp_path, max_batch=8)
        sent = sent_requests(j)
        records = await asyncio.gather(*(j.submit(t) for t in tasks))
        await j.close()
    assert all(r.verdict for r in records)
    alone = [r for r in records if r.batch_size == 1]
    packed = [r for r in records if r.batch_size > 1]
    assert alone and packed  # some rows were left out of their packed answer and asked again alone...
    for record in alone:  # asked with the synchronous judge's one-row request
        task = next(t for t in tasks if t.row_id == record.row_id)
        assert any(q.messages == request_for(PARAMS, 1, [task])[0] for q in sent)
    repaired = [r for r in records if r.parse_status == "repaired"]
    assert any(r.batch_size > 1 for r in repaired)  # ...and a malformed packed answer got one repair request
    for record in repaired:
        assert len(record.raw_outputs) == 2 and record.batch_size == max(1, len(record.batch_rows))
    journal = [json.loads(line) for line in (tmp_path / "batches.jsonl").read_bytes().splitlines()]
    asked = [members for e in journal if e["event"] == "intent" for members in e["packs"].values()]
    assert sum(len(m) for m in asked) > len(tasks)  # rows asked twice: left out, or in a repair


async def test_two_rounds_never_share_a_request_and_a_solo_vote_stays_alone(tmp_path) -> None:
    truth, tasks = world(items=6, answers=1)
    second = [dataclasses.replace(t, round=2, row_id=t.row_id) for t in tasks[:3]]
    solo = dataclasses.replace(tasks[3], solo=True)
    async with await start_sim(SimConfig(seed=2, batch_completion_s=0.2, default=VendorBehaviour(**QUIET)),
                               truth) as server:
        j = judge(server, tmp_path, max_batch=8)
        records = await asyncio.gather(*(j.submit(t) for t in [*tasks[:3], *second, solo, *tasks[4:]]))
        await j.close()
    by = {(r.row_id, r.round): r for r in records}
    assert by[(solo.row_id, 1)].batch_size == 1
    for record in records:
        rounds = {by[(row, record.round)].round for row in record.batch_rows} if record.batch_rows else {record.round}
        assert rounds == {record.round}
    assert {tuple(r.batch_rows) for r in records if r.round == 2} == {("r0-0", "r1-0", "r2-0")}
