"""A judge pool whose batching vendors (``CouncilConfig.batching``) vote through a :class:`BatchJudge` in this
process, the others through the pool it wraps (local, or Ray actors): a vendor without a batch API stays
synchronous in the same run. Waiting on a batch needs no actor; the few requests sent again as chat calls
(``batch.sync_below``) go through a synchronous judge of this process (``fallbacks``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from council.batching.api import batch_api
from council.batching.journal import Journal, siblings_of
from council.batching.judge import BatchJudge
from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.grading.pools import JudgePool
from council.grading.stop import Stopped
from council.protocol.config import CouncilConfig, Endpoint
from council.transport.judge import Judge, JudgeTask
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import QuotaLedger
from council.transport.tickets import Receiver, send
from council.transport.shape import seat_shape


class BatchingPool:
    def __init__(self, inner: JudgePool, config: CouncilConfig, endpoints: dict[str, Endpoint], folder: Path,
                 fallbacks: dict[str, Judge] | None = None) -> None:
        self.inner = inner
        self.journal = Journal(folder, siblings=siblings_of(folder))  # a sharded run's other journals read too
        self.judges: dict[str, BatchJudge] = {}
        self._own: list[Judge] = []  # synchronous judges made here (none are given: the Ray pool's are actors)
        for member in config.roster:
            vendor = member.vendor
            if config.transport_of(vendor) != "batch":
                continue
            settings = config.settings(vendor)
            fallback = (fallbacks or {}).get(vendor)
            if fallbacks is None:
                fallback = Judge(member, endpoints[vendor], config.judge, seed=config.seed, api=settings.api,
                                 prices=config.rates_for(member.judge_model, vendor),
                                 cache_breakpoints=settings.cache_breakpoints,
                                 limiter=Limiter(LocalLedger(QuotaLedger(settings.limits)), f"batch:{vendor}",
                                                 concurrency=settings.concurrency, seed=config.seed))
                self._own.append(fallback)
            api = batch_api(endpoints[vendor], settings.api, vendor, cache_breakpoints=settings.cache_breakpoints,
                            max_requests=settings.batch_max_requests, seed=config.seed)
            self.judges[vendor] = BatchJudge(
                member, config.judge, api, self.journal, settings=settings, batch=config.batch,
                prices=config.vote_rates(member.judge_model, vendor), fallback=fallback,
                shape=seat_shape(member.judge_model, vendor, config.judge, endpoints[vendor], settings.api))

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        judge = self.judges.get(vendor)
        return judge.submit(task) if judge is not None else self.inner.submit(vendor, task)

    def send(self, vendor: str, task: JudgeTask, ticket: int, receiver: Receiver) -> None:
        """The vote asked by ticket (:mod:`council.transport.tickets`): a batching vendor's judge holds only an
        integer while it waits."""
        judge = self.judges.get(vendor)
        if judge is not None:
            judge.send(task, ticket, receiver)
        else:
            send(self.inner, vendor, task, ticket, receiver)

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]:  # noqa: ANN001 - an ElicitTask
        return self.inner.elicit(vendor, task)

    async def flush_quota(self) -> None:
        await self.inner.flush_quota()

    async def quota_stats(self) -> dict[str, dict]:
        stats = await self.inner.quota_stats()
        for vendor, judge in self.judges.items():
            report = stats.setdefault(vendor, {})
            report["batches"] = vars(judge.stats)
            report["open_batches"] = judge.open_batches()
        return stats

    async def cancel_queued(self) -> int:
        here = sum(judge.cancel_queued(Stopped("run stopping")) for judge in self.judges.values())
        return here + await self.inner.cancel_queued()

    async def close(self) -> None:
        try:
            await asyncio.gather(*(judge.close() for judge in self.judges.values()))
            await asyncio.gather(*(judge.close() for judge in self._own))
            await self.inner.close()
        finally:
            self.journal.close()
