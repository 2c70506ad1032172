"""Tests for the paired percentile bootstrap.

scipy is only an oracle here: its random stream differs from ours, so we
compare distributions (interval endpoints, standard errors), not draws. Exact
comparisons use deliberately naive Python loops fed the same count vectors
(``resample_weights``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator._bootstrap import (
    BootstrapResult,
    adjacent_outranks,
    bootstrap_by_group,
    bootstrap_ratio,
    bootstrap_scores,
    bootstrap_summary,
    outrank_probability,
    resample_weights,
    score_matrix,
)

# ---------------------------------------------------------------------------
# Naive references


def naive_scores(S, C, W):
    """Per resample, expand the count vector into the drawn item list and sum cell by cell."""
    S, C, W = np.asarray(S, float), np.asarray(C, float), np.asarray(W)
    out = np.full((W.shape[0], S.shape[0]), np.nan)
    for b in range(W.shape[0]):
        drawn = [i for i in range(W.shape[1]) for _ in range(int(W[b, i]))]
        for m in range(S.shape[0]):
            num = sum(S[m, i] for i in drawn)
            den = sum(C[m, i] for i in drawn)
            if den:
                out[b, m] = num / den
    return out


def binary_matrix(rng, n_models, n_items, p=0.6):
    S = (rng.random((n_models, n_items)) < p).astype(float)
    return S, np.ones_like(S, dtype=np.int64)


# ---------------------------------------------------------------------------
# score_matrix


def test_score_matrix_hand_example():
    # rows: (item, model, value)
    item = [0, 1, 2, 0, 2, 2]
    model = [0, 0, 0, 1, 1, 1]
    value = [1.0, 0.0, 1.0, 0.5, 1.0, 1.0]
    S, C = score_matrix(item, model, value, n_items=3, n_models=2)
    # model 1 has no row on item 1 and two rows on item 2
    np.testing.assert_array_equal(S, [[1.0, 0.0, 1.0], [0.5, 0.0, 2.0]])
    np.testing.assert_array_equal(C, [[1, 1, 1], [1, 0, 2]])
    assert C.dtype == np.int64


def test_score_matrix_rejects_bad_input():
    with pytest.raises(ValueError):
        score_matrix([0, 3], [0, 0], [1.0, 1.0], n_items=3, n_models=1)
    with pytest.raises(ValueError):
        score_matrix([0, 1], [0, 1], [1.0, 1.0], n_items=3, n_models=1)
    with pytest.raises(ValueError):
        score_matrix([0, 1], [0, 0], [1.0], n_items=3, n_models=1)
    with pytest.raises(ValueError):
        score_matrix([0, 1], [0, 0], [1.0, math.nan], n_items=3, n_models=1)
    with pytest.raises(ValueError):
        score_matrix([0.0, 1.0], [0, 0], [1.0, 1.0], n_items=3, n_models=1)


# ---------------------------------------------------------------------------
# Against scipy and the analytic binomial standard error


def test_single_model_interval_matches_scipy_percentile():
    from scipy import stats

    rng = np.random.default_rng(11)
    x = (rng.random(400) < 0.7).astype(float)
    ours = bootstrap_scores(x[None, :], np.ones((1, 400)), n_resamples=5000, seed=3)
    ref = stats.bootstrap(
        (x,),
        np.mean,
        n_resamples=5000,
        method="percentile",
        vectorized=True,
        confidence_level=0.95,
        rng=np.random.default_rng(4),
    )
    assert ours.point[0] == pytest.approx(x.mean())
    assert abs(ours.low[0] - ref.confidence_interval.low) < 0.01
    assert abs(ours.high[0] - ref.confidence_interval.high) < 0.01
    # standard error: against scipy's and against sqrt(p(1-p)/n)
    se = ours.samples[:, 0].std(ddof=1)
    p = x.mean()
    analytic = math.sqrt(p * (1 - p) / x.size)
    assert se == pytest.approx(analytic, rel=0.10)
    assert se == pytest.approx(ref.standard_error, rel=0.10)


def test_paired_difference_interval_matches_scipy_paired():
    from scipy import stats

    rng = np.random.default_rng(12)
    a = (rng.random(400) < 0.7).astype(float)
    b = a.copy()
    flip = rng.random(400) < 0.15  # b differs from a on about 15% of items
    b[flip] = 1.0 - b[flip]
    ours = bootstrap_scores(np.stack([a, b]), np.ones((2, 400)), n_resamples=5000, seed=5)
    diff = ours.samples[:, 0] - ours.samples[:, 1]
    low, high = np.percentile(diff, [2.5, 97.5])

    def mean_diff(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    ref = stats.bootstrap(
        (a, b),
        mean_diff,
        n_resamples=5000,
        method="percentile",
        vectorized=True,
        paired=True,
        rng=np.random.default_rng(6),
    )
    assert abs(low - ref.confidence_interval.low) < 0.01
    assert abs(high - ref.confidence_interval.high) < 0.01
    assert diff.std(ddof=1) == pytest.approx(ref.standard_error, rel=0.10)
    # adjacent_outranks reports the same paired interval
    (pair,) = adjacent_outranks(ours, ["a", "b"])
    hi_first = pair["higher"] == "a"
    sign = 1 if hi_first else -1
    lo_expected, hi_expected = (low, high) if hi_first else (-high, -low)
    assert pair["diff"] == pytest.approx(sign * (a.mean() - b.mean()), abs=1e-6)
    assert pair["diff_low"] == pytest.approx(lo_expected, abs=1e-6)
    assert pair["diff_high"] == pytest.approx(hi_expected, abs=1e-6)


# ---------------------------------------------------------------------------
# Pairing


def test_identical_models_have_zero_resampled_difference():
    rng = np.random.default_rng(1)
    x = (rng.random(300) < 0.5).astype(float)
    res = bootstrap_scores(np.stack([x, x]), np.ones((2, 300)), n_resamples=2000, seed=0)
    assert np.all(res.samples[:, 0] - res.samples[:, 1] == 0.0)
    assert outrank_probability(res.samples, 0, 1) == 0.5
    (pair,) = adjacent_outranks(res, ["a", "b"])
    assert pair == {
        "higher": "a",
        "lower": "b",
        "p_higher_outranks": 0.5,
        "diff": 0.0,
        "diff_low": 0.0,
        "diff_high": 0.0,
    }


def test_dominating_model_outranks_with_probability_near_one():
    rng = np.random.default_rng(2)
    b = (rng.random(200) < 0.5).astype(float)
    a = b.copy()
    better = np.flatnonzero(b == 0)[:20]  # a is right where b is wrong on 20 items, equal elsewhere
    a[better] = 1.0
    res = bootstrap_scores(np.stack([b, a]), np.ones((2, 200)), n_resamples=2000, seed=0)
    diff = res.samples[:, 1] - res.samples[:, 0]
    assert np.all(diff >= 0)
    p = outrank_probability(res.samples, 1, 0)
    assert p > 0.999
    assert outrank_probability(res.samples, 0, 1) == pytest.approx(1 - p)
    (pair,) = adjacent_outranks(res, ["b", "a"])
    assert pair["higher"] == "a" and pair["lower"] == "b"
    assert pair["p_higher_outranks"] == pytest.approx(p, abs=1e-6)
    assert pair["diff"] == pytest.approx(0.1)
    assert pair["diff_low"] > 0


def test_pairing_narrows_the_difference_interval():
    rng = np.random.default_rng(3)
    n = 500
    a = (rng.random(n) < 0.6).astype(float)
    b = a.copy()
    flip = rng.random(n) < 0.1
    b[flip] = 1.0 - b[flip]
    C = np.ones((1, n))
    paired = bootstrap_scores(np.stack([a, b]), np.ones((2, n)), n_resamples=3000, seed=0)
    d_paired = paired.samples[:, 0] - paired.samples[:, 1]
    # independent: each model resampled with its own draws
    ia = bootstrap_scores(a[None, :], C, n_resamples=3000, seed=1)
    ib = bootstrap_scores(b[None, :], C, n_resamples=3000, seed=2)
    d_indep = ia.samples[:, 0] - ib.samples[:, 0]
    width_paired = np.subtract(*np.percentile(d_paired, [97.5, 2.5]))
    width_indep = np.subtract(*np.percentile(d_indep, [97.5, 2.5]))
    assert width_paired < 0.5 * width_indep


# ---------------------------------------------------------------------------
# Determinism, count vectors and missing cells


def test_seeded_determinism_and_chunk_independence():
    rng = np.random.default_rng(4)
    S, C = binary_matrix(rng, 3, 97)
    r1 = bootstrap_scores(S, C, n_resamples=250, seed=42)
    r2 = bootstrap_scores(S, C, n_resamples=250, seed=42)
    r3 = bootstrap_scores(S, C, n_resamples=250, seed=42, chunk=7)
    r4 = bootstrap_scores(S, C, n_resamples=250, seed=43)
    np.testing.assert_array_equal(r1.samples, r2.samples)
    np.testing.assert_array_equal(r1.samples, r3.samples)
    np.testing.assert_array_equal(r1.low, r3.low)
    np.testing.assert_array_equal(r1.high, r3.high)
    assert not np.array_equal(r1.samples, r4.samples)
    assert (r1.seed, r1.n_resamples, r1.ci) == (42, 250, 0.95)
    assert r1.samples.shape == (250, 3)
    np.testing.assert_array_equal(r1.point, S.sum(1) / C.sum(1))
    np.testing.assert_allclose(r1.low, np.percentile(r1.samples, 2.5, axis=0), rtol=1e-12)
    np.testing.assert_allclose(r1.high, np.percentile(r1.samples, 97.5, axis=0), rtol=1e-12)


def test_resample_weights_are_uniform_integer_draws():
    W = resample_weights(13, 40, seed=9)
    assert W.shape == (40, 13) and W.dtype == np.int64
    assert np.all(W.sum(axis=1) == 13)
    rng = np.random.default_rng(9)
    for b in range(40):
        draws = rng.integers(0, 13, size=13, dtype=np.int64)
        np.testing.assert_array_equal(W[b], np.bincount(draws, minlength=13))


def test_scores_match_naive_loop_with_missing_cells():
    rng = np.random.default_rng(5)
    n_models, n_items = 3, 15
    S = rng.random((n_models, n_items)).round(2)
    C = np.ones((n_models, n_items), dtype=np.int64)
    C[1, :5] = 0  # model 1 has no rows for items 0..4
    S[1, :5] = 0.0
    C[2, 7] = 2  # model 2 has two rows on item 7
    S[2, 7] = 1.5
    res = bootstrap_scores(S, C, n_resamples=60, seed=8)
    W = resample_weights(n_items, 60, seed=8)
    np.testing.assert_allclose(res.samples, naive_scores(S, C, W), rtol=1e-12)
    assert res.point[1] == pytest.approx(S[1, 5:].mean())
    assert res.point[2] == pytest.approx(S[2].sum() / 16)


def test_missing_cells_do_not_count_even_with_nonzero_sum_elsewhere():
    # a model whose rows exist only on item 0: resamples that miss item 0 are NaN and left out
    S = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0]])
    C = np.array([[1, 0, 0, 0], [1, 1, 1, 1]])
    res = bootstrap_scores(S, C, n_resamples=500, seed=0)
    W = resample_weights(4, 500, seed=0)
    col = res.samples[:, 0]
    np.testing.assert_array_equal(np.isnan(col), W[:, 0] == 0)
    assert np.all(col[~np.isnan(col)] == 1.0)
    assert res.low[0] == 1.0 and res.high[0] == 1.0
    # outrank probability leaves those resamples out
    ok = W[:, 0] > 0
    s1 = res.samples[ok, 1]
    expected = (np.count_nonzero(1.0 > s1) + 0.5 * np.count_nonzero(s1 == 1.0)) / ok.sum()
    assert outrank_probability(res.samples, 0, 1) == pytest.approx(expected)


def test_model_without_rows_is_nan_throughout():
    S = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    C = np.array([[1, 1, 1], [0, 0, 0]])
    res = bootstrap_scores(S, C, n_resamples=50, seed=0)
    assert math.isnan(res.point[1]) and math.isnan(res.low[1]) and math.isnan(res.high[1])
    assert np.isnan(res.samples[:, 1]).all()
    assert math.isnan(outrank_probability(res.samples, 0, 1))
    summary = bootstrap_summary(res, ["m0", "m1"])
    assert summary["m1"] == {"score": None, "ci_low": None, "ci_high": None}
    (pair,) = summary["adjacent"]
    assert pair["higher"] == "m0" and pair["lower"] == "m1"
    assert pair["p_higher_outranks"] is None and pair["diff"] is None


# ---------------------------------------------------------------------------
# Per-group bootstrap


def test_by_group_resamples_only_the_groups_items():
    # group 0 items are all 0 for both models, group 1 items all 1: any leak shows up
    n_items = 30
    group = np.array([0, 1, 2] * 10)
    S = np.zeros((2, n_items))
    S[:, group == 1] = 1.0
    S[1, group == 2] = np.arange(10) % 2  # group 2: model 1 scores 0.5
    C = np.ones((2, n_items), dtype=np.int64)
    out = bootstrap_by_group(S, C, group, 4, n_resamples=300, seed=7)
    assert len(out) == 4 and all(isinstance(r, BootstrapResult) for r in out)
    assert np.all(out[0].samples == 0.0)
    assert np.all(out[1].samples == 1.0)
    np.testing.assert_array_equal(out[2].point, [0.0, 0.5])
    assert np.all(out[2].samples[:, 0] == 0.0)
    assert 0.0 < out[2].samples[:, 1].std()
    # group 3 is empty
    assert np.isnan(out[3].point).all() and np.isnan(out[3].samples).all()
    # each group equals a bootstrap of its own items with seed (seed, g)
    for g in range(3):
        items = np.flatnonzero(group == g)
        ref = bootstrap_scores(S[:, items], C[:, items], n_resamples=300, seed=(7, g))
        np.testing.assert_array_equal(out[g].samples, ref.samples)
        assert out[g].seed == (7, g)


def test_by_group_draws_match_naive_loop():
    rng = np.random.default_rng(6)
    n_items = 24
    group = rng.integers(0, 3, n_items)
    S = rng.random((2, n_items)).round(2)
    C = np.ones((2, n_items), dtype=np.int64)
    out = bootstrap_by_group(S, C, group, 3, n_resamples=40, seed=1)
    for g in range(3):
        items = np.flatnonzero(group == g)
        W = resample_weights(items.size, 40, seed=(1, g))
        np.testing.assert_allclose(out[g].samples, naive_scores(S[:, items], C[:, items], W), rtol=1e-12)


def test_by_group_rejects_bad_groups():
    S = np.ones((1, 3))
    with pytest.raises(ValueError):
        bootstrap_by_group(S, S, [0, 1, 2], 2)
    with pytest.raises(ValueError):
        bootstrap_by_group(S, S, [0, 1], 2)
    with pytest.raises(ValueError):
        bootstrap_by_group(S, S, [0, 1, 1], 2, seed=(1, 2))


# ---------------------------------------------------------------------------
# Ratio bootstrap


def test_ratio_matches_naive_loop_with_same_count_vectors():
    # deliberation_impact style: per item, rows changed / rows eligible
    num = np.array([1, 0, 2, 0, 1, 0, 0, 3], dtype=float)
    den = np.array([2, 1, 3, 0, 1, 2, 1, 3], dtype=float)
    point, low, high = bootstrap_ratio(num, den, n_resamples=400, seed=13)
    assert point == pytest.approx(7 / 13)
    W = resample_weights(num.size, 400, seed=13)
    ratios = []
    for b in range(400):
        n_sum = d_sum = 0.0
        for i in range(num.size):
            for _ in range(int(W[b, i])):
                n_sum += num[i]
                d_sum += den[i]
        ratios.append(n_sum / d_sum if d_sum else math.nan)
    ratios = np.array(ratios)
    ratios = ratios[~np.isnan(ratios)]
    assert low == pytest.approx(np.percentile(ratios, 2.5), rel=1e-12)
    assert high == pytest.approx(np.percentile(ratios, 97.5), rel=1e-12)
    assert low <= point <= high


def test_ratio_for_agreement_lift_is_mean_per_row_difference():
    # rows (item, agr1, agr2) with votes in both rounds; lift = mean(agr2 - agr1)
    rows = [(0, 0.6, 1.0), (0, 0.8, 0.8), (1, 1.0, 0.6), (2, 0.6, 0.8), (2, 0.6, 1.0), (2, 1.0, 1.0)]
    item = np.array([r[0] for r in rows])
    d = np.array([r[2] - r[1] for r in rows])
    num = np.bincount(item, weights=d, minlength=3)
    den = np.bincount(item, minlength=3).astype(float)
    point, low, high = bootstrap_ratio(num, den, n_resamples=500, seed=0)
    agr1 = np.array([r[1] for r in rows])
    agr2 = np.array([r[2] for r in rows])
    assert point == pytest.approx(agr2.mean() - agr1.mean())
    assert low <= point <= high


def test_ratio_rejects_bad_shapes_and_empty_denominator_is_nan():
    with pytest.raises(ValueError):
        bootstrap_ratio([1.0, 2.0], [1.0])
    point, low, high = bootstrap_ratio([0.0, 0.0], [0.0, 0.0], n_resamples=10)
    assert math.isnan(point) and math.isnan(low) and math.isnan(high)


# ---------------------------------------------------------------------------
# Outranking, adjacency and the summary


def test_outrank_probability_counts_ties_half():
    samples = np.array([[0.5, 0.4], [0.5, 0.5], [0.3, 0.6], [0.7, 0.1], [math.nan, 0.2]])
    # defined resamples: 4; a > b twice, one tie
    assert outrank_probability(samples, 0, 1) == pytest.approx(2.5 / 4)
    assert outrank_probability(samples, 1, 0) == pytest.approx(1.5 / 4)
    with pytest.raises(ValueError):
        outrank_probability(samples, 0, 2)


def test_adjacent_outranks_orders_by_point_score():
    rng = np.random.default_rng(7)
    p = np.array([0.5, 0.8, 0.65])
    S = (rng.random((3, 400)) < p[:, None]).astype(float)
    res = bootstrap_scores(S, np.ones((3, 400)), n_resamples=500, seed=0)
    pairs = adjacent_outranks(res, ["mid", "top", "third"])
    order = np.argsort(-res.point)
    names = np.array(["mid", "top", "third"])
    assert [(x["higher"], x["lower"]) for x in pairs] == [
        (names[order[0]], names[order[1]]),
        (names[order[1]], names[order[2]]),
    ]
    for x, (h, lo) in zip(pairs, [(order[0], order[1]), (order[1], order[2])]):
        assert x["diff"] == round(res.point[h] - res.point[lo], 6)
        assert x["p_higher_outranks"] == round(outrank_probability(res.samples, h, lo), 6)
        assert x["diff_low"] <= x["diff"] <= x["diff_high"]


def test_bootstrap_summary_is_plain_python():
    rng = np.random.default_rng(8)
    S, C = binary_matrix(rng, 2, 123)
    res = bootstrap_scores(S, C, n_resamples=200, seed=5, ci=0.9)
    out = bootstrap_summary(res, ["x", "y"])
    assert set(out) == {"x", "y", "adjacent", "n_resamples", "seed", "ci"}
    assert out["n_resamples"] == 200 and out["seed"] == 5 and out["ci"] == 0.9
    assert out["x"]["score"] == round(float(res.point[0]), 6)
    assert out["y"]["ci_low"] == round(float(res.low[1]), 6)
    assert out["x"]["ci_high"] == round(float(res.high[0]), 6)
    assert res.low[0] == pytest.approx(np.percentile(res.samples[:, 0], 5.0), rel=1e-12)
    for entry in (out["x"], out["y"], *out["adjacent"]):
        for v in entry.values():
            assert v is None or type(v) in (str, float)
    with pytest.raises(ValueError):
        bootstrap_summary(res, ["x"])
    with pytest.raises(ValueError):
        bootstrap_summary(res, ["x", "x"])
    with pytest.raises(ValueError):
        bootstrap_summary(res, ["x", "seed"])


def test_bootstrap_scores_rejects_bad_arguments():
    S = np.ones((2, 3))
    with pytest.raises(ValueError):
        bootstrap_scores(S, np.ones((2, 4)))
    with pytest.raises(ValueError):
        bootstrap_scores(S, -np.ones((2, 3)))
    with pytest.raises(ValueError):
        bootstrap_scores(S, S, n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_scores(S, S, ci=1.0)
    with pytest.raises(ValueError):
        bootstrap_scores(S, S, chunk=0)
    with pytest.raises(ValueError):
        bootstrap_scores(S, S, seed=-1)
    with pytest.raises(ValueError):
        bootstrap_scores(np.ones(3), np.ones(3))
