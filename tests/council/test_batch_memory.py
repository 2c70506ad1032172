"""Rows waiting on a batch live on disk, not in memory: what a batch run holds per row while its votes wait in open
batches, measured at two sizes (tracemalloc's traced bytes, the slope between them).

The rows are the shipped sample's, copied with new ids (and their responses made longer, to show that a row's cost
does not depend on its prompts), graded by the coordinator as a batch run grades them: the parked rows
(:mod:`council.grading.parked`) and the batch judges of the default roster's seats that batch (anthropic, google, openai,
alibaba, mistral; deepseek has no batch API and stays synchronous), against the embedded provider in a process of its
own (its memory is not counted), which keeps the batches open. Everything the run holds is counted: the row's slot, its
votes in the judges' queues and requests, the requests in the sender and the journal. Before the rows were parked a row
in flight held about 48 KB in a whole run; with the rows parked and each waiting vote's task, future and record of whom
it is for in memory, 3.5 KB (and the judges alone, tasks not counted, 0.9 KB)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

import bank
from council.batching.api import OpenAIBatches
from council.batching.journal import Journal
from council.batching.judge import BatchJudge
from council.batching.results import breathing
from council.batching.routing import with_batching
from council.core.schema import JudgeCallRecord, MemberSpec, ResponseRow
from council.grading.coordinator import Coordinator
from council.grading.pools import LocalPool
from council.core.vendors import DEFAULT_ROSTER
from council.grading.stop import Stopped
from council.protocol.config import BatchSettings, CouncilConfig, Endpoint, JudgeParams, VendorSettings
from council.protocol.prompts import round1_body
from council.sim import SimConfig
from council.transport.judge import JudgeTask
from council.transport.shape import vote_key
from tests.council._provider import sim_process

PARAMS = JudgeParams()
SEATS = {v: m for v, m in DEFAULT_ROSTER.items() if v != "deepseek"}  # the seats that batch
BOUND = 1024  # bytes a row in flight: the bar
ITEMS = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
SAMPLE = bank.load_responses(bank.SAMPLE_RESPONSES, list(ITEMS.values()))


def tasks(n: int) -> list[tuple[str, JudgeTask]]:
    """The round-one votes of ``n`` rows copied from the shipped sample (each copy a distinct response)."""
    out = []
    for row in copies(n):
        body = round1_body(ITEMS[row.item_id], row)
        out += [(v, JudgeTask(row.row_id, 1, body, request_key=vote_key(m, v, 1, body, PARAMS), item_id=row.item_id))
                for v, m in SEATS.items()]
    return out


def copies(n: int, pad: int = 0) -> Iterator[ResponseRow]:
    """``n`` rows copied from the sample with new ids, each response ``pad`` characters longer, made as they are read."""
    for k in range(n):
        base = SAMPLE[k % len(SAMPLE)]
        response = f"{base.response} [copy {k}]" + " lorem" * (pad // 6)
        yield base.model_copy(update={"row_id": f"{base.row_id}#{k}", "response": response})


async def held_bytes(n: int, url: str, folder: Path, pad: int) -> int:
    """Traced bytes a batch run holds once the round-one votes of ``n`` rows all wait in open batches."""
    folder.mkdir()
    config = CouncilConfig(transport="batch", batch=BatchSettings(flush_s=0.1, poll_s=60.0))
    endpoints = {v: config.endpoint_of(v, url, embedded=True) for v in config.roster_vendors}
    pool = with_batching(LocalPool(config, endpoints), config, endpoints, folder)
    archived: list[str] = []  # the synchronous vendor's votes, answered at once
    coordinator = Coordinator(config, ITEMS, pool, lambda record: archived.append(record.member), scratch_dir=folder)
    judges = pool.judges.values()
    expected = synchronous = 0
    for row in copies(n):
        _, members, shadows, _ = coordinator.panel(row)
        expected += sum(m.vendor in pool.judges for m in [*members, *shadows])
        synchronous += sum(m.vendor not in pool.judges for m in [*members, *shadows])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run = asyncio.create_task(coordinator.run(copies(n, pad)))
        while sum(j.stats.votes for j in judges) < expected or any(j.sender._queued for j in judges):
            assert not run.done(), run.exception()
            await asyncio.sleep(0.02)  # bounded by the test's timeout
        while len(archived) < synchronous or any(  # every request in an open batch
                sum(len(o.entry.keys) for o in j.sender._open.values()) < len(j.sender.waited) for j in judges):
            await asyncio.sleep(0.02)
        del archived[:]
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert not list((folder / "batches").glob("in-*"))  # each batch's file went once it was uploaded
    assert await pool.cancel_queued() >= expected  # the run ends: every row fails, nothing is graded
    await asyncio.wait_for(run, 30)
    await pool.close()
    return held


@pytest.mark.parametrize("pad", [0, 20_000])
async def test_a_row_in_flight_holds_under_a_kilobyte_whatever_its_prompts(tmp_path, pad):
    """With the sample's responses or with responses 20,000 characters longer."""
    small, large = 300, 1200
    with sim_process(SimConfig(seed=0, batch_completion_s=600.0), tmp_path) as url:
        a = await held_bytes(small, url, tmp_path / "small", pad)
        b = await held_bytes(large, url, tmp_path / "large", pad)
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
