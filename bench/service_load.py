"""Many small jobs from several tenants at once against one ``council serve --simulate``, versus the same jobs one
at a time.

Data: rows of the shipped sample (``bank/samples/neo_sample_responses.jsonl``), taken in file order and cycled,
``--rows`` per job, each row's ``row_id`` suffixed with its job's number so every job's ids are its own; the
service grades them against its own bank (the shipped sample bank) with its embedded simulated judges.

Setup: for each measurement a fresh ``python -m council.cli serve --simulate --port 0`` on 127.0.0.1 (pinned to
CPU 1, this process to CPU 0, when two CPUs are available) with a tenants file of ``--tenants`` tenants, each
allowed ``--jobs`` running jobs and ``--rows`` rows per job, so no submission meets a limit. A job is followed
by reading its verdict stream (``GET /v1/jobs/{id}/verdicts``), which ends when the job does; every job must
end ``finished`` with one verdict per row.

- **concurrent**: every job of every tenant is submitted at once (aiohttp, one session), each followed as soon
  as it is accepted.
- **sequential** (the baseline): the same jobs, submitted one at a time, each followed to its end before the
  next is submitted.

Figures per mode: submission latency p50/p99 (POST until its 201), jobs/s and rows/s (first submission to the
last job's end), job latency p50/p99 (submission to end), and the service process's CPU time over the wall time
(``server_cpu_share``; 1.0 is one core busy). ``ratio`` is concurrent over sequential jobs/s. Rounds alternate
(sequential, concurrent); the best round of each is reported.

Run from the repository root::

    python bench/service_load.py                          # 4 tenants x 25 jobs x 10 rows, 2 rounds
    python bench/service_load.py --tenants 8 --jobs 50    # more at once

The check (the bench exits 1 when it fails): every job ends ``finished`` with one verdict per row (else it
stops at once), and concurrent jobs finish faster than the same jobs one at a time (``ratio`` > 1).
The last line of output is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bank  # noqa: E402
from council.service.serve import LISTENING  # noqa: E402

SERVER_CPU, BENCH_CPU = 1, 0
TERMINAL = {"finished", "stopped", "cancelled", "failed"}


def make_jobs(tenants: int, jobs: int, rows: int) -> list[tuple[int, list[dict]]]:
    """(tenant index, rows) per job, tenants interleaved."""
    sample = [orjson.loads(x) for x in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if x.strip()]
    out = []
    for n in range(tenants * jobs):
        start = n * rows
        picked = [sample[(start + i) % len(sample)] for i in range(rows)]
        out.append((n % tenants, [dict(r, row_id=f"{r['row_id']}#job{n}") for r in picked]))
    return out


def start_server(work: Path, tokens: list[str], jobs: int, rows: int, pin: bool) -> tuple[subprocess.Popen[str], str]:
    tenants_file = work / "tenants.json"
    tenants_file.write_bytes(orjson.dumps({
        f"tenant-{i}": {"token_sha256": hashlib.sha256(t.encode()).hexdigest(), "max_running_jobs": jobs,
                        "max_rows_per_job": rows} for i, t in enumerate(tokens)}))
    runs = work / f"runs-{secrets.token_hex(4)}"
    proc = subprocess.Popen([sys.executable, "-m", "council.cli", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--tokens", str(tenants_file), "--runs-dir", str(runs), "--simulate"],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if pin:
        os.sched_setaffinity(proc.pid, {SERVER_CPU})
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith(LISTENING):
        proc.kill()
        raise SystemExit(f"the service did not start: {line!r}")
    return proc, line[len(LISTENING):]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux ``/proc``), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def run_job(session: aiohttp.ClientSession, url: str, token: str, rows: list[dict]) -> dict:
    """Submit one job and follow it to its end; its timings and outcome."""
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    async with session.post(f"{url}/v1/jobs", json={"rows": rows}, headers=headers) as resp:
        body = await resp.read()
        if resp.status != 201:
            raise SystemExit(f"submission answered {resp.status}: {body[:300]!r}")
    accepted = time.perf_counter()
    job_id = orjson.loads(body)["id"]
    async with session.get(f"{url}/v1/jobs/{job_id}/verdicts", headers=headers) as resp:
        verdicts = sum(1 for line in (await resp.read()).splitlines() if line.strip())
    ended = time.perf_counter()
    async with session.get(f"{url}/v1/jobs/{job_id}", headers=headers) as resp:
        state = (await resp.json())["state"]
    if state != "finished" or verdicts != len(rows):
        raise SystemExit(f"job {job_id} ended {state} with {verdicts} verdicts for {len(rows)} rows")
    return {"started": started, "submit_s": accepted - started, "ended": ended}


async def measure(url: str, tokens: list[str], jobs: list[tuple[int, list[dict]]], concurrent: bool) -> dict:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=600)) as session:
        if concurrent:
            done = await asyncio.gather(*(run_job(session, url, tokens[t], rows) for t, rows in jobs))
        else:
            done = [await run_job(session, url, tokens[t], rows) for t, rows in jobs]
    wall = max(d["ended"] for d in done) - min(d["started"] for d in done)
    submit = sorted(d["submit_s"] for d in done)
    latency = sorted(d["ended"] - d["started"] for d in done)
    rows = sum(len(r) for _, r in jobs)
    return {"wall_s": round(wall, 3), "jobs_per_s": round(len(jobs) / wall, 2), "rows_per_s": round(rows / wall, 1),
            "submit_p50_ms": round(pct(submit, 50) * 1e3, 2), "submit_p99_ms": round(pct(submit, 99) * 1e3, 2),
            "job_p50_ms": round(pct(latency, 50) * 1e3, 1), "job_p99_ms": round(pct(latency, 99) * 1e3, 1)}


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile of sorted ``values``."""
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=4, help="tenants submitting at once (default 4)")
    parser.add_argument("--jobs", type=int, default=25, help="jobs per tenant (default 25)")
    parser.add_argument("--rows", type=int, default=10, help="rows per job (default 10)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of (sequential, concurrent) (default 2)")
    args = parser.parse_args(argv)
    if min(args.tenants, args.jobs, args.rows, args.rounds) < 1 or args.rows > 960:
        parser.error("sizes must be >= 1, and --rows at most the sample's 960 rows")

    pin = hasattr(os, "sched_setaffinity") and {BENCH_CPU, SERVER_CPU} <= os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {BENCH_CPU})
    else:
        print("note: fewer than two CPUs available; running unpinned", flush=True)
    jobs = make_jobs(args.tenants, args.jobs, args.rows)
    tokens = [secrets.token_urlsafe(24) for _ in range(args.tenants)]
    print(f"{len(jobs)} jobs ({args.tenants} tenants x {args.jobs}) of {args.rows} rows", flush=True)
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="council-bench-") as tmp:
        for round_ in range(args.rounds):
            for mode in ("sequential", "concurrent"):
                proc, url = start_server(Path(tmp), tokens, args.jobs, args.rows, pin)
                try:
                    cpu_before = cpu_seconds(proc.pid)
                    got = asyncio.run(measure(url, tokens, jobs, mode == "concurrent"))
                    cpu_after = cpu_seconds(proc.pid)
                finally:
                    stop_server(proc)
                if cpu_before is not None and cpu_after is not None:
                    got["server_cpu_share"] = round((cpu_after - cpu_before) / got["wall_s"], 2)
                print(f"round {round_ + 1} {mode:10s} {got['jobs_per_s']:7.2f} jobs/s {got['rows_per_s']:8.1f} rows/s"
                      f"  submit p50 {got['submit_p50_ms']:.1f} ms p99 {got['submit_p99_ms']:.1f} ms"
                      f"  job p50 {got['job_p50_ms']:.0f} ms p99 {got['job_p99_ms']:.0f} ms  ({got['wall_s']:.1f} s, "
                      f"server CPU {got.get('server_cpu_share', float('nan')):.2f})",
                      flush=True)
                if mode not in best or got["jobs_per_s"] > best[mode]["jobs_per_s"]:
                    best[mode] = got
    ratio = best["concurrent"]["jobs_per_s"] / best["sequential"]["jobs_per_s"]
    print(f"concurrent {best['concurrent']['jobs_per_s']:.2f} jobs/s vs sequential "
          f"{best['sequential']['jobs_per_s']:.2f} jobs/s: ratio {ratio:.2f}x", flush=True)
    figures = {"tenants": args.tenants, "jobs": len(jobs), "rows_per_job": args.rows, "rows": len(jobs) * args.rows,
               "rounds": args.rounds, "pinned": pin, "ratio": round(ratio, 2),
               **{f"{mode}_{k}": v for mode, got in best.items() for k, v in got.items()}}
    ok = ratio > 1.0
    print("OK: concurrent jobs finish faster than sequential ones" if ok else
          f"FAILED: concurrent jobs are {ratio:.2f}x sequential (check: > 1)", flush=True)
    figures["ok"] = ok
    print(orjson.dumps(figures).decode(), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
