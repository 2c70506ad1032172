"""Per-vendor quotas: token buckets for requests and for tokens, answered like a real provider.

A bucket of limit ``L`` per minute holds at most ``L * burst_s / 60`` (at least one request, at least one
token) and refills at ``L / 60`` per second. A request is admitted when both of its vendor's buckets can
pay for it: one request, and its prompt + completion tokens. A token cost larger than the bucket is
admitted when the bucket is full and leaves it in debt, so a big request is slowed, never refused forever.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from council.sim._config import SimConfig

Clock = Callable[[], float]


def format_reset(seconds: float) -> str:
    """Duration in the ``x-ratelimit-reset-*`` style: ``"0.35s"``, ``"2s"``, ``"0s"``."""
    if seconds <= 0:
        return "0s"
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return f"{text}s"


class Bucket:
    """A token bucket measured per minute; all times come from the caller."""

    __slots__ = ("limit", "capacity", "rate", "level", "stamp")

    def __init__(self, limit_per_min: int, burst_s: float, now: float) -> None:
        self.limit = limit_per_min
        self.capacity = max(limit_per_min * burst_s / 60.0, 1.0)
        self.rate = limit_per_min / 60.0
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, cost: float) -> float:
        """Seconds until ``cost`` can be paid (0 if now); a cost above capacity needs a full bucket."""
        need = min(cost, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def reset_s(self) -> float:
        return max(0.0, (self.capacity - self.level) / self.rate)

    def state(self) -> BucketState:
        return BucketState(self.limit, max(0, math.floor(self.level)), self.reset_s())

    def headers(self, kind: str, into: dict[str, str]) -> None:
        into[f"x-ratelimit-limit-{kind}"] = str(self.limit)
        into[f"x-ratelimit-remaining-{kind}"] = str(max(0, math.floor(self.level)))
        into[f"x-ratelimit-reset-{kind}"] = format_reset(self.reset_s())


class BucketState(NamedTuple):
    """A bucket as a response reports it: its limit per minute, what remains now, seconds until it is full."""

    limit: int
    remaining: int
    reset_s: float


@dataclass(slots=True)
class Admission:
    """The quota's answer: admitted or not, the wait hint when not, the rate-limit headers in OpenAI's names
    (``x-ratelimit-*``, plus ``retry-after`` and ``retry-after-ms`` when refused), and the buckets' states
    (``"requests"``, ``"tokens"``) for the faces that name them otherwise."""

    ok: bool
    retry_after_s: float = 0.0
    limited_by: str = ""  # "requests" | "tokens" when refused
    headers: dict[str, str] = field(default_factory=dict)
    buckets: dict[str, BucketState] = field(default_factory=dict)


_UNLIMITED = Admission(True)


class QuotaBook:
    """Every vendor's buckets, created on first use from the config; one clock for all (injectable)."""

    def __init__(self, config: SimConfig, clock: Clock = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._buckets: dict[str, tuple[Bucket | None, Bucket | None]] = {}

    def _for(self, vendor: str, now: float) -> tuple[Bucket | None, Bucket | None]:
        got = self._buckets.get(vendor)
        if got is None:
            b = self._config.behaviour(vendor)
            burst = self._config.burst_s
            got = (Bucket(b.rpm, burst, now) if b.rpm else None, Bucket(b.tpm, burst, now) if b.tpm else None)
            self._buckets[vendor] = got
        return got

    def admit(self, vendor: str, tokens: int) -> Admission:
        """Charge one request and ``tokens`` to ``vendor`` if both buckets allow it, else refuse with a wait."""
        now = self._clock()
        req, tok = self._for(vendor, now)
        if req is None and tok is None:
            return _UNLIMITED
        wait_req = wait_tok = 0.0
        if req is not None:
            req.refill(now)
            wait_req = req.wait_for(1.0)
        if tok is not None:
            tok.refill(now)
            wait_tok = tok.wait_for(float(tokens))
        ok = wait_req <= 0.0 and wait_tok <= 0.0
        if ok:
            if req is not None:
                req.level -= 1.0
            if tok is not None:
                tok.level -= tokens
        headers: dict[str, str] = {}
        buckets: dict[str, BucketState] = {}
        if req is not None:
            req.headers("requests", headers)
            buckets["requests"] = req.state()
        if tok is not None:
            tok.headers("tokens", headers)
            buckets["tokens"] = tok.state()
        if ok:
            return Admission(True, headers=headers, buckets=buckets)
        wait = max(wait_req, wait_tok)
        headers["retry-after"] = str(max(1, math.ceil(wait)))
        headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000.0)))
        return Admission(False, wait, "requests" if wait_req >= wait_tok else "tokens", headers, buckets)

    def reset(self) -> None:
        """Refill every bucket (forget all usage)."""
        self._buckets.clear()
