"""A batch run's rows in flight are parked on disk (:mod:`council.grading.parked`): they grade as the synchronous
path grades them, hold little memory each while their votes wait, and a failed vote fails only its row.

The judges here are a stand-in pool: every vote's future waits until the test answers it, as a vote waits in a
provider's batch, and each answer is a verdict drawn from a hash of (row, member, round), so both paths see the same
answers whatever order they ask in."""

from __future__ import annotations

import asyncio
import gc
import hashlib
from collections.abc import Iterator

import pytest

import bank
from council.core.errors import ProviderUnavailable
from council.cluster.shard import RecordLink, ShardWorker
from council.core.schema import JudgeCallRecord, ResponseRow
from council.grading.coordinator import Coordinator
from council.grading.parked import Scratch
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig
from council.transport.judge import JudgeTask

ITEMS = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
SAMPLE = bank.load_responses(bank.SAMPLE_RESPONSES, list(ITEMS.values()))


def drawn(row_id: str, member: str, round_: int) -> str:
    digest = hashlib.sha256(f"{row_id}|{member}|{round_}".encode()).digest()
    return "correct" if digest[0] % 3 else "incorrect"


class WaitingPool:
    """Holds every vote until :meth:`answer` (or :meth:`fail`) is called; answers as the votes' judges would."""

    def __init__(self, config: CouncilConfig) -> None:
        self.models = {m.vendor: m.judge_model for m in config.roster}
        self.waiting: list[tuple[str, JudgeTask, asyncio.Future[JudgeCallRecord]]] = []
        self.asked: list[tuple[str, str, int]] = []
        self.immediately = False

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        future: asyncio.Future[JudgeCallRecord] = asyncio.get_running_loop().create_future()
        self.asked.append((task.row_id, vendor, task.round))
        self.waiting.append((vendor, task, future))
        if self.immediately:
            asyncio.get_running_loop().call_soon(self.answer)
        return future

    def answer(self) -> None:
        waiting, self.waiting = self.waiting, []
        for vendor, task, future in waiting:
            verdict = drawn(task.row_id, vendor, task.round)
            future.set_result(JudgeCallRecord(
                row_id=task.row_id, round=task.round, member=vendor, judge_model=self.models[vendor], verdict=verdict,
                reason=f"The response is {verdict}.", ok=True, parse_status="ok", judge_prompt_version="judge-v4",
                judge_prompt_hash="-", request_key=task.request_key, request_id=f"{task.row_id}|{vendor}|{task.round}",
                peer_letters=task.peer_letters, cost_usd=0.001))

    def fail(self, exc: BaseException, vendor: str) -> None:
        for v, _, future in self.waiting:
            if v == vendor:
                future.set_exception(exc)
        self.waiting = [w for w in self.waiting if w[0] != vendor]


def copies(n: int, pad: int = 0) -> Iterator[ResponseRow]:
    """``n`` rows copied from the sample with new ids, each response ``pad`` characters longer, made as they are read."""
    for k in range(n):
        base = SAMPLE[k % len(SAMPLE)]
        longer = base.response + " lorem" * (pad // 6)
        yield base.model_copy(update={"row_id": f"{base.row_id}#{k}", "response": longer})


def coordinator(config: CouncilConfig, pool: WaitingPool, tmp_path, graded: dict, **kw) -> Coordinator:  # noqa: ANN001
    def on_graded(row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        graded[row.row_id] = (refused, [(r.member, r.round, r.verdict, r.shadow, tuple(sorted(r.peer_letters.items())))
                                        for r in records])
    return Coordinator(config, ITEMS, pool, lambda record: None, on_row_graded=on_graded,  # type: ignore[arg-type]
                       scratch_dir=tmp_path, **kw)


@pytest.mark.parametrize("deliberate", ["disputed", "all"])
async def test_parked_rows_grade_as_the_synchronous_path_does(tmp_path, deliberate):
    """The same rows and answers give the same records per row, in the same order, on both paths (shadow seats, the
    deliberation audit, round two's anonymised letters and all)."""
    results = {}
    for transport in ("sync", "batch"):
        config = CouncilConfig(transport=transport, deliberate=deliberate, deliberation_audit_stop=0.0,
                               shadow_self=True)
        pool = WaitingPool(config)
        pool.immediately = True
        graded: dict = {}
        await coordinator(config, pool, tmp_path, graded).run(SAMPLE)
        results[transport] = graded, sorted(pool.asked)
    (sync, sync_asked), (parked, parked_asked) = results["sync"], results["batch"]
    assert len(sync) == len(SAMPLE)
    assert parked == sync
    assert parked_asked == sync_asked
    assert any(round_ == 2 for _, records in sync.values() for _, round_, *_ in records)
    assert not list(tmp_path.iterdir())  # the scratch files were unlinked as soon as they were open


async def test_a_failed_vote_fails_its_row_and_a_vendor_that_cannot_be_used_stops_the_run(tmp_path):
    config = CouncilConfig(transport="batch")
    pool = WaitingPool(config)
    graded: dict = {}
    stop = StopControl(grace_s=5.0)
    coord = coordinator(config, pool, tmp_path, graded, stop=stop)
    rows = list(copies(40))
    run = asyncio.create_task(coord.run(rows))
    for _ in range(500):
        await asyncio.sleep(0.01)
        if len(pool.waiting) == 5 * len(rows):
            break
    pool.fail(ProviderUnavailable("openai: account suspended"), "openai")
    while not run.done():
        pool.answer()
        await asyncio.sleep(0.01)
    await run
    assert stop.requested and coord.error is not None and "suspended" in str(coord.error)
    # no row with an openai vote is graded (a resume asks it again); of openai's own rows, where it sits out, those
    # that need no round two are (the stop refuses new calls)
    assert set(graded) and set(graded) <= {r.row_id for r in rows if r.vendor == "openai"}


@pytest.mark.parametrize("stopped", [False, True])
async def test_a_synchronous_vendors_votes_wait_on_disk_for_room_in_its_judge(tmp_path, stopped):
    """In a batch run, the votes of a vendor with no batch API (deepseek) go to its judge a few at a time (twice its
    concurrency times its rows a request); the others wait as tickets, their tasks on disk. Every row is graded as
    before; on a stop the votes still held are never sent, and the run ends."""
    config = CouncilConfig(transport="batch", vendors={"deepseek": {"concurrency": 1, "max_batch": 2}})
    pool = WaitingPool(config)
    out = most = 0

    def answered(_: asyncio.Future) -> None:
        nonlocal out
        out -= 1

    def submit(vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        nonlocal out, most
        future = WaitingPool.submit(pool, vendor, task)
        if vendor == "deepseek":
            out += 1
            most = max(most, out)
            future.add_done_callback(answered)
        return future

    pool.submit = submit  # type: ignore[method-assign]
    graded: dict = {}
    stop = StopControl(grace_s=5.0)
    rows = list(copies(60))
    run = asyncio.create_task(coordinator(config, pool, tmp_path, graded, stop=stop).run(rows))
    for _ in range(500):  # answer whatever waits, a step at a time
        await asyncio.sleep(0.01)
        if stopped and most and not stop.requested:
            stop.request("interrupt")
        pool.answer()
        if run.done():
            break
    await run
    deepseek = sum(r.vendor != "deepseek" for r in rows)  # its seat on every row but its own
    asked = sum(1 for _, vendor, round_ in pool.asked if vendor == "deepseek" and round_ == 1)
    assert most == 2 * 1 * 2
    if stopped:
        assert len(graded) < len(rows) and asked < deepseek
    else:
        assert len(graded) == len(rows) and asked == deepseek


def test_scratch_gives_back_a_file_once_nothing_in_it_is_needed(tmp_path):
    scratch = Scratch(tmp_path, file_bytes=100)
    first = [scratch.put(b"x" * 60) for _ in range(2)]  # the second fills the first file
    later = scratch.put(b"y" * 10)
    assert scratch.files == 2
    assert scratch.get(first[1], 60) == b"x" * 60 and scratch.get(later, 10) == b"y" * 10
    for where in first:
        scratch.release(where)
    assert scratch.files == 1
    scratch.close()


async def test_a_shard_workers_chunks_share_one_parked_rows_and_let_their_rows_go(tmp_path):
    """A sharded batch run's worker grades its chunks at once (as many as its rows in flight allow): they share one
    set of slots and scratch files, not one each, and a chunk's rows are on disk only while their votes wait (its
    lines and rows are let go once taken in). Every row is graded as one run grades it."""
    config = CouncilConfig(transport="batch")
    pool = WaitingPool(config)
    sent: list[JudgeCallRecord] = []

    async def send(records: list[JudgeCallRecord], refusals: list) -> None:
        sent.extend(records)

    async def fetch(row_ids: list[str]) -> tuple[list, list]:
        return [], []

    worker = ShardWorker(config, list(ITEMS.values()), pool, RecordLink(send), fetch, [])
    worker.coordinator._scratch_dir = tmp_path
    rows = list(copies(48))
    chunks = [[r.model_dump_json().encode() for r in rows[k:k + 12]] for k in range(0, len(rows), 12)]
    ids = {r.row_id for r in rows}
    del rows
    grading = asyncio.gather(*(worker.grade(chunk) for chunk in chunks))
    for _ in range(500):
        await asyncio.sleep(0.01)
        if len({row_id for row_id, _, _ in pool.asked}) == len(ids):
            break
    parked = worker.coordinator._parked
    assert parked is not None and parked.in_flight == len(ids)  # one instance holds every chunk's rows
    assert all(chunk == [] for chunk in chunks)
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) is ResponseRow and o.row_id in ids]
    while not grading.done():
        pool.answer()
        await asyncio.sleep(0.01)
    results = await grading
    assert sum(r["rows"] for r in results) == len(ids) and not any(r["stopped"] for r in results)
    await worker.link.flush()
    assert {r.row_id for r in sent} == ids
    assert worker.coordinator._parked is None and not list(tmp_path.iterdir())  # closed once the last chunk ended
