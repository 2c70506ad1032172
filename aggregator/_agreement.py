"""Inter-rater agreement within one round: pairwise, Fleiss and Krippendorff.

Functions named ``*_k`` take one round's votes, shape (R rows, M members),
with the codes of ``_codes``; ``MISSING`` votes are left out as described per
function. Votes are binary (incorrect / correct). Undefined values are NaN.

Everything is computed from small count tables (per member pair, or per
(valid votes, "correct" votes) combination over rows), so memory stays at a
few boolean columns however many rows there are.
"""

from __future__ import annotations

import math

import numpy as np

from ._codes import CORRECT, INCORRECT, as_round, as_votes, plain


def _pair_counts(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """2 x 2 tables for every pair of members from category indicators.

    ``pos`` and ``neg`` are bool arrays of shape (M, R): member j is in the
    first / second category on row r (both False means missing). Returns an
    int64 array ``t`` of shape (M, M, 2, 2) with ``t[i, j, a, b]`` the rows
    where member i is in category a and member j in category b (index 0 is
    ``pos``, 1 is ``neg``). The diagonal holds each member against itself.
    """
    m, r = pos.shape
    t = np.zeros((m, m, 2, 2), dtype=np.int64)
    buf = np.empty(r, dtype=bool)
    ind = (pos, neg)
    for i in range(m):
        for j in range(i, m):
            for a in range(2):
                for b in range(2):
                    np.logical_and(ind[a][i], ind[b][j], out=buf)
                    t[i, j, a, b] = np.count_nonzero(buf)
            t[j, i] = t[i, j].T
    return t


_PATTERN_MEMBERS = 10
"""Rounds with at most this many members are counted by vote pattern: 3**10 patterns fit a uint16 code."""

_BLOCK_ROWS = 1 << 16
"""Rows per block when coding patterns, so a block's votes and scratch arrays stay in cache."""


def _pattern_counts(v: np.ndarray) -> np.ndarray:
    """Rows per vote pattern of a checked (R, M) round, M <= ``_PATTERN_MEMBERS``.

    A row's pattern code is sum_j (vote_j + 1) * 3**j; returns an int64 array of
    shape (3**M,) indexed by code.
    """
    rows, m = v.shape
    n_codes = 3**m
    counts = np.zeros(n_codes, dtype=np.int64)
    size = min(_BLOCK_ROWS, rows)
    code_buf = np.empty(size, dtype=np.uint16)
    term_buf = np.empty(size, dtype=np.uint16)
    offset = (n_codes - 1) // 2  # sum_j 3**j: the "+ 1" of every vote
    for start in range(0, rows, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, rows)
        code, term = code_buf[: stop - start], term_buf[: stop - start]
        code.fill(offset)
        for j in range(m):
            # uint16 arithmetic wraps modulo 2**16, so a -1 vote subtracts 3**j; the total lies in [0, 3**M).
            np.multiply(v[start:stop, j], np.uint16(3**j), out=term, dtype=np.uint16, casting="unsafe")
            np.add(code, term, out=code)
        counts += np.bincount(code, minlength=n_codes)
    return counts


def _pattern_votes(counts: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The patterns that occur: ``(votes, rows)``, votes (P, M) int8 codes and rows (P,) int64."""
    codes = np.flatnonzero(counts)
    digits = (codes[:, None] // (3 ** np.arange(m, dtype=np.int64))) % 3
    return (digits - 1).astype(np.int8), counts[codes]


def _pair_counts_weighted(pos: np.ndarray, neg: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``_pair_counts`` of weighted rows: pos / neg (P, M) bool, weight (P,) int64 rows per pattern."""
    ind = [pos.astype(np.int64), neg.astype(np.int64)]
    m = pos.shape[1]
    t = np.empty((m, m, 2, 2), dtype=np.int64)
    for a in range(2):
        weighted = ind[a] * weight[:, None]
        for b in range(2):
            t[:, :, a, b] = weighted.T @ ind[b]
    return t


def _ny_from_patterns(votes: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``_ny_table`` from the patterns of ``_pattern_votes``."""
    m = votes.shape[1]
    table = np.zeros((m + 1, m + 1), dtype=np.int64)
    np.add.at(table, (np.count_nonzero(votes != -1, axis=1), np.count_nonzero(votes == CORRECT, axis=1)), weight)
    return table


def _pair_counts_from_patterns(votes: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``_vote_pair_counts`` from the patterns of ``_pattern_votes``."""
    return _pair_counts_weighted(votes == CORRECT, votes == INCORRECT, weight)


def _round_tables(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(_vote_pair_counts(v), _ny_table(v))`` of a checked (R, M) round, counting the votes once."""
    if v.shape[1] <= _PATTERN_MEMBERS:
        patterns = _pattern_votes(_pattern_counts(v), v.shape[1])
        return _pair_counts_from_patterns(*patterns), _ny_from_patterns(*patterns)
    return _vote_pair_counts(v), _ny_table(v)


def _vote_pair_counts(v: np.ndarray) -> np.ndarray:
    """(M, M, 2, 2) tables of a checked (R, M) round; category 0 is correct, 1 incorrect."""
    if v.shape[1] <= _PATTERN_MEMBERS:
        return _pair_counts_from_patterns(*_pattern_votes(_pattern_counts(v), v.shape[1]))
    cols = np.ascontiguousarray(v.T)
    return _pair_counts(cols == CORRECT, cols == INCORRECT)


def _kappa_from_tables(t: np.ndarray) -> np.ndarray:
    """Cohen's kappa of 2 x 2 tables of shape (..., 2, 2); NaN if n == 0 or p_e == 1.

    kappa = (p_o - p_e) / (1 - p_e) with p_o the diagonal share and p_e the
    sum over categories of the product of the two raters' marginal shares.
    Computed as (n * agree - E) / (n**2 - E), E = sum_c row_c * col_c, from
    integer counts; p_e == 1 is tested exactly as E == n**2.
    """
    n = t.sum(axis=(-2, -1))
    agree = t[..., 0, 0] + t[..., 1, 1]
    rows = t.sum(axis=-1)
    cols = t.sum(axis=-2)
    expected = (rows * cols).sum(axis=-1)
    nf = n.astype(np.float64)
    num = nf * agree - expected
    den = nf * nf - expected
    defined = (n > 0) & (expected != n * n)
    out = np.full(n.shape, np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=defined)
    return out


def pairwise_agreement(votes_k) -> tuple[np.ndarray, np.ndarray]:
    """Percent agreement for every member pair of one round.

    Returns ``(agree, n)`` of shape (M, M): ``n[i, j]`` counts rows where both
    members voted validly and ``agree[i, j]`` is the share of those rows where
    their votes are equal (NaN where ``n == 0``). Both are symmetric. On the
    diagonal ``n[i, i]`` is member i's valid votes and ``agree[i, i]`` is 1.0
    (NaN if the member never voted validly).
    """
    t = _vote_pair_counts(as_round(votes_k))
    n = t.sum(axis=(2, 3))
    same = t[:, :, 0, 0] + t[:, :, 1, 1]
    agree = np.full(n.shape, np.nan, dtype=np.float64)
    np.divide(same, n, out=agree, where=n != 0)
    return agree, n


def cohens_kappa_pairs(votes_k) -> np.ndarray:
    """Cohen's kappa for every member pair of one round, shape (M, M), symmetric.

    Over rows where both members voted validly, with the two categories
    incorrect / correct. NaN where no such row exists or the expected
    agreement is 1 (both members always gave the same single verdict). The
    diagonal is a member against itself: 1.0 if it used both verdicts, else NaN.
    """
    return _kappa_from_tables(_vote_pair_counts(as_round(votes_k)))


def _ny_table(v: np.ndarray) -> np.ndarray:
    """Rows per (valid votes n, "correct" votes y) of a checked (R, M) round.

    Returns an int64 array of shape (M + 1, M + 1) indexed [n, y].
    """
    if v.shape[1] <= _PATTERN_MEMBERS:
        return _ny_from_patterns(*_pattern_votes(_pattern_counts(v), v.shape[1]))
    rows, m = v.shape
    base = m + 1
    dtype = np.int16 if base * base <= np.iinfo(np.int16).max else np.int64
    # Per-vote contribution to the row code n * (M + 1) + y, indexed by code + 1.
    contrib = np.array([0, base, base + 1], dtype=dtype)
    code = np.zeros(rows, dtype=dtype)
    for j in range(m):
        code += np.take(contrib, v[:, j] + 1)
    return np.bincount(code, minlength=base * base).reshape(base, base).astype(np.int64)


def _ny_grid(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Broadcastable (n, y) index grids of shape (M + 1, 1) and (1, M + 1)."""
    n = np.arange(m + 1, dtype=np.int64)[:, None]
    y = np.arange(m + 1, dtype=np.int64)[None, :]
    return n, y


def _fleiss_from_ny(table: np.ndarray) -> float:
    """Fleiss' kappa from an (n, y) row table, using rows with n >= 2.

    P_i = (y(y-1) + (n-y)(n-y-1)) / (n(n-1)) per row, P-bar their mean,
    p_1 / p_0 the shares of "correct" / "incorrect" among the valid votes of
    those rows, P_e = p_0**2 + p_1**2, kappa = (P-bar - P_e) / (1 - P_e).
    """
    m = table.shape[0] - 1
    n, y = _ny_grid(m)
    used = np.where((n >= 2) & (y <= n), table, 0)
    rows = int(used.sum())
    if not rows:
        return math.nan
    pairs_agree = y * (y - 1) + (n - y) * (n - y - 1)
    pairs_all = np.maximum(n * (n - 1), 1)
    p_bar = float((used * pairs_agree / pairs_all).sum()) / rows
    votes = int((used * n).sum())
    correct = int((used * y).sum())
    if correct in (0, votes):
        return math.nan
    p1 = correct / votes
    p0 = (votes - correct) / votes
    p_e = p0 * p0 + p1 * p1
    return (p_bar - p_e) / (1.0 - p_e)


def fleiss_kappa(votes_k) -> float:
    """Fleiss' kappa of one round, binary categories, raters allowed to vary per row.

    Uses rows with at least 2 valid votes. For row i with n_i valid votes and
    n_ij votes in category j, P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1));
    P-bar is the mean of P_i over those rows; p_j is category j's share of all
    valid votes in those rows and P_e = sum_j p_j**2; kappa = (P-bar - P_e) /
    (1 - P_e). With the same number of raters on every row this is Fleiss'
    (1971) statistic. NaN if no row qualifies or all those votes agree on one
    category (P_e == 1).
    """
    return _fleiss_from_ny(_ny_table(as_round(votes_k)))


def fleiss_kappa_table(counts) -> float:
    """Fleiss' kappa from a subjects x categories count table.

    ``counts[i, j]`` is how many raters put subject i in category j; every
    subject must have the same number of raters (at least 2). Any number of
    categories. NaN if P_e == 1 (all ratings in one category).
    """
    t = np.asarray(counts)
    if t.ndim != 2 or t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"counts must be a non-empty 2-d table, got shape {t.shape}")
    if not np.issubdtype(t.dtype, np.number) or (t < 0).any():
        raise ValueError("counts must be non-negative numbers")
    t = t.astype(np.float64)
    raters = t.sum(axis=1)
    k = raters[0]
    if not (raters == k).all():
        raise ValueError("every subject must have the same number of raters")
    if k < 2:
        raise ValueError("Fleiss' kappa needs at least 2 raters per subject")
    p_cat = t.sum(axis=0) / t.sum()
    p_subj = ((t * t).sum(axis=1) - k) / (k * (k - 1.0))
    p_bar = float(p_subj.mean())
    p_e = float((p_cat * p_cat).sum())
    if p_e == 1.0:
        return math.nan
    return (p_bar - p_e) / (1.0 - p_e)


def _alpha_from_ny(table: np.ndarray) -> float:
    """Krippendorff's nominal alpha from an (n, y) row table.

    Units with n >= 2 are pairable. Coincidences (binary):
    o_10 = o_01 = sum_u y (n - y) / (n - 1); the category totals are n_1 = sum y
    and n_0 = sum (n - y) over pairable units, n.. = n_0 + n_1. With the
    nominal metric alpha = 1 - (n.. - 1) * o_01 / (n_0 * n_1).
    """
    m = table.shape[0] - 1
    n, y = _ny_grid(m)
    used = np.where((n >= 2) & (y <= n), table, 0)
    n1 = int((used * y).sum())
    n0 = int((used * (n - y)).sum())
    if n0 == 0 or n1 == 0:
        return math.nan
    o01 = float((used * (y * (n - y)) / np.maximum(n - 1, 1)).sum())
    total = n0 + n1
    return 1.0 - (total - 1) * o01 / (float(n0) * float(n1))


def krippendorff_alpha_nominal(votes_k) -> float:
    """Krippendorff's alpha (nominal) of one round; rows are units, members are coders.

    Missing votes are allowed; units with fewer than 2 valid votes are not
    pairable and are dropped. Computed from the coincidence matrix,
    alpha = 1 - D_o / D_e. NaN if no unit is pairable or the pairable votes
    all fall in one category.
    """
    return _alpha_from_ny(_ny_table(as_round(votes_k)))




def _round_summary(v: np.ndarray, members: list[str]) -> dict:
    t, ny = _round_tables(v)
    n = t.sum(axis=(2, 3))
    same = t[:, :, 0, 0] + t[:, :, 1, 1]
    agree = np.full(n.shape, np.nan, dtype=np.float64)
    np.divide(same, n, out=agree, where=n != 0)
    kappa = _kappa_from_tables(t)
    pairs = {}
    for i in range(len(members)):
        for j in range(i + 1, len(members)):
            pairs[f"{members[i]}|{members[j]}"] = {
                "percent_agreement": plain(agree[i, j]),
                "cohens_kappa": plain(kappa[i, j]),
                "n": int(n[i, j]),
            }
    return {
        "fleiss_kappa": plain(_fleiss_from_ny(ny)),
        "krippendorff_alpha": plain(_alpha_from_ny(ny)),
        "pairs": pairs,
    }


def agreement_summary(votes, members: list[str]) -> dict:
    """Agreement metrics of both rounds as a plain-Python dict.

    ``votes`` has shape (R, M, 2); ``members`` names the member axis, in
    order. Returns ``{"round1": {...}, "round2": {...}}``, each with
    ``fleiss_kappa``, ``krippendorff_alpha`` and ``pairs``: for every member
    pair in the given order, key ``"a|b"`` -> ``{percent_agreement,
    cohens_kappa, n}``. Floats are rounded to 6 places; NaN becomes None.
    """
    v = as_votes(votes)
    members = list(members)
    if len(members) != v.shape[1]:
        raise ValueError(f"got {len(members)} member names for {v.shape[1]} members")
    if len(set(members)) != len(members):
        raise ValueError("member names must be unique")
    return {
        f"round{k + 1}": _round_summary(np.ascontiguousarray(v[:, :, k]), members)
        for k in range(2)
    }
