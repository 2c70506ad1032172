"""A spending limit that holds: no call is issued whose projected cost would take the run over budget.

Each call reserves its projected cost (prompt tokens plus its output bound, at its model's price) before it
is sent and settles at its real cost when it returns. Once a call cannot be reserved the budget is
exhausted: no new call starts, the calls in flight finish and are archived, and the run can be resumed
with a larger budget. Spend can pass the limit only by what calls in flight cost beyond their projection
(a repair re-ask or a retry), never by a new call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

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
GIVE_BACK_SHARES = 4  # a shard's budget holding this many leases' worth of room it has no use for gives it back
STARVED_S = 5.0  # how long a shard with nothing in flight waits for other shards' reservations to settle


@dataclass(frozen=True)
class Lease:
    granted_usd: float
    others_reserved_usd: float  # what the other holders last said they had reserved (room that may come back)


class BudgetLedger:
    """The budget of a sharded run, in one place (a Ray actor on the head node wraps it). Each shard worker
    spends from an allowance leased here (:class:`LeasedBudget`). With every ask a holder reports what it has
    spent and what its calls in flight have reserved, and gives back the rest of its allowance, so allowances
    never add up to more than the limit and room a holder does not need returns to the others."""

    def __init__(self, limit_usd: float, spent_usd: float = 0.0) -> None:
        self.limit_usd = limit_usd
        self.earlier_usd = spent_usd  # spent before this run's shards started (the archive of a resumed run)
        self._holders: dict[str, tuple[float, float, float]] = {}  # holder -> (allowance, spent, reserved)

    def lease(self, holder: str, want_usd: float, spent_usd: float, reserved_usd: float = 0.0) -> Lease:
        """Up to ``want_usd`` more for ``holder`` on top of what it has spent and reserved."""
        self._holders[holder] = (spent_usd + reserved_usd, spent_usd, reserved_usd)
        grant = max(0.0, min(want_usd, self.limit_usd - self.committed_usd))
        self._holders[holder] = (spent_usd + reserved_usd + grant, spent_usd, reserved_usd)
        others = sum(r for h, (_, _, r) in self._holders.items() if h != holder)
        return Lease(grant, others)

    @property
    def committed_usd(self) -> float:
        return self.earlier_usd + sum(a for a, _, _ in self._holders.values())

    @property
    def spent_usd(self) -> float:
        return self.earlier_usd + sum(s for _, s, _ in self._holders.values())


class LeasedBudget(Budget):
    """A shard worker's budget: the same reserve-then-settle rule, bounded by the allowance leased from the run's
    :class:`BudgetLedger` through ``lease(want_usd, spent_usd, reserved_usd) -> Lease``. With nothing of its own in
    flight and nothing granted, it waits (up to :data:`STARVED_S`) while other shards hold reservations, since
    calls usually cost less than reserved and each shard gives back the room that frees
    (:data:`GIVE_BACK_SHARES`); only then is the budget exhausted."""

    def __init__(self, limit_usd: float, lease: Callable[[float, float, float], Awaitable[Lease]]) -> None:
        super().__init__(limit_usd)
        self.allowance_usd = 0.0
        self._lease = lease
        self._starved_since: float | None = None

    def _fits(self, projected_usd: float) -> bool:
        return self.spent_usd + self.reserved_usd + projected_usd <= self.allowance_usd

    async def _extend(self, projected_usd: float) -> bool:
        want = max(projected_usd, (self.limit_usd or 0.0) * LEASE_SHARE)
        lease = await self._lease(want, self.spent_usd, self.reserved_usd)
        self.allowance_usd = self.spent_usd + self.reserved_usd + lease.granted_usd
        if self._fits(projected_usd):
            self._starved_since = None
            return True
        if self.reserved_usd > 0 or lease.others_reserved_usd <= 0:
            return False  # wait for this shard's own calls to settle, or nothing can come back: exhausted
        now = time.monotonic()
        self._starved_since = self._starved_since or now
        if now - self._starved_since > STARVED_S:
            return False
        await asyncio.sleep(0.05)  # other shards' calls settle and give back what they reserved beyond their cost
        return True

    async def settle(self, projected_usd: float, actual_usd: float) -> None:
        """Settle as any budget does; then, when calls that cost less than reserved have left this shard holding
        room it has no use for, give it back to the ledger (another shard may be waiting for exactly that)."""
        await super().settle(projected_usd, actual_usd)
        async with self._settled:
            free = self.allowance_usd - self.spent_usd - self.reserved_usd
            if free > GIVE_BACK_SHARES * LEASE_SHARE * (self.limit_usd or 0.0):
                lease = await self._lease(0.0, self.spent_usd, self.reserved_usd)
                self.allowance_usd = self.spent_usd + self.reserved_usd + lease.granted_usd

    async def report(self) -> None:
        """Tell the ledger what was spent, giving back what is left (at the end of the shard's work)."""
        await self._lease(0.0, self.spent_usd, 0.0)
