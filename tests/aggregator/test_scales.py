"""Tests for the graded-scale statistics.

Published examples (Krippendorff 2011, Shrout & Fleiss 1979, a Maple
EssayTools weighted-kappa example) and seeded random data checked to 1e-9
against the krippendorff package, pingouin, scikit-learn and scipy, plus
hand-worked cases and naive pure-Python loops for the council rules.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import warnings

import numpy as np
import pytest

from aggregator import (
    MISSING,
    ICC,
    bootstrap_rubric,
    bootstrap_scores,
    icc2,
    krippendorff_alpha_interval,
    krippendorff_alpha_ordinal,
    normalised_scores,
    quadratic_kappa_pairs,
    score_agreement_lift,
    score_consensus,
    score_deliberation_impact,
    score_matrix,
)
from aggregator._bootstrap import resample_weights
from aggregator._fdist import f_isf, f_sf

_ = MISSING
nan = math.nan
TOL = 1e-9


def random_ratings(rng, units, coders, high, missing, *, floats=False):
    """Correlated scores on 0..high: a latent unit score plus per-coder bias and noise, some missing."""
    truth = rng.uniform(0, high, size=units)
    bias = rng.normal(0, 0.4, size=coders)
    x = truth[:, None] + bias[None, :] + rng.normal(0, rng.uniform(0.3, 1.5), size=(units, coders))
    x = np.clip(x, 0, high)
    x = x if floats else np.rint(x)
    x[rng.random((units, coders)) < missing] = nan
    return x


# ---------------------------------------------------------------------------
# Krippendorff's alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section E:
# 4 observers (rows here: columns of our units x coders matrix) x 12 units, values 1..5 with gaps.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)


def kripp_ref(x, level):
    import krippendorff

    return krippendorff.alpha(reliability_data=np.asarray(x, float).T, level_of_measurement=level)


def test_krippendorff_2011_published_example():
    units = KRIPPENDORFF_2011.T  # (12 units, 4 coders)
    ordinal = krippendorff_alpha_ordinal(units)
    interval = krippendorff_alpha_interval(units)
    # The paper's figures: ordinal 0.815, interval 0.849.
    assert round(ordinal, 3) == 0.815
    assert round(interval, 3) == 0.849
    assert abs(ordinal - kripp_ref(units, "ordinal")) < TOL
    assert abs(interval - kripp_ref(units, "interval")) < TOL
    # The MISSING code reads the same as NaN, and unit 12 (one value) is not pairable.
    coded = np.where(np.isnan(units), MISSING, units).astype(np.int64)
    assert krippendorff_alpha_ordinal(coded) == ordinal
    assert krippendorff_alpha_interval(units[:11]) == interval


@pytest.mark.parametrize("seed", range(12))
def test_krippendorff_vs_package_random(seed):
    rng = np.random.default_rng(seed)
    units = int(rng.choice([5, 40, 300, 2000]))
    coders = int(rng.integers(2, 8))
    high = int(rng.choice([1, 2, 4, 6, 10]))
    x = random_ratings(rng, units, coders, high, rng.uniform(0.0, 0.6))
    if np.count_nonzero((~np.isnan(x)).sum(axis=1) >= 2) == 0:
        pytest.skip("no pairable unit drawn")
    for level, ours in (("ordinal", krippendorff_alpha_ordinal), ("interval", krippendorff_alpha_interval)):
        ref = kripp_ref(x, level)
        assert abs(ours(x) - ref) < TOL, (level, ours(x), ref)


def test_krippendorff_interval_float_values_vs_package():
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        x = random_ratings(rng, 60, 4, 7.5, 0.3, floats=True)
        assert abs(krippendorff_alpha_interval(x) - kripp_ref(x, "interval")) < TOL
        assert abs(krippendorff_alpha_ordinal(x) - kripp_ref(x, "ordinal")) < TOL


def test_krippendorff_ordinal_depends_on_order_only():
    rng = np.random.default_rng(5)
    x = random_ratings(rng, 200, 4, 4, 0.2)
    stretched = np.where(np.isnan(x), nan, np.array([0.0, 1.0, 5.0, 6.0, 20.0])[np.nan_to_num(x).astype(int)])
    assert abs(krippendorff_alpha_ordinal(stretched) - krippendorff_alpha_ordinal(x)) < 1e-12
    assert abs(krippendorff_alpha_interval(stretched) - krippendorff_alpha_interval(x)) > 1e-3


def test_krippendorff_values_only_in_unpairable_units_are_ignored():
    # The 9 sits alone in a unit: with it or without it, the package and we agree.
    x = np.array([[0, 1, nan], [1, 1, 2], [2, 2, 2], [nan, 9, nan], [0, 0, 1]], float)
    assert abs(krippendorff_alpha_ordinal(x) - kripp_ref(x, "ordinal")) < TOL
    assert krippendorff_alpha_ordinal(x) == krippendorff_alpha_ordinal(x[[0, 1, 2, 4]])


def test_krippendorff_undefined_is_nan():
    assert math.isnan(krippendorff_alpha_ordinal(np.empty((0, 3))))
    assert math.isnan(krippendorff_alpha_interval([[1, _], [_, 2]]))  # nothing pairable
    assert math.isnan(krippendorff_alpha_ordinal([[3, 3], [3, 3], [_, 3]]))  # one value only
    # Perfect agreement on two values is 1.
    assert krippendorff_alpha_interval([[1, 1], [3, 3], [3, _]]) == 1.0


def test_ratings_validation():
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal([[1, -2], [1, 1]])  # negative but not MISSING
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal([[1, math.inf], [1, 1]])
    with pytest.raises(ValueError):
        krippendorff_alpha_ordinal([1, 2, 3])
    with pytest.raises(ValueError):
        quadratic_kappa_pairs(np.array([["a", "b"]]))


# ---------------------------------------------------------------------------
# ICC

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [
        [9, 2, 5, 8],
        [6, 1, 3, 2],
        [8, 4, 6, 8],
        [7, 1, 2, 6],
        [10, 5, 6, 9],
        [6, 2, 4, 7],
    ]
)


def pingouin_icc2(x):
    """(ICC2 row, ICC2k row) of pingouin's table, CI unrounded."""
    import pandas as pd
    import pingouin

    rows = [(i, j, x[i, j]) for i in range(x.shape[0]) for j in range(x.shape[1]) if not np.isnan(x[i, j])]
    df = pd.DataFrame(rows, columns=["target", "rater", "score"])
    saved = pingouin.options.get("round.column.CI95")
    pingouin.options["round.column.CI95"] = None
    try:
        with warnings.catch_warnings():  # pingouin's own use of deprecated pandas arguments
            warnings.simplefilter("ignore")
            table = pingouin.intraclass_corr(df, targets="target", raters="rater", ratings="score", nan_policy="omit")
    finally:
        pingouin.options["round.column.CI95"] = saved
    table = table.set_index("Type")
    # pingouin 0.5 names them ICC2 / ICC2k, later versions ICC(A,1) / ICC(A,k).
    single = table.loc["ICC2"] if "ICC2" in table.index else table.loc["ICC(A,1)"]
    average = table.loc["ICC2k"] if "ICC2k" in table.index else table.loc["ICC(A,k)"]
    return single, average


def assert_icc_matches(ours: ICC, x):
    single, average = pingouin_icc2(np.asarray(x, float))
    assert abs(ours.single - single["ICC"]) < TOL
    assert abs(ours.average - average["ICC"]) < TOL
    assert abs(ours.f - single["F"]) < TOL * max(1.0, abs(ours.f))
    assert (ours.df1, ours.df2) == (single["df1"], single["df2"])
    assert abs(ours.p_value - single["pval"]) < TOL
    np.testing.assert_allclose([ours.single_low, ours.single_high], single["CI95"], rtol=0, atol=TOL)
    np.testing.assert_allclose([ours.average_low, ours.average_high], average["CI95"], rtol=0, atol=TOL)


def test_icc_shrout_fleiss_published_example():
    r = icc2(SHROUT_FLEISS)
    # Published: ICC(2,1) = .29, ICC(2,k) = .62.
    assert round(r.single, 2) == 0.29
    assert round(r.average, 2) == 0.62
    assert (r.targets, r.raters, r.dropped, r.ci) == (6, 4, 0, 0.95)
    assert r.single_low < r.single < r.single_high
    assert r.average_low < r.average < r.average_high
    assert_icc_matches(r, SHROUT_FLEISS)


@pytest.mark.parametrize("seed", range(8))
def test_icc_vs_pingouin_random(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([3, 10, 60, 400]))
    k = int(rng.integers(2, 7))
    x = random_ratings(rng, n, k, int(rng.choice([4, 10])), 0.0, floats=bool(seed % 2))
    assert_icc_matches(icc2(x), x)


def test_icc_drops_incomplete_rows():
    rng = np.random.default_rng(3)
    x = random_ratings(rng, 80, 4, 4, 0.05)
    complete = ~np.isnan(x).any(axis=1)
    r = icc2(x)
    assert r.dropped == int((~complete).sum()) > 0
    assert r.targets == int(complete.sum())
    assert r == dataclasses.replace(icc2(x[complete]), dropped=r.dropped)
    assert_icc_matches(r, x)  # pingouin's nan_policy="omit" drops the same rows


def test_icc_other_ci_level():
    r = icc2(SHROUT_FLEISS, ci=0.90)
    wide = icc2(SHROUT_FLEISS)
    assert wide.single_low < r.single_low < r.single < r.single_high < wide.single_high


def test_icc_undefined_is_nan():
    r = icc2([[1, 2, 3]])
    assert math.isnan(r.single) and math.isnan(r.average) and r.targets == 1
    r = icc2([[1, _], [2, 3]])
    assert math.isnan(r.single) and r.dropped == 1
    with pytest.raises(ValueError):
        icc2(SHROUT_FLEISS, ci=1.0)


def test_f_distribution_vs_scipy():
    from scipy import stats

    rng = np.random.default_rng(0)
    for _ in range(100):
        d1, d2 = rng.uniform(0.5, 400, size=2)
        f = float(np.exp(rng.uniform(-3, 3)))
        assert abs(f_sf(f, d1, d2) - stats.f.sf(f, d1, d2)) < 1e-12
        for q in (0.005, 0.025, 0.05, 0.5, 0.975):
            ref = stats.f.isf(q, d1, d2)
            assert abs(f_isf(q, d1, d2) - ref) < 1e-11 * ref
    assert math.isnan(f_isf(0.025, nan, 3)) and math.isnan(f_sf(1.0, 0, 3))


# ---------------------------------------------------------------------------
# Quadratic-weighted kappa


def test_quadratic_kappa_published_example():
    from sklearn.metrics import cohen_kappa_score

    # Maple EssayTools, QuadraticWeightedKappa examples (scale min..max of the data).
    a = [9, 7, 8, 7, 6, 8, 3, 5, 10]
    k1 = quadratic_kappa_pairs(np.array([a, [8, 8, 6, 6, 7, 6, 1, 4, 8]]).T)
    k2 = quadratic_kappa_pairs(np.array([a, [3, 5, 6, 6, 7, 6, 1, 4, 8]]).T)
    assert abs(k1[0, 1] - 0.758620689655172) < 1e-12
    assert abs(k2[0, 1] - 0.438095238095238) < 1e-12
    # scikit-learn agrees given the full scale; its default (the values seen, 2 is unused) differs.
    b = [8, 8, 6, 6, 7, 6, 1, 4, 8]
    assert abs(k1[0, 1] - cohen_kappa_score(a, b, weights="quadratic", labels=range(1, 11))) < 1e-12
    assert abs(k1[0, 1] - cohen_kappa_score(a, b, weights="quadratic")) > 1e-3


@pytest.mark.parametrize("seed", range(6))
def test_quadratic_kappa_vs_sklearn(seed):
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    high = int(rng.choice([2, 4, 9]))
    m = int(rng.integers(2, 6))
    x = random_ratings(rng, int(rng.choice([30, 500])), m, high, rng.uniform(0.0, 0.5))
    kappa = quadratic_kappa_pairs(x)
    np.testing.assert_array_equal(kappa, kappa.T)
    for i, j in itertools.combinations(range(m), 2):
        both = ~np.isnan(x[:, i]) & ~np.isnan(x[:, j])
        ref = cohen_kappa_score(
            x[both, i].astype(int), x[both, j].astype(int), weights="quadratic", labels=np.arange(high + 1)
        )
        assert abs(kappa[i, j] - ref) < TOL
    for i in range(m):
        assert kappa[i, i] == 1.0 or (math.isnan(kappa[i, i]) and np.nanstd(x[:, i]) == 0)


def test_quadratic_kappa_edges():
    x = np.array([[2, 2, _], [2, 3, 1], [2, 4, _], [_, _, 0]])
    k = quadratic_kappa_pairs(x)
    assert math.isnan(k[0, 0])  # member 0 always 2: no variance against itself
    assert k[1, 1] == 1.0
    # 0|1: a = (2, 2, 2), b = (2, 3, 4): mean((a-b)^2) = 5/3, var a 0, var b 2/3, mean gap 1 -> 1 - (5/3)/(5/3) = 0.
    assert abs(k[0, 1]) < 1e-15
    # 0|2 share one row (2 vs 1): constant but different -> 1 - 1/1 = 0; 1|2 as well.
    assert abs(k[0, 2]) < 1e-15 and abs(k[1, 2]) < 1e-15
    assert math.isnan(quadratic_kappa_pairs([[1, _], [_, 2]])[0, 1])  # no shared row
    assert math.isnan(quadratic_kappa_pairs([[1, 1], [1, 1]])[0, 1])  # both always 1


# ---------------------------------------------------------------------------
# The median rule and normalisation


def test_median_rule_hand_worked():
    # 5 rows, 4 members, 1 dimension; round two is what counts, round one all 0.
    r2 = np.array(
        [
            [3, 1, 4, _],  # odd count 3: median 3
            [1, 4, 2, 3],  # even, middles 2 and 3 differ: lower 2, tie
            [2, 2, 4, 0],  # even, middles 2 and 2: 2, no tie
            [_, _, _, _],  # no score: NaN, no quorum
            [_, 4, _, _],  # one score: 4
        ]
    )
    scores = np.stack([np.zeros_like(r2), r2], axis=-1)[:, :, None, :]
    c = score_consensus(scores)
    np.testing.assert_array_equal(c.council[:, 0], [3, 2, 2, nan, 4])
    np.testing.assert_array_equal(c.tie[:, 0, 1], [False, True, False, False, False])
    np.testing.assert_array_equal(c.no_quorum[:, 0, 1], [False, False, False, True, False])
    np.testing.assert_array_equal(c.n[:, 0, 1], [3, 4, 4, 0, 1])
    np.testing.assert_array_equal(c.score[:, 0, 0], [0, 0, 0, 0, 0])
    # Quorum 2: the lone score of row 4 no longer counts.
    c2 = score_consensus(scores, quorum=2)
    np.testing.assert_array_equal(c2.council[:, 0], [3, 2, 2, nan, nan])
    assert c2.no_quorum[4, 0, 1] and not c2.tie[4, 0, 1]
    with pytest.raises(ValueError):
        score_consensus(scores, quorum=0)


def test_median_rule_vs_statistics_median_low():
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 5, size=(300, 5, 3, 2)).astype(float)
    scores[rng.random(scores.shape) < 0.35] = nan
    c = score_consensus(scores)
    for r, d, k in itertools.product(range(300), range(3), range(2)):
        valid = [v for v in scores[r, :, d, k].tolist() if not math.isnan(v)]
        if not valid:
            assert math.isnan(c.score[r, d, k]) and c.no_quorum[r, d, k]
            continue
        assert c.score[r, d, k] == statistics.median_low(valid)
        even_split = len(valid) % 2 == 0 and statistics.median_low(valid) != statistics.median_high(valid)
        assert c.tie[r, d, k] == even_split
    # The -1 code reads the same as NaN.
    coded = np.where(np.isnan(scores), MISSING, scores).astype(np.int8)
    np.testing.assert_array_equal(score_consensus(coded).score, c.score)


def test_normalisation_hand_worked():
    # Scale 0..4, weights 2, 1, 1 (sum 4).
    score = np.array(
        [
            [4, 4, 4],  # 100
            [2, 0, 4],  # 100 * (2*0.5 + 0 + 1) / 4 = 50
            [3, nan, 1],  # omitted middle counts 0: 100 * (2*0.75 + 0 + 0.25) / 4 = 43.75, flagged
            [nan, nan, nan],  # 0, flagged
        ]
    )
    value, flagged = normalised_scores(score, [2, 1, 1], high=4)
    np.testing.assert_allclose(value, [100.0, 50.0, 43.75, 0.0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(flagged, [False, False, True, True])
    # The omitted dimension stays in the denominator: not 100 * (1.5 + 0.25) / 3.
    assert value[2] != pytest.approx(100 * 1.75 / 3)
    # Scale 1..5: 1 maps to 0 and 5 to 100.
    v15, _f = normalised_scores([[1, 5], [3, nan]], [1, 1], high=5, low=1)
    np.testing.assert_allclose(v15, [50.0, 25.0], rtol=0, atol=1e-12)


def test_normalisation_rejects_bad_input():
    with pytest.raises(ValueError):
        normalised_scores([[5, 1]], [1, 1], high=4)  # above the scale
    with pytest.raises(ValueError):
        normalised_scores([[1, 1]], [1, -1], high=4)
    with pytest.raises(ValueError):
        normalised_scores([[1, 1]], [0, 0], high=4)
    with pytest.raises(ValueError):
        normalised_scores([[1, 1]], [1], high=4)
    with pytest.raises(ValueError):
        normalised_scores([[1, 1]], [1, 1], high=0)


# ---------------------------------------------------------------------------
# Deliberation


def test_deliberation_hand_worked():
    # 3 rows, 3 members, 2 dimensions. Entries (round one, round two).
    r1 = np.array(
        [
            [[1, 0], [2, 3], [4, _]],
            [[0, 1], [0, 1], [3, 2]],
            [[_, 2], [2, 2], [2, 2]],
        ]
    )
    r2 = np.array(
        [
            [[2, 0], [2, 3], [2, 4]],  # d0 moves: 1->2, 4->2; d1: member 2 missing in round one
            [[0, 1], [0, 1], [1, 1]],  # d0 moves: 3->1; d1: 2->1
            [[2, 2], [2, _], [2, 2]],  # d0: member 0 missing in round one; d1: member 1 missing in round two
        ]
    )
    scores = np.stack([r1, r2], axis=-1)
    imp = score_deliberation_impact(scores)
    # d0 cells valid in both: rows 0 (3), 1 (3), 2 (2) = 8; moved 3; |moves| 1 + 2 + 2 = 5.
    # d1 cells: row 0 (2), row 1 (3), row 2 (2) = 7; moved 1; |moves| 1.
    assert imp.cells == 15
    assert imp.moved == pytest.approx(4 / 15)
    assert imp.mean_abs_move == pytest.approx(6 / 15)
    np.testing.assert_allclose(imp.moved_by_dimension, [3 / 8, 1 / 7])
    np.testing.assert_allclose(imp.mean_abs_move_by_dimension, [5 / 8, 1 / 7])

    lift = score_agreement_lift(scores)
    # Mean absolute deviation from the lower median, cells with >= 2 scores in both rounds:
    # d0 row 0: r1 (1, 2, 4) median 2 -> 1;   r2 (2, 2, 2) -> 0.
    # d0 row 1: r1 (0, 0, 3) median 0 -> 1;   r2 (0, 0, 1) -> 1/3.
    # d0 row 2: r1 (2, 2) -> 0;               r2 (2, 2, 2) -> 0.
    # d1 row 0: r1 (0, 3) median 0 -> 3/2;    r2 (0, 3, 4) median 3 -> 4/3.
    # d1 row 1: r1 (1, 1, 2) -> 1/3;          r2 (1, 1, 1) -> 0.
    # d1 row 2: r1 (2, 2, 2) -> 0;            r2 (2, 2) -> 0.
    d1 = [1, 1, 0, 3 / 2, 1 / 3, 0]
    d2 = [0, 1 / 3, 0, 4 / 3, 0, 0]
    assert lift.cells == 6
    assert lift.dispersion_round1 == pytest.approx(sum(d1) / 6)
    assert lift.dispersion_round2 == pytest.approx(sum(d2) / 6)
    assert lift.lift == pytest.approx((sum(d1) - sum(d2)) / 6)
    np.testing.assert_allclose(lift.lift_by_dimension, [(2 - 1 / 3) / 3, (11 / 6 - 4 / 3) / 3])


def test_deliberation_needs_two_scores_per_round_and_nan_when_empty():
    scores = np.full((2, 3, 1, 2), nan)
    scores[0, :, 0, 0] = [0, 4, 4]
    scores[0, 0, 0, 1] = 4  # round two has one score: not a dispersion cell
    lift = score_agreement_lift(scores)
    assert lift.cells == 0 and math.isnan(lift.lift) and math.isnan(lift.lift_by_dimension[0])
    imp = score_deliberation_impact(scores)
    assert imp.cells == 1 and imp.moved == 1.0 and imp.mean_abs_move == 4.0
    empty = score_deliberation_impact(np.full((0, 3, 2, 2), _))
    assert empty.cells == 0 and math.isnan(empty.moved) and math.isnan(empty.mean_abs_move)


def test_deliberation_vs_naive_loops():
    rng = np.random.default_rng(21)
    scores = rng.integers(0, 5, size=(120, 4, 2, 2)).astype(float)
    scores[rng.random(scores.shape) < 0.3] = nan
    cells = moved = size = 0
    disp = [[], []]
    for r, d in itertools.product(range(120), range(2)):
        for m in range(4):
            a, b = scores[r, m, d]
            if not (math.isnan(a) or math.isnan(b)):
                cells += 1
                moved += a != b
                size += abs(a - b)
        rounds = [[v for v in scores[r, :, d, k].tolist() if not math.isnan(v)] for k in range(2)]
        if all(len(v) >= 2 for v in rounds):
            for k in range(2):
                med = statistics.median(rounds[k])  # any median gives the same mean absolute deviation
                disp[k].append(sum(abs(v - med) for v in rounds[k]) / len(rounds[k]))
    imp = score_deliberation_impact(scores)
    lift = score_agreement_lift(scores)
    assert imp.cells == cells and abs(imp.moved - moved / cells) < 1e-12
    assert abs(imp.mean_abs_move - size / cells) < 1e-12
    assert lift.cells == len(disp[0])
    assert abs(lift.lift - (sum(disp[0]) - sum(disp[1])) / len(disp[0])) < 1e-12


def test_scores_validation():
    with pytest.raises(ValueError):
        score_consensus(np.zeros((2, 3, 2)))  # no dimension axis
    with pytest.raises(ValueError):
        score_consensus(np.zeros((2, 3, 1, 3)))
    with pytest.raises(ValueError):
        score_deliberation_impact(np.full((1, 1, 1, 2), -3))


# ---------------------------------------------------------------------------
# Bootstrap


def rubric_rows(rng, n_items=40, n_models=3, dims=3):
    item = np.repeat(np.arange(n_items), n_models)
    model = np.tile(np.arange(n_models), n_items)
    score = rng.integers(0, 5, size=(item.size, dims)).astype(float)
    score += (model >= 1)[:, None]  # model 0 a point lower
    score = np.clip(score, 0, 4)
    score[rng.random(score.shape) < 0.1] = nan
    return item, model, score


def test_bootstrap_rubric_deterministic_and_covering():
    rng = np.random.default_rng(4)
    item, model, score = rubric_rows(rng)
    weights = [3, 1, 1]
    overall, by_dim = bootstrap_rubric(item, model, score, weights, 4, 40, 3, n_resamples=400, seed=9)
    again, by_dim_again = bootstrap_rubric(item, model, score, weights, 4, 40, 3, n_resamples=400, seed=9)
    np.testing.assert_array_equal(overall.samples, again.samples)
    for a, b in zip(by_dim, by_dim_again):
        np.testing.assert_array_equal(a.samples, b.samples)
    other, _dims = bootstrap_rubric(item, model, score, weights, 4, 40, 3, n_resamples=400, seed=10)
    assert not np.array_equal(other.samples, overall.samples)
    # Point = per-model mean normalised score; the interval covers it.
    value, _flagged = normalised_scores(score, weights, 4)
    for m in range(3):
        assert abs(overall.point[m] - value[model == m].mean()) < 1e-12
    assert (overall.low <= overall.point).all() and (overall.point <= overall.high).all()
    assert (overall.low < overall.high).all()
    # Dimensions: the weights' mean of their points is the overall point, and they are paired resamples.
    points = np.array([r.point for r in by_dim])
    np.testing.assert_allclose(np.average(points, axis=0, weights=weights), overall.point, rtol=0, atol=1e-9)
    samples = np.stack([r.samples for r in by_dim])
    np.testing.assert_allclose(np.average(samples, axis=0, weights=weights), overall.samples, rtol=0, atol=1e-9)
    for r in by_dim:
        assert (r.low <= r.point).all() and (r.point <= r.high).all()


def test_bootstrap_rubric_equals_naive_resampling():
    rng = np.random.default_rng(8)
    item, model, score = rubric_rows(rng, n_items=15, n_models=2, dims=2)
    overall, _dims = bootstrap_rubric(item, model, score, [1, 1], 4, 15, 2, n_resamples=50, seed=3)
    value, _f = normalised_scores(score, [1, 1], 4)
    W = resample_weights(15, 50, seed=3)
    for b in range(50):
        drawn = [i for i in range(15) for _ in range(int(W[b, i]))]
        for m in range(2):
            vals = [value[(item == i) & (model == m)][0] for i in drawn]
            assert abs(overall.samples[b, m] - sum(vals) / len(vals)) < 1e-9
    ref = bootstrap_scores(*score_matrix(item, model, value, 15, 2), n_resamples=50, seed=3)
    np.testing.assert_array_equal(ref.low, overall.low)
