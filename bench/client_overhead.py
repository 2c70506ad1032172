"""Judge calls per second on one core: this project's client and coordinator versus the official SDK.

Both sides talk to a provider that costs almost nothing (``bench/support/canned.py``: one canned verdict for every
request, plain asyncio, in its own process), so what is measured is the client side's own cost per judge
call, not the provider's. The provider's CPU is measured during every measurement and printed as a share of
one core.

Run it from the repository root (Python 3.11, the project installed with its test extras)::

    python bench/client_overhead.py                 # 1,000 rows, 3 rounds of (ours, sdk): about a minute
    python bench/client_overhead.py --rounds 3      # more alternations
    python bench/client_overhead.py --rows 600      # another size

Sizing: ours grades 1,000 rows (10,000 judge calls; --rows to change it), so that its whole run takes
several seconds: the whole-run rate includes what a run pays however small it is (reading the inputs,
creating the run folder, scoring, the tables and the report: about 1-3 s on a 2-core machine), which a run
of a few hundred calls would be dominated by. The SDK has no such cost (one client, then calls), so its turn
is the same calls cut to about 12 s at its warm-up rate (at least 2,000 calls): its rate over 12 s is its
steady rate, and the bench stays within a minute or two.

Setup:

- The canned provider runs in a separate process, pinned to CPU 1; this process is pinned to CPU 0 (when the
  machine has two CPUs or more).
- **ours**: ``run_council(RunRequest(..., backend="local", provider_url=URL))`` on a subset of the sample
  responses: the full coordinator path, both rounds, run folder and scoring included. Calls are the
  records written (``round1.jsonl`` + ``round2.jsonl`` lines). Two rates: the whole ``run_council`` call
  (reading inputs, the run folder, scoring and the report included), and the coordinator alone (the run's
  own ``seconds``: grading both rounds).
- **sdk**: the same judge calls (cut as above) with ``openai.AsyncOpenAI(max_retries=0)``: round-one messages
  of the same rows, the judge models of the default roster round-robin over rows, the same
  ``response_format``, ``max_tokens=256``, 160 calls in flight (a semaphore; ours: 32 per vendor x 5), each
  reply parsed with ``council.protocol.parsing.parse_verdict``.
- Both are warmed up, then alternate (ours, sdk, ours, sdk, ...); the best of each is reported, with the
  spread over the rounds.

The check (the bench exits 1 when it fails): the provider stays below 80% of a core in every measurement
(else it, not the client, sets the pace), the coordinator alone is at least 10x the SDK and the whole run at
least 5x (best of each over the rounds). Each measurement also prints this process's CPU share: near one
core, the client's own work sets the pace.

Output: one line per measurement, a summary, and as the LAST line one JSON object
``{"ours_calls_per_s": ..., "sdk_calls_per_s": ..., "ratio": ..., "coordinator_ratio": ..., ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from support.cpu import process_cpu  # noqa: E402

import bank  # noqa: E402
from council.core.schema import BankItem, ResponseRow  # noqa: E402
from council.core.vendors import DEFAULT_ROSTER  # noqa: E402
from council.protocol.parsing import parse_verdict  # noqa: E402
from council.protocol.prompts import VERDICT_SCHEMA, round1_messages  # noqa: E402
from council.run.runner import RunRequest, run_council  # noqa: E402
from council.store.runfolder import ROUND_FILES  # noqa: E402

SDK_CONCURRENCY = 32 * 5  # ours allows 32 in flight per vendor, five vendors
SDK_MAX_TOKENS = 256
PROVIDER_CPU = 1
BENCH_CPU = 0
DEFAULT_ROWS = 1000  # 10,000 calls: ours' whole run takes several seconds, its fixed costs a minor share
SDK_S = 12.0  # the SDK's turn, at its warm-up rate
MIN_SDK_CALLS = 2000
PROVIDER_MAX_CORE = 0.8  # above this share of its core, the provider, not the client, sets the pace
CHECK_RATIO = 5.0  # the whole run
CHECK_COORDINATOR_RATIO = 10.0  # the coordinator alone
CANNED = Path(__file__).resolve().parent / "support" / "canned.py"


# ---- the provider --------------------------------------------------------------------------------------


def _can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and {BENCH_CPU, PROVIDER_CPU} <= os.sched_getaffinity(0)


def start_provider(pin: bool) -> tuple[subprocess.Popen[str], str]:
    """Start the canned provider in its own process (pinned to the provider CPU) and return it with its URL."""

    def pin_child() -> None:
        os.sched_setaffinity(0, {PROVIDER_CPU})

    proc = subprocess.Popen(
        [sys.executable, str(CANNED)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=pin_child if pin else None,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    prefix = "canned provider listening on "
    if not line.startswith(prefix):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the canned provider did not start (first line: {line!r})")
    return proc, line[len(prefix):]


def stop_provider(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- inputs --------------------------------------------------------------------------------------------


def subset_rows(all_rows: list[ResponseRow], n: int) -> list[ResponseRow]:
    """The first ``n`` sample rows; past the end of the sample, the rows again under new row ids."""
    out = []
    for k in range(n):
        row = all_rows[k % len(all_rows)]
        lap = k // len(all_rows)
        out.append(row if lap == 0 else row.model_copy(update={"row_id": f"{row.row_id}::lap{lap}"}))
    return out


def write_rows(rows: list[ResponseRow], path: Path) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r.model_dump(mode="json", exclude_none=True)) + b"\n" for r in rows))
    return path


# ---- the two contenders --------------------------------------------------------------------------------


async def run_ours(url: str, responses: Path, runs_dir: Path) -> tuple[int, float, float]:
    """(calls, wall seconds of the whole run_council call, seconds of the coordinator alone)."""
    started = time.perf_counter()
    result = await run_council(RunRequest(
        bank=bank.SAMPLE_BANK, responses=responses, runs_dir=runs_dir, backend="local", provider_url=url,
    ))
    wall = time.perf_counter() - started
    calls = 0
    for name in ROUND_FILES.values():
        path = result.run_dir / name
        if path.exists():
            calls += sum(1 for line in path.read_bytes().splitlines() if line.strip())
    return calls, wall, result.seconds


async def run_sdk(url: str, items: dict[str, BankItem], rows: list[ResponseRow], calls: int) -> tuple[int, float, int]:
    """(calls, wall seconds, verdicts parsed): ``calls`` round-one judge calls through AsyncOpenAI."""
    from openai import AsyncOpenAI

    judges = list(DEFAULT_ROSTER.values())
    jobs = [(judges[k % len(judges)], round1_messages(items[rows[k % len(rows)].item_id], rows[k % len(rows)]))
            for k in range(calls)]
    response_format = {"type": "json_schema", "json_schema": VERDICT_SCHEMA}
    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    slots = asyncio.Semaphore(SDK_CONCURRENCY)
    parsed = 0

    async def one(model: str, messages: list[dict[str, str]]) -> None:
        nonlocal parsed
        async with slots:
            completion = await client.chat.completions.create(
                model=model, messages=messages, temperature=0, max_tokens=SDK_MAX_TOKENS,  # type: ignore[arg-type]
                response_format=response_format,  # type: ignore[arg-type]
            )
        if parse_verdict(completion.choices[0].message.content) is not None:
            parsed += 1

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one(model, messages) for model, messages in jobs))
        wall = time.perf_counter() - started
    finally:
        await client.close()
    return calls, wall, parsed


# ---- the benchmark -------------------------------------------------------------------------------------


class Cpu:
    """The CPU of the provider process and of this process over one measurement, each as a share of one core."""

    def __init__(self, pid: int) -> None:
        self.provider, self.me = psutil.Process(pid), psutil.Process()

    def __enter__(self) -> Cpu:
        self.start = (process_cpu(self.provider), process_cpu(self.me), time.perf_counter())
        return self

    def __exit__(self, *exc: object) -> None:
        wall = max(1e-9, time.perf_counter() - self.start[2])
        self.share = (process_cpu(self.provider) - self.start[0]) / wall
        self.client = (process_cpu(self.me) - self.start[1]) / wall

    def __str__(self) -> str:
        return f"provider {100 * self.share:.0f}% of a core, this process {100 * self.client:.0f}%"


async def bench(url: str, pid: int, work: Path, rows_override: int | None, rounds: int) -> dict[str, Any]:
    items = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
    all_rows = bank.load_responses(bank.SAMPLE_RESPONSES, list(items.values()))
    runs_dir = work / "runs"

    # warm-up (imports, connections, caches) and the SDK's rate, for the length of its turn
    warm = write_rows(subset_rows(all_rows, 120), work / "warm.jsonl")
    w_calls, w_wall, _ = await run_ours(url, warm, runs_dir)
    await run_sdk(url, items, all_rows, 50)  # the SDK's first calls load its modules
    _, s_wall, _ = await run_sdk(url, items, all_rows, w_calls)
    sdk_rate = w_calls / s_wall
    n_rows = rows_override if rows_override is not None else DEFAULT_ROWS
    print(f"warm-up: ours {w_calls / w_wall:,.0f} calls/s (a small run: its fixed costs dominate), sdk "
          f"{sdk_rate:,.0f} calls/s; measuring on {n_rows} rows", flush=True)

    rows = subset_rows(all_rows, n_rows)
    responses = write_rows(rows, work / "rows.jsonl")
    ours: list[tuple[float, float]] = []
    sdk: list[float] = []
    provider: list[float] = []
    client: list[float] = []
    calls = sdk_calls = 0
    for r in range(rounds):
        gc.collect()
        with Cpu(pid) as cpu:
            calls, wall, coordinator_s = await run_ours(url, responses, runs_dir)
        ours.append((calls / wall, calls / coordinator_s))
        provider.append(cpu.share)
        client.append(cpu.client)
        print(f"round {r + 1}: ours {calls / wall:,.0f} calls/s ({calls} calls in {wall:.2f} s; "
              f"coordinator alone {calls / coordinator_s:,.0f} calls/s in {coordinator_s:.2f} s); {cpu}", flush=True)
        sdk_calls = sdk_calls or min(calls, max(MIN_SDK_CALLS, round(SDK_S * sdk_rate)))
        gc.collect()
        with Cpu(pid) as cpu:
            s_calls, s_wall, parsed = await run_sdk(url, items, rows, sdk_calls)
        sdk.append(s_calls / s_wall)
        provider.append(cpu.share)
        print(f"round {r + 1}: sdk  {s_calls / s_wall:,.0f} calls/s ({s_calls} calls in {s_wall:.2f} s; "
              f"{parsed} verdicts parsed); {cpu}", flush=True)
    best_ours = max(o for o, _ in ours)
    best_coord = max(c for _, c in ours)
    best_sdk = max(sdk)
    return {
        "ours_calls_per_s": round(best_ours, 1),
        "ours_coordinator_calls_per_s": round(best_coord, 1),
        "sdk_calls_per_s": round(best_sdk, 1),
        "ratio": round(best_ours / best_sdk, 3),
        "coordinator_ratio": round(best_coord / best_sdk, 3),
        "spread": {"ours": [round(min(o for o, _ in ours), 1), round(best_ours, 1)],
                   "ours_coordinator": [round(min(c for _, c in ours), 1), round(best_coord, 1)],
                   "sdk": [round(min(sdk), 1), round(best_sdk, 1)]},
        "provider_core_share_max": round(max(provider), 3),
        "provider_core_shares": [round(x, 3) for x in provider],
        "client_core_shares_ours": [round(x, 3) for x in client],
        "calls": calls,
        "sdk_calls": sdk_calls,
        "rows": n_rows,
        "rounds": rounds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, help=f"rows per measurement (default {DEFAULT_ROWS})")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of (ours, sdk) after warm-up (>= 2)")
    args = parser.parse_args(argv)
    rounds = max(2, args.rounds)

    pin = _can_pin()
    if pin:
        os.sched_setaffinity(0, {BENCH_CPU})
    else:
        print("note: fewer than two CPUs available; running unpinned", flush=True)
    with tempfile.TemporaryDirectory(prefix="council-bench-") as tmp:
        work = Path(tmp)
        proc, url = start_provider(pin)
        try:
            print(f"provider {url} (pid {proc.pid}{', CPU 1' if pin else ''}); bench pid {os.getpid()}"
                  f"{', CPU 0' if pin else ''}", flush=True)
            result = asyncio.run(bench(url, proc.pid, work, args.rows, rounds))
        finally:
            stop_provider(proc)
    print(f"whole run: ours {result['ours_calls_per_s']:,.0f} calls/s, sdk {result['sdk_calls_per_s']:,.0f} calls/s: "
          f"{result['ratio']:.2f}x (check >= {CHECK_RATIO:g}x); coordinator alone "
          f"{result['ours_coordinator_calls_per_s']:,.0f} calls/s: {result['coordinator_ratio']:.2f}x (check >= "
          f"{CHECK_COORDINATOR_RATIO:g}x); provider at most {100 * result['provider_core_share_max']:.0f}% of a core",
          flush=True)
    problems = []
    if result["provider_core_share_max"] >= PROVIDER_MAX_CORE:
        problems.append(f"the provider used {100 * result['provider_core_share_max']:.0f}% of a core (the bound: "
                        f"{100 * PROVIDER_MAX_CORE:.0f}%): it, not the client, set the pace")
    if result["ratio"] < CHECK_RATIO:
        problems.append(f"the whole run is {result['ratio']:.2f}x the SDK (check: >= {CHECK_RATIO:g}x)")
    if result["coordinator_ratio"] < CHECK_COORDINATOR_RATIO:
        problems.append(f"the coordinator alone is {result['coordinator_ratio']:.2f}x the SDK (check: >= "
                        f"{CHECK_COORDINATOR_RATIO:g}x)")
    print("OK" if not problems else "FAILED: " + "; ".join(problems), flush=True)
    result["ok"] = not problems
    print(orjson.dumps(result).decode(), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
