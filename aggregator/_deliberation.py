"""Deliberation metrics: what round two changed relative to round one.

All functions take a (R, M, 2) vote array (see ``_codes``). Rates whose
denominator is empty are NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ._codes import CORRECT, INCORRECT, MISSING, as_votes, check_quorum
from ._consensus import _tally_both, consensus


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise num / den as float, NaN where den == 0."""
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _mean_or_nan(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else math.nan


def agreement(votes) -> np.ndarray:
    """Share of valid votes on the majority side, max(y, n - y) / n.

    Returns a float array of shape (R, 2); NaN where n == 0.
    """
    y, n = _tally_both(as_votes(votes))
    return _ratio(np.maximum(y, n - y), n)


def _both_valid(v: np.ndarray) -> np.ndarray:
    """(R, M) bool: the member voted validly in both rounds."""
    return (v != MISSING).all(axis=2)


def deliberation_impact(votes) -> float:
    """Fraction of rows where a member changed its verdict between rounds.

    Only members with a valid vote in both rounds count, so a member going
    from missing to a vote (or back) is not a change. Denominator: rows with
    at least one member valid in both rounds; NaN if there are none.
    """
    v = as_votes(votes)
    both = _both_valid(v)
    changed = (both & (v[:, :, 0] != v[:, :, 1])).any(axis=1)
    eligible = both.any(axis=1)
    den = int(np.count_nonzero(eligible))
    return float(np.count_nonzero(changed)) / den if den else math.nan


def _rows_with_votes_in_both_rounds(n: np.ndarray) -> np.ndarray:
    return (n > 0).all(axis=1)


def agreement_lift(votes) -> float:
    """Mean agreement in round two minus round one.

    Over rows with at least one valid vote in each round; NaN if none.
    """
    y, n = _tally_both(as_votes(votes))
    rows = _rows_with_votes_in_both_rounds(n)
    agr = _ratio(np.maximum(y, n - y), n)[rows]
    if not agr.shape[0]:
        return math.nan
    return float(agr[:, 1].mean() - agr[:, 0].mean())


def consensus_flip_rate(votes, quorum: int = 3) -> float:
    """Fraction of all rows whose consensus verdict differs between rounds; NaN if no rows."""
    verdict = consensus(votes, quorum).verdict
    return _mean_or_nan(verdict[:, 0] != verdict[:, 1])


def unanimity_lift(votes) -> float:
    """Unanimity rate (y == n or y == 0) in round two minus round one.

    Over rows with at least one valid vote in each round; NaN if none.
    """
    y, n = _tally_both(as_votes(votes))
    rows = _rows_with_votes_in_both_rounds(n)
    unanimous = ((y == n) | (y == 0))[rows]
    if not unanimous.shape[0]:
        return math.nan
    return float(unanimous[:, 1].mean() - unanimous[:, 0].mean())


def member_flips(votes) -> dict[str, np.ndarray]:
    """Per-member flip counts among rows where the member voted validly in both rounds.

    Returns int arrays of shape (M,): ``to_correct`` (incorrect -> correct),
    ``to_incorrect`` (correct -> incorrect) and ``valid_both``.
    """
    v = as_votes(votes)
    r1, r2 = v[:, :, 0], v[:, :, 1]
    to_correct = (r1 == INCORRECT) & (r2 == CORRECT)
    to_incorrect = (r1 == CORRECT) & (r2 == INCORRECT)
    return {
        "to_correct": np.count_nonzero(to_correct, axis=0).astype(np.int64),
        "to_incorrect": np.count_nonzero(to_incorrect, axis=0).astype(np.int64),
        "valid_both": np.count_nonzero(_both_valid(v), axis=0).astype(np.int64),
    }


def _plain_float(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def deliberation_summary(votes, members: list[str], quorum: int = 3) -> dict:
    """Deliberation metrics as a plain-Python dict (NaN becomes None).

    ``members`` names the member axis, in order. Keys: deliberation_impact,
    agreement_lift, consensus_flip_rate, unanimity_lift,
    member_flips {member: {to_correct, to_incorrect, valid_both}}, rows,
    ties_round1, ties_round2, no_quorum_round1, no_quorum_round2.
    """
    v = as_votes(votes)
    q = check_quorum(quorum)
    members = list(members)
    if len(members) != v.shape[1]:
        raise ValueError(f"got {len(members)} member names for {v.shape[1]} members")
    if len(set(members)) != len(members):
        raise ValueError("member names must be unique")
    cons = consensus(v, q)
    flips = member_flips(v)
    ties = np.count_nonzero(cons.tie, axis=0)
    no_quorum = np.count_nonzero(cons.no_quorum, axis=0)
    return {
        "deliberation_impact": _plain_float(deliberation_impact(v)),
        "agreement_lift": _plain_float(agreement_lift(v)),
        "consensus_flip_rate": _plain_float(consensus_flip_rate(v, q)),
        "unanimity_lift": _plain_float(unanimity_lift(v)),
        "member_flips": {
            name: {key: int(flips[key][j]) for key in ("to_correct", "to_incorrect", "valid_both")}
            for j, name in enumerate(members)
        },
        "rows": int(v.shape[0]),
        "ties_round1": int(ties[0]),
        "ties_round2": int(ties[1]),
        "no_quorum_round1": int(no_quorum[0]),
        "no_quorum_round2": int(no_quorum[1]),
    }
