"""The caller's side of a vendor quota: spends leased capacity locally, asks the ledger for more when it
runs out, and reports what it learned (token corrections, 429s, announced limits) with the next ask.

One :class:`Limiter` per process and vendor; the judge (and later the elicitor) of that vendor in that
process share it. The ledger is reached through a handle: in-process for local runs, a named Ray actor
for a cluster.

It also tells the ledger what was sent: the client calls :meth:`Limiter.sent` for each request it sends
(when, and the tokens the answer used) and :meth:`Limiter.rate_limited` for each 429; they travel with the next
lease, as ages grouped by second, and :meth:`Limiter.flush` delivers what is left (an unlimited vendor's
limiter asks the ledger only about once a second, and a run's last requests have no next lease).
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
        self._events: dict[int, list[float]] = {}  # second of our clock -> [requests, tokens, 429s, sum of times]

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
        grant = await self._ledger.lease(self.holder, want, want_tokens, self._take_report())
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

    def now(self) -> float:
        """This limiter's clock (for :meth:`sent`)."""
        return self._clock()

    def sent(self, at: float, tokens: int) -> None:
        """One request went to the vendor at ``at`` (:meth:`now`) and used ``tokens`` (its answer's usage; the
        estimate where that is unknown; 0 if it was refused). Counted by the ledger with the next report."""
        self._event(at, requests=1, tokens=tokens)

    async def flush(self) -> None:
        """Deliver to the ledger what it has not been told yet (requests sent, 429s, token corrections)."""
        report = self._take_report()
        if report:
            grant = await self._ledger.lease(self.holder, 0, 0, report)
            self.rpm, self.tpm = grant.rpm, grant.tpm

    def _event(self, at: float, requests: int = 0, tokens: int = 0, rate_limited: int = 0) -> None:
        entry = self._events.get(int(at))
        if entry is None:
            entry = self._events[int(at)] = [0, 0, 0, 0.0]
        entry[0] += requests
        entry[1] += tokens
        entry[2] += rate_limited
        entry[3] += at * (requests + rate_limited)

    def _take_report(self) -> Report:
        """What is to be told with the next request to the ledger; the events as ages from now."""
        report, self._report = self._report, Report()
        if self._events:
            now = self._clock()
            report.events = [
                (max(0.0, now - (total / n if (n := r + limited) else second)), int(r), int(t), int(limited))
                for second, (r, t, limited, total) in self._events.items()]
            self._events = {}
        return report

    def settle(self, estimated: int, actual: int) -> None:
        """A call finished: correct the account by what it really cost (0 if it was refused)."""
        self._report.token_adjust += actual - estimated

    def rate_limited(self, hint_s: float | None) -> None:
        self._report.merge(Report(rate_limited=1, hint_s=hint_s))
        self._event(self._clock(), rate_limited=1)
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
