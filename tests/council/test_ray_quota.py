"""The quota across processes: holders in separate Ray actor processes draw on one named quota actor."""

from __future__ import annotations

import asyncio
import os
import time

from council.protocol.config import Limits
from council.transport.quota import SAFETY


def spender_class():
    import ray

    @ray.remote(num_cpus=0)
    class Spender:
        """Stands for any caller of a vendor (a judge, an elicitor) in its own process."""

        def __init__(self, vendor: str) -> None:
            from council.cluster.quotas import RayLedger
            from council.transport.limiter import Limiter

            self.limiter = Limiter(RayLedger(vendor), f"spender:{os.getpid()}", lease_s=0.1)

        async def spend(self, until: float) -> tuple[int, int]:
            count = 0

            async def one() -> None:
                nonlocal count
                while time.time() < until:
                    await self.limiter.admit(10)
                    count += 1

            await asyncio.gather(*(one() for _ in range(8)))
            return count, os.getpid()

    return Spender


def test_the_session_instance_is_this_process_s_own(ray_session):
    from council.cluster.raycluster import started_here

    assert started_here()


def test_processes_share_one_quota(ray_session):
    import ray

    from council.cluster.quotas import quota_actor

    quota = quota_actor({"quota-test": Limits(rpm=1200)})
    spenders = [spender_class().remote("quota-test") for _ in range(2)]
    ray.get([s.spend.remote(0) for s in spenders])  # processes up before the clock starts
    start = time.time()
    results = ray.get([s.spend.remote(start + 3.0) for s in spenders])
    elapsed = time.time() - start
    counts = [c for c, _ in results]
    assert len({pid for _, pid in results}) == 2 and os.getpid() not in {pid for _, pid in results}
    total = sum(counts)
    assert total <= 1200 / 60 * elapsed * SAFETY + 10 + 2, (counts, elapsed)
    assert total >= 1200 / 60 * 3.0 * 0.8, counts
    assert min(counts) > 0.25 * total, counts
    stats = ray.get(quota.stats.remote("quota-test"))
    assert len(stats["holders"]) == 2
    for s in spenders:
        ray.kill(s)
