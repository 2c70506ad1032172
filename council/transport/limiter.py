"""The caller's side of a vendor quota: spends leased capacity locally, asks the ledger for more when it
runs out, and reports what it learned (token corrections, 429s, announced limits) with the next ask.

One :class:`Limiter` per process and vendor; the judge (and later the elicitor) of that vendor in that
process share it. The ledger is reached through a handle: in-process for local runs, a named Ray actor
for a cluster.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from typing import Protocol

from council.transport.quota import Clock, Grant, QuotaLedger, Report

UNLIMITED_REFRESH_S = 1.0  # with no limit in force, look at the ledger about once a second


class LedgerHandle(Protocol):
    async def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report) -> Grant: ...


class LocalLedger:
    """A ledger in this process."""

    def __init__(self, ledger: QuotaLedger) -> None:
        self.ledger = ledger

    async def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report) -> Grant:
        return self.ledger.lease(holder, want_requests, want_tokens, report)


class Limiter:
    def __init__(
        self, ledger: LedgerHandle, holder: str, *, concurrency: int = 32, lease_s: float = 0.25,
        clock: Clock = time.monotonic, seed: int | None = None,
    ) -> None:
        self._ledger = ledger
        self.holder = holder
        self._lease_s = lease_s
        self._clock = clock
        self._rng = random.Random(seed)
        self._requests = 0
        self._tokens = 0
        self._expires = -math.inf
        self._report = Report()
        self._lock = asyncio.Lock()
        self._waiting = 0
        self.rpm = 0.0
        self.tpm = 0.0
        self._unlimited_until = -math.inf
        self.concurrency = concurrency
        self._inflight = 0
        self._slot_free = asyncio.Condition()
        self.leases = 0

    async def admit(self, tokens: int) -> None:
        """Wait until one request costing ``tokens`` may be sent."""
        if self._clock() < self._unlimited_until:
            return
        self._waiting += 1
        try:
            async with self._lock:
                while True:
                    now = self._clock()
                    if now >= self._expires:
                        self._requests, self._tokens = 0, 0
                    if self._requests >= 1 and (self.tpm <= 0 or self._tokens >= tokens):
                        self._requests -= 1
                        self._tokens -= tokens
                        return
                    grant = await self._ask(tokens)
                    if grant.rpm <= 0 and grant.tpm <= 0:
                        self._unlimited_until = self._clock() + UNLIMITED_REFRESH_S
                        return
                    if grant.requests == 0:
                        await asyncio.sleep(grant.wait_s * self._rng.uniform(1.0, 1.2))
        finally:
            self._waiting -= 1

    async def _ask(self, tokens: int) -> Grant:
        per_lease = math.ceil(self.rpm / 60.0 * self._lease_s) if self.rpm > 0 else self._waiting
        want = max(1, min(self._waiting, per_lease) if per_lease else self._waiting)
        want_tokens = max(0, tokens * want - max(0, self._tokens))
        report, self._report = self._report, Report()
        grant = await self._ledger.lease(self.holder, want, want_tokens, report)
        self.leases += 1
        self.rpm, self.tpm = grant.rpm, grant.tpm
        if grant.concurrency != self.concurrency:
            self.concurrency = grant.concurrency
            async with self._slot_free:
                self._slot_free.notify_all()
        if grant.requests:
            self._requests = max(0, self._requests) + grant.requests
            self._tokens = max(0, self._tokens) + grant.tokens
            self._expires = self._clock() + 2 * self._lease_s
        return grant

    def settle(self, estimated: int, actual: int) -> None:
        """A call finished: correct the account by what it really cost (0 if it was refused)."""
        self._report.token_adjust += actual - estimated

    def rate_limited(self, hint_s: float | None) -> None:
        self._report.merge(Report(rate_limited=1, hint_s=hint_s))
        self._unlimited_until = -math.inf
        self._expires = -math.inf  # what is left of the lease is void

    def announced(self, rpm: float | None, tpm: float | None) -> None:
        if rpm or tpm:
            self._report.merge(Report(limit_rpm=rpm, limit_tpm=tpm))

    async def acquire_slot(self) -> None:
        """Take one of this holder's share of the vendor's concurrent requests."""
        async with self._slot_free:
            await self._slot_free.wait_for(lambda: self._inflight < self.concurrency)
            self._inflight += 1

    async def release_slot(self) -> None:
        async with self._slot_free:
            self._inflight -= 1
            self._slot_free.notify()
