"""Grader-rule sensitivity: how much a leaderboard depends on the grading rule.

Each rule turns a (R, M, 2) vote array into a per-row 0/1 verdict and a
per-row "scored" mask; a model's score is its mean verdict over its scored
rows (``group_scores``). Rules, in the order they are reported:

- ``council``: round-two consensus (strict majority, quorum); every row scored.
- ``round1``: round-one consensus; every row scored.
- ``single:<member>``: that member's round-one vote, i.e. what one blind
  judge says; scored where the member voted validly in round one.
- ``without:<member>``: round-two consensus of the other members (same rule
  and quorum, the member's votes treated as missing); every row scored.
- ``all_concur``: 1 iff there is at least one valid round-two vote and every
  valid round-two vote is correct; every row scored (rows without a valid
  vote count as 0).

Leaderboards are compared with Kendall's tau-b against ``council``.
"""

from __future__ import annotations

import math

import numpy as np

from ._codes import CORRECT, MISSING, as_votes, check_names, check_quorum, plain
from ._consensus import consensus
from ._scores import group_scores




def _scores(verdict: np.ndarray, scored: np.ndarray | None, model: np.ndarray, n_models: int):
    if scored is None:
        return group_scores(verdict, model, n_models)
    return group_scores(verdict[scored], model[scored], n_models)


def rule_scores(
    votes, model, n_models: int, members: list[str], quorum: int = 3
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-model scores under every grading rule.

    ``model`` (R,) holds each row's model index in ``[0, n_models)``. Returns
    ``{rule: (scores, counts)}`` with float scores (NaN for a model with no
    scored row) and int scored-row counts, both of shape (n_models,), in the
    order council, round1, single:<m> for each member, without:<m> for each
    member, all_concur.
    """
    v = as_votes(votes)
    q = check_quorum(quorum)
    members = check_names(members, v.shape[1], "member")
    mdl = np.asarray(model)
    if mdl.ndim != 1 or mdl.shape[0] != v.shape[0]:
        raise ValueError(f"model must have shape ({v.shape[0]},), got {mdl.shape}")
    # Validates model's dtype and range once, before any other work.
    group_scores(np.zeros(mdl.shape[0], dtype=np.int8), mdl, n_models)
    mdl = mdl.astype(np.int64, copy=False)

    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    verdict = consensus(v, q).verdict
    out["council"] = _scores(verdict[:, 1], None, mdl, n_models)
    out["round1"] = _scores(verdict[:, 0], None, mdl, n_models)
    for j, name in enumerate(members):
        r1 = v[:, j, 0]
        out[f"single:{name}"] = _scores(r1 == CORRECT, r1 != MISSING, mdl, n_models)
    for j, name in enumerate(members):
        reduced = v.copy()
        reduced[:, j, :] = MISSING
        out[f"without:{name}"] = _scores(consensus(reduced, q).verdict[:, 1], None, mdl, n_models)
        del reduced
    r2 = v[:, :, 1]
    any_valid = (r2 != MISSING).any(axis=1)
    none_incorrect = ~((r2 != MISSING) & (r2 != CORRECT)).any(axis=1)
    out["all_concur"] = _scores(any_valid & none_incorrect, None, mdl, n_models)
    return out


def _pair_signs(a: np.ndarray) -> np.ndarray:
    """(n, n) int matrix sign(a[i] - a[j]), by comparison so that infinities order correctly."""
    return (a[:, None] > a[None, :]).astype(np.int64) - (a[:, None] < a[None, :])


def average_ranks(x) -> np.ndarray:
    """1-based ranks of ``x`` (float64), ties given the mean of the ranks they span."""
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"x must be one-dimensional, got shape {v.shape}")
    _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    before = np.cumsum(counts) - counts  # values strictly smaller
    return (before + (counts + 1) / 2.0)[inverse.reshape(-1)]


def spearman(x, y) -> float:
    """Spearman's rho: Pearson's r of the average ranks of ``x`` and ``y``.

    ``rho = sum(dx * dy) / sqrt(sum(dx^2) * sum(dy^2))`` with ``dx``, ``dy``
    the ranks minus their mean. Pairs where either value is NaN are left out;
    NaN when fewer than 2 pairs remain or either side is constant. Equals
    ``scipy.stats.spearmanr(x, y).statistic`` (ties included).
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"x {a.shape} and y {b.shape} must be one-dimensional of equal length")
    ok = ~(np.isnan(a) | np.isnan(b))
    if np.count_nonzero(ok) < 2:
        return math.nan
    rx, ry = average_ranks(a[ok]), average_ranks(b[ok])
    dx, dy = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if den == 0.0:
        return math.nan
    return max(-1.0, min(1.0, float(dx @ dy) / den))


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b between two score vectors.

    Pairs where either entry is NaN are dropped. Ties are handled by the
    tau-b correction ``(C - D) / sqrt((P - T_x)(P - T_y))`` with P the number
    of pairs and T_x, T_y the pairs tied in x and in y. NaN with fewer than
    two entries or when either vector is constant. O(n^2), meant for
    leaderboards of tens of models.
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"x {a.shape} and y {b.shape} differ in shape")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = a.shape[0]
    if n < 2:
        return math.nan
    iu = np.triu_indices(n, k=1)
    sa = _pair_signs(a)[iu]
    sb = _pair_signs(b)[iu]
    pairs = n * (n - 1) // 2
    tied_a = int(np.count_nonzero(sa == 0))
    tied_b = int(np.count_nonzero(sb == 0))
    if tied_a == pairs or tied_b == pairs:
        return math.nan
    s = float((sa * sb).sum())
    tau = s / math.sqrt(pairs - tied_a) / math.sqrt(pairs - tied_b)
    return min(1.0, max(-1.0, tau))




def sensitivity_summary(
    votes, model, model_names: list[str], members: list[str], quorum: int = 3
) -> dict:
    """Grader-rule sensitivity as a plain-Python dict (6-place rounding, NaN becomes None).

    ``model_names`` names the model indices in order. Keys:

    - ``rules``: {rule: {model_name: score}} for every rule, council first.
    - ``kendall_tau_vs_council``: {rule: tau-b of the rule's scores against
      council's} for every rule other than council.
    - ``top_model``: {rule: name of the highest-scoring model} for every rule;
      ties go to the earlier model, None if no model has a score.
    - ``max_abs_change_vs_council``: {rule: largest |score - council score|
      over models scored under both} for every rule other than council.
    """
    names = list(model_names)
    if len(set(names)) != len(names):
        raise ValueError("model names must be unique")
    scores = {rule: s for rule, (s, _counts) in rule_scores(votes, model, len(names), members, quorum).items()}
    council = scores["council"]
    top: dict[str, str | None] = {}
    for rule, s in scores.items():
        valid = ~np.isnan(s)
        top[rule] = names[int(np.argmax(np.where(valid, s, -np.inf)))] if valid.any() else None
    taus: dict[str, float | None] = {}
    changes: dict[str, float | None] = {}
    for rule, s in scores.items():
        if rule == "council":
            continue
        taus[rule] = plain(kendall_tau_b(s, council))
        both = ~(np.isnan(s) | np.isnan(council))
        changes[rule] = plain(np.abs(s[both] - council[both]).max()) if both.any() else None
    return {
        "rules": {rule: {name: plain(s[i]) for i, name in enumerate(names)} for rule, s in scores.items()},
        "kendall_tau_vs_council": taus,
        "top_model": top,
        "max_abs_change_vs_council": changes,
    }
