"""A shard worker: one coordinator that drives the rows it is handed through both rounds.

Plain Python; the Ray actor in :mod:`council.cluster.actors` is a shell over it. Rows arrive in chunks of raw JSON
lines. Before a chunk is graded, the archived results of its votes are fetched from the run's writer, so a
chunk sent again (its worker died, or the run was resumed) never pays twice for a vote whose record reached
the archive. Records and refusals go to the writer in batches (:class:`RecordLink`).

On the batch transport each worker's batching vendors vote through their batch APIs (:func:`batching_pool`),
the worker's batches journalled in a folder of its own in the run folder (``shards/<i>/``), read by every worker
and by a resume without shards: a vote whose batch another worker (or an earlier process) sent is read from that
batch, never sent again. The journals are files of the run folder, which every node must then reach (a shared
file system, or one node).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from council.core.errors import ConfigError
from council.core.schema import BankItem, JudgeCallRecord, ResponseRow
from council.grading.budget import Budget, LeasedBudget
from council.grading.coordinator import Coordinator, VoteKey
from council.grading.pools import JudgePool
from council.grading.stop import StopControl
from council.transport.dispatch import MicroBatcher

Send = Callable[[list[JudgeCallRecord], list[tuple[str, str]]], Awaitable[None]]
Fetch = Callable[[list[str]], Awaitable[tuple[list[JudgeCallRecord], list[VoteKey]]]]


class RecordLink:
    """Records (and refused rows) on their way to the writer, sent in batches by a :class:`MicroBatcher`: up to
    ``max_batch`` at a time, ``linger_s`` after the first of a batch. :meth:`flush` returns once the writer has
    everything put so far. A record still waiting here when its process dies (for its batch, or for the writer to
    take its batch) was paid for but not archived, and its vote is asked again by the chunk's next worker. The
    wait is ``linger_s`` plus the writer's round trip: on a loaded machine, a few hundred records at a time."""

    def __init__(self, send: Send, *, max_batch: int = 256, linger_s: float = 0.02) -> None:
        async def write(items: list[JudgeCallRecord | tuple[str, str]]) -> list[None]:
            records = [x for x in items if not isinstance(x, tuple)]
            await send(records, [x for x in items if isinstance(x, tuple)])
            self.sent += len(records)
            return [None] * len(items)

        self._batcher: MicroBatcher[JudgeCallRecord | tuple[str, str], None] = MicroBatcher(
            write, max_batch=max_batch, linger_s=linger_s, name="record-link")
        self._waiting: set[asyncio.Future[None]] = set()
        self.sent = 0

    def put(self, record: JudgeCallRecord) -> None:
        self._keep(self._batcher.submit(record))

    def refuse(self, row_id: str, reason: str) -> None:
        self._keep(self._batcher.submit((row_id, reason)))

    def _keep(self, future: asyncio.Future[None]) -> None:
        self._waiting.add(future)
        future.add_done_callback(self._waiting.discard)

    async def flush(self) -> None:
        """Wait for everything put so far to reach the writer; a batch the writer did not take raises."""
        while self._waiting:
            await asyncio.gather(*list(self._waiting))

    async def close(self) -> None:
        await self.flush()
        await self._batcher.close()


class _Known:
    """The archived results of the votes of the chunks in progress (the coordinator's ``archived``)."""

    def __init__(self) -> None:
        self.votes: dict[VoteKey, JudgeCallRecord] = {}

    def get(self, key: VoteKey) -> JudgeCallRecord | None:
        return self.votes.get(key)


class ShardWorker:
    """Grades chunks of rows with one coordinator; several chunks may be in progress at once."""

    def __init__(self, config: Any, items: list[BankItem], pool: JudgePool, link: RecordLink, fetch: Fetch,
                 names: list[str], *, grace_s: float = 6.0, budget: Budget | None = None) -> None:
        self.config = config
        self.pool = pool
        self.link = link
        self._fetch = fetch
        self.stop = StopControl(grace_s)
        self.stop.on_request(lambda: asyncio.ensure_future(pool.cancel_queued()))  # queued votes are never sent
        self._known = _Known()
        self.rows_done = 0
        self.budget = budget
        self.coordinator = Coordinator(
            config, {i.id: i for i in items}, pool, link.put, on_row_done=self._row_done, extra_names=names,
            archived=self._known, budget=budget, stop=self.stop, on_refused=lambda row, reason: link.refuse(row.row_id, reason),
            sequential_audit=False)  # chunks are graded apart, in no one order: the audit takes every candidate

    def _row_done(self, _row: ResponseRow) -> None:
        self.rows_done += 1

    async def grade(self, lines: list[bytes]) -> dict[str, Any]:
        """Grade one chunk (its rows' JSON lines, consumed: the list is emptied, and each row is let go once it is
        taken in, so a row waiting on batches is on disk only); returns how it ended (``stopped`` names the reason when
        this worker is stopping)."""
        context = {"vendor_map": self.config.vendor_map}
        rows = [ResponseRow.model_validate(orjson.loads(line), context=context) for line in lines]
        lines.clear()
        n = len(rows)
        records, audited = await self._fetch([r.row_id for r in rows])
        keys = [(r.row_id, r.member, r.round) for r in records]
        self._known.votes.update(zip(keys, records, strict=True))
        self.coordinator.note_audited(audited)
        try:
            await self.coordinator.run(_taken(rows))
        finally:
            for key in keys:
                self._known.votes.pop(key, None)
            await self.link.flush()
        return {"rows": n, "stopped": self.stop.reason, "detail": self.stop.detail}

    def request_stop(self, reason: str, detail: str | None = None) -> None:
        self.stop.request(reason, detail)

    def totals(self) -> dict[str, Any]:
        c = self.coordinator
        return {"issued": c.issued, "served_from_archive": c.served_from_archive, "abandoned": c.abandoned,
                "rows_done": self.rows_done, "records_sent": self.link.sent,
                "error": str(c.error) if c.error is not None else None}

    async def close(self) -> None:
        await self.link.close()
        await self.pool.close()
        if isinstance(self.budget, LeasedBudget):
            await self.budget.report()


def _taken(items: list[ResponseRow]) -> Iterator[ResponseRow]:
    """Each of ``items`` in order, let go of as it is taken (the list ends empty)."""
    items.reverse()
    while items:
        yield items.pop()


def batching_pool(pool: JudgePool, config: Any, endpoints: dict[str, Any], run_folder: str, index: int) -> JudgePool:
    """Shard worker ``index``'s ``pool``, its batching vendors' votes through their batch APIs, journalled in
    ``<run_folder>/shards/<index>/`` (``pool`` itself when no vendor batches). The run folder must be reachable
    from the worker's node: its journals are what keeps a resumed chunk from paying twice."""
    if not config.batching:
        return pool
    from council.batching.journal import SHARDS
    from council.batching.routing import with_batching

    folder = Path(run_folder)
    if not folder.is_dir():
        raise ConfigError(f"--transport batch with --shards: this node cannot reach the run folder {folder} (the "
                          "workers journal their batches there): use a shared file system or one node")
    own = folder / SHARDS / str(index)
    own.mkdir(parents=True, exist_ok=True)
    return with_batching(pool, config, endpoints, own)
