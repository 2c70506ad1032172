"""The cross-judge check's ``group_spread`` (target preference): the mean within-group spread of the items' mean
deltas, its model-bootstrap interval, and its no-preference interval from a permutation test that shuffles each
model's deltas among the items of each matched group (the definitions and the reasons: ``aggregator._crossjudge``).
"""

from __future__ import annotations

import numpy as np

from ._bootstrap import _MEMORY_BUDGET, _weight_chunks
from ._resampled import _interval, _masked_mean, _num, _quantile, _safe_div, _segment_range, _spread_reading


def group_permutations(rng: np.random.Generator, b: int, n_models: int, group_of_column: np.ndarray) -> np.ndarray:
    """(b, n_models, K) column orders: each model's columns shuffled among the columns of their own group
    (``group_of_column`` (K,), non-decreasing), independently per model and per permutation."""
    keys = rng.random((b, n_models, group_of_column.size)) + group_of_column[None, None, :]
    return np.argsort(keys, axis=2, kind="stable")


def _permuted_spreads(S: np.ndarray, C: np.ndarray, group_of_column: np.ndarray, starts: np.ndarray, n: int,
                      rng: np.random.Generator) -> np.ndarray:
    """The mean within-group spread of the items' mean deltas under ``n`` permutations that move each model's
    (sum, count) cells among its group's items: the spread with no target preference."""
    n_mp, n_kg = S.shape
    out = np.empty(n)
    chunk = max(1, min(n, _MEMORY_BUDGET // (8 * 6 * n_mp * n_kg)))
    for start in range(0, n, chunk):
        order = group_permutations(rng, min(chunk, n - start), n_mp, group_of_column)
        e_perm = _safe_div(np.take_along_axis(S[None], order, axis=2).sum(axis=1),
                           np.take_along_axis(C[None], order, axis=2).sum(axis=1))
        out[start:start + order.shape[0]] = _masked_mean(_segment_range(e_perm, starts), axis=1)
    return out


def _group_spread(delta, model_pos, groups, row_item, n_mp, n_resamples, seed, ci, t, chunk):
    """The ``group_spread`` dict (None without a group of two items with paired rows).

    ``delta``, ``model_pos`` (compressed model index) and ``row_item`` are per
    paired row; ``groups`` is ``group_of_item``.
    """
    items = np.unique(row_item)
    items = items[groups[items] >= 0]
    order = np.lexsort((items, groups[items]))
    items = items[order]
    _, per_group = np.unique(groups[items], return_counts=True)
    keep_group = per_group >= 2
    if not keep_group.any():
        return None
    items = items[np.repeat(keep_group, per_group)]
    n_g = int(keep_group.sum())
    n_kg = items.size
    starts = np.concatenate([[0], np.cumsum(per_group[keep_group])[:-1]]).astype(np.intp)
    column = np.full(groups.shape[0], -1, dtype=np.int64)
    column[items] = np.arange(n_kg)
    col = column[row_item]
    sel = col >= 0
    cell = model_pos[sel] * n_kg + col[sel]
    S = np.bincount(cell, weights=delta[sel], minlength=n_mp * n_kg).reshape(n_mp, n_kg)
    C = np.bincount(cell, minlength=n_mp * n_kg).astype(np.float64).reshape(n_mp, n_kg)

    e = S.sum(axis=0) / C.sum(axis=0)
    value = float(_segment_range(e[None, :], starts)[0].mean())
    out = {
        "value": value,
        "low": None,
        "high": None,
        "null_high": None,
        "groups": n_g,
        "reading": None,
        "rule": (
            f"not safe when the mean within-group spread of the items' mean deltas exceeds the upper "
            f"end of its no-preference interval (null_high: the {ci:g} quantile of that spread when each "
            f"model's deltas are shuffled among the items of each group, {n_resamples} times) and is at "
            f"least {t.min_spread:g} points; safe otherwise; no reading with fewer than two models"
        ),
    }
    if n_mp < 2:
        return out
    s_spread = np.empty(n_resamples)
    rng = np.random.default_rng(seed)
    if chunk is None:
        # e_star, its deviations and the masked copies: about eight (b, n_kg) float64 arrays.
        chunk = max(1, min(n_resamples, _MEMORY_BUDGET // (8 * 8 * n_kg)))
    start = 0
    for U in _weight_chunks(rng, n_mp, n_resamples, chunk):
        stop = start + U.shape[0]
        s_spread[start:stop] = _masked_mean(_segment_range(_safe_div(U @ S, U @ C), starts), axis=1)
        start = stop
    group_of_column = np.repeat(np.arange(n_g), per_group[keep_group])
    s_null = _permuted_spreads(S, C, group_of_column, starts, n_resamples, np.random.default_rng(rng.integers(2**63)))
    lo, hi = (float(v[0]) for v in _interval(s_spread, ci))
    null_high = _quantile(s_null, ci)
    out.update(
        low=_num(lo),
        high=_num(hi),
        null_high=_num(null_high),
        reading=_spread_reading(value, null_high, t.min_spread),
    )
    return out
