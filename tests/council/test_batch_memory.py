"""Rows waiting on a batch live on disk, not in memory: what the batch transport holds per row while its votes wait
in open batches, measured at two sizes (tracemalloc's traced bytes, the slope between them).

Each row is a row of the shipped sample, its round-one votes those of the default roster's seats that batch
(anthropic, google, openai, alibaba: four; deepseek has no batch API), submitted as the coordinator submits them;
the provider (a ``council sim`` process, so its memory is not counted) keeps the batches open. The votes' tasks
are made before the measure starts (the coordinator holds them anyway). What is left per vote is its future, its
place in its request (eight rows a request) and the request's custom id in the sender and the journal: about 230
bytes, 0.9 KB a row. Before the batches were written to disk and requests packed, each vote held its request's
messages and its own coroutine, and a batch its input file: about 60 KB a row in a whole run."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import bank
from council.batching.api import OpenAIBatches
from council.batching.journal import Journal
from council.batching.judge import BatchJudge
from council.batching.results import breathing
from council.core.schema import JudgeCallRecord, MemberSpec
from council.core.vendors import DEFAULT_ROSTER
from council.grading.stop import Stopped
from council.protocol.config import BatchSettings, Endpoint, JudgeParams, VendorSettings
from council.protocol.prompts import round1_body
from council.sim import SimConfig
from council.transport.judge import JudgeTask
from council.transport.shape import vote_key
from tests.council._provider import sim_process

PARAMS = JudgeParams()
SEATS = {v: m for v, m in DEFAULT_ROSTER.items() if v != "deepseek"}  # the seats that batch
BOUND = 1024  # bytes a row in flight: the bar


def tasks(n: int) -> list[tuple[str, JudgeTask]]:
    """The round-one votes of ``n`` rows copied from the shipped sample (each copy a distinct response)."""
    items = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
    sample = bank.load_responses(bank.SAMPLE_RESPONSES, list(items.values()))
    out = []
    for k in range(n):
        base = sample[k % len(sample)]
        row = base.model_copy(update={"row_id": f"{base.row_id}#{k}", "response": f"{base.response} [copy {k}]"})
        body = round1_body(items[row.item_id], row)
        out += [(v, JudgeTask(row.row_id, 1, body, request_key=vote_key(m, v, 1, body, PARAMS), item_id=row.item_id))
                for v, m in SEATS.items()]
    return out


async def held_bytes(n: int, url: str, folder) -> int:
    """Traced bytes the batch judges hold once the votes of ``n`` rows all wait in open batches."""
    votes = tasks(n)
    journal = Journal(folder)
    judges = {v: BatchJudge(MemberSpec(vendor=v, judge_model=m), PARAMS, OpenAIBatches(Endpoint(base_url=url), v),
                            journal, settings=VendorSettings(), batch=BatchSettings(flush_s=0.1, poll_s=60.0),
                            prices=(1.0, 1.0)) for v, m in SEATS.items()}
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        futures = [judges[v].submit(t) for v, t in votes]
        while any(not j.sender._open or j.sender._queued or j._waiting for j in judges.values()):
            await asyncio.sleep(0.02)  # bounded by the test's timeout
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert sum(j.stats.votes for j in judges.values()) == len(votes)
    assert not list((folder / "batches").glob("in-*"))  # each batch's file went once it was uploaded
    for j in judges.values():
        j.cancel_queued(Stopped("measured"))
        await j.close()
    await asyncio.gather(*futures, return_exceptions=True)
    journal.close()
    return held


async def test_the_batch_transport_holds_under_a_kilobyte_a_row_in_flight(tmp_path):
    small, large = 500, 1500
    with sim_process(SimConfig(seed=0, batch_completion_s=600.0), tmp_path) as url:
        a = await held_bytes(small, url, tmp_path / "small")
        b = await held_bytes(large, url, tmp_path / "large")
    per_row = (b - a) / (large - small)
    assert 0 < per_row <= BOUND, f"{per_row:.0f} bytes a row in flight (bound {BOUND})"


def records_alive(rows: set[str]) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is JudgeCallRecord and o.row_id in rows)


async def test_answered_votes_are_freed_once_taken_while_the_judges_run_on(tmp_path):
    """Once a batch's votes are answered and their records taken, nothing of the batch judges holds them while the
    judges wait for more work (the cut that sent them kept its requests, and with them every answer of the batch,
    until the next cut: 250 MB for four vendors' batches of 28,800 rows)."""
    votes = tasks(60)
    rows = {t.row_id for _, t in votes}
    with sim_process(SimConfig(seed=0, batch_completion_s=0.5), tmp_path) as url:
        journal = Journal(tmp_path)
        judges = {v: BatchJudge(MemberSpec(vendor=v, judge_model=m), PARAMS, OpenAIBatches(Endpoint(base_url=url), v),
                                journal, settings=VendorSettings(), batch=BatchSettings(flush_s=0.1, poll_s=0.2),
                                prices=(1.0, 1.0)) for v, m in SEATS.items()}
        try:
            records = await asyncio.wait_for(asyncio.gather(*(judges[v].submit(t) for v, t in votes)), 60)
            assert len(records) == len(votes) and records_alive(rows) >= len(votes)
            del records
            await asyncio.sleep(0.3)  # the judges wait for more votes
            gc.collect()
            assert records_alive(rows) == 0
        finally:
            for j in judges.values():
                await j.close()
            journal.close()


async def test_a_batch_read_pauses_for_its_answers_to_be_taken_in():
    """The outcomes of an ended batch are read with a pause every ``every``: a task that takes the answers in runs
    between the steps, so at most ``every`` answers wait for it."""
    taken: list[int] = []
    most_waiting = 0

    async def take_in() -> None:
        while True:
            await asyncio.sleep(0)
            taken.append(len(read))

    read: list[int] = []
    taker = asyncio.create_task(take_in())
    await asyncio.sleep(0)
    async for item in breathing(iter(range(1000)), every=64):
        read.append(item)
        most_waiting = max(most_waiting, len(read) - (taken[-1] if taken else 0))
    taker.cancel()
    assert read == list(range(1000))
    assert most_waiting <= 64
