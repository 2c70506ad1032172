"""Deliberation metrics: what round two changed relative to round one.

All functions take a (R, M, 2) vote array (see ``_codes``). Rates whose
denominator is empty are NaN. Each function also accepts ``tally=``, the
``tally_rounds(votes)`` of the same votes, to reuse counts already made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._codes import as_votes, check_quorum
from ._consensus import BLOCK_ROWS, Tally, _decide_counts, _use_tally


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise num / den as float, NaN where den == 0."""
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _agreement(t: Tally) -> np.ndarray:
    y, n = t.y, t.n
    return _ratio(np.maximum(y, n - y), n)


def agreement(votes, *, tally: Tally | None = None) -> np.ndarray:
    """Share of valid votes on the majority side, max(y, n - y) / n.

    Returns a float array of shape (R, 2); NaN where n == 0.
    """
    return _agreement(_use_tally(as_votes(votes), tally))


def _impact(t: Tally) -> float:
    den = int(np.count_nonzero(t.eligible))
    return float(np.count_nonzero(t.changed)) / den if den else math.nan


def deliberation_impact(votes, *, tally: Tally | None = None) -> float:
    """Fraction of rows where a member changed its verdict between rounds.

    Only members with a valid vote in both rounds count, so a member going
    from missing to a vote (or back) is not a change. Denominator: rows with
    at least one member valid in both rounds; NaN if there are none.
    """
    return _impact(_use_tally(as_votes(votes), tally))


@dataclass
class _Totals:
    """Row totals behind the lifts and the consensus flip rate (see ``_totals``)."""

    both_rounds: int = 0
    """Rows with at least one valid vote in each round."""
    agreement: list[float] = field(default_factory=lambda: [0.0, 0.0])
    """Per round: sum of max(y, n - y) / n over those rows."""
    unanimous: list[int] = field(default_factory=lambda: [0, 0])
    """Per round: those rows with y == n or y == 0."""
    flips: int = 0
    """Rows whose consensus verdict differs between rounds."""
    ties: list[int] = field(default_factory=lambda: [0, 0])
    quorate: list[int] = field(default_factory=lambda: [0, 0])


def _select_rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``x[rows]`` for a C-contiguous (R, 2) array, selecting each row as one word (much faster than
    boolean indexing of the 2-column array)."""
    return x.view(f"u{2 * x.itemsize}")[:, 0][rows].view(x.dtype).reshape(-1, 2)


def _totals(t: Tally, quorum: int | None = None) -> _Totals:
    """Totals over the tally's rows, in blocks of rows so every temporary stays small.

    The consensus counts (flips, ties, quorate) are only made when ``quorum`` is given.
    """
    out = _Totals()
    y_all, n_all = np.ascontiguousarray(t.y), np.ascontiguousarray(t.n)
    for start in range(0, y_all.shape[0], BLOCK_ROWS):
        y, n = y_all[start : start + BLOCK_ROWS], n_all[start : start + BLOCK_ROWS]
        no = n - y
        if quorum is not None:
            verdict, tie, has_quorum = _decide_counts(y, n, no, quorum, t.members)
            out.flips += int(np.count_nonzero(verdict[:, 0] != verdict[:, 1]))
            for k in range(2):
                out.ties[k] += int(np.count_nonzero(tie[:, k]))
                out.quorate[k] += int(np.count_nonzero(has_quorum[:, k]))
        rows = n[:, 0] > 0
        rows &= n[:, 1] > 0
        y, n, no = (_select_rows(x, rows) for x in (y, n, no))
        out.both_rounds += y.shape[0]
        agr = np.maximum(y, no) / n  # n > 0 on these rows
        unanimous = no == 0
        unanimous |= y == 0
        for k in range(2):
            out.agreement[k] += float(agr[:, k].sum())
            out.unanimous[k] += int(np.count_nonzero(unanimous[:, k]))
    return out


def _agreement_lift(totals: _Totals) -> float:
    rows = totals.both_rounds
    if not rows:
        return math.nan
    return totals.agreement[1] / rows - totals.agreement[0] / rows


def agreement_lift(votes, *, tally: Tally | None = None) -> float:
    """Mean agreement in round two minus round one.

    Over rows with at least one valid vote in each round; NaN if none.
    """
    return _agreement_lift(_totals(_use_tally(as_votes(votes), tally)))


def _flip_rate(totals: _Totals, rows: int) -> float:
    return totals.flips / rows if rows else math.nan


def consensus_flip_rate(votes, quorum: int = 3, *, tally: Tally | None = None) -> float:
    """Fraction of all rows whose consensus verdict differs between rounds; NaN if no rows."""
    q = check_quorum(quorum)
    v = as_votes(votes)
    return _flip_rate(_totals(_use_tally(v, tally), q), v.shape[0])


def _unanimity_lift(totals: _Totals) -> float:
    rows = totals.both_rounds
    if not rows:
        return math.nan
    return totals.unanimous[1] / rows - totals.unanimous[0] / rows


def unanimity_lift(votes, *, tally: Tally | None = None) -> float:
    """Unanimity rate (y == n or y == 0) in round two minus round one.

    Over rows with at least one valid vote in each round; NaN if none.
    """
    return _unanimity_lift(_totals(_use_tally(as_votes(votes), tally)))


def _member_flips(t: Tally) -> dict[str, np.ndarray]:
    return {
        "to_correct": t.to_correct.copy(),
        "to_incorrect": t.to_incorrect.copy(),
        "valid_both": t.valid_both.copy(),
    }


def member_flips(votes, *, tally: Tally | None = None) -> dict[str, np.ndarray]:
    """Per-member flip counts among rows where the member voted validly in both rounds.

    Returns int arrays of shape (M,): ``to_correct`` (incorrect -> correct),
    ``to_incorrect`` (correct -> incorrect) and ``valid_both``.
    """
    return _member_flips(_use_tally(as_votes(votes), tally))


def _plain_float(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def deliberation_summary(votes, members: list[str], quorum: int = 3, *, tally: Tally | None = None) -> dict:
    """Deliberation metrics as a plain-Python dict (NaN becomes None).

    ``members`` names the member axis, in order. Keys: deliberation_impact,
    agreement_lift, consensus_flip_rate, unanimity_lift,
    member_flips {member: {to_correct, to_incorrect, valid_both}}, rows,
    ties_round1, ties_round2, no_quorum_round1, no_quorum_round2.
    ``tally``: optional ``tally_rounds(votes)``; otherwise the votes are counted once here.
    """
    v = as_votes(votes)
    q = check_quorum(quorum)
    members = list(members)
    if len(members) != v.shape[1]:
        raise ValueError(f"got {len(members)} member names for {v.shape[1]} members")
    if len(set(members)) != len(members):
        raise ValueError("member names must be unique")
    t = _use_tally(v, tally)
    totals = _totals(t, q)
    rows = int(v.shape[0])
    return {
        "deliberation_impact": _plain_float(_impact(t)),
        "agreement_lift": _plain_float(_agreement_lift(totals)),
        "consensus_flip_rate": _plain_float(_flip_rate(totals, rows)),
        "unanimity_lift": _plain_float(_unanimity_lift(totals)),
        "member_flips": {
            name: {
                "to_correct": int(t.to_correct[j]),
                "to_incorrect": int(t.to_incorrect[j]),
                "valid_both": int(t.valid_both[j]),
            }
            for j, name in enumerate(members)
        },
        "rows": rows,
        "ties_round1": totals.ties[0],
        "ties_round2": totals.ties[1],
        "no_quorum_round1": rows - totals.quorate[0],
        "no_quorum_round2": rows - totals.quorate[1],
    }
