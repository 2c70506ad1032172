"""Scores from verdicts: per-group means and accuracy against a gold label.

Gold labels use the vote codes: 1 correct, 0 incorrect, -1 unknown.
"""

from __future__ import annotations

import math

import numpy as np

from ._codes import MISSING, _as_int_array, _check_codes, as_round


def _as_1d(values, what: str) -> np.ndarray:
    arr = _as_int_array(values, what)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def group_scores(verdict_1d, group, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean verdict per group.

    ``verdict_1d`` (R,) holds 0/1 verdicts and ``group`` (R,) group indices in
    ``[0, n_groups)``. Returns ``(scores, counts)`` of shape (G,): float scores
    (NaN for empty groups) and int row counts.
    """
    verdict = _as_1d(verdict_1d, "verdict_1d")
    grp = _as_1d(group, "group")
    if verdict.shape != grp.shape:
        raise ValueError(f"verdict_1d {verdict.shape} and group {grp.shape} differ in shape")
    if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)) or n_groups < 0:
        raise ValueError(f"n_groups must be a non-negative integer, got {n_groups!r}")
    n_groups = int(n_groups)
    if grp.size and (grp.min() < 0 or grp.max() >= n_groups):
        raise ValueError(f"group indices must lie in [0, {n_groups})")
    if verdict.size and not np.isin(verdict, (0, 1)).all():
        raise ValueError("verdict_1d may only contain 0 and 1")
    counts = np.bincount(grp, minlength=n_groups).astype(np.int64)
    sums = np.bincount(grp, weights=verdict, minlength=n_groups)
    scores = np.full(n_groups, np.nan, dtype=np.float64)
    np.divide(sums, counts, out=scores, where=counts != 0)
    return scores, counts


def _as_gold(gold, rows: int) -> np.ndarray:
    g = _as_1d(gold, "gold")
    _check_codes(g, "gold")
    if g.shape[0] != rows:
        raise ValueError(f"gold has {g.shape[0]} rows, expected {rows}")
    return g


def accuracy_against(pred, gold) -> float:
    """Share of rows with known gold (gold != -1) where pred == gold; NaN if none."""
    p = _as_1d(pred, "pred")
    g = _as_gold(gold, p.shape[0])
    known = g != MISSING
    den = int(np.count_nonzero(known))
    if not den:
        return math.nan
    return float(np.count_nonzero(p[known] == g[known])) / den


def member_accuracy(votes_k, gold) -> np.ndarray:
    """Per-member accuracy for one round's (R, M) votes.

    Over rows where the member voted and gold is known. Returns a float array
    of shape (M,), NaN for members with no such row.
    """
    v = as_round(votes_k)
    g = _as_gold(gold, v.shape[0])
    scored = (v != MISSING) & (g != MISSING)[:, None]
    right = scored & (v == g[:, None])
    den = np.count_nonzero(scored, axis=0)
    out = np.full(v.shape[1], np.nan, dtype=np.float64)
    np.divide(np.count_nonzero(right, axis=0), den, out=out, where=den != 0)
    return out
