"""What a council costs per graded row, strategy by strategy, on the same rows and seed, in one run.

Two worlds: the shipped sample (judge prompts of about 400 tokens), and the same rows with long responses (each
answer preceded by a worked solution of about ``--long-chars`` characters, a few thousand tokens, as long-form
benchmarks produce; the verdict the world holds true is the row's own). Every strategy grades every row of a
world with the embedded provider's planted judges, at list prices (genai-prices), on the local backend:

- (a) a single judge: each roster member's round-one votes alone (from run c), per row it graded;
- (b) one blind round of the panel: run c's round one;
- (c) the council before cost mattered: ``--deliberate all``, judge-v2 layout, a provider without a prompt cache;
- (d) ``--deliberate disputed`` (no audit), judge-v3, a provider without a prompt cache;
- (e) ``--deliberate disputed`` (no audit), judge-v3, a provider that caches prompts as OpenAI documents it;
- (f) the default: (e) with the 10% deliberation audit.

For (d), (e) and (f): the share of consensus verdicts that differ from (c), with its Wilson interval, and accuracy
against the world's truth beside (c)'s, with a paired bootstrap interval of the difference (rows resampled
together). Ratios are each strategy's cost per graded row over (b)'s, measured in the same run. Targets: (d) at
most 1.3x (b) on the sample, (e) at most 1.1x (b) on long responses, at most 1% of verdicts differing from (c).

Run from the repository root::

    python bench/council_cost.py                 # both worlds
    python bench/council_cost.py --worlds sample

Output: a table per world, then as the LAST line one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

import numpy as np
import orjson

import bank
from aggregator import wilson_interval
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig

SOLUTION = ("Step {k}: we restate the quantities involved, check each against the question's conditions, and "
            "carry the result forward to the next step of the working. ")
TARGETS = {"sample": ("disputed", 1.3), "long": ("disputed_cached", 1.1)}
MAX_DIFFERING = 0.01


def long_responses(path: Path, chars: int) -> Path:
    """The sample's rows, each response preceded by a worked solution of about ``chars`` characters."""
    out = path / "long_responses.jsonl"
    rows = [orjson.loads(x) for x in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if x.strip()]
    pad = "".join(SOLUTION.format(k=k) for k in range(1, chars // len(SOLUTION.format(k=10)) + 1))
    out.write_bytes(b"".join(orjson.dumps({**r, "response": f"{pad}\nFinal answer: {r['response']}"}) + b"\n"
                             for r in rows))
    return out


def sim_file(path: Path, seed: int, cached: bool) -> Path:
    """The planted world, its prompt cache on or off (``prompt_cache_ttl_s`` 0: a provider without one)."""
    sim = SimConfig.planted(seed=seed)
    if not cached:
        sim = sim.model_copy(update={
            "vendors": {v: b.model_copy(update={"prompt_cache_ttl_s": 0.0}) for v, b in sim.vendors.items()},
            "default": sim.default.model_copy(update={"prompt_cache_ttl_s": 0.0})})
    out = path / f"sim-{seed}-{'cached' if cached else 'plain'}.json"
    out.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    return out


STRATEGIES = {  # name: (council config, provider caches prompts)
    "council_all_v2": (dict(deliberate="all", judge={"prompt_version": "judge-v2"}), False),
    "disputed": (dict(deliberate="disputed", deliberation_audit=0.0), False),
    "disputed_cached": (dict(deliberate="disputed", deliberation_audit=0.0), True),
    "default": (dict(), True),
}


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()] if path.is_file() else []


async def grade(tmp: Path, world: str, responses: Path, name: str, seed: int) -> Path:
    config, cached = STRATEGIES[name]
    result = await run_council(RunRequest(
        bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp / "runs", run_id=f"{world}-{name}", backend="local",
        sim_config=sim_file(tmp, seed, cached), config=CouncilConfig(seed=seed, **config)))
    return result.run_dir


def paired_difference(a: np.ndarray, b: np.ndarray, seed: int, resamples: int = 2000) -> tuple[float, float, float]:
    """Mean of ``b - a`` (two 0/1 arrays over the same rows) and its 95% percentile interval, rows resampled
    together."""
    rng = np.random.default_rng(seed)
    diff = b.astype(np.float64) - a.astype(np.float64)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    return float(diff.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def world_figures(folders: dict[str, Path], seed: int) -> dict:
    verdicts = {n: {v["row_id"]: v for v in _lines(f / "verdicts.jsonl")} for n, f in folders.items()}
    base = verdicts["council_all_v2"]
    rows = sorted(r for r in base if base[r]["graded"] and base[r].get("gold_verdict"))
    truth = np.array([base[r]["gold_verdict"] == "correct" for r in rows])

    def accuracy(name: str) -> np.ndarray:
        return np.array([(verdicts[name][r]["consensus"] == "correct") == t for r, t in zip(rows, truth, strict=True)])

    summaries = {n: orjson.loads((f / "summary.json").read_bytes()) for n, f in folders.items()}
    graded = {n: sum(v["graded"] for v in verdicts[n].values()) for n in folders}
    per_row = {n: summaries[n]["cost_usd"] / graded[n] for n in folders}
    one_round = summaries["council_all_v2"]["cost_by_round_usd"]["1"] / graded["council_all_v2"]
    first = _lines(folders["council_all_v2"] / "round1.jsonl")
    single = {}
    for vendor in sorted({r["member"] for r in first}):
        mine = [r for r in first if r["member"] == vendor and not r.get("audit_of") and not r.get("shadow")]
        single[vendor] = sum(r["cost_usd"] for r in mine) / len({r["row_id"] for r in mine})
    out = {"rows": len(base), "graded": graded, "cost_per_row_usd": {
        "single_judge_median": statistics.median(single.values()), "single_judge": single,
        "one_round": one_round, **per_row}}
    out["ratio_to_one_round"] = {n: per_row[n] / one_round for n in folders}
    out["ratio_to_one_round"]["single_judge_median"] = out["cost_per_row_usd"]["single_judge_median"] / one_round
    cached = {}
    for n, f in folders.items():
        records = _lines(f / "round1.jsonl") + _lines(f / "round2.jsonl")
        prompt = sum(r["usage"]["prompt_tokens"] for r in records)
        cached[n] = sum(r["usage"]["cached_tokens"] for r in records) / prompt if prompt else 0.0
    out["cached_share_of_prompt_tokens"] = cached
    out["round_two_rows"] = {n: summaries[n]["deliberation"]["rows_deliberated"] + summaries[n]["deliberation"]["rows_audit"]
                             for n in folders}
    acc_c = accuracy("council_all_v2")
    out["accuracy"] = {"council_all_v2": float(acc_c.mean())}
    out["differing_from_council"], out["accuracy_minus_council"] = {}, {}
    for n in ("disputed", "disputed_cached", "default"):
        differ = sum(verdicts[n][r]["consensus"] != base[r]["consensus"] for r in base)
        low, high = wilson_interval(differ, len(base))
        out["differing_from_council"][n] = {"rows": differ, "share": differ / len(base), "ci95": [low, high]}
        acc = accuracy(n)
        out["accuracy"][n] = float(acc.mean())
        mean, lo, hi = paired_difference(acc_c, acc, seed)
        out["accuracy_minus_council"][n] = {"mean": mean, "ci95": [lo, hi]}
    return out


def show(world: str, f: dict) -> None:
    c = f["cost_per_row_usd"]
    print(f"\n{world}: {f['rows']} rows, cost per graded row (ratio to one blind round of the panel)")
    labels = {"single_judge_median": "(a) single judge, median of members", "one_round": "(b) one blind round",
              "council_all_v2": "(c) council: all, judge-v2, no cache", "disputed": "(d) disputed, no cache",
              "disputed_cached": "(e) disputed, cached", "default": "(f) default: (e) + 10% audit"}
    for key, label in labels.items():
        ratio = c[key] / c["one_round"]
        extra = ""
        if key in f["differing_from_council"]:
            d, a = f["differing_from_council"][key], f["accuracy_minus_council"][key]
            extra = (f"  differ from (c) {d['rows']} ({100 * d['share']:.2f}% [{100 * d['ci95'][0]:.2f}, "
                     f"{100 * d['ci95'][1]:.2f}])  accuracy {100 * f['accuracy'][key]:.2f}% "
                     f"({100 * a['mean']:+.2f} pts [{100 * a['ci95'][0]:+.2f}, {100 * a['ci95'][1]:+.2f}])")
        if key in f["cached_share_of_prompt_tokens"]:
            extra += f"  cached {100 * f['cached_share_of_prompt_tokens'][key]:.0f}%"
        print(f"  {label:40s} ${c[key]:.6f}  {ratio:5.2f}x{extra}")
    print(f"  (c)'s accuracy against the truth: {100 * f['accuracy']['council_all_v2']:.2f}%")


async def main_async(args: argparse.Namespace) -> int:
    figures: dict[str, dict] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="council-cost-") as tmp_name:
        tmp = Path(tmp_name)
        for world in args.worlds.split(","):
            responses = bank.SAMPLE_RESPONSES if world == "sample" else long_responses(tmp, args.long_chars)
            folders = {}
            for name in STRATEGIES:
                folders[name] = await grade(tmp, world, responses, name, args.seed)
                print(f"{world}: {name} graded", flush=True)
            f = world_figures(folders, args.seed)
            strategy, bound = TARGETS[world]
            ratio = f["ratio_to_one_round"][strategy]
            differing = max(d["share"] for d in f["differing_from_council"].values())
            f["target"] = {"strategy": strategy, "ratio_at_most": bound, "ratio": ratio, "ratio_met": ratio <= bound,
                           "differing_at_most": MAX_DIFFERING, "differing_met": differing <= MAX_DIFFERING}
            show(world, f)
            print(f"  target: ({'d' if strategy == 'disputed' else 'e'}) {ratio:.2f}x <= {bound}x: "
                  f"{'met' if ratio <= bound else 'NOT met'}; verdicts differing from (c) at most "
                  f"{100 * differing:.2f}% <= 1%: {'met' if differing <= MAX_DIFFERING else 'NOT met'}")
            ok = ok and ratio <= bound and differing <= MAX_DIFFERING
            figures[world] = f
    print(orjson.dumps({"seed": args.seed, "long_chars": args.long_chars, "worlds": figures, "ok": ok},
                       option=orjson.OPT_SERIALIZE_NUMPY).decode())
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", default="sample,long", help="comma-separated: sample, long (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the world's and the council's seed (default: %(default)s)")
    parser.add_argument("--long-chars", type=int, default=10_000,
                        help="characters of worked solution before each long response (default: %(default)s)")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
