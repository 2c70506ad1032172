"""Percentile bootstrap confidence intervals over items, paired across models.

Data layout: a row is one (item, model) pair carrying a float ``value``
(for example 1.0 when the consensus judged the output correct, 0.0 when
not). ``score_matrix`` folds rows into a per-model, per-item sum matrix ``S``
and count matrix ``C``; a model's score is ``S[m].sum() / C[m].sum()``.

A resample draws ``n_items`` items with replacement and records how often
each was drawn as a count vector ``w``. The same ``w`` is used for every
model (paired), so differences between models are resampled jointly and
item difficulty cancels out of their spread. The resampled score is
``(w @ S[m]) / (w @ C[m])``: cells with ``C == 0`` (the model has no row for
the item) add nothing to either side. All resamples of a chunk are one
matrix product ``W @ S.T``; chunks only bound memory.

Count vectors come from ``numpy.random.default_rng(seed)`` drawing uniform
int64 item indices, resample after resample, so the draws (and so every
result) depend on ``seed`` only, never on ``chunk``;
``resample_weights`` returns the same count vectors for inspection.

Percentiles use numpy's default linear interpolation over the resamples
where the score is defined; resamples where a model's drawn items hold no
row for it (``w @ C[m] == 0``) give NaN and are left out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ._codes import check_names, plain

_MEMORY_BUDGET = 256 * 2**20
"""Bytes the per-chunk work arrays may take together (two int64/float64
arrays of shape (chunk, n_items) are alive at the peak)."""


@dataclass(frozen=True)
class BootstrapResult:
    """Bootstrap of per-model scores.

    ``point``, ``low`` and ``high`` have shape (n_models,); ``samples`` has
    shape (n_resamples, n_models) and holds each resample's scores (NaN where
    undefined). ``seed`` is whatever was passed as the generator seed.
    """

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    samples: np.ndarray
    seed: int | tuple[int, ...]
    n_resamples: int
    ci: float


# ---------------------------------------------------------------------------
# Input checks


def _as_index(values, what: str, upper: int, *, rows: int | None = None) -> np.ndarray:
    """``values`` as a one-dimensional int64 array of indexes in [0, upper), of length ``rows`` when given."""
    arr = np.asarray(values)
    if arr.ndim != 1 or (rows is not None and arr.shape[0] != rows):
        want = "one-dimensional" if rows is None else f"of shape ({rows},)"
        raise ValueError(f"{what} must be {want}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must be an integer array, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= upper):
        raise ValueError(f"{what} indices must lie in [0, {upper})")
    return arr


def _check_count(n, what: str, *, positive: bool = False) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < (1 if positive else 0):
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"{what} must be a {kind} integer, got {n!r}")
    return int(n)


def _check_ci(ci) -> float:
    ci = float(ci)
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie strictly between 0 and 1, got {ci!r}")
    return ci


def _check_seed(seed):
    if isinstance(seed, bool):
        raise ValueError(f"seed must be an integer or a tuple of integers, got {seed!r}")
    if isinstance(seed, (int, np.integer)):
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed!r}")
        return int(seed)
    if isinstance(seed, tuple) and seed and all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in seed
    ):
        return tuple(int(s) for s in seed)
    raise ValueError(f"seed must be an integer or a tuple of integers, got {seed!r}")


def _as_matrices(S, C) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(S, dtype=np.float64)
    c = np.asarray(C, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"S must have shape (n_models, n_items), got {s.shape}")
    if s.shape != c.shape:
        raise ValueError(f"S {s.shape} and C {c.shape} differ in shape")
    if not np.isfinite(s).all() or not np.isfinite(c).all():
        raise ValueError("S and C must be finite")
    if (c < 0).any():
        raise ValueError("C must be non-negative")
    return s, c


# ---------------------------------------------------------------------------
# Building blocks


def score_matrix(item, model, value, n_items: int, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Fold per-row values into ``(S, C)`` of shape (n_models, n_items).

    ``S[m, i]`` is the sum of ``value`` over rows of model ``m`` on item ``i``
    and ``C[m, i]`` (int64) the number of such rows (usually 0 or 1). NaN
    values are not allowed: drop those rows first.
    """
    n_items = _check_count(n_items, "n_items")
    n_models = _check_count(n_models, "n_models")
    it = _as_index(item, "item", n_items)
    md = _as_index(model, "model", n_models)
    val = np.asarray(value, dtype=np.float64)
    if val.ndim != 1:
        raise ValueError(f"value must be one-dimensional, got shape {val.shape}")
    if not (it.shape == md.shape == val.shape):
        raise ValueError(f"item {it.shape}, model {md.shape} and value {val.shape} differ in shape")
    if not np.isfinite(val).all():
        raise ValueError("value must be finite")
    cell = md * n_items + it
    size = n_models * n_items
    S = np.bincount(cell, weights=val, minlength=size).reshape(n_models, n_items)
    C = np.bincount(cell, minlength=size).astype(np.int64).reshape(n_models, n_items)
    return S, C


def _chunk_size(n_items: int, n_resamples: int, chunk) -> int:
    if chunk is not None:
        return _check_count(chunk, "chunk", positive=True)
    per_resample = 2 * 8 * max(n_items, 1)
    return max(1, min(n_resamples, _MEMORY_BUDGET // per_resample))


def _weight_chunks(rng: np.random.Generator, n_items: int, n_resamples: int, chunk: int):
    """Yield float64 count matrices W (b, n_items), b <= chunk, n_resamples rows in all.

    Row j of a chunk counts how often each item appears among n_items uniform
    int64 draws; the generator stream is consumed resample after resample,
    so the concatenated rows do not depend on ``chunk``.
    """
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        idx = rng.integers(0, n_items, size=(b, n_items), dtype=np.int64)
        idx += (np.arange(b, dtype=np.int64) * n_items)[:, None]
        counts = np.bincount(idx.ravel(), minlength=b * n_items)
        del idx
        W = counts.reshape(b, n_items).astype(np.float64)
        del counts
        yield W
        del W
        done += b


def resample_weights(n_items: int, n_resamples: int, seed=0) -> np.ndarray:
    """The (n_resamples, n_items) int64 count vectors the bootstrap uses for ``seed``.

    For inspection and tests; the bootstrap functions draw the same vectors
    chunk by chunk without holding them all.
    """
    n_items = _check_count(n_items, "n_items", positive=True)
    n_resamples = _check_count(n_resamples, "n_resamples", positive=True)
    rng = np.random.default_rng(_check_seed(seed))
    chunk = _chunk_size(n_items, n_resamples, None)
    parts = list(_weight_chunks(rng, n_items, n_resamples, chunk))
    return np.concatenate(parts).astype(np.int64)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _percentile_interval(samples: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise percentile interval over finite samples; NaN for all-NaN columns."""
    alpha = (1.0 - ci) / 2.0
    q = [100.0 * alpha, 100.0 * (1.0 - alpha)]
    if not np.isnan(samples).any():
        low, high = np.percentile(samples, q, axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(samples, q, axis=0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _bootstrap(S: np.ndarray, C: np.ndarray, n_resamples: int, seed, ci: float, chunk) -> BootstrapResult:
    n_models, n_items = S.shape
    point = _ratio(S.sum(axis=1), C.sum(axis=1))
    samples = np.full((n_resamples, n_models), np.nan, dtype=np.float64)
    if n_items and n_models:
        rng = np.random.default_rng(seed)
        size = _chunk_size(n_items, n_resamples, chunk)
        ST, CT = np.ascontiguousarray(S.T), np.ascontiguousarray(C.T)
        start = 0
        for W in _weight_chunks(rng, n_items, n_resamples, size):
            stop = start + W.shape[0]
            samples[start:stop] = _ratio(W @ ST, W @ CT)
            start = stop
            del W  # free the chunk before the next one is drawn
    low, high = _percentile_interval(samples, ci)
    return BootstrapResult(
        point=point, low=low, high=high, samples=samples, seed=seed, n_resamples=n_resamples, ci=ci
    )


# ---------------------------------------------------------------------------
# Public bootstraps


def bootstrap_scores(
    S, C, *, n_resamples: int = 1000, seed=0, ci: float = 0.95, chunk: int | None = None
) -> BootstrapResult:
    """Paired percentile bootstrap of each model's score ``S[m].sum() / C[m].sum()``.

    Every resample draws ``n_items`` items with replacement, the same draw for
    all models. ``seed`` is an int (or a tuple of ints) for
    ``numpy.random.default_rng``; ``chunk`` caps how many resamples are
    formed at once (default: as many as fit in about 256 MiB). A model
    without rows has NaN point, interval and samples.
    """
    s, c = _as_matrices(S, C)
    return _bootstrap(
        s,
        c,
        _check_count(n_resamples, "n_resamples", positive=True),
        _check_seed(seed),
        _check_ci(ci),
        chunk,
    )


def bootstrap_by_group(
    S,
    C,
    group_of_item,
    n_groups: int,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    chunk: int | None = None,
) -> list[BootstrapResult]:
    """One paired bootstrap per group (probe), resampling only that group's items.

    ``group_of_item`` (n_items,) gives each item's group in ``[0, n_groups)``.
    Group ``g`` uses the seed ``(seed, g)``, so its result equals
    ``bootstrap_scores(S[:, items_g], C[:, items_g], seed=(seed, g))`` with
    ``items_g = np.flatnonzero(group_of_item == g)``; ``seed`` must be an int
    here. An empty group gives NaN throughout.
    """
    s, c = _as_matrices(S, C)
    n_groups = _check_count(n_groups, "n_groups")
    groups = _as_index(group_of_item, "group_of_item", max(n_groups, 1))
    if groups.shape[0] != s.shape[1]:
        raise ValueError(f"group_of_item has {groups.shape[0]} items, S has {s.shape[1]}")
    n_resamples = _check_count(n_resamples, "n_resamples", positive=True)
    seed = _check_seed(seed)
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an integer here, got {seed!r}")
    ci = _check_ci(ci)
    out = []
    for g in range(n_groups):
        items = np.flatnonzero(groups == g)
        out.append(_bootstrap(s[:, items], c[:, items], n_resamples, (seed, g), ci, chunk))
    return out


def bootstrap_ratio(
    num, den, *, n_resamples: int = 1000, seed=0, ci: float = 0.95, chunk: int | None = None
) -> tuple[float, float, float]:
    """Percentile bootstrap of ``num.sum() / den.sum()`` over items.

    ``num`` and ``den`` (n_items,) are per-item sums; items are resampled and
    each resample's ratio is ``(w @ num) / (w @ den)``. Returns
    ``(point, low, high)``, NaN where undefined. Uses the same count vectors
    as ``bootstrap_scores`` for the same ``seed``.

    Build the per-item sums from per-row quantities with
    ``np.bincount(item, weights=x, minlength=n_items)``, where a row is one
    (item, model) pair of the vote array:

    - deliberation_impact (rows changed / rows eligible): ``num`` = per-item
      number of changed rows, ``den`` = per-item number of eligible rows.
    - agreement_lift (mean round-two minus mean round-one agreement over the
      rows with votes in both rounds) is the mean of the per-row difference
      ``agr2 - agr1`` over those rows: ``num`` = per-item sum of the
      differences, ``den`` = per-item number of such rows.
    """
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    if n.ndim != 1 or n.shape != d.shape:
        raise ValueError(f"num {n.shape} and den {d.shape} must be one-dimensional of equal length")
    res = bootstrap_scores(n[None, :], d[None, :], n_resamples=n_resamples, seed=seed, ci=ci, chunk=chunk)
    return float(res.point[0]), float(res.low[0]), float(res.high[0])


# ---------------------------------------------------------------------------
# Comparisons and summaries


def outrank_probability(samples, a: int, b: int) -> float:
    """Share of resamples where model ``a`` scores above model ``b``; ties count half.

    Resamples where either score is NaN are left out; NaN if none remain.
    """
    smp = np.asarray(samples, dtype=np.float64)
    if smp.ndim != 2:
        raise ValueError(f"samples must have shape (n_resamples, n_models), got {smp.shape}")
    for what, k in (("a", a), ("b", b)):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < smp.shape[1]:
            raise ValueError(f"{what} must be a model index in [0, {smp.shape[1]}), got {k!r}")
    sa, sb = smp[:, a], smp[:, b]
    ok = ~(np.isnan(sa) | np.isnan(sb))
    m = int(np.count_nonzero(ok))
    if not m:
        return math.nan
    sa, sb = sa[ok], sb[ok]
    return (np.count_nonzero(sa > sb) + 0.5 * np.count_nonzero(sa == sb)) / m






def _ranking(point: np.ndarray) -> np.ndarray:
    """Model indices by point score, highest first; NaN last; ties by index."""
    key = np.where(np.isnan(point), np.inf, -point)
    return np.argsort(key, kind="stable")


def adjacent_outranks(result: BootstrapResult, names) -> list[dict]:
    """For models sorted by point score (highest first; NaN last), one dict per adjacent pair.

    Keys: ``higher``, ``lower`` (names), ``p_higher_outranks``
    (``outrank_probability``), ``diff`` (point difference higher - lower)
    and ``diff_low``, ``diff_high`` (percentile interval of the paired
    resampled differences at ``result.ci``). Plain Python, rounded to 6
    places, NaN as None.
    """
    names = check_names(names, result.point.shape[0], "model")
    order = _ranking(result.point)
    out = []
    for hi, lo in zip(order[:-1], order[1:]):
        diff = result.samples[:, hi] - result.samples[:, lo]
        d_low, d_high = _percentile_interval(diff[:, None], result.ci)
        out.append(
            {
                "higher": names[hi],
                "lower": names[lo],
                "p_higher_outranks": plain(outrank_probability(result.samples, int(hi), int(lo))),
                "diff": plain(result.point[hi] - result.point[lo]),
                "diff_low": plain(d_low[0]),
                "diff_high": plain(d_high[0]),
            }
        )
    return out


_SUMMARY_KEYS = ("adjacent", "n_resamples", "seed", "ci")


def bootstrap_summary(result: BootstrapResult, names) -> dict:
    """A bootstrap as a plain-Python dict (6-place rounding, NaN becomes None).

    ``{name: {"score", "ci_low", "ci_high"}}`` for every model in order, plus
    ``"adjacent"`` (``adjacent_outranks``), ``"n_resamples"``, ``"seed"``
    (an int, or a list for tuple seeds) and ``"ci"``. Model names may not
    be one of those four keys.
    """
    names = check_names(names, result.point.shape[0], "model")
    clash = sorted(set(names) & set(_SUMMARY_KEYS))
    if clash:
        raise ValueError(f"model names clash with summary keys: {clash}")
    out: dict = {
        name: {
            "score": plain(result.point[j]),
            "ci_low": plain(result.low[j]),
            "ci_high": plain(result.high[j]),
        }
        for j, name in enumerate(names)
    }
    out["adjacent"] = adjacent_outranks(result, names)
    out["n_resamples"] = int(result.n_resamples)
    out["seed"] = list(result.seed) if isinstance(result.seed, tuple) else int(result.seed)
    out["ci"] = float(result.ci)
    return out
