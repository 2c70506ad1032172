"""Per-row vote tallies and the council consensus rule.

Consensus is a strict majority of valid votes; ties and rows with fewer valid
votes than the quorum resolve to incorrect (0) and are flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._codes import CORRECT, MISSING, as_round, as_votes, check_quorum


@dataclass(frozen=True, eq=False)
class Consensus:
    """Consensus per row and round; every field has shape (R, 2)."""

    verdict: np.ndarray
    """int8: 1 iff y > n - y and n >= quorum, else 0."""
    tie: np.ndarray
    """bool: n >= quorum and y == n - y."""
    no_quorum: np.ndarray
    """bool: n < quorum."""
    y: np.ndarray
    """int: valid votes "correct"."""
    n: np.ndarray
    """int: valid votes."""


def tally(votes_k) -> tuple[np.ndarray, np.ndarray]:
    """Count votes for one round.

    ``votes_k`` has shape (R, M). Returns ``(y, n)``, int arrays of shape (R,):
    votes "correct" and valid votes per row.
    """
    v = as_round(votes_k)
    y = np.count_nonzero(v == CORRECT, axis=1).astype(np.int64)
    n = np.count_nonzero(v != MISSING, axis=1).astype(np.int64)
    return y, n


def _tally_both(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tallies for both rounds of a checked (R, M, 2) array, each of shape (R, 2)."""
    y = np.count_nonzero(v == CORRECT, axis=1).astype(np.int64)
    n = np.count_nonzero(v != MISSING, axis=1).astype(np.int64)
    return y, n


def consensus(votes, quorum: int = 3) -> Consensus:
    """Consensus of both rounds for every row of a (R, M, 2) vote array."""
    q = check_quorum(quorum)
    y, n = _tally_both(as_votes(votes))
    no = n - y
    has_quorum = n >= q
    verdict = ((y > no) & has_quorum).astype(np.int8)
    tie = has_quorum & (y == no)
    return Consensus(verdict=verdict, tie=tie, no_quorum=~has_quorum, y=y, n=n)
