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

What happened is counted here too (:meth:`QuotaLedger.report`, the run folder's ``quota_stats.json``): callers
tell the ledger, with their next lease or a :meth:`~council.transport.limiter.Limiter.flush`, each request
they sent (when, and the tokens it used) and each 429, and the ledger keeps the totals and a
:class:`Timeline` of them. Grants are not counted as requests: a lease is capacity, not traffic, and an
unlimited vendor's limiter sends without asking for any.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from council.protocol.config import Limits

Clock = Callable[[], float]

CUT = 0.8  # rate after a 429, relative to the rate that provoked it
CUT_COOLDOWN_S = 1.0  # 429s within this window of a cut are one event
FAST_RECOVERY_PER_S = 0.05  # factor recovered per second while below 95% of the last ceiling
PROBE_PER_S = 0.01  # factor recovered per second above it
SAFETY = 0.99  # pace just under the limit: clocks and network jitter differ between us and the provider
HOLDER_TTL_S = 5.0
TIMELINE_BUCKETS = 600  # a timeline holds at most this many buckets; beyond, its bucket doubles


@dataclass(slots=True)
class Report:
    """What a holder tells the ledger with its next lease request."""

    token_adjust: int = 0  # actual minus estimated tokens of settled calls
    rate_limited: int = 0  # 429s seen
    hint_s: float | None = None  # the largest wait hint among them
    limit_rpm: float | None = None  # announced by the provider
    limit_tpm: float | None = None
    events: list[tuple[float, int, int, int]] = field(default_factory=list)
    """What happened since the last report: (seconds ago, requests sent, tokens they used, 429s), one entry per
    second or so of the holder's clock. Ages, not times, so the holder's and the ledger's clocks (other
    processes, other nodes) never need to agree."""

    def merge(self, other: Report) -> None:
        self.token_adjust += other.token_adjust
        self.rate_limited += other.rate_limited
        self.hint_s = _max(self.hint_s, other.hint_s)
        self.limit_rpm = other.limit_rpm or self.limit_rpm
        self.limit_tpm = other.limit_tpm or self.limit_tpm
        self.events += other.events

    def __bool__(self) -> bool:
        """Anything to tell the ledger."""
        return bool(self.token_adjust or self.rate_limited or self.limit_rpm or self.limit_tpm or self.events)


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


class Timeline:
    """Counts of requests, tokens and 429s per time bucket, from the ledger's start. Buckets are ``bucket_s``
    seconds wide, starting at 1 s; when an event would need more than ``max_buckets`` of them, the width
    doubles and neighbours merge, so the size stays bounded however long the ledger lives."""

    def __init__(self, bucket_s: float = 1.0, max_buckets: int = TIMELINE_BUCKETS) -> None:
        self.bucket_s = bucket_s
        self.max_buckets = max_buckets
        self.requests: list[int] = []
        self.tokens: list[int] = []
        self.rate_limited: list[int] = []

    def add(self, at_s: float, requests: int = 0, tokens: int = 0, rate_limited: int = 0) -> None:
        """Count what happened ``at_s`` seconds after the start (earlier than the start counts at 0)."""
        at_s = max(0.0, at_s)
        k = int(at_s // self.bucket_s)
        while k >= self.max_buckets:
            self._coarsen()
            k = int(at_s // self.bucket_s)
        if k >= len(self.requests):
            grow = k + 1 - len(self.requests)
            for column in (self.requests, self.tokens, self.rate_limited):
                column.extend([0] * grow)
        self.requests[k] += requests
        self.tokens[k] += tokens
        self.rate_limited[k] += rate_limited

    def _coarsen(self) -> None:
        self.bucket_s *= 2
        for column in (self.requests, self.tokens, self.rate_limited):
            column[:] = [sum(column[i:i + 2]) for i in range(0, len(column), 2)]

    def as_dict(self) -> dict[str, Any]:
        """``{"bucket_s", "t" (each bucket's start, seconds from the ledger's start), "requests", "tokens",
        "rate_limited"}``: every bucket up to the last one with anything in it."""
        return {"bucket_s": self.bucket_s, "t": [round(k * self.bucket_s, 6) for k in range(len(self.requests))],
                "requests": list(self.requests), "tokens": list(self.tokens), "rate_limited": list(self.rate_limited)}


@dataclass
class _Stats:
    requests: int = 0  # requests sent, as the holders report them
    tokens: int = 0  # tokens those requests used (the provider's usage; the estimate where it is unknown)
    rate_limited: int = 0
    cuts: int = 0
    leases: int = 0  # leases that granted capacity (each may cover many requests, or none sent at all)
    holders: dict[str, float] = field(default_factory=dict)
    timeline: Timeline = field(default_factory=Timeline)


class QuotaLedger:
    """The single account of one vendor. Plain Python; the Ray actor in :mod:`council.cluster.quotas` wraps it."""

    def __init__(self, limits: Limits, *, burst_s: float = 0.5, clock: Clock = time.monotonic) -> None:
        self.limits = limits
        self.burst_s = burst_s
        self._clock = clock
        now = clock()
        self._started = now
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
        if want_requests <= 0:  # a report alone (a holder's flush): nothing asked, nothing granted
            return Grant(0, 0, 0.0, share, rpm, tpm)
        if now < self._paused_until:
            return Grant(0, 0, self._paused_until - now, share, rpm, tpm)
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
        self.stats.leases += 1
        return Grant(n, tokens, 0.0, share, rpm, tpm)

    def report(self) -> dict[str, Any]:
        """What happened on this vendor's account, for the run folder (``quota_stats.json``).

        ``requests``: requests the holders sent (each HTTP attempt: a retry after a 429 or a 5xx is a request,
        and so is a repair re-ask), as they reported them; ``tokens``: what those requests used (the provider's
        ``usage.total_tokens``; the estimate where an answer was billed but unreadable or never came; 0 for a
        refused request); ``rate_limited``: 429s; ``cuts``: adaptive rate cuts. ``limits``: the configured
        limits (``rpm``, ``tpm``: ``null`` for unlimited, never 0; ``concurrency``); ``announced``: limits
        the provider announced in headers (``null``: none); ``in_force``: the rates the ledger paces at now
        (the lower of configured and announced, times the adaptive ``factor`` and the safety margin; ``null``
        unlimited). ``leases``: grants of capacity; ``holders``: who drew on the ledger; ``seconds``: since the
        ledger started. ``timeline``: :meth:`Timeline.as_dict`, summing to ``requests``, ``tokens`` and
        ``rate_limited``. What a holder has not yet reported (it reports with its next lease, and on a flush)
        is not here."""
        s = self.stats
        rpm, tpm = self.effective()
        return {
            "requests": s.requests, "tokens": s.tokens, "rate_limited": s.rate_limited, "cuts": s.cuts,
            "limits": {"rpm": _limit(self.limits.rpm), "tpm": _limit(self.limits.tpm),
                       "concurrency": self.limits.concurrency},
            "announced": {"rpm": _limit(self._learned_rpm), "tpm": _limit(self._learned_tpm)},
            "in_force": {"rpm": _limit(rpm), "tpm": _limit(tpm)},
            "factor": round(self.factor, 6), "leases": s.leases, "holders": sorted(s.holders),
            "seconds": round(self._clock() - self._started, 3), "timeline": s.timeline.as_dict(),
        }

    def _share(self, now: float) -> int:
        active = sum(1 for seen in self.stats.holders.values() if now - seen <= HOLDER_TTL_S)
        return max(1, self.limits.concurrency // max(1, active))

    def _absorb(self, report: Report, now: float) -> None:
        counted_429 = 0
        for age_s, requests, tokens, limited in report.events:
            self.stats.timeline.add(now - age_s - self._started, requests, tokens, limited)
            self.stats.requests += requests
            self.stats.tokens += tokens
            counted_429 += limited
        if report.rate_limited > counted_429:  # 429s reported without their time: counted now
            self.stats.timeline.add(now - self._started, rate_limited=report.rate_limited - counted_429)
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


def _limit(value: float | None) -> float | None:
    """A limit for a report: ``None`` when unlimited (0) or unknown."""
    return round(value, 3) if value else None


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
