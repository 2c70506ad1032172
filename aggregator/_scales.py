"""Statistics for graded (ordinal / interval) rubric scores.

Arrays
------
A score array has shape (R rows, M members, D dimensions, 2 rounds): member
m's score (for example an integer 0-4) for dimension d of row r; round index
0 is round one and 1 is round two, as for votes. The reliability statistics
take one round of one dimension, a ``ratings`` matrix of shape (R, M) whose
rows are the units (targets) and whose members are the coders (raters), for
example ``scores[:, :, d, 1]``.

Missing scores: NaN or ``MISSING`` (-1), in any numeric dtype, marks a member
that gave no valid score. Scores are otherwise non-negative: any other
negative value is rejected (shift a scale with negative points first), and
so is infinity. Everything is computed in float64; undefined results are NaN.

The council's score for a row and dimension is the median of the valid
round-two scores, the lower middle one for an even count (``score_consensus``);
``normalised_scores`` weights the dimensions into one 0-100 score per row and
``bootstrap_rubric`` puts percentile intervals on each model's mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._bootstrap import BootstrapResult, bootstrap_scores, score_matrix
from ._codes import MISSING, check_quorum
from ._fdist import f_isf, f_sf

_BLOCK_ROWS = 1 << 16
"""Units per block when counting values for the coincidence matrix."""

# ---------------------------------------------------------------------------
# Input checks


def _as_float(values, what: str, ndim: int, shape: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != ndim:
        raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.number) and not np.iscomplexobj(arr)):
        raise ValueError(f"{what} must be a real numeric array, got dtype {arr.dtype}")
    x = arr.astype(np.float64)  # always a copy: MISSING is rewritten below
    x[x == MISSING] = np.nan
    if np.isinf(x).any():
        raise ValueError(f"{what} may not be infinite")
    if (x < 0).any():
        raise ValueError(f"{what} must be non-negative; -1 (MISSING) or NaN marks no score")
    return x


def as_ratings(ratings) -> np.ndarray:
    """``ratings`` (R units, M coders) as float64 with NaN for missing, after the checks above."""
    return _as_float(ratings, "ratings", 2, "(units, coders)")


def as_scores(scores) -> np.ndarray:
    """``scores`` (R, M, D, 2) as float64 with NaN for missing, after the checks above."""
    x = _as_float(scores, "scores", 4, "(rows, members, dimensions, 2)")
    if x.shape[3] != 2:
        raise ValueError(f"scores must have shape (rows, members, dimensions, 2), got {x.shape}")
    return x


def _ratio(num, den) -> np.ndarray:
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=np.asarray(den) != 0)
    return out


# ---------------------------------------------------------------------------
# Krippendorff's alpha


def _coincidences(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, o)`` of a checked (R, M) ratings matrix.

    ``values`` (V,) are the sorted distinct values of the pairable units (at
    least 2 valid values) and ``o`` (V, V) their coincidence matrix,
    o_ck = sum_u n_uc (n_uk - [c == k]) / (m_u - 1), where n_uc counts value
    c in unit u and m_u is the unit's number of values. Units are counted in
    blocks, so memory is (block, V) plus V x V: meant for a small scale.
    """
    x = x[np.count_nonzero(~np.isnan(x), axis=1) >= 2]
    values = np.unique(x[~np.isnan(x)])
    v = values.size
    o = np.zeros((v, v), dtype=np.float64)
    for start in range(0, x.shape[0], _BLOCK_ROWS):
        block = x[start : start + _BLOCK_ROWS]
        valid = ~np.isnan(block)
        unit = np.nonzero(valid)[0]  # row-major, in step with block[valid]
        code = unit * v + np.searchsorted(values, block[valid])
        counts = np.bincount(code, minlength=block.shape[0] * v).reshape(-1, v).astype(np.float64)
        weighted = counts / (np.count_nonzero(valid, axis=1) - 1.0)[:, None]
        o += weighted.T @ counts
        o[np.diag_indices(v)] -= weighted.sum(axis=0)
    return values, o


def _alpha(o: np.ndarray, delta: np.ndarray) -> float:
    """alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck.

    n_c = sum_k o_ck are the pairable values' counts and n = sum_c n_c. NaN
    when no unit is pairable or D_e = 0 (a single value).
    """
    n_c = o.sum(axis=0)
    n = float(n_c.sum())
    expected = float(n_c @ delta @ n_c)
    if n == 0.0 or expected == 0.0:
        return math.nan
    return 1.0 - (n - 1.0) * float((o * delta).sum()) / expected


def krippendorff_alpha_ordinal(ratings) -> float:
    """Krippendorff's alpha with the ordinal metric; rows are units, columns coders.

    Missing values are allowed; units with fewer than two values are not
    pairable and are left out, as is every value only they hold. From the
    coincidence matrix o over the observed values c < k of the pairable
    units (see ``_coincidences``) with n_g = sum_k o_gk, the ordinal distance
    (Krippendorff 2011) is

        delta_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2 = (r_k - r_c) ** 2

    with r_g = n_1 + ... + n_g - n_g / 2 the mid-rank of value g, so only the
    order of the values matters. alpha = 1 - D_o / D_e; NaN if no unit is
    pairable or all pairable values are equal.
    """
    _, o = _coincidences(as_ratings(ratings))
    n_c = o.sum(axis=0)
    rank = np.cumsum(n_c) - n_c / 2.0
    return _alpha(o, (rank[:, None] - rank[None, :]) ** 2)


def krippendorff_alpha_interval(ratings) -> float:
    """Krippendorff's alpha with the interval metric delta_ck = (c - k) ** 2.

    Same data conventions and coincidence matrix as ``krippendorff_alpha_ordinal``.
    """
    values, o = _coincidences(as_ratings(ratings))
    return _alpha(o, (values[:, None] - values[None, :]) ** 2)


# ---------------------------------------------------------------------------
# Intraclass correlation


@dataclass(frozen=True)
class ICC:
    """ICC(2,1) and ICC(2,k) of ``icc2`` with their F-based intervals."""

    single: float
    """ICC(2,1): the reliability of one rater's score."""
    average: float
    """ICC(2,k): the reliability of the mean of the k raters' scores."""
    single_low: float
    single_high: float
    average_low: float
    average_high: float
    f: float
    """MS_rows / MS_error, the test of ICC = 0."""
    df1: int
    df2: int
    p_value: float
    """P(F(df1, df2) > f)."""
    targets: int
    """Rows used (complete rows)."""
    raters: int
    dropped: int
    """Rows left out because a rating was missing."""
    ci: float


def icc2(ratings, ci: float = 0.95) -> ICC:
    """Two-way random-effects, absolute-agreement ICC(2,1) and ICC(2,k).

    ``ratings`` (n targets, k raters). Only complete rows are used: a row
    with any missing rating is dropped (counted in ``dropped``), since the
    ANOVA below needs a balanced table. With the two-way ANOVA mean squares
    MSR (rows, n - 1 df), MSC (raters, k - 1 df) and MSE (residual,
    (n - 1)(k - 1) df) (Shrout & Fleiss 1979, case 2; McGraw & Wong 1996,
    ICC(A,1) and ICC(A,k)):

        ICC(2,1) = (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n)
        ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n)

    The ``ci`` interval of ICC(2,1) is Satterthwaite's, with
    v = (n - 1)(k - 1) (k p Fj + n (1 + (k - 1) p) - k p)**2 /
    ((n - 1) k**2 p**2 Fj**2 + (n (1 + (k - 1) p) - k p)**2), p = ICC(2,1),
    Fj = MSC / MSE, F* = the upper (1 - ci) / 2 quantile of F(n - 1, v) and
    F** that of F(v, n - 1):

        low  = n (MSR - F* MSE) / (F* (k MSC + (k n - k - n) MSE) + n MSR)
        high = n (F** MSR - MSE) / (k MSC + (k n - k - n) MSE + n F** MSR)

    and ICC(2,k)'s bounds are these through Spearman-Brown, b k / (1 + (k - 1) b).
    F quantiles come from ``_fdist`` (no scipy). Fewer than two complete rows
    or two raters give NaN throughout; an undefined ICC or interval (all
    ratings equal; MSE = 0) is NaN.
    """
    x = as_ratings(ratings)
    ci = float(ci)
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie strictly between 0 and 1, got {ci!r}")
    complete = ~np.isnan(x).any(axis=1)
    x = x[complete]
    n, k = x.shape
    dropped = int(complete.size - n)
    nan = math.nan
    if n < 2 or k < 2:
        return ICC(nan, nan, nan, nan, nan, nan, nan, max(n - 1, 0), max((n - 1) * (k - 1), 0), nan, n, k, dropped, ci)
    grand = x.mean()
    row_mean, col_mean = x.mean(axis=1), x.mean(axis=0)
    resid = x - row_mean[:, None] - col_mean[None, :] + grand
    df1, df2 = n - 1, (n - 1) * (k - 1)
    msr = np.float64(k * ((row_mean - grand) ** 2).sum() / df1)
    msc = np.float64(n * ((col_mean - grand) ** 2).sum() / (k - 1))
    mse = np.float64((resid**2).sum() / df2)
    with np.errstate(divide="ignore", invalid="ignore"):
        single = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        average = (msr - mse) / (msr + (msc - mse) / n)
        f = msr / mse
        fj = msc / mse
        p = single
        core = n * (1 + (k - 1) * p) - k * p
        v = df2 * (k * p * fj + core) ** 2 / (df1 * k**2 * p**2 * fj**2 + core**2)
        tail = (1.0 - ci) / 2.0
        f_low = f_isf(tail, df1, float(v))
        f_high = f_isf(tail, float(v), df1)
        spread = k * msc + (k * n - k - n) * mse
        low = n * (msr - f_low * mse) / (f_low * spread + n * msr)
        high = n * (f_high * msr - mse) / (spread + n * f_high * msr)
        avg_low, avg_high = (b * k / (1 + (k - 1) * b) for b in (low, high))
    return ICC(
        single=float(single),
        average=float(average),
        single_low=float(low),
        single_high=float(high),
        average_low=float(avg_low),
        average_high=float(avg_high),
        f=float(f),
        df1=df1,
        df2=df2,
        p_value=f_sf(float(f), df1, df2),
        targets=n,
        raters=k,
        dropped=dropped,
        ci=ci,
    )


# ---------------------------------------------------------------------------
# Weighted kappa


def _quadratic_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """1 - mean((a - b)**2) / (var(a) + var(b) + (mean(a) - mean(b))**2); NaN if undefined."""
    if not a.size:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    expected = (da @ da + db @ db) / a.size + (a.mean() - b.mean()) ** 2
    if expected == 0.0:
        return math.nan
    diff = a - b
    return 1.0 - (diff @ diff) / a.size / expected


def quadratic_kappa_pairs(ratings) -> np.ndarray:
    """Quadratic-weighted Cohen's kappa for every pair of coders, shape (M, M), symmetric.

    Over the rows both coders scored. With disagreement weights (x - y)**2
    on the score values, kappa_w = 1 - sum w o / sum w e (o the observed and
    e the chance joint shares, the product of the two marginals) reduces to

        1 - mean((a - b)**2) / (var(a) + var(b) + (mean(a) - mean(b))**2)

    (population variances; Lin's concordance correlation). Weights on the
    values equal Cohen's quadratic weights over the full integer scale: for
    integer scores this is scikit-learn's ``cohen_kappa_score(a, b,
    weights="quadratic", labels=range(low, high + 1))``, which differs from
    its default (labels = the values seen) when a middle score goes unused.
    NaN where the pair shares no row or both coders gave one and the same
    score throughout. The diagonal is a coder against itself: 1.0 if its
    scores vary, else NaN.
    """
    x = as_ratings(ratings)
    valid = ~np.isnan(x)
    m = x.shape[1]
    out = np.full((m, m), np.nan, dtype=np.float64)
    for i in range(m):
        for j in range(i, m):
            both = valid[:, i] & valid[:, j]
            out[i, j] = out[j, i] = _quadratic_kappa(x[both, i], x[both, j])
    return out


# ---------------------------------------------------------------------------
# The council's score: median rule


@dataclass(frozen=True, eq=False)
class ScoreConsensus:
    """The median rule of ``score_consensus``; every field has shape (R, D, 2)."""

    score: np.ndarray
    """float64: the lower median of the valid scores; NaN where ``no_quorum``."""
    tie: np.ndarray
    """bool: an even count whose two middle scores differ (the lower one was taken)."""
    no_quorum: np.ndarray
    """bool: fewer valid scores than the quorum (always where there are none)."""
    n: np.ndarray
    """int64: valid scores."""

    @property
    def council(self) -> np.ndarray:
        """The council's score per row and dimension, (R, D): round two's ``score``."""
        return self.score[:, :, 1]


def _lower_median(x: np.ndarray, axis: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(low, high, n)`` over ``axis`` of a NaN-coded array: the lower and upper middle valid
    values (equal for an odd count; NaN for none) and the valid count."""
    n = np.count_nonzero(~np.isnan(x), axis=axis)
    if x.shape[axis] == 0:
        empty = np.full(n.shape, np.nan)
        return empty, empty.copy(), n
    srt = np.sort(x, axis=axis)  # NaN sorts last
    middle = []
    for idx in (np.maximum(n - 1, 0) // 2, n // 2):
        idx = np.minimum(idx, x.shape[axis] - 1)
        middle.append(np.squeeze(np.take_along_axis(srt, np.expand_dims(idx, axis), axis=axis), axis=axis))
    low, high = middle
    low[n == 0] = np.nan
    high[n == 0] = np.nan
    return low, high, n


def score_consensus(scores, quorum: int = 1) -> ScoreConsensus:
    """Median of the valid scores per row, dimension and round of a (R, M, D, 2) score array.

    The council's score is round two's (``.council``). An even count takes
    the lower of the two middle scores and flags ``tie`` where they differ:
    a split panel never lifts a score (as a binary tie resolves to incorrect),
    and the result stays a point of the scale instead of a half point. Rows
    with fewer than ``quorum`` valid scores (default 1: any valid score) get
    NaN and ``no_quorum``; ``normalised_scores`` counts those as 0.
    """
    q = check_quorum(quorum)
    x = as_scores(scores)
    low, high, n = _lower_median(x, axis=1)
    no_quorum = n < q
    score = np.where(no_quorum, np.nan, low)
    tie = ~no_quorum & (n % 2 == 0) & (low != high)
    return ScoreConsensus(score=score, tie=tie, no_quorum=no_quorum, n=n.astype(np.int64))


def normalised_scores(score, weights, high: float, low: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Weighted 0-100 score per row from per-dimension scores on the scale [low, high].

    ``score`` (R, D) holds scores with NaN for an omitted dimension (as
    ``ScoreConsensus.council`` has where there was no quorum); ``weights``
    (D,) are non-negative with a positive sum. Per row

        value = 100 * sum_d w_d z_d / sum_d w_d,   z_d = (s_d - low) / (high - low)

    where an omitted dimension has z_d = 0: it counts as the bottom of the
    scale and stays in the denominator, so a missing judgement never raises
    a row's score. Returns ``(value, flagged)``, float64 (R,) and bool (R,),
    ``flagged`` marking rows with any omitted dimension.
    """
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"score must have shape (rows, dimensions), got {s.shape}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (s.shape[1],):
        raise ValueError(f"weights must have shape ({s.shape[1]},), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"need finite low < high, got low={low!r}, high={high!r}")
    omitted = np.isnan(s)
    if ((s[~omitted] < low) | (s[~omitted] > high)).any():
        raise ValueError(f"scores must lie in [{low}, {high}] (NaN for an omitted dimension)")
    z = np.where(omitted, 0.0, (s - low) / (high - low))
    return 100.0 * (z @ w) / w.sum(), omitted.any(axis=1)


# ---------------------------------------------------------------------------
# Deliberation


@dataclass(frozen=True)
class ScoreImpact:
    """What round two changed in the members' scores (``score_deliberation_impact``)."""

    moved: float
    """Share of the cells (row, member, dimension) valid in both rounds whose score changed."""
    mean_abs_move: float
    """Mean |round two - round one| over those cells (unchanged cells count 0)."""
    cells: int
    moved_by_dimension: np.ndarray
    """(D,): ``moved`` per dimension."""
    mean_abs_move_by_dimension: np.ndarray
    """(D,): ``mean_abs_move`` per dimension."""


def score_deliberation_impact(scores) -> ScoreImpact:
    """How much members moved their scores between rounds, over a (R, M, D, 2) score array.

    Only cells (row, member, dimension) scored validly in both rounds count,
    so a score going from missing to given (or back) is not a move, as for
    binary votes. Rates over no cells are NaN.
    """
    x = as_scores(scores)
    first, second = x[..., 0], x[..., 1]
    both = ~np.isnan(first) & ~np.isnan(second)
    move = np.where(both, np.abs(second - first), 0.0)
    cells = np.count_nonzero(both, axis=(0, 1))
    moved = np.count_nonzero(move > 0, axis=(0, 1))
    size = move.sum(axis=(0, 1))
    total = int(cells.sum())
    return ScoreImpact(
        moved=float(_ratio(moved.sum(), total)),
        mean_abs_move=float(_ratio(size.sum(), total)),
        cells=total,
        moved_by_dimension=_ratio(moved, cells),
        mean_abs_move_by_dimension=_ratio(size, cells),
    )


def _dispersion(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean absolute deviation from the median over members of (R, M, D) scores: ``(mad, n)``, (R, D)."""
    median, _, n = _lower_median(x, axis=1)
    dev = np.abs(x - median[:, None, :])
    return _ratio(np.nansum(dev, axis=1), n), n


@dataclass(frozen=True)
class ScoreLift:
    """The drop in the members' dispersion from round one to round two (``score_agreement_lift``)."""

    lift: float
    """``dispersion_round1 - dispersion_round2``: positive when the members converged."""
    dispersion_round1: float
    dispersion_round2: float
    cells: int
    """(row, dimension) cells with at least two valid scores in each round."""
    lift_by_dimension: np.ndarray
    """(D,): ``lift`` per dimension."""


def score_agreement_lift(scores) -> ScoreLift:
    """Mean dispersion of the members' scores in round one minus round two, over (R, M, D, 2).

    A cell's dispersion is the mean absolute deviation of its valid scores
    from their median, (1 / n) sum_m |s_m - median|: it is on the score's
    own scale, measures how far members sit from the council's (median)
    score, the median being what minimises it (so either middle value of an
    even count gives the same figure), and one outlying member moves it less
    than a standard deviation. Averaged over the (row, dimension) cells with
    at least two valid scores in each round (one score has no spread, and
    counting it as 0 would reward members dropping out); NaN if none.
    """
    x = as_scores(scores)
    mad1, n1 = _dispersion(x[..., 0])
    mad2, n2 = _dispersion(x[..., 1])
    used = (n1 >= 2) & (n2 >= 2)
    cells = np.count_nonzero(used, axis=0)
    sum1 = np.where(used, mad1, 0.0).sum(axis=0)
    sum2 = np.where(used, mad2, 0.0).sum(axis=0)
    total = int(cells.sum())
    d1, d2 = float(_ratio(sum1.sum(), total)), float(_ratio(sum2.sum(), total))
    return ScoreLift(
        lift=d1 - d2,
        dispersion_round1=d1,
        dispersion_round2=d2,
        cells=total,
        lift_by_dimension=_ratio(sum1 - sum2, cells),
    )


# ---------------------------------------------------------------------------
# Member leniency and the panels it gives


@dataclass(frozen=True)
class PanelLeniency:
    """Members' leniency and what it does to panels (``panel_leniency``)."""

    member_offset: np.ndarray
    """(M,): a member's mean level minus the median of its row's valid levels, over the (row, dimension)
    cells it scored in the round; NaN for a member with none."""
    group_offset: np.ndarray
    """(G,): the mean over a group's rows of the median of the offsets of the members who scored the row:
    how much more lenient than the average seat the council's panel is on that group's rows."""
    group_rows: np.ndarray
    """(G,) int64: rows per group."""

    @property
    def spread(self) -> float:
        """max - min of ``group_offset`` over groups with rows (NaN with fewer than two)."""
        g = self.group_offset[(self.group_rows > 0) & ~np.isnan(self.group_offset)]
        return float(g.max() - g.min()) if len(g) >= 2 else float("nan")


def panel_leniency(scores, group, n_groups: int, round_: int = 0) -> PanelLeniency:
    """Each member's leniency on a (R, M, D, 2) score array, and the leniency of the panel each group of rows
    gets.

    Self-exclusion seats a different panel on each producing vendor's rows. When members differ in leniency,
    the council's median then sits higher on some vendors' rows than on others, a vendor-dependent offset the
    median rule does not remove. ``group`` (R,) gives each row's group (e.g. the producing vendor); a member
    sits on a row when it scored any dimension there. Read in round one (``round_=0``, blind) by default.
    """
    x = as_scores(scores)[..., round_]
    g = np.asarray(group, dtype=np.int64)
    if g.shape != (x.shape[0],) or (len(g) and (g.min() < 0 or g.max() >= n_groups)):
        raise ValueError(f"group must have shape ({x.shape[0]},) with values in [0, {n_groups})")
    median, _, _ = _lower_median(x, axis=1)
    dev = x - median[:, None, :]
    valid = ~np.isnan(dev)
    offset = _ratio(np.where(valid, dev, 0.0).sum(axis=(0, 2)), valid.sum(axis=(0, 2)))
    seated = valid.any(axis=2)
    per_row = np.where(seated, offset[None, :], np.nan)
    panel, _, _ = _lower_median(per_row[:, :, None], axis=1)
    panel = panel[:, 0]
    has = ~np.isnan(panel)
    rows = np.bincount(g, minlength=n_groups).astype(np.int64)
    total = np.bincount(g[has], weights=panel[has], minlength=n_groups)
    return PanelLeniency(member_offset=offset, group_offset=_ratio(total, np.bincount(g[has], minlength=n_groups)),
                         group_rows=rows)


# ---------------------------------------------------------------------------
# Bootstrap


def bootstrap_rubric(
    item,
    model,
    score,
    weights,
    high: float,
    n_items: int,
    n_models: int,
    *,
    low: float = 0.0,
    n_resamples: int = 1000,
    seed=0,
    ci: float = 0.95,
    chunk: int | None = None,
) -> tuple[BootstrapResult, list[BootstrapResult]]:
    """Paired percentile bootstrap of each model's mean normalised score, overall and per dimension.

    A row is one (item, model) pair as in ``_bootstrap``: ``item`` and
    ``model`` (R,) index it and ``score`` (R, D) holds the council's scores
    (NaN where omitted). The overall value of a row is ``normalised_scores``;
    dimension d's is 100 (s_d - low) / (high - low), 0 where omitted. Returns
    ``(overall, by_dimension)``: ``bootstrap_scores`` results of the per-model
    means, all from the same ``seed``, hence the same count vectors, so they
    are paired across models and dimensions (the overall point is the
    weights' mean of the dimension points).
    """
    value, _ = normalised_scores(score, weights, high, low)
    s = np.asarray(score, dtype=np.float64)
    per_dim = np.where(np.isnan(s), 0.0, 100.0 * (s - float(low)) / (float(high) - float(low)))
    kw = {"n_resamples": n_resamples, "seed": seed, "ci": ci, "chunk": chunk}
    overall = bootstrap_scores(*score_matrix(item, model, value, n_items, n_models), **kw)
    by_dimension = [
        bootstrap_scores(*score_matrix(item, model, per_dim[:, d], n_items, n_models), **kw)
        for d in range(s.shape[1])
    ]
    return overall, by_dimension
