"""Fault matrix: does a council run survive each transient provider fault, without losing a verdict and
without paying twice?

For each fault the embedded provider injects it into every judge vendor (on top of the planted scenario)
and the whole council runs (``run_council``, local backend) on the shipped sample plus a copy of part of
it under other row ids (1,200 rows = 12,000 votes by default). A no-fault baseline runs in the same
process first. For each run we print

    votes        records archived (round one and round two)
    retries      attempts re-sent after a fault: the sum over archived requests of (attempts - calls), where
                 calls are the request's answered calls plus the failed one, if any (a repair re-ask of an
                 unreadable verdict is a call, not a retry)
    errors       votes archived as ``parse_status="error"`` (retries exhausted; asked again on resume)
    lost         rows not graded (``summary["not_graded_rows"]``); must be 0
    paid twice   calls the provider billed (its own count) minus the answered calls the archive holds
    unreadable   answers the provider says it billed and then broke (a 200 whose body was cut or not JSON:
                 the fault itself); ``slow`` the answers it trickled out slowly
    wall         wall time of the run, and its ratio to the baseline's

The check: no row lost, every vote archived exactly once (distinct (row, member, round) = votes), and
``unreadable <= paid twice <= unreadable + slow``: a run that completes pays twice only for the answers
the provider broke, plus at most the slow answers the client gave up on. Every other fault (429, 5xx,
stall, reset) is not billed, so it can cost nothing twice. The bench exits 1 when the check fails.

The client's read timeout is shortened (1 s, every run, so the baseline is comparable: the run config's
``timeouts``) and the provider's stall is 3 s, so a stalled request costs one read timeout. Each request is
tried up to ten times (``ATTEMPTS``; the default policy's six lose about one vote a run to 20% 5xx).

Run from the repository root:  python bench/fault_matrix.py   (about two minutes; --rows 300 for a
short run). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

import bank
from council.core.schema import ResponseRow
from council.protocol.config import CouncilConfig, RetryPolicy, Timeouts
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig

READ_S = 1.0  # the client's read timeout in every run of the matrix
STALL_S = 3.0  # how long a stalled provider request hangs
# Attempts per request in every run. Each attempt meets a planted fault on its own draw: at 20% 5xx, the default
# six leave 0.2**6 = 6.4e-5 of the votes failed (asked again on resume), about one vote per 12,000-vote run; ten
# leave 1e-7. What the matrix checks is that every fault is survived by retrying.
ATTEMPTS = 10

# name -> VendorBehaviour fields set on every judge vendor
FAULTS: dict[str, dict[str, Any]] = {
    "none": {},
    "429 storm (3 s)": {"storm_429": 3.0, "storm_429_start_s": 1.0},
    "5xx (20% of requests)": {"error_rate": 0.2},
    "timeouts (5%)": {"timeout_rate": 0.05},
    "connection resets (10%)": {"reset_rate": 0.1},
    "malformed bodies (10%)": {"bad_body_rate": 0.1, "bad_body": "invalid"},
    "truncated bodies (10%)": {"bad_body_rate": 0.1, "bad_body": "cut"},
    "slow streams (20%, 300 ms)": {"slow_rate": 0.2, "slow_ms": 300.0},
    "all of the above": {"storm_429": 3.0, "storm_429_start_s": 1.0, "error_rate": 0.05, "timeout_rate": 0.02,
                         "reset_rate": 0.03, "bad_body_rate": 0.03, "slow_rate": 0.05, "slow_ms": 300.0},
}


def make_rows(n: int) -> list[ResponseRow]:
    """The shipped sample, then copies of its rows under other row ids, ``n`` rows in all."""
    items = bank.load_bank(bank.SAMPLE_BANK)
    sample = bank.load_responses(bank.SAMPLE_RESPONSES, items)
    rows = list(sample[:n])
    copy = 1
    while len(rows) < n:
        rows += [r.model_copy(update={"row_id": f"{r.row_id}@{copy}"}) for r in sample[: n - len(rows)]]
        copy += 1
    return rows


def sim_config(fault: dict[str, Any], seed: int) -> SimConfig:
    planted = SimConfig.planted(seed)
    vendors = {v: b.model_copy(update=fault) for v, b in planted.vendors.items()}
    return planted.model_copy(update={"vendors": vendors, "default": planted.default.model_copy(update=fault),
                                      "timeout_s": STALL_S})


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()] if path.exists() else []


def measure(result: Any, seconds: float) -> dict[str, Any]:
    records = _lines(result.run_dir / "round1.jsonl") + _lines(result.run_dir / "round2.jsonl")
    requests: dict[str, dict] = {}
    for r in records:
        requests.setdefault(r["request_id"], r)  # a batched request's records share its calls
    calls = sum(len(r["raw_outputs"]) for r in requests.values())
    retries = sum(r["attempts"] - len(r["raw_outputs"]) - (1 if r["error"] else 0) for r in requests.values())
    vendors = (result.provider_stats or {}).get("vendors", {})
    billed = sum(v["billed"] for v in vendors.values())
    return {
        "votes": len(records), "distinct_votes": len({(r["row_id"], r["member"], r["round"]) for r in records}),
        "retries": retries, "errors": sum(r["parse_status"] == "error" for r in records),
        "lost": int(result.summary.get("not_graded_rows", 0)), "rows": int(result.summary.get("rows", 0) or 0),
        "requests": sum(v["requests"] for v in vendors.values()), "billed": billed, "archived_calls": calls,
        "paid_twice": billed - calls, "unreadable": sum(v.get("bad_bodies", 0) for v in vendors.values()),
        "slow": sum(v.get("slow_answers", 0) for v in vendors.values()), "wall_s": round(seconds, 2),
        "faults_served": {k: sum(v.get(k, 0) for v in vendors.values())
                          for k in ("storm_429s", "errors", "stalls", "resets", "bad_bodies", "slow_answers")},
    }


async def run_matrix(n_rows: int, faults: dict[str, dict[str, Any]], workdir: Path, seed: int = 0,
                     retry: RetryPolicy | None = None) -> list[dict[str, Any]]:
    rows = make_rows(n_rows)
    config = CouncilConfig(seed=seed, timeouts=Timeouts(read_s=READ_S, total_s=30.0),
                           retry=retry or RetryPolicy(max_attempts=ATTEMPTS),
                           deliberate="all")  # both rounds on every row: ten votes a row, each counted
    out = []
    for i, (name, fault) in enumerate(faults.items()):
        path = workdir / f"sim-{i}.json"
        path.write_bytes(orjson.dumps(sim_config(fault, seed).model_dump(mode="json")))
        req = RunRequest(bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, rows=rows,
                         runs_dir=workdir / "runs", run_id=f"fault-{i}", backend="local", config=config,
                         sim_config=path)
        started = time.perf_counter()
        result = await run_council(req)
        out.append({"fault": name, **measure(result, time.perf_counter() - started)})
    return out


def table(results: list[dict[str, Any]]) -> str:
    base = results[0]["wall_s"] or 1e-9
    head = (f"{'fault':<28} {'votes':>6} {'retries':>7} {'errors':>6} {'lost':>4} {'billed':>6} "
            f"{'paid twice':>10} {'unreadable':>10} {'slow':>5} {'wall s':>7} {'x base':>6}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r['fault']:<28} {r['votes']:>6} {r['retries']:>7} {r['errors']:>6} {r['lost']:>4} {r['billed']:>6} "
            f"{r['paid_twice']:>10} {r['unreadable']:>10} {r['slow']:>5} {r['wall_s']:>7.2f} "
            f"{r['wall_s'] / base:>6.2f}")
    return "\n".join(lines)


def verdict(results: list[dict[str, Any]]) -> list[str]:
    """What fails the matrix: a lost verdict, a vote archived twice, or paying twice for an answer the
    provider did not break (``paid twice`` outside ``[unreadable, unreadable + slow]``)."""
    problems = []
    for r in results:
        if r["lost"]:
            problems.append(f"{r['fault']}: {r['lost']} rows not graded")
        if r["distinct_votes"] != r["votes"]:
            problems.append(f"{r['fault']}: {r['votes'] - r['distinct_votes']} votes archived twice")
        if not r["unreadable"] <= r["paid_twice"] <= r["unreadable"] + r["slow"]:
            problems.append(f"{r['fault']}: paid twice for {r['paid_twice']} calls, the provider broke "
                            f"{r['unreadable']} answers and sent {r['slow']} slowly")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1200, help="rows per run (10 votes each; default 1200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fault-matrix-") as tmp:
        results = asyncio.run(run_matrix(args.rows, FAULTS, Path(tmp), args.seed))
    print(table(results))
    base = results[0]["wall_s"] or 1e-9
    print("wall time with fault / without: " + ", ".join(
        f"{r['fault'].split(' (')[0]} {r['wall_s'] / base:.2f}x" for r in results[1:]))
    problems = verdict(results)
    print("OK: no verdict lost, each vote archived once, paid twice only for the answers the provider broke"
          if not problems else "FAILED: " + "; ".join(problems))
    print(orjson.dumps({"bench": "fault_matrix", "rows": args.rows, "seed": args.seed, "read_timeout_s": READ_S,
                        "stall_s": STALL_S, "ok": not problems, "results": results}).decode())
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
