"""Ray actor shells. No logic here: each method forwards to the plain class it wraps."""

from __future__ import annotations

import os

import ray

from council.config import Endpoint, JudgeParams, VendorSettings
from council.judge import Judge, JudgeTask
from council.limiter import Limiter
from council.quota import Grant, Limits, QuotaLedger, Report
from council.schema import JudgeCallRecord, MemberSpec
from council.stop import Stopped

NAMESPACE = "grading-council"


@ray.remote(num_cpus=0)
class QuotaActor:
    """The one ledger of a vendor for the whole cluster, found by name: ``quota:<vendor>``."""

    def __init__(self, limits: Limits) -> None:
        self._ledger = QuotaLedger(limits)

    def configure(self, limits: Limits) -> None:
        if limits != self._ledger.limits:
            self._ledger = QuotaLedger(limits)

    def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report) -> Grant:
        return self._ledger.lease(holder, want_requests, want_tokens, report)

    def stats(self) -> dict:
        return self._ledger.report()


def quota_name(vendor: str) -> str:
    return f"quota:{vendor}"


def quota_actor(vendor: str, limits: Limits):  # noqa: ANN201 - a Ray actor handle
    """The vendor's quota actor: created on first use, then found by name from any process of the cluster."""
    actor = QuotaActor.options(name=quota_name(vendor), namespace=NAMESPACE, get_if_exists=True, max_restarts=-1,
                               max_task_retries=-1).remote(limits)
    ray.get(actor.configure.remote(limits))
    return actor


class RayLedger:
    """A limiter's handle on the vendor's quota actor."""

    def __init__(self, vendor: str) -> None:
        self._actor = ray.get_actor(quota_name(vendor), namespace=NAMESPACE)

    async def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report) -> Grant:
        return await self._actor.lease.remote(holder, want_requests, want_tokens, report)


@ray.remote
class JudgeActor:
    def __init__(self, member: MemberSpec, endpoint: Endpoint, params: JudgeParams, settings: VendorSettings,
                 seed: int, prices: tuple[float, float]) -> None:
        limiter = Limiter(RayLedger(member.vendor), f"judge:{member.vendor}:{os.getpid()}",
                          concurrency=settings.concurrency, seed=seed)
        self._judge = Judge(member, endpoint, params, limiter=limiter, max_batch=settings.max_batch, seed=seed,
                            prices=prices)

    async def grade_batch(self, tasks: list[JudgeTask]) -> list[JudgeCallRecord | BaseException]:
        return await self._judge.grade_batch(tasks)

    def cancel_queued(self) -> int:
        return self._judge.cancel_queued(Stopped("run stopping"))

    async def close(self) -> None:
        await self._judge.close()


@ray.remote
class ElicitorActor:
    """A vendor's elicitor; its limiter draws on the same quota actor as the vendor's judge."""

    def __init__(self, vendor: str, endpoint: Endpoint, settings: VendorSettings, max_tokens: int,
                 prices: dict[str, tuple[float, float]], seed: int) -> None:
        from elicitor import Elicitor

        limiter = Limiter(RayLedger(vendor), f"elicitor:{vendor}:{os.getpid()}", concurrency=settings.concurrency,
                          seed=seed)
        self._elicitor = Elicitor(endpoint, limiter, vendor=vendor, max_tokens=max_tokens, prices=prices, seed=seed)

    async def elicit_batch(self, tasks: list) -> list:
        return await self._elicitor.elicit_batch(tasks)

    async def close(self) -> None:
        await self._elicitor.close()
