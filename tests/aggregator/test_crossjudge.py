"""Tests for the cross-judge report.

Point values are checked against independent pandas / scipy computations;
the vectorised bootstraps against naive Python loops fed the same count
vectors (``resample_weights``); the readings on synthetic worlds with and
without a planted vendor or target preference.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from aggregator import (
    CrossJudge,
    CrossJudgeThresholds,
    bootstrap_scores,
    crossjudge,
    kendall_tau_b,
    score_matrix,
    spearman,
)
from aggregator._bootstrap import _weight_chunks, resample_weights
from aggregator._resampled import _kendall_rows, _spearman_rows
from aggregator._target_spread import group_permutations

TOL = 1e-12
nan = math.nan


# ---------------------------------------------------------------------------
# Data


def run(base, cross, item, model, vendor, group=None, **kw):
    """``crossjudge`` with the sizes read off the data."""
    vendor = np.asarray(vendor)
    n_items = len(group) if group is not None else int(np.max(item, initial=-1)) + 1
    return crossjudge(base, cross, item, model, vendor, n_items, len(vendor), int(vendor.max()) + 1, group, **kw)


def random_rows(rng, n_items=40, n_models=7, n_vendors=3, gap=0.2, n_groups=12):
    """Every model on every item, both scores NaN-gapped; groups of 1-4 items, some ungrouped."""
    item = np.repeat(np.arange(n_items), n_models)
    model = np.tile(np.arange(n_models), n_items)
    base = rng.uniform(0, 100, item.size)
    cross = np.clip(base + rng.normal(3, 20, item.size), 0, 100)
    base[rng.random(item.size) < gap] = nan
    cross[rng.random(item.size) < gap] = nan
    vendor = rng.integers(0, n_vendors, n_models)
    vendor[:n_vendors] = np.arange(n_vendors)  # every vendor has a model
    group = rng.integers(-1, n_groups, n_items)
    return base, cross, item, model, vendor, group


def world(seed, vendor_plant=0.0, target_plant=0.0, n_items=300, n_models=8, n_vendors=4, group_size=3):
    """A benchmark: 8 models over 4 vendors, per-model skill and per-item difficulty on 0-100,
    each grader adding its own N(0, 15) noise per row; 5% of cross scores missing; items in
    matched groups of 3. ``vendor_plant`` adds to vendor 0's cross scores, ``target_plant`` to
    the cross scores of the first item of every group."""
    rng = np.random.default_rng(seed)
    vendor = np.arange(n_models) % n_vendors
    skill = rng.normal(0, 8, n_models)
    difficulty = rng.normal(0, 10, n_items)
    item = np.repeat(np.arange(n_items), n_models)
    model = np.tile(np.arange(n_models), n_items)
    true = 50 + skill[model] + difficulty[item]
    base = true + rng.normal(0, 15, item.size)
    cross = true + rng.normal(0, 15, item.size)
    cross += vendor_plant * (vendor[model] == 0)
    cross += target_plant * (np.arange(n_items) % group_size == 0)[item]
    base, cross = np.clip(base, 0, 100), np.clip(cross, 0, 100)
    cross[rng.random(item.size) < 0.05] = nan
    group = np.arange(n_items) // group_size
    return base, cross, item, model, vendor, group


def reference(base, cross, item, model, vendor, group):
    """The point values, independently, with pandas."""
    import pandas as pd

    df = pd.DataFrame({"base": base, "cross": cross, "item": item, "model": model}).dropna()
    df["delta"] = df["cross"] - df["base"]
    per_model = df.groupby("model").agg(base=("base", "mean"), cross=("cross", "mean"),
                                        delta=("delta", "mean"), rows=("delta", "size"))
    per_model["vendor"] = vendor[per_model.index.to_numpy()]
    per_vendor = per_model.groupby("vendor")["delta"].mean()
    per_item = df.groupby("item")["delta"].mean().to_frame("e")
    per_item["group"] = group[per_item.index.to_numpy()]
    grouped = per_item[per_item["group"] >= 0].groupby("group")["e"]
    spreads = (grouped.max() - grouped.min())[grouped.size() >= 2]
    return {
        "per_model": per_model,
        "per_vendor": per_vendor,
        "mean_delta": per_model["delta"].mean(),
        "provider_spread": per_vendor.max() - per_vendor.min() if len(per_vendor) >= 2 else None,
        "group_spread": spreads.mean() if len(spreads) else None,
        "groups": len(spreads),
    }


# ---------------------------------------------------------------------------
# Point values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_values_match_pandas(seed):
    data = random_rows(np.random.default_rng(seed))
    ref = reference(*data)
    res = run(*data, n_resamples=50, seed=seed)
    pm = ref["per_model"]
    idx = pm.index.to_numpy()
    np.testing.assert_allclose(res.model_base[idx], pm["base"], rtol=0, atol=TOL)
    np.testing.assert_allclose(res.model_cross[idx], pm["cross"], rtol=0, atol=TOL)
    np.testing.assert_allclose(res.model_delta[idx], pm["delta"], rtol=0, atol=TOL)
    np.testing.assert_array_equal(res.model_rows[idx], pm["rows"])
    assert res.paired_rows == int(pm["rows"].sum())
    assert res.mean_delta["value"] == pytest.approx(ref["mean_delta"], abs=TOL)
    pv = ref["per_vendor"]
    np.testing.assert_allclose(res.vendor_delta[pv.index.to_numpy()], pv, rtol=0, atol=TOL)
    assert res.provider_spread["value"] == pytest.approx(ref["provider_spread"], abs=TOL)
    assert res.provider_spread["highest_vendor"] == pv.idxmax()
    assert res.provider_spread["lowest_vendor"] == pv.idxmin()
    assert res.group_spread["value"] == pytest.approx(ref["group_spread"], abs=TOL)
    assert res.group_spread["groups"] == ref["groups"]


def test_rank_correlation_matches_scipy():
    from scipy import stats

    for seed in range(4):
        data = random_rows(np.random.default_rng(10 + seed), n_models=9)
        res = run(*data, n_resamples=50, seed=seed)
        pm = reference(*data)["per_model"]
        tau = stats.kendalltau(pm["base"], pm["cross"], variant="b").statistic
        rho = stats.spearmanr(pm["base"], pm["cross"]).statistic
        assert res.rank_correlation["kendall"] == pytest.approx(tau, abs=TOL)
        assert res.rank_correlation["spearman"] == pytest.approx(rho, abs=TOL)
        assert res.rank_correlation["models"] == 9


def test_rank_correlation_with_ties_matches_scipy():
    from scipy import stats

    # Binary verdicts on few items: the models' mean scores tie.
    rng = np.random.default_rng(5)
    item = np.repeat(np.arange(4), 10)
    model = np.tile(np.arange(10), 4)
    base = 100.0 * (rng.random(40) < 0.5)
    cross = 100.0 * (rng.random(40) < 0.5)
    res = run(base, cross, item, model, np.arange(10) % 3, n_resamples=50)
    tau = stats.kendalltau(res.model_base, res.model_cross, variant="b").statistic
    rho = stats.spearmanr(res.model_base, res.model_cross).statistic
    assert res.rank_correlation["kendall"] == pytest.approx(tau, abs=TOL)
    assert res.rank_correlation["spearman"] == pytest.approx(rho, abs=TOL)


def test_vectorised_rank_correlations_match_scalar_ones():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(300, 6)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(300, 6)).astype(float)
    x[rng.random(x.shape) < 0.15] = nan
    y[rng.random(y.shape) < 0.15] = nan
    x[0] = 1.0  # constant: undefined
    tau, rho = _kendall_rows(x, y), _spearman_rows(x, y)
    want_tau = np.array([kendall_tau_b(a, b) for a, b in zip(x, y)])
    want_rho = np.array([spearman(a, b) for a, b in zip(x, y)])
    np.testing.assert_allclose(tau, want_tau, rtol=0, atol=TOL)
    np.testing.assert_allclose(rho, want_rho, rtol=0, atol=TOL)
    assert np.isnan(tau[0]) and np.isnan(rho[0])


# ---------------------------------------------------------------------------
# Bootstraps against naive loops on the same count vectors


def paired_frame(base, cross, item, model):
    ok = ~(np.isnan(base) | np.isnan(cross))
    return [(int(i), int(m), float(b), float(c)) for i, m, b, c in zip(item[ok], model[ok], base[ok], cross[ok])]


def quantile(values, q):
    v = np.asarray([x for x in values if not math.isnan(x)])
    return float(np.percentile(v, 100 * q))


def test_item_bootstrap_matches_naive_loop():
    base, cross, item, model, vendor, group = random_rows(np.random.default_rng(7), n_items=15, n_models=5)
    n_res, seed, ci = 120, 11, 0.9
    res = run(base, cross, item, model, vendor, group, n_resamples=n_res, seed=seed, ci=ci)
    rows = paired_frame(base, cross, item, model)
    items = sorted({r[0] for r in rows})
    W = resample_weights(len(items), n_res, seed)
    P = {v: np.mean([res.model_delta[m] for m in range(5) if vendor[m] == v and res.model_rows[m]])
         for v in set(vendor.tolist())}
    means, spreads, nulls, taus, model_deltas = [], [], [], [], []
    for w in W:
        weight = {i: w[k] for k, i in enumerate(items)}
        per_model = {}
        for m in range(5):
            num_d = sum(weight[i] * (c - b) for i, mm, b, c in rows if mm == m)
            num_b = sum(weight[i] * b for i, mm, b, c in rows if mm == m)
            num_c = sum(weight[i] * c for i, mm, b, c in rows if mm == m)
            den = sum(weight[i] for i, mm, b, c in rows if mm == m)
            per_model[m] = (num_d / den, num_b / den, num_c / den) if den else None
        model_deltas.append([per_model[m][0] if per_model[m] else nan for m in range(5)])
        drawn = [m for m in range(5) if per_model[m]]
        means.append(np.mean([per_model[m][0] for m in drawn]))
        pv = {v: np.mean([per_model[m][0] for m in drawn if vendor[m] == v])
              for v in {int(vendor[m]) for m in drawn}}
        spreads.append(max(pv.values()) - min(pv.values()) if len(pv) >= 2 else nan)
        scale = math.sqrt(len(items) / sum((x - 1) ** 2 for x in w))
        dev = [scale * (pv[v] - P[v]) for v in pv]
        nulls.append(max(dev) - min(dev) if len(dev) >= 2 else nan)
        taus.append(kendall_tau_b([per_model[m][1] for m in drawn], [per_model[m][2] for m in drawn]))
    alpha = (1 - ci) / 2
    assert res.mean_delta["low"] == pytest.approx(quantile(means, alpha), abs=1e-9)
    assert res.mean_delta["high"] == pytest.approx(quantile(means, 1 - alpha), abs=1e-9)
    assert res.provider_spread["low"] == pytest.approx(quantile(spreads, alpha), abs=1e-9)
    assert res.provider_spread["high"] == pytest.approx(quantile(spreads, 1 - alpha), abs=1e-9)
    assert res.provider_spread["null_high"] == pytest.approx(quantile(nulls, ci), abs=1e-9)
    assert res.rank_correlation["kendall_low"] == pytest.approx(quantile(taus, alpha), abs=1e-9)
    assert res.rank_correlation["kendall_high"] == pytest.approx(quantile(taus, 1 - alpha), abs=1e-9)
    md = np.array(model_deltas)
    for m in range(5):
        assert res.model_delta_low[m] == pytest.approx(quantile(md[:, m], alpha), abs=1e-9)
        assert res.model_delta_high[m] == pytest.approx(quantile(md[:, m], 1 - alpha), abs=1e-9)


def test_model_intervals_equal_bootstrap_scores():
    base, cross, item, model, vendor, _ = random_rows(np.random.default_rng(8))
    res = run(base, cross, item, model, vendor, n_resamples=300, seed=4)
    ok = ~(np.isnan(base) | np.isnan(cross))
    _, pos = np.unique(item[ok], return_inverse=True)
    S, C = score_matrix(pos, model[ok], (cross - base)[ok], int(pos.max()) + 1, len(vendor))
    boot = bootstrap_scores(S, C, n_resamples=300, seed=4)
    np.testing.assert_allclose(res.model_delta_low, boot.low, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.model_delta_high, boot.high, rtol=0, atol=1e-9)


def test_model_bootstrap_and_permutation_null_match_naive_loops():
    base, cross, item, model, vendor, group = random_rows(np.random.default_rng(9), n_items=20, n_models=6)
    n_res, seed, ci = 150, 3, 0.95
    res = run(base, cross, item, model, vendor, group, n_resamples=n_res, seed=seed, ci=ci)
    rows = paired_frame(base, cross, item, model)
    models = sorted({r[1] for r in rows})
    U = resample_weights(len(models), n_res, (seed, 1))
    e = {i: np.mean([c - b for ii, m, b, c in rows if ii == i]) for i in {r[0] for r in rows}}
    members = {}
    for i in e:
        if group[i] >= 0:
            members.setdefault(int(group[i]), []).append(i)
    members = {g: sorted(its) for g, its in sorted(members.items()) if len(its) >= 2}
    spreads = []
    for u in U:
        weight = {m: u[k] for k, m in enumerate(models)}
        e_star = {}
        for i in e:
            den = sum(weight[m] for ii, m, b, c in rows if ii == i)
            if den:
                e_star[i] = sum(weight[m] * (c - b) for ii, m, b, c in rows if ii == i) / den
        gs = []
        for its in members.values():
            drawn = [i for i in its if i in e_star]
            if len(drawn) >= 2:
                gs.append(max(e_star[i] for i in drawn) - min(e_star[i] for i in drawn))
        spreads.append(np.mean(gs) if gs else nan)
    gsp = res.group_spread
    assert gsp["low"] == pytest.approx(quantile(spreads, 0.025), abs=1e-9)
    assert gsp["high"] == pytest.approx(quantile(spreads, 0.975), abs=1e-9)

    # The no-preference interval: each model's (sum, count) cells shuffled among its group's items.
    columns = [i for its in members.values() for i in its]
    group_of_column = np.array([g for g, its in enumerate(members.values()) for _ in its])
    rng = np.random.default_rng((seed, 1))
    list(_weight_chunks(rng, len(models), n_res, n_res))  # the bootstrap draws come first from the same generator
    orders = group_permutations(np.random.default_rng(rng.integers(2**63)), n_res, len(models), group_of_column)
    cell = {(m, i): [c - b for ii, mm, b, c in rows if ii == i and mm == m] for m in models for i in columns}
    nulls = []
    for order in orders:
        e_perm = {}
        for j, i in enumerate(columns):
            moved = [cell[(m, columns[order[k][j]])] for k, m in enumerate(models)]
            n = sum(len(x) for x in moved)
            if n:
                e_perm[i] = sum(sum(x) for x in moved) / n
        gn = []
        for its in members.values():
            there = [i for i in its if i in e_perm]
            if len(there) >= 2:
                gn.append(max(e_perm[i] for i in there) - min(e_perm[i] for i in there))
        nulls.append(np.mean(gn) if gn else nan)
    assert gsp["null_high"] == pytest.approx(quantile(nulls, 0.95), abs=1e-9)
    for order in orders:  # every move stays inside the model's own group
        assert (group_of_column[order] == group_of_column[None, :]).all()


# ---------------------------------------------------------------------------
# Detection


def test_planted_vendor_preference_is_not_safe():
    for seed in range(5):
        res = run(*world(seed, vendor_plant=8.0), seed=seed)
        ps = res.provider_spread
        assert ps["reading"] == "not_safe", (seed, ps)
        assert ps["value"] > ps["null_high"]
        assert ps["highest_vendor"] == 0
        assert res.vendor_delta_low[0] > 0


def test_planted_target_preference_is_not_safe():
    # +12 points on one item of every group of three: found in 60 of 60 worlds (+8: in 56 of 60).
    for seed in range(5):
        res = run(*world(seed, target_plant=12.0), seed=seed)
        gs = res.group_spread
        assert gs["reading"] == "not_safe", (seed, gs)
        assert gs["value"] > gs["null_high"]


def test_no_preference_reads_safe():
    provider_safe = group_safe = 0
    for seed in range(20):
        res = run(*world(100 + seed), seed=seed)
        provider_safe += res.provider_spread["reading"] == "safe"
        group_safe += res.group_spread["reading"] == "safe"
    print(f"no-preference worlds read safe: provider {provider_safe}/20, group {group_safe}/20")
    assert provider_safe >= 18
    assert group_safe >= 18


def test_mean_delta_readings():
    base, cross, item, model, vendor, _ = world(0)
    base = np.clip(base, 0, 85)
    shifted = run(base, base + 10.0 + np.random.default_rng(1).normal(0, 5, base.size).clip(-10, 5),
                          item, model, vendor)
    assert shifted.mean_delta["reading"] == "not_safe"
    assert shifted.mean_delta["low"] > 5
    small = run(base, base + 1.0, item, model, vendor)
    assert small.mean_delta["value"] == pytest.approx(1.0, abs=1e-9)
    assert small.mean_delta["low"] > 0  # real, but too small to matter
    assert small.mean_delta["reading"] == "safe"
    noisy = run(*world(3))
    assert noisy.mean_delta["reading"] == "safe"
    assert noisy.mean_delta["low"] < 0 < noisy.mean_delta["high"]


def test_rank_correlation_readings():
    base, _, item, model, vendor, _ = world(2)
    same = run(base, base, item, model, vendor)
    assert same.rank_correlation["kendall"] == pytest.approx(1.0, abs=TOL)
    assert same.rank_correlation["spearman"] == pytest.approx(1.0, abs=TOL)
    assert same.rank_correlation["reading"] == "safe"
    flipped = run(base, 100.0 - base, item, model, vendor)
    assert flipped.rank_correlation["kendall"] == pytest.approx(-1.0, abs=TOL)
    assert flipped.rank_correlation["spearman"] == pytest.approx(-1.0, abs=TOL)
    assert flipped.rank_correlation["reading"] == "not_safe"
    assert flipped.rank_correlation["kendall_high"] < 0


def test_thresholds_are_echoed_and_used():
    data = world(0, vendor_plant=8.0)
    t = CrossJudgeThresholds(max_abs_mean_delta=0.5, min_kendall=1.0, min_spread=50.0)
    res = run(*data, thresholds=t)
    assert res.thresholds == t
    assert res.to_dict()["thresholds"] == {"max_abs_mean_delta": 0.5, "min_kendall": 1.0, "min_spread": 50.0}
    assert res.provider_spread["reading"] == "safe"  # above the null, but under 50 points
    assert "at least 50 points" in res.provider_spread["rule"]
    assert "no-preference interval" in res.provider_spread["rule"]
    assert CrossJudgeThresholds() == CrossJudgeThresholds(5.0, 0.7, 2.0)
    for bad in ({"max_abs_mean_delta": -1}, {"min_kendall": 1.5}, {"min_spread": nan}, {"min_spread": "2"}):
        with pytest.raises(ValueError):
            CrossJudgeThresholds(**bad)


# ---------------------------------------------------------------------------
# Edge cases


def test_single_vendor_has_no_provider_spread():
    base, cross, item, model, _, group = world(1)
    res = run(base, cross, item, model, np.zeros(8, dtype=int), group, n_resamples=100)
    assert res.provider_spread is None
    assert res.to_dict()["provider_spread"] is None
    assert res.rank_correlation is not None and res.group_spread is not None


def test_single_model_and_no_groups():
    base, cross, item, model, vendor, _ = world(1)
    keep = model == 0
    res = run(base[keep], cross[keep], item[keep], model[keep], vendor, np.arange(300) // 3,
                      n_resamples=100)
    assert res.rank_correlation is None
    assert res.provider_spread is None
    assert res.group_spread["value"] is not None and res.group_spread["reading"] is None
    assert np.isnan(res.model_delta[1:]).all() and (res.model_rows[1:] == 0).all()
    assert run(base, cross, item, model, vendor, n_resamples=50).group_spread is None
    assert run(base, cross, item, model, vendor, np.full(300, -1), n_resamples=50).group_spread is None
    singletons = np.arange(300)  # every group has one item
    assert run(base, cross, item, model, vendor, singletons, n_resamples=50).group_spread is None


def test_no_paired_rows():
    base, cross, item, model, vendor, _ = world(1)
    cross = np.where(np.isnan(base), 50.0, nan)
    with pytest.raises(ValueError, match="no paired rows"):
        run(np.full_like(base, nan), np.full_like(base, 50.0), item, model, vendor)
    with pytest.raises(ValueError, match="no paired rows"):
        run(base, cross, item, model, vendor)
    with pytest.raises(ValueError, match="no paired rows"):
        run([], [], [], [], vendor)


@pytest.mark.parametrize(
    "change, name",
    [
        (lambda d: {**d, "base": d["base"][:, None]}, "base"),
        (lambda d: {**d, "cross": d["cross"][:-1]}, "cross"),
        (lambda d: {**d, "item": d["item"][:-1]}, "item"),
        (lambda d: {**d, "item": d["item"].astype(float)}, "item"),
        (lambda d: {**d, "item": d["item"] - 1}, "item"),
        (lambda d: {**d, "n_items": 29}, "item"),
        (lambda d: {**d, "n_items": -1}, "n_items"),
        (lambda d: {**d, "model": d["model"][:, None]}, "model"),
        (lambda d: {**d, "model": d["model"] + 1}, "model"),
        (lambda d: {**d, "n_models": 9}, "model_vendor"),
        (lambda d: {**d, "n_models": 0}, "n_models"),
        (lambda d: {**d, "model_vendor": d["model_vendor"][:-1]}, "model_vendor"),
        (lambda d: {**d, "model_vendor": d["model_vendor"][:, None]}, "model_vendor"),
        (lambda d: {**d, "model_vendor": d["model_vendor"] - 1}, "model_vendor"),
        (lambda d: {**d, "n_vendors": 3}, "model_vendor"),
        (lambda d: {**d, "n_vendors": 0}, "n_vendors"),
        (lambda d: {**d, "group_of_item": d["group_of_item"][:-1]}, "group_of_item"),
        (lambda d: {**d, "group_of_item": d["group_of_item"][:, None]}, "group_of_item"),
        (lambda d: {**d, "group_of_item": d["group_of_item"] - 5}, "group_of_item"),
        (lambda d: {**d, "group_of_item": d["group_of_item"] * 1.0}, "group_of_item"),
        (lambda d: {**d, "base": d["base"] * 2}, "base"),
        (lambda d: {**d, "cross": np.where(d["item"] == 0, np.inf, d["cross"])}, "cross"),
        (lambda d: {**d, "cross": d["cross"].astype(str)}, "cross"),
        (lambda d: {**d, "n_resamples": 0}, "n_resamples"),
        (lambda d: {**d, "ci": 1.0}, "ci"),
        (lambda d: {**d, "seed": -1}, "seed"),
        (lambda d: {**d, "chunk": 0}, "chunk"),
        (lambda d: {**d, "thresholds": {"min_spread": 1}}, "thresholds"),
    ],
)
def test_bad_input_names_the_argument(change, name):
    base, cross, item, model, vendor, group = world(1, n_items=30)
    data = {"base": base, "cross": cross, "item": item, "model": model, "model_vendor": vendor,
            "n_items": 30, "n_models": 8, "n_vendors": 4, "group_of_item": group}
    crossjudge(**data, n_resamples=20)  # the unchanged data are fine
    with pytest.raises(ValueError, match=name):
        crossjudge(**change(data))


def test_unpaired_rows_and_unused_models_are_ignored():
    base, cross, item, model, vendor, group = world(4)
    res = run(base, cross, item, model, vendor, group, n_resamples=200)
    # Extra rows with one side missing, and a ninth model (own vendor) without paired rows.
    extra = 50
    base2 = np.concatenate([base, np.full(extra, 40.0)])
    cross2 = np.concatenate([cross, np.full(extra, nan)])
    item2 = np.concatenate([item, np.arange(extra)])
    model2 = np.concatenate([model, np.full(extra, 8)])
    res2 = run(base2, cross2, item2, model2, np.append(vendor, 4), group, n_resamples=200)
    assert res2.mean_delta == res.mean_delta
    assert res2.provider_spread == res.provider_spread
    assert res2.group_spread == res.group_spread
    assert res2.model_rows[8] == 0 and np.isnan(res2.vendor_delta[4])
    out = res2.to_dict()
    assert out["per_model"][8]["delta"] is None and out["per_vendor"][4]["delta"] is None


# ---------------------------------------------------------------------------
# Determinism and output


def test_same_seed_same_result_and_chunk_does_not_matter():
    data = world(6, vendor_plant=3.0, target_plant=3.0)
    a = run(*data, n_resamples=300, seed=42)
    b = run(*data, n_resamples=300, seed=42)
    c = run(*data, n_resamples=300, seed=42, chunk=7)
    d = run(*data, n_resamples=300, seed=43)
    assert a.to_dict() == b.to_dict()
    for key in ("mean_delta", "provider_spread", "group_spread", "rank_correlation"):
        for field, value in getattr(a, key).items():
            other = getattr(c, key)[field]
            if isinstance(value, float):
                assert other == pytest.approx(value, abs=1e-9), (key, field)
            else:
                assert other == value
    assert d.provider_spread["null_high"] != a.provider_spread["null_high"]
    assert run(*data, n_resamples=50, seed=(1, 2)).to_dict()["seed"] == [1, 2]


def test_to_dict_is_plain_json():
    data = world(5)
    vendor = np.append(data[4], 7)  # a ninth model, no rows; vendors 4-6 have no models
    res = run(data[0], data[1], data[2], data[3], vendor, data[5], n_resamples=100)
    assert isinstance(res, CrossJudge)
    out = res.to_dict()
    text = json.dumps(out, allow_nan=False)
    assert json.loads(text) == out
    assert len(out["per_model"]) == 9 and len(out["per_vendor"]) == 8
    assert out["per_vendor"][5] == {"vendor": 5, "models": 0, "rows": 0, "delta": None, "delta_low": None,
                                    "delta_high": None}
    for key in ("mean_delta", "rank_correlation", "provider_spread", "group_spread"):
        assert out[key]["reading"] in ("safe", "not_safe")
        assert isinstance(out[key]["rule"], str) and out[key]["rule"]
    assert out["n_resamples"] == 100 and out["seed"] == 0 and out["ci"] == 0.95
    with pytest.raises(AttributeError):
        res.paired_rows = 1
