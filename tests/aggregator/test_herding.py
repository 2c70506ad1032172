"""Tests for the herding diagnostics.

A hand-worked example whose expected numbers are derived in the comments, and
seeded randomized comparisons against naive pure-Python loops written straight
from the definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator._codes import MISSING
from aggregator._deliberation import agreement_lift
from aggregator._herding import classify_flips, herding_summary, weak_majority_lift

_ = MISSING
MEMBERS = ["A", "B", "C", "D", "E"]

# ---------------------------------------------------------------------------
# Hand-worked example: 11 rows, 5 members (A..E).
#
# "peers" = the other members' valid round-one votes; maj = their strict majority.
#
#            round one        round two
# row 0:  1  1  1  1  0     1  1  1  1  1   E 0->1, peers 4:0 for 1 -> conforming
# row 1:  1  1  0  0  _     1  1  1  0  _   C 0->1, peers A1 B1 D0 (2:1 for 1) -> conforming
# row 2:  1  1  1  1  0     0  1  1  1  0   A 1->0, peers 3:1 for 1 -> dissenting
# row 3:  1  1  0  0  1     0  1  0  0  _   A 1->0, peers B1 C0 D0 E1 tie -> unaligned;
#                                           E vote -> missing is not a flip
# row 4:  1  _  _  _  _     0  _  _  _  1   A 1->0, no peer votes -> unaligned;
#                                           E missing -> vote is not a flip
# row 5:  0  0  1  _  _     0  0  0  _  _   C 1->0, peers 2:0 for 0 -> conforming
# row 6:  0  1  _  _  _     1  0  _  _  _   A 0->1 (peer B1) and B 1->0 (peer A0):
#                                           both conforming (they swap)
# row 7:  0  0  0  1  _     0  0  0  1  _   no flips
# row 8:  0  0  0  0  0     0  0  0  0  1   E 0->1, peers 4:0 for 0 -> dissenting
# row 9:  all missing       all missing
# row 10: 1  1  _  _  _     all missing     no flips (round two missing)
#
# Per member (conforming, dissenting, unaligned, share = conf / (conf + diss)):
#   A: row 6 / row 2 / rows 3, 4  -> 1, 1, 2, 0.5
#   B: row 6                      -> 1, 0, 0, 1.0
#   C: rows 1, 5                  -> 2, 0, 0, 1.0
#   D: never flips                -> 0, 0, 0, NaN
#   E: row 0 / row 8              -> 1, 1, 0, 0.5
#   overall: 5 / (5 + 2) = 5/7
#
# Agreement split (rows with votes in both rounds: 0..8, N = 9):
#   row  y1 n1 |2y1-n1|  agr1   y2 n2  agr2  diff
#   0    4  5  3 strong  4/5    5  5   1     +1/5
#   1    2  4  0 weak    1/2    3  4   3/4   +1/4
#   2    4  5  3 strong  4/5    3  5   3/5   -1/5
#   3    3  5  1 weak    3/5    1  4   3/4   +3/20
#   4    1  1  1 weak    1      1  2   1/2   -1/2
#   5    1  3  1 weak    2/3    0  3   1     +1/3
#   6    1  2  0 weak    1/2    1  2   1/2   0
#   7    1  4  2 strong  3/4    1  4   3/4   0
#   8    0  5  5 strong  1      1  5   4/5   -1/5
#   weak rows 1,3,4,5,6: sum = 1/4 + 3/20 - 1/2 + 1/3 + 0 = 7/30
#     -> agreement_lift_weak = (7/30) / 9 = 7/270, mean_lift_weak_rows = (7/30) / 5 = 7/150
#   strong rows 0,2,7,8: sum = 1/5 - 1/5 + 0 - 1/5 = -1/5 -> agreement_lift_strong = -1/45
#   agreement_lift = 7/270 - 6/270 = 1/270
# ---------------------------------------------------------------------------
ROUND1 = [
    [1, 1, 1, 1, 0],
    [1, 1, 0, 0, _],
    [1, 1, 1, 1, 0],
    [1, 1, 0, 0, 1],
    [1, _, _, _, _],
    [0, 0, 1, _, _],
    [0, 1, _, _, _],
    [0, 0, 0, 1, _],
    [0, 0, 0, 0, 0],
    [_, _, _, _, _],
    [1, 1, _, _, _],
]
ROUND2 = [
    [1, 1, 1, 1, 1],
    [1, 1, 1, 0, _],
    [0, 1, 1, 1, 0],
    [0, 1, 0, 0, _],
    [0, _, _, _, 1],
    [0, 0, 0, _, _],
    [1, 0, _, _, _],
    [0, 0, 0, 1, _],
    [0, 0, 0, 0, 1],
    [_, _, _, _, _],
    [_, _, _, _, _],
]
VOTES = np.stack([np.array(ROUND1), np.array(ROUND2)], axis=2).astype(np.int8)


def test_hand_worked_flips():
    f = classify_flips(VOTES)
    assert f["conforming"].tolist() == [1, 1, 2, 0, 1]
    assert f["dissenting"].tolist() == [1, 0, 0, 0, 1]
    assert f["unaligned"].tolist() == [2, 0, 0, 0, 0]
    np.testing.assert_allclose(f["conformity_share"], [0.5, 1.0, 1.0, np.nan, 0.5])
    for key in ("conforming", "dissenting", "unaligned"):
        assert f[key].shape == (5,) and np.issubdtype(f[key].dtype, np.integer)


def test_hand_worked_weak_lift():
    w = weak_majority_lift(VOTES)
    assert w["weak_rows"] == 5 and w["strong_rows"] == 4
    assert w["agreement_lift_weak"] == pytest.approx(7 / 270, abs=1e-15)
    assert w["agreement_lift_strong"] == pytest.approx(-1 / 45, abs=1e-15)
    assert w["mean_lift_weak_rows"] == pytest.approx(7 / 150, abs=1e-15)
    assert agreement_lift(VOTES) == pytest.approx(1 / 270, abs=1e-15)
    assert w["agreement_lift_weak"] + w["agreement_lift_strong"] == pytest.approx(agreement_lift(VOTES), abs=1e-15)


def test_hand_worked_summary():
    s = herding_summary(VOTES, MEMBERS)
    assert s["flips"]["A"] == {"conforming": 1, "dissenting": 1, "unaligned": 2, "conformity_share": 0.5}
    assert s["flips"]["D"] == {"conforming": 0, "dissenting": 0, "unaligned": 0, "conformity_share": None}
    assert s["conformity_share_overall"] == round(5 / 7, 6)
    assert s["agreement_lift_weak"] == round(7 / 270, 6)
    assert s["agreement_lift_strong"] == round(-1 / 45, 6)
    assert s["weak_rows"] == 5 and s["strong_rows"] == 4
    assert s["mean_lift_weak_rows"] == round(7 / 150, 6)
    assert list(s) == [
        "flips",
        "conformity_share_overall",
        "agreement_lift_weak",
        "agreement_lift_strong",
        "weak_rows",
        "strong_rows",
        "mean_lift_weak_rows",
    ]
    assert list(s["flips"]) == MEMBERS


def test_empty_and_degenerate():
    empty = np.zeros((0, 3, 2), dtype=np.int8)
    f = classify_flips(empty)
    assert f["conforming"].tolist() == [0, 0, 0]
    assert np.isnan(f["conformity_share"]).all()
    w = weak_majority_lift(empty)
    assert math.isnan(w["agreement_lift_weak"]) and math.isnan(w["agreement_lift_strong"])
    assert math.isnan(w["mean_lift_weak_rows"])
    assert w["weak_rows"] == 0 and w["strong_rows"] == 0
    s = herding_summary(empty, ["a", "b", "c"])
    assert s["conformity_share_overall"] is None and s["agreement_lift_weak"] is None

    # Only strong rows: the weak part is 0 (not NaN) and its mean is NaN.
    strong = np.array([[[1, 1], [1, 1], [1, 0]]], dtype=np.int8)  # 3:0 in round one
    w = weak_majority_lift(strong)
    assert w["weak_rows"] == 0 and w["strong_rows"] == 1
    assert w["agreement_lift_weak"] == 0.0 and math.isnan(w["mean_lift_weak_rows"])
    assert w["agreement_lift_strong"] == pytest.approx(2 / 3 - 1)


def test_member_name_checks():
    with pytest.raises(ValueError):
        herding_summary(VOTES, MEMBERS[:4])
    with pytest.raises(ValueError):
        herding_summary(VOTES, ["A", "A", "B", "C", "D"])
    with pytest.raises(ValueError):
        classify_flips(np.full((2, 3, 2), 2, dtype=np.int8))


# ---------------------------------------------------------------------------
# Randomized comparison against naive loops.
# ---------------------------------------------------------------------------


def _random_votes(seed: int, rows: int = 300, members: int = 5, missing: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 2, size=(rows, members, 2)).astype(np.int8)
    # Round two keeps round one's vote most of the time, so flips are a minority.
    keep = rng.random((rows, members)) < 0.7
    v[:, :, 1] = np.where(keep, v[:, :, 0], v[:, :, 1])
    v[rng.random(v.shape) < missing] = MISSING
    return v


def _naive_flips(v: np.ndarray):
    rows, members, _r = v.shape
    conf, diss, unal = [0] * members, [0] * members, [0] * members
    for r in range(rows):
        for m in range(members):
            a, b = int(v[r, m, 0]), int(v[r, m, 1])
            if a == MISSING or b == MISSING or a == b:
                continue
            peers = [int(v[r, p, 0]) for p in range(members) if p != m and v[r, p, 0] != MISSING]
            yes = sum(1 for x in peers if x == 1)
            no = len(peers) - yes
            if yes == no:
                unal[m] += 1
            elif (1 if yes > no else 0) == b:
                conf[m] += 1
            else:
                diss[m] += 1
    share = [c / (c + d) if c + d else math.nan for c, d in zip(conf, diss)]
    return conf, diss, unal, share


def _naive_weak(v: np.ndarray):
    weak_diffs, strong_diffs = [], []
    for r in range(v.shape[0]):
        tallies = []
        for k in (0, 1):
            valid = [int(x) for x in v[r, :, k] if x != MISSING]
            tallies.append((sum(valid), len(valid)))
        (y1, n1), (y2, n2) = tallies
        if n1 == 0 or n2 == 0:
            continue
        diff = max(y2, n2 - y2) / n2 - max(y1, n1 - y1) / n1
        (weak_diffs if abs(2 * y1 - n1) <= 1 else strong_diffs).append(diff)
    total = len(weak_diffs) + len(strong_diffs)
    return {
        "agreement_lift_weak": sum(weak_diffs) / total if total else math.nan,
        "agreement_lift_strong": sum(strong_diffs) / total if total else math.nan,
        "weak_rows": len(weak_diffs),
        "strong_rows": len(strong_diffs),
        "mean_lift_weak_rows": sum(weak_diffs) / len(weak_diffs) if weak_diffs else math.nan,
    }


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_randomized_flips_against_naive(seed):
    v = _random_votes(seed)
    conf, diss, unal, share = _naive_flips(v)
    f = classify_flips(v)
    assert f["conforming"].tolist() == conf
    assert f["dissenting"].tolist() == diss
    assert f["unaligned"].tolist() == unal
    np.testing.assert_allclose(f["conformity_share"], share, rtol=0, atol=1e-12)
    assert sum(conf) + sum(diss) + sum(unal) > 0


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_randomized_weak_lift_against_naive(seed):
    v = _random_votes(seed)
    expected = _naive_weak(v)
    got = weak_majority_lift(v)
    assert got["weak_rows"] == expected["weak_rows"]
    assert got["strong_rows"] == expected["strong_rows"]
    for key in ("agreement_lift_weak", "agreement_lift_strong", "mean_lift_weak_rows"):
        assert got[key] == pytest.approx(expected[key], abs=1e-12)
    # The two parts add up to agreement_lift.
    assert got["agreement_lift_weak"] + got["agreement_lift_strong"] == pytest.approx(agreement_lift(v), abs=1e-12)


@pytest.mark.parametrize("seed", [5, 6])
def test_randomized_summary_matches_arrays(seed):
    v = _random_votes(seed, members=4)
    names = ["w", "x", "y", "z"]
    s = herding_summary(v, names)
    conf, diss, unal, share = _naive_flips(v)
    for j, name in enumerate(names):
        assert s["flips"][name]["conforming"] == conf[j]
        assert s["flips"][name]["dissenting"] == diss[j]
        assert s["flips"][name]["unaligned"] == unal[j]
        assert s["flips"][name]["conformity_share"] == round(share[j], 6)
    assert s["conformity_share_overall"] == round(sum(conf) / (sum(conf) + sum(diss)), 6)
