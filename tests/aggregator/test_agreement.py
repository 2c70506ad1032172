"""Tests for inter-rater agreement.

Published examples (Fleiss 1971, a textbook Cohen's kappa table) and seeded
random data checked against statsmodels, the krippendorff package and naive
pure-Python loops.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from aggregator._agreement import (
    agreement_summary,
    cohens_kappa_pairs,
    fleiss_kappa,
    fleiss_kappa_table,
    krippendorff_alpha_nominal,
    pairwise_agreement,
)

_ = -1


def _inter_rater():
    """statsmodels' inter-rater module, imported when a test needs it (not at collection)."""
    from statsmodels.stats import inter_rater

    return inter_rater


# Fleiss (1971), Table 1: 30 patients, each diagnosed by 6 psychiatrists into
# 5 categories (depression, personality disorder, schizophrenia, neurosis,
# other). Entries are the number of psychiatrists choosing each category.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 6, 0],
        [0, 3, 0, 0, 3],
        [0, 1, 4, 0, 1],
        [0, 0, 0, 0, 6],
        [0, 3, 0, 3, 0],
        [2, 0, 4, 0, 0],
        [0, 0, 4, 0, 2],
        [2, 0, 3, 1, 0],
        [2, 0, 0, 4, 0],
        [0, 0, 0, 0, 6],
        [1, 0, 0, 5, 0],
        [1, 1, 0, 4, 0],
        [0, 3, 3, 0, 0],
        [1, 0, 0, 5, 0],
        [0, 2, 0, 3, 1],
        [0, 0, 5, 0, 1],
        [3, 0, 0, 1, 2],
        [5, 1, 0, 0, 0],
        [0, 2, 0, 4, 0],
        [1, 0, 2, 0, 3],
        [0, 0, 0, 0, 6],
        [0, 1, 0, 5, 0],
        [0, 2, 0, 1, 3],
        [2, 0, 0, 4, 0],
        [1, 0, 0, 4, 1],
        [0, 5, 0, 1, 0],
        [4, 0, 0, 0, 2],
        [0, 2, 0, 4, 0],
        [1, 0, 5, 0, 0],
        [0, 0, 0, 0, 6],
    ]
)


def test_fleiss_1971_published_example():
    assert FLEISS_1971.shape == (30, 5)
    assert (FLEISS_1971.sum(axis=1) == 6).all()
    # Published category proportions p_j = .144, .144, .167, .306, .239.
    p = FLEISS_1971.sum(axis=0) / FLEISS_1971.sum()
    np.testing.assert_allclose(p, [0.144, 0.144, 0.167, 0.306, 0.239], atol=6e-4)
    kappa = fleiss_kappa_table(FLEISS_1971)
    assert kappa == pytest.approx(0.4302, abs=5e-5)
    assert abs(kappa - _inter_rater().fleiss_kappa(FLEISS_1971)) < 1e-12


def test_fleiss_table_rejects_unequal_raters():
    with pytest.raises(ValueError):
        fleiss_kappa_table([[1, 2], [2, 2]])
    with pytest.raises(ValueError):
        fleiss_kappa_table([[1, 0], [0, 1]])


def test_fleiss_table_all_one_category_is_nan():
    assert math.isnan(fleiss_kappa_table([[3, 0], [3, 0]]))


def test_cohens_kappa_published_example():
    # Textbook example (Wikipedia "Cohen's kappa"): 50 grant proposals read by
    # two readers A and B.  Yes/Yes 20, A yes B no 5, A no B yes 10, No/No 15.
    # p_o = 35/50 = 0.7; p_yes = 0.5 * 0.6 = 0.3, p_no = 0.5 * 0.4 = 0.2,
    # p_e = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    votes = np.array([a, b], dtype=np.int8).T
    kappa = cohens_kappa_pairs(votes)
    assert kappa[0, 1] == pytest.approx(0.4, abs=1e-12)
    assert kappa[1, 0] == kappa[0, 1]
    table = np.array([[20, 5], [10, 15]])
    assert abs(kappa[0, 1] - _inter_rater().cohens_kappa(table, return_results=False)) < 1e-12
    agree, n = pairwise_agreement(votes)
    assert agree[0, 1] == pytest.approx(0.7)
    assert n[0, 1] == 50


def test_small_hand_worked_round():
    # 4 rows, 3 members.
    v = np.array(
        [
            [1, 1, 0],
            [1, _, 1],
            [0, 0, _],
            [_, 1, _],
        ],
        dtype=np.int8,
    )
    agree, n = pairwise_agreement(v)
    # A|B: rows 0 and 2 -> both agree. A|C: rows 0 (1 vs 0) and 1 (1 vs 1).
    # B|C: row 0 only (1 vs 0).
    assert n.tolist() == [[3, 2, 2], [2, 3, 1], [2, 1, 2]]
    assert agree[0, 1] == 1.0 and agree[0, 2] == 0.5 and agree[1, 2] == 0.0
    assert (np.diag(agree) == 1.0).all()
    # Fleiss over rows 0..2 (row 3 has one vote):
    # P = [1/3, 1, 1]; P-bar = 7/9; votes 7, correct 4 -> P_e = (16 + 9)/49.
    p_e = 25 / 49
    assert fleiss_kappa(v) == pytest.approx((7 / 9 - p_e) / (1 - p_e), abs=1e-12)
    # Krippendorff: o_01 = 2 * 1 / 2 = 1 (row 0 only); n_1 = 4, n_0 = 3, n.. = 7;
    # alpha = 1 - 6 * 1 / 12 = 0.5.
    assert krippendorff_alpha_nominal(v) == pytest.approx(0.5, abs=1e-12)


def test_undefined_cases_are_nan():
    v = np.array([[1, _], [_, 1], [1, 1]], dtype=np.int8)
    agree, n = pairwise_agreement(np.array([[1, _], [_, 0]], dtype=np.int8))
    assert n[0, 1] == 0 and math.isnan(agree[0, 1])
    # Expected agreement 1: both always "correct".
    assert math.isnan(cohens_kappa_pairs(v)[0, 1])
    assert math.isnan(fleiss_kappa(v))
    assert math.isnan(krippendorff_alpha_nominal(v))
    empty = np.empty((0, 3), dtype=np.int8)
    assert math.isnan(fleiss_kappa(empty))
    assert math.isnan(krippendorff_alpha_nominal(empty))
    assert np.isnan(cohens_kappa_pairs(empty)).all()


def _random_round(rng, rows, members, missing, p_correct=None):
    """Correlated random votes: a latent row truth plus per-member noise."""
    truth = rng.random(rows) < 0.6
    noise = rng.random((rows, members)) < rng.uniform(0.1, 0.35, size=members)
    v = (truth[:, None] ^ noise).astype(np.int8)
    v[rng.random((rows, members)) < missing] = -1
    return v


@pytest.fixture(params=[(0, 0.0), (1, 0.2), (2, 0.5)], ids=["complete", "missing20", "missing50"])
def round_votes(request):
    seed, missing = request.param
    return _random_round(np.random.default_rng(seed), 2000, 5, missing)


def test_pairwise_agreement_vs_naive_loop(round_votes):
    v = round_votes
    agree, n = pairwise_agreement(v)
    rows, m = v.shape
    for i, j in itertools.product(range(m), repeat=2):
        both = same = 0
        for r in range(rows):
            a, b = int(v[r, i]), int(v[r, j])
            if a != -1 and b != -1:
                both += 1
                same += a == b
        assert n[i, j] == both
        assert agree[i, j] == pytest.approx(same / both, abs=1e-15)


def test_cohens_kappa_vs_statsmodels(round_votes):
    v = round_votes
    kappa = cohens_kappa_pairs(v)
    m = v.shape[1]
    np.testing.assert_array_equal(kappa, kappa.T)
    for i, j in itertools.combinations(range(m), 2):
        both = (v[:, i] != -1) & (v[:, j] != -1)
        a, b = v[both, i], v[both, j]
        table = np.zeros((2, 2))
        for x, y in zip(a.tolist(), b.tolist()):
            table[x, y] += 1
        ref = _inter_rater().cohens_kappa(table, return_results=False)
        assert abs(kappa[i, j] - ref) < 1e-12


def test_fleiss_vs_statsmodels_equal_raters(round_votes):
    v = round_votes
    complete = v[(v != -1).all(axis=1)]
    table, _cats = _inter_rater().aggregate_raters(complete, n_cat=2)
    ref = _inter_rater().fleiss_kappa(table)
    assert abs(fleiss_kappa(complete) - ref) < 1e-12
    assert abs(fleiss_kappa_table(table) - ref) < 1e-12


def test_fleiss_varying_raters_vs_naive_loop(round_votes):
    v = round_votes
    p_rows, votes, correct = [], 0, 0
    for row in v.tolist():
        valid = [x for x in row if x != -1]
        k = len(valid)
        if k < 2:
            continue
        y = sum(valid)
        p_rows.append((y * (y - 1) + (k - y) * (k - y - 1)) / (k * (k - 1)))
        votes += k
        correct += y
    p1 = correct / votes
    p_e = p1**2 + (1 - p1) ** 2
    ref = (sum(p_rows) / len(p_rows) - p_e) / (1 - p_e)
    assert abs(fleiss_kappa(v) - ref) < 1e-12


def test_krippendorff_vs_package(round_votes):
    import krippendorff

    v = round_votes
    data = v.T.astype(float)
    data[data == -1] = np.nan
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert abs(krippendorff_alpha_nominal(v) - ref) < 1e-9


def test_krippendorff_vs_package_many_seeds():
    import krippendorff

    for seed in range(10, 20):
        rng = np.random.default_rng(seed)
        m = int(rng.integers(2, 7))
        v = _random_round(rng, 300, m, rng.uniform(0.0, 0.6))
        data = v.T.astype(float)
        data[data == -1] = np.nan
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert abs(krippendorff_alpha_nominal(v) - ref) < 1e-9


def test_input_validation():
    with pytest.raises(ValueError):
        fleiss_kappa(np.array([[2, 0]], dtype=np.int8))
    with pytest.raises(ValueError):
        pairwise_agreement(np.zeros((3, 2, 2), dtype=np.int8))


def test_agreement_summary_shape_and_values():
    rng = np.random.default_rng(7)
    votes = np.stack([_random_round(rng, 500, 3, 0.2), _random_round(rng, 500, 3, 0.1)], axis=2)
    members = ["gpt", "claude", "gemini"]
    out = agreement_summary(votes, members)
    assert set(out) == {"round1", "round2"}
    for k, key in enumerate(("round1", "round2")):
        rnd = out[key]
        assert set(rnd) == {"fleiss_kappa", "krippendorff_alpha", "pairs"}
        assert list(rnd["pairs"]) == ["gpt|claude", "gpt|gemini", "claude|gemini"]
        vk = votes[:, :, k]
        assert rnd["fleiss_kappa"] == round(fleiss_kappa(vk), 6)
        assert rnd["krippendorff_alpha"] == round(krippendorff_alpha_nominal(vk), 6)
        agree, n = pairwise_agreement(vk)
        kappa = cohens_kappa_pairs(vk)
        pair = rnd["pairs"]["gpt|gemini"]
        assert pair == {
            "percent_agreement": round(float(agree[0, 2]), 6),
            "cohens_kappa": round(float(kappa[0, 2]), 6),
            "n": int(n[0, 2]),
        }
        assert type(pair["n"]) is int and type(pair["cohens_kappa"]) is float


def test_agreement_summary_nan_becomes_none():
    votes = np.full((4, 2, 2), -1, dtype=np.int8)
    votes[:, 0, :] = 1
    out = agreement_summary(votes, ["a", "b"])
    assert out["round1"] == {
        "fleiss_kappa": None,
        "krippendorff_alpha": None,
        "pairs": {"a|b": {"percent_agreement": None, "cohens_kappa": None, "n": 0}},
    }
    with pytest.raises(ValueError):
        agreement_summary(votes, ["a"])
    with pytest.raises(ValueError):
        agreement_summary(votes, ["a", "a"])
