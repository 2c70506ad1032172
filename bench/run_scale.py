"""Driver memory and speed of a whole council run as the rows grow.

Data: the shipped sample (``bank/samples/neo_sample_responses.jsonl``, 960 rows) copied until there are N
rows. Copy k keeps each row's item id, gets the row id ``<row_id>#<k>`` and has `` [copy k]`` appended to
its response, so the provider sees distinct rows. Sizes: 10,000 and 100,000 rows (1,000,000 with
``--million``); ``--rows N`` (repeatable) chooses other sizes.

Provider: the embedded provider as its own ``council sim`` process (so its truth table, which grows with the
rows, is not counted against the driver), started once per size on 127.0.0.1 with the planted world but no
latency, no faults and no quotas; the council's own quotas are the defaults (none bind).

Driver: each size runs in a fresh child process, ``council.run.runner.run_council`` with ``backend="local"``
and ``provider_url=`` the sim's URL, into a temporary runs folder. The child reports its peak RSS (VmHWM
of /proc/self/status, read at the end of the run, after scoring), the wall time of the run, the votes
issued, and the archive's size (the sum of the run folder's files) per row.

Printed: one line per size, a ratio line (RSS growth from the smallest to the largest size, in MB and in
bytes per row) and, last, one JSON object with every figure.

The check (the bench exits 1 when it fails): every row graded; the driver's peak RSS grows by at most
``MAX_RSS_BYTES_PER_ROW`` bytes per added row (a driver that kept its rows or records in memory would grow
by several kilobytes a row); the archive holds at most ``MAX_ARCHIVE_BYTES_PER_ROW`` bytes per row (plain, or
zstd with ``--compress-archive``).

Run from the repository root (about 2 minutes for 10k rows on 2 cores, ten times that for 100k):
    python bench/run_scale.py
    python bench/run_scale.py --rows 5000 --rows 20000   # a quick look
    python bench/run_scale.py --million                  # adds 1,000,000 rows (hours)
    python bench/run_scale.py --compress-archive         # the same with the archive as zstd frames
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SAMPLE_BANK = ROOT / "bank" / "samples" / "neo_sample.jsonl"
SAMPLE_RESPONSES = ROOT / "bank" / "samples" / "neo_sample_responses.jsonl"
PREFIX = "embedded provider listening on "
MAX_RSS_BYTES_PER_ROW = 1_000
MAX_ARCHIVE_BYTES_PER_ROW = {"plain": 15_000, "zstd": 2_000}


def make_responses(rows: int, out: Path) -> int:
    """Write ``rows`` rows copied from the shipped sample to ``out``; returns the rows written."""
    sample = [json.loads(line) for line in SAMPLE_RESPONSES.read_text(encoding="utf-8").splitlines() if line.strip()]
    written = 0
    with open(out, "w", encoding="utf-8") as handle:
        k = 0
        while written < rows:
            for row in sample:
                if written >= rows:
                    break
                copy = dict(row)
                copy["row_id"] = f"{row['row_id']}#{k}"
                copy["response"] = f"{row['response']} [copy {k}]"
                handle.write(json.dumps(copy, ensure_ascii=False) + "\n")
                written += 1
            k += 1
    return written


def sim_config(out: Path) -> None:
    """The planted world with no latency, no faults and no quotas."""
    from council.sim import SimConfig

    config = SimConfig.planted(seed=0).model_dump(mode="json")
    quiet = {"latency_ms": 0.0, "latency_jitter_ms": 0.0, "rpm": 0, "tpm": 0, "error_rate": 0.0, "timeout_rate": 0.0,
             "reset_rate": 0.0, "bad_body_rate": 0.0, "slow_rate": 0.0, "storm_429": 0.0, "truncation_rate": 0.0}
    for behaviour in [*config["vendors"].values(), config["default"]]:
        behaviour.update(quiet)
    out.write_text(json.dumps(config), encoding="utf-8")


def start_sim(responses: Path, config: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "council.cli", "sim", "--port", "0", "--host", "127.0.0.1", "--bank", str(SAMPLE_BANK),
         "--responses", str(responses), "--config", str(config)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith(PREFIX):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the embedded provider did not start (first line: {line!r})")
    return proc, line[len(PREFIX):]


def stop_sim(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def status_bytes(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def child(responses: str, url: str, runs_dir: str, out: str, compress: str) -> None:
    """One run of the council in this process; figures to ``out`` as JSON."""
    from council.protocol.config import CouncilConfig
    from council.run.runner import RunRequest, run_council

    req = RunRequest(bank=SAMPLE_BANK, responses=Path(responses), runs_dir=Path(runs_dir), run_id="scale",
                     backend="local", provider_url=url, config=CouncilConfig(compress_archive=compress == "zstd"))
    started = time.perf_counter()
    result = asyncio.run(run_council(req))
    seconds = time.perf_counter() - started
    folder = result.run_dir
    archive = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    rows = result.summary["rows_total"]
    figures = {
        "rows": rows, "peak_rss_bytes": status_bytes("VmHWM"), "seconds": round(seconds, 3),
        "votes": result.issued + result.served_from_archive, "issued": result.issued,
        "not_graded_rows": result.not_graded, "archive_bytes": archive,
        "archive_bytes_per_row": round(archive / max(1, rows), 1),
        "files": {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()},
    }
    figures["votes_per_s"] = round(figures["votes"] / seconds, 1)
    Path(out).write_text(json.dumps(figures), encoding="utf-8")


def one_size(rows: int, work: Path, compress: str) -> dict:
    responses = work / f"responses-{rows}.jsonl"
    make_responses(rows, responses)
    config = work / "sim.json"
    sim_config(config)
    proc, url = start_sim(responses, config)
    out = work / f"figures-{rows}.json"
    runs = work / f"runs-{rows}"
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(responses), url, str(runs), str(out), compress],
                              cwd=ROOT, check=False)
    finally:
        stop_sim(proc)
    if done.returncode != 0:
        raise RuntimeError(f"the run of {rows} rows failed (exit {done.returncode})")
    figures = json.loads(out.read_text(encoding="utf-8"))
    for path in [responses, *runs.rglob("*")]:  # the next size starts with the disk free
        if path.is_file():
            path.unlink()
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, action="append", help="a size to run (repeatable)")
    ap.add_argument("--million", action="store_true", help="also run 1,000,000 rows")
    ap.add_argument("--compress-archive", action="store_true", help="runs write a zstd-compressed archive")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    sizes = args.rows or [10_000, 100_000]
    if args.million:
        sizes.append(1_000_000)
    results = []
    with tempfile.TemporaryDirectory(prefix="run-scale-") as tmp:
        for rows in sizes:
            f = one_size(rows, Path(tmp), "zstd" if args.compress_archive else "plain")
            results.append(f)
            print(f"{f['rows']:>9,} rows: peak RSS {f['peak_rss_bytes'] / 2**20:8.1f} MiB, {f['votes']:,} votes in "
                  f"{f['seconds']:.1f} s ({f['votes_per_s']:,.0f} votes/s), archive {f['archive_bytes_per_row']:,.0f} "
                  f"bytes/row, not graded {f['not_graded_rows']}", flush=True)
    archive = "zstd" if args.compress_archive else "plain"
    out = {"bench": "run_scale", "archive": archive, "sizes": results}
    problems = [f"{f['rows']:,} rows: {f['not_graded_rows']} not graded" for f in results if f["not_graded_rows"]]
    problems += [f"{f['rows']:,} rows: archive {f['archive_bytes_per_row']:,.0f} bytes/row (bound "
                 f"{MAX_ARCHIVE_BYTES_PER_ROW[archive]:,})" for f in results
                 if f["archive_bytes_per_row"] > MAX_ARCHIVE_BYTES_PER_ROW[archive]]
    if len(results) >= 2:
        a, b = results[0], results[-1]
        growth = b["peak_rss_bytes"] - a["peak_rss_bytes"]
        per_row = growth / max(1, b["rows"] - a["rows"])
        out.update({"rss_growth_bytes": growth, "rss_growth_bytes_per_row": round(per_row, 1)})
        print(f"peak RSS growth {a['rows']:,} -> {b['rows']:,} rows: {growth / 1e6:.1f} MB ({per_row:,.0f} bytes/row)")
        if per_row > MAX_RSS_BYTES_PER_ROW:
            problems.append(f"peak RSS grows {per_row:,.0f} bytes/row (bound {MAX_RSS_BYTES_PER_ROW:,})")
    print(f"OK: every row graded, RSS growth <= {MAX_RSS_BYTES_PER_ROW:,} bytes/row, archive <= "
          f"{MAX_ARCHIVE_BYTES_PER_ROW[archive]:,} bytes/row" if not problems else "FAILED: " + "; ".join(problems))
    out["ok"] = not problems
    print(json.dumps(out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
