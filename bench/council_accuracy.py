"""The council's headline claims on the embedded provider's realistic world, over several seeds.

For each seed, the shipped sample (160 items x 6 models) is graded twice against the planted world
(`SimConfig.planted(seed)`: correlated judge errors, family leniency, herding, self-naming, messy JSON):
with the default roster (five regular seats and one reserve) and with the five regular seats alone.
Reported per seed and on average:

- round-one pairwise percent agreement between judges per probe (each pair on the rows both graded),
  against the targets of 98% (factual probes: ``calibration``) and 87% (``honest_ignorance``);
- the council's accuracy against the world's truth next to its best single member's (round one), and the
  difference with its paired bootstrap interval (``accuracy_vs_gold.council_minus_best_member``);
- panel parity: rows with an even panel, and the spread across models of (true score - council score),
  per seed and of the mean over seeds (the part that does not average out: the protocol's own bias).

Baseline, measured in the same run: the same seeds without the reserve seat. The ratio line compares the
spread of the mean bias without and with the reserve.

Run from the repository root:  python bench/council_accuracy.py --seeds 10      (about 90 s)
The check (the bench exits 1 when it fails), on the default roster: the mean agreement meets its target on
each of the two probes, and in no seed is the council significantly (95%) worse than its best member.
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bank  # noqa: E402
from council.protocol.config import CouncilConfig, default_roster  # noqa: E402
from council.run.runner import RunRequest, run_council  # noqa: E402


def pairwise_by_probe(folder: Path) -> dict[str, float]:
    """Round-one percent agreement over every pair of judges and every row both graded, per probe."""
    probe = {orjson.loads(x)["id"]: orjson.loads(x)["probe"] for x in (folder / "items.jsonl").read_bytes().splitlines()}
    item = {orjson.loads(x)["row_id"]: orjson.loads(x)["item_id"] for x in (folder / "rows.jsonl").read_bytes().splitlines()}
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    for line in (folder / "round1.jsonl").read_bytes().splitlines():
        r = orjson.loads(line)
        if r["verdict"]:
            votes[r["row_id"]][r["member"]] = r["verdict"]
    agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row_id, by_member in votes.items():
        tally = agree[probe[item[row_id]]]
        for a, b in itertools.combinations(sorted(by_member), 2):
            tally[0] += by_member[a] == by_member[b]
            tally[1] += 1
    return {p: round(100 * k / n, 2) for p, (k, n) in sorted(agree.items())}


AGREEMENT_TARGETS = {"calibration": 98.0, "honest_ignorance": 87.0}  # percent, round one, mean over seeds


async def one(seed: int, reserve: bool, runs: Path) -> dict:
    roster = default_roster() if reserve else [m for m in default_roster() if not m.reserve]
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=bank.SAMPLE_RESPONSES, runs_dir=runs,
                                          run_id=f"s{seed}-{'reserve' if reserve else 'plain'}", backend="local",
                                          config=CouncilConfig(seed=seed, roster=roster)))
    s = result.summary
    bias = {m: 100 * (v["true_score"] - v["score"]) for m, v in s["models"].items()}
    acc = s["accuracy_vs_gold"]
    return {"bias": bias, "spread": max(bias.values()) - min(bias.values()), "even": s["panels"]["even_panel_rows"],
            "council": 100 * acc["council"], "best": acc["best_member_round1"],
            "best_acc": 100 * acc["members_round1"][acc["best_member_round1"]],
            "diff": {k: 100 * v for k, v in acc["council_minus_best_member"].items()},
            "agreement": pairwise_by_probe(result.run_dir)}


def summarise(name: str, results: list[dict]) -> dict:
    mean_bias = {m: statistics.mean(r["bias"][m] for r in results) for m in results[0]["bias"]}
    out = {
        "even_panel_rows_mean": statistics.mean(r["even"] for r in results),
        "spread_per_seed_mean": round(statistics.mean(r["spread"] for r in results), 2),
        "spread_per_seed_max": round(max(r["spread"] for r in results), 2),
        "spread_of_mean_bias": round(max(mean_bias.values()) - min(mean_bias.values()), 2),
        "mean_bias": {m: round(v, 2) for m, v in mean_bias.items()},
        "council_minus_best_mean": round(statistics.mean(r["diff"]["value"] for r in results), 2),
        "seeds_council_significantly_better": sum(r["diff"]["ci_low"] > 0 for r in results),
        "seeds_council_significantly_worse": sum(r["diff"]["ci_high"] < 0 for r in results),
        "agreement_by_probe_mean": {p: round(statistics.mean(r["agreement"][p] for r in results), 2)
                                    for p in results[0]["agreement"]},
    }
    print(f"{name:8s} even-panel rows {out['even_panel_rows_mean']:.0f}/960  spread (true - council) per seed "
          f"{out['spread_per_seed_mean']:.1f} pts (max {out['spread_per_seed_max']:.1f}), of the mean bias "
          f"{out['spread_of_mean_bias']:.2f} pts; council - best member {out['council_minus_best_mean']:+.2f} pts "
          f"(better in {out['seeds_council_significantly_better']}, worse in "
          f"{out['seeds_council_significantly_worse']} of {len(results)} seeds at 95%)")
    return out


async def main(seeds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, list[dict]] = {"reserve": [], "plain": []}
        for seed in range(seeds):
            for name in results:
                r = await one(seed, name == "reserve", Path(tmp))
                results[name].append(r)
                d = r["diff"]
                print(f"seed {seed} {name:7s} council {r['council']:.1f}% best {r['best']} {r['best_acc']:.1f}% "
                      f"diff {d['value']:+.2f} [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}]  spread {r['spread']:.1f}  "
                      f"even {r['even']}  agreement {r['agreement']}", flush=True)
    figures = {name: summarise(name, rs) for name, rs in results.items()}
    ratio = figures["plain"]["spread_of_mean_bias"] / max(figures["reserve"]["spread_of_mean_bias"], 1e-9)
    print(f"spread of mean bias: without reserve / with reserve = {ratio:.2f}x")
    reserve = figures["reserve"]
    problems = [f"{probe}: agreement {reserve['agreement_by_probe_mean'].get(probe)}% (target {target:g}%)"
                for probe, target in AGREEMENT_TARGETS.items()
                if (reserve["agreement_by_probe_mean"].get(probe) or 0.0) < target]
    if reserve["seeds_council_significantly_worse"]:
        problems.append(f"the council is significantly worse than its best member in "
                        f"{reserve['seeds_council_significantly_worse']} seeds")
    print("OK: agreement targets met, the council never significantly worse than its best member" if not problems
          else "FAILED: " + "; ".join(problems))
    print(json.dumps({"seeds": seeds, "ratio_spread_plain_over_reserve": round(ratio, 3), **figures,
                      "ok": not problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    raise SystemExit(asyncio.run(main(parser.parse_args().seeds)))
