"""Judge pools: the same plain :class:`Judge` objects, in this process or inside one Ray actor per vendor.

Either way each vendor has exactly one quota ledger: an in-process object for local runs, a named Ray
actor (``quota:<vendor>``) shared by every process of the cluster otherwise.
"""

from __future__ import annotations

from council.config import CouncilConfig, Endpoint
from council.judge import Judge, JudgeTask
from council.limiter import Limiter, LocalLedger
from council.quota import QuotaLedger
from council.schema import JudgeCallRecord


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
                                          max_batch=settings.max_batch, seed=config.seed)

    async def grade(self, vendor: str, tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
        return await self.judges[vendor].grade_batch(tasks)

    async def close(self) -> None:
        for judge in self.judges.values():
            await judge.close()


class RayPool:
    """One async Ray actor per vendor judge; each pool call carries a batch of votes."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint]) -> None:
        from council.actors import JudgeActor, quota_actor

        self.quotas = {m.vendor: quota_actor(m.vendor, config.settings(m.vendor).limits) for m in config.roster}
        self.actors = {
            m.vendor: JudgeActor.options(max_concurrency=4096, num_cpus=0).remote(
                m, endpoints[m.vendor], config.judge, config.settings(m.vendor), config.seed
            )
            for m in config.roster
        }

    async def grade(self, vendor: str, tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
        return await self.actors[vendor].grade_batch.remote(tasks)

    async def close(self) -> None:
        import ray

        for actor in self.actors.values():
            try:
                await actor.close.remote()
            finally:
                ray.kill(actor)
