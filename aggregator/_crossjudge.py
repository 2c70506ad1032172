"""Cross-judge check: do the council's scores survive another grader?

Every row (one model's response to one bank item) carries the council's score
``base`` and another grader's score ``cross`` (a single judge model, or one
council member alone), both on 0-100 (a binary verdict is 100 / 0, a rubric
row its normalised score), NaN where a grader gave none. Only *paired rows*,
where both are finite, count; a row's delta is ``cross - base``. The models
under test belong to vendors (``model_vendor``); items may belong to matched
groups (``group_of_item``, -1 for none) whose members differ only in their
target (the same question about different vendors' products).

Statistics
----------
- ``mean_delta``: the mean over models of each model's mean delta (every model
  with paired rows weighs the same, however many rows it has). Not safe when
  its interval excludes 0 and ``|value| > max_abs_mean_delta``: a shift must
  be both real and large enough to matter.
- ``rank_correlation``: Kendall's tau-b and Spearman's rho between the models'
  mean base and mean cross scores (over their paired rows); None with fewer
  than two models. Safe when the point tau-b is at least ``min_kendall``.
- ``provider_spread`` (family preference): P_v = the mean over vendor v's
  models of their mean delta; value = max_v P_v - min_v P_v over vendors with
  paired rows; None with fewer than two.
- ``group_spread`` (target preference): e_i = the mean delta over item i's
  paired rows; a group's spread is max e_i - min e_i over its items with
  paired rows; value = the mean over groups with at least two such items;
  None when there is no such group.

Why a no-preference interval
----------------------------
A spread is a range, so it is >= 0 and noise alone makes it positive: a
plain bootstrap interval of a spread never contains 0 and cannot say whether
a spread is more than noise. Each spread therefore also gets a
*no-preference interval*, whose upper end ``null_high`` (the ``ci`` quantile)
is the largest spread noise alone plausibly makes. A spread is not safe when
it exceeds ``null_high`` *and* is at least ``min_spread`` points: more than
noise, and large enough to matter.

- Provider spread: the same item resamples, on deltas with each vendor's
  effect removed (d_r - P_v(r) + mean_delta: every vendor then has the same
  P_v), so the resampled spread is the range of the deviations P*_v - P_v.
  Each resample's deviations are scaled by sqrt(n / sum_j (w_j - 1)^2), w_j
  the times item j was drawn and n the number of items: a resampled mean's
  deviation is the items' residuals weighted by (w_j - 1) / n, and the factor
  fixes the size of those weights to that of the sampling error of a mean over
  n items (over hundreds of items it is within a few percent of 1; a draw of
  every item exactly once has no deviation to scale and is left out).
- Group spread: a permutation test. With no target preference the items of a
  matched group are exchangeable, so each permutation shuffles every model's
  (sum, count) cells among the items of each group, independently per model,
  and recomputes the mean within-group spread; ``null_high`` is the ``ci``
  quantile of ``n_resamples`` permutations. (A model bootstrap of centred
  deltas was tried first: with few models it is too narrow, reading not safe
  in 16% of no-preference worlds with 5 models and 8% with 8.) In worlds of
  300 items in groups of 3 with noise of about 21 points per delta, 200 worlds
  each with no preference read not safe in 13 (5 models), 9 (8) and 9 (20);
  a +8-point target effect on one item per group was found in 27, 42 and 50
  of 50.

The spreads' own intervals (``low``, ``high``) are plain percentile intervals
of the resampled spread (items for the provider spread, models for the group
spread); since resampling adds noise to a range, they sit above the value and
are reported for scale only, never read.

Limits. The item bootstrap holds models fixed,
so a model the other grader treats differently (a model effect in the delta)
is counted as its vendor's preference: with model effects of sd 5 points and
two models a vendor the provider spread read not safe in about 90% of worlds
without any vendor effect; provider spread near its nominal 5% otherwise.

Resampling
----------
``mean_delta``, the per-model and per-vendor means, the rank correlations and
``provider_spread`` share one paired percentile bootstrap over the items with
paired rows (as ``_bootstrap`` does it: a count vector over items per
resample, the same for every model and statistic; the count vectors are
those of ``bootstrap_scores`` over those items for the same ``seed``).
Models are held fixed: the inference is about the models under test, so a
single model the other grader treats differently shows up as its vendor's
preference. ``group_spread`` resamples models with replacement instead (items
and groups fixed; an item's mean is over the drawn models' rows), since its
items are fixed by design and its noise is the models' disagreement; its
draws use the seed ``(seed, 1)`` (``(*seed, 1)`` for a tuple seed), and its
permutations a seed drawn from that generator after them. With
fewer than two models with paired rows it has no interval and no reading.

A resample's statistic is the same definition applied to the resampled data,
over what the resample defines (a model without a drawn row, or an item
without a drawn model, is left out of that resample); a resample where the
statistic is undefined is left out of its percentiles. Percentiles use
numpy's linear interpolation. Undefined values are NaN in arrays and None in
the dicts.

The vectorised statistics over resamples are ``aggregator._resampled``; the
group spread's bootstrap and permutation test, ``aggregator._target_spread``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ._bootstrap import (
    _as_index,
    _check_ci,
    _check_count,
    _check_seed,
    _chunk_size,
    _weight_chunks,
)
from ._codes import plain
from ._resampled import (
    NOT_SAFE, SAFE, _interval, _kendall_rows, _masked_mean, _null_scale, _num, _quantile, _range, _safe_div,
    _spearman_rows, _spread_reading,
)
from ._sensitivity import kendall_tau_b, spearman
from ._target_spread import _group_spread

_SCORE_SLACK = 1e-9
"""Points a score may stray outside [0, 100] (rounding in a weighted mean)."""


@dataclass(frozen=True)
class CrossJudgeThresholds:
    """Where the cross-judge readings turn from safe to not safe."""

    max_abs_mean_delta: float = 5.0
    """Points: a mean delta larger in size (and with an interval excluding 0) is not safe."""
    min_kendall: float = 0.7
    """Kendall's tau-b between the base and cross rankings below this is not safe."""
    min_spread: float = 2.0
    """Points: a spread above its no-preference interval is not safe only from this size on."""

    def __post_init__(self):
        for name in ("max_abs_mean_delta", "min_spread"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and non-negative, got {value!r}")
            object.__setattr__(self, name, float(value))
        value = self.min_kendall
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"min_kendall must be a number, got {value!r}")
        if not -1.0 <= value <= 1.0:
            raise ValueError(f"min_kendall must lie in [-1, 1], got {value!r}")
        object.__setattr__(self, "min_kendall", float(value))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class CrossJudge:
    """The cross-judge report of ``crossjudge``.

    The four statistics are plain-Python dicts (floats unrounded, None where
    undefined), each with its ``reading`` (``"safe"``, ``"not_safe"``, or
    None when it cannot be read) and the ``rule`` of that reading in words.
    The per-model and per-vendor arrays are float64 with NaN where there are
    no paired rows. ``to_dict`` gives the whole report as JSON-friendly
    Python (6-place rounding, never NaN).
    """

    mean_delta: dict
    """``value``, ``low``, ``high``, ``models``, ``reading``, ``rule``."""
    rank_correlation: dict | None
    """``kendall``, ``kendall_low``, ``kendall_high``, ``spearman``, ``spearman_low``,
    ``spearman_high``, ``models``, ``reading``, ``rule``; None with fewer than two models."""
    provider_spread: dict | None
    """``value``, ``low``, ``high``, ``null_high``, ``highest_vendor``, ``lowest_vendor``,
    ``vendors``, ``reading``, ``rule``; None with fewer than two vendors."""
    group_spread: dict | None
    """``value``, ``low``, ``high``, ``null_high``, ``groups``, ``reading``, ``rule``; None
    without a group of at least two items with paired rows."""
    model_rows: np.ndarray
    """(n_models,) int64: paired rows per model."""
    model_base: np.ndarray
    """(n_models,): mean base score over the model's paired rows."""
    model_cross: np.ndarray
    """(n_models,): mean cross score over the model's paired rows."""
    model_delta: np.ndarray
    """(n_models,): mean delta (``model_cross - model_base``)."""
    model_delta_low: np.ndarray
    model_delta_high: np.ndarray
    model_vendor: np.ndarray
    """(n_models,) int64: the vendor of each model, as given."""
    vendor_models: np.ndarray
    """(n_vendors,) int64: models with paired rows per vendor."""
    vendor_rows: np.ndarray
    """(n_vendors,) int64: paired rows per vendor."""
    vendor_delta: np.ndarray
    """(n_vendors,): P_v, the mean over the vendor's models of their mean delta."""
    vendor_delta_low: np.ndarray
    vendor_delta_high: np.ndarray
    paired_rows: int
    items: int
    """Items with paired rows (the units of the item bootstrap)."""
    thresholds: CrossJudgeThresholds
    n_resamples: int
    seed: int | tuple[int, ...]
    ci: float

    def to_dict(self) -> dict:
        """The report as plain Python: floats rounded to 6 places, NaN as None."""
        per_model = [
            {
                "model": m,
                "vendor": int(self.model_vendor[m]),
                "rows": int(self.model_rows[m]),
                "base": plain(self.model_base[m]),
                "cross": plain(self.model_cross[m]),
                "delta": plain(self.model_delta[m]),
                "delta_low": plain(self.model_delta_low[m]),
                "delta_high": plain(self.model_delta_high[m]),
            }
            for m in range(self.model_rows.shape[0])
        ]
        per_vendor = [
            {
                "vendor": v,
                "models": int(self.vendor_models[v]),
                "rows": int(self.vendor_rows[v]),
                "delta": plain(self.vendor_delta[v]),
                "delta_low": plain(self.vendor_delta_low[v]),
                "delta_high": plain(self.vendor_delta_high[v]),
            }
            for v in range(self.vendor_models.shape[0])
        ]
        return {
            "mean_delta": _plain_tree(self.mean_delta),
            "rank_correlation": _plain_tree(self.rank_correlation),
            "provider_spread": _plain_tree(self.provider_spread),
            "group_spread": _plain_tree(self.group_spread),
            "per_model": per_model,
            "per_vendor": per_vendor,
            "paired_rows": int(self.paired_rows),
            "items": int(self.items),
            "thresholds": self.thresholds.to_dict(),
            "n_resamples": int(self.n_resamples),
            "seed": list(self.seed) if isinstance(self.seed, tuple) else int(self.seed),
            "ci": float(self.ci),
        }


def _plain_tree(x):
    if x is None or isinstance(x, (str, bool)):
        return x
    if isinstance(x, dict):
        return {k: _plain_tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain_tree(v) for v in x]
    if isinstance(x, (int, np.integer)):
        return int(x)
    return plain(x)



# ---------------------------------------------------------------------------
# Input checks


def _as_score(values, what: str, n: int | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = "(R,)" if n is None else f"({n},) like base"
        raise ValueError(f"{what} must have shape {want}, got {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.number) and not np.iscomplexobj(arr)):
        raise ValueError(f"{what} must be a real numeric array, got dtype {arr.dtype}")
    x = arr.astype(np.float64)
    if np.isinf(x).any():
        raise ValueError(f"{what} may not be infinite (NaN marks a row without a score)")
    given = x[~np.isnan(x)]
    if given.size and (given.min() < -_SCORE_SLACK or given.max() > 100.0 + _SCORE_SLACK):
        raise ValueError(f"{what} must lie in [0, 100] (NaN marks a row without a score)")
    return x


def _as_groups(values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"group_of_item must have shape (n_items,), got {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"group_of_item must be an integer array, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < -1:
        raise ValueError("group_of_item must be a group index >= 0, or -1 for no group")
    return arr


def _model_seed(seed):
    return (*seed, 1) if isinstance(seed, tuple) else (seed, 1)



# ---------------------------------------------------------------------------
# The report


def crossjudge(
    base,
    cross,
    item,
    model,
    model_vendor,
    n_items: int,
    n_models: int,
    n_vendors: int,
    group_of_item=None,
    *,
    n_resamples: int = 1000,
    seed=0,
    ci: float = 0.95,
    thresholds: CrossJudgeThresholds | None = None,
    chunk: int | None = None,
) -> CrossJudge:
    """The cross-judge report of another grader's scores against the council's.

    ``base`` and ``cross`` (R,) are the council's and the other grader's
    0-100 scores per row (NaN where none); ``item`` (R,) and ``model`` (R,)
    index the row's item in ``[0, n_items)`` and model in ``[0, n_models)``;
    ``model_vendor`` (n_models,) gives each model's vendor in
    ``[0, n_vendors)``; ``group_of_item`` (n_items,), optional, gives each
    item's matched group (-1: none). Statistics, resampling and readings are
    described in the module docstring; ``thresholds`` defaults to
    ``CrossJudgeThresholds()``, ``seed`` is an int or a tuple of ints for
    ``numpy.random.default_rng`` and ``chunk`` caps the resamples formed at
    once (the result does not depend on it).

    Raises ValueError, naming the argument, for bad shapes, dtypes or
    ranges, and when no row has both scores.
    """
    n_items = _check_count(n_items, "n_items")
    n_models = _check_count(n_models, "n_models", positive=True)
    n_vendors = _check_count(n_vendors, "n_vendors", positive=True)
    b0 = _as_score(base, "base", None)
    n_rows = b0.shape[0]
    c0 = _as_score(cross, "cross", n_rows)
    it = _as_index(item, "item", n_items, rows=n_rows)
    md = _as_index(model, "model", n_models, rows=n_rows)
    vend = _as_index(model_vendor, "model_vendor", n_vendors, rows=n_models)
    groups = None if group_of_item is None else _as_groups(group_of_item)
    if groups is not None and groups.shape[0] != n_items:
        raise ValueError(f"group_of_item must have shape (n_items,) = ({n_items},), got {groups.shape}")
    n_resamples = _check_count(n_resamples, "n_resamples", positive=True)
    seed = _check_seed(seed)
    ci = _check_ci(ci)
    if thresholds is None:
        thresholds = CrossJudgeThresholds()
    if not isinstance(thresholds, CrossJudgeThresholds):
        raise ValueError(f"thresholds must be a CrossJudgeThresholds, got {type(thresholds).__name__}")
    if chunk is not None:
        chunk = _check_count(chunk, "chunk", positive=True)

    paired = ~(np.isnan(b0) | np.isnan(c0))
    n_paired = int(np.count_nonzero(paired))
    if n_paired == 0:
        raise ValueError("no paired rows: no row has both a finite base and a finite cross score")
    pb, pc, pi, pm = b0[paired], c0[paired], it[paired], md[paired]
    pd_ = pc - pb

    # Per-model point values over all models (NaN where no paired row).
    rows = np.bincount(pm, minlength=n_models).astype(np.int64)
    model_base = _safe_div(np.bincount(pm, weights=pb, minlength=n_models), rows)
    model_cross = _safe_div(np.bincount(pm, weights=pc, minlength=n_models), rows)
    model_delta = _safe_div(np.bincount(pm, weights=pd_, minlength=n_models), rows)

    # Compressed index spaces: models, items and vendors with paired rows.
    used_models = np.flatnonzero(rows > 0)
    n_mp = used_models.size
    used_items, item_pos = np.unique(pi, return_inverse=True)
    n_k = used_items.size
    model_pos = np.searchsorted(used_models, pm)
    cell = model_pos * n_k + item_pos
    size = n_mp * n_k
    S_d = np.bincount(cell, weights=pd_, minlength=size).reshape(n_mp, n_k)
    S_b = np.bincount(cell, weights=pb, minlength=size).reshape(n_mp, n_k)
    S_c = np.bincount(cell, weights=pc, minlength=size).reshape(n_mp, n_k)
    C = np.bincount(cell, minlength=size).astype(np.float64).reshape(n_mp, n_k)

    vendor_of_used = vend[used_models]
    vendor_models = np.bincount(vendor_of_used, minlength=n_vendors).astype(np.int64)
    vendor_rows = np.bincount(vend[pm], minlength=n_vendors).astype(np.int64)
    used_vendors = np.flatnonzero(vendor_models > 0)
    n_vp = used_vendors.size
    vendor_col = np.searchsorted(used_vendors, vendor_of_used)
    A = np.zeros((n_mp, n_vp))
    A[np.arange(n_mp), vendor_col] = 1.0

    delta_p = model_delta[used_models]
    P = (delta_p @ A) / A.sum(axis=0)
    mean_value = float(delta_p.mean())
    spread_value = float(P.max() - P.min()) if n_vp >= 2 else math.nan

    # ---- item bootstrap -------------------------------------------------
    stack = np.ascontiguousarray(np.concatenate([S_d, S_b, S_c, C]).T)  # (K, 4 Mp)
    s_model = np.empty((n_resamples, n_mp))
    s_mean = np.empty(n_resamples)
    s_vendor = np.empty((n_resamples, n_vp))
    s_spread = np.full(n_resamples, np.nan)
    s_null = np.full(n_resamples, np.nan)
    s_kendall = np.full(n_resamples, np.nan)
    s_spearman = np.full(n_resamples, np.nan)
    rng = np.random.default_rng(seed)
    start = 0
    for W in _weight_chunks(rng, n_k, n_resamples, _chunk_size(n_k, n_resamples, chunk)):
        stop = start + W.shape[0]
        sums = W @ stack
        d_sum, b_sum, c_sum, count = np.split(sums, 4, axis=1)
        has = count > 0
        md_ = _safe_div(d_sum, count)
        s_model[start:stop] = md_
        s_mean[start:stop] = _masked_mean(md_, axis=1)
        pv = _safe_div(np.where(has, md_, 0.0) @ A, has.astype(np.float64) @ A)
        s_vendor[start:stop] = pv
        if n_vp >= 2:
            s_spread[start:stop] = _range(pv)
            s_null[start:stop] = _range(_null_scale(W, n_k)[:, None] * (pv - P))
        if n_mp >= 2:
            mb, mc = _safe_div(b_sum, count), _safe_div(c_sum, count)
            s_kendall[start:stop] = _kendall_rows(mb, mc)
            s_spearman[start:stop] = _spearman_rows(mb, mc)
        start = stop
        del W

    lo_m, hi_m = _interval(s_model, ci)
    model_low = np.full(n_models, np.nan)
    model_high = np.full(n_models, np.nan)
    model_low[used_models], model_high[used_models] = lo_m, hi_m
    lo_v, hi_v = _interval(s_vendor, ci)
    vendor_delta = np.full(n_vendors, np.nan)
    vendor_low = np.full(n_vendors, np.nan)
    vendor_high = np.full(n_vendors, np.nan)
    vendor_delta[used_vendors], vendor_low[used_vendors], vendor_high[used_vendors] = P, lo_v, hi_v

    pct = f"{100.0 * ci:g}%"
    t = thresholds

    # ---- mean delta -------------------------------------------------------
    lo, hi = (float(v[0]) for v in _interval(s_mean, ci))
    excludes_zero = lo > 0.0 or hi < 0.0
    mean_delta = {
        "value": mean_value,
        "low": _num(lo),
        "high": _num(hi),
        "models": int(n_mp),
        "reading": NOT_SAFE if excludes_zero and abs(mean_value) > t.max_abs_mean_delta else SAFE,
        "rule": (
            f"not safe when the {pct} bootstrap interval of the mean delta (cross - base, the mean over "
            f"models of each model's mean delta) excludes 0 and its size exceeds "
            f"{t.max_abs_mean_delta:g} points; safe otherwise"
        ),
    }

    # ---- rank correlation -------------------------------------------------
    rank_correlation = None
    if n_mp >= 2:
        tau = kendall_tau_b(model_base[used_models], model_cross[used_models])
        rho = spearman(model_base[used_models], model_cross[used_models])
        k_lo, k_hi = (float(v[0]) for v in _interval(s_kendall, ci))
        r_lo, r_hi = (float(v[0]) for v in _interval(s_spearman, ci))
        rank_correlation = {
            "kendall": _num(tau),
            "kendall_low": _num(k_lo),
            "kendall_high": _num(k_hi),
            "spearman": _num(rho),
            "spearman_low": _num(r_lo),
            "spearman_high": _num(r_hi),
            "models": int(n_mp),
            "reading": None if math.isnan(tau) else (SAFE if tau >= t.min_kendall else NOT_SAFE),
            "rule": (
                f"safe when Kendall's tau-b between the models' mean base and mean cross scores is at "
                f"least {t.min_kendall:g}; not safe below; no reading when it is undefined (a side "
                f"with all models tied)"
            ),
        }

    # ---- provider spread --------------------------------------------------
    provider_spread = None
    if n_vp >= 2:
        s_lo, s_hi = (float(v[0]) for v in _interval(s_spread, ci))
        null_high = _quantile(s_null, ci)
        provider_spread = {
            "value": spread_value,
            "low": _num(s_lo),
            "high": _num(s_hi),
            "null_high": _num(null_high),
            "highest_vendor": int(used_vendors[int(np.argmax(P))]),
            "lowest_vendor": int(used_vendors[int(np.argmin(P))]),
            "vendors": int(n_vp),
            "reading": _spread_reading(spread_value, null_high, t.min_spread),
            "rule": (
                f"not safe when the spread of the vendors' mean deltas exceeds the upper end of its "
                f"no-preference interval (null_high: the {ci:g} quantile of the spread, under the same "
                f"item resamples, of the deltas with each vendor's effect removed) and is at least "
                f"{t.min_spread:g} points; safe otherwise"
            ),
        }

    # ---- group spread (model bootstrap) -------------------------------------
    group_spread = None
    if groups is not None:
        group_spread = _group_spread(pd_, model_pos, groups, pi, n_mp, n_resamples, _model_seed(seed), ci, t, chunk)

    return CrossJudge(
        mean_delta=mean_delta,
        rank_correlation=rank_correlation,
        provider_spread=provider_spread,
        group_spread=group_spread,
        model_rows=rows,
        model_base=model_base,
        model_cross=model_cross,
        model_delta=model_delta,
        model_delta_low=model_low,
        model_delta_high=model_high,
        model_vendor=vend,
        vendor_models=vendor_models,
        vendor_rows=vendor_rows,
        vendor_delta=vendor_delta,
        vendor_delta_low=vendor_low,
        vendor_delta_high=vendor_high,
        paired_rows=n_paired,
        items=int(n_k),
        thresholds=thresholds,
        n_resamples=n_resamples,
        seed=seed,
        ci=ci,
    )
