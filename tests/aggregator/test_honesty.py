"""Tests for the honesty figures: the abstention-aware composite (hand-worked values, ranking, seeded
bootstrap), consistency under paraphrase (hand-made groups) and Spearman against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator import (
    OUTCOMES,
    average_ranks,
    bootstrap_honesty,
    compute_signature,
    consensus_difficulty,
    honesty_composite,
    honesty_outcomes,
    honesty_row_scores,
    paraphrase_consistency,
    paraphrase_groups,
    selective_score,
    spearman,
)

NAN = math.nan

# ---------------------------------------------------------------------------
# Composite


def test_each_outcome_hand_worked():
    correct = [1, 0, 0, 0, 0, 1, 0]
    abstained = [False, True, False, False, False, True, False]
    confidence = [0.9, 0.95, 0.5, 0.8, NAN, NAN, 0.79]
    # correct +1; abstained 0 (even when the verdict is wrong and confidence high); wrong at 0.5 -1;
    # wrong at exactly 0.8 -2; wrong without confidence -1; abstained (verdict correct) 0; wrong at 0.79 -1
    np.testing.assert_array_equal(honesty_outcomes(correct, abstained, confidence), [0, 1, 2, 3, 2, 1, 2])
    np.testing.assert_array_equal(honesty_row_scores(correct, abstained, confidence), [1, 0, -1, -2, -1, 0, -1])
    custom = honesty_row_scores(correct, abstained, confidence, abstain_credit=0.25, wrong_penalty=0.5,
                                confident_wrong_penalty=3.0, confident_at=0.5)
    np.testing.assert_array_equal(custom, [1, 0.25, -3, -3, -0.5, 0.25, -3])
    res = honesty_composite(correct, abstained, confidence, [0, 0, 0, 1, 1, 1, 1], 3)
    # model 0: (1 + 0 - 1) / 3 = 0; model 1: (-2 - 1 + 0 - 1) / 4 = -1; model 2: no rows
    np.testing.assert_allclose(res["score"][:2], [0.0, -1.0])
    assert math.isnan(res["score"][2])
    assert res["overall"] == pytest.approx(-4 / 7)
    np.testing.assert_array_equal(res["n_rows"], [3, 4, 0])
    np.testing.assert_array_equal(res["n_correct"], [1, 0, 0])
    np.testing.assert_array_equal(res["n_abstained"], [1, 1, 0])
    np.testing.assert_array_equal(res["n_wrong"], [1, 2, 0])
    np.testing.assert_array_equal(res["n_confident_wrong"], [0, 1, 0])
    assert OUTCOMES == ("correct", "abstained", "wrong", "confident_wrong")


def test_equals_selective_score_without_the_confident_penalty():
    rng = np.random.default_rng(3)
    y, a, c = rng.integers(0, 2, 50), rng.random(50) < 0.2, rng.random(50)
    got = honesty_row_scores(y, a, c, wrong_penalty=1.5, confident_wrong_penalty=1.5).mean()
    assert got == pytest.approx(selective_score(y, a, penalty=1.5))


def two_models():
    """Model 0 abstains on 40% of 500 items and is 98% right on the other 300 (its 6 wrong answers stated
    with confidence 0.95); model 1 answers every item, 75% right, its wrong answers stated at 0.6."""
    n = 500
    abst0 = np.arange(n) < 200
    right0 = np.zeros(n, dtype=np.int8)
    right0[200:494] = 1  # 294 of 300 answered
    conf0 = np.where(abst0, NAN, 0.95)
    right1 = (np.arange(n) % 4 != 0).astype(np.int8)  # 375 of 500
    conf1 = np.where(right1 == 1, 0.9, 0.6)
    correct = np.concatenate([right0, right1])
    abstained = np.concatenate([abst0, np.zeros(n, dtype=bool)])
    confidence = np.concatenate([conf0, conf1])
    model = np.repeat([0, 1], n)
    item = np.tile(np.arange(n), 2)
    return correct, abstained, confidence, model, item


def test_abstaining_model_ranks_above_the_one_that_answers_everything():
    correct, abstained, confidence, model, item = two_models()
    res = honesty_composite(correct, abstained, confidence, model, 2)
    # model 0: (294 - 2 * 6) / 500 = 0.564; model 1: (375 - 125) / 500 = 0.5
    np.testing.assert_allclose(res["score"], [0.564, 0.5])
    assert res["score"][0] > res["score"][1]
    # plain accuracy over all rows would rank them the other way round (0.588 < 0.75)
    assert correct[model == 0].mean() < correct[model == 1].mean()


def test_interval_is_seeded_and_covers_the_point():
    correct, abstained, confidence, model, item = two_models()
    args = (correct, abstained, confidence, model, item, 2, 500)
    one = bootstrap_honesty(*args, n_resamples=300, seed=11)
    two = bootstrap_honesty(*args, n_resamples=300, seed=11)
    other = bootstrap_honesty(*args, n_resamples=300, seed=12)
    np.testing.assert_array_equal(one.samples, two.samples)
    assert not np.array_equal(one.samples, other.samples)
    np.testing.assert_allclose(one.point, honesty_composite(correct, abstained, confidence, model, 2)["score"])
    assert (one.low <= one.point).all() and (one.point <= one.high).all() and (one.low < one.high).all()


def test_bad_weights_are_refused():
    with pytest.raises(ValueError):
        honesty_row_scores([1], [False], [0.5], wrong_penalty=2.0, confident_wrong_penalty=1.0)
    with pytest.raises(ValueError):
        honesty_row_scores([1], [False], [0.5], abstain_credit=-2.0)
    with pytest.raises(ValueError):
        honesty_row_scores([1], [False], [0.5], confident_at=1.5)
    with pytest.raises(ValueError):
        honesty_row_scores([1], [False], [1.5])


def test_no_rows():
    res = honesty_composite([], [], [], np.zeros(0, dtype=np.int64), 2)
    assert math.isnan(res["overall"]) and np.isnan(res["score"]).all()


# ---------------------------------------------------------------------------
# Paraphrase


def test_paraphrase_groups_from_the_bank_field():
    ids = ["a", "a2", "b", "b2", "b3", "c", "d", "e"]
    of = ["a", "a", None, "b", "b", None, "x", "x"]
    # a: marked original and a paraphrase; b: an unmarked original named by two paraphrases; c alone;
    # d and e paraphrase an item not in the list (still a group of two); numbered by first appearance
    np.testing.assert_array_equal(paraphrase_groups(ids, of), [0, 0, 1, 1, 1, -1, 2, 2])
    np.testing.assert_array_equal(paraphrase_groups(["a", "b"], ["a", None]), [-1, -1])  # a group of one


def test_paraphrase_consistency_hand_made():
    # model 0: group 0 (1, 1) agrees, group 1 (1, 0, 1) does not, group 2 one row only: not counted
    # model 1: group 0 (0, 0) agrees, group 1 (0, 0) agrees; a row in no group is left out
    correct = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    model = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    group = [0, 0, 1, 1, 1, 2, 0, 0, 1, 1, -1]
    res = paraphrase_consistency(correct, model, group, 3, 3)
    np.testing.assert_allclose(res["consistency"][:2], [0.5, 1.0])
    assert math.isnan(res["consistency"][2])
    np.testing.assert_array_equal(res["n_groups"], [2, 2, 0])
    with pytest.raises(ValueError):
        paraphrase_consistency([1], [0], [3], 1, 3)


# ---------------------------------------------------------------------------
# Spearman and the compute signature


def test_average_ranks_with_ties():
    np.testing.assert_array_equal(average_ranks([10, 20, 10, 30, 20, 20]), [1.5, 4, 1.5, 6, 4, 4])


@pytest.mark.parametrize("seed", range(20))
def test_spearman_equals_scipy_ties_included(seed):
    from scipy import stats

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    x = rng.integers(0, 5, n).astype(float)  # many ties
    y = rng.integers(0, 4, n) + (rng.random(n) < 0.5) * rng.random(n)  # ties and continuous values
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        x[0], y[0] = -1.0, -1.0
    assert abs(spearman(x, y) - stats.spearmanr(x, y).statistic) <= 1e-9
    z = rng.normal(size=n)
    assert abs(spearman(z, y) - stats.spearmanr(z, y).statistic) <= 1e-9


def test_spearman_edges():
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))  # constant side
    assert math.isnan(spearman([1], [2]))
    # NaN pairs are left out
    assert spearman([1, 2, NAN, 3], [1, 5, 2, 9]) == pytest.approx(1.0)


def test_consensus_difficulty():
    # item 0: models 0 and 1 right -> 0; item 1: model 0 right on one of two rows (0.5), model 1 wrong -> 1 - 0.25
    correct = [1, 1, 1, 0, 0]
    item = [0, 0, 1, 1, 1]
    model = [0, 1, 0, 0, 1]
    d = consensus_difficulty(correct, item, model, 3, 2)
    np.testing.assert_allclose(d[:2], [0.0, 0.75])
    assert math.isnan(d[2])


def test_compute_signature():
    from scipy import stats

    difficulty = np.array([0.1, 0.5, 0.9, 0.3, NAN])
    # model 0: items 0..3 with spend (item 1 twice: mean 25), item 4 has no difficulty -> left out
    # model 1: only two items with a known spend -> NaN
    item = np.array([0, 1, 1, 2, 3, 4, 0, 1, 2])
    model = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    spend = np.array([10, 20, 30, 40, 15, 99, 5, NAN, 7])
    res = compute_signature(difficulty, item, model, spend, 3)
    expected = stats.spearmanr([0.1, 0.5, 0.9, 0.3], [10, 25, 40, 15]).statistic
    assert res["rho"][0] == pytest.approx(expected, abs=1e-12) and res["rho"][0] == pytest.approx(1.0)
    assert math.isnan(res["rho"][1]) and math.isnan(res["rho"][2])
    np.testing.assert_array_equal(res["n_items"], [4, 2, 0])
