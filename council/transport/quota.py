"""A vendor's quota: one account, one limit, kept in exactly one place for every process that calls it.

:class:`QuotaLedger` is that place. It paces requests and tokens with two token buckets and hands out
capacity in *leases*: a caller asks for what it needs for the next fraction of a second and then spends
it locally (:mod:`council.transport.limiter`), so a call does not cost a round trip to the ledger. Callers report
back what they learned: the tokens a call really used (to correct the estimate), 429s and the provider's
hints, and limits announced in ``x-ratelimit-limit-*`` headers.

Adaptive rate: a 429 drains the buckets, pauses grants until the provider's hint has passed, and cuts the
rate to 80% of the rate that provoked it; the rate then recovers quickly to just under that ceiling and
probes slowly above it. A provider whose real limit is lower than configured is thereby settled near its
real limit; one that announces its limit in headers is believed at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from council.protocol.config import Limits

Clock = Callable[[], float]

CUT = 0.8  # rate after a 429, relative to the rate that provoked it
CUT_COOLDOWN_S = 1.0  # 429s within this window of a cut are one event
FAST_RECOVERY_PER_S = 0.05  # factor recovered per second while below 95% of the last ceiling
PROBE_PER_S = 0.01  # factor recovered per second above it
SAFETY = 0.99  # pace just under the limit: clocks and network jitter differ between us and the provider
HOLDER_TTL_S = 5.0


@dataclass(slots=True)
class Report:
    """What a holder tells the ledger with its next lease request."""

    token_adjust: int = 0  # actual minus estimated tokens of settled calls
    rate_limited: int = 0  # 429s seen
    hint_s: float | None = None  # the largest wait hint among them
    limit_rpm: float | None = None  # announced by the provider
    limit_tpm: float | None = None

    def merge(self, other: Report) -> None:
        self.token_adjust += other.token_adjust
        self.rate_limited += other.rate_limited
        self.hint_s = _max(self.hint_s, other.hint_s)
        self.limit_rpm = other.limit_rpm or self.limit_rpm
        self.limit_tpm = other.limit_tpm or self.limit_tpm


@dataclass(frozen=True, slots=True)
class Grant:
    requests: int
    tokens: int
    wait_s: float  # when nothing (or less than asked) was granted: how long until asking again makes sense
    concurrency: int  # this holder's share of the vendor's concurrency cap
    rpm: float  # effective limits now (0 = unlimited), for sizing batches
    tpm: float


@dataclass
class _Bucket:
    rate_per_s: float  # 0 = unlimited
    capacity: float
    level: float
    stamp: float

    def refill(self, now: float) -> None:
        if self.rate_per_s > 0:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate_per_s)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        if self.rate_per_s <= 0 or self.level >= amount:
            return 0.0
        return (min(amount, self.capacity) - self.level) / self.rate_per_s


@dataclass
class _Stats:
    granted_requests: int = 0
    granted_tokens: int = 0
    rate_limited: int = 0
    cuts: int = 0
    holders: dict[str, float] = field(default_factory=dict)


class QuotaLedger:
    """The single account of one vendor. Plain Python; the Ray actor in :mod:`council.cluster.actors` wraps it."""

    def __init__(self, limits: Limits, *, burst_s: float = 0.5, clock: Clock = time.monotonic) -> None:
        self.limits = limits
        self.burst_s = burst_s
        self._clock = clock
        now = clock()
        self._learned_rpm: float | None = None
        self._learned_tpm: float | None = None
        self.factor = 1.0
        self._ceiling = 1.0
        self._paused_until = 0.0
        self._last_cut = -math.inf
        self._last_seen = now
        self._req = _Bucket(0.0, 0.0, 0.0, now)
        self._tok = _Bucket(0.0, 0.0, 0.0, now)
        self.stats = _Stats()
        self._retune(now, fill=True)

    # -- effective limits ---------------------------------------------------------------------------------
    def effective(self) -> tuple[float, float]:
        """(rpm, tpm) now in force: configured or announced (the lower), times the adaptive factor."""
        rpm = _min_limit(self.limits.rpm, self._learned_rpm)
        tpm = _min_limit(self.limits.tpm, self._learned_tpm)
        return rpm * self.factor * SAFETY, tpm * self.factor * SAFETY

    def _retune(self, now: float, *, fill: bool = False) -> None:
        rpm, tpm = self.effective()
        for bucket, per_min in ((self._req, rpm), (self._tok, tpm)):
            bucket.refill(now)
            bucket.rate_per_s = per_min / 60.0
            bucket.capacity = max(1.0, per_min / 60.0 * self.burst_s) if per_min else 0.0
            bucket.level = bucket.capacity if fill else min(bucket.level, bucket.capacity)

    # -- the lease -----------------------------------------------------------------------------------------
    def lease(self, holder: str, want_requests: int, want_tokens: int, report: Report | None = None) -> Grant:
        now = self._clock()
        self.stats.holders[holder] = now
        if report is not None:
            self._absorb(report, now)
        self._recover(now)
        self._req.refill(now)
        self._tok.refill(now)
        share = self._share(now)
        rpm, tpm = self.effective()
        if now < self._paused_until:
            return Grant(0, 0, self._paused_until - now, share, rpm, tpm)
        want_requests = max(1, want_requests)
        per_request = want_tokens / want_requests if want_requests else 0.0
        n = want_requests
        if self._req.rate_per_s > 0:
            n = min(n, int(self._req.level))
        if self._tok.rate_per_s > 0 and per_request > 0:
            affordable = int(self._tok.level // per_request)
            if affordable == 0 and self._tok.level >= self._tok.capacity:
                affordable = 1  # a request larger than the whole bucket goes once the bucket is full
            n = min(n, affordable)
        if n <= 0:
            wait = max(self._req.wait_for(1.0), self._tok.wait_for(per_request))
            return Grant(0, 0, max(wait, 0.001), share, rpm, tpm)
        tokens = int(math.ceil(per_request * n))
        if self._req.rate_per_s > 0:
            self._req.level -= n
        if self._tok.rate_per_s > 0:
            self._tok.level -= tokens
        self.stats.granted_requests += n
        self.stats.granted_tokens += tokens
        return Grant(n, tokens, 0.0, share, rpm, tpm)

    def report(self) -> dict:
        """What the ledger handed out, for the run folder."""
        s = self.stats
        rpm, tpm = self.effective()
        return {"granted_requests": s.granted_requests, "granted_tokens": s.granted_tokens,
                "rate_limited": s.rate_limited, "cuts": s.cuts, "holders": sorted(s.holders),
                "factor": round(self.factor, 6), "effective_rpm": round(rpm, 3), "effective_tpm": round(tpm, 3)}

    def _share(self, now: float) -> int:
        active = sum(1 for seen in self.stats.holders.values() if now - seen <= HOLDER_TTL_S)
        return max(1, self.limits.concurrency // max(1, active))

    def _absorb(self, report: Report, now: float) -> None:
        if report.token_adjust and self._tok.rate_per_s > 0:
            self._tok.level -= report.token_adjust  # negative adjust gives back over-estimated tokens
            self._tok.level = min(self._tok.level, self._tok.capacity)
        changed = False
        if report.limit_rpm and report.limit_rpm != self._learned_rpm:
            self._learned_rpm, changed = report.limit_rpm, True
        if report.limit_tpm and report.limit_tpm != self._learned_tpm:
            self._learned_tpm, changed = report.limit_tpm, True
        if report.rate_limited:
            self.stats.rate_limited += report.rate_limited
            self._paused_until = max(self._paused_until, now + (report.hint_s or 0.0))
            if now - self._last_cut >= CUT_COOLDOWN_S:
                self._ceiling = self.factor
                self.factor = max(0.05, self.factor * CUT)
                self._last_cut = now
                self.stats.cuts += 1
                changed = True
            self._req.level = min(self._req.level, 0.0)  # nothing saved up survives a 429
            self._tok.level = min(self._tok.level, 0.0)
        if changed:
            self._retune(now)

    def _recover(self, now: float) -> None:
        dt = now - self._last_seen
        self._last_seen = now
        if self.factor >= 1.0 or now - self._last_cut < CUT_COOLDOWN_S:
            return
        speed = FAST_RECOVERY_PER_S if self.factor < 0.95 * self._ceiling else PROBE_PER_S
        self.factor = min(1.0, self.factor + speed * dt)
        self._retune(now)


def _min_limit(configured: float, learned: float | None) -> float:
    if not learned:
        return configured
    return min(configured, learned) if configured else learned


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """Tokens a request may cost before it is sent: the prompt (about four characters a token) plus the
    output bound. Corrected afterwards with the ``usage`` the provider returns."""
    return sum(math.ceil(len(m.get("content") or "") / 4) for m in messages) + max_tokens


def choose_batch_size(rpm: float, tpm: float, row_tokens: float, overhead_tokens: float, max_batch: int) -> int:
    """The smallest batch size at which the request limit stops binding, up to ``max_batch``.

    Rows per minute with batches of k are ``min(rpm * k, tpm / (row_tokens + overhead_tokens / k))``.
    While the first term is the smaller, the request limit binds and the token limit has room: a bigger
    batch goes faster. Once tokens bind, bigger batches would only shave prompt overhead, so we stop.
    """
    if rpm <= 0 or max_batch <= 1:
        return 1
    for k in range(1, max_batch + 1):
        if tpm > 0 and rpm * k >= tpm / (row_tokens + overhead_tokens / k):
            return k
    return max_batch
