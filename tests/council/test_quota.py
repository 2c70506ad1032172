"""The quota ledger and the limiter, on a fake clock where possible."""

from __future__ import annotations

import asyncio
import time

import pytest

from council.protocol.config import Limits
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import CUT, SAFETY, QuotaLedger, Report, choose_batch_size, estimate_tokens


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def drain(ledger: QuotaLedger, clock: FakeClock, seconds: float, step: float = 0.05, tokens: int = 0) -> int:
    """Ask for one request every ``step`` seconds (plus ``tokens`` each) and count the grants."""
    granted = 0
    end = clock.t + seconds
    while clock.t < end:
        granted += ledger.lease("h", 50, 50 * tokens).requests
        clock.t += step
    return granted


def test_requests_are_paced_at_the_limit():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(rpm=600), burst_s=0.5, clock=clock)
    granted = drain(ledger, clock, 60.0)
    assert granted == pytest.approx(600 * SAFETY + 5, abs=3)  # a minute's worth plus the initial burst


def test_tokens_bind_when_they_run_out_first():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(rpm=6000, tpm=60_000), burst_s=0.5, clock=clock)
    granted = drain(ledger, clock, 60.0, tokens=1000)  # 1000 tokens a request: 60 requests a minute
    assert granted == pytest.approx(60 * SAFETY, abs=2)


def test_usage_corrections_give_back_over_estimated_tokens():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(tpm=60_000), burst_s=1.0, clock=clock)
    assert ledger.lease("h", 1, 500).requests == 1  # bucket: 980 tokens, 480 left
    assert ledger.lease("h", 1, 500).requests == 0
    # the call really used 100 of its 500 tokens: 400 come back, and the next request fits
    assert ledger.lease("h", 1, 500, Report(token_adjust=-400)).requests == 1
    assert ledger.lease("h", 1, 500).requests == 0


def test_a_429_pauses_cuts_and_then_recovers():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(rpm=600), clock=clock)
    grant = ledger.lease("h", 1, 0, Report(rate_limited=3, hint_s=2.0))
    assert grant.requests == 0 and grant.wait_s == pytest.approx(2.0)
    assert ledger.factor == pytest.approx(CUT)  # three 429s at once are one cut
    ledger.lease("h", 1, 0, Report(rate_limited=1))  # still within the cool-down: no second cut
    assert ledger.factor == pytest.approx(CUT)
    clock.t += 1.9  # still paused: nothing granted, and told how long is left
    grant = ledger.lease("h", 10, 0)
    assert grant.requests == 0 and grant.wait_s == pytest.approx(0.1)
    clock.t += 0.1  # the pause is over: one burst (0.5 s) at the rate in force, the cut one recovering at
    # FAST_RECOVERY_PER_S for up to 2 s: 600/min * 0.85..0.9 * SAFETY * 0.5 s = 4.2..4.5 requests, so 4
    grant = ledger.lease("h", 10, 0)
    assert grant.requests == 4 and grant.wait_s == 0.0
    assert ledger.lease("h", 10, 0).requests == 0  # and the burst is spent
    for _ in range(200):  # recovery is gradual, not a jump
        clock.t += 0.1
        ledger.lease("h", 0, 0)
    assert ledger.factor == pytest.approx(1.0)


def test_announced_limits_are_believed_when_lower():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(rpm=6000), clock=clock)
    ledger.lease("h", 1, 0, Report(limit_rpm=600))
    assert ledger.effective()[0] == pytest.approx(600 * SAFETY)
    ledger.lease("h", 1, 0, Report(limit_rpm=60_000))  # a higher announcement does not lift our own limit
    assert ledger.effective()[0] == pytest.approx(6000 * SAFETY)


def test_concurrency_is_shared_among_active_holders():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(concurrency=10), clock=clock)
    assert ledger.lease("judge", 1, 0).concurrency == 10
    assert ledger.lease("elicitor", 1, 0).concurrency == 5
    clock.t += 10  # the judge went quiet
    assert ledger.lease("elicitor", 1, 0).concurrency == 10


def test_batch_size_grows_only_when_requests_bind():
    assert choose_batch_size(0, 0, 500, 300, 8) == 1  # no limit: no batching
    assert choose_batch_size(600, 0, 500, 300, 8) == 8  # request-bound with unlimited tokens
    assert choose_batch_size(600, 10_000, 500, 300, 8) == 1  # tokens bind already at k=1
    assert choose_batch_size(600, 1_200_000, 500, 300, 16) == 4  # 600 * 4 >= 1.2M / 575: tokens bind from 4
    assert choose_batch_size(600, 10_000_000, 500, 300, 4) == 4  # capped


def test_estimate_tokens():
    msgs = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 41}]
    assert estimate_tokens(msgs, 100) == 10 + 11 + 100


async def test_two_holders_share_one_ledger():
    """A vendor's judge and elicitor in one process: two limiters on one ledger never exceed its rate."""
    ledger = QuotaLedger(Limits(rpm=1200), burst_s=0.5)
    a = Limiter(LocalLedger(ledger), "judge", lease_s=0.1)
    b = Limiter(LocalLedger(ledger), "elicitor", lease_s=0.1)
    counts = {"judge": 0, "elicitor": 0}
    start = time.monotonic()
    stop = start + 2.0

    async def spend(lim: Limiter) -> None:
        while time.monotonic() < stop:
            await lim.admit(10)
            counts[lim.holder] += 1

    await asyncio.gather(*(spend(a) for _ in range(8)), *(spend(b) for _ in range(8)))
    elapsed = time.monotonic() - start  # callers already waiting at the deadline finish after it
    total = sum(counts.values())
    assert total <= 1200 / 60 * elapsed * SAFETY + 10 + 2  # the limit over the elapsed time, plus the burst
    assert total >= 1200 / 60 * 2.0 * 0.8
    assert min(counts.values()) > 0.25 * total  # both get a share
