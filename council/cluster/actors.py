"""Ray actor shells. No logic here: each method forwards to the plain class it wraps."""

from __future__ import annotations

import os
import time
from pathlib import Path

import ray

from council.cluster.quotas import RayLedger
from council.core.schema import BankItem, JudgeCallRecord, MemberSpec
from council.grading.budget import Lease
from council.grading.stop import Stopped
from council.protocol.config import CouncilConfig, Endpoint, JudgeParams, Limits, VendorSettings
from council.transport.judge import Judge, JudgeTask
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import QuotaLedger
from council.transport.shape import RequestShape


def holder_ledger(vendor: str, limits: Limits, *, own: bool) -> LocalLedger | RayLedger:
    """The ledger a judge or elicitor actor leases ``vendor``'s quota from: its own (``own``: it is the vendor's
    only holder), or the vendor's ledger in the quota actor, shared with every other holder."""
    return LocalLedger(QuotaLedger(limits)) if own else RayLedger(vendor, limits)


@ray.remote
class JudgeActor:
    def __init__(self, member: MemberSpec, endpoint: Endpoint, params: JudgeParams, settings: VendorSettings,
                 seed: int, prices: tuple[float, ...], own_ledger: bool = False, shape: RequestShape | None = None) -> None:
        self._ledger = holder_ledger(member.vendor, settings.limits, own=own_ledger)
        limiter = Limiter(self._ledger, f"judge:{member.vendor}:{os.getpid()}", concurrency=settings.concurrency,
                          seed=seed)
        self._judge = Judge(member, endpoint, params, limiter=limiter, max_batch=settings.max_batch, seed=seed,
                            prices=prices, cache_breakpoints=settings.cache_breakpoints, api=settings.api, shape=shape)

    async def grade_batch(self, tasks: list[JudgeTask]) -> list[JudgeCallRecord | BaseException]:
        return await self._judge.grade_batch(tasks)

    def cancel_queued(self) -> int:
        return self._judge.cancel_queued(Stopped("run stopping"))

    async def flush_quota(self) -> None:
        await self._judge.limiter.flush()

    def quota_report(self) -> dict:
        """The report of the vendor's ledger this actor keeps (``own_ledger``), as of its last flush."""
        return self._ledger.ledger.report()

    async def close(self) -> None:
        await self._judge.close()


@ray.remote
class ElicitorActor:
    """A vendor's elicitor; its limiter draws on the vendor's ledger in the quota actor, shared with the vendor's
    judge, or on its own (``own_ledger``) where it is the vendor's only holder."""

    def __init__(self, vendor: str, endpoint: Endpoint, settings: VendorSettings, max_tokens: int,
                 prices: dict[str, tuple[float, ...]], seed: int, own_ledger: bool = False,
                 params: JudgeParams | None = None) -> None:
        from elicitor import Elicitor

        self._ledger = holder_ledger(vendor, settings.limits, own=own_ledger)
        limiter = Limiter(self._ledger, f"elicitor:{vendor}:{os.getpid()}", concurrency=settings.concurrency,
                          seed=seed)
        self._elicitor = Elicitor(endpoint, limiter, vendor=vendor, max_tokens=max_tokens, prices=prices, seed=seed,
                                  api=settings.api, params=params)

    async def elicit_batch(self, tasks: list) -> list:
        return await self._elicitor.elicit_batch(tasks)

    async def flush_quota(self) -> None:
        await self._elicitor.limiter.flush()

    def quota_report(self) -> dict:
        """The report of the vendor's ledger this actor keeps (``own_ledger``), as of its last flush."""
        return self._ledger.ledger.report()

    async def close(self) -> None:
        await self._elicitor.close()


@ray.remote
class ShardActor:
    """A shard worker of a sharded run: its own judges, leasing from the vendors' quota actors; its records go to
    the run's writer actor in batches."""

    def __init__(self, index: int, config: CouncilConfig, items: list[BankItem], endpoints: dict[str, Endpoint],
                 names: list[str], writer, budget, grace_s: float,  # noqa: ANN001 - actor handles
                 run_folder: str | None = None) -> None:
        from council.cluster.shard import RecordLink, ShardWorker, batching_pool
        from council.grading.budget import LeasedBudget
        from council.grading.pools import LocalPool

        holder = f"shard{index}:{os.getpid()}"
        self._run_folder = run_folder

        async def send(records: list, refusals: list) -> None:
            await writer.write.remote(records, refusals)

        async def fetch(row_ids: list[str]) -> tuple:
            return await writer.fetch.remote(row_ids)

        async def lease(want_usd: float, spent_usd: float, reserved_usd: float) -> Lease:
            return await budget.lease.remote(holder, want_usd, spent_usd, reserved_usd)

        pool = LocalPool(config, endpoints, ledger=RayLedger, holder=holder)
        if run_folder is not None:  # its batching vendors through their batch APIs, journalled in the run folder
            pool = batching_pool(pool, config, endpoints, run_folder, index)
        leased = LeasedBudget(config.budget_usd, lease) if budget is not None else None
        self._worker = ShardWorker(config, items, pool, RecordLink(send), fetch, names, grace_s=grace_s, budget=leased)

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def grade(self, lines: list[bytes]) -> dict:
        return await self._worker.grade(lines)

    async def grade_at(self, first: int, count: int) -> dict:
        """The chunk of ``count`` rows from the location ``first`` of the run folder's rows, read here (a batch run's
        workers reach the run folder: the driver hands out where its rows are, not the rows)."""
        from council.store.archive import lines_from
        from council.store.files import ROWS

        assert self._run_folder is not None
        return await self._worker.grade(lines_from(Path(self._run_folder) / ROWS, first, count))

    def request_stop(self, reason: str, detail: str | None) -> None:
        self._worker.request_stop(reason, detail)

    def totals(self) -> dict:
        return {**self._worker.totals(), "pid": os.getpid(), "cpu_s": time.process_time()}

    async def flush_quota(self) -> None:
        await self._worker.pool.flush_quota()

    async def close(self) -> None:
        await self._worker.close()


@ray.remote
class WriterActor:
    """The one writer of a sharded run's folder, on the node that holds it (one call at a time, in order)."""

    def __init__(self, path: str, members: list[str]) -> None:
        from council.cluster.writer import RunWriter

        self._writer = RunWriter(path, members)

    def write(self, records: list[JudgeCallRecord], refusals: list[tuple[str, str]]) -> int:
        return self._writer.write(records, refusals)

    def fetch(self, row_ids: list[str]) -> tuple:
        return self._writer.fetch(row_ids)

    def archived(self) -> dict:
        return self._writer.archived()

    def stats(self) -> dict:
        return {"written": self._writer.written, "pid": os.getpid(), "cpu_s": time.process_time()}

    def close(self) -> None:
        self._writer.close()


@ray.remote(num_cpus=0)
class BudgetActor:
    """The budget of a sharded run, on the head node: shard workers lease allowances from it."""

    def __init__(self, limit_usd: float, spent_usd: float) -> None:
        from council.grading.budget import BudgetLedger

        self._ledger = BudgetLedger(limit_usd, spent_usd)

    def lease(self, holder: str, want_usd: float, spent_usd: float, reserved_usd: float) -> Lease:
        return self._ledger.lease(holder, want_usd, spent_usd, reserved_usd)

    def spent(self) -> float:
        return self._ledger.spent_usd
