"""A spending limit that holds: no call is issued whose projected cost would take the run over budget.

Each call reserves its projected cost (prompt tokens plus its output bound, at its model's price) before it
is sent and settles at its real cost when it returns. Once a call cannot be reserved the budget is
exhausted: no new call starts, the calls in flight finish and are archived, and the run can be resumed
with a larger budget. Spend can pass the limit only by what calls in flight cost beyond their projection
(a repair re-ask or a retry), never by a new call.
"""

from __future__ import annotations

import asyncio

from council.errors import CouncilError


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
                if self.reserved_usd <= 0:
                    self.exhausted = True
                    break
                await self._settled.wait()
            if self.exhausted:
                raise BudgetExhausted(f"budget ${self.limit_usd:.4f} reached: ${self.spent_usd:.4f} spent")
            self.reserved_usd += projected_usd

    async def settle(self, projected_usd: float, actual_usd: float) -> None:
        async with self._settled:
            self.reserved_usd = max(0.0, self.reserved_usd - projected_usd)
            if self.reserved_usd < 1e-12:
                self.reserved_usd = 0.0
            self.spent_usd += actual_usd
            self._settled.notify_all()
