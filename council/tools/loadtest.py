"""``council loadtest``: find what request rate (and token rate) an OpenAI-compatible endpoint sustains.

The load is open-loop: each step sends requests on an evenly spaced schedule at a target rate that grows
geometrically (``start_rpm * growth**i``), each request its own task, whatever the endpoint answers. There
are no retries: a 429 is a data point, not a failure to hide. A request that cannot be sent because
``max_concurrency`` requests are already in flight is counted as *shed* (the load generator, not the
endpoint, was the bottleneck for it).

Per step the report gives the target rate, what was sent, shed, answered (ok / 429 / other errors), the
rate of ok answers (``achieved_rpm``) and of their tokens (``achieved_tpm``), the 429 share and the p50/p95
latency of ok answers.

Summary numbers:

- ``peak_rpm`` / ``peak_tpm``: the highest ``achieved_*`` of any step.
- ``max_clean_rpm``: the highest ``achieved_rpm`` among steps with at most 1% of 429s.
- ``sustainable_rpm`` / ``sustainable_tpm``: the plateau the account really delivers. A quota enforced by a
  token bucket lets a short step run above the limit on its burst allowance (a 3 s step on a bucket that
  holds one second of quota can show +33%), so a step's rate over the whole step overstates the quota.
  Once a step has had its first 429 the bucket is empty, and from then on every ok answer was paid for by
  refill: the ok rate from the first 429 to the end of the step (``plateau_rpm``, given when that window
  is at least a quarter of the step and holds at least 20 ok answers) is the refill rate. The sustainable
  rate is the highest such plateau; if 429s came too late in every step for a plateau, it is the ok rate
  over all those post-429 windows pooled; if there was no 429 at all, it is the highest ``achieved_rpm``
  (a lower bound: the endpoint was never pushed to its limit, ``saturated`` is false).

A step whose load generator stalled (its machine was busy: it woke more than ``STALL_S``, and more than three
send intervals, after a request was due) reports the seconds it lost (``stalled_s``). While nothing was sent
the bucket refilled, past what it holds if the stall was longer than its burst allowance, and what
overflowed was never offered to anyone: that step's rates understate the endpoint (a 1.2 s stall in a
2.5 s step, on a bucket that holds 1 s, read its plateau 10% low). The report says so; measure again.

The run ends after the last step, or early once two consecutive steps had more than half of their answers
rejected with 429. Total time is bounded by ``steps * step_s + drain_s``: requests still unanswered then
are cancelled and counted as errors.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlparse

import aiohttp
import orjson

from council.core.vendors import resolve_vendor
from council.transport.shape import shape_for

__all__ = ["LoadtestReport", "StepResult", "add_parser", "loadtest", "run"]

CLEAN_SHARE = 0.01
"""A step with at most this share of 429s counts as clean."""
STOP_SHARE = 0.5
"""Two consecutive steps with more than this share of 429s end the ramp."""
_MIN_PLATEAU_OK = 20
"""A plateau needs at least this many ok answers after the first 429 ..."""
_MIN_PLATEAU_FRACTION = 0.25
"""... over at least this fraction of the step."""
STALL_S = 0.25
"""Waking this late (and more than three send intervals late) to send what was due is the load generator stalling."""
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_LOCAL_KEY = "loadtest"


# ---- results -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class StepResult:
    index: int
    target_rpm: float
    duration_s: float
    sent: int = 0
    shed: int = 0
    ok: int = 0
    rate_limited: int = 0
    errors: int = 0
    achieved_rpm: float = 0.0
    achieved_tpm: float = 0.0
    share_429: float = 0.0
    p50_ms: float | None = None
    p95_ms: float | None = None
    plateau_rpm: float | None = None
    """ok answers per minute from the step's first 429 to its end (None: the step never saturated)."""
    plateau_tpm: float | None = None
    stalled_s: float = 0.0
    """Seconds in which the load generator sent nothing while requests were due (see ``STALL_S``)."""
    error_kinds: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class LoadtestReport:
    base_url: str
    model: str
    start_rpm: float
    growth: float
    step_s: float
    max_tokens: int
    prompt_chars: int
    max_concurrency: int
    steps: list[StepResult] = field(default_factory=list)
    sustainable_rpm: float = 0.0
    sustainable_tpm: float = 0.0
    max_clean_rpm: float | None = None
    peak_rpm: float = 0.0
    peak_tpm: float = 0.0
    saturated: bool = False
    stopped_early: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- measuring -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    """One request: when it left, how it ended (``ok`` | ``429`` | ``error``), latency and tokens."""

    sent_at: float
    outcome: str = "pending"
    kind: str = ""
    latency_s: float = 0.0
    tokens: int = 0


@dataclass(slots=True)
class _Step:
    index: int
    target_rpm: float
    started: float
    ended: float = 0.0
    shed: int = 0
    stalled: float = 0.0
    calls: list[_Call] = field(default_factory=list)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated percentile of an already sorted, non-empty list."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _summarise(step: _Step) -> StepResult:
    duration = max(step.ended - step.started, 1e-9)
    res = StepResult(index=step.index, target_rpm=round(step.target_rpm, 3), duration_s=round(duration, 3),
                     sent=len(step.calls), shed=step.shed, stalled_s=round(step.stalled, 3))
    latencies: list[float] = []
    tokens = 0
    first_429: float | None = None
    for call in step.calls:
        if call.outcome == "ok":
            res.ok += 1
            tokens += call.tokens
            latencies.append(call.latency_s * 1000.0)
        elif call.outcome == "429":
            res.rate_limited += 1
            if first_429 is None or call.sent_at < first_429:
                first_429 = call.sent_at
        else:
            res.errors += 1
            res.error_kinds[call.kind or "unfinished"] = res.error_kinds.get(call.kind or "unfinished", 0) + 1
    answered = res.ok + res.rate_limited + res.errors
    res.achieved_rpm = round(res.ok * 60.0 / duration, 3)
    res.achieved_tpm = round(tokens * 60.0 / duration, 3)
    res.share_429 = round(res.rate_limited / answered, 6) if answered else 0.0
    if latencies:
        latencies.sort()
        res.p50_ms = round(_percentile(latencies, 0.50), 3)
        res.p95_ms = round(_percentile(latencies, 0.95), 3)
    if first_429 is not None:
        window = step.ended - first_429
        after = [c for c in step.calls if c.sent_at >= first_429 and c.outcome == "ok"]
        if window >= _MIN_PLATEAU_FRACTION * duration and len(after) >= _MIN_PLATEAU_OK:
            res.plateau_rpm = round(len(after) * 60.0 / window, 3)
            res.plateau_tpm = round(sum(c.tokens for c in after) * 60.0 / window, 3)
    return res


def _prompt(n: int, chars: int) -> str:
    """A neutral prompt of exactly ``chars`` characters (at least the request number), unique per request."""
    head = f"[{n}] Reply with the word ok. "
    if chars <= len(head):
        return head[: max(chars, 1)]
    filler = "lorem ipsum dolor sit amet "
    body = filler * (1 + (chars - len(head)) // len(filler))
    return head + body[: chars - len(head)]


def _api_key(base_url: str, api_key_env: str | None) -> str:
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        return key
    if urlparse(base_url).hostname in _LOCAL_HOSTS:
        return _LOCAL_KEY  # a local server (the embedded provider) takes any bearer token
    from council.core.errors import ConfigError

    raise ConfigError(f"environment variable {api_key_env} is not set (API key for {base_url})")


LOADTEST_THINKING = 128  # reasoning tokens a request may spend: the least Gemini 2.5 Pro takes


async def loadtest(
    base_url: str,
    model: str,
    *,
    api_key: str,
    start_rpm: float,
    growth: float,
    steps: int,
    step_s: float,
    max_tokens: int,
    prompt_chars: int,
    max_concurrency: int,
    drain_s: float = 5.0,
) -> LoadtestReport:
    """Ramp the request rate against ``base_url`` (an OpenAI-style base URL ending in ``/v1``) and measure."""
    if start_rpm <= 0 or growth <= 0 or steps < 1 or step_s <= 0 or max_concurrency < 1 or max_tokens < 1:
        raise ValueError("start_rpm, growth, step_s > 0; steps, max_concurrency, max_tokens >= 1")
    url = base_url.rstrip("/") + "/chat/completions"
    # the request fitted to the model (council.transport.shape), reasoning at its least: a quota is what is measured
    fields = {"model": model, **shape_for(model, resolve_vendor(model) or "", temperature=0.0, reasoning="off",
                                          effort="minimal", thinking_budget=LOADTEST_THINKING).fields(max_tokens)}
    report = LoadtestReport(
        base_url=base_url, model=model, start_rpm=start_rpm, growth=growth, step_s=step_s,
        max_tokens=max_tokens, prompt_chars=prompt_chars, max_concurrency=max_concurrency,
    )
    clock = time.perf_counter
    begun = clock()
    deadline = begun + steps * step_s + drain_s
    in_flight: set[asyncio.Task[None]] = set()
    counter = 0
    taken: list[_Step] = []

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_concurrency, ttl_dns_cache=300),
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10.0),
    )

    async def one(call: _Call, payload: bytes) -> None:
        try:
            async with session.post(url, data=payload) as resp:
                raw = await resp.read()
                done = clock()
                if resp.status == 200:
                    try:
                        usage = orjson.loads(raw).get("usage") or {}
                        call.tokens = int(usage.get("total_tokens") or 0)
                        call.outcome = "ok"
                    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
                        call.outcome, call.kind = "error", "malformed body"
                elif resp.status == 429:
                    call.outcome = "429"
                else:
                    call.outcome, call.kind = "error", f"HTTP {resp.status}"
                call.latency_s = done - call.sent_at
        except asyncio.CancelledError:
            call.outcome, call.kind = "error", "unfinished"
            raise
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            call.outcome, call.kind = "error", type(exc).__name__

    try:
        for i in range(steps):
            target = start_rpm * growth**i
            interval = 60.0 / target
            n = max(1, round(step_s / interval))
            step = _Step(i, target, clock())
            taken.append(step)
            k = 0
            end = step.started + step_s
            stall = max(STALL_S, 3 * interval)
            while k < n:
                now = clock()
                due = step.started + k * interval
                if due > now:
                    await asyncio.sleep(due - now)
                    continue
                if (late := min(now, end) - due) > stall:
                    step.stalled += late
                if now >= end:  # the loop fell behind its own schedule: what was not sent in time is shed
                    step.shed += n - k
                    break
                # everything already due goes now (the loop may have woken late)
                while k < n and step.started + k * interval <= now:
                    k += 1
                    if len(in_flight) >= max_concurrency:
                        step.shed += 1
                        continue
                    counter += 1
                    payload = orjson.dumps({
                        **fields, "messages": [{"role": "user", "content": _prompt(counter, prompt_chars)}],
                    })
                    call = _Call(clock())
                    step.calls.append(call)
                    task = asyncio.create_task(one(call, payload))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
            if end > clock():
                await asyncio.sleep(end - clock())
            step.ended = end  # the step's window is its schedule: nothing is sent after it, a late wake-up or not
            if i >= 1 and _share_so_far(taken[-1]) > STOP_SHARE and _share_so_far(taken[-2]) > STOP_SHARE:
                report.stopped_early = i < steps - 1
                break
        remaining = deadline - clock()
        if in_flight and remaining > 0:
            await asyncio.wait(set(in_flight), timeout=remaining)
    finally:
        for task in list(in_flight):
            task.cancel()
        if in_flight:
            await asyncio.gather(*in_flight, return_exceptions=True)
        await session.close()

    report.steps = [_summarise(s) for s in taken]
    report.seconds = round(clock() - begun, 3)
    _conclude(report, _pooled(taken))
    return report


def _pooled(steps: list[_Step]) -> tuple[float, float] | None:
    """ok answers and tokens per minute over every step's window from its first 429 to its end, pooled."""
    window = ok = tokens = 0.0
    for step in steps:
        first = min((c.sent_at for c in step.calls if c.outcome == "429"), default=None)
        if first is None:
            continue
        window += step.ended - first
        for c in step.calls:
            if c.sent_at >= first and c.outcome == "ok":
                ok, tokens = ok + 1, tokens + c.tokens
    if window <= 0:
        return None
    return round(ok * 60.0 / window, 3), round(tokens * 60.0 / window, 3)


def _share_so_far(step: _Step) -> float:
    answered = [c for c in step.calls if c.outcome != "pending"]
    return sum(c.outcome == "429" for c in answered) / len(answered) if answered else 0.0


def _conclude(report: LoadtestReport, pooled: tuple[float, float] | None) -> None:
    steps = report.steps
    report.peak_rpm = max((s.achieved_rpm for s in steps), default=0.0)
    report.peak_tpm = max((s.achieved_tpm for s in steps), default=0.0)
    clean = [s.achieved_rpm for s in steps if s.share_429 <= CLEAN_SHARE and s.ok]
    report.max_clean_rpm = max(clean) if clean else None
    plateaus = [s for s in steps if s.plateau_rpm is not None]
    report.saturated = bool(plateaus) or pooled is not None
    if plateaus:
        report.sustainable_rpm = max(s.plateau_rpm or 0.0 for s in plateaus)
        report.sustainable_tpm = max(s.plateau_tpm or 0.0 for s in plateaus)
    elif pooled is not None:  # 429s, but no step long enough after its first one: pool those windows
        report.sustainable_rpm, report.sustainable_tpm = pooled
    else:
        report.sustainable_rpm, report.sustainable_tpm = report.peak_rpm, report.peak_tpm


# ---- command line --------------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> None:
    """Add the ``loadtest`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "loadtest", help="find the request and token rate an OpenAI-compatible endpoint really sustains",
        description="Open-loop ramp of chat-completion requests (no retries); reports per-step rates, 429 share "
                    "and latency, and the sustainable rate.",
    )
    p.add_argument("--provider-url", help="OpenAI-compatible base URL ending in /v1 (default: start the embedded "
                   "provider in this process)")
    p.add_argument("--model", default="openai/gpt-5", help="model id to call (default: openai/gpt-5)")
    p.add_argument("--api-key-env", default="COUNCIL_API_KEY",
                   help="environment variable holding the API key (default: COUNCIL_API_KEY; optional for local URLs)")
    p.add_argument("--start-rpm", type=float, default=600.0, help="target requests per minute of the first step")
    p.add_argument("--growth", type=float, default=1.5, help="factor between consecutive steps' target rates")
    p.add_argument("--steps", type=int, default=6, help="number of steps (default 6)")
    p.add_argument("--step-s", type=float, default=10.0, help="seconds per step (default 10)")
    p.add_argument("--max-tokens", type=int, default=64, help="max_tokens of each request (default 64)")
    p.add_argument("--prompt-chars", type=int, default=800, help="characters of each prompt (default 800)")
    p.add_argument("--max-concurrency", type=int, default=256,
                   help="requests in flight at most; a request over the cap is shed (default 256)")
    p.add_argument("--sim-rpm", type=int, default=3000,
                   help="embedded provider only: requests-per-minute quota of the model's vendor (default 3000)")
    p.add_argument("--sim-tpm", type=int, default=0,
                   help="embedded provider only: tokens-per-minute quota of the model's vendor (default 0 = unlimited)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object instead of tables")
    p.set_defaults(func=run)


async def _run_async(args: argparse.Namespace) -> LoadtestReport:
    sim = None
    base_url = args.provider_url
    if base_url is None:
        from council.core.vendors import vendor_of
        from council.sim import SimConfig, VendorBehaviour, start_sim

        behaviour = VendorBehaviour(rpm=args.sim_rpm, tpm=args.sim_tpm, latency_ms=0.0, latency_jitter_ms=0.0,
                                    malformed_rate=0.0)
        sim = await start_sim(SimConfig(vendors={vendor_of(args.model): behaviour}))
        base_url = sim.url
    try:
        return await loadtest(
            base_url, args.model, api_key=_api_key(base_url, args.api_key_env), start_rpm=args.start_rpm,
            growth=args.growth, steps=args.steps, step_s=args.step_s, max_tokens=args.max_tokens,
            prompt_chars=args.prompt_chars, max_concurrency=args.max_concurrency,
        )
    finally:
        if sim is not None:
            await sim.close()


def run(args: argparse.Namespace) -> int:
    """Execute ``council loadtest``; print one table (or, with ``--json``, one JSON object)."""
    from council.core.errors import CouncilError

    try:
        report = asyncio.run(_run_async(args))
    except (ValueError, CouncilError) as exc:
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return 2
    if args.json:
        print(orjson.dumps(report.as_dict()).decode(), flush=True)
    else:
        print_report(report)
    return 0


def print_report(report: LoadtestReport) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console(width=None if sys.stdout.isatty() else 150)
    host = urlparse(report.base_url).netloc or report.base_url
    table = Table(title=f"loadtest {report.model} @ {host}  ({report.seconds:.1f} s)")
    for col in ("step", "target rpm", "sent", "shed", "ok", "429", "errors", "rpm", "tpm", "429 share",
                "plateau rpm", "p50 ms", "p95 ms"):
        table.add_column(col, justify="right")
    for s in report.steps:
        table.add_row(
            str(s.index + 1), f"{s.target_rpm:,.0f}", str(s.sent), str(s.shed), str(s.ok), str(s.rate_limited),
            str(s.errors), f"{s.achieved_rpm:,.0f}", f"{s.achieved_tpm:,.0f}", f"{100 * s.share_429:.1f}%",
            "-" if s.plateau_rpm is None else f"{s.plateau_rpm:,.0f}", _ms(s.p50_ms), _ms(s.p95_ms),
        )
    out.print(table)
    clean = "-" if report.max_clean_rpm is None else f"{report.max_clean_rpm:,.0f} rpm"
    how = "plateau after the first 429" if report.saturated else "never saturated: a lower bound"
    out.print(f"sustainable: [bold]{report.sustainable_rpm:,.0f} rpm[/bold], {report.sustainable_tpm:,.0f} tpm ({how})")
    out.print(f"max clean (429 share <= {100 * CLEAN_SHARE:.0f}%): {clean}; peak step: {report.peak_rpm:,.0f} rpm"
              + ("; stopped early (two steps over 50% 429s)" if report.stopped_early else ""))
    stalled = [f"step {s.index + 1} for {s.stalled_s:.1f} s" for s in report.steps if s.stalled_s]
    if stalled:
        out.print(f"[yellow]the load generator stalled[/yellow] ({', '.join(stalled)}; its machine was busy): "
                  "those steps' rates understate the endpoint; measure again")


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"
