"""Agreement between two readings of the same votes (a batched vote and the same vote asked alone), with a
Wilson score interval: the batch-effect audit's arithmetic."""

from __future__ import annotations

import math

import numpy as np

from ._codes import MISSING, _as_int_array, _check_codes, plain


def wilson_interval(agree: int, n: int, ci: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``agree / n`` (NaN, NaN when ``n`` is 0)."""
    if n <= 0:
        return math.nan, math.nan
    z = _z(ci)
    p = agree / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _z(ci: float) -> float:
    """The two-sided standard normal quantile for confidence ``ci`` (by bisection on erf; no scipy)."""
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be in (0, 1)")
    target, lo, hi = (1.0 + ci) / 2.0, 0.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def paired_agreement(first, second, group=None, names=None, ci: float = 0.95) -> dict:
    """How often two readings of the same votes agree: overall and per group, each with its Wilson interval,
    and the direction of the disagreements (``first`` correct and ``second`` incorrect, and the reverse).
    Pairs where either reading is missing are left out."""
    a, b = _as_int_array(first, "first").ravel(), _as_int_array(second, "second").ravel()
    _check_codes(a, "first")
    _check_codes(b, "second")
    if a.shape != b.shape:
        raise ValueError("both readings need the same shape")
    valid = (a != MISSING) & (b != MISSING)
    out = _agreement(a[valid], b[valid], ci)
    if group is not None:
        g = np.asarray(group, dtype=np.int64)[valid]
        labels = list(names) if names is not None else [str(k) for k in range(int(g.max(initial=-1)) + 1)]
        out["by_group"] = {label: _agreement(a[valid][g == k], b[valid][g == k], ci)
                           for k, label in enumerate(labels) if (g == k).any()}
    return out


def _agreement(a: np.ndarray, b: np.ndarray, ci: float) -> dict:
    n, agree = int(a.size), int((a == b).sum())
    low, high = wilson_interval(agree, n, ci)
    return {"pairs": n, "agree": agree, "agreement": plain(agree / n) if n else None, "ci_low": plain(low),
            "ci_high": plain(high), "first_correct_second_incorrect": int(((a == 1) & (b == 0)).sum()),
            "first_incorrect_second_correct": int(((a == 0) & (b == 1)).sum())}
