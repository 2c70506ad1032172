"""Deliberation and agreement metrics at scale: this project's numpy aggregator against pandas, DuckDB and
polars, like for like.

Data: a seeded synthetic council run of N rows x 5 members x 2 rounds (int8 codes, -1 missing /
0 incorrect / 1 correct). Each row has a latent chance of being judged correct; about 10% of votes
are missing (independently per member and round) and round two is round one with about 5% of the
votes flipped. Generation is not timed.

Input layout (the same for every side): long-format numpy arrays, one entry per (row, member, round):
``row`` int64, ``member`` int8 (code 0..4), ``round`` int8 (1 or 2), ``vote`` int8, in row-major
order, as data loaded from a file would arrive. Each side's conversion to its own layout is part of
its timed pass, and is also reported separately:

    ours    scatter of the long arrays into a (R, M, 2) int8 array (pre-filled with -1; the order
            of the entries is not relied on), then the public API as the project scores a run:
            tally_rounds once, consensus and deliberation_summary sharing that tally, and
            aggregator._agreement.pairwise_agreement per round (an inline numpy version if that
            module is absent)
    pandas  DataFrame construction from the same arrays (member as a Categorical), then the same
            metrics written the way an analyst would: groupby per row and round for the tallies, a
            merge of the two rounds per (row, member) for flips, a pivot per round for pairwise
            agreement
    duckdb  the arrays registered as a view of an in-memory connection, then SQL: tallies grouped by
            row and round, one row per (row, member) with both rounds' votes for flips, one row per
            (row, round) with every member's vote for pairwise agreement (``bench/support/
            aggregate_baselines.py``; default threads, every core)
    polars  a DataFrame from the arrays, then pivots per (row, round) and per (row, member) and
            group-bys over them (same module; default thread pool)

DuckDB and polars are further baselines: reported as ratios (side / ours) beside pandas, checked for
equal results, no speed target. A side whose package is not installed is reported as skipped (null
ratio), not failed. (polars is not among the project's test extras.)

Metrics, identical on every side: consensus of both rounds (verdicts, ties, no-quorum rows),
deliberation_impact, agreement_lift, consensus_flip_rate, unanimity_lift, member_flips (to_correct,
to_incorrect, valid_both) and pairwise percent agreement for every member pair in each round.

Protocol, identical on every side: each side runs in its own child process (so its peak RSS is its
own: VmHWM of the child, which includes the long input arrays), builds the same input (checked by a
hash of the votes), does one untimed warm-up pass and then --repeats timed passes (default 3);
median and min are reported. Every pass is conversion + metrics.

Size: pandas is first run on a 1M-row probe to measure its peak RSS per row; the compared size is
the largest whole number of millions of rows, at most 2M, whose projected pandas peak stays under
the budget (8 GiB, or 75% of the memory available at start if that is smaller). The 2M cap keeps
the four sides' 16 passes within a few minutes on a 2-core machine (pandas, DuckDB and polars each
take seconds per million rows). Every side runs at that size and each ratio is taken from the
medians of that same run. Ours is also run, separately and with no ratio, at 10M rows (--full-rows).

Checked on every run: the results of every side at the compared size against ours, verdict arrays
and counts exactly, float metrics within 1e-9 (pairwise agreement off the diagonal). The JSON line
reports the outcome as computed (results_equal, max_abs_diff, and per baseline); a mismatch, or
differing inputs, makes the script exit with status 1 after printing everything.

Also timed (once, as before): a paired percentile bootstrap of 20 models x 50,000 items with 1,000
resamples, via aggregator._bootstrap (score_matrix + bootstrap_scores), or an inline numpy matmul
bootstrap if that module is absent.

Run from the repository root (needs pandas; duckdb and polars if installed; about 2-4 minutes on 2
cores, most of it the baselines' passes; one child at a time, the parent stays small):
    python bench/aggregate_scale.py
Quick run (under a minute):
    python bench/aggregate_scale.py --rows 1000000 --full-rows 1000000
--rows N forces the compared size (the probe is skipped); --full-rows N sets the ours-only size.
Target: pandas / ours >= 30x. The last line printed is one JSON object with the figures
(``duckdb_over_ours``, ``polars_over_ours``, and each baseline's detail under ``baselines``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

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
AVAILABLE_SHARE = 0.75
PROBE_ROWS = 1_000_000
MAX_ROWS = 10_000_000  # the ours-only run
COMPARED_MAX_ROWS = 2_000_000  # the compared size at most: four sides x (warm-up + repeats) passes in a few minutes
TOL = 1e-9
NAMES = [f"vendor{j}" for j in range(MEMBERS)]
BASELINES = {"duckdb": "duckdb", "polars": "polars"}  # further baselines (side: the package it needs)


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


def long_arrays(v: np.ndarray) -> dict[str, np.ndarray]:
    """The long-format columns (row, member, round, vote) both sides start from."""
    rows, members, _ = v.shape
    return {
        "row": np.repeat(np.arange(rows, dtype=np.int64), members * 2),
        "member": np.tile(np.repeat(np.arange(members, dtype=np.int8), 2), rows),
        "round": np.tile(np.array([1, 2], dtype=np.int8), rows * members),
        "vote": v.reshape(-1).copy(),
    }


def to_cube(cols: dict[str, np.ndarray], rows: int, members: int, chunk: int = 1 << 18) -> np.ndarray:
    """Ours' conversion: scatter the long columns into a (rows, members, 2) int8 array."""
    v = np.full((rows, members, 2), MISSING, dtype=np.int8)
    flat = v.reshape(-1)
    row, member, rnd, vote = cols["row"], cols["member"], cols["round"], cols["vote"]
    for start in range(0, row.shape[0], chunk):
        s = slice(start, start + chunk)
        idx = row[s] * (members * 2)
        idx += member[s].astype(np.intp) * 2
        idx += rnd[s]
        idx -= 1
        flat[idx] = vote[s]
    return v


def to_frame(cols: dict[str, np.ndarray]):
    """The pandas side's conversion: the long-format DataFrame an analyst would work on."""
    import pandas as pd

    return pd.DataFrame(
        {
            "row": cols["row"],
            "member": pd.Categorical.from_codes(cols["member"], NAMES),
            "round": cols["round"],
            "vote": cols["vote"],
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


def ours_metrics(v: np.ndarray, rows: int, members: int, quorum: int = QUORUM) -> dict:
    names = NAMES[:members]
    tally = tally_rounds(v)
    cons = consensus(v, quorum, tally=tally)
    summary = deliberation_summary(v, names, quorum, tally=tally)
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
        "to_correct": np.array([flips[name]["to_correct"] for name in names]),
        "to_incorrect": np.array([flips[name]["to_incorrect"] for name in names]),
        "valid_both": np.array([flips[name]["valid_both"] for name in names]),
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


# ---------------------------------------------------------------------------
# Comparison


def compare(a: dict, b: dict, tol: float = TOL) -> tuple[bool, float, list[str]]:
    """(equal, largest absolute difference, keys that differ) of two metric dicts.

    Verdicts and counts must be exactly equal, floats within ``tol``; NaN must be NaN on both sides
    (a NaN on one side only counts as an infinite difference). Pairwise agreement is compared off
    the diagonal only (ours also fills the diagonal).
    """
    bad: list[str] = []
    worst = 0.0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            bad.append(f"{key}: present on one side only")
            worst = math.inf
            continue
        x, y = np.asarray(a[key]), np.asarray(b[key])
        if x.shape != y.shape:
            bad.append(f"{key}: shape {x.shape} vs {y.shape}")
            worst = math.inf
            continue
        if key == "pairwise":
            off = ~np.eye(x.shape[-1], dtype=bool)
            x, y = x[:, off], y[:, off]
        is_float = np.issubdtype(x.dtype, np.floating) or np.issubdtype(y.dtype, np.floating)
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        nx, ny = np.isnan(xf), np.isnan(yf)
        if not np.array_equal(nx, ny):
            bad.append(f"{key}: NaN in different places")
            worst = math.inf
            continue
        diff = float(np.max(np.abs(xf[~nx] - yf[~nx]), initial=0.0))
        worst = max(worst, diff)
        if is_float:
            if diff > tol:
                bad.append(f"{key}: max abs diff {diff:.3g} > {tol:g}")
        elif not np.array_equal(x, y):
            bad.append(f"{key}: {int(np.count_nonzero(x != y))} of {x.size} values differ (max abs diff {diff:g})")
    return not bad, worst, bad


def _save(path: str, d: dict) -> None:
    np.savez(path, **{k: np.asarray(val) for k, val in d.items()})


def _load(path: str) -> dict:
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    for k, val in out.items():
        if val.ndim == 0:
            out[k] = float(val)
    return out


# ---------------------------------------------------------------------------
# One side, in a child process


def _proc_status_bytes(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in bytes; getrusage max RSS if absent."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def side_child(side: str, rows: int, warmup: int, repeats: int, out_path: str) -> None:
    """Child entry point: build the input, then warm-up + timed passes of one side."""
    if side == "pandas":
        import pandas  # noqa: F401  (imported before the baseline RSS, like numpy)

        convert = to_frame

        def metrics(layout):
            return pandas_metrics(layout, rows, MEMBERS)

    elif side in BASELINES:
        from support import aggregate_baselines

        importlib.import_module(BASELINES[side])  # imported before the baseline RSS, like pandas
        convert = getattr(aggregate_baselines, f"to_{side}")
        side_metrics = getattr(aggregate_baselines, f"{side}_metrics")

        def metrics(layout):
            return side_metrics(layout, rows, MEMBERS, QUORUM)

    else:

        def convert(cols):
            return to_cube(cols, rows, MEMBERS)

        def metrics(layout):
            return ours_metrics(layout, rows, MEMBERS)

    base = _proc_status_bytes("VmRSS")
    v = make_votes(rows)
    digest = hashlib.blake2b(v.tobytes(), digest_size=16).hexdigest()
    cols = long_arrays(v)
    del v
    input_bytes = sum(c.nbytes for c in cols.values())

    conv_times, metric_times, totals = [], [], []
    res = None
    for i in range(warmup + repeats):
        res = None
        t0 = time.perf_counter()
        layout = convert(cols)
        t1 = time.perf_counter()
        res = metrics(layout)
        t2 = time.perf_counter()
        del layout
        if i >= warmup:
            conv_times.append(t1 - t0)
            metric_times.append(t2 - t1)
            totals.append(t2 - t0)
    _save(out_path, res)
    info = {
        "side": side,
        "rows": rows,
        "warmup": warmup,
        "repeats": repeats,
        "seconds": totals,
        "convert_seconds": conv_times,
        "metric_seconds": metric_times,
        "peak_rss_bytes": _proc_status_bytes("VmHWM"),
        "base_rss_bytes": base,
        "input_bytes": input_bytes,
        "votes_hash": digest,
    }
    print(json.dumps(info))


def run_side(side: str, rows: int, warmup: int, repeats: int, tmp: str) -> tuple[dict, dict]:
    out_path = os.path.join(tmp, f"{side}_{rows}_{warmup}_{repeats}.npz")
    cmd = [sys.executable, __file__, "--child", side, str(rows), str(warmup), str(repeats), out_path]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} child at {rows:,} rows failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    res = _load(out_path)
    os.remove(out_path)
    return info, res


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def choose_rows(probe: dict, budget: float, cap: int) -> tuple[int, float]:
    """Largest whole million of rows (or 100k below 1M) whose projected pandas peak fits ``budget``.

    The peak is taken to be the child's baseline RSS (interpreter, numpy, pandas) plus a part that
    grows linearly with the rows, measured on the probe.
    """
    base = probe["base_rss_bytes"]
    per_row = (probe["peak_rss_bytes"] - base) / probe["rows"]
    fit = int((budget - base) / per_row) if per_row > 0 else cap
    fit = min(fit, cap)
    step = 1_000_000 if fit >= 1_000_000 else 100_000
    return max(step, fit // step * step), per_row


def _median_min(xs: list[float]) -> tuple[float, float]:
    return statistics.median(xs), min(xs)


def _side_line(label: str, info: dict) -> str:
    med, lo = _median_min(info["seconds"])
    cmed = statistics.median(info["convert_seconds"])
    mmed = statistics.median(info["metric_seconds"])
    return (
        f"{label:<14}{info['rows']:>11,} rows  median {med:8.3f} s  min {lo:8.3f} s  "
        f"(convert {cmed:.3f} + metrics {mmed:.3f}; passes "
        + ", ".join(f"{t:.3f}" for t in info["seconds"])
        + f")  peak RSS {info['peak_rss_bytes'] / GIB:5.2f} GiB"
    )


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


def _json_float(x: float) -> float | None:
    return None if (isinstance(x, float) and not math.isfinite(x)) else x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="force the compared size (skips the pandas probe)")
    ap.add_argument("--full-rows", type=int, default=MAX_ROWS, help="size of the separate ours-only run")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per side (median and min reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes per side before the timed ones")
    ap.add_argument(
        "--pandas-budget-gib",
        type=float,
        default=PANDAS_BUDGET / GIB,
        help="largest projected peak RSS of the pandas child",
    )
    ap.add_argument("--child", nargs=5, metavar=("SIDE", "ROWS", "WARMUP", "REPEATS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        side, rows, warmup, repeats, out = args.child
        side_child(side, int(rows), int(warmup), int(repeats), out)
        return 0
    if args.repeats < 1 or args.warmup < 0:
        ap.error("--repeats must be >= 1 and --warmup >= 0")

    load_start = os.getloadavg()[0]
    available = _mem_available()
    budget = args.pandas_budget_gib * GIB
    if available is not None:
        budget = min(budget, AVAILABLE_SHARE * available)
    probe = None
    per_row = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.rows is not None:
            rows = args.rows
            reason = "forced by --rows"
            print(f"size          {rows:>11,} rows  ({reason})", flush=True)
        else:
            # One cold pass of pandas on a small slice, only to measure its memory per row.
            probe, _ = run_side("pandas", PROBE_ROWS, 0, 1, tmp)
            rows, per_row = choose_rows(probe, budget, COMPARED_MAX_ROWS)
            projected = probe["base_rss_bytes"] + per_row * rows
            limit = "size cap" if rows == COMPARED_MAX_ROWS else f"{budget / GIB:.2f} GiB budget"
            reason = (
                f"pandas probe at {PROBE_ROWS:,} rows: peak RSS {probe['peak_rss_bytes'] / GIB:.2f} GiB, "
                f"baseline {probe['base_rss_bytes'] / GIB:.2f} GiB, {per_row:.0f} B/row; projected peak at "
                f"{rows:,} rows {projected / GIB:.2f} GiB; largest whole million within the {limit} "
                f"(budget = min({args.pandas_budget_gib:g} GiB, {AVAILABLE_SHARE:.0%} of "
                + (f"{available / GIB:.1f} GiB available" if available is not None else "available: unknown")
                + f"), cap {COMPARED_MAX_ROWS:,})"
            )
            print(f"size          {rows:>11,} rows  chosen: {reason}", flush=True)

        # Same size, same input, same passes: pandas first, then ours.
        pandas_info, pandas_res = run_side("pandas", rows, args.warmup, args.repeats, tmp)
        print(_side_line("pandas", pandas_info), flush=True)
        ours_info, ours_res = run_side("ours", rows, args.warmup, args.repeats, tmp)
        print(_side_line("ours", ours_info), flush=True)
        # The further baselines: the same size, input and passes, each in its own child.
        baselines = {}
        for side, package in BASELINES.items():
            if importlib.util.find_spec(package) is None:
                baselines[side] = None
                print(f"{side:<14}skipped: {package} is not installed", flush=True)
                continue
            baselines[side] = run_side(side, rows, args.warmup, args.repeats, tmp)
            print(_side_line(side, baselines[side][0]), flush=True)
        if args.full_rows == rows:
            full_info = ours_info
        else:
            full_info, _ = run_side("ours", args.full_rows, args.warmup, args.repeats, tmp)
        print(_side_line("ours only", full_info) + "  [ours alone, no pandas at this size]", flush=True)

    same_input = pandas_info["votes_hash"] == ours_info["votes_hash"]
    equal, max_abs_diff, mismatches = compare(ours_res, pandas_res)
    equal = equal and same_input
    pandas_med, pandas_min = _median_min(pandas_info["seconds"])
    ours_med, ours_min = _median_min(ours_info["seconds"])
    full_med, full_min = _median_min(full_info["seconds"])
    ratio = pandas_med / ours_med
    ratio_metrics = statistics.median(pandas_info["metric_seconds"]) / statistics.median(ours_info["metric_seconds"])

    print(
        f"inputs identical (hash of the votes): {same_input}; results equal (verdicts and counts exactly, "
        f"floats within {TOL:g}): {equal}; largest absolute difference {max_abs_diff:.3g}"
    )
    for m in mismatches:
        print(f"  MISMATCH {m}")
    baseline_figures: dict = {}
    for side, got in baselines.items():
        if got is None:
            baseline_figures[side] = {"skipped": f"{BASELINES[side]} is not installed"}
            continue
        info, res = got
        side_same = info["votes_hash"] == ours_info["votes_hash"]
        side_equal, side_diff, side_bad = compare(ours_res, res)
        side_equal = side_equal and side_same
        med, lo = _median_min(info["seconds"])
        print(f"{side} / ours = {med / ours_med:.1f}x at {rows:,} rows (medians, this run, conversion included); "
              f"inputs identical {side_same}, results equal {side_equal}, largest absolute difference {side_diff:.3g}")
        for m in side_bad:
            print(f"  MISMATCH ({side}) {m}")
        baseline_figures[side] = {
            "seconds_median": round(med, 4), "seconds_min": round(lo, 4),
            "seconds_all": [round(t, 4) for t in info["seconds"]],
            "convert_seconds_median": round(statistics.median(info["convert_seconds"]), 4),
            "over_ours": round(med / ours_med, 2), "peak_rss_bytes": info["peak_rss_bytes"],
            "inputs_identical": side_same, "results_equal": bool(side_equal), "max_abs_diff": _json_float(side_diff),
        }
    print(f"pairwise agreement: {PAIRWISE_SOURCE}; 1-minute load average {load_start:.2f} at start")
    print(
        f"metrics: deliberation_impact {ours_res['deliberation_impact']:.6f}  agreement_lift "
        f"{ours_res['agreement_lift']:.6f}  consensus_flip_rate {ours_res['consensus_flip_rate']:.6f}  "
        f"unanimity_lift {ours_res['unanimity_lift']:.6f}"
    )

    boot = run_bootstrap()
    print(
        f"bootstrap     {boot['models']} models x {boot['items']:,} items x {boot['resamples']:,} resamples  "
        f"{boot['seconds']:.2f} s  via {BOOTSTRAP_SOURCE}  (mean 95% CI width {boot['mean_ci_width']:.4f})",
        flush=True,
    )
    print(
        f"pandas / ours = {ratio:.1f}x at {rows:,} rows (medians of {args.repeats} passes each, this run, "
        f"conversion included; metrics only {ratio_metrics:.1f}x)  target >= 30x"
    )

    figures = {
        "rows": rows,
        "size_reason": reason,
        "members": MEMBERS,
        "rounds": 2,
        "warmup_passes": args.warmup,
        "repeats": args.repeats,
        "input_layout": "long arrays row/member/round/vote; conversion timed inside each pass",
        "pandas_probe_rows": probe["rows"] if probe else None,
        "pandas_probe_peak_rss_bytes": probe["peak_rss_bytes"] if probe else None,
        "pandas_bytes_per_row": round(per_row, 1) if per_row is not None else None,
        "pandas_budget_bytes": int(budget),
        "pandas_seconds_median": round(pandas_med, 4),
        "pandas_seconds_min": round(pandas_min, 4),
        "pandas_seconds_all": [round(t, 4) for t in pandas_info["seconds"]],
        "pandas_convert_seconds_median": round(statistics.median(pandas_info["convert_seconds"]), 4),
        "ours_seconds_median": round(ours_med, 4),
        "ours_seconds_min": round(ours_min, 4),
        "ours_seconds_all": [round(t, 4) for t in ours_info["seconds"]],
        "ours_convert_seconds_median": round(statistics.median(ours_info["convert_seconds"]), 4),
        "speedup_pandas_over_ours": round(ratio, 2),
        "speedup_metrics_only": round(ratio_metrics, 2),
        "target_speedup": 30,
        "pandas_peak_rss_bytes": pandas_info["peak_rss_bytes"],
        "ours_peak_rss_bytes": ours_info["peak_rss_bytes"],
        "input_bytes": ours_info["input_bytes"],
        "inputs_identical": same_input,
        "results_equal": bool(equal),
        "max_abs_diff": _json_float(max_abs_diff),
        "ours_only_rows": full_info["rows"],
        "ours_only_seconds_median": round(full_med, 4),
        "ours_only_seconds_min": round(full_min, 4),
        "ours_only_peak_rss_bytes": full_info["peak_rss_bytes"],
        "pairwise_source": PAIRWISE_SOURCE,
        "bootstrap_seconds": round(boot["seconds"], 3),
        "bootstrap_source": BOOTSTRAP_SOURCE,
        "bootstrap_shape": [boot["models"], boot["items"], boot["resamples"]],
        "deliberation_impact": _json_float(round(ours_res["deliberation_impact"], 6)),
        "agreement_lift": _json_float(round(ours_res["agreement_lift"], 6)),
        "consensus_flip_rate": _json_float(round(ours_res["consensus_flip_rate"], 6)),
        "unanimity_lift": _json_float(round(ours_res["unanimity_lift"], 6)),
        **{f"{side}_over_ours": f.get("over_ours") for side, f in baseline_figures.items()},
        "baselines": baseline_figures,
        "load_avg_1m_start": round(load_start, 2),
        "load_avg_1m_end": round(os.getloadavg()[0], 2),
    }
    baselines_equal = all(f.get("results_equal", True) for f in baseline_figures.values())  # skipped: no verdict
    ok = bool(equal) and baselines_equal and ratio >= figures["target_speedup"]
    print("OK: results equal, speedup at or above the target" if ok else
          f"FAILED: results equal {bool(equal)} (pandas), {baselines_equal} (further baselines), speedup {ratio:.1f}x "
          f"(target >= {figures['target_speedup']}x)")
    figures["ok"] = ok
    print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
