"""A spending limit that holds: no call is issued whose projected cost would take the run over budget.

Each call reserves its projected cost (prompt tokens plus its output bound, at its model's price) before it
is sent and settles at its real cost when it returns. Once a call cannot be reserved the budget is
exhausted: no new call starts, the calls in flight finish and are archived, and the run can be resumed
with a larger budget. Spend can pass the limit only by what calls in flight cost beyond their projection
(a repair re-ask or a retry), never by a new call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from council.core.errors import CouncilError


class BudgetExhausted(CouncilError):
    """The next call would take the run over its budget."""


class Budget:
    """The run's spend, reserved before each call and settled after it. Asyncio, one event loop."""

    def __init__(self, limit_usd: float | None, spent_usd: float = 0.0) -> None:
        self.limit_usd = limit_usd  # None: no limit
        self.spent_usd = spent_usd
        self.reserved_usd = 0.0
        self.exhausted = False
        self._settled = asyncio.Condition()

    def _fits(self, projected_usd: float) -> bool:
        return self.limit_usd is None or self.spent_usd + self.reserved_usd + projected_usd <= self.limit_usd

    async def reserve(self, projected_usd: float) -> None:
        """Reserve a call's projected cost. While calls in flight hold reservations, wait for them to settle
        (their real cost is usually below the projection); once nothing is in flight and the call still
        does not fit, the budget is exhausted."""
        async with self._settled:
            while not self.exhausted and not self._fits(projected_usd):
                if await self._extend(projected_usd):
                    continue
                if self.reserved_usd <= 0:
                    self.exhausted = True
                    break
                await self._settled.wait()
            if self.exhausted:
                raise BudgetExhausted(f"budget ${self.limit_usd:.4f} reached: ${self.spent_usd:.4f} spent")
            self.reserved_usd += projected_usd

    async def _extend(self, projected_usd: float) -> bool:
        """Whether more room was found (a shard's budget asks the run's ledger); this one is all there is."""
        return False

    async def settle(self, projected_usd: float, actual_usd: float) -> None:
        async with self._settled:
            self.reserved_usd = max(0.0, self.reserved_usd - projected_usd)
            if self.reserved_usd < 1e-12:
                self.reserved_usd = 0.0
            self.spent_usd += actual_usd
            self._settled.notify_all()


LEASE_SHARE = 0.01  # of the run's limit, asked for at a time by a shard's budget


class BudgetLedger:
    """The budget of a sharded run, in one place (a Ray actor on the head node wraps it). Each shard worker
    spends from an allowance leased here (:class:`LeasedBudget`) and reports its settled spend with each ask;
    allowances never add up to more than the limit, so the run cannot pass it by a new call. A shard that
    cannot get room stops the run (a stop reaches every shard), so it may stop short of the limit by what the
    other shards still held: at most :data:`LEASE_SHARE` of the limit per shard."""

    def __init__(self, limit_usd: float, spent_usd: float = 0.0) -> None:
        self.limit_usd = limit_usd
        self.earlier_usd = spent_usd  # spent before this run's shards started (the archive of a resumed run)
        self._holders: dict[str, tuple[float, float]] = {}  # holder -> (allowance, spent)

    def lease(self, holder: str, want_usd: float, spent_usd: float) -> float:
        """Up to ``want_usd`` more for ``holder``, which has spent ``spent_usd`` so far; 0 when nothing is left."""
        allowance, _ = self._holders.get(holder, (0.0, 0.0))
        self._holders[holder] = (allowance, spent_usd)
        grant = max(0.0, min(want_usd, self.limit_usd - self.committed_usd))
        self._holders[holder] = (allowance + grant, spent_usd)
        return grant

    @property
    def committed_usd(self) -> float:
        return self.earlier_usd + sum(max(a, s) for a, s in self._holders.values())

    @property
    def spent_usd(self) -> float:
        return self.earlier_usd + sum(s for _, s in self._holders.values())


class LeasedBudget(Budget):
    """A shard worker's budget: the same reserve-then-settle rule, bounded by the allowance leased so far from
    the run's :class:`BudgetLedger` through ``lease(want_usd, spent_usd) -> granted_usd``."""

    def __init__(self, limit_usd: float, lease: Callable[[float, float], Awaitable[float]]) -> None:
        super().__init__(limit_usd)
        self.allowance_usd = 0.0
        self._lease = lease

    def _fits(self, projected_usd: float) -> bool:
        return self.spent_usd + self.reserved_usd + projected_usd <= self.allowance_usd

    async def _extend(self, projected_usd: float) -> bool:
        want = max(projected_usd, (self.limit_usd or 0.0) * LEASE_SHARE)
        granted = await self._lease(want, self.spent_usd)
        self.allowance_usd += granted
        return granted > 0

    async def report(self) -> None:
        """Tell the ledger what was spent (a lease of nothing), at the end of the shard's work."""
        await self._lease(0.0, self.spent_usd)
