"""The judge pool of ``--backend ray``: judges and elicitors in the Ray actors of :mod:`council.cluster.actors`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.grading.pools import _judge_prices, _model_prices
from council.grading.stop import Stopped
from council.protocol.config import CouncilConfig, Endpoint
from council.transport.dispatch import MicroBatcher
from council.transport.judge import JudgeTask


class RayPool:
    """One async Ray actor per vendor judge and per vendor elicitor; actor calls carry batches."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint], models: Iterable[str] = ()) -> None:
        from council.cluster.actors import ElicitorActor, JudgeActor, quota_actor

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

    async def flush_quota(self) -> None:
        """Every judge and elicitor actor tells its vendor's quota actor what it has not been told yet."""
        await asyncio.gather(*(a.flush_quota.remote() for a in [*self.actors.values(), *self.elicitor_actors.values()]),
                             return_exceptions=True)

    async def quota_stats(self) -> dict[str, dict]:
        """Each vendor's quota actor's report, once every judge and elicitor actor has told it everything."""
        await self.flush_quota()
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
