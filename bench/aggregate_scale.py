"""Deliberation and agreement metrics at scale: this project's numpy aggregator against pandas.

Data: a seeded synthetic council run of 10 million rows x 5 members x 2 rounds (int8 codes,
-1 missing / 0 incorrect / 1 correct). Each row has a latent chance of being judged correct;
about 10% of votes are missing (independently per member and round) and round two is round one
with about 5% of the votes flipped.

Metrics timed, identically on both sides:
    consensus of both rounds (verdicts, ties, no-quorum rows), deliberation_impact, agreement_lift,
    consensus_flip_rate, unanimity_lift, member_flips (to_correct, to_incorrect, valid_both) and
    pairwise percent agreement for every member pair in each round.

    ours    the public API as the project scores a run: tally_rounds once, then consensus and
            deliberation_summary sharing that tally, on the (R, M, 2) int8 array, and
            aggregator._agreement.pairwise_agreement per round (an inline numpy version if that
            module is absent)
    pandas  the same metrics written the way an analyst would over a long-format DataFrame
            (row, member, round, vote): groupby per row and round for the tallies, a merge of the two
            rounds per (row, member) for flips, a pivot per round for pairwise agreement

The two must agree within 1e-9 (verdict arrays exactly). Building the long DataFrame is not timed
(it stands for data already loaded in that shape), nor is the generation of the votes.

The pandas side runs in a child process, so its peak RSS is its own. It first runs on a 1M-row
slice; if the peak RSS projected linearly to the full size stays under 8 GiB it then runs on the
full data, otherwise the 1M-row timing is scaled linearly (the output says which).

Also timed: a paired percentile bootstrap of 20 models x 50,000 items with 1,000 resamples, via
aggregator._bootstrap (score_matrix + bootstrap_scores), or an inline numpy matmul bootstrap if that
module is absent.

Memory: tracemalloc peak of a separate, traced pass of our metrics (numpy reports its buffers to
tracemalloc), and resource.getrusage max RSS of this process (which also holds the votes) and of the
pandas child.

Run from the repository root:  python bench/aggregate_scale.py            (about 3 minutes; ~9 GiB free)
Shorter:                         python bench/aggregate_scale.py --rows 2000000
Target: pandas / ours >= 30x. The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aggregator._codes import CORRECT, INCORRECT, MISSING  # noqa: E402
from aggregator._consensus import consensus, tally_rounds  # noqa: E402
from aggregator._deliberation import deliberation_summary  # noqa: E402

try:
    from aggregator._agreement import pairwise_agreement

    PAIRWISE_SOURCE = "aggregator._agreement.pairwise_agreement"
except ImportError:  # written by someone else; fall back to an inline version
    pairwise_agreement = None
    PAIRWISE_SOURCE = "inline numpy"

try:
    from aggregator._bootstrap import bootstrap_scores, score_matrix

    BOOTSTRAP_SOURCE = "aggregator._bootstrap (score_matrix + bootstrap_scores)"
except ImportError:
    bootstrap_scores = score_matrix = None
    BOOTSTRAP_SOURCE = "inline numpy matmul paired bootstrap"

MEMBERS = 5
QUORUM = 3
SEED = 20240611
GIB = 2**30
PANDAS_BUDGET = 8 * GIB
PROBE_ROWS = 1_000_000


# ---------------------------------------------------------------------------
# Data


def make_votes(rows: int, members: int = MEMBERS, seed: int = SEED, chunk: int = 1_000_000) -> np.ndarray:
    """Seeded synthetic votes (rows, members, 2), int8. Chunked so temporaries stay small."""
    rng = np.random.default_rng(seed)
    v = np.empty((rows, members, 2), dtype=np.int8)
    for start in range(0, rows, chunk):
        c = min(chunk, rows - start)
        p = rng.beta(2.0, 2.0, size=c).astype(np.float32)
        r1 = (rng.random((c, members), dtype=np.float32) < p[:, None]).astype(np.int8)
        flip = rng.random((c, members), dtype=np.float32) < 0.05
        r2 = r1 ^ flip.astype(np.int8)
        block = v[start : start + c]
        block[:, :, 0] = r1
        block[:, :, 1] = r2
        block[rng.random((c, members, 2), dtype=np.float32) < 0.10] = MISSING
    return v


def long_frame(v: np.ndarray):
    """The long-format DataFrame (row, member, round, vote) an analyst would start from."""
    import pandas as pd

    rows, members, _ = v.shape
    names = [f"vendor{j}" for j in range(members)]
    return pd.DataFrame(
        {
            "row": np.repeat(np.arange(rows, dtype=np.int64), members * 2),
            "member": pd.Categorical.from_codes(np.tile(np.repeat(np.arange(members), 2), rows), names),
            "round": np.tile(np.array([1, 2], dtype=np.int8), rows * members),
            "vote": v.reshape(-1),
        }
    )


# ---------------------------------------------------------------------------
# Ours


def _pairwise_inline(votes_k: np.ndarray) -> np.ndarray:
    m = votes_k.shape[1]
    cols = np.ascontiguousarray(votes_k.T)
    out = np.full((m, m), np.nan)
    for i in range(m):
        for j in range(i + 1, m):
            both = (cols[i] != MISSING) & (cols[j] != MISSING)
            n = np.count_nonzero(both)
            if n:
                out[i, j] = out[j, i] = np.count_nonzero(both & (cols[i] == cols[j])) / n
    return out


def _nan_if_none(x: float | None) -> float:
    return math.nan if x is None else x


def ours(v: np.ndarray, quorum: int = QUORUM) -> dict:
    members = [f"vendor{j}" for j in range(v.shape[1])]
    tally = tally_rounds(v)
    cons = consensus(v, quorum, tally=tally)
    summary = deliberation_summary(v, members, quorum, tally=tally)
    pairwise = []
    for k in (0, 1):
        if pairwise_agreement is not None:
            pairwise.append(pairwise_agreement(v[:, :, k])[0])
        else:
            pairwise.append(_pairwise_inline(v[:, :, k]))
    flips = summary["member_flips"]
    return {
        "verdict": cons.verdict,
        "ties": np.array([summary["ties_round1"], summary["ties_round2"]]),
        "no_quorum": np.array([summary["no_quorum_round1"], summary["no_quorum_round2"]]),
        "deliberation_impact": _nan_if_none(summary["deliberation_impact"]),
        "agreement_lift": _nan_if_none(summary["agreement_lift"]),
        "consensus_flip_rate": _nan_if_none(summary["consensus_flip_rate"]),
        "unanimity_lift": _nan_if_none(summary["unanimity_lift"]),
        "to_correct": np.array([flips[name]["to_correct"] for name in members]),
        "to_incorrect": np.array([flips[name]["to_incorrect"] for name in members]),
        "valid_both": np.array([flips[name]["valid_both"] for name in members]),
        "pairwise": np.stack(pairwise),
    }


# ---------------------------------------------------------------------------
# Pandas, the way an analyst would write it


def pandas_metrics(df, rows: int, members: int, quorum: int = QUORUM) -> dict:
    import pandas as pd

    # Tallies per row and round.
    valid = df[df["vote"] >= 0]
    t = valid.groupby(["row", "round"])["vote"].agg(["sum", "count"])
    t = t.unstack("round", fill_value=0).reindex(pd.RangeIndex(rows, name="row"), fill_value=0)
    y = {k: t[("sum", k)] for k in (1, 2)}
    n = {k: t[("count", k)] for k in (1, 2)}
    verdict = {k: (y[k] > n[k] - y[k]) & (n[k] >= quorum) for k in (1, 2)}
    tie = {k: (n[k] >= quorum) & (y[k] == n[k] - y[k]) for k in (1, 2)}
    no_quorum = {k: n[k] < quorum for k in (1, 2)}
    both_rounds = (n[1] > 0) & (n[2] > 0)
    agr = {k: np.maximum(y[k], n[k] - y[k]) / n[k] for k in (1, 2)}
    unanimous = {k: (y[k] == n[k]) | (y[k] == 0) for k in (1, 2)}

    # Each member's two votes side by side.
    r1 = df.loc[df["round"] == 1, ["row", "member", "vote"]]
    r2 = df.loc[df["round"] == 2, ["row", "member", "vote"]]
    m = r1.merge(r2, on=["row", "member"], suffixes=("_1", "_2"))
    valid_both = (m["vote_1"] >= 0) & (m["vote_2"] >= 0)
    changed = valid_both & (m["vote_1"] != m["vote_2"])
    per_row = pd.DataFrame({"row": m["row"], "changed": changed, "eligible": valid_both}).groupby("row").any()
    per_member = (
        pd.DataFrame(
            {
                "member": m["member"],
                "to_correct": (m["vote_1"] == INCORRECT) & (m["vote_2"] == CORRECT),
                "to_incorrect": (m["vote_1"] == CORRECT) & (m["vote_2"] == INCORRECT),
                "valid_both": valid_both,
            }
        )
        .groupby("member", observed=False)
        .sum()
    )

    # Pairwise percent agreement, per round.
    pairwise = np.full((2, members, members), np.nan)
    for k in (1, 2):
        wide = df[df["round"] == k].pivot(index="row", columns="member", values="vote")
        cols = list(wide.columns)
        for i in range(members):
            for j in range(i + 1, members):
                a, b = wide[cols[i]], wide[cols[j]]
                both = (a >= 0) & (b >= 0)
                share = ((a == b) & both).sum() / both.sum()
                pairwise[k - 1, i, j] = pairwise[k - 1, j, i] = share

    return {
        "verdict": np.stack([verdict[1].to_numpy(), verdict[2].to_numpy()], axis=1).astype(np.int8),
        "ties": np.array([tie[1].sum(), tie[2].sum()]),
        "no_quorum": np.array([no_quorum[1].sum(), no_quorum[2].sum()]),
        "deliberation_impact": float(per_row["changed"].sum() / per_row["eligible"].sum()),
        "agreement_lift": float(agr[2][both_rounds].mean() - agr[1][both_rounds].mean()),
        "consensus_flip_rate": float((verdict[1] != verdict[2]).mean()),
        "unanimity_lift": float(unanimous[2][both_rounds].mean() - unanimous[1][both_rounds].mean()),
        "to_correct": per_member["to_correct"].to_numpy(),
        "to_incorrect": per_member["to_incorrect"].to_numpy(),
        "valid_both": per_member["valid_both"].to_numpy(),
        "pairwise": pairwise,
    }


def compare(a: dict, b: dict, tol: float = 1e-9) -> None:
    """Raise AssertionError unless the two metric dicts agree (arrays of counts exactly)."""
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        assert x.shape == y.shape, (key, x.shape, y.shape)
        if key == "pairwise":
            # Only off-diagonal pairs are metrics (ours also fills the diagonal).
            off = ~np.eye(x.shape[-1], dtype=bool)
            x, y = x[:, off], y[:, off]
        if np.issubdtype(x.dtype, np.floating) or np.issubdtype(y.dtype, np.floating):
            assert np.allclose(x, y, rtol=0, atol=tol, equal_nan=True), (key, x, y)
        else:
            assert np.array_equal(x, y), (key, x, y)


def _save(path: str, d: dict) -> None:
    np.savez(path, **{k: np.asarray(val) for k, val in d.items()})


def _load(path: str) -> dict:
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    for k, val in out.items():
        if val.ndim == 0:
            out[k] = float(val)
    return out


def pandas_child(rows: int, slice_rows: int, out_path: str) -> None:
    """Entry point of the child process: time pandas on the first slice_rows rows."""
    v = make_votes(rows)[:slice_rows].copy()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    df = long_frame(v)
    del v
    t0 = time.perf_counter()
    res = pandas_metrics(df, slice_rows, MEMBERS)
    seconds = time.perf_counter() - t0
    _save(out_path, res)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "maxrss_bytes": rss, "base_bytes": base, "frame_rows": int(len(df))}))


def run_pandas(rows: int, slice_rows: int, tmp: str) -> tuple[dict, dict]:
    out_path = os.path.join(tmp, f"pandas_{slice_rows}.npz")
    cmd = [sys.executable, __file__, "--rows", str(rows), "--pandas-child", str(slice_rows), out_path]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pandas child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return info, _load(out_path)


# ---------------------------------------------------------------------------
# Bootstrap


def run_bootstrap(n_models: int = 20, n_items: int = 50_000, n_resamples: int = 1000) -> dict:
    rng = np.random.default_rng(SEED + 1)
    ability = rng.uniform(0.4, 0.8, n_models)
    value = (rng.random((n_models, n_items)) < ability[:, None]).astype(np.float64)
    t0 = time.perf_counter()
    if bootstrap_scores is not None:
        model = np.repeat(np.arange(n_models), n_items)
        item = np.tile(np.arange(n_items), n_models)
        S, C = score_matrix(item, model, value.ravel(), n_items, n_models)
        res = bootstrap_scores(S, C, n_resamples=n_resamples, seed=SEED)
        low, high = res.low, res.high
    else:
        S = value
        samples = np.empty((n_resamples, n_models))
        chunk = 100
        for start in range(0, n_resamples, chunk):
            b = min(chunk, n_resamples - start)
            idx = rng.integers(0, n_items, size=(b, n_items)) + (np.arange(b) * n_items)[:, None]
            W = np.bincount(idx.ravel(), minlength=b * n_items).reshape(b, n_items).astype(np.float64)
            samples[start : start + b] = (W @ S.T) / n_items
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "models": n_models,
        "items": n_items,
        "resamples": n_resamples,
        "mean_ci_width": float(np.mean(high - low)),
    }


# ---------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3, help="timed passes of our metrics (median reported)")
    ap.add_argument(
        "--pandas-budget-gib",
        type=float,
        default=PANDAS_BUDGET / GIB,
        help="run pandas at full size only if its projected peak RSS stays below this",
    )
    ap.add_argument("--pandas-child", nargs=2, metavar=("SLICE_ROWS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pandas_child:
        pandas_child(args.rows, int(args.pandas_child[0]), args.pandas_child[1])
        return

    rows = args.rows
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        # Pandas first, in a child, while this process is still small.
        probe_rows = min(PROBE_ROWS, rows)
        probe_info, probe_res = run_pandas(rows, probe_rows, tmp)
        # Interpreter and imports do not grow with the rows; the rest is taken to grow linearly.
        base = probe_info["base_bytes"]
        projected = base + (probe_info["maxrss_bytes"] - base) * rows / probe_rows
        print(
            f"pandas probe  {probe_rows:>11,} rows  {probe_info['seconds']:8.2f} s   "
            f"peak RSS {probe_info['maxrss_bytes'] / GIB:5.2f} GiB  (projected at {rows:,} rows: "
            f"{projected / GIB:.2f} GiB)",
            flush=True,
        )
        if probe_rows == rows:
            pandas_info, pandas_res, pandas_rows = probe_info, probe_res, probe_rows
        elif projected <= args.pandas_budget_gib * GIB:
            pandas_info, pandas_res = run_pandas(rows, rows, tmp)
            pandas_rows = rows
        else:
            pandas_info, pandas_res, pandas_rows = probe_info, probe_res, probe_rows
    pandas_scaled = pandas_rows != rows
    pandas_seconds = pandas_info["seconds"] * rows / pandas_rows
    mode = (
        f"scaled linearly from {pandas_rows:,} rows (projected peak above {args.pandas_budget_gib:g} GiB)"
        if pandas_scaled
        else "measured at full size"
    )
    print(
        f"pandas        {rows:>11,} rows  {pandas_seconds:8.2f} s   "
        f"peak RSS {pandas_info['maxrss_bytes'] / GIB:5.2f} GiB  [{mode}]",
        flush=True,
    )

    t0 = time.perf_counter()
    v = make_votes(rows)
    gen_seconds = time.perf_counter() - t0

    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        res = ours(v)
        times.append(time.perf_counter() - t0)
    ours_seconds = statistics.median(times)

    # Same numbers on the rows pandas saw.
    compare(res if pandas_rows == rows else ours(v[:pandas_rows]), pandas_res)
    compare(ours(v[:probe_rows]), probe_res)

    tracemalloc.start()
    ours(v)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ours_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ratio = pandas_seconds / ours_seconds
    print(
        f"ours          {rows:>11,} rows  {ours_seconds:8.2f} s   (median of {args.repeats}: "
        + ", ".join(f"{t:.2f}" for t in times)
        + f")  tracemalloc peak {traced_peak / GIB:.2f} GiB above the {v.nbytes / GIB:.2f} GiB votes; "
        f"process max RSS {ours_maxrss / GIB:.2f} GiB",
        flush=True,
    )
    print(f"pairwise agreement: {PAIRWISE_SOURCE}; 1-minute load average {load_start:.2f} at start")
    print(f"pandas / ours = {ratio:.1f}x  (target >= 30x); results equal within 1e-9 (verdicts exactly)")
    print(
        f"metrics: deliberation_impact {res['deliberation_impact']:.6f}  agreement_lift "
        f"{res['agreement_lift']:.6f}  consensus_flip_rate {res['consensus_flip_rate']:.6f}  "
        f"unanimity_lift {res['unanimity_lift']:.6f}"
    )

    boot = run_bootstrap()
    print(
        f"bootstrap     {boot['models']} models x {boot['items']:,} items x {boot['resamples']:,} resamples  "
        f"{boot['seconds']:.2f} s  via {BOOTSTRAP_SOURCE}  (mean 95% CI width {boot['mean_ci_width']:.4f})",
        flush=True,
    )

    figures = {
        "rows": rows,
        "load_avg_1m_start": round(load_start, 2),
        "load_avg_1m_end": round(os.getloadavg()[0], 2),
        "members": MEMBERS,
        "rounds": 2,
        "ours_seconds": round(ours_seconds, 3),
        "ours_seconds_all": [round(t, 3) for t in times],
        "pandas_seconds": round(pandas_seconds, 3),
        "pandas_measured_rows": pandas_rows,
        "pandas_scaled_linearly": pandas_scaled,
        "pandas_probe_seconds_1m": round(probe_info["seconds"], 3),
        "speedup_pandas_over_ours": round(ratio, 1),
        "target_speedup": 30,
        "results_equal": True,
        "ours_tracemalloc_peak_bytes": int(traced_peak),
        "votes_bytes": int(v.nbytes),
        "ours_process_maxrss_bytes": int(ours_maxrss),
        "pandas_child_maxrss_bytes": int(pandas_info["maxrss_bytes"]),
        "generate_seconds": round(gen_seconds, 3),
        "pairwise_source": PAIRWISE_SOURCE,
        "bootstrap_seconds": round(boot["seconds"], 3),
        "bootstrap_source": BOOTSTRAP_SOURCE,
        "bootstrap_shape": [boot["models"], boot["items"], boot["resamples"]],
        "deliberation_impact": round(res["deliberation_impact"], 6),
        "agreement_lift": round(res["agreement_lift"], 6),
        "consensus_flip_rate": round(res["consensus_flip_rate"], 6),
        "unanimity_lift": round(res["unanimity_lift"], 6),
    }
    assert all(not (isinstance(x, float) and math.isnan(x)) for x in figures.values())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
