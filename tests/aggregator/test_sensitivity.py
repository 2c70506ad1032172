"""Tests for grader-rule sensitivity.

A hand-worked example whose expected numbers are derived in the comments,
seeded randomized comparisons against a naive pure-Python loop written from the
rule definitions, Kendall's tau-b against scipy, and rule edge cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator._codes import MISSING
from aggregator._sensitivity import kendall_tau_b, rule_scores, sensitivity_summary

_ = MISSING

# ---------------------------------------------------------------------------
# Hand-worked example: 3 members (A, B, C), 2 models (m0, m1), quorum 2.
#
#  row model  round one   round two   council round1 without:A without:B without:C all_concur
#  0   m0     1  1  0     1  1  1     1       1      1 (BC 1,1) 1 (AC)    1 (AB)    1
#  1   m0     0  1  0     0  1  0     0       0      0 tie      0 (0,0)   0 tie     0
#  2   m0     1  _  1     1  _  0     0 tie   1      0 n=1      0 tie     0 n=1     0
#  3   m1     1  1  1     1  1  1     1       1      1          1         1         1
#  4   m1     0  0  1     0  1  1     1       0      1 (1,1)    0 tie     0 tie     0
#  5   m1     _  _  _     _  _  _     0 n=0   0      0          0         0         0 (no vote)
#
#  council:    m0 1/3, m1 2/3        round1:     m0 2/3, m1 1/3
#  single:A (round-one A, rows it voted): m0 rows 0,1,2 -> 2/3 (3);  m1 rows 3,4 -> 1/2 (2)
#  single:B:   m0 rows 0,1 -> 2/2 = 1 (2);    m1 rows 3,4 -> 1/2 (2)
#  single:C:   m0 rows 0,1,2 -> 1/3 (3);      m1 rows 3,4 -> 2/2 = 1 (2)
#  without:A:  m0 1/3, m1 2/3        without:B: m0 1/3, m1 1/3
#  without:C:  m0 1/3, m1 1/3        all_concur: m0 1/3, m1 1/3
#
#  Kendall tau vs council (1/3 < 2/3): round1 -1, single:A -1, single:B -1,
#  single:C +1, without:A +1; without:B, without:C, all_concur are constant -> NaN.
#  Top model: council m1, round1 m0, single:A m0, single:B m0, single:C m1,
#  without:A m1; the ties (without:B, without:C, all_concur) go to the earlier m0.
#  Max |change| vs council: round1 1/3, single:A max(1/3, 1/6) = 1/3,
#  single:B max(2/3, 1/6) = 2/3, single:C max(0, 1/3) = 1/3, without:A 0,
#  without:B 1/3, without:C 1/3, all_concur 1/3.
# ---------------------------------------------------------------------------
ROUND1 = [[1, 1, 0], [0, 1, 0], [1, _, 1], [1, 1, 1], [0, 0, 1], [_, _, _]]
ROUND2 = [[1, 1, 1], [0, 1, 0], [1, _, 0], [1, 1, 1], [0, 1, 1], [_, _, _]]
VOTES = np.stack([np.array(ROUND1), np.array(ROUND2)], axis=2).astype(np.int8)
MODEL = np.array([0, 0, 0, 1, 1, 1])
MEMBERS = ["A", "B", "C"]
THIRD, TWO_THIRDS = 1 / 3, 2 / 3

EXPECTED = {
    "council": ([THIRD, TWO_THIRDS], [3, 3]),
    "round1": ([TWO_THIRDS, THIRD], [3, 3]),
    "single:A": ([TWO_THIRDS, 0.5], [3, 2]),
    "single:B": ([1.0, 0.5], [2, 2]),
    "single:C": ([THIRD, 1.0], [3, 2]),
    "without:A": ([THIRD, TWO_THIRDS], [3, 3]),
    "without:B": ([THIRD, THIRD], [3, 3]),
    "without:C": ([THIRD, THIRD], [3, 3]),
    "all_concur": ([THIRD, THIRD], [3, 3]),
}


def test_hand_worked_rule_scores():
    got = rule_scores(VOTES, MODEL, 2, MEMBERS, quorum=2)
    assert list(got) == list(EXPECTED)
    for rule, (scores, counts) in EXPECTED.items():
        np.testing.assert_allclose(got[rule][0], scores, rtol=0, atol=1e-15, err_msg=rule)
        assert got[rule][1].tolist() == counts, rule


def test_hand_worked_summary():
    s = sensitivity_summary(VOTES, MODEL, ["m0", "m1"], MEMBERS, quorum=2)
    assert list(s) == ["rules", "kendall_tau_vs_council", "top_model", "max_abs_change_vs_council"]
    assert s["rules"]["council"] == {"m0": round(THIRD, 6), "m1": round(TWO_THIRDS, 6)}
    assert s["rules"]["single:B"] == {"m0": 1.0, "m1": 0.5}
    assert s["kendall_tau_vs_council"] == {
        "round1": -1.0,
        "single:A": -1.0,
        "single:B": -1.0,
        "single:C": 1.0,
        "without:A": 1.0,
        "without:B": None,
        "without:C": None,
        "all_concur": None,
    }
    assert s["top_model"] == {
        "council": "m1",
        "round1": "m0",
        "single:A": "m0",
        "single:B": "m0",
        "single:C": "m1",
        "without:A": "m1",
        "without:B": "m0",
        "without:C": "m0",
        "all_concur": "m0",
    }
    t, tt = round(THIRD, 6), round(TWO_THIRDS, 6)
    assert s["max_abs_change_vs_council"] == {
        "round1": t,
        "single:A": t,
        "single:B": tt,
        "single:C": t,
        "without:A": 0.0,
        "without:B": t,
        "without:C": t,
        "all_concur": t,
    }


# ---------------------------------------------------------------------------
# Edge cases.
# ---------------------------------------------------------------------------


def test_member_with_no_votes():
    # Member C never votes. single:C has no scored rows -> NaN scores, zero
    # counts; without:C is then the council itself.
    v = VOTES.copy()
    v[:, 2, :] = MISSING
    got = rule_scores(v, MODEL, 2, MEMBERS, quorum=2)
    assert np.isnan(got["single:C"][0]).all()
    assert got["single:C"][1].tolist() == [0, 0]
    np.testing.assert_array_equal(got["without:C"][0], got["council"][0])
    s = sensitivity_summary(v, MODEL, ["m0", "m1"], MEMBERS, quorum=2)
    assert s["rules"]["single:C"] == {"m0": None, "m1": None}
    assert s["top_model"]["single:C"] is None
    assert s["kendall_tau_vs_council"]["single:C"] is None
    assert s["max_abs_change_vs_council"]["single:C"] is None


def test_all_concur_with_missing_votes():
    # row 0: 1 _ 1 -> every valid vote correct -> 1
    # row 1: 1 _ 0 -> 0
    # row 2: _ _ 1 -> a single valid correct vote -> 1
    # row 3: _ _ _ -> no valid vote -> 0 (still scored)
    # row 4: 0 0 0 -> 0
    r2 = np.array([[1, _, 1], [1, _, 0], [_, _, 1], [_, _, _], [0, 0, 0]])
    v = np.stack([r2, r2], axis=2).astype(np.int8)
    scores, counts = rule_scores(v, np.zeros(5, dtype=int), 1, MEMBERS, quorum=1)["all_concur"]
    assert scores.tolist() == [2 / 5] and counts.tolist() == [5]


def test_model_without_rows_and_single_model():
    # Model 2 has no rows: NaN under every rule, 0 counts.
    got = rule_scores(VOTES, MODEL, 3, MEMBERS, quorum=2)
    for scores, counts in got.values():
        assert math.isnan(scores[2]) and counts[2] == 0
    s = sensitivity_summary(VOTES, MODEL, ["m0", "m1", "m2"], MEMBERS, quorum=2)
    assert s["rules"]["council"]["m2"] is None
    # The tau is computed over the two models scored under both rules.
    assert s["kendall_tau_vs_council"]["round1"] == -1.0


def test_input_checks():
    with pytest.raises(ValueError):
        rule_scores(VOTES, MODEL[:5], 2, MEMBERS)
    with pytest.raises(ValueError):
        rule_scores(VOTES, MODEL, 1, MEMBERS)  # model index 1 out of range
    with pytest.raises(ValueError):
        rule_scores(VOTES, MODEL, 2, ["A", "B"])
    with pytest.raises(ValueError):
        rule_scores(VOTES, MODEL, 2, ["A", "A", "B"])
    with pytest.raises(ValueError):
        rule_scores(VOTES, MODEL, 2, MEMBERS, quorum=0)
    with pytest.raises(ValueError):
        sensitivity_summary(VOTES, MODEL, ["m0", "m0"], MEMBERS)


# ---------------------------------------------------------------------------
# Kendall's tau-b.
# ---------------------------------------------------------------------------


def test_kendall_hand_worked():
    # x = 1 2 3 4, y = 1 3 2 4: pairs (2,3) discordant, the other 5 concordant
    # -> (5 - 1) / 6 = 2/3.
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3, abs=1e-15)
    # x = 1 1 2, y = 1 2 3: pairs (0,1) tied in x, (0,2), (1,2) concordant.
    # tau-b = 2 / sqrt((3 - 1) * (3 - 0)) = 2 / sqrt(6).
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6), abs=1e-15)
    # NaN entries are dropped pairwise: leaves x = 1 2 3, y = 3 2 1 -> -1.
    assert kendall_tau_b([1, np.nan, 2, 3, 9], [3, 0, 2, 1, np.nan]) == -1.0
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))  # constant x
    assert math.isnan(kendall_tau_b([1.0], [2.0]))
    assert math.isnan(kendall_tau_b([], []))
    assert kendall_tau_b([-np.inf, 0, np.inf], [1, 2, 3]) == 1.0
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2], [1, 2, 3])


@pytest.mark.parametrize("seed", range(10))
def test_kendall_against_scipy(seed):
    from scipy.stats import kendalltau

    rng = np.random.default_rng(seed)
    for _trial in range(30):
        n = int(rng.integers(2, 25))
        if rng.random() < 0.5:
            # Heavy ties, as leaderboards of per-model means over few items have.
            x = rng.integers(0, 4, n) / 4
            y = rng.integers(0, 4, n) / 4
        else:
            x = rng.random(n)
            y = x + rng.normal(0, 0.3, n)
        x[rng.random(n) < 0.1] = np.nan
        y[rng.random(n) < 0.1] = np.nan
        keep = ~(np.isnan(x) | np.isnan(y))
        got = kendall_tau_b(x, y)
        if keep.sum() < 2:
            assert math.isnan(got)
            continue
        ref = kendalltau(x[keep], y[keep], variant="b").statistic
        if math.isnan(ref):
            assert math.isnan(got)
        else:
            assert abs(got - ref) <= 1e-12


# ---------------------------------------------------------------------------
# Randomized comparison against a naive loop over the rule definitions.
# ---------------------------------------------------------------------------


def _random_votes(seed: int, rows: int = 300, members: int = 5, missing: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 2, size=(rows, members, 2)).astype(np.int8)
    keep = rng.random((rows, members)) < 0.7
    v[:, :, 1] = np.where(keep, v[:, :, 0], v[:, :, 1])
    v[rng.random(v.shape) < missing] = MISSING
    return v


def _majority(votes, quorum):
    valid = [int(x) for x in votes if x != MISSING]
    yes = sum(valid)
    return 1 if len(valid) >= quorum and yes > len(valid) - yes else 0


def _naive_rule_scores(v, model, n_models, members, quorum):
    rows, m, _r = v.shape
    per_rule: dict[str, list[list[int]]] = {}

    def add(rule, mdl, verdict):
        per_rule.setdefault(rule, [[] for _ in range(n_models)])[mdl].append(verdict)

    for r in range(rows):
        mdl = int(model[r])
        add("council", mdl, _majority(v[r, :, 1], quorum))
        add("round1", mdl, _majority(v[r, :, 0], quorum))
        for j, name in enumerate(members):
            per_rule.setdefault(f"single:{name}", [[] for _ in range(n_models)])
            if v[r, j, 0] != MISSING:
                add(f"single:{name}", mdl, int(v[r, j, 0]))
        for j, name in enumerate(members):
            others = [v[r, p, 1] for p in range(m) if p != j]
            add(f"without:{name}", mdl, _majority(others, quorum))
        valid = [int(x) for x in v[r, :, 1] if x != MISSING]
        add("all_concur", mdl, 1 if valid and all(x == 1 for x in valid) else 0)
    return {
        rule: (
            [sum(g) / len(g) if g else math.nan for g in groups],
            [len(g) for g in groups],
        )
        for rule, groups in per_rule.items()
    }


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_randomized_against_naive(seed):
    from scipy.stats import kendalltau

    v = _random_votes(seed)
    rng = np.random.default_rng(100 + seed)
    n_models = 4
    model = rng.integers(0, n_models, v.shape[0])
    members = ["a", "b", "c", "d", "e"]
    if seed == 4:
        v[:, 1, 0] = MISSING  # member b never votes in round one
    expected = _naive_rule_scores(v, model, n_models, members, 3)
    got = rule_scores(v, model, n_models, members, quorum=3)
    assert list(got) == (
        ["council", "round1"] + [f"single:{x}" for x in members] + [f"without:{x}" for x in members] + ["all_concur"]
    )
    for rule, (scores, counts) in expected.items():
        np.testing.assert_allclose(got[rule][0], scores, rtol=0, atol=1e-12, err_msg=rule)
        assert got[rule][1].tolist() == counts, rule

    names = ["m0", "m1", "m2", "m3"]
    s = sensitivity_summary(v, model, names, members, quorum=3)
    council = np.array(expected["council"][0])
    for rule, (scores, _counts) in expected.items():
        sc = np.array(scores)
        assert s["rules"][rule] == {
            n: (None if math.isnan(x) else round(x, 6)) for n, x in zip(names, scores)
        }
        if rule == "council":
            continue
        keep = ~(np.isnan(sc) | np.isnan(council))
        ref = kendalltau(sc[keep], council[keep]).statistic if keep.sum() >= 2 else math.nan
        got_tau = s["kendall_tau_vs_council"][rule]
        assert (got_tau is None) == math.isnan(ref)
        if got_tau is not None:
            assert got_tau == pytest.approx(ref, abs=1e-6)
        if keep.any():
            assert s["max_abs_change_vs_council"][rule] == pytest.approx(
                np.abs(sc[keep] - council[keep]).max(), abs=1e-6
            )
        if not np.isnan(sc).all():
            best = max(range(n_models), key=lambda i: (-math.inf if math.isnan(sc[i]) else sc[i], -i))
            assert s["top_model"][rule] == names[best]
