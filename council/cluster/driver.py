"""A sharded run on a Ray cluster.

The driver reads the run folder's rows and hands them out in chunks of raw JSON lines to shard workers
(Ray actors spread over the cluster's nodes), at most ``depth`` chunks per worker at once, so its memory is
flat and it does no grading itself; a batch run's workers, which reach the run folder, are handed where their
chunk is and read it themselves. Each worker drives its rows through both rounds with its own judges,
all leasing from the one named quota actor of each vendor (one limit for the whole cluster). Records come
back in batches to one writer actor pinned to this node, which owns the run folder: no shared file system.

Faults: a worker whose process or node dies is restarted by Ray (on another node if its own is gone) and
the chunks it held are sent to it again; a chunk sent again asks only for the votes the archive lacks. A
worker that cannot come back has its chunks handed to the others. A stop (signal, a vendor that cannot be
used) reaches every worker: they issue nothing new, let calls in flight finish, and the run stays resumable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from council.core import logs
from council.core.errors import ConfigError
from council.core.schema import BankItem
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig, Endpoint
from council.store.archive import lines_from
from council.store.files import ROWS

CHUNK_ROWS = 256  # rows per chunk; a small run is cut finer, so that every worker gets a share
MIN_CHUNK_ROWS = 16
SHARD_CPUS = 1.0  # a worker drives its coordinator on one core
PLACEMENT_TIMEOUT_S = 120.0


@dataclass
class ShardedOutcome:
    issued: int = 0
    served_from_archive: int = 0
    abandoned: int = 0
    rows_done: int = 0
    error: str | None = None
    quota_stats: dict[str, dict] | None = None
    workers: list[dict[str, Any]] | None = None  # per worker: node and totals (votes, CPU seconds)
    writer: dict[str, Any] | None = None  # records written, CPU seconds
    placement_s: float = 0.0  # from asking for the actors until every worker was up
    spent_usd: float | None = None  # by the budget's ledger, when the run has a budget
    archived_cost_usd: float = 0.0  # what the archive held when the run started (a resumed run)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Rows handed out together: the location of the first in the run folder's ``rows.jsonl``
    (:func:`council.store.archive.iter_located`) and how many there are."""

    first: int
    count: int


def chunks(located: Iterable[tuple[int, bytes]], size: int = CHUNK_ROWS) -> Iterator[tuple[Chunk, list[bytes]]]:
    """The lines with content of ``located`` ((location, line) pairs) in chunks of ``size``, each with its place."""
    chunk: list[bytes] = []
    first = 0
    for loc, line in located:
        if line.strip():
            if not chunk:
                first = loc
            chunk.append(line)
            if len(chunk) >= size:
                yield Chunk(first, len(chunk)), chunk
                chunk = []
    if chunk:
        yield Chunk(first, len(chunk)), chunk


async def drive_shards(
    folder: Path, located: Iterable[tuple[int, bytes]], config: CouncilConfig, items: list[BankItem],
    endpoints: dict[str, Endpoint], names: list[str], shards: int, stop: StopControl, *, rows: int,
    on_progress: Callable[[int], None] | None = None,
) -> ShardedOutcome:
    """Grade the rows of ``located`` (the run folder's rows, each with its location) with ``shards`` workers. The
    writer indexes what the run folder already holds (a resumed run), and the budget starts from what that cost. A
    chunk is handed out by value, or, in a batch run (whose workers reach the run folder, where they journal their
    batches), by its place in the run folder's rows, which the worker reads: thousands of rows wait on batches, and
    neither this process nor the object store holds them meanwhile. A chunk sent again is read again."""
    import ray
    from ray.exceptions import RayActorError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from council.cluster.actors import BudgetActor, ShardActor, WriterActor
    from council.cluster.quotas import quota_actor

    log = logs.get_logger("council.shards").bind(run_id=folder.name)
    asked = time.monotonic()
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    restart = {"max_restarts": -1, "max_task_retries": -1}
    quotas = quota_actor({v: config.settings(v).limits for v in config.roster_vendors}, scheduling_strategy=here)
    writer = WriterActor.options(num_cpus=0, scheduling_strategy=here, **restart).remote(
        str(folder), config.roster_vendors)
    archived = await writer.archived.remote()
    log.info("shards.archive", votes=archived["votes"], cost_usd=round(archived["cost_usd"], 6))
    budget = (BudgetActor.options(scheduling_strategy=here, **restart).remote(config.budget_usd, archived["cost_usd"])
              if config.budget_usd is not None else None)
    workers = [ShardActor.options(num_cpus=SHARD_CPUS, scheduling_strategy="SPREAD", **restart).remote(
        i, config, items, endpoints, names, writer, budget, stop.grace_s, str(folder)) for i in range(shards)]
    closed = False
    try:
        nodes = await _placed(workers, shards)
        placement_s = time.monotonic() - asked
        log.info("shards.start", shards=shards, nodes=len(set(nodes)), placement_s=round(placement_s, 3))
        size = min(CHUNK_ROWS, max(MIN_CHUNK_ROWS, -(-rows // (shards * 4))))
        depth = max(1, config.in_flight // size)  # a batching vendor's rows wait on batches: many in flight
        rows_path = folder / ROWS

        def start(worker: Any, chunk: Chunk, lines: list[bytes] | None) -> Any:
            if config.batching:
                return worker.grade_at.remote(chunk.first, chunk.count)
            return worker.grade.remote(lines if lines is not None else lines_from(rows_path, chunk.first, chunk.count))

        outcome = await _dispatch(workers, chunks(located, size), depth, stop, on_progress, log, RayActorError, start)
        outcome.placement_s = placement_s
        outcome.archived_cost_usd = archived["cost_usd"]
        totals = await asyncio.gather(*(w.totals.remote() for w in workers), return_exceptions=True)
        outcome.workers = []
        for node, t in zip(nodes, totals, strict=True):
            if isinstance(t, BaseException):
                continue
            outcome.workers.append({"node": node, **t})
            outcome.issued += t["issued"]
            outcome.served_from_archive += t["served_from_archive"]
            outcome.abandoned += t["abandoned"]
            outcome.error = outcome.error or t["error"]
        await asyncio.gather(*(w.flush_quota.remote() for w in workers), return_exceptions=True)  # last reports
        outcome.quota_stats = {v: await quotas.stats.remote(v) for v in config.roster_vendors}
        outcome.writer = await writer.stats.remote()
        await asyncio.gather(*(w.close.remote() for w in workers))  # a worker's last spend reaches the budget
        closed = True
        if budget is not None:
            outcome.spent_usd = await budget.spent.remote()
        return outcome
    finally:
        if not closed:
            await asyncio.gather(*(w.close.remote() for w in workers), return_exceptions=True)
        await asyncio.gather(writer.close.remote(), return_exceptions=True)
        for actor in [*workers, writer, *([budget] if budget is not None else [])]:
            ray.kill(actor, no_restart=True)


async def _placed(workers: list, shards: int) -> list[str]:
    """The node of each worker, once all are placed; a cluster without room for them is an error, not a hang."""
    import ray

    try:
        return await asyncio.wait_for(asyncio.gather(*(w.ready.remote() for w in workers)), PLACEMENT_TIMEOUT_S)
    except TimeoutError:
        free = ray.available_resources().get("CPU", 0.0)
        raise ConfigError(f"{shards} shard workers of {SHARD_CPUS:g} CPU each could not be placed within "
                          f"{PLACEMENT_TIMEOUT_S:.0f} s ({free:g} CPUs free in the cluster): pass fewer --shards or "
                          "add nodes") from None


async def _dispatch(workers: list, source: Iterator[tuple[Chunk, list[bytes]]], depth: int, stop: StopControl,
                    on_progress: Callable[[int], None] | None, log: Any, actor_error: type,
                    grade: Callable[[Any, Chunk, list[bytes] | None], Any]) -> ShardedOutcome:
    """Chunks to workers, at most ``depth`` in progress per worker, the least loaded first; ``grade`` starts a chunk
    on a worker (its lines when they are at hand: None for a chunk sent again, which is read again)."""
    outcome = ShardedOutcome()
    load = [0] * len(workers)
    gone: set[int] = set()
    pending: dict[asyncio.Future, tuple[int, Chunk]] = {}
    retry: list[Chunk] = []

    def stop_workers() -> None:
        for i, w in enumerate(workers):
            if i not in gone:
                w.request_stop.remote(stop.reason, stop.detail)

    stop.on_request(stop_workers)

    def send(i: int, chunk: Chunk, lines: list[bytes] | None) -> None:
        future = asyncio.ensure_future(grade(workers[i], chunk, lines))
        pending[future] = (i, chunk)
        load[i] += 1

    def fill() -> None:
        while not stop.requested:
            live = [i for i in range(len(workers)) if i not in gone and load[i] < depth]
            if not live:
                return
            taken = (retry.pop(), None) if retry else next(source, None)
            if taken is None:
                return
            send(min(live, key=load.__getitem__), *taken)

    fill()
    while pending:
        done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for future in done:
            i, chunk = pending.pop(future)
            load[i] -= 1
            try:
                result = future.result()
            except actor_error as exc:  # the worker is gone for good: its chunk goes to another
                gone.add(i)
                log.warning("shard.lost", shard=i, error=str(exc).splitlines()[0])
                if len(gone) == len(workers):
                    raise
                retry.append(chunk)
                continue
            outcome.rows_done += result["rows"] if not result["stopped"] else 0
            if on_progress is not None and not result["stopped"]:
                on_progress(result["rows"])
            if result["stopped"] and not stop.requested:
                stop.request(result["stopped"], result["detail"])
        fill()
    return outcome
