"""Judge and elicitor pools: the same plain classes, in this process or inside Ray actors.

Either way each vendor has exactly one quota ledger, which its judge and its elicitor share (one account,
one limit): an in-process object for local runs, a named Ray actor (``quota:<vendor>``) that every process
of the cluster draws on otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol

from council.config import CouncilConfig, Endpoint
from council.dispatch import MicroBatcher
from council.judge import Judge, JudgeTask
from council.limiter import LedgerHandle, Limiter, LocalLedger
from council.quota import QuotaLedger
from council.schema import ElicitedRecord, JudgeCallRecord
from council.stop import Stopped


class JudgePool(Protocol):
    """Where votes are graded and answers elicited. Both return at once with a future of the record."""

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]: ...

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]: ...  # noqa: ANN001 - an ElicitTask

    async def quota_stats(self) -> dict[str, dict]: ...

    async def cancel_queued(self) -> int: ...  # fail votes not yet sent with Stopped; sent ones finish

    async def close(self) -> None: ...


def _judge_prices(config: CouncilConfig, vendor: str) -> tuple[float, float]:
    judge = next(m for m in config.roster if m.vendor == vendor)
    return config.price_for(judge.judge_model, vendor)


def _model_prices(config: CouncilConfig, models: Iterable[str], vendor: str) -> dict[str, tuple[float, float]]:
    return {m: config.price_for(m, vendor) for m in models if config.vendor_of(m) == vendor}


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
        limiters: dict[str, Limiter] = {}
        for v in vendors:
            settings = config.settings(v)
            if ledger is None:
                self.ledgers[v] = QuotaLedger(settings.limits)
            handle = LocalLedger(self.ledgers[v]) if ledger is None else ledger(v)
            limiters[v] = Limiter(handle, f"{holder}:{v}", concurrency=settings.concurrency, seed=config.seed)
        self.judges = {
            m.vendor: Judge(m, endpoints[m.vendor], config.judge, limiter=limiters[m.vendor],
                            max_batch=config.settings(m.vendor).max_batch, seed=config.seed,
                            prices=_judge_prices(config, m.vendor))
            for m in config.roster
        }
        self.elicitors = {
            v: Elicitor(endpoints[v], limiters[v], vendor=v, max_tokens=config.elicit_max_tokens,
                        prices=_model_prices(config, models, v), seed=config.seed)
            for v in dict.fromkeys(config.vendor_of(m) for m in models)
        }

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self.judges[vendor].submit(task)

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]:  # noqa: ANN001
        return asyncio.ensure_future(self.elicitors[vendor].elicit(task))

    async def quota_stats(self) -> dict[str, dict]:
        return {v: ledger.report() for v, ledger in self.ledgers.items()}

    async def cancel_queued(self) -> int:
        return sum(judge.cancel_queued(Stopped("run stopping")) for judge in self.judges.values())

    async def close(self) -> None:
        for worker in [*self.judges.values(), *self.elicitors.values()]:
            await worker.close()


class RayPool:
    """One async Ray actor per vendor judge and per vendor elicitor; actor calls carry batches."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint], models: Iterable[str] = ()) -> None:
        from council.actors import ElicitorActor, JudgeActor, quota_actor

        models = list(models)
        vendors = dict.fromkeys([*config.roster_vendors, *(config.vendor_of(m) for m in models)])
        self.quotas = {v: quota_actor(v, config.settings(v).limits) for v in vendors}
        # A judge or elicitor actor that dies is restarted, and the batches it held are sent to it again
        # (only calls in flight at the crash can be paid twice; their results were never returned).
        options = {"max_concurrency": 4096, "num_cpus": 0, "max_restarts": -1, "max_task_retries": -1}
        self.actors = {
            m.vendor: JudgeActor.options(**options).remote(
                m, endpoints[m.vendor], config.judge, config.settings(m.vendor), config.seed,
                _judge_prices(config, m.vendor))
            for m in config.roster
        }
        self.elicitor_actors = {
            v: ElicitorActor.options(**options).remote(
                v, endpoints[v], config.settings(v), config.elicit_max_tokens, _model_prices(config, models, v),
                config.seed)
            for v in dict.fromkeys(config.vendor_of(m) for m in models)
        }
        self._judge_batchers = {v: self._batcher(a.grade_batch, v) for v, a in self.actors.items()}
        self._elicit_batchers = {v: self._batcher(a.elicit_batch, v) for v, a in self.elicitor_actors.items()}

    @staticmethod
    def _batcher(method, vendor: str) -> MicroBatcher:  # noqa: ANN001 - a Ray actor method
        async def send(items: list) -> list:
            return await method.remote(items)

        return MicroBatcher(send, max_batch=64, linger_s=0.002, name=f"ray-{vendor}")

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self._judge_batchers[vendor].submit(task)

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]:  # noqa: ANN001
        return self._elicit_batchers[vendor].submit(task)

    async def quota_stats(self) -> dict[str, dict]:
        return {v: await actor.stats.remote() for v, actor in self.quotas.items()}

    async def cancel_queued(self) -> int:
        stopped = Stopped("run stopping")
        local = sum(b.cancel_pending(stopped) for b in self._judge_batchers.values())
        return local + sum(await asyncio.gather(*(a.cancel_queued.remote() for a in self.actors.values())))

    async def close(self) -> None:
        import ray

        for batcher in [*self._judge_batchers.values(), *self._elicit_batchers.values()]:
            await batcher.close()
        for actor in [*self.actors.values(), *self.elicitor_actors.values()]:
            try:
                await actor.close.remote()
            finally:
                ray.kill(actor)
