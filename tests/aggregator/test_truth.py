"""Tests for reliability against gold: hand-worked examples and statsmodels / numpy oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import aggregator as agg
from aggregator import MISSING
from aggregator._bootstrap import resample_weights
from aggregator._truth import (
    effective_judges,
    error_correlation,
    kappa_against,
    truth_summary,
)

_ = -1


def test_kappa_against_hand_worked():
    from statsmodels.stats.inter_rater import cohens_kappa

    # Rows where both known: 0..5 (row 6 has no prediction, row 7 no gold).
    #   pred 1 1 0 0 1 0     gold 1 0 0 0 1 1
    # table [pred][gold] (0 = incorrect, 1 = correct): [[2, 1], [1, 2]]
    # p_o = 4/6, p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5, kappa = (2/3 - 1/2) / (1/2) = 1/3.
    pred = np.array([1, 1, 0, 0, 1, 0, _, 1], dtype=np.int8)
    gold = np.array([1, 0, 0, 0, 1, 1, 1, _], dtype=np.int8)
    assert kappa_against(pred, gold) == pytest.approx(1 / 3, abs=1e-12)
    ref = cohens_kappa(np.array([[2, 1], [1, 2]]), return_results=False)
    assert abs(kappa_against(pred, gold) - ref) < 1e-12


def test_kappa_against_undefined():
    assert math.isnan(kappa_against(np.array([_, 1]), np.array([1, _])))
    assert math.isnan(kappa_against(np.array([1, 1]), np.array([1, 1])))
    assert kappa_against(np.array([1, 0]), np.array([1, 0])) == 1.0


def test_kappa_against_vs_statsmodels_random():
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(3)
    gold = rng.integers(0, 2, 3000).astype(np.int8)
    pred = np.where(rng.random(3000) < 0.8, gold, 1 - gold).astype(np.int8)
    pred[rng.random(3000) < 0.15] = -1
    gold[rng.random(3000) < 0.1] = -1
    both = (pred != -1) & (gold != -1)
    table = np.zeros((2, 2))
    np.add.at(table, (pred[both], gold[both]), 1)
    ref = cohens_kappa(table, return_results=False)
    assert abs(kappa_against(pred, gold) - ref) < 1e-12


def _random_votes(rng, rows, members, missing):
    gold = rng.integers(0, 2, rows).astype(np.int8)
    shared = rng.random(rows) < 0.1  # rows every member tends to get wrong
    own = rng.random((rows, members)) < 0.15
    err = own | (shared[:, None] & (rng.random((rows, members)) < 0.7))
    v = np.where(err, 1 - gold[:, None], gold[:, None]).astype(np.int8)
    v[rng.random((rows, members)) < missing] = -1
    gold[rng.random(rows) < 0.1] = -1
    return v, gold


def test_error_correlation_vs_corrcoef():
    rng = np.random.default_rng(11)
    v, gold = _random_votes(rng, 4000, 5, 0.2)
    corr = error_correlation(v, gold)
    np.testing.assert_array_equal(corr, corr.T)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    for i, j in itertools.combinations(range(5), 2):
        rows = (v[:, i] != -1) & (v[:, j] != -1) & (gold != -1)
        ei = (v[rows, i] != gold[rows]).astype(float)
        ej = (v[rows, j] != gold[rows]).astype(float)
        assert abs(corr[i, j] - np.corrcoef(ei, ej)[0, 1]) < 1e-12
    assert np.nanmean(corr[np.triu_indices(5, 1)]) > 0.1


def test_error_correlation_zero_variance_is_nan():
    gold = np.array([1, 0, 1, 0], dtype=np.int8)
    v = np.array([[1, 0], [0, 0], [1, 1], [0, 0]], dtype=np.int8)  # member 0 never errs
    corr = error_correlation(v, gold)
    assert math.isnan(corr[0, 1]) and math.isnan(corr[0, 0])
    assert corr[1, 1] == 1.0


def test_effective_judges_independent_errors_close_to_m():
    rng = np.random.default_rng(5)
    rows, m = 20000, 5
    gold = rng.integers(0, 2, rows).astype(np.int8)
    err = rng.random((rows, m)) < 0.2
    v = np.where(err, 1 - gold[:, None], gold[:, None]).astype(np.int8)
    assert abs(effective_judges(v, gold) - m) < 0.5


def test_effective_judges_identical_errors_is_one():
    rng = np.random.default_rng(6)
    rows, m = 5000, 5
    gold = rng.integers(0, 2, rows).astype(np.int8)
    err = rng.random(rows) < 0.2
    v = np.repeat(np.where(err, 1 - gold, gold)[:, None], m, axis=1).astype(np.int8)
    assert effective_judges(v, gold) == pytest.approx(1.0, abs=1e-12)


def test_effective_judges_formula():
    rng = np.random.default_rng(8)
    v, gold = _random_votes(rng, 3000, 4, 0.1)
    corr = error_correlation(v, gold)
    rho = np.nanmean(corr[np.triu_indices(4, 1)])
    assert effective_judges(v, gold) == pytest.approx(4 / (1 + 3 * rho), abs=1e-12)


def test_truth_summary_hand_worked():
    # 4 rows, 2 members; gold unknown on row 3.
    gold = np.array([1, 0, 1, _], dtype=np.int8)
    r1 = np.array([[1, 1], [1, 0], [_, 1], [0, 0]], dtype=np.int8)
    r2 = np.array([[1, 1], [0, 0], [1, 1], [0, 0]], dtype=np.int8)
    votes = np.stack([r1, r2], axis=2)
    verdict = np.array([[1, 1], [0, 0], [0, 1], [0, 0]], dtype=np.int8)
    out = truth_summary(votes, verdict, gold, ["a", "b"])
    assert out["rows_with_gold"] == 3
    # a, round one: valid votes with gold on rows 0, 1 -> 1 right of 2.
    # a always says "correct" there: p_o = 1/2, p_e = 1 * 1/2 = 1/2, kappa = 0.
    assert out["members"]["a"]["accuracy_round1"] == 0.5
    assert out["members"]["a"]["kappa_round1"] == 0.0
    # a, round two and b in both rounds are perfect.
    assert out["members"]["a"]["accuracy_round2"] == 1.0
    assert out["members"]["a"]["kappa_round2"] == 1.0
    assert out["members"]["b"] == {
        "accuracy_round1": 1.0,
        "accuracy_round2": 1.0,
        "kappa_round1": 1.0,
        "kappa_round2": 1.0,
    }
    # Consensus round one right on rows 0, 1 but not 2: 2/3; table [[1, 1], [0, 1]]:
    # p_o = 2/3, p_e = (2/3 * 1/3) + (1/3 * 2/3) = 4/9, kappa = (2/9) / (5/9) = 0.4.
    assert out["consensus"]["accuracy_round1"] == round(2 / 3, 6)
    assert out["consensus"]["kappa_round1"] == 0.4
    assert out["consensus"]["accuracy_round2"] == 1.0
    assert out["consensus"]["kappa_round2"] == 1.0
    # Round two: nobody errs -> correlations undefined.
    assert out["error_correlation"] == {"a|b": None}
    assert out["mean_error_correlation"] is None
    assert out["effective_judges"] is None


def test_truth_summary_random_matches_functions():
    rng = np.random.default_rng(12)
    v1, gold = _random_votes(rng, 2000, 3, 0.1)
    v2, _gold = _random_votes(rng, 2000, 3, 0.1)
    votes = np.stack([v1, v2], axis=2)
    verdict = (rng.random((2000, 2)) < 0.5).astype(np.int8)
    members = ["x", "y", "z"]
    out = truth_summary(votes, verdict, gold, members)
    known = gold != -1
    assert out["rows_with_gold"] == int(known.sum())
    for j, name in enumerate(members):
        for k in range(2):
            vk = votes[:, j, k]
            scored = known & (vk != -1)
            acc = float(np.mean(vk[scored] == gold[scored]))
            assert out["members"][name][f"accuracy_round{k + 1}"] == round(acc, 6)
            assert out["members"][name][f"kappa_round{k + 1}"] == round(kappa_against(vk, gold), 6)
    for k in range(2):
        acc = float(np.mean(verdict[known, k] == gold[known]))
        assert out["consensus"][f"accuracy_round{k + 1}"] == round(acc, 6)
    corr = error_correlation(v2, gold)
    assert out["error_correlation"] == {
        "x|y": round(corr[0, 1], 6),
        "x|z": round(corr[0, 2], 6),
        "y|z": round(corr[1, 2], 6),
    }
    assert out["effective_judges"] == round(effective_judges(v2, gold), 6)


def test_truth_summary_without_gold_is_none():
    votes = np.ones((3, 2, 2), dtype=np.int8)
    verdict = np.ones((3, 2), dtype=np.int8)
    assert truth_summary(votes, verdict, np.full(3, -1, dtype=np.int8), ["a", "b"]) is None


def test_truth_summary_validation():
    votes = np.ones((3, 2, 2), dtype=np.int8)
    gold = np.ones(3, dtype=np.int8)
    with pytest.raises(ValueError):
        truth_summary(votes, np.ones((3, 1), dtype=np.int8), gold, ["a", "b"])
    with pytest.raises(ValueError):
        truth_summary(votes, np.full((3, 2), 2, dtype=np.int8), gold, ["a", "b"])
    with pytest.raises(ValueError):
        truth_summary(votes, np.ones((3, 2), dtype=np.int8), gold[:2], ["a", "b"])
    with pytest.raises(ValueError):
        truth_summary(votes, np.ones((3, 2), dtype=np.int8), gold, ["a"])


def test_council_versus_members_points_and_sign():
    rng = np.random.default_rng(7)
    rows, n_items = 600, 300
    gold = rng.integers(0, 2, rows)
    item = np.arange(rows) % n_items
    skill = np.array([0.95, 0.8, 0.7])
    votes = np.where(rng.random((rows, 3)) < skill, gold[:, None], 1 - gold[:, None])
    votes[rng.random((rows, 3)) < 0.05] = MISSING
    council = np.where(rng.random(rows) < 0.75, gold, 1 - gold)  # a council worse than member "a"
    out = agg.council_versus_members(council, votes, gold, item, n_items, ["a", "b", "c"], n_resamples=500)
    for j, name in enumerate("abc"):  # a member is scored on the rows where it voted
        voted = votes[:, j] != MISSING
        assert out["judges"][name]["accuracy"] == pytest.approx((votes[voted, j] == gold[voted]).mean(), abs=1e-6)
    assert out["judges"]["council"]["accuracy"] == pytest.approx((council == gold).mean(), abs=1e-6)
    assert out["best_member"] == "a"
    d = out["council_minus_best_member"]
    assert d["ci_high"] < 0 < -d["value"]  # the measurement can say no
    better = agg.council_versus_members(gold, votes, gold, item, n_items, ["a", "b", "c"], n_resamples=500)
    assert better["council_minus_best_member"]["ci_low"] > 0
    assert agg.council_versus_members(gold, votes, np.full(rows, MISSING), item, n_items, ["a", "b", "c"]) is None


def test_council_minus_each_member_is_paired_on_the_rows_it_voted_by_hand():
    """Four items, one row each, gold all correct. The council is right on rows 0-2. Member b sat rows 0 and 1
    (right on both), member a rows 1-3 (right on row 2 only). By hand, on each member's own rows:
    council minus b = 2/2 - 2/2 = 0, council minus a = 2/3 - 1/3 = 1/3, so the best member is b, at 0 on 2 rows
    (the council's 3/4 on all rows minus b's 2/2 would read -1/4: different rows)."""
    gold = np.ones(4, dtype=np.int8)
    council = np.array([1, 1, 1, 0])
    votes = np.array([[MISSING, 1], [0, 1], [1, MISSING], [0, MISSING]], dtype=np.int8)  # columns a, b
    out = agg.council_versus_members(council, votes, gold, np.arange(4), 4, ["a", "b"], n_resamples=200)
    assert out["judges"]["council"]["accuracy"] == 0.75
    assert out["judges"]["a"]["accuracy"] == round(1 / 3, 6) and out["judges"]["b"]["accuracy"] == 1.0
    assert out["best_member"] == "b"
    # b and the council agree on every row b sat: every resample's difference is 0
    assert out["council_minus_best_member"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "rows": 2}
    assert out["council_minus_member"]["a"]["value"] == round(1 / 3, 6)
    assert out["council_minus_member"]["a"]["rows"] == 3


@pytest.mark.parametrize("seed", [0, 3])
def test_council_minus_each_member_equals_a_plain_loop(seed):
    """Point and interval of every member's paired difference against a loop over the rows with the
    bootstrap's own count vectors (items resampled; both sides on the same resampled rows)."""
    rng = np.random.default_rng(seed)
    rows, n_items, n_res = 90, 30, 300
    item = rng.integers(0, n_items, rows)
    truth = rng.integers(0, 2, rows)
    votes = np.where(rng.random((rows, 3)) < [0.9, 0.7, 0.6], truth[:, None], 1 - truth[:, None]).astype(np.int8)
    votes[rng.random((rows, 3)) < 0.25] = MISSING  # members sit out different rows
    council = np.where(rng.random(rows) < 0.8, truth, 1 - truth)
    gold = np.where(rng.random(rows) < 0.2, MISSING, truth).astype(np.int8)  # some rows without gold
    out = agg.council_versus_members(council, votes, gold, item, n_items, ["a", "b", "c"], n_resamples=n_res,
                                     seed=seed)
    weights = resample_weights(n_items, n_res, seed)
    expected = {}
    for j, name in enumerate("abc"):
        mine = [r for r in range(rows) if votes[r, j] != MISSING and gold[r] != MISSING]
        diff = (sum(int(council[r] == gold[r]) for r in mine) - sum(int(votes[r, j] == gold[r]) for r in mine))
        samples = []
        for w in weights:
            den = sum(w[item[r]] for r in mine)
            if den:
                samples.append(sum(w[item[r]] * (int(council[r] == gold[r]) - int(votes[r, j] == gold[r]))
                                   for r in mine) / den)
        low, high = np.percentile(samples, [2.5, 97.5])
        expected[name] = {"value": diff / len(mine), "ci_low": low, "ci_high": high, "rows": len(mine)}
        got = out["council_minus_member"][name]
        assert got["rows"] == len(mine)
        for key in ("value", "ci_low", "ci_high"):
            assert got[key] == pytest.approx(expected[name][key], abs=1e-6), (name, key)
    best = min("abc", key=lambda n: expected[n]["value"])
    assert out["best_member"] == best and out["council_minus_best_member"] == out["council_minus_member"][best]
