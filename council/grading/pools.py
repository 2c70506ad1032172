"""Judge and elicitor pools: the same plain classes, in this process or inside Ray actors.

Either way each vendor has exactly one quota ledger, which its judge and its elicitor share (one account,
one limit): an in-process object for local runs, a ledger in the named Ray actor ``quotas`` that every
process of the cluster draws on otherwise. The pool of Ray actors is :class:`council.cluster.raypool.RayPool`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol

from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.grading.stop import Stopped
from council.protocol.config import CouncilConfig, Endpoint
from council.transport.judge import Judge, JudgeTask
from council.transport.limiter import LedgerHandle, Limiter, LocalLedger
from council.transport.quota import QuotaLedger


class JudgePool(Protocol):
    """Where votes are graded and answers elicited. Both return at once with a future of the record."""

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]: ...

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]: ...  # noqa: ANN001 - an ElicitTask

    async def flush_quota(self) -> None: ...  # tell the quota ledgers what they have not been told yet

    async def quota_stats(self) -> dict[str, dict]: ...  # each vendor's ledger report, after a flush

    async def cancel_queued(self) -> int: ...  # fail votes not yet sent with Stopped; sent ones finish

    async def close(self) -> None: ...


def _judge_prices(config: CouncilConfig, vendor: str) -> tuple[float, ...]:
    judge = next(m for m in config.roster if m.vendor == vendor)
    return config.rates_for(judge.judge_model, vendor)


def _model_prices(config: CouncilConfig, models: Iterable[str], vendor: str) -> dict[str, tuple[float, ...]]:
    return {m: config.rates_for(m, vendor) for m in models if config.vendor_of(m) == vendor}


class LocalPool:
    """Every vendor's judge and elicitor in this process and event loop (``--backend local``, and each shard
    worker of a sharded run). Quotas are in-process ledgers, or whatever ``ledger`` hands out for a vendor
    (the cluster-wide quota actors, for a shard worker); ``holder`` names this process to them."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint], models: Iterable[str] = (), *,
                 ledger: Callable[[str], LedgerHandle] | None = None, holder: str = "local") -> None:
        from elicitor import Elicitor

        models = list(models)
        vendors = dict.fromkeys([*config.roster_vendors, *(config.vendor_of(m) for m in models)])
        self.ledgers: dict[str, QuotaLedger] = {}
        self.limiters: dict[str, Limiter] = {}
        limiters = self.limiters
        settings = {v: config.settings(v) for v in vendors}
        for v in vendors:
            if ledger is None:
                self.ledgers[v] = QuotaLedger(settings[v].limits)
            handle = LocalLedger(self.ledgers[v]) if ledger is None else ledger(v)
            limiters[v] = Limiter(handle, f"{holder}:{v}", concurrency=settings[v].concurrency, seed=config.seed)
        self.judges = {
            m.vendor: Judge(m, endpoints[m.vendor], config.judge, limiter=limiters[m.vendor],
                            max_batch=settings[m.vendor].max_batch, seed=config.seed,
                            prices=_judge_prices(config, m.vendor), cache_breakpoints=settings[m.vendor].cache_breakpoints,
                            api=settings[m.vendor].api)
            for m in config.roster
        }
        self.elicitors = {
            v: Elicitor(endpoints[v], limiters[v], vendor=v, max_tokens=config.elicit_max_tokens,
                        prices=_model_prices(config, models, v), seed=config.seed, api=settings[v].api,
                        params=config.judge)
            for v in dict.fromkeys(config.vendor_of(m) for m in models)
        }

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self.judges[vendor].submit(task)

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]:  # noqa: ANN001
        return asyncio.ensure_future(self.elicitors[vendor].elicit(task))

    async def flush_quota(self) -> None:
        """Tell each vendor's ledger what this pool's limiters have not reported yet (requests sent, 429s)."""
        await asyncio.gather(*(limiter.flush() for limiter in self.limiters.values()))

    async def quota_stats(self) -> dict[str, dict]:
        """Each vendor's ledger report (:meth:`QuotaLedger.report`), once this pool has told it everything; empty
        for ledgers this pool does not own (``ledger`` given)."""
        await self.flush_quota()
        return {v: ledger.report() for v, ledger in self.ledgers.items()}

    async def cancel_queued(self) -> int:
        return sum(judge.cancel_queued(Stopped("run stopping")) for judge in self.judges.values())

    async def close(self) -> None:
        for worker in [*self.judges.values(), *self.elicitors.values()]:
            await worker.close()
