"""``quota_stats.json`` says what happened on each vendor's account: the requests really sent, the tokens they
used, the 429s, the limits in force (``null``: unlimited) and a bounded timeline that sums to the totals.

What counts as a request: every HTTP request a judge (or elicitor) sent, each attempt on its own (a retry after a
429, a 5xx or a timeout is another request, and so is a repair re-ask). The archive shows them: a vote's record
carries ``attempts``, the HTTP requests its call made, retries and the repair re-ask included (``raw_outputs`` holds
only the answers that came back, so it misses the 429s and errors), and votes that shared one batched request share
its ``request_id`` and its ``attempts``. So a vendor's requests are the sum, over the distinct ``request_id`` of its
records in ``round1``, ``round2``, ``audit`` and ``shadow``, of their ``attempts``. The tolerance is zero: on a run
that finishes (no call abandoned at a stop, no failed call whose records the archive splits) the two must agree
exactly, and agree with the count the embedded provider kept on its side.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import orjson
import pytest

import bank
from council.protocol.config import CouncilConfig, Limits
from council.run.runner import RunHooks, RunRequest, run_council
from council.sim import SimConfig
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import TIMELINE_BUCKETS, QuotaLedger, Report, Timeline
from tests.council._provider import quiet
from tests.council._ray import actors
from tests.council._roster import SMALL_ROSTER
from tests.council.test_end_to_end import lines, subset


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# -- the timeline ---------------------------------------------------------------------------------------------


def test_timeline_buckets_double_and_keep_every_count():
    timeline = Timeline()
    for second in range(0, 5000, 3):
        timeline.add(second + 0.5, requests=1, tokens=10, rate_limited=second % 2)
    out = timeline.as_dict()
    assert out["bucket_s"] == 16.0 and len(out["t"]) <= TIMELINE_BUCKETS  # 5000 s: 1 -> 2 -> 4 -> 8 -> 16
    assert sum(out["requests"]) == len(range(0, 5000, 3)) and sum(out["tokens"]) == 10 * sum(out["requests"])
    assert sum(out["rate_limited"]) == sum(s % 2 for s in range(0, 5000, 3))
    assert out["t"] == [k * 16.0 for k in range(len(out["t"]))]
    assert len(out["t"]) == len(out["requests"]) == len(out["tokens"]) == len(out["rate_limited"])
    assert out["requests"][0] == len(range(0, 16, 3))  # each event in the bucket of its time


def test_timeline_of_a_long_lived_ledger_stays_bounded():
    timeline = Timeline()
    for at in (0.0, 10.0, 86_400.0 * 30):  # a service's ledger, a month on
        timeline.add(at, requests=1)
    out = timeline.as_dict()
    assert len(out["t"]) <= TIMELINE_BUCKETS and sum(out["requests"]) == 3


# -- the ledger and the limiter ---------------------------------------------------------------------------------


def test_an_unlimited_vendor_reports_null_limits_and_counts_what_was_sent():
    clock = FakeClock()
    ledger = QuotaLedger(Limits(), clock=clock)
    report = ledger.report()
    assert report["limits"] == {"rpm": None, "tpm": None, "concurrency": 32}
    assert report["in_force"] == {"rpm": None, "tpm": None} and report["announced"] == {"rpm": None, "tpm": None}
    assert report["requests"] == report["tokens"] == report["rate_limited"] == 0
    assert report["timeline"] == {"bucket_s": 1.0, "t": [], "requests": [], "tokens": [], "rate_limited": []}
    assert ledger.lease("h", 0, 0, Report(events=[(0.0, 3, 300, 0)])).requests == 0  # a report alone grants nothing
    assert ledger.report()["requests"] == 3 and ledger.report()["leases"] == 0


def test_a_limited_vendor_reports_its_limits_as_numbers():
    ledger = QuotaLedger(Limits(rpm=600, tpm=90_000, concurrency=8), clock=FakeClock())
    ledger.lease("h", 1, 0, Report(limit_rpm=500))
    report = ledger.report()
    assert report["limits"] == {"rpm": 600.0, "tpm": 90_000.0, "concurrency": 8}
    assert report["announced"] == {"rpm": 500.0, "tpm": None}
    assert report["in_force"]["rpm"] == pytest.approx(500 * 0.99) and report["in_force"]["tpm"] == pytest.approx(89_100)


async def test_events_land_in_the_bucket_of_their_time_whatever_the_clocks():
    ledger_clock, limiter_clock = FakeClock(1000.0), FakeClock(52.0)  # another process: another clock
    ledger = QuotaLedger(Limits(), clock=ledger_clock)
    limiter = Limiter(LocalLedger(ledger), "h", clock=limiter_clock)
    for dt in (3.2, 3.4, 7.9):  # sent 3.2, 3.4 and 7.9 s after the ledger started
        limiter.sent(limiter_clock.t + dt, 100)
    limiter_clock.t += 7.9
    ledger_clock.t += 7.9
    limiter.rate_limited(1.0)
    ledger_clock.t += 5.0  # the report arrives 5 s later: the events keep their time
    limiter_clock.t += 5.0
    await limiter.flush()
    report = ledger.report()
    assert report["requests"] == 3 and report["tokens"] == 300 and report["rate_limited"] == 1
    timeline = report["timeline"]
    assert timeline["requests"][3] == 2 and timeline["requests"][7] == 1 and timeline["rate_limited"][7] == 1
    assert sum(timeline["requests"]) == 3 and timeline["t"][7] == 7.0
    await limiter.flush()  # nothing new: nothing told, nothing counted twice
    assert ledger.report()["requests"] == 3 and ledger.report()["holders"] == ["h"]


async def test_a_429_reported_without_its_time_is_still_on_the_timeline():
    ledger = QuotaLedger(Limits(rpm=600), clock=FakeClock())
    ledger.lease("h", 1, 0, Report(rate_limited=2, hint_s=0.5))
    report = ledger.report()
    assert report["rate_limited"] == 2 == sum(report["timeline"]["rate_limited"]) and report["cuts"] == 1


# -- a run ----------------------------------------------------------------------------------------------------------


def archived_requests(run_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Per member: the HTTP requests its records show (the sum of ``attempts`` over distinct ``request_id``) and
    the tokens they used (the sum of every record's ``usage``: a batched request's votes share it exactly)."""
    attempts: dict[str, dict[str, int]] = defaultdict(dict)
    tokens: dict[str, int] = defaultdict(int)
    for name in ("round1.jsonl", "round2.jsonl", "audit.jsonl", "shadow.jsonl"):
        if (run_dir / name).exists():
            for r in lines(run_dir / name):
                attempts[r["member"]][r["request_id"]] = r["attempts"]
                tokens[r["member"]] += r["usage"]["total_tokens"]
    return {m: sum(a.values()) for m, a in attempts.items()}, dict(tokens)


def check_quota_stats(run_dir: Path, config: CouncilConfig) -> dict[str, dict]:
    quota = orjson.loads((run_dir / "quota_stats.json").read_bytes())
    provider = orjson.loads((run_dir / "provider_stats.json").read_bytes())["vendors"]
    requests, tokens = archived_requests(run_dir)
    assert set(quota) == set(config.roster_vendors)
    for vendor, q in quota.items():
        assert q["requests"] == requests[vendor] == provider[vendor]["requests"], vendor
        assert q["tokens"] == tokens[vendor], vendor
        assert q["rate_limited"] == provider[vendor]["rate_limited"], vendor
        timeline = q["timeline"]
        assert sum(timeline["requests"]) == q["requests"] and sum(timeline["tokens"]) == q["tokens"]
        assert sum(timeline["rate_limited"]) == q["rate_limited"] and len(timeline["t"]) <= TIMELINE_BUCKETS
        assert timeline["bucket_s"] >= 1.0 and timeline["t"] == [k * timeline["bucket_s"] for k in range(len(timeline["t"]))]
        settings = config.settings(vendor)
        assert q["limits"] == {"rpm": settings.rpm or None, "tpm": settings.tpm or None,
                               "concurrency": settings.concurrency}
    return quota


def planted_world(tmp_path: Path) -> Path:
    """The planted provider, quick, with openai's account limited to 1200 requests a minute (429s for a council
    that does not know it). Its bucket holds one request (a 50 ms burst), so any two of openai's requests sent
    within 50 ms of each other meet a 429, however a run spreads its rows over shards: with 1 s bursts (20
    requests), a two-shard run sent openai's few requests too thinly to meet one, now and then."""
    sim = quiet(SimConfig.planted(1), latency_ms=1.0)
    vendors = {**sim.vendors, "openai": sim.vendors["openai"].model_copy(update={"rpm": 1200})}
    path = tmp_path / "sim.json"
    sim = sim.model_copy(update={"vendors": vendors, "burst_s": 0.05})
    path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    return path


@pytest.mark.parametrize("backend, shards", [("local", 0), ("ray", 0), ("ray", 2)])
async def test_quota_stats_count_every_request_the_run_sent(tmp_path, backend, shards, request):
    """Local ledgers; with Ray, each judge actor's own ledger (the only run on the instance: the command line's),
    no quota actor started; and the quota actor drawn on by the judges of shard workers."""
    if backend == "ray":
        request.getfixturevalue("ray_session")
        before = len(actors("QuotaActor", alive=False))
    # google's account is limited (its limiter leases; its judge batches, and a batch audit re-asks some alone),
    # openai's is not in the config but is at the provider (429s, retried), the rest are unlimited. At 1200 a
    # minute google's bucket holds 10 requests (0.5 s): its request limit binds within round one's 30 votes, so
    # its judge batches whatever the timing (at 6000, a bucket of 50, only votes that happened to queue together
    # were batched: none, once, on a loaded machine).
    config = CouncilConfig(roster=SMALL_ROSTER, vendors={"google": {"rpm": 1200}}, batch_audit=0.3, shadow_self=True)
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 6),
                                          runs_dir=tmp_path / "runs", run_id="q", backend=backend, shards=shards,
                                          sim_config=planted_world(tmp_path), config=config),
                               hooks=RunHooks(sole_ray_run=True))
    assert result.complete
    if backend == "ray":
        assert len(actors("QuotaActor", alive=False)) - before == (1 if shards else 0)
    quota = check_quota_stats(result.run_dir, config)
    assert quota["openai"]["rate_limited"] > 0 and quota["openai"]["limits"]["rpm"] is None
    assert quota["openai"]["announced"]["rpm"] == 1200.0  # learned from the provider's headers
    assert quota["google"]["limits"]["rpm"] == 1200.0 and quota["google"]["leases"] > 0
    assert any(r["batch_size"] > 1 for r in lines(result.run_dir / "round1.jsonl") if r["member"] == "google")
    assert (result.run_dir / "audit.jsonl").exists() and (result.run_dir / "shadow.jsonl").exists()
    assert quota["anthropic"]["limits"] == {"rpm": None, "tpm": None, "concurrency": 32}


async def test_repair_reasks_are_requests(tmp_path):
    sim = quiet(SimConfig.planted(2), latency_ms=0.0, malformed_rate=0.3)
    path = tmp_path / "sim.json"
    path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    config = CouncilConfig()
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 4),
                                          runs_dir=tmp_path / "runs", run_id="m", backend="local", sim_config=path,
                                          config=config))
    records = lines(result.run_dir / "round1.jsonl") + lines(result.run_dir / "round2.jsonl")
    assert any(len(r["raw_outputs"]) > 1 for r in records)  # the case was there
    quota = check_quota_stats(result.run_dir, config)
    assert sum(q["requests"] for q in quota.values()) == sum(r["attempts"] for r in records)  # one vote per request


async def test_failed_calls_and_their_retries_are_requests(tmp_path):
    """5xx answers, retried until the attempts run out: every attempt is a request, and a failed batched request's
    votes share its id like any request's. Which rows share a batch depends on timing, so the rate is high enough
    that some batched request fails twice however few batches a loaded machine makes (a request fails both of
    its attempts with p = 0.81: none of 3 batched requests failing is ~0.007, none of about 12 ~2e-9; at 0.7, a
    suite whose machine was loaded by a stray process once saw none)."""
    sim = quiet(SimConfig.planted(3), latency_ms=0.0, error_rate=0.9)
    path = tmp_path / "sim.json"
    path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    config = CouncilConfig(vendors={"google": {"rpm": 6000}}, retry={"max_attempts": 2, "base_delay_s": 0.01})
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 6),
                                          runs_dir=tmp_path / "runs", run_id="f", backend="local", sim_config=path,
                                          config=config))
    records = lines(result.run_dir / "round1.jsonl") + lines(result.run_dir / "round2.jsonl")
    failed = [r for r in records if r["parse_status"] == "error"]
    assert failed and any(r["member"] == "google" and r["batch_size"] > 1 for r in failed)  # the cases were there
    for request_id in {r["request_id"] for r in failed if r["batch_size"] > 1}:
        group = [r for r in records if r["request_id"] == request_id]
        assert len(group) == group[0]["batch_size"] and len({r["attempts"] for r in group}) == 1
    quota = check_quota_stats(result.run_dir, config)
    assert sum(q["requests"] for q in quota.values()) > len({r["request_id"] for r in records})  # retries counted


async def test_flush_is_safe_while_requests_go(tmp_path):
    ledger = QuotaLedger(Limits(rpm=60_000))
    limiter = Limiter(LocalLedger(ledger), "h", lease_s=0.05)

    async def send(k: int) -> None:
        await limiter.admit(10)
        limiter.sent(limiter.now(), 10)

    async def flusher() -> None:
        for _ in range(20):
            await limiter.flush()
            await asyncio.sleep(0.001)

    await asyncio.gather(flusher(), *(send(k) for k in range(300)))
    await limiter.flush()
    assert ledger.report()["requests"] == 300 and ledger.report()["tokens"] == 3000
