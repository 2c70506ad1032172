"""The quota actor: every vendor's one ledger for the whole cluster, and a limiter's handle on it.

A vendor whose quota has one holder in the whole instance (the only run on a private instance, where one actor
is the vendor's judge or elicitor, not both) needs no actor between the two: that holder keeps the ledger in its
own process (:func:`council.cluster.actors.holder_ledger`), and no quota actor is started when no vendor has two
holders (a process less to start: 0.6 s of a core, and the leases' round trips).

A module of its own, importing only the ledger: the actor's process imports the module that defines its class. On top
of Ray this module costs 0.12 s of a core to import and the judges' module (aiohttp, the prompts, the record schema)
0.33 s; a quota actor's process used 0.68-0.78 s of a core here, against 0.71-0.90 s with its class among the judges'."""

from __future__ import annotations

import ray

from council.protocol.config import Limits
from council.transport.quota import Grant, QuotaLedger, Report

NAMESPACE = "grading-council"


@ray.remote(num_cpus=0)
class QuotaActor:
    """The one ledger of each vendor for the whole cluster, every vendor's in this one actor (one process, not
    one per vendor), found by name: ``quotas``."""

    def __init__(self, limits: dict[str, Limits]) -> None:
        self._ledgers = {vendor: QuotaLedger(lim) for vendor, lim in limits.items()}

    def configure(self, limits: dict[str, Limits]) -> None:
        for vendor, lim in limits.items():
            ledger = self._ledgers.get(vendor)
            if ledger is None or ledger.limits != lim:
                self._ledgers[vendor] = QuotaLedger(lim)

    def lease(self, vendor: str, limits: Limits | None, holder: str, want_requests: int, want_tokens: int,
              report: Report) -> Grant:
        """A lease of ``vendor``'s ledger; one that has none yet (its holder asked before the run's
        configuration arrived) gets one with the holder's ``limits``."""
        ledger = self._ledgers.get(vendor)
        if ledger is None:
            ledger = self._ledgers[vendor] = QuotaLedger(limits or Limits())
        return ledger.lease(holder, want_requests, want_tokens, report)

    def stats(self, vendor: str) -> dict:
        return self._ledgers[vendor].report()


QUOTAS = "quotas"


def quota_actor(limits: dict[str, Limits], **options):  # noqa: ANN003, ANN201 - Ray options; an actor handle
    """The quota actor, holding a ledger for each vendor of ``limits``: created on first use, then found by name
    from any process of the cluster (``options``, such as a scheduling strategy, apply when it is created). It
    is configured without waiting: calls from one process reach it in order, and it serves another
    process's first lease only once it is up."""
    actor = QuotaActor.options(name=QUOTAS, namespace=NAMESPACE, get_if_exists=True, max_restarts=-1,
                               max_task_retries=-1, **options).remote(limits)
    actor.configure.remote(limits)
    return actor


class RayLedger:
    """A limiter's handle on its vendor's ledger in the quota actor."""

    def __init__(self, vendor: str, limits: Limits | None = None) -> None:
        self._vendor = vendor
        self._limits = limits
        self._actor = ray.get_actor(QUOTAS, namespace=NAMESPACE)

    async def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report) -> Grant:
        return await self._actor.lease.remote(self._vendor, self._limits, holder, want_requests, want_tokens, report)
