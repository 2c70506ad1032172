"""Herding diagnostics: do members flip towards their peers, and where does agreement come from?

A *flip* is a member whose valid round-one vote differs from its valid
round-two vote in the same row. Each flip is compared with the member's
peers' round-one majority in that row: the strict majority of the other
members' valid round-one votes (none on a tie or when no peer voted).

- ``conforming``: the peers had a strict majority and the flip lands on it.
- ``dissenting``: the peers had a strict majority and the flip moves away from it.
- ``unaligned``: the peers had no strict majority.

The agreement lift is also split by round-one margin ``|2 y_1 - n_1|``: rows
with margin at most 1 are *weak* majorities (including 1-vote and split
panels), the rest are *strong*. Large lift on weak rows together with high
conformity shares is the signature of herding.

All functions take a (R, M, 2) vote array (see ``_codes``); rates with an
empty denominator are NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ._codes import CORRECT, MISSING, as_votes, check_names, plain
from ._consensus import _tally_both, _tally_rounds


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise num / den as float, NaN where den == 0."""
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def classify_flips(votes) -> dict[str, np.ndarray]:
    """Per-member flips classified against the peers' round-one majority.

    Peer counts are the row's round-one totals minus the member's own vote.
    Returns arrays of shape (M,): ``conforming``, ``dissenting`` and
    ``unaligned`` (int counts) and ``conformity_share`` (float,
    conforming / (conforming + dissenting), NaN where that is 0).
    """
    v = as_votes(votes)
    r1, r2 = v[:, :, 0], v[:, :, 1]
    own_yes = r1 == CORRECT
    own_valid = r1 != MISSING
    t = _tally_rounds(v)
    y1 = t.y[:, 0].astype(np.int64)
    n1 = t.n[:, 0].astype(np.int64)
    peer_yes = y1[:, None] - own_yes  # (R, M)
    peer_no = (n1[:, None] - own_valid) - peer_yes
    peers_correct = peer_yes > peer_no
    peers_incorrect = peer_no > peer_yes
    has_majority = peers_correct | peers_incorrect
    flip = own_valid & (r2 != MISSING) & (r1 != r2)
    # A flip has v2 == 1 - v1; it conforms when v2 is the peers' majority verdict.
    towards = np.where(r2 == CORRECT, peers_correct, peers_incorrect)
    conforming = np.count_nonzero(flip & towards, axis=0).astype(np.int64)
    dissenting = np.count_nonzero(flip & has_majority & ~towards, axis=0).astype(np.int64)
    unaligned = np.count_nonzero(flip & ~has_majority, axis=0).astype(np.int64)
    return {
        "conforming": conforming,
        "dissenting": dissenting,
        "unaligned": unaligned,
        "conformity_share": _ratio(conforming, conforming + dissenting),
    }


def weak_majority_lift(votes) -> dict:
    """Split ``agreement_lift`` into weak-majority and strong-majority rows.

    Over rows with at least one valid vote in each round (N of them), a row
    is weak if its round-one margin ``|2 y_1 - n_1| <= 1`` and strong
    otherwise. ``agreement_lift_weak`` / ``agreement_lift_strong`` are the sum
    of ``agreement_2 - agreement_1`` over that part's rows divided by N, so
    the two add up to ``agreement_lift`` (both NaN when N == 0).
    ``mean_lift_weak_rows`` is the mean of ``agreement_2 - agreement_1``
    within weak rows (NaN if there are none). Also returns ``weak_rows`` and
    ``strong_rows`` (ints).
    """
    y, n = _tally_both(as_votes(votes))
    rows = (n > 0).all(axis=1)
    y, n = y[rows], n[rows]
    agr = np.maximum(y, n - y) / n if n.shape[0] else np.zeros((0, 2))
    diff = agr[:, 1] - agr[:, 0]
    weak = np.abs(2 * y[:, 0] - n[:, 0]) <= 1
    total = diff.shape[0]
    weak_rows = int(np.count_nonzero(weak))
    strong_rows = total - weak_rows
    if total:
        lift_weak = float(diff[weak].sum()) / total
        lift_strong = float(diff[~weak].sum()) / total
    else:
        lift_weak = lift_strong = math.nan
    return {
        "agreement_lift_weak": lift_weak,
        "agreement_lift_strong": lift_strong,
        "weak_rows": weak_rows,
        "strong_rows": strong_rows,
        "mean_lift_weak_rows": float(diff[weak].mean()) if weak_rows else math.nan,
    }






def herding_summary(votes, members: list[str]) -> dict:
    """Herding diagnostics as a plain-Python dict (6-place rounding, NaN becomes None).

    Keys: flips {member: {conforming, dissenting, unaligned, conformity_share}},
    conformity_share_overall (all members' conforming over conforming plus
    dissenting), agreement_lift_weak, agreement_lift_strong, weak_rows,
    strong_rows, mean_lift_weak_rows.
    """
    v = as_votes(votes)
    members = check_names(members, v.shape[1], "member")
    flips = classify_flips(v)
    lift = weak_majority_lift(v)
    conf = int(flips["conforming"].sum())
    diss = int(flips["dissenting"].sum())
    return {
        "flips": {
            name: {
                "conforming": int(flips["conforming"][j]),
                "dissenting": int(flips["dissenting"][j]),
                "unaligned": int(flips["unaligned"][j]),
                "conformity_share": plain(flips["conformity_share"][j]),
            }
            for j, name in enumerate(members)
        },
        "conformity_share_overall": plain(conf / (conf + diss) if conf + diss else math.nan),
        "agreement_lift_weak": plain(lift["agreement_lift_weak"]),
        "agreement_lift_strong": plain(lift["agreement_lift_strong"]),
        "weak_rows": lift["weak_rows"],
        "strong_rows": lift["strong_rows"],
        "mean_lift_weak_rows": plain(lift["mean_lift_weak_rows"]),
    }
