"""A sharded run's budget: shard workers spend allowances leased from one ledger, and between them never pass
the limit by a new call, nor stop far short of it."""

from __future__ import annotations

import asyncio
import random

import pytest

from council.grading.budget import LEASE_SHARE, BudgetExhausted, BudgetLedger, Lease, LeasedBudget


def shard_budget(ledger: BudgetLedger, holder: str, leases: list[float]) -> LeasedBudget:
    async def lease(want_usd: float, spent_usd: float, reserved_usd: float) -> Lease:
        await asyncio.sleep(0.001)  # a round trip to the ledger's actor
        granted = ledger.lease(holder, want_usd, spent_usd, reserved_usd)
        leases.append(granted.granted_usd)
        return granted

    return LeasedBudget(ledger.limit_usd, lease)


async def spend(budget: LeasedBudget, rng: random.Random, concurrency: int) -> int:
    """Calls of random projected cost, each settling at a random share of it, until the budget says no."""
    calls = 0

    async def caller() -> None:
        nonlocal calls
        while True:
            projected = rng.uniform(0.001, 0.01)
            try:
                await budget.reserve(projected)
            except BudgetExhausted:
                return
            await asyncio.sleep(rng.uniform(0, 0.002))
            await budget.settle(projected, projected * rng.uniform(0.3, 1.0))
            calls += 1

    await asyncio.gather(*(caller() for _ in range(concurrency)))
    await budget.report()
    return calls


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_shards_together_stay_within_the_limit_and_use_most_of_it(seed):
    rng = random.Random(seed)
    limit, earlier = 3.0, 0.4  # a resumed run: 0.4 was spent before
    ledger = BudgetLedger(limit, spent_usd=earlier)
    leases: list[float] = []
    shards = [shard_budget(ledger, f"shard{k}", leases) for k in range(3)]
    calls = await asyncio.gather(*(spend(b, rng, 8) for b in shards))
    spent = sum(b.spent_usd for b in shards)
    assert all(c > 10 for c in calls)  # every shard did work
    assert ledger.spent_usd == pytest.approx(earlier + spent)
    assert ledger.committed_usd <= limit + 1e-9  # allowances never pass the limit
    assert earlier + spent <= limit + 1e-9
    # A shard stops when it cannot get room; what the others still held is at most a lease each.
    assert earlier + spent >= limit - 3 * (LEASE_SHARE * limit + 0.01)
    assert len(leases) < 3 * (1 / LEASE_SHARE) * 3  # allowances come in leases, not one per call


async def test_nothing_left_is_exhausted_at_once():
    ledger = BudgetLedger(1.0, spent_usd=1.0)
    budget = shard_budget(ledger, "late", [])
    with pytest.raises(BudgetExhausted):
        await budget.reserve(0.001)
    assert budget.exhausted and budget.spent_usd == 0.0


async def test_a_starved_shard_waits_for_what_others_reserved():
    """Shard A reserves much more than its calls cost; shard B, with nothing in flight, finds no room at first and
    must not stop the run: A's calls settle, their unused reservations come back, and B goes on."""
    ledger = BudgetLedger(1.0)
    a, b = shard_budget(ledger, "a", []), shard_budget(ledger, "b", [])
    for _ in range(9):
        await a.reserve(0.1)  # A holds 0.9 in reservations
    await a._lease(0.0, a.spent_usd, a.reserved_usd)  # and says so to the ledger

    async def settle_a() -> None:
        await asyncio.sleep(0.3)
        for _ in range(9):
            await a.settle(0.1, 0.01)  # each call cost a tenth of its reservation
        await a.report()

    settling = asyncio.create_task(settle_a())
    await b.reserve(0.5)  # waits, then fits once A gives its reservations back
    await settling
    assert not b.exhausted and ledger.committed_usd <= 1.0 + 1e-9


async def test_room_a_working_shard_no_longer_needs_comes_back_without_a_report(monkeypatch):
    """As above, but A keeps working and never reports: its cheap settles alone must give the room back, or B,
    with nothing in flight, sees A's stale reservations, waits them out and stops the run short of its budget."""
    from council.grading import budget as budget_module

    monkeypatch.setattr(budget_module, "STARVED_S", 1.0)
    ledger = BudgetLedger(1.0)
    a, b = shard_budget(ledger, "a", []), shard_budget(ledger, "b", [])
    for _ in range(9):
        await a.reserve(0.1)
    await a._lease(0.0, a.spent_usd, a.reserved_usd)

    async def settle_a() -> None:
        await asyncio.sleep(0.3)
        for _ in range(9):
            await a.settle(0.1, 0.01)

    settling = asyncio.create_task(settle_a())
    await b.reserve(0.5)
    await settling
    assert not b.exhausted and not a.exhausted
    assert ledger.committed_usd <= 1.0 + 1e-9 and a.spent_usd + b.reserved_usd <= 1.0
