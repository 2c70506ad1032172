"""What the batch transport saves on a large regrade: the same rows graded synchronously and through the batch APIs.

Data: the shipped sample copied until there are N rows (20,000 by default; ``--rows N``), as in
``bench/run_scale.py``: copy k keeps each row's item id, gets the row id ``<row_id>#<k>`` and `` [copy k]`` after
its response, so the provider sees distinct rows.

Provider: the embedded provider as its own ``council sim`` process on 127.0.0.1, started afresh for each mode, with
the planted world, each vendor's quota of ``QUOTAS`` (requests and tokens per minute), no transport faults and no
malformed replies (a fault drawn per request falls on different requests in the two modes, whose requests differ:
a multi-row chat call against one request per vote, and would make their verdicts differ for no fault of either
transport), and batches that end ``--batch-completion-s`` seconds (30 by default) after their creation.

Driver: each mode runs in a fresh child process, ``council.run.runner.run_council`` with ``backend="local"`` and
``provider_url=`` the sim's URL. Both modes have the same bank, rows, seed, roster and quotas (``QUOTAS`` in the
council config too, so the synchronous side paces itself to them) and the same ``--deliberate`` (disputed by
default); anthropic speaks its own Messages API (``api="anthropic"``), so its votes go through Anthropic's Message
Batches and the others' through the OpenAI-style files and batches. The batch side has ``transport="batch"``,
``batch.flush_s`` 1 s and ``batch.poll_s`` 5 s; the per-minute quotas do not bind its batches (that is the point).

Printed per mode: judge cost (the sum of ``cost_usd`` over every archived vote, and the run summary's), the
requests the provider billed (synchronous, batch, and batch requests billed twice), the votes archived, the wall
time of the run and the driver's peak RSS (VmHWM of /proc/self/status at the end of the run); then a ratio line
(batch / sync, cost and wall time) and, last, one JSON object with every figure. Vendors whose models have no
batch price (``CouncilConfig.batch_unpriced``) are charged at their standard rates on the batch side too, so the
batch cost is an upper bound; they are named in the JSON, and so are the vendors that stay synchronous on the batch
side (``batch_sync``: deepseek, which has no batch API). Batch requests pack up to ``max_batch`` rows, as the
synchronous ones do when the quotas bind.

The check (the bench exits 1 when it fails): both runs complete every row; the two runs' consensus verdicts are the
same row for row (``council.scoring.diff.diff_runs``); no batch request is billed twice; the batch cost is below the
synchronous cost.

Run from the repository root (about 9 minutes on 2 cores at 20,000 rows: the synchronous run is bound by the
quotas, about 4 minutes; the batch run, about 5, by rounds of 30-second batches and the driver's CPU). Measured at
20,000 rows (2026-12-07): batch / sync cost 0.387 ($43.63 against $112.86), the same consensus on every row, no
request billed twice; peak RSS 1,005 MiB on the batch side (every row in flight), 186 MiB on the synchronous one:
    python bench/batch_regrade.py
    python bench/batch_regrade.py --rows 2000 --batch-completion-s 5   # a quick look
    python bench/batch_regrade.py --deliberate all
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run_scale import SAMPLE_BANK, make_responses, start_sim, status_bytes, stop_sim  # noqa: E402

# vendor: (rpm, tpm), on the provider and in the council's config alike: a paid tier's limits, of the order the
# providers publish. At 20,000 rows each vendor's synchronous share is about 5,450 chat calls (up to 8 rows a call) and
# 5.4 million tokens: about 2.7 minutes of its requests and as many of its tokens.
QUOTAS = {vendor: (2_000, 2_000_000) for vendor in ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")}

MODES = ("sync", "batch")
RECORD_FILES = ("round1.jsonl", "round2.jsonl", "audit.jsonl", "shadow.jsonl")


def sim_config(out: Path, batch_completion_s: float) -> None:
    """The planted world with ``QUOTAS``, no transport faults, no malformed replies and no latency to speak of."""
    from council.sim import SimConfig

    config = SimConfig.planted(seed=0).model_dump(mode="json")
    quiet = {"error_rate": 0.0, "timeout_rate": 0.0, "reset_rate": 0.0, "bad_body_rate": 0.0, "slow_rate": 0.0,
             "storm_429": 0.0, "truncation_rate": 0.0, "malformed_rate": 0.0}
    for vendor, (rpm, tpm) in QUOTAS.items():
        config["vendors"].setdefault(vendor, dict(config["default"]))
        config["vendors"][vendor].update(quiet, rpm=rpm, tpm=tpm)
    config["default"].update(quiet)
    config["batch_completion_s"] = batch_completion_s
    out.write_text(json.dumps(config), encoding="utf-8")


def council_config(mode: str, deliberate: str):
    """The council's config for ``mode``: the provider's quotas, anthropic on its own API, and the batch settings."""
    from council.protocol.config import BatchSettings, CouncilConfig, VendorSettings

    vendors = {v: VendorSettings(rpm=rpm, tpm=tpm, api="anthropic" if v == "anthropic" else "openai")
               for v, (rpm, tpm) in QUOTAS.items()}
    return CouncilConfig(vendors=vendors, deliberate=deliberate, transport=mode,
                         batch=BatchSettings(flush_s=1.0, poll_s=5.0))


def archived_votes(folder: Path) -> tuple[int, int, float]:
    """Records in the run folder's vote archives, those that are errors, and the sum of their ``cost_usd``."""
    from council.store import archive

    votes = errors = 0
    cost = 0.0
    for name in RECORD_FILES:
        if not (folder / name).exists():
            continue
        for line in archive.iter_lines(folder / name):
            record = orjson.loads(line)
            votes += 1
            errors += record.get("error") is not None
            cost += record.get("cost_usd") or 0.0
    return votes, errors, cost


def child(mode: str, deliberate: str, responses: str, url: str, runs_dir: str, out: str) -> None:
    """One run of the council in this process; figures to ``out`` as JSON."""
    from council.run.runner import RunRequest, run_council

    config = council_config(mode, deliberate)
    req = RunRequest(bank=SAMPLE_BANK, responses=Path(responses), runs_dir=Path(runs_dir), run_id=mode,
                     backend="local", provider_url=url, config=config)
    started = time.perf_counter()
    result = asyncio.run(run_council(req))
    seconds = time.perf_counter() - started
    votes, errors, cost = archived_votes(result.run_dir)
    figures = {
        "mode": mode, "rows": result.summary["rows_total"], "complete": result.complete,
        "not_graded_rows": result.not_graded, "seconds": round(seconds, 3), "peak_rss_bytes": status_bytes("VmHWM"),
        "votes_archived": votes, "error_records": errors, "judge_cost_usd": round(cost, 6),
        "summary_cost_usd": result.summary["cost_usd"], "cost_by_vendor_usd": result.summary["cost_by_vendor_usd"],
        "run_dir": str(result.run_dir),
        "batch_unpriced": config.batch_unpriced() if mode == "batch" else [],
        "batch_sync": {v: why for v in config.roster_vendors if mode == "batch" and (why := config.batch_refusal(v))},
    }
    Path(out).write_text(json.dumps(figures), encoding="utf-8")


def billed(url: str) -> dict:
    """The provider's billing, summed over its vendors: synchronous and batch requests, and batch ones billed twice."""
    with urllib.request.urlopen(f"{url}/sim/stats", timeout=60) as answer:
        vendors = json.load(answer)["vendors"]
    total = {key: sum(v[key] for v in vendors.values()) for key in ("billed", "batch_billed", "batch_billed_twice",
                                                                     "rate_limited", "batch_requests",
                                                                     "prompt_tokens", "completion_tokens")}
    return {"sync_billed": total["billed"] - total["batch_billed"], "batch_billed": total["batch_billed"],
            "batch_billed_twice": total["batch_billed_twice"], "batch_requests": total["batch_requests"],
            "rate_limited": total["rate_limited"], "tokens": total["prompt_tokens"] + total["completion_tokens"],
            "by_vendor": {name: {"sync_billed": v["billed"] - v["batch_billed"], "batch_billed": v["batch_billed"],
                                 "tokens": v["prompt_tokens"] + v["completion_tokens"]}
                          for name, v in sorted(vendors.items())}}


def one_mode(mode: str, args: argparse.Namespace, work: Path, responses: Path) -> dict:
    config = work / f"sim-{mode}.json"
    sim_config(config, args.batch_completion_s)
    proc, url = start_sim(responses, config)
    out = work / f"figures-{mode}.json"
    try:
        done = subprocess.run([sys.executable, __file__, "--child", mode, args.deliberate, str(responses), url,
                               str(work / "runs"), str(out)], cwd=ROOT, check=False)
        stats = billed(url) if done.returncode == 0 else {}
    finally:
        stop_sim(proc)
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} run failed (exit {done.returncode})")
    return {**json.loads(out.read_text(encoding="utf-8")), "provider": stats}


def same_verdicts(sync_dir: str, batch_dir: str) -> dict:
    """The two runs' consensus compared row for row (``council diff``)."""
    from council.scoring.diff import diff_runs
    from council.store.runfolder import RunFolder

    diff = diff_runs(RunFolder.open(Path(sync_dir)), RunFolder.open(Path(batch_dir)))
    return {"rows_compared": diff["rows_compared"], "changed_rows": len(diff["changed_rows"]),
            "first_changed": diff["changed_rows"][:5], "comparable": diff["comparable"],
            "mismatches": diff["mismatches"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000, help="rows to grade in each mode (default 20,000)")
    ap.add_argument("--batch-completion-s", type=float, default=30.0, help="how long a batch takes (default 30)")
    ap.add_argument("--deliberate", choices=("all", "disputed"), default="disputed", help="round two (both modes)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="batch-regrade-") as tmp:
        work = Path(tmp)
        responses = work / "responses.jsonl"
        make_responses(args.rows, responses)
        runs = {}
        for mode in MODES:
            f = runs[mode] = one_mode(mode, args, work, responses)
            p = f["provider"]
            print(f"{mode:>5}: {f['rows']:,} rows, judge cost ${f['judge_cost_usd']:,.2f} (summary "
                  f"${f['summary_cost_usd']:,.2f}), billed {p['sync_billed']:,} sync + {p['batch_billed']:,} batch "
                  f"requests ({p['batch_billed_twice']} twice, {p['rate_limited']:,} 429s), {f['votes_archived']:,} "
                  f"votes archived, {f['seconds']:.1f} s, peak RSS {f['peak_rss_bytes'] / 2**20:.1f} MiB, "
                  f"not graded {f['not_graded_rows']}", flush=True)
        verdicts = same_verdicts(runs["sync"]["run_dir"], runs["batch"]["run_dir"])
    sync, batch = runs["sync"], runs["batch"]
    ratios = {"cost": round(batch["judge_cost_usd"] / sync["judge_cost_usd"], 4),
              "wall_time": round(batch["seconds"] / sync["seconds"], 4)}
    print(f"batch / sync: cost {ratios['cost']:.3f}, wall time {ratios['wall_time']:.3f}; consensus differs on "
          f"{verdicts['changed_rows']:,} of {verdicts['rows_compared']:,} rows")
    problems = [f"{m}: {runs[m]['not_graded_rows']:,} rows not graded" for m in MODES if not runs[m]["complete"]]
    if verdicts["changed_rows"] or verdicts["rows_compared"] != args.rows:
        problems.append(f"consensus differs on {verdicts['changed_rows']:,} rows ({verdicts['rows_compared']:,} "
                        f"compared of {args.rows:,})")
    problems += [f"{m}: {runs[m]['provider']['batch_billed_twice']} batch requests billed twice" for m in MODES
                 if runs[m]["provider"]["batch_billed_twice"]]
    if batch["judge_cost_usd"] >= sync["judge_cost_usd"]:
        problems.append(f"batch cost ${batch['judge_cost_usd']:,.2f} is not below sync ${sync['judge_cost_usd']:,.2f}")
    print("OK: both runs complete, same consensus on every row, no request billed twice, batch cheaper"
          if not problems else "FAILED: " + "; ".join(problems))
    for f in runs.values():
        del f["run_dir"]
    out = {"bench": "batch_regrade", "rows": args.rows, "deliberate": args.deliberate,
           "batch_completion_s": args.batch_completion_s, "quotas": {v: {"rpm": r, "tpm": t} for v, (r, t) in
                                                                    QUOTAS.items()},
           "modes": runs, "ratios": ratios, "verdicts": verdicts, "ok": not problems}
    print(json.dumps(out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
