"""Reliability of members and consensus against a gold verdict.

Gold labels use the vote codes: 1 correct, 0 incorrect, -1 unknown. Rows with
unknown gold are left out everywhere. Undefined values are NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ._agreement import _kappa_from_tables, _pair_counts
from ._codes import CORRECT, INCORRECT, MISSING, _as_int_array, _check_codes, as_round, as_votes, plain
from ._scores import _as_1d, _as_gold


def _gold_tables(cols: np.ndarray, g: np.ndarray) -> np.ndarray:
    """2 x 2 tables of predictions against gold, shape (P, 2, 2).

    ``cols`` (P, R) holds P predictions in vote codes, ``g`` (R,) gold codes.
    ``t[p, a, b]``: rows where prediction p is in category a and gold in
    category b, index 0 correct and 1 incorrect; unknowns fall out.
    """
    gold_cats = (g == CORRECT, g == INCORRECT)
    t = np.empty((cols.shape[0], 2, 2), dtype=np.int64)
    buf = np.empty(g.shape[0], dtype=bool)
    for p in range(cols.shape[0]):
        for a, code in enumerate((CORRECT, INCORRECT)):
            pred_cat = cols[p] == code
            for b, gold_cat in enumerate(gold_cats):
                np.logical_and(pred_cat, gold_cat, out=buf)
                t[p, a, b] = np.count_nonzero(buf)
    return t


def _accuracy_from_tables(t: np.ndarray) -> np.ndarray:
    """Share of the scored rows of (..., 2, 2) tables on the diagonal; NaN if none."""
    n = t.sum(axis=(-2, -1))
    out = np.full(n.shape, np.nan, dtype=np.float64)
    np.divide(t[..., 0, 0] + t[..., 1, 1], n, out=out, where=n != 0)
    return out


def kappa_against(pred, gold) -> float:
    """Cohen's kappa between a prediction and gold over rows where both are known.

    ``pred`` (R,) holds vote codes (-1 missing), ``gold`` (R,) gold codes.
    Binary categories incorrect / correct. NaN if no row has both, or the
    expected agreement is 1 (prediction and gold constant on the same verdict).
    """
    p = _as_1d(pred, "pred")
    _check_codes(p, "pred")
    g = _as_gold(gold, p.shape[0])
    return float(_kappa_from_tables(_gold_tables(p[None, :], g))[0])


def _error_pair_counts(v: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(M, M, 2, 2) tables of error (index 0) / right (index 1) per member pair.

    A member is scored on a row when it voted and gold is known.
    """
    cols = np.ascontiguousarray(v.T)
    scored = (cols != MISSING) & (g != MISSING)[None, :]
    wrong = scored & (cols != g[None, :])
    right = scored & ~wrong
    return _pair_counts(wrong, right)


def _phi_from_tables(t: np.ndarray) -> np.ndarray:
    """Pearson correlation of two 0/1 indicators from 2 x 2 tables (..., 2, 2).

    Index 0 is indicator 1. r = (n * n_11 - a * b) / sqrt(a (n - a) b (n - b))
    with a, b the indicator totals; NaN if n == 0 or either has zero variance.
    """
    n = t.sum(axis=(-2, -1))
    a = t[..., 0, :].sum(axis=-1)
    b = t[..., :, 0].sum(axis=-1)
    nf = n.astype(np.float64)
    num = nf * t[..., 0, 0] - a.astype(np.float64) * b
    var_a = a.astype(np.float64) * (n - a)
    var_b = b.astype(np.float64) * (n - b)
    den = np.sqrt(var_a) * np.sqrt(var_b)
    defined = (var_a > 0) & (var_b > 0)
    out = np.full(n.shape, np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=defined)
    return np.clip(out, -1.0, 1.0, out=out)


def error_correlation(votes_k, gold) -> np.ndarray:
    """Pearson correlation of members' error indicators, shape (M, M), symmetric.

    A member errs on a row when its vote differs from gold. For each pair the
    correlation is over rows where both members voted and gold is known. NaN
    where there is no such row or either indicator is constant there. The
    diagonal is 1.0 where the member's own indicator varies, else NaN.
    """
    v = as_round(votes_k)
    g = _as_gold(gold, v.shape[0])
    return _phi_from_tables(_error_pair_counts(v, g))


def _effective_from_corr(corr: np.ndarray) -> tuple[float, float]:
    """(rho_bar, M_eff) from an (M, M) error correlation matrix."""
    m = corr.shape[0]
    if m == 1:
        return math.nan, 1.0
    if m == 0:
        return math.nan, math.nan
    off = corr[np.triu_indices(m, k=1)]
    off = off[~np.isnan(off)]
    if not off.size:
        return math.nan, math.nan
    rho_bar = float(off.mean())
    den = 1.0 + (m - 1) * rho_bar
    return rho_bar, (m / den if den > 0 else math.inf)


def effective_judges(votes_k, gold) -> float:
    """Effective number of independent judges, M_eff = M / (1 + (M - 1) * rho_bar).

    A design-effect style estimate: rho_bar is the mean off-diagonal error
    correlation (see ``error_correlation``; NaN pairs ignored) and M the
    number of members. Judges with uncorrelated errors give M, perfectly
    correlated errors give 1, and negatively correlated errors give more than
    M. NaN if no pair's correlation is defined (1.0 for a single member);
    inf if rho_bar <= -1 / (M - 1), which pairwise row selection can allow.
    """
    return _effective_from_corr(error_correlation(votes_k, gold))[1]




def truth_summary(votes, consensus_verdict, gold, members: list[str]) -> dict | None:
    """Reliability against gold as a plain-Python dict; None if no row has known gold.

    ``votes`` (R, M, 2), ``consensus_verdict`` (R, 2) of 0/1 per round, ``gold``
    (R,). Keys: ``members`` {name: {accuracy_round1, accuracy_round2,
    kappa_round1, kappa_round2}} (accuracy = share of the member's valid votes
    on rows with gold that equal gold), ``consensus`` {the same four keys},
    ``error_correlation`` {"a|b": r}, ``mean_error_correlation``,
    ``effective_judges`` (these three from the round-two votes) and
    ``rows_with_gold``. Floats are rounded to 6 places; NaN becomes None.
    """
    v = as_votes(votes)
    rows, m = v.shape[0], v.shape[1]
    members = list(members)
    if len(members) != m:
        raise ValueError(f"got {len(members)} member names for {m} members")
    if len(set(members)) != len(members):
        raise ValueError("member names must be unique")
    verdict = _as_int_array(consensus_verdict, "consensus_verdict")
    if verdict.shape != (rows, 2):
        raise ValueError(f"consensus_verdict must have shape ({rows}, 2), got {verdict.shape}")
    if verdict.size and (verdict.min() < 0 or verdict.max() > 1):
        raise ValueError("consensus_verdict may only contain 0 and 1")
    g = _as_gold(gold, rows).astype(np.int8)
    known = int(np.count_nonzero(g != MISSING))
    if not known:
        return None

    rounds = [np.ascontiguousarray(v[:, :, k]) for k in range(2)]
    member_tables = [_gold_tables(np.ascontiguousarray(r.T), g) for r in rounds]
    verdict_tables = _gold_tables(np.ascontiguousarray(verdict.T.astype(np.int8)), g)
    member_stats = {}
    for j, name in enumerate(members):
        member_stats[name] = {
            f"{stat}_round{k + 1}": plain(fn(member_tables[k][j]))
            for stat, fn in (("accuracy", _accuracy_from_tables), ("kappa", _kappa_from_tables))
            for k in range(2)
        }
    consensus_stats = {
        f"{stat}_round{k + 1}": plain(fn(verdict_tables[k]))
        for stat, fn in (("accuracy", _accuracy_from_tables), ("kappa", _kappa_from_tables))
        for k in range(2)
    }

    corr = _phi_from_tables(_error_pair_counts(rounds[1], g))
    rho_bar, m_eff = _effective_from_corr(corr)
    return {
        "members": member_stats,
        "consensus": consensus_stats,
        "error_correlation": {
            f"{members[i]}|{members[j]}": plain(corr[i, j])
            for i in range(m)
            for j in range(i + 1, m)
        },
        "mean_error_correlation": plain(rho_bar),
        "effective_judges": plain(m_eff),
        "rows_with_gold": known,
    }


def council_versus_members(council, votes_k, gold, item, n_items: int, members: list[str], *,
                           n_resamples: int = 1000, seed=0, ci: float = 0.95) -> dict | None:
    """The council's accuracy against gold next to each member's (round one), and the council minus each member
    on exactly the rows that member voted: the claim "the council beats its best member" measured, whatever its
    sign. None when no row has gold.

    ``council`` (R,) 0/1 verdicts, ``votes_k`` (R, M) one round's votes, ``gold`` (R,) codes, ``item`` (R,) the
    rows' items. ``judges`` holds each one's accuracy on its own rows (the council on every row with gold, a
    member on those it voted: self-exclusion keeps a member off its own vendor's rows) with a percentile
    bootstrap interval over items. ``council_minus_member[m]`` is paired: the council's accuracy minus m's on
    the rows with gold that m voted (``rows``), resampled over items with both sides on the same resampled
    rows, with its interval. Accuracies on different rows are not comparable (the rows a member sits out are
    other vendors' easier or harder ones), so the best member is chosen on the same paired basis: the member
    whose paired difference is smallest, the one the council is furthest from beating on its own rows (ties:
    the first in ``members``). ``council_minus_best_member`` is its difference."""
    from ._bootstrap import _percentile_interval, bootstrap_scores, score_matrix

    c = _as_1d(council, "council")
    v = as_round(votes_k)
    g = _as_gold(gold, v.shape[0])
    it = np.asarray(item, dtype=np.int64)
    members = list(members)
    known = g != MISSING
    if not known.any():
        return None
    m = v.shape[1]
    # Columns 0..M: each judge on its own rows (the council, then the members); then per member j the council
    # (column M + 1 + 2j) and j itself (column M + 2 + 2j) on the rows j voted. One column at a time, so that
    # what is held beside the votes is a few values per row, not one per vote.
    S = np.zeros((3 * m + 1, n_items))
    C = np.zeros((3 * m + 1, n_items), dtype=np.int64)
    council_right = c == g
    for col in range(m + 1):
        judge = c if col == 0 else v[:, col - 1]
        rows = np.flatnonzero((judge != MISSING) & known)
        S[col], C[col] = score_matrix(it[rows], np.zeros(len(rows), dtype=np.int64),
                                      (judge[rows] == g[rows]).astype(np.float64), n_items, 1)
        if col:  # the pair: the council and the member on the member's rows (the same rows, so the same counts)
            S[m + 2 * col - 1] = np.bincount(it[rows], weights=council_right[rows], minlength=n_items)
            S[m + 2 * col], C[m + 2 * col - 1], C[m + 2 * col] = S[col], C[col], C[col]
    boot = bootstrap_scores(S, C, n_resamples=n_resamples, seed=seed, ci=ci)
    names = ["council", *members]
    if np.isnan(boot.point[1:m + 1]).all():
        return None
    pair = slice(m + 1, None)
    point = boot.point[pair][0::2] - boot.point[pair][1::2]
    diffs = boot.samples[:, pair][:, 0::2] - boot.samples[:, pair][:, 1::2]  # NaN where m's rows were not drawn
    low, high = _percentile_interval(diffs, ci)
    rows = ((v != MISSING) & known[:, None]).sum(axis=0)
    versus = {name: {"value": plain(point[j]), "ci_low": plain(low[j]), "ci_high": plain(high[j]),
                     "rows": int(rows[j])} for j, name in enumerate(members)}
    best = int(np.nanargmin(point))
    return {
        "judges": {n: {"accuracy": plain(p), "ci_low": plain(lo), "ci_high": plain(hi)} for n, p, lo, hi in
                   zip(names, boot.point[:m + 1], boot.low[:m + 1], boot.high[:m + 1], strict=True)},
        "council_minus_member": versus,
        "best_member": members[best],
        "council_minus_best_member": versus[members[best]],
    }
