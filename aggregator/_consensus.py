"""Per-row vote tallies and the council consensus rule.

Consensus is a strict majority of valid votes; ties and rows with fewer valid
votes than the quorum resolve to incorrect (0) and are flagged.

``tally_rounds`` counts everything the consensus and deliberation metrics need
in one pass over the votes and returns a ``Tally``; the metric functions accept
it as ``tally=`` so several of them can share one count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._codes import CORRECT, MISSING, as_round, as_votes, check_quorum

BLOCK_ROWS = 1 << 16
"""Rows per block of the counting passes: a block's votes and scratch arrays stay in cache."""

_PACKED_MEMBERS = 85
"""Members summed per packed pass: each byte of a packed sum reaches at most 3 per member (<= 255)."""

_WORD = np.dtype("<u2")
"""One member's votes of a row as one 16-bit word: low byte round one, high byte round two."""


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


@dataclass(frozen=True, eq=False)
class Tally:
    """Vote counts of a (R, M, 2) vote array, as returned by ``tally_rounds``.

    Pass it as ``tally=`` to ``consensus``, ``agreement`` and the deliberation
    metrics together with the votes it was computed from, so the votes are
    counted once. Treat the arrays as read-only.
    """

    y: np.ndarray
    """(R, 2) small signed int (int8 up to 85 members): valid votes "correct" per row and round."""
    n: np.ndarray
    """(R, 2), same dtype as ``y``: valid votes per row and round."""
    changed: np.ndarray
    """(R,) bool: some member voted validly in both rounds and changed its verdict."""
    eligible: np.ndarray
    """(R,) bool: some member voted validly in both rounds."""
    to_correct: np.ndarray
    """(M,) int64: rows where the member went from incorrect to correct."""
    to_incorrect: np.ndarray
    """(M,) int64: rows where the member went from correct to incorrect."""
    valid_both: np.ndarray
    """(M,) int64: rows where the member voted validly in both rounds."""

    @property
    def members(self) -> int:
        return int(self.to_correct.shape[0])


def tally(votes_k) -> tuple[np.ndarray, np.ndarray]:
    """Count votes for one round.

    ``votes_k`` has shape (R, M). Returns ``(y, n)``, int arrays of shape (R,):
    votes "correct" and valid votes per row.
    """
    v = as_round(votes_k)
    rows, m = v.shape
    acc = np.int8 if m <= np.iinfo(np.int8).max else np.int64
    y = np.zeros(rows, dtype=acc)
    n = np.zeros(rows, dtype=acc)
    flag = np.empty(rows, dtype=bool)
    for j in range(m):
        col = v[:, j]
        np.equal(col, CORRECT, out=flag)
        y += flag
        np.not_equal(col, MISSING, out=flag)
        n += flag
    return y.astype(np.int64), n.astype(np.int64)


def _vote_words(v: np.ndarray) -> np.ndarray:
    """(R, M) 16-bit view of a checked vote array, one word per row and member (see ``_WORD``)."""
    if v.strides[2] != 1:
        v = np.ascontiguousarray(v)
    return v.view(_WORD)[:, :, 0]


def _tally_rounds(v: np.ndarray) -> Tally:
    """``tally_rounds`` of a checked (R, M, 2) int8 array.

    Rows are processed in blocks, members one at a time. Each member's two
    votes are one word whose bytes are 0xFF (missing), 0x00 or 0x01, so one
    word operation handles both rounds. Per member the packed sums add
    ``word & 0x0303`` (3 if missing, else the vote) and ``word & 0x0101``
    (1 if missing or correct); per byte they end as y + 3 * missing and
    y + missing, from which y and the missing count follow.
    """
    rows, m, _ = v.shape
    words = _vote_words(v)
    wide = m > _PACKED_MEMBERS
    count_dtype = np.int16 if wide else np.int8
    y = np.zeros((rows, 2), dtype=count_dtype)
    n = np.zeros((rows, 2), dtype=count_dtype)
    y_words = None if wide else y.view(_WORD)[:, 0]
    n_words = None if wide else n.view(_WORD)[:, 0]
    changed = np.zeros(rows, dtype=bool)
    eligible = np.zeros(rows, dtype=bool)
    to_correct = [0] * m
    to_incorrect = [0] * m
    valid_both = [0] * m

    size = min(BLOCK_ROWS, rows)
    word_buf = np.empty(size, dtype=_WORD)
    part_buf = np.empty(size, dtype=_WORD)
    s_buf = np.empty(size, dtype=_WORD)  # per byte: y + 3 * missing
    a_buf = np.empty(size, dtype=_WORD)  # per byte: y + missing
    flag_buf = np.empty(size, dtype=bool)

    for start in range(0, rows, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, rows)
        b = stop - start
        word, part, s, a, flag = word_buf[:b], part_buf[:b], s_buf[:b], a_buf[:b], flag_buf[:b]
        block_changed, block_eligible = changed[start:stop], eligible[start:stop]
        for first in range(0, m, _PACKED_MEMBERS):
            group = range(first, min(first + _PACKED_MEMBERS, m))
            s.fill(0)
            a.fill(0)
            for j in group:
                np.copyto(word, words[start:stop, j])
                np.bitwise_and(word, 0x0303, out=part)
                np.add(s, part, out=s)
                np.bitwise_and(word, 0x0101, out=part)
                np.add(a, part, out=a)
                # Valid in both rounds: neither byte is 0xFF (bit 1 clear in both).
                np.bitwise_and(word, 0x0202, out=part)
                np.equal(part, 0, out=flag)
                valid_both[j] += int(np.count_nonzero(flag))
                np.logical_or(block_eligible, flag, out=block_eligible)
                # Round one 0 and round two 1, and the reverse.
                np.equal(word, 0x0100, out=flag)
                to_correct[j] += int(np.count_nonzero(flag))
                np.logical_or(block_changed, flag, out=block_changed)
                np.equal(word, 0x0001, out=flag)
                to_incorrect[j] += int(np.count_nonzero(flag))
                np.logical_or(block_changed, flag, out=block_changed)
            # Per byte: missing = (s - a) / 2, y = a - missing, n = members - missing.
            np.subtract(s, a, out=s)
            np.right_shift(s, 1, out=s)
            if wide:
                y[start:stop] += (a - s).view(np.uint8).reshape(b, 2)
                n[start:stop] += (np.uint16(len(group) * 0x0101) - s).view(np.uint8).reshape(b, 2)
            else:
                np.subtract(a, s, out=y_words[start:stop])
                np.subtract(np.uint16(len(group) * 0x0101), s, out=n_words[start:stop])

    return Tally(
        y=y,
        n=n,
        changed=changed,
        eligible=eligible,
        to_correct=np.array(to_correct, dtype=np.int64),
        to_incorrect=np.array(to_incorrect, dtype=np.int64),
        valid_both=np.array(valid_both, dtype=np.int64),
    )


def tally_rounds(votes) -> Tally:
    """Count a (R, M, 2) vote array once for ``consensus`` and the deliberation metrics."""
    return _tally_rounds(as_votes(votes))


def _use_tally(v: np.ndarray, tally: Tally | None) -> Tally:
    """The given tally after checking it fits the checked votes ``v``, or a fresh one."""
    if tally is None:
        return _tally_rounds(v)
    if not isinstance(tally, Tally):
        raise TypeError(f"tally must be a Tally from tally_rounds, got {type(tally).__name__}")
    if tally.y.shape != (v.shape[0], 2) or tally.n.shape != tally.y.shape or tally.members != v.shape[1]:
        raise ValueError(
            f"tally is for {tally.y.shape[0]} rows x {tally.members} members, "
            f"votes have {v.shape[0]} x {v.shape[1]}"
        )
    return tally


def _tally_both(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tallies for both rounds of a checked (R, M, 2) array, each int64 of shape (R, 2)."""
    t = _tally_rounds(v)
    return t.y.astype(np.int64), t.n.astype(np.int64)


def _decide_counts(
    y: np.ndarray, n: np.ndarray, no: np.ndarray, quorum: int, members: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bool arrays ``(verdict, tie, has_quorum)`` of the consensus rule; ``no`` is ``n - y``."""
    # n never exceeds the member count, so a larger quorum acts like members + 1 (which fits n's dtype).
    has_quorum = n >= min(quorum, members + 1)
    verdict = np.greater(y, no)
    verdict &= has_quorum
    tie = np.equal(y, no)
    tie &= has_quorum
    return verdict, tie, has_quorum


def _decide(t: Tally, quorum: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R, 2) bool arrays ``(verdict, tie, has_quorum)`` of the consensus rule."""
    return _decide_counts(t.y, t.n, t.n - t.y, quorum, t.members)


def consensus(votes, quorum: int = 3, *, tally: Tally | None = None) -> Consensus:
    """Consensus of both rounds for every row of a (R, M, 2) vote array.

    ``tally``: optional ``tally_rounds(votes)``, to reuse counts already made.
    """
    q = check_quorum(quorum)
    t = _use_tally(as_votes(votes), tally)
    verdict, tie, has_quorum = _decide(t, q)
    return Consensus(
        verdict=verdict.view(np.int8),
        tie=tie,
        no_quorum=~has_quorum,
        y=t.y.astype(np.int64),
        n=t.n.astype(np.int64),
    )
