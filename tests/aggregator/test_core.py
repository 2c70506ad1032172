"""Tests for the aggregator maths.

Two kinds: hand-worked examples whose expected numbers are derived in the
comments, and seeded randomized comparisons against deliberately naive
pure-Python loops written straight from the metric definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator import (
    CORRECT,
    INCORRECT,
    MISSING,
    Consensus,
    accuracy_against,
    agreement,
    agreement_lift,
    consensus,
    consensus_flip_rate,
    deliberation_impact,
    deliberation_summary,
    group_scores,
    member_accuracy,
    member_flips,
    tally,
    unanimity_lift,
)

_ = MISSING  # short alias for the tables below

# ---------------------------------------------------------------------------
# Hand-worked example: 6 rows, 5 members (A..E), quorum 3.
#
#            round one               round two
# row 0:  A1 B1 C1 D0 E0      A1 B1 C1 D1 E1   D and E flip 0->1; R2 unanimous
# row 1:  A1 B1 C0 D0 E_      A1 B1 C1 D0 E_   E excluded -> even panel of 4;
#                                              R1 is a 2-2 tie; C flips 0->1
# row 2:  A1 B_ C_ D_ E1      A1 B_ C_ D_ E1   only 2 valid votes -> no quorum
# row 3:  A0 B0 C_ D0 E_      A0 B0 C0 D0 E_   only change: C missing -> vote
# row 4:  all missing         all missing      n == 0
# row 5:  A1 B1 C0 D1 E1      A0 B_ C0 D0 E1   A, D flip 1->0; B becomes invalid
# ---------------------------------------------------------------------------
ROUND1 = [
    [1, 1, 1, 0, 0],
    [1, 1, 0, 0, _],
    [1, _, _, _, 1],
    [0, 0, _, 0, _],
    [_, _, _, _, _],
    [1, 1, 0, 1, 1],
]
ROUND2 = [
    [1, 1, 1, 1, 1],
    [1, 1, 1, 0, _],
    [1, _, _, _, 1],
    [0, 0, 0, 0, _],
    [_, _, _, _, _],
    [0, _, 0, 0, 1],
]
MEMBERS = ["A", "B", "C", "D", "E"]


def hand_votes() -> np.ndarray:
    return np.stack([np.array(ROUND1), np.array(ROUND2)], axis=2).astype(np.int8)


def test_codes():
    assert (MISSING, INCORRECT, CORRECT) == (-1, 0, 1)


def test_hand_tally():
    v = hand_votes()
    # round one: y = correct votes, n = valid votes
    # row0 3/5, row1 2/4, row2 2/2, row3 0/3, row4 0/0, row5 4/5
    y1, n1 = tally(v[:, :, 0])
    assert y1.tolist() == [3, 2, 2, 0, 0, 4]
    assert n1.tolist() == [5, 4, 2, 3, 0, 5]
    # round two: row0 5/5, row1 3/4, row2 2/2, row3 0/4, row4 0/0, row5 1/4
    y2, n2 = tally(v[:, :, 1])
    assert y2.tolist() == [5, 3, 2, 0, 0, 1]
    assert n2.tolist() == [5, 4, 2, 4, 0, 4]
    assert np.issubdtype(y1.dtype, np.integer) and np.issubdtype(n1.dtype, np.integer)


def test_hand_consensus_quorum_3():
    c = consensus(hand_votes())
    assert isinstance(c, Consensus)
    for field in (c.verdict, c.tie, c.no_quorum, c.y, c.n):
        assert field.shape == (6, 2)
    assert c.verdict.dtype == np.int8
    with pytest.raises(AttributeError):  # frozen
        c.verdict = c.verdict
    assert c.tie.dtype == bool and c.no_quorum.dtype == bool
    # R1: row0 3>2 ->1; row1 2-2 tie ->0; row2 n=2<3 ->0; row3 0>3 no ->0;
    #     row4 n=0 ->0; row5 4>1 ->1
    # R2: row0 5>0 ->1; row1 3>1 ->1; row2 no quorum ->0; row3 ->0; row4 ->0;
    #     row5 1>3 no ->0
    assert c.verdict[:, 0].tolist() == [1, 0, 0, 0, 0, 1]
    assert c.verdict[:, 1].tolist() == [1, 1, 0, 0, 0, 0]
    # the only tie is row 1 in round one (2 vs 2 with n=4 >= 3)
    assert c.tie[:, 0].tolist() == [False, True, False, False, False, False]
    assert not c.tie[:, 1].any()
    # rows 2 (n=2) and 4 (n=0) lack quorum in both rounds
    assert c.no_quorum[:, 0].tolist() == [False, False, True, False, True, False]
    assert c.no_quorum[:, 1].tolist() == [False, False, True, False, True, False]
    assert c.y.tolist() == [[3, 5], [2, 3], [2, 2], [0, 0], [0, 0], [4, 1]]
    assert c.n.tolist() == [[5, 5], [4, 4], [2, 2], [3, 4], [0, 0], [5, 4]]


def test_hand_consensus_quorum_respected():
    v = hand_votes()
    # quorum 2: row 2 (2 of 2 correct) now has quorum -> verdict 1 both rounds;
    # only row 4 (n=0) lacks quorum.
    c2 = consensus(v, quorum=2)
    assert c2.verdict[:, 0].tolist() == [1, 0, 1, 0, 0, 1]
    assert c2.verdict[:, 1].tolist() == [1, 1, 1, 0, 0, 0]
    assert c2.no_quorum[:, 0].tolist() == [False, False, False, False, True, False]
    # quorum 5: only rows with all 5 votes count. R1 rows 0, 5; R2 row 0.
    # Row 1 (n=4) is no longer a tie but a no-quorum row.
    c5 = consensus(v, quorum=5)
    assert c5.verdict[:, 0].tolist() == [1, 0, 0, 0, 0, 1]
    assert c5.verdict[:, 1].tolist() == [1, 0, 0, 0, 0, 0]
    assert not c5.tie.any()
    assert c5.no_quorum[:, 0].tolist() == [False, True, True, True, True, False]
    assert c5.no_quorum[:, 1].tolist() == [False, True, True, True, True, True]
    # flip rate: quorum 3 -> rows 1 and 5 flip = 2/6; quorum 2 -> same rows
    # (row 2 is 1 in both rounds) = 2/6; quorum 5 -> only row 5 = 1/6.
    assert consensus_flip_rate(v) == pytest.approx(2 / 6)
    assert consensus_flip_rate(v, quorum=2) == pytest.approx(2 / 6)
    assert consensus_flip_rate(v, quorum=5) == pytest.approx(1 / 6)


def test_hand_agreement():
    a = agreement(hand_votes())
    assert a.shape == (6, 2) and a.dtype == np.float64
    # R1: 3/5, 2/4, 2/2, 3/3, NaN, 4/5 ; R2: 5/5, 3/4, 2/2, 4/4, NaN, 3/4
    expected = np.array(
        [[0.6, 1.0], [0.5, 0.75], [1.0, 1.0], [1.0, 1.0], [np.nan, np.nan], [0.8, 0.75]]
    )
    np.testing.assert_allclose(a, expected, equal_nan=True)


def test_hand_deliberation_impact():
    # Denominator: rows with a member valid in both rounds = rows 0,1,2,3,5 (5).
    # Changed: row 0 (D, E), row 1 (C), row 5 (A, D) = 3.
    # Row 3's only change is C going missing -> 0, which does not count;
    # row 5's B going 1 -> missing does not count either (A, D do).
    assert deliberation_impact(hand_votes()) == pytest.approx(3 / 5)


def test_missing_to_vote_alone_is_not_impact():
    # Row 0: C goes missing -> 1, everybody else stands pat.
    # Row 1: B goes 0 -> missing, everybody else stands pat.
    r1 = [[1, 1, _, 0], [1, 0, 1, 1]]
    r2 = [[1, 1, 1, 0], [1, _, 1, 1]]
    v = np.stack([np.array(r1), np.array(r2)], axis=2)
    assert deliberation_impact(v) == 0.0
    assert member_flips(v)["to_correct"].tolist() == [0, 0, 0, 0]
    assert member_flips(v)["to_incorrect"].tolist() == [0, 0, 0, 0]
    # consensus can still change through a new vote, which is not impact:
    # row 0 R1 y=2,n=3 ->1 ; R2 y=3,n=4 ->1 (no flip here, but agreement moves)
    assert consensus_flip_rate(v) == 0.0


def test_hand_agreement_lift():
    # Over rows with n1>0 and n2>0: rows 0,1,2,3,5.
    # mean R1 = (0.6 + 0.5 + 1 + 1 + 0.8) / 5 = 3.9 / 5 = 0.78
    # mean R2 = (1.0 + 0.75 + 1 + 1 + 0.75) / 5 = 4.5 / 5 = 0.90
    assert agreement_lift(hand_votes()) == pytest.approx(0.12)


def test_hand_unanimity_lift():
    # Over rows 0,1,2,3,5.
    # R1 unanimous: row 2 (y=n=2), row 3 (y=0) -> 2/5
    # R2 unanimous: row 0 (y=n=5), row 2, row 3 -> 3/5
    assert unanimity_lift(hand_votes()) == pytest.approx(0.2)


def test_hand_member_flips():
    f = member_flips(hand_votes())
    # valid both: A rows 0,1,2,3,5 = 5; B rows 0,1,3 = 3; C rows 0,1,5 = 3;
    #             D rows 0,1,3,5 = 4; E rows 0,2,5 = 3
    assert f["valid_both"].tolist() == [5, 3, 3, 4, 3]
    # 0->1: C row 1, D row 0, E row 0
    assert f["to_correct"].tolist() == [0, 0, 1, 1, 1]
    # 1->0: A row 5, D row 5  (B row 5 went to missing: not a flip)
    assert f["to_incorrect"].tolist() == [1, 0, 0, 1, 0]
    for arr in f.values():
        assert arr.shape == (5,) and np.issubdtype(arr.dtype, np.integer)


def test_hand_summary():
    s = deliberation_summary(hand_votes(), MEMBERS)
    assert s == {
        "deliberation_impact": pytest.approx(0.6),
        "agreement_lift": pytest.approx(0.12),
        "consensus_flip_rate": pytest.approx(1 / 3),
        "unanimity_lift": pytest.approx(0.2),
        "member_flips": {
            "A": {"to_correct": 0, "to_incorrect": 1, "valid_both": 5},
            "B": {"to_correct": 0, "to_incorrect": 0, "valid_both": 3},
            "C": {"to_correct": 1, "to_incorrect": 0, "valid_both": 3},
            "D": {"to_correct": 1, "to_incorrect": 1, "valid_both": 4},
            "E": {"to_correct": 1, "to_incorrect": 0, "valid_both": 3},
        },
        "rows": 6,
        "ties_round1": 1,
        "ties_round2": 0,
        "no_quorum_round1": 2,
        "no_quorum_round2": 2,
    }
    # plain Python types only
    assert type(s["rows"]) is int and type(s["agreement_lift"]) is float
    assert all(type(x) is int for m in s["member_flips"].values() for x in m.values())
    # quorum is passed through: with quorum 5, row 1 is no-quorum, not a tie
    s5 = deliberation_summary(hand_votes(), MEMBERS, quorum=5)
    assert s5["ties_round1"] == 0
    assert (s5["no_quorum_round1"], s5["no_quorum_round2"]) == (4, 5)
    assert s5["consensus_flip_rate"] == pytest.approx(1 / 6)


def test_summary_rejects_bad_members():
    with pytest.raises(ValueError):
        deliberation_summary(hand_votes(), MEMBERS[:4])
    with pytest.raises(ValueError):
        deliberation_summary(hand_votes(), ["A", "A", "B", "C", "D"])


GOLD = [1, 1, 0, _, 0, 0]


def test_hand_accuracy_against():
    c = consensus(hand_votes())
    # known gold: rows 0,1,2,4,5
    # R2 verdict [1,1,0,0,0,0]: all 5 known rows match -> 1.0
    assert accuracy_against(c.verdict[:, 1], GOLD) == pytest.approx(1.0)
    # R1 verdict [1,0,0,0,0,1]: rows 0,2,4 match, rows 1,5 miss -> 3/5
    assert accuracy_against(c.verdict[:, 0], GOLD) == pytest.approx(0.6)
    assert math.isnan(accuracy_against([1, 0], [_, _]))
    assert math.isnan(accuracy_against([], []))


def test_hand_member_accuracy():
    v = hand_votes()
    # round one, rows with gold known (0,1,2,4,5) and a valid vote:
    # A: r0 1=1 ok, r1 1=1 ok, r2 1!=0, r5 1!=0          -> 2/4
    # B: r0 ok, r1 ok, r5 1!=0                           -> 2/3
    # C: r0 ok, r1 0!=1, r5 0=0 ok                        -> 2/3
    # D: r0 0!=1, r1 0!=1, r5 1!=0                        -> 0/3
    # E: r0 0!=1, r2 1!=0, r5 1!=0                        -> 0/3
    np.testing.assert_allclose(member_accuracy(v[:, :, 0], GOLD), [0.5, 2 / 3, 2 / 3, 0, 0])
    # round two:
    # A: r0 ok, r1 ok, r2 1!=0, r5 0 ok                   -> 3/4
    # B: r0 ok, r1 ok                                     -> 2/2
    # C: r0 ok, r1 ok, r5 ok                              -> 3/3
    # D: r0 ok, r1 0!=1, r5 ok                            -> 2/3
    # E: r0 ok, r2 1!=0, r5 1!=0                          -> 1/3
    np.testing.assert_allclose(member_accuracy(v[:, :, 1], GOLD), [0.75, 1, 1, 2 / 3, 1 / 3])
    # a member whose only votes fall on unknown-gold rows -> NaN
    acc = member_accuracy([[1, 0], [_, 1]], [_, 1])
    # member 0 voted only on row 0 (gold unknown) -> NaN; member 1: row 1 ok -> 1.0
    assert math.isnan(acc[0]) and acc[1] == 1.0


def test_hand_group_scores():
    verdict = consensus(hand_votes()).verdict[:, 1]  # [1,1,0,0,0,0]
    group = [0, 1, 0, 1, 2, 0]
    scores, counts = group_scores(verdict, group, 4)
    # group 0 rows 0,2,5 -> 1/3; group 1 rows 1,3 -> 1/2; group 2 row 4 -> 0;
    # group 3 empty -> NaN
    assert counts.tolist() == [3, 2, 1, 0]
    np.testing.assert_allclose(scores, [1 / 3, 0.5, 0.0, np.nan], equal_nan=True)
    assert np.issubdtype(counts.dtype, np.integer)


def test_group_scores_rejects_out_of_range():
    with pytest.raises(ValueError):
        group_scores([1, 0], [0, 2], 2)
    with pytest.raises(ValueError):
        group_scores([1, 0], [0, -1], 2)
    with pytest.raises(ValueError):
        group_scores([1, 0, 1], [0, 1], 2)


# ---------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------


def test_all_missing():
    v = np.full((4, 3, 2), MISSING, dtype=np.int8)
    c = consensus(v)
    assert c.no_quorum.all() and not c.tie.any() and not c.verdict.any()
    assert np.isnan(agreement(v)).all()
    assert math.isnan(deliberation_impact(v))
    assert math.isnan(agreement_lift(v))
    assert math.isnan(unanimity_lift(v))
    assert consensus_flip_rate(v) == 0.0  # all rows are 0 in both rounds
    f = member_flips(v)
    assert [a.tolist() for a in f.values()] == [[0, 0, 0]] * 3
    s = deliberation_summary(v, ["x", "y", "z"])
    assert s["deliberation_impact"] is None
    assert s["agreement_lift"] is None and s["unanimity_lift"] is None
    assert s["no_quorum_round1"] == 4 and s["no_quorum_round2"] == 4
    assert math.isnan(accuracy_against(c.verdict[:, 1], [_] * 4))
    assert np.isnan(member_accuracy(v[:, :, 0], [1, 0, 1, 0])).all()


def test_zero_rows():
    v = np.zeros((0, 3, 2), dtype=np.int8)
    assert consensus(v).verdict.shape == (0, 2)
    assert agreement(v).shape == (0, 2)
    assert math.isnan(consensus_flip_rate(v))
    assert math.isnan(deliberation_impact(v))
    s = deliberation_summary(v, ["x", "y", "z"])
    assert s["rows"] == 0 and s["consensus_flip_rate"] is None
    scores, counts = group_scores(np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64), 2)
    assert counts.tolist() == [0, 0] and np.isnan(scores).all()


def test_rows_missing_in_one_round_only():
    # Row 0 votes only in round one, row 1 only in round two: neither has
    # votes in both rounds, so lifts are NaN and nothing has impact.
    r1 = [[1, 1, 1], [_, _, _]]
    r2 = [[_, _, _], [0, 0, 0]]
    v = np.stack([np.array(r1), np.array(r2)], axis=2)
    assert math.isnan(agreement_lift(v)) and math.isnan(unanimity_lift(v))
    assert math.isnan(deliberation_impact(v))
    # consensus: row 0 R1 = 1, R2 no quorum = 0 -> flip; row 1 0 -> 0
    assert consensus_flip_rate(v) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((3, 2), dtype=np.int8),  # no round axis
        np.zeros((3, 2, 3), dtype=np.int8),  # three rounds
        np.full((3, 2, 2), 2, dtype=np.int8),  # unknown code
        np.full((3, 2, 2), 0.5),  # not integers
    ],
)
def test_bad_votes_rejected(bad):
    with pytest.raises(ValueError):
        consensus(bad)
    with pytest.raises(ValueError):
        deliberation_impact(bad)


@pytest.mark.parametrize("quorum", [0, -1, 1.5, True])
def test_bad_quorum_rejected(quorum):
    with pytest.raises(ValueError):
        consensus(hand_votes(), quorum=quorum)


# ---------------------------------------------------------------------------
# Naive reference implementations, straight from the definitions.
# votes are nested Python lists: votes[r][m][k].
# ---------------------------------------------------------------------------


def naive_tally(rows_k):
    ys, ns = [], []
    for row in rows_k:
        y = n = 0
        for vote in row:
            if vote != -1:
                n += 1
                if vote == 1:
                    y += 1
        ys.append(y)
        ns.append(n)
    return ys, ns


def naive_round(votes, k):
    return [[member[k] for member in row] for row in votes]


def naive_consensus(votes, quorum):
    out = {"verdict": [], "tie": [], "no_quorum": [], "y": [], "n": []}
    for row in votes:
        vs, ts, qs, yy, nn = [], [], [], [], []
        for k in range(2):
            y = sum(1 for m in row if m[k] == 1)
            n = sum(1 for m in row if m[k] != -1)
            has_quorum = n >= quorum
            vs.append(1 if (has_quorum and y > n - y) else 0)
            ts.append(has_quorum and y == n - y)
            qs.append(not has_quorum)
            yy.append(y)
            nn.append(n)
        for key, val in zip(out, (vs, ts, qs, yy, nn)):
            out[key].append(val)
    return out


def naive_agreement(votes):
    out = []
    for row in votes:
        pair = []
        for k in range(2):
            y = sum(1 for m in row if m[k] == 1)
            n = sum(1 for m in row if m[k] != -1)
            pair.append(max(y, n - y) / n if n else math.nan)
        out.append(pair)
    return out


def naive_impact(votes):
    eligible = changed = 0
    for row in votes:
        any_both = any_change = False
        for m in row:
            if m[0] != -1 and m[1] != -1:
                any_both = True
                if m[0] != m[1]:
                    any_change = True
        eligible += any_both
        changed += any_change
    return changed / eligible if eligible else math.nan


def naive_lifts(votes):
    """Return (agreement_lift, unanimity_lift)."""
    a1 = a2 = u1 = u2 = 0.0
    count = 0
    for row in votes:
        y1 = sum(1 for m in row if m[0] == 1)
        n1 = sum(1 for m in row if m[0] != -1)
        y2 = sum(1 for m in row if m[1] == 1)
        n2 = sum(1 for m in row if m[1] != -1)
        if n1 == 0 or n2 == 0:
            continue
        count += 1
        a1 += max(y1, n1 - y1) / n1
        a2 += max(y2, n2 - y2) / n2
        u1 += 1 if (y1 == n1 or y1 == 0) else 0
        u2 += 1 if (y2 == n2 or y2 == 0) else 0
    if count == 0:
        return math.nan, math.nan
    return a2 / count - a1 / count, u2 / count - u1 / count


def naive_flip_rate(votes, quorum):
    if not votes:
        return math.nan
    flips = 0
    for row in votes:
        verdicts = []
        for k in range(2):
            y = sum(1 for m in row if m[k] == 1)
            n = sum(1 for m in row if m[k] != -1)
            verdicts.append(1 if n >= quorum and 2 * y > n else 0)
        flips += verdicts[0] != verdicts[1]
    return flips / len(votes)


def naive_member_flips(votes, n_members):
    to_c = [0] * n_members
    to_i = [0] * n_members
    both = [0] * n_members
    for row in votes:
        for j, (a, b) in enumerate(row):
            if a == -1 or b == -1:
                continue
            both[j] += 1
            if a == 0 and b == 1:
                to_c[j] += 1
            elif a == 1 and b == 0:
                to_i[j] += 1
    return to_c, to_i, both


def naive_group_scores(verdict, group, n_groups):
    sums = [0] * n_groups
    counts = [0] * n_groups
    for v, g in zip(verdict, group):
        sums[g] += v
        counts[g] += 1
    return [s / c if c else math.nan for s, c in zip(sums, counts)], counts


def naive_accuracy(pred, gold):
    hits = total = 0
    for p, g in zip(pred, gold):
        if g == -1:
            continue
        total += 1
        hits += p == g
    return hits / total if total else math.nan


def naive_member_accuracy(rows_k, gold):
    n_members = len(rows_k[0]) if rows_k else 0
    out = []
    for j in range(n_members):
        hits = total = 0
        for row, g in zip(rows_k, gold):
            if row[j] == -1 or g == -1:
                continue
            total += 1
            hits += row[j] == g
        out.append(hits / total if total else math.nan)
    return out


def random_votes(seed, rows=500, members=5, p_missing=0.2, p_flip=0.25):
    """Round one random; round two copies it with some flips and its own missingness.

    Also applies self-exclusion: on about 60% of rows one member is missing
    from both rounds.
    """
    rng = np.random.default_rng(seed)
    r1 = rng.integers(0, 2, size=(rows, members))
    flip = rng.random((rows, members)) < p_flip
    r2 = np.where(flip, 1 - r1, r1)
    r1 = np.where(rng.random((rows, members)) < p_missing, -1, r1)
    r2 = np.where(rng.random((rows, members)) < p_missing, -1, r2)
    excluded = rng.integers(0, members, size=rows)
    has_self = rng.random(rows) < 0.6
    idx = np.nonzero(has_self)[0]
    r1[idx, excluded[idx]] = -1
    r2[idx, excluded[idx]] = -1
    return np.stack([r1, r2], axis=2).astype(np.int8)


def _close(a, b):
    if isinstance(b, float) and math.isnan(b):
        return math.isnan(a)
    return a == pytest.approx(b, abs=1e-12)


SEEDS = [0, 1, 2, 3, 4]
CASES = [
    # (seed, rows, members, p_missing, quorum)
    *[(s, 500, 5, 0.2, 3) for s in SEEDS],
    (10, 500, 5, 0.2, 1),
    (11, 500, 5, 0.2, 4),
    (12, 500, 4, 0.5, 3),  # even panel, heavy missingness
    (13, 300, 3, 0.7, 2),  # many empty rows
    (14, 40, 6, 0.95, 3),  # almost everything missing
]


@pytest.mark.parametrize("seed,rows,members,p_missing,quorum", CASES)
def test_random_against_naive(seed, rows, members, p_missing, quorum):
    v = random_votes(seed, rows, members, p_missing)
    lst = v.tolist()

    for k in range(2):
        y, n = tally(v[:, :, k])
        ny, nn = naive_tally(naive_round(lst, k))
        assert y.tolist() == ny and n.tolist() == nn

    c = consensus(v, quorum=quorum)
    ref = naive_consensus(lst, quorum)
    assert c.verdict.tolist() == ref["verdict"]
    assert c.tie.tolist() == ref["tie"]
    assert c.no_quorum.tolist() == ref["no_quorum"]
    assert c.y.tolist() == ref["y"] and c.n.tolist() == ref["n"]

    np.testing.assert_allclose(agreement(v), np.array(naive_agreement(lst)), equal_nan=True)
    assert _close(deliberation_impact(v), naive_impact(lst))
    lift_a, lift_u = naive_lifts(lst)
    assert _close(agreement_lift(v), lift_a)
    assert _close(unanimity_lift(v), lift_u)
    assert _close(consensus_flip_rate(v, quorum=quorum), naive_flip_rate(lst, quorum))

    f = member_flips(v)
    to_c, to_i, both = naive_member_flips(lst, members)
    assert f["to_correct"].tolist() == to_c
    assert f["to_incorrect"].tolist() == to_i
    assert f["valid_both"].tolist() == both

    names = [f"m{j}" for j in range(members)]
    s = deliberation_summary(v, names, quorum=quorum)
    assert s["rows"] == rows
    assert s["ties_round1"] == sum(t[0] for t in ref["tie"])
    assert s["ties_round2"] == sum(t[1] for t in ref["tie"])
    assert s["no_quorum_round1"] == sum(q[0] for q in ref["no_quorum"])
    assert s["no_quorum_round2"] == sum(q[1] for q in ref["no_quorum"])
    for key, expected in (
        ("deliberation_impact", naive_impact(lst)),
        ("agreement_lift", lift_a),
        ("unanimity_lift", lift_u),
        ("consensus_flip_rate", naive_flip_rate(lst, quorum)),
    ):
        if math.isnan(expected):
            assert s[key] is None
        else:
            assert s[key] == pytest.approx(expected, abs=1e-12)
    for j, name in enumerate(names):
        assert s["member_flips"][name] == {
            "to_correct": to_c[j],
            "to_incorrect": to_i[j],
            "valid_both": both[j],
        }

    rng = np.random.default_rng(seed + 1000)
    gold = np.where(rng.random(rows) < 0.3, -1, rng.integers(0, 2, size=rows))
    for k in range(2):
        pred = c.verdict[:, k]
        assert _close(accuracy_against(pred, gold), naive_accuracy(pred.tolist(), gold.tolist()))
        np.testing.assert_allclose(
            member_accuracy(v[:, :, k], gold),
            np.array(naive_member_accuracy(naive_round(lst, k), gold.tolist())),
            equal_nan=True,
        )

    n_groups = 7
    group = rng.integers(0, n_groups - 1, size=rows)  # last group stays empty
    scores, counts = group_scores(c.verdict[:, 1], group, n_groups)
    ref_scores, ref_counts = naive_group_scores(c.verdict[:, 1].tolist(), group.tolist(), n_groups)
    assert counts.tolist() == ref_counts
    np.testing.assert_allclose(scores, np.array(ref_scores), equal_nan=True)
    assert math.isnan(scores[-1])


def test_random_cases_exercise_the_edges():
    """The randomized data must actually contain ties, no-quorum rows and
    missing -> vote changes, or the comparisons above prove little."""
    v = random_votes(0)
    c = consensus(v)
    assert c.tie.any() and c.no_quorum.any()
    appears = ((v[:, :, 0] == MISSING) & (v[:, :, 1] != MISSING)).any()
    flips = ((v[:, :, 0] != MISSING) & (v[:, :, 1] != MISSING) & (v[:, :, 0] != v[:, :, 1])).any()
    assert appears and flips
    heavy = random_votes(14, 40, 6, 0.95)
    assert (consensus(heavy).n == 0).any()
