"""Judge pools: the same plain :class:`Judge` objects, in this process or inside one Ray actor per vendor.

Either way each vendor has exactly one quota ledger: an in-process object for local runs, a named Ray
actor (``quota:<vendor>``) shared by every process of the cluster otherwise.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from council.config import CouncilConfig, Endpoint
from council.dispatch import MicroBatcher
from council.judge import Judge, JudgeTask
from council.limiter import Limiter, LocalLedger
from council.quota import QuotaLedger
from council.schema import JudgeCallRecord


class JudgePool(Protocol):
    """Where votes are graded. ``submit`` returns at once; the future resolves with the vote's record."""

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]: ...

    async def close(self) -> None: ...


def _prices(config: CouncilConfig, vendor: str) -> tuple[float, float]:
    s = config.settings(vendor)
    return s.price_in_per_mtok, s.price_out_per_mtok


class LocalPool:
    """Every vendor's judge and quota in this process and event loop (``--backend local``)."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint]) -> None:
        self.ledgers: dict[str, QuotaLedger] = {}
        self.judges: dict[str, Judge] = {}
        for m in config.roster:
            settings = config.settings(m.vendor)
            ledger = self.ledgers[m.vendor] = QuotaLedger(settings.limits)
            limiter = Limiter(LocalLedger(ledger), f"local:{m.vendor}", concurrency=settings.concurrency,
                              seed=config.seed)
            self.judges[m.vendor] = Judge(m, endpoints[m.vendor], config.judge, limiter=limiter,
                                          max_batch=settings.max_batch, seed=config.seed,
                                          prices=_prices(config, m.vendor))

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self.judges[vendor].submit(task)

    async def close(self) -> None:
        for judge in self.judges.values():
            await judge.close()


class RayPool:
    """One async Ray actor per vendor judge; each actor call carries a batch of votes (micro-batching)."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint]) -> None:
        from council.actors import JudgeActor, quota_actor

        self.quotas = {m.vendor: quota_actor(m.vendor, config.settings(m.vendor).limits) for m in config.roster}
        self.actors = {
            m.vendor: JudgeActor.options(max_concurrency=4096, num_cpus=0).remote(
                m, endpoints[m.vendor], config.judge, config.settings(m.vendor), config.seed,
                _prices(config, m.vendor),
            )
            for m in config.roster
        }
        self._batchers = {
            vendor: MicroBatcher(self._sender(actor), max_batch=64, linger_s=0.002, name=f"ray-{vendor}")
            for vendor, actor in self.actors.items()
        }

    @staticmethod
    def _sender(actor):  # noqa: ANN001, ANN205 - a Ray actor handle
        async def send(tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
            return await actor.grade_batch.remote(tasks)

        return send

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self._batchers[vendor].submit(task)

    async def close(self) -> None:
        import ray

        for batcher in self._batchers.values():
            await batcher.close()
        for actor in self.actors.values():
            try:
                await actor.close.remote()
            finally:
                ray.kill(actor)
