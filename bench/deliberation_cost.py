"""What round two costs under ``--deliberate disputed``, against its own round one, and what it changes against
``--deliberate all``: the shipped sample graded at each seed by the embedded provider (as ``council run`` grades
it, at list prices from genai-prices), on the local backend, three times:

- ``all``: round two on every row (the verdicts the others are compared with);
- ``before``: ``--deliberate disputed`` as it was: judge-v3 (round two always continues round one's
  conversation) and an audit of the whole 10% share of the skipped rows (``deliberation_audit_stop`` 0);
- ``disputed``: the default: judge-v4 (round two continues round one's conversation only where a prompt cache
  serves the repeat, else judge-v2's one message) and the sequential audit (it stops once the upper end of the
  95% Wilson interval of its flip rate is at or under ``deliberation_audit_stop``, 0.2; an audited row asks its
  cheapest members first and stops once its change is decided: three votes of five where nobody revises).

For ``before`` and ``disputed``: judge cost over round one's judge cost, both from the same run's
``summary.json`` (``cost_by_round_usd``); prompt tokens of a round-two vote against a round-one vote, per seat and
over the panel (per deliberated row: its votes' sum), from the run's round files; requests and votes of each
round (rows per request: round two packs its rows as round one does); verdicts equal to ``all``'s, with a 95%
Wilson interval; the audit's candidates, audited rows, changed verdicts and final bound. The ``packed`` world is
the same sample with every vendor's request limit binding (1,200 requests a minute, 8 rows a request at most), so
that both rounds pack rows into requests. Targets: ``disputed`` at most 1.2 times its round one, and at least 99%
of its verdicts equal to ``all``'s.

Run from the repository root::

    python bench/deliberation_cost.py                      # the sample at seeds 0, 1 and 3
    python bench/deliberation_cost.py --seeds 3 --worlds sample,packed

Output: a table per world and seed, then as the LAST line one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bank  # noqa: E402
from bench.support.results import save  # noqa: E402
from aggregator import wilson_interval  # noqa: E402
from council.protocol.config import CouncilConfig, VendorSettings  # noqa: E402
from council.run.runner import RunRequest, run_council  # noqa: E402
from council_cost import _lines  # noqa: E402 - the run folder's JSON lines, as the cost bench reads them

TARGET_RATIO = 1.2
MIN_AGREEMENT = 0.99
STRATEGIES = {  # name: council config
    "all": {"deliberate": "all"},
    "before": {"deliberate": "disputed", "judge": {"prompt_version": "judge-v3"}, "deliberation_audit_stop": 0.0},
    "disputed": {},
}
PACKED = {"rpm": 1200, "tpm": 2_000_000, "max_batch": 8}  # the request limit binds: rounds pack their rows


async def grade(tmp: Path, world: str, name: str, seed: int) -> Path:
    config = dict(STRATEGIES[name])
    if world == "packed":
        config["vendors"] = {v: VendorSettings(**PACKED) for v in CouncilConfig().roster_vendors}
    result = await run_council(RunRequest(
        bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, runs_dir=tmp / "runs", run_id=f"{world}-{seed}-{name}",
        backend="local", config=CouncilConfig(seed=seed, **config)))
    return result.run_dir


def tokens(folder: Path) -> dict:
    """Prompt tokens a vote of each round, per seat and over the panel (round two's per row: over the rows that
    deliberated, not the audit's, which may ask part of their panel); requests and votes of each round."""
    by_seat: dict[str, dict[int, list[int]]] = defaultdict(lambda: {1: [], 2: []})
    deliberated = {v["row_id"] for v in _lines(folder / "verdicts.jsonl") if v["deliberated"]}
    requests, panel = {}, {1: [0, set()], 2: [0, set()]}  # round -> [prompt tokens, rows] over the panel
    for round_ in (1, 2):
        records = [r for r in _lines(folder / f"round{round_}.jsonl") if not r.get("audit_of")]
        for r in records:
            by_seat[r["member"]][round_].append(r["usage"]["prompt_tokens"])
            if round_ == 1 or r["row_id"] in deliberated:
                panel[round_][0] += r["usage"]["prompt_tokens"]
                panel[round_][1].add(r["row_id"])
        requests[str(round_)] = {"votes": len(records), "requests": len({r["request_id"] for r in records}),
                            "rows": len({r["row_id"] for r in records})}
    seats = {}
    for seat, rounds in sorted(by_seat.items()):
        one, two = (statistics.fmean(rounds[k]) if rounds[k] else 0.0 for k in (1, 2))
        seats[seat] = {"round1": round(one, 1), "round2": round(two, 1), "ratio": round(two / one, 3) if one else None}
    per_row = {k: panel[k][0] / max(1, len(panel[k][1])) for k in (1, 2)}
    return {"per_seat": seats, "per_row": {"round1": round(per_row[1], 1), "round2": round(per_row[2], 1),
                                           "ratio": round(per_row[2] / per_row[1], 3) if per_row[1] else None},
            "requests": requests}


def figures(folders: dict[str, Path]) -> dict:
    verdicts = {n: {v["row_id"]: v for v in _lines(f / "verdicts.jsonl")} for n, f in folders.items()}
    base = verdicts["all"]
    every = orjson.loads((folders["all"] / "summary.json").read_bytes())["cost_by_round_usd"]
    out = {"all": {"cost_usd": {"round1": every["1"], "round2": every["2"]},
                   "ratio_to_round1": (every["1"] + every["2"]) / every["1"]}}
    for name in ("before", "disputed"):
        summary = orjson.loads((folders[name] / "summary.json").read_bytes())
        cost = summary["cost_by_round_usd"]
        same = sum(verdicts[name][r]["consensus"] == v["consensus"] for r, v in base.items())
        low, high = wilson_interval(same, len(base))
        audit = summary["deliberation"]["audit"]
        out[name] = {
            "cost_usd": {"round1": cost["1"], "round2": cost.get("2", 0.0)},
            "ratio_to_round1": (cost["1"] + cost.get("2", 0.0)) / cost["1"],
            "prompt_tokens": tokens(folders[name]),
            "agreement_with_all": {"rows": len(base), "same": same, "share": same / len(base), "ci95": [low, high]},
            "rows_deliberated": summary["deliberation"]["rows_deliberated"],
            "audit": {k: audit.get(k) for k in ("candidates", "rows", "changed", "ci_high", "stop_at", "stopped_early")},
        }
    return out


def show(world: str, seed: int, f: dict) -> None:
    print(f"\n{world}, seed {seed}: judge cost over round one's (in the same run), verdicts as --deliberate all's")
    print(f"  all       {f['all']['ratio_to_round1']:.3f}x  (round two ${f['all']['cost_usd']['round2']:.4f} on every "
          f"row; round one ${f['all']['cost_usd']['round1']:.4f})")
    for name, g in f.items():
        if name == "all":
            continue
        a, t, audit = g["agreement_with_all"], g["prompt_tokens"], g["audit"]
        req = t["requests"]
        print(f"  {name:9s} {g['ratio_to_round1']:.3f}x  (round two ${g['cost_usd']['round2']:.4f} on "
              f"{g['rows_deliberated']} deliberated + {audit['rows']} audited rows; round one "
              f"${g['cost_usd']['round1']:.4f})  same verdicts {100 * a['share']:.2f}% "
              f"[{100 * a['ci95'][0]:.2f}, {100 * a['ci95'][1]:.2f}]")
        print(f"            audit: {audit['rows']} of {audit['candidates']} candidates, {audit['changed']} changed, "
              f"95% bound {audit['ci_high']} (stop at {audit['stop_at']}, stopped early: {audit['stopped_early']})")
        print(f"            prompt tokens a deliberated row {t['per_row']['round2']:.0f} vs round one's "
              f"{t['per_row']['round1']:.0f} ({t['per_row']['ratio']:.2f}x); rows per request: round one "
              f"{req['1']['votes'] / req['1']['requests']:.2f}, round two "
              f"{req['2']['votes'] / max(1, req['2']['requests']):.2f} ({req['2']['requests']} requests, "
              f"{req['2']['votes']} votes)")
        print("            per seat (round two / round one, a vote): " + ", ".join(
            f"{s} {v['round2']:.0f}/{v['round1']:.0f}" for s, v in t["per_seat"].items()))


async def main_async(args: argparse.Namespace) -> int:
    out: dict[str, dict] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="council-deliberation-") as tmp_name:
        tmp = Path(tmp_name)
        for world in args.worlds.split(","):
            for seed in map(int, args.seeds.split(",")):
                folders = {name: await grade(tmp, world, name, seed) for name in STRATEGIES}
                f = figures(folders)
                show(world, seed, f)
                d = f["disputed"]
                met = {"ratio": d["ratio_to_round1"] <= TARGET_RATIO,
                       "agreement": d["agreement_with_all"]["share"] >= MIN_AGREEMENT}
                print(f"  target: disputed {d['ratio_to_round1']:.3f}x <= {TARGET_RATIO}x: "
                      f"{'met' if met['ratio'] else 'NOT met'}; same verdicts as all "
                      f"{100 * d['agreement_with_all']['share']:.2f}% >= 99%: "
                      f"{'met' if met['agreement'] else 'NOT met'}")
                if world == "sample":
                    ok = ok and all(met.values())
                out.setdefault(world, {})[str(seed)] = {**f, "target_met": met}
    measured = {"seeds": args.seeds, "worlds": out, "target_ratio": TARGET_RATIO, "min_agreement": MIN_AGREEMENT,
                "ok": ok}
    if args.save:
        save("deliberation_cost", measured)
    print(orjson.dumps(measured).decode())
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,3", help="comma-separated seeds (default: %(default)s)")
    parser.add_argument("--worlds", default="sample", help="comma-separated: sample, packed (default: %(default)s)")
    parser.add_argument("--save", action="store_true", help="write the figures to bench/results for the docs")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
