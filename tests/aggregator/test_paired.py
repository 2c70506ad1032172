"""The batch audit's arithmetic: paired agreement with Wilson intervals, against statsmodels."""

import numpy as np
import pytest

import aggregator as agg


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (8, 10), (193, 200), (1, 1000)])
@pytest.mark.parametrize("ci", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k, n, ci):
    from statsmodels.stats.proportion import proportion_confint

    low, high = agg.wilson_interval(k, n, ci)
    ref = proportion_confint(k, n, alpha=1 - ci, method="wilson")
    assert low == pytest.approx(ref[0], abs=1e-9) and high == pytest.approx(ref[1], abs=1e-9)


def test_paired_agreement_counts_and_groups():
    rng = np.random.default_rng(3)
    first = rng.integers(-1, 2, size=500)
    second = np.where(rng.random(500) < 0.9, first, 1 - np.clip(first, 0, 1))
    second[rng.random(500) < 0.05] = agg.MISSING
    group = rng.integers(0, 3, size=500)
    out = agg.paired_agreement(first, second, group, ["a", "b", "c"])
    valid = (first != agg.MISSING) & (second != agg.MISSING)
    assert out["pairs"] == valid.sum() and out["agree"] == (first[valid] == second[valid]).sum()
    assert out["first_correct_second_incorrect"] == ((first == 1) & (second == 0)).sum()
    assert sum(g["pairs"] for g in out["by_group"].values()) == out["pairs"]
    for k, name in enumerate("abc"):
        sel = valid & (group == k)
        assert out["by_group"][name]["agree"] == (first[sel] == second[sel]).sum()
    assert out["ci_low"] < out["agreement"] < out["ci_high"]
    assert agg.paired_agreement([], [])["agreement"] is None
