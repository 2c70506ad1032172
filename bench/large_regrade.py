"""A measured large regrade: 250,000 rows through ``council run`` as a user runs it, synchronous and batch.

Data: the shipped sample (960 rows) copied until there are N rows (250,000 by default; ``--rows N``), as in
``bench/run_scale.py``: copy k keeps each row's item id, gets the row id ``<row_id>#<k>`` and `` [copy k]`` after its
response, so the provider sees distinct rows.

Driver: the command line itself (``council.cli.main``: ``council run --backend local --simulate --no-report``;
``--backend ray`` puts the judges in Ray actors and measures the driver), in a fresh child process per run, with the embedded provider in a process of its own (the command starts it so for
any run over a few hundred rows). The child reports its peak RSS (VmHWM of /proc/self/status once the command has
returned: grading, scoring and the tables). Each transport runs twice, at ``--small`` rows (2,880) and at N: the
small run is the baseline measured in the same run, so the figures are ratios (throughput at N against throughput
at 2,880; RSS growth per extra row), not absolute times on a noisy machine. The batch side has
``transport: batch`` with ``batch.flush_s`` 1 s and ``batch.poll_s`` 5 s; the embedded provider ends a batch 3 s
after its creation.

Printed: a line per run; the ratios; what a 1,000,000-row run needs, from these figures: memory (peak RSS at N
plus the growth per row), disk (the run folder's bytes per row) and time at the providers' first paid tier limits
(``bench/support/tier_limits.json``, each figure with its page and the date read): ``council estimate``'s lower
bound T* (each vendor's requests and tokens over its sustainable rate) for the sample at the measured unanimity,
scaled to the rows; a vendor whose page states no limit, or no figure (its console shows it), does not bind, and
the latter are named. Last, one JSON object with every figure,
also written to ``--out`` (``bench/results/large_regrade.json``), from which the docs site's benchmarks page is
rendered when the site is built (``bench/support/render_docs.py``).

The check (exit 1 when it fails): every row graded in every run; peak RSS grows by at most
``MAX_RSS_BYTES_PER_ROW`` per extra row on the synchronous side and ``MAX_BATCH_RSS_BYTES_PER_ROW`` on the batch
side; the batch run costs at most ``MAX_BATCH_COST_RATIO`` of the synchronous one.

Run from the repository root (about 25 minutes on 2 cores at 250,000 rows):
    python bench/large_regrade.py
    python bench/large_regrade.py --rows 20000 --out quick.json          # a quick look
    python bench/large_regrade.py --transports batch --update          # one side again, the other kept
    python bench/large_regrade.py --backend ray --transports sync --rows 57600 --out ray.json   # Ray's driver
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_scale import make_responses  # noqa: E402
from bench.support.results import machine  # noqa: E402

MAX_RSS_BYTES_PER_ROW = 500
MAX_BATCH_RSS_BYTES_PER_ROW = 1_000
MAX_BATCH_COST_RATIO = 0.55
TIER_LIMITS = ROOT / "bench" / "support" / "tier_limits.json"
OUT = ROOT / "bench" / "results" / "large_regrade.json"
MILLION = 1_000_000

_CHILD = """
import json, sys
from council.cli import main
code = main(json.loads(sys.argv[1]))
hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
print(json.dumps({"code": code, "vmhwm_kb": hwm}))
"""


def _config(folder: Path, transport: str) -> Path:
    path = folder / f"council-{transport}.json"
    config = {"transport": transport, "batch": {"flush_s": 1.0, "poll_s": 5.0}} if transport == "batch" else {}
    path.write_text(json.dumps(config))
    return path


def run_once(responses: Path, rows: int, transport: str, work: Path, backend: str = "local") -> dict:
    """One ``council run`` in a child process: its figures."""
    runs = work / "runs"
    run_id = f"{transport}-{rows}"
    argv = ["run", "--backend", backend, "--simulate", "--no-report", "--no-check", "--responses", str(responses),
            "--runs-dir", str(runs), "--run-id", run_id, "--config", str(_config(work, transport)),
            "--progress-every", "0"]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(argv)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{transport} {rows}: exit {done.returncode}\n{done.stderr[-3000:]}")
    child = json.loads(done.stdout.strip().splitlines()[-1])
    folder = runs / run_id
    summary = json.loads((folder / "summary.json").read_text())
    disk = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    graded = summary["rows_total"] - summary["not_graded_rows"]
    return {"rows": rows, "code": child["code"], "graded": graded, "wall_s": round(wall, 2),
            "rows_per_s": round(graded / wall, 1), "peak_rss_mb": round(child["vmhwm_kb"] / 1024, 1),
            "cost_usd": summary["cost_usd"], "judge_cost_usd": round(sum(summary["cost_by_vendor_usd"].values()), 4),
            "disk_bytes_per_row": round(disk / rows), "deliberated_share": _deliberated_share(summary)}


def _deliberated_share(summary: dict) -> float:
    d = summary.get("deliberation") or {}
    rows = d.get("rows_deliberated")
    return round(rows / summary["rows_total"], 4) if rows is not None and summary["rows_total"] else 1.0


def hours_at_tier_limits(rows: int, deliberated_share: float) -> dict:
    """``council estimate``'s T* for the sample at the first paid tiers' limits, round two on the measured share of
    rows, scaled from the sample's rows to ``rows``; per vendor its own time."""
    from bank import SAMPLE_BANK, SAMPLE_RESPONSES, load_bank
    from council.core.schema import ResponseRow
    from council.protocol.config import CouncilConfig
    from council.tools.estimate import Unanimity, disputed_share, estimate

    limits = json.loads(TIER_LIMITS.read_text())
    config = CouncilConfig()
    vendors = {v: {"rpm": float(f.get("rpm") or 0), "tpm": float(f.get("tpm") or 0)}
               for v, f in limits["vendors"].items()}
    config = CouncilConfig.model_validate({**config.model_dump(mode="json"), "vendors": {
        v: {**config.model_dump(mode="json")["vendors"].get(v, {}), **lim} for v, lim in vendors.items()}})
    items = {i.id: i for i in load_bank(SAMPLE_BANK)}
    sample = [ResponseRow.model_validate(json.loads(line), context={"vendor_map": config.vendor_map})
              for line in SAMPLE_RESPONSES.read_text().splitlines() if line.strip()]
    # the unanimity whose disputed share is the one measured: share = (1 - u) + a u
    audit = config.deliberation_audit
    u = min(1.0, max(0.0, (1.0 - deliberated_share) / (1.0 - audit))) if audit < 1 else 0.0
    est = estimate(config, items, sample, unanimity=Unanimity.stated(u))
    strategy = est.strategies[-1] if len(est.strategies) > 1 else est.strategies[0]
    scale = rows / len(sample)
    per_vendor = {v.vendor: round(v.minutes * 60 * scale / 3600, 2) for v in strategy.vendors}
    return {"hours": round(strategy.t_star_s * scale / 3600, 2), "by_vendor_hours": per_vendor,
            "round_two_share": round(disputed_share(u, audit), 4), "limits_read": limits["read"],
            "limiting_vendor": max(per_vendor, key=per_vendor.get) if per_vendor else None,
            "no_figure": sorted(v for v, f in limits["vendors"].items() if f.get("rpm") is None and f.get("tpm") is None)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--small", type=int, default=2_880, help="the baseline run's rows (default 2,880)")
    ap.add_argument("--transports", default="sync,batch")
    ap.add_argument("--backend", choices=("local", "ray"), default="local",
                    help="the judges in the command's process (default) or in Ray actors (the driver's memory is measured)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--update", action="store_true",
                    help="keep the other transport's figures in --out (same rows and machine), replace these")
    args = ap.parse_args()
    figures: dict = {"machine": machine(), "rows": args.rows, "small_rows": args.small, "backend": args.backend}
    if args.update and args.out.exists():
        kept = json.loads(args.out.read_text())
        if (kept["rows"], kept["small_rows"], kept["machine"]["cpus"]) == (args.rows, args.small, os.cpu_count()):
            figures.update({t: kept[t] for t in ("sync", "batch") if t in kept})
    failures = []
    with tempfile.TemporaryDirectory(prefix="large-regrade-") as tmp:
        work = Path(tmp)
        files = {}
        for n in (args.small, args.rows):
            files[n] = work / f"responses-{n}.jsonl"
            make_responses(n, files[n])
        for transport in args.transports.split(","):
            small = run_once(files[args.small], args.small, transport, work, args.backend)
            print(f"{transport:5} {args.small:>9,} rows: {small['rows_per_s']:8,.1f} rows/s, peak RSS "
                  f"{small['peak_rss_mb']:7.1f} MB, judge cost ${small['judge_cost_usd']:,.2f}", flush=True)
            large = run_once(files[args.rows], args.rows, transport, work, args.backend)
            print(f"{transport:5} {args.rows:>9,} rows: {large['rows_per_s']:8,.1f} rows/s, peak RSS "
                  f"{large['peak_rss_mb']:7.1f} MB, judge cost ${large['judge_cost_usd']:,.2f}, "
                  f"{large['disk_bytes_per_row']:,} B/row on disk", flush=True)
            growth = (large["peak_rss_mb"] - small["peak_rss_mb"]) * 2**20 / (args.rows - args.small)
            ratio = large["rows_per_s"] / small["rows_per_s"]
            print(f"{transport:5} ratio: throughput at {args.rows:,} / at {args.small:,} rows {ratio:.2f}x; peak RSS "
                  f"grows {growth:,.0f} B per extra row", flush=True)
            figures[transport] = {"small": small, "large": large, "rss_bytes_per_extra_row": round(growth),
                                  "throughput_ratio": round(ratio, 3)}
    for transport in ("sync", "batch"):  # those measured now and those kept (--update)
        if transport not in figures:
            continue
        t = figures[transport]
        bound = MAX_BATCH_RSS_BYTES_PER_ROW if transport == "batch" else MAX_RSS_BYTES_PER_ROW
        if t["rss_bytes_per_extra_row"] > bound:
            failures.append(f"{transport}: RSS grows {t['rss_bytes_per_extra_row']:,} B a row (at most {bound:,})")
        failures += [f"{transport} {r['rows']}: {r['rows'] - r['graded']} rows not graded"
                     for r in (t["small"], t["large"]) if r["graded"] != r["rows"]]
    if "sync" in figures and "batch" in figures:
        cost = figures["batch"]["large"]["judge_cost_usd"] / figures["sync"]["large"]["judge_cost_usd"]
        figures["batch_cost_ratio"] = round(cost, 4)
        print(f"batch / sync judge cost at {args.rows:,} rows: {cost:.3f}")
        if cost > MAX_BATCH_COST_RATIO:
            failures.append(f"batch costs {cost:.3f} of sync (at most {MAX_BATCH_COST_RATIO})")
    if "sync" in figures:
        sync = figures["sync"]
        time_at = hours_at_tier_limits(MILLION, sync["large"]["deliberated_share"]) if TIER_LIMITS.exists() else {}
        figures["million"] = {
            "peak_rss_mb": round(sync["large"]["peak_rss_mb"]
                                 + sync["rss_bytes_per_extra_row"] * (MILLION - args.rows) / 2**20, 1),
            "disk_gb": round(sync["large"]["disk_bytes_per_row"] * MILLION / 1e9, 2),
            "embedded_provider_hours": round(MILLION / sync["large"]["rows_per_s"] / 3600, 2),
            "tier_limits": time_at,
        }
        m = figures["million"]
        print(f"1,000,000 rows: peak RSS about {m['peak_rss_mb']:,.0f} MB, {m['disk_gb']:.1f} GB on disk, "
              f"{time_at.get('hours', float('nan')):,.1f} h at the first paid tiers' limits (bound by "
              f"{time_at.get('limiting_vendor')}), "
              f"{m['embedded_provider_hours']:.1f} h on the embedded provider here")
    figures["failures"] = failures
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    for failure in failures:
        print("FAILED:", failure)
    print(json.dumps(figures))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
