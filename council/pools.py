"""Judge pools: the same plain :class:`Judge` objects, in this process or inside one Ray actor per vendor."""

from __future__ import annotations

from council.config import CouncilConfig, Endpoint
from council.judge import Judge, JudgeTask
from council.schema import JudgeCallRecord


class LocalPool:
    """Every vendor's judge in this process and event loop (``--backend local``)."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint]) -> None:
        self.judges = {
            m.vendor: Judge(m, endpoints[m.vendor], config.judge, seed=config.seed) for m in config.roster
        }

    async def grade(self, vendor: str, tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
        return await self.judges[vendor].grade_batch(tasks)

    async def close(self) -> None:
        for judge in self.judges.values():
            await judge.close()


class RayPool:
    """One async Ray actor per vendor judge; each pool call carries a batch of votes."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint]) -> None:
        from council.actors import JudgeActor

        self.actors = {
            m.vendor: JudgeActor.options(max_concurrency=4096, num_cpus=0).remote(
                m, endpoints[m.vendor], config.judge, config.seed
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
