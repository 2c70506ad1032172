"""Self-preference audit: how a vendor's own judge grades its own vendor's models, against the same panel's members.

With ``--shadow-self`` the excluded own-vendor member also grades round one blind on its own vendor's rows; its
vote is recorded, never counted. Setting that one vote against the council's consensus reads a single judge's
noise as leniency: one judge errs more than a majority of five, and its errors move its 'correct' rate towards
a half (up where most answers are wrong). So the judge is set against the same panel's members, blind votes of
the same round, and against itself on the rows where it sits normally (other vendors' rows):

- ``leniency_own``: the shadow judge's 'correct' rate minus member k's on the judge's own vendor's rows where
  both voted, per member (``members``) and the mean over them; ``leniency_other``: the same judge's rate minus
  k's on other vendors' rows where both voted; ``leniency_gap``: own minus other (the means over the members
  with rows of both kinds), with its interval. A judge lenient everywhere is lenient on both kinds of rows.
- ``self_preference``: the share of wrong answers the judge calls correct on its own vendor's rows (``own``)
  minus the same share on the others' (``other``), with its interval. A wrong answer: gold incorrect, or
  without gold the blind round-one majority of the other members calls it incorrect.

Why the headline is the second. Judging noise calls about the same share of wrong answers correct on every
vendor's rows, so ``self_preference`` keeps only the favour the judge shows its own family's wrong answers (in
the embedded provider: accuracy times its ``self_preference``), plus what the difficulty of the two sets of
wrong answers differs in. ``leniency_gap`` cannot remove noise: where the judge's accuracy a differs from
member k's a_k and the share p of right answers differs between its own vendor's rows and the others', it
keeps about (a_k - a) * 2 * (p_other - p_own), of either sign. Intervals: percentile bootstrap over items,
every figure's two sides on the same resampled rows.
"""

from __future__ import annotations

import numpy as np

from ._bootstrap import _percentile_interval, bootstrap_scores, score_matrix
from ._codes import CORRECT, INCORRECT, MISSING, plain


def self_preference(shadow, votes_k, gold, group, judge_of_group, item, n_items: int, members: list[str], *,
                    n_resamples: int = 1000, seed=0, ci: float = 0.95) -> list[dict | None]:
    """Per group (the rows' vendor) the audit of the module docstring, as plain Python; None for a group without
    a shadow vote or a judge.

    ``shadow`` (R,) the shadow judge's vote codes (MISSING where none), ``votes_k`` (R, M) the round-one votes,
    ``gold`` (R,) codes, ``group`` (R,) each row's group, ``judge_of_group`` (G,) the member column of each
    group's own judge (-1: no member of that vendor), ``item`` (R,) the rows' items for the bootstrap."""
    shadow, v, gold = np.asarray(shadow), np.asarray(votes_k), np.asarray(gold)
    group, judges, it = (np.asarray(x, dtype=np.int64) for x in (group, judge_of_group, item))
    # Columns, per group with a shadow vote: two for its wrong answers (the shadow judge on its own vendor's,
    # the judge on the others'), then four per other member k (the shadow judge on its own rows, k on the same
    # rows, the judge on other vendors' rows, k on the same rows). Each pair shares its rows: paired.
    rows, cols, right = [], [], []
    audited = []  # (group, its first column, its other members, its own rows, its other rows, wrong answers)

    def column(mask: np.ndarray, vote: np.ndarray) -> None:
        at = np.flatnonzero(mask & (vote != MISSING))
        rows.append(at)
        cols.append(np.full(at.size, len(rows) - 1))
        right.append(vote[at] == CORRECT)

    for g, j in enumerate(judges):
        own = (group == g) & (shadow != MISSING)
        if j < 0 or not own.any():
            continue
        other = (group != g) & (v[:, j] != MISSING)
        wrong = _wrong(v, gold, j)
        audited.append((g, len(rows), [k for k in range(v.shape[1]) if k != j], own, other, wrong))
        column(own & wrong, shadow)
        column(other & wrong, v[:, j])
        for k in audited[-1][2]:
            voted = v[:, k] != MISSING
            for mask, vote in ((own, shadow), (own, v[:, k]), (other, v[:, j]), (other, v[:, k])):
                column(mask & voted, vote)
    out: list[dict | None] = [None] * len(judges)
    if not audited:
        return out
    row = np.concatenate(rows)
    S, C = score_matrix(it[row], np.concatenate(cols), np.concatenate(right).astype(np.float64), n_items, len(rows))
    boot = bootstrap_scores(S, C, n_resamples=n_resamples, seed=seed, ci=ci)
    for g, first, others, own, other, wrong in audited:
        j = int(judges[g])
        point = boot.point[first + 2:first + 2 + 4 * len(others)].reshape(-1, 4)
        samples = boot.samples[:, first + 2:first + 2 + 4 * len(others)].reshape(n_resamples, -1, 4)
        lenient_own, lenient_other = point[:, 0] - point[:, 1], point[:, 2] - point[:, 3]
        both = ~np.isnan(lenient_own) & ~np.isnan(lenient_other)  # the members with rows of both kinds
        names = [members[k] for k in others]
        resampled = ((samples[:, both, 0] - samples[:, both, 1]) - (samples[:, both, 2] - samples[:, both, 3])
                     ).mean(axis=1) if both.any() else np.full(n_resamples, np.nan)  # NaN: a side not drawn
        out[g] = {
            "judge": members[j], "rows": int(own.sum()), "rows_other": int(other.sum()),
            "shadow_correct_rate": plain(np.mean(shadow[own] == CORRECT)),
            "leniency_own": {"mean": plain(lenient_own[both].mean() if both.any() else np.nan),
                             "members": {n: plain(x) for n, x in zip(names, lenient_own, strict=True)}},
            "leniency_other": {"mean": plain(lenient_other[both].mean() if both.any() else np.nan),
                               "members": {n: plain(x) for n, x in zip(names, lenient_other, strict=True)}},
            "leniency_gap": {**_interval(lenient_own[both].mean() - lenient_other[both].mean() if both.any()
                                         else np.nan, resampled, ci), "members": int(both.sum())},
            "self_preference": {
                "own": plain(boot.point[first]), "other": plain(boot.point[first + 1]),
                "rows_own": int(C[first].sum()), "rows_other": int(C[first + 1].sum()),
                "rows_own_by_gold": int((own & wrong & (gold != MISSING)).sum()),
                **_interval(boot.point[first] - boot.point[first + 1],
                            boot.samples[:, first] - boot.samples[:, first + 1], ci)},
        }
    return out


def _wrong(v: np.ndarray, gold: np.ndarray, j: int) -> np.ndarray:
    """(R,) bool: the answer is wrong by gold where known, else by a strict majority of the round-one votes of
    the members other than ``j`` (blind, so no vote there was moved by the judge's)."""
    rest = np.delete(v, j, axis=1)
    yes, no = (rest == CORRECT).sum(axis=1), (rest == INCORRECT).sum(axis=1)
    return np.where(gold != MISSING, gold == INCORRECT, no > yes)


def _interval(value: float, samples: np.ndarray, ci: float) -> dict:
    low, high = _percentile_interval(np.asarray(samples, dtype=np.float64)[:, None], ci)
    return {"value": plain(value), "ci_low": plain(low[0]), "ci_high": plain(high[0])}
