"""The self-preference audit (``aggregator.self_preference``): the shadow judge against the same panel's members
one at a time, on its own vendor's rows and on the others', by hand and against a plain loop."""

from __future__ import annotations

import numpy as np
import pytest

import aggregator as agg
from aggregator import MISSING
from aggregator._bootstrap import resample_weights

_ = MISSING  # a missing vote, short for the tables below


def test_by_hand_against_each_member_on_own_and_other_rows():
    """Members x, y, z. Rows 0-3 are x's vendor's: x sits out, its shadow votes 1 1 1 0 (3/4 correct), y votes
    1 0 1 0 (2/4), z 1 1 0 0 (2/4): own-rows leniency +1/4 against each, mean 1/4. Rows 4-7 are a vendor with
    no seat: x votes 1 1 0 0 (2/4), y 1 0 0 0 (1/4), z 1 1 0 0 (2/4): other-rows leniency +1/4 and 0, mean
    1/8. Self-preference = 1/4 - 1/8 = 1/8. Against the consensus of y and z (correct on rows 0 only with a
    strict majority: 1/4) the shadow judge would read +1/2."""
    shadow = np.array([1, 1, 1, 0, _, _, _, _])
    votes = np.array([[_, 1, 1], [_, 0, 1], [_, 1, 0], [_, 0, 0],
                      [1, 1, 1], [1, 0, 1], [0, 0, 0], [0, 0, 0]], dtype=np.int8)
    gold = np.array([1, 0, 1, 0, 1, 0, 0, 0], dtype=np.int8)
    group = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    out = agg.self_preference(shadow, votes, gold, group, np.array([0, -1]), np.arange(8), 8, ["x", "y", "z"],
                              n_resamples=200)
    assert out[1] is None  # no seat, no shadow judge
    a = out[0]
    assert (a["judge"], a["rows"], a["rows_other"]) == ("x", 4, 4)
    assert a["shadow_correct_rate"] == 0.75
    assert a["leniency_own"] == {"mean": 0.25, "members": {"y": 0.25, "z": 0.25}}
    assert a["leniency_other"] == {"mean": 0.125, "members": {"y": 0.25, "z": 0.0}}
    assert a["leniency_gap"]["value"] == 0.125 and a["leniency_gap"]["members"] == 2
    assert a["leniency_gap"]["ci_low"] <= 0.125 <= a["leniency_gap"]["ci_high"]
    # Wrong answers by gold: x's vendor's rows 1, 3 (the shadow calls 1 of 2 correct), the others' rows 5-7
    # (x calls 1 of 3 correct): 1/2 - 1/3.
    wrong = a["self_preference"]
    assert (wrong["own"], wrong["other"], wrong["rows_own"], wrong["rows_other"]) == (0.5, round(1 / 3, 6), 2, 3)
    assert wrong["value"] == round(1 / 2 - 1 / 3, 6) and wrong["rows_own_by_gold"] == 2
    # Without gold a wrong answer is one the other members' blind majority calls incorrect: y and z agree on
    # incorrect on row 3 (shadow: incorrect) and rows 6, 7 (x: incorrect, incorrect); rows 1, 2 and 5 are ties.
    blind = agg.self_preference(shadow, votes, np.full(8, MISSING), group, np.array([0, -1]), np.arange(8), 8,
                                ["x", "y", "z"], n_resamples=200)[0]["self_preference"]
    assert (blind["own"], blind["other"], blind["rows_own"], blind["rows_other"], blind["value"]) == (0.0, 0.0, 1, 2,
                                                                                                       0.0)


@pytest.mark.parametrize("seed", [0, 5])
def test_self_preference_equals_a_plain_loop(seed):
    """Point and interval against a loop over the rows with the bootstrap's own count vectors."""
    rng = np.random.default_rng(seed)
    n_items, per_item, n_res = 25, 3, 200
    rows = n_items * per_item
    item = np.repeat(np.arange(n_items), per_item)
    group = np.tile(np.arange(per_item), n_items)  # group g: member g's vendor (group 2: no seat)
    votes = rng.integers(0, 2, (rows, 3)).astype(np.int8)
    votes[rng.random((rows, 3)) < 0.1] = MISSING
    votes[group == 0, 0] = MISSING
    votes[group == 1, 1] = MISSING
    shadow = np.where(group == 0, rng.integers(0, 2, rows), MISSING)
    judges = np.array([0, -1, -1])
    out = agg.self_preference(shadow, votes, np.full(rows, MISSING), group, judges, item, n_items, ["j", "k", "l"],
                              n_resamples=n_res, seed=seed)
    weights = resample_weights(n_items, n_res, seed)

    def rate(rows_, vote, w):
        den = sum(w[item[r]] for r in rows_)
        return sum(w[item[r]] * (vote[r] == 1) for r in rows_) / den if den else float("nan")

    def figure(w):
        per = []
        for k in (1, 2):
            own = [r for r in range(rows) if group[r] == 0 and shadow[r] != MISSING and votes[r, k] != MISSING]
            other = [r for r in range(rows) if group[r] != 0 and votes[r, 0] != MISSING and votes[r, k] != MISSING]
            per.append((rate(own, shadow, w) - rate(own, votes[:, k], w))
                       - (rate(other, votes[:, 0], w) - rate(other, votes[:, k], w)))
        return sum(per) / len(per)

    def wrong_answers(w):  # no gold: wrong where the other members' blind majority says incorrect
        wrong = [(votes[r, 1:] == 0).sum() > (votes[r, 1:] == 1).sum() for r in range(rows)]
        own = [r for r in range(rows) if wrong[r] and group[r] == 0 and shadow[r] != MISSING]
        other = [r for r in range(rows) if wrong[r] and group[r] != 0 and votes[r, 0] != MISSING]
        return rate(own, shadow, w) - rate(other, votes[:, 0], w)

    for key, stat in (("leniency_gap", figure), ("self_preference", wrong_answers)):
        samples = [stat(w) for w in weights]
        samples = [x for x in samples if x == x]
        got = out[0][key]
        assert got["value"] == pytest.approx(stat(np.ones(n_items)), abs=1e-6), key
        assert got["ci_low"] == pytest.approx(np.percentile(samples, 2.5), abs=1e-6), key
        assert got["ci_high"] == pytest.approx(np.percentile(samples, 97.5), abs=1e-6), key
