"""Vote codes and the shared input check for vote arrays.

A vote array has shape ``(R rows, M members, 2 rounds)``; round index 0 is
round one and index 1 is round two.
"""

from __future__ import annotations

import math

import numpy as np

MISSING = -1
"""Member not eligible for the row, or its vote was invalid."""
INCORRECT = 0
CORRECT = 1



def _check_codes(arr: np.ndarray, what: str) -> None:
    # Codes are consecutive (-1, 0, 1): a range check needs no temporary of the array's size.
    if arr.size and (arr.min() < MISSING or arr.max() > CORRECT):
        raise ValueError(f"{what} may only contain the codes -1, 0 and 1")


def _as_int_array(values, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(f"{what} must be an integer array, got dtype {arr.dtype}")
    return arr


def as_votes(votes) -> np.ndarray:
    """Return ``votes`` as an int8 array of shape (R, M, 2), checking shape and codes."""
    arr = _as_int_array(votes, "votes")
    if arr.ndim != 3 or arr.shape[2] != 2:
        raise ValueError(f"votes must have shape (rows, members, 2), got {arr.shape}")
    _check_codes(arr, "votes")
    return arr.astype(np.int8, copy=False)


def as_round(votes_k) -> np.ndarray:
    """Return one round's votes as an int8 array of shape (R, M), checking shape and codes."""
    arr = _as_int_array(votes_k, "votes_k")
    if arr.ndim != 2:
        raise ValueError(f"votes_k must have shape (rows, members), got {arr.shape}")
    _check_codes(arr, "votes_k")
    return arr.astype(np.int8, copy=False)


def check_quorum(quorum) -> int:
    """Return ``quorum`` as a positive int."""
    if isinstance(quorum, bool) or not isinstance(quorum, (int, np.integer)) or quorum < 1:
        raise ValueError(f"quorum must be a positive integer, got {quorum!r}")
    return int(quorum)


def plain(x) -> float | None:  # noqa: ANN001 - any real number
    """A number for a summary dict: rounded to 6 places, NaN as None (infinity stays)."""
    x = float(x)
    if math.isnan(x):
        return None
    return x if math.isinf(x) else round(x, 6)


def check_names(names, n: int, what: str) -> list[str]:  # noqa: ANN001 - any iterable of names
    """``names`` as a list of ``n`` distinct strings, else ValueError."""
    names = [str(x) for x in names]
    if len(names) != n:
        raise ValueError(f"got {len(names)} {what} names for {n} {what}s")
    if len(set(names)) != len(names):
        raise ValueError(f"{what} names must be unique")
    return names
