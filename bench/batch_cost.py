"""What a batch run of the shipped sample costs against a synchronous one, and whether it reaches the same verdicts.

Data: the shipped sample (bank/samples: 160 items, 960 rows), as ``council run`` grades it.

Provider: the embedded provider in the run's own process, at the sample's planted world and seed 0, as ``council
run`` starts it; its batches end ``--batch-completion-s`` seconds (3 by default) after their creation.

Modes, each a fresh run of the council in a child process (``council.run.runner.run_council``, ``backend="local"``,
the default roster and config but for):
- ``sync``: the default synchronous transport (no request limit binds on the sample: one row a request);
- ``sync-packed``: synchronous with every vendor's request limit binding (``rpm`` 10^6, no token limit), so each
  request packs up to ``max_batch`` rows, as a batch request does;
- ``batch``: ``--transport batch`` (``batch.flush_s`` 0.5 s, ``batch.poll_s`` 1 s).

Printed per mode: the judge cost (the sum of ``cost_usd`` over the archived votes), the prompt and completion tokens
and requests the provider billed, the votes and their share asked in packed requests, and the wall time; then the
batch / sync and batch / sync-packed cost ratios, and the verdict agreement of the batch run with each synchronous
run: consensus row for row (``council diff``), and each vote's verdict. Last, one JSON object with every figure.

The check (the bench exits 1 when it fails): every run complete; the batch judge cost at most 0.55 of the
synchronous one; the batch run's consensus, and the verdict of every vote both runs asked, those of both
synchronous runs. The deliberation audit (round two on a seeded share of the unanimous rows, never counted) stops
early when its flip rate is bounded, which the coordinator judges row by row only on a synchronous run: the batch
run asks the audit's whole share, so it has more (uncounted) votes; any vote one run asked and the other did not
must be on an audit row.

Run from the repository root (about a minute on 2 cores):
    python bench/batch_cost.py
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

from bench.support.results import save  # noqa: E402

MODES = ("sync", "sync-packed", "batch")
MAX_RATIO = 0.55
RECORD_FILES = ("round1.jsonl", "round2.jsonl")


def council_config(mode: str):
    from council.core.vendors import DEFAULT_RESERVES, DEFAULT_ROSTER
    from council.protocol.config import BatchSettings, CouncilConfig, VendorSettings

    if mode == "sync-packed":
        vendors = {v: VendorSettings(rpm=1_000_000) for v in (*DEFAULT_ROSTER, *DEFAULT_RESERVES)}
        return CouncilConfig(vendors=vendors)
    if mode == "batch":
        return CouncilConfig(transport="batch", batch=BatchSettings(flush_s=0.5, poll_s=1.0))
    return CouncilConfig()


def child(mode: str, runs_dir: str, sim_config: str, out: str) -> None:
    """One run of the shipped sample in this process; figures to ``out`` as JSON."""
    import bank
    from council.run.runner import RunRequest, run_council
    from council.store import archive

    config = council_config(mode)
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, runs_dir=Path(runs_dir), run_id=mode,
                     backend="local", config=config, sim_config=Path(sim_config))
    started = time.perf_counter()
    result = asyncio.run(run_council(req))
    seconds = time.perf_counter() - started
    votes, packed, cost = {}, 0, 0.0
    for name in RECORD_FILES:
        for line in archive.iter_lines(result.run_dir / name):
            record = json.loads(line)
            votes[f"{record['row_id']}|{record['member']}|{record['round']}"] = record["verdict"]
            packed += record["batch_size"] > 1
            cost += record["cost_usd"] or 0.0
    models = (result.provider_stats or {}).get("models", {})
    billed = {key: sum(m.get(key, 0) for m in models.values()) for key in ("billed", "batch_billed", "prompt_tokens",
                                                                            "completion_tokens", "reasoning_tokens")}
    figures = {"mode": mode, "complete": result.complete, "rows": result.summary["rows_total"],
               "seconds": round(seconds, 3), "judge_cost_usd": round(cost, 6), "votes": len(votes),
               "packed_share": round(packed / max(1, len(votes)), 4), "provider": billed,
               "cost_by_vendor_usd": result.summary["cost_by_vendor_usd"], "run_dir": str(result.run_dir),
               "batching": config.batching, "batch_sync": {v: config.batch_refusal(v) for v in config.roster_vendors
                                                           if config.transport == "batch" and config.batch_refusal(v)},
               "batch_unpriced": config.batch_unpriced()}
    Path(out).write_text(json.dumps({**figures, "vote_verdicts": votes}), encoding="utf-8")


def agreement(a: dict, b: dict) -> dict:
    """Consensus row for row (``council diff``) and each vote's verdict, of run ``b`` against run ``a``; the votes
    only one of them asked (a deliberation audit that stops early on one transport and not the other asks a
    different number of uncounted round twos), with the rows they are on."""
    from council.scoring.diff import diff_runs
    from council.store.runfolder import RunFolder

    diff = diff_runs(RunFolder.open(Path(a["run_dir"])), RunFolder.open(Path(b["run_dir"])))
    va, vb = a["vote_verdicts"], b["vote_verdicts"]
    both = va.keys() & vb.keys()
    audit = set()
    for run in (a, b):
        for line in (Path(run["run_dir"]) / "verdicts.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            audit.update([row["row_id"]] if row.get("deliberation_audit") else [])
    only = [k for k in va.keys() ^ vb.keys()]
    return {"rows_compared": diff["rows_compared"], "rows_changed": len(diff["changed_rows"]),
            "votes_compared": len(both), "votes_changed": sum(va[k] != vb[k] for k in both),
            "votes_only_in_one": len(only),
            "votes_only_in_one_off_audit_rows": sum(k.split("|")[0] not in audit for k in only)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-completion-s", type=float, default=3.0, help="how long a batch takes (default 3)")
    ap.add_argument("--save", action="store_true", help="write the figures to bench/results for the docs")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    from council.sim import SimConfig

    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="batch-cost-") as tmp:
        work = Path(tmp)
        sim = work / "sim.json"
        config = SimConfig.planted(seed=0).model_dump(mode="json")
        sim.write_text(json.dumps({**config, "batch_completion_s": args.batch_completion_s}), encoding="utf-8")
        for mode in MODES:
            out = work / f"{mode}.json"
            done = subprocess.run([sys.executable, __file__, "--child", mode, str(work / "runs"), str(sim), str(out)],
                                  cwd=ROOT, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"the {mode} run failed (exit {done.returncode})")
            f = runs[mode] = json.loads(out.read_text(encoding="utf-8"))
            p = f["provider"]
            print(f"{mode:>11}: {f['rows']} rows, judge cost ${f['judge_cost_usd']:.4f}, {p['billed']:,} requests "
                  f"billed ({p['batch_billed']:,} in batches), {p['prompt_tokens']:,} prompt + "
                  f"{p['completion_tokens']:,} completion tokens, {f['votes']:,} votes ({f['packed_share']:.0%} "
                  f"packed), {f['seconds']:.1f} s", flush=True)
        agree = {other: agreement(runs[other], runs["batch"]) for other in ("sync", "sync-packed")}
    ratios = {f"batch/{other}": round(runs["batch"]["judge_cost_usd"] / runs[other]["judge_cost_usd"], 4)
              for other in ("sync", "sync-packed")}
    for other, a in agree.items():
        print(f"batch vs {other}: cost ratio {ratios[f'batch/{other}']:.3f}; consensus differs on "
              f"{a['rows_changed']} of {a['rows_compared']} rows, verdicts on {a['votes_changed']} of the "
              f"{a['votes_compared']} votes both asked ({a['votes_only_in_one']} asked by one only, on deliberation "
              "audit rows)")
    if runs["batch"]["batch_sync"]:
        print("synchronous in the batch run: "
              + "; ".join(f"{v} ({why})" for v, why in runs["batch"]["batch_sync"].items()))
    problems = [f"{m}: not complete" for m in MODES if not runs[m]["complete"]]
    if ratios["batch/sync"] > MAX_RATIO:
        problems.append(f"batch / sync cost {ratios['batch/sync']:.3f} > {MAX_RATIO}")
    problems += [f"batch vs {o}: {a['rows_changed']} rows, {a['votes_changed']} votes differ, "
                 f"{a['votes_only_in_one_off_audit_rows']} votes asked by one run only off the audit's rows"
                 for o, a in agree.items()
                 if a["rows_changed"] or a["votes_changed"] or a["votes_only_in_one_off_audit_rows"]]
    print(f"OK: batch at {ratios['batch/sync']:.3f} of the synchronous cost (bound {MAX_RATIO}), the same verdicts"
          if not problems else "FAILED: " + "; ".join(problems))
    for f in runs.values():
        del f["run_dir"], f["vote_verdicts"]
    figures = {"bench": "batch_cost", "rows": runs["sync"]["rows"], "batch_completion_s": args.batch_completion_s,
               "modes": runs, "ratios": ratios, "agreement": agree, "max_ratio": MAX_RATIO, "ok": not problems}
    if args.save:
        save("batch_cost", figures)
    print(json.dumps(figures))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
