"""What a row waiting on the batch APIs costs the driver in memory: ``council run --transport batch`` with every row's
round one in open batches, at two sizes.

Data: the shipped sample (960 rows) copied until there are N rows, as in ``bench/run_scale.py`` (copy k keeps each
row's item id, gets the row id ``<row_id>#<k>`` and `` [copy k]`` after its response).

Driver: the command line (``council run --backend local --simulate --no-report``, as a user runs it) in a child
process, with ``transport: batch`` (``batch.flush_s`` 1 s, ``batch.poll_s`` 5 s) and the embedded provider in a
process of its own, whose batches end only after ``--batch-completion-s`` (an hour): nothing is answered while the
driver is sampled, so every row taken in waits. The driver takes rows in up to its cap (``batch.rows_in_flight``,
50,000 by default) and sends their round one. Once the run folder's batch journal (``batches.jsonl``) has had no new
batch for ``--settle-s`` seconds, the driver's resident memory (VmRSS) is read and the child is stopped (its folder
is a temporary one).

Two sizes: ``--small`` rows (5,000) is the baseline measured in the same run, ``--rows`` (100,000, so the cap of
50,000 binds) the large one. Printed: each size's rows in flight (rows taken in: min(rows, cap)), the votes in the
journal's batches and VmRSS; then the growth per row in flight (the slope between the two sizes) and per vote, and
last one JSON object of the figures.

The check (exit 1 when it fails): every row in flight has its batching votes in the journal, and a row in flight
costs at most ``MAX_BYTES_PER_ROW_IN_FLIGHT``.

Run from the repository root (about 4 minutes on 2 cores):
    python bench/batch_in_flight.py --save                       # the figures for the docs' benchmarks page
    python bench/batch_in_flight.py --rows 20000 --small 2000    # a quick look (both under the cap)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_scale import make_responses  # noqa: E402
from bench.support.results import machine, save  # noqa: E402

MAX_BYTES_PER_ROW_IN_FLIGHT = 1_000
CAP = 50_000  # batch.rows_in_flight's default
BATCHING = 4  # at least: the default roster's seats on vendors with a batch API (deepseek has none), less the row's own


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _journal_votes(path: Path) -> tuple[int, int]:
    """The batches and votes the journal's intents ask for."""
    batches = votes = 0
    if not path.exists():
        return 0, 0
    for line in path.read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line being written
        if event.get("event") == "intent":
            batches += 1
            votes += sum(len(p) for p in (event.get("packs") or {}).values()) or len(event.get("keys", []))
    return batches, votes


def measure(rows: int, work: Path, settle_s: float, completion_s: float) -> dict:
    responses = work / f"responses-{rows}.jsonl"
    make_responses(rows, responses)
    config = work / "council.json"
    config.write_text(json.dumps({"transport": "batch", "batch": {"flush_s": 1.0, "poll_s": 5.0}}))
    sim = work / "sim.json"
    sim.write_text(json.dumps({"batch_completion_s": completion_s}))
    runs = work / "runs"
    run_id = f"in-flight-{rows}"
    argv = ["run", "--backend", "local", "--simulate", "--sim-config", str(sim), "--no-report", "--no-check",
            "--responses", str(responses), "--runs-dir", str(runs), "--run-id", run_id, "--config", str(config),
            "--progress-every", "0"]
    child = subprocess.Popen([sys.executable, "-c", "import sys, json; from council.cli import main; "
                              "sys.exit(main(json.loads(sys.argv[1])))", json.dumps(argv)],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    journal = runs / run_id / "batches.jsonl"
    start = time.monotonic()
    last, seen, votes, batches = start, (0, 0), 0, 0
    try:
        while time.monotonic() - start < 1800:
            time.sleep(1.0)
            if child.poll() is not None:
                raise SystemExit(f"{rows} rows: the run ended (exit {child.returncode}) before it was sampled\n"
                                 f"{child.stderr.read().decode()[-3000:] if child.stderr else ''}")
            now = _journal_votes(journal)
            if now != seen:
                seen, last = now, time.monotonic()
            elif now[1] and time.monotonic() - last >= settle_s:
                batches, votes = now
                break
        else:
            raise SystemExit(f"{rows} rows: the journal did not settle in 30 minutes")
        rss_kb = _rss_kb(child.pid)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    in_flight = min(rows, CAP)
    return {"rows": rows, "rows_in_flight": in_flight, "batches": batches, "votes": votes,
            "rss_mb": round(rss_kb / 1024, 1), "seconds_to_settle": round(last - start, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=5_000)
    ap.add_argument("--settle-s", type=float, default=15.0, help="seconds with no new batch before sampling")
    ap.add_argument("--batch-completion-s", type=float, default=3600.0)
    ap.add_argument("--save", action="store_true", help="write the figures to bench/results/batch_in_flight.json "
                                                          "(the docs' benchmarks page)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = []
        for rows in (args.small, args.rows):
            work = Path(tmp) / str(rows)
            work.mkdir()
            figures = measure(rows, work, args.settle_s, args.batch_completion_s)
            print(f"{rows:>8,} rows: {figures['rows_in_flight']:,} in flight, {figures['votes']:,} votes in "
                  f"{figures['batches']} batches, VmRSS {figures['rss_mb']:.1f} MB", flush=True)
            sizes.append(figures)
    small, large = sizes
    extra_rows = large["rows_in_flight"] - small["rows_in_flight"]
    per_row = (large["rss_mb"] - small["rss_mb"]) * 1024 * 1024 / extra_rows
    per_vote = (large["rss_mb"] - small["rss_mb"]) * 1024 * 1024 / max(1, large["votes"] - small["votes"])
    print(f"growth: {per_row:,.0f} B per row in flight ({per_vote:,.0f} B per waiting vote), "
          f"{large['rss_mb'] / small['rss_mb']:.2f}x the RSS at {small['rows_in_flight']:,} rows in flight")
    complete = all(s["votes"] >= BATCHING * s["rows_in_flight"] for s in sizes)
    ok = complete and per_row <= MAX_BYTES_PER_ROW_IN_FLIGHT
    if not complete:
        print("FAIL: some rows in flight have no votes in the journal", file=sys.stderr)
    if per_row > MAX_BYTES_PER_ROW_IN_FLIGHT:
        print(f"FAIL: {per_row:,.0f} B per row in flight (at most {MAX_BYTES_PER_ROW_IN_FLIGHT:,})", file=sys.stderr)
    figures = {"bench": "batch_in_flight", "sizes": sizes, "bytes_per_row_in_flight": round(per_row),
               "bytes_per_vote": round(per_vote), "max_bytes_per_row_in_flight": MAX_BYTES_PER_ROW_IN_FLIGHT, "ok": ok}
    if args.save and ok:
        save("batch_in_flight", figures)
    print(json.dumps({"machine": machine(), **figures}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
