"""The judge pool of ``--backend ray``: judges and elicitors in the Ray actors of :mod:`council.cluster.actors`."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable

from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.grading.pools import _judge_prices, _model_prices
from council.grading.stop import StopControl, Stopped
from council.protocol.config import CouncilConfig, Endpoint
from council.transport.dispatch import MicroBatcher
from council.transport.judge import JudgeTask
from council.transport.quota import QuotaLedger
from council.transport.shape import seat_shape

# How long a vendor's batcher waits for more votes before it calls the actor. A Ray call costs about a
# millisecond of a core at each end, and votes come free a few at a time as the provider answers. On the
# shipped sample, 2 ms gave each judge about 200 calls of 5 votes, and 50 ms 31 calls of 32. In alternated
# runs of the sample with Ray, 20 ms used 7% less CPU than 2 ms and 50 ms 9% less than 20 ms (so about 13-16%
# less than 2 ms, pieced together from the two pairs, not measured side by side); 150 ms gained nothing more.
# A batch waits a twentieth of a second at most: less than a real provider takes to answer one vote.
LINGER_S = 0.05


class RayPool:
    """One async Ray actor per vendor judge and per vendor elicitor; actor calls carry batches.

    Each vendor's quota is one ledger: in the quota actor, shared by every holder on the Ray instance, or, with
    ``sole`` (this run is the only one drawing on the instance's quotas: the command line's run on the private
    instance it started), in the vendor's one actor here when it has one (a judge or an elicitor, not both).
    Either ledger starts afresh when its actor is restarted after a crash: the report then counts what was sent
    since.

    Nothing here waits for an actor to start: the pool is built at once, and each vendor's batches go out once
    its actor is up. A stop requested while an actor is still starting fails the batches waiting for it with
    :class:`Stopped` (nothing of them was sent to a provider), so stopping never waits for a process to start."""

    def __init__(self, config: CouncilConfig, endpoints: dict[str, Endpoint], models: Iterable[str] = (), *,
                 stop: StopControl | None = None, sole: bool = False) -> None:
        from council.cluster.actors import ElicitorActor, JudgeActor
        from council.cluster.quotas import quota_actor

        models = list(models)
        self._stop = stop or StopControl()
        self.vendors = list(dict.fromkeys([*config.roster_vendors, *(config.vendor_of(m) for m in models)]))
        judged = [m for m in config.roster if config.transport_of(m.vendor) != "batch"]  # those vote from the driver
        elicited = list(dict.fromkeys(config.vendor_of(m) for m in models))
        holders = Counter([*(m.vendor for m in judged), *elicited])  # a vendor's judge actor and elicitor actor
        own = {v for v, n in holders.items() if n == 1} if sole else set()
        self._shared = [v for v, n in holders.items() if n > 1] if sole else self.vendors
        self._limits = {v: config.settings(v).limits for v in self.vendors}
        self.quotas = quota_actor({v: self._limits[v] for v in self._shared}) if self._shared else None
        # A judge or elicitor actor that dies is restarted, and the batches it held are sent to it again
        # (only calls in flight at the crash can be paid twice; their results were never returned).
        options = {"max_concurrency": 4096, "num_cpus": 0, "max_restarts": -1, "max_task_retries": -1}
        self.actors = {
            m.vendor: JudgeActor.options(**options).remote(
                m, endpoints[m.vendor], config.judge, config.settings(m.vendor), config.seed,
                _judge_prices(config, m.vendor), m.vendor in own,
                seat_shape(m.judge_model, m.vendor, config.judge, endpoints[m.vendor], config.settings(m.vendor).api))
            for m in judged
        }
        self.elicitor_actors = {
            v: ElicitorActor.options(**options).remote(
                v, endpoints[v], config.settings(v), config.elicit_max_tokens, _model_prices(config, models, v),
                config.seed, v in own, config.judge)
            for v in elicited
        }
        # the actor that keeps each such vendor's ledger
        self._keepers = {v: a for v, a in [*self.actors.items(), *self.elicitor_actors.items()] if v in own}
        self._ready = {a: asyncio.ensure_future(_up(a)) for a in [*self.actors.values(), *self.elicitor_actors.values()]}
        self.started = asyncio.gather(*self._ready.values())  # every actor up
        self._cancelling: list[asyncio.Future] = []  # the actors' cancel_queued calls, awaited by close()
        self._judge_batchers = {v: self._batcher(a, a.grade_batch, v) for v, a in self.actors.items()}
        self._elicit_batchers = {v: self._batcher(a, a.elicit_batch, v) for v, a in self.elicitor_actors.items()}

    def _batcher(self, actor, method, vendor: str) -> MicroBatcher:  # noqa: ANN001 - a Ray actor and its method
        ready, stop = self._ready[actor], self._stop

        async def send(items: list) -> list:
            await _until_up(ready, stop)
            return await method.remote(items)

        return MicroBatcher(send, max_batch=64, linger_s=LINGER_S, name=f"ray-{vendor}")

    def _up_actors(self) -> list:
        return [a for a, ready in self._ready.items() if ready.done() and not ready.exception()]

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return self._judge_batchers[vendor].submit(task)

    def elicit(self, vendor: str, task) -> asyncio.Future[ElicitedRecord]:  # noqa: ANN001
        return self._elicit_batchers[vendor].submit(task)

    async def flush_quota(self) -> None:
        """Every judge and elicitor actor that is up tells the quota actor what it has not been told yet."""
        await asyncio.gather(*(a.flush_quota.remote() for a in self._up_actors()), return_exceptions=True)

    async def quota_stats(self) -> dict[str, dict]:
        """Each vendor's quota report, once every judge and elicitor actor has told its ledger everything (none
        when the run stopped before any actor was up)."""
        await self.flush_quota()
        up = self._up_actors()
        if self._stop.requested and not up:
            return {}
        stats = {}
        for v in self.vendors:
            if v in self._keepers:
                if self._keepers[v] in up:
                    stats[v] = await self._keepers[v].quota_report.remote()
            elif v in self._shared:
                stats[v] = await self.quotas.stats.remote(v)
            else:  # a batch vendor's (its judge votes from the driver, on a ledger of its own): untouched here
                stats[v] = QuotaLedger(self._limits[v]).report()
        return stats

    async def cancel_queued(self) -> int:
        stopped = Stopped("run stopping")
        local = sum(b.cancel_pending(stopped) for b in self._judge_batchers.values())
        asked = asyncio.gather(*(a.cancel_queued.remote() for a in self._up_actors() if a in self.actors.values()))
        self._cancelling.append(asked)
        return local + sum(await asked)

    async def close(self) -> None:
        import ray

        for batcher in [*self._judge_batchers.values(), *self._elicit_batchers.values()]:
            await batcher.close()
        # No call to an actor is left in flight once the pool is closed: a command stops Ray next, in a thread, and
        # a call's reference released meanwhile reaches Ray's core worker after its shutdown, which ends the
        # process with exit code 1 ("The core worker has already been shutdown").
        await asyncio.gather(*self._cancelling, return_exceptions=True)
        for actor in self._up_actors():
            try:
                await actor.close.remote()
            except Exception:  # noqa: BLE001, S110 - it is killed next either way
                pass
        for actor, ready in self._ready.items():
            ready.cancel()
            ray.kill(actor)
        # The pool's hold on the quota actor ends here, not when a garbage collection finds the pool (the run's stop
        # control refers back to it): the actor goes with its last holder, and the next run starts a fresh report.
        self.quotas = None


async def _until_up(ready: asyncio.Future[None], stop: StopControl) -> None:
    """Once the actor is up; Stopped if the run stops first (nothing was sent to it)."""
    if not await stop.first(ready):
        raise Stopped("run stopping before its judge started")


async def _up(actor) -> None:  # noqa: ANN001 - a Ray actor
    await actor.__ray_ready__.remote()
