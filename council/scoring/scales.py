"""Scoring graded items (a bank ``scale``): each row's council levels and 0-100 score, and each scale's summary.

The rules are the aggregator's (:mod:`aggregator._scales`), applied per scale to its graded rows:

- the council's level for a dimension is the median of the valid round-two levels, the lower middle one for
  an even count (flagged ``split:<dim>``): a split panel never lifts a score, as a binary tie resolves to
  incorrect, and the result stays a level of the scale;
- a dimension with fewer valid levels than the quorum has no council level (``omitted:<dim>``) and counts 0 in
  the normalised score, never dropped from its denominator;
- the normalised score is ``100 * sum_d w_d * level_d / high``.

Reliability (Krippendorff's alpha ordinal and interval, ICC(2,1) and ICC(2,k), quadratic-weighted kappa per
member pair) is reported per dimension and round; deliberation as the share of levels moved and the drop in
the members' dispersion; bootstrap intervals on every model's score, overall and per dimension; and each
member's leniency (mean offset from its row's median, round one) with the offset of the panel each producing
vendor's rows get: self-exclusion seats different panels, so members that differ in leniency give the council a
vendor-dependent offset (``leniency.panel_offset_by_vendor``, ``panel_spread_points``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import aggregator as agg
from council.core.schema import Scale
from council.scoring.arrays import VoteArrays


@dataclass(frozen=True)
class ScaleRows:
    """The graded rows of one scale: their indexes in the run's arrays, levels and council decision."""

    scale: Scale
    rows: np.ndarray  # (n,) indexes into the run's rows (graded rows of this scale)
    levels: np.ndarray  # (n, M, D, 2)
    consensus: agg.ScoreConsensus
    normalised: np.ndarray  # (n,)

    @classmethod
    def of(cls, scale: Scale, rows: np.ndarray, levels: np.ndarray, quorum: int) -> ScaleRows:
        """Decide rows whose panel's levels are ``levels`` (n, M, D, 2; NaN outside the panel)."""
        cons = agg.score_consensus(levels, quorum=min(quorum, max(1, levels.shape[1])))
        value = agg.normalised_scores(cons.council, scale.weights, scale.high)[0] if len(rows) else np.zeros(0)
        return cls(scale, rows, levels, cons, value)

    def fields(self, k: int, members: list[str], columns: np.ndarray) -> dict[str, Any]:
        """The ``RowVerdict`` fields of the ``k``-th row: levels by member and round, council levels, score, flags."""
        names = self.scale.names
        council = self.consensus.council[k]

        def given(j: int, r: int) -> dict[str, int]:
            return {d: int(x) for d, x in zip(names, self.levels[k, j, : len(names), r], strict=True) if not np.isnan(x)}

        flags = [f"omitted:{d}" for d, no in zip(names, self.consensus.no_quorum[k, : len(names), 1], strict=True) if no]
        flags += [f"split:{d}" for d, t in zip(names, self.consensus.tie[k, : len(names), 1], strict=True) if t]
        return {
            "scale": self.scale.name,
            "scores_round1": {members[j]: given(j, 0) for j in columns},
            "scores_round2": {members[j]: given(j, 1) for j in columns},
            "score": {d: None if np.isnan(x) else int(x) for d, x in zip(names, council[: len(names)], strict=True)},
            "score_normalised": round(float(self.normalised[k]), 6),
            "flags": flags,
        }


def decide(a: VoteArrays, quorum: int) -> list[ScaleRows]:
    """Each scale's graded rows with the council's levels (median rule) and normalised scores."""
    out = []
    for s, scale in enumerate(a.scales):
        rows = np.flatnonzero((a.scale_of_row == s) & a.graded)
        d = len(scale.names)
        given = a.levels[rows][:, :, :d, :]
        seated = a.eligible[rows][:, :, None, None] & (given != agg.MISSING)  # only the panel's levels count
        levels = np.where(seated, given, np.nan)
        out.append(ScaleRows.of(scale, rows, levels, quorum))
    return out


def audit_changes(decided: list[ScaleRows], a: VoteArrays, quorum: int) -> tuple[int, int]:
    """Over the graded items' deliberation-audit rows whose round two is complete: how many would have had
    another council level on some dimension had their (uncounted) round two counted, and how many there are."""
    changed = total = 0
    for sr in decided:
        audit = a.deliberation_audit[sr.rows] & a.audit_complete[sr.rows]
        if not audit.any():
            continue
        rows, d = sr.rows[audit], len(sr.scale.names)
        given = a.audit_levels[rows][:, :, :d]
        seated = a.eligible[rows][:, :, None] & (given != agg.MISSING)
        levels = sr.levels[audit].copy()
        levels[..., 1] = np.where(seated, given, np.nan)
        moved = agg.score_consensus(levels, quorum=min(quorum, max(1, levels.shape[1]))).council
        kept = sr.consensus.council[audit]
        differs = ~((moved == kept) | (np.isnan(moved) & np.isnan(kept)))
        changed += int(differs.any(axis=1).sum())
        total += int(audit.sum())
    return changed, total


def _num(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else round(x, 6)


def _interval(r: agg.BootstrapResult, k: int) -> dict[str, float | None]:
    return {"score": _num(r.point[k]), "ci_low": _num(r.low[k]), "ci_high": _num(r.high[k])}


def _icc(ratings: np.ndarray, panels: np.ndarray, members: list[str]) -> dict[str, Any]:
    """ICC(2,1) and ICC(2,k) per panel: the same raters must score every target, and self-exclusion seats a
    different panel on each producing vendor's rows, so each panel's rows are a table of their own (a row with
    a missing level is dropped from it). ``icc2_1`` / ``icc2_k`` are their means weighted by rows used."""
    by_panel: dict[str, Any] = {}
    for pattern in np.unique(panels, axis=0):
        cols = np.flatnonzero(pattern)
        rows = (panels == pattern).all(axis=1)
        if len(cols) < 2 or rows.sum() < 3:
            continue
        icc = agg.icc2(ratings[rows][:, cols])
        if icc.targets >= 3:
            by_panel["+".join(members[j] for j in cols)] = {
                "icc2_1": _num(icc.single), "icc2_1_ci": [_num(icc.single_low), _num(icc.single_high)],
                "icc2_k": _num(icc.average), "icc2_k_ci": [_num(icc.average_low), _num(icc.average_high)],
                "rows": icc.targets, "dropped": icc.dropped}
    used = [(v["rows"], v["icc2_1"], v["icc2_k"]) for v in by_panel.values() if v["icc2_1"] is not None]
    weight = sum(n for n, _, _ in used)
    return {"icc2_1": _num(sum(n * a for n, a, _ in used) / weight) if weight else None,
            "icc2_k": _num(sum(n * b for n, _, b in used if b is not None) / weight) if weight else None,
            "icc_by_panel": by_panel}


def _reliability(ratings: np.ndarray, panels: np.ndarray, members: list[str]) -> dict[str, Any]:
    """Agreement of the members on one dimension and round: ``ratings`` (rows, M) with NaN gaps, ``panels``
    (rows, M) who sat."""
    kappa = agg.quadratic_kappa_pairs(ratings)
    return {
        "alpha_ordinal": _num(agg.krippendorff_alpha_ordinal(ratings)),
        "alpha_interval": _num(agg.krippendorff_alpha_interval(ratings)),
        **_icc(ratings, panels, members),
        "kappa_quadratic": {f"{members[i]}|{members[j]}": _num(kappa[i, j])
                            for i in range(len(members)) for j in range(i + 1, len(members))},
    }


def summary(decided: list[ScaleRows], a: VoteArrays, *, seed: int, resamples: int) -> dict[str, Any]:
    """Per scale: its definition, each model's score with intervals (overall and per dimension), reliability
    per dimension and round, deliberation (levels moved, dispersion lifted) and flag counts."""
    out: dict[str, Any] = {}
    for sr in decided:
        scale, names = sr.scale, sr.scale.names
        n_models, n_items = len(a.models), len(a.items)
        entry: dict[str, Any] = {
            "levels": scale.levels, "high": scale.high,
            "dimensions": {d.name: d.weight for d in scale.dimensions}, "rows": int(len(sr.rows)),
        }
        if not len(sr.rows):
            out[scale.name] = entry
            continue
        overall, by_dim = agg.bootstrap_rubric(a.item[sr.rows], a.model[sr.rows], sr.consensus.council,
                                               scale.weights, scale.high, n_items, n_models,
                                               n_resamples=resamples, seed=seed)
        counts = np.bincount(a.model[sr.rows], minlength=n_models)
        entry["models"] = {
            a.models[k]: {**_interval(overall, k), "rows": int(counts[k]),
                          "by_dimension": {d: _interval(by_dim[i], k) for i, d in enumerate(names)}}
            for k in sorted(np.flatnonzero(counts), key=lambda k: a.models[k])
        }
        entry["reliability"] = {
            d: {f"round{r + 1}": _reliability(sr.levels[:, :, i, r], a.eligible[sr.rows], a.members) for r in (0, 1)}
            for i, d in enumerate(names)
        }
        moved = sr.levels[a.deliberated[sr.rows]]  # deliberation on the rows that deliberated
        impact, lift = agg.score_deliberation_impact(moved), agg.score_agreement_lift(moved)
        entry["deliberation_impact"] = {
            "moved": _num(impact.moved), "mean_abs_move": _num(impact.mean_abs_move), "cells": impact.cells,
            "by_dimension": {d: _num(x) for d, x in zip(names, impact.moved_by_dimension, strict=True)}}
        entry["agreement_lift"] = {
            "lift": _num(lift.lift), "dispersion_round1": _num(lift.dispersion_round1),
            "dispersion_round2": _num(lift.dispersion_round2), "cells": lift.cells,
            "by_dimension": {d: _num(x) for d, x in zip(names, lift.lift_by_dimension, strict=True)}}
        vendors = sorted({a.vendor_of_row[i] for i in sr.rows})
        at = {v: g for g, v in enumerate(vendors)}
        lenient = agg.panel_leniency(sr.levels, np.array([at[a.vendor_of_row[i]] for i in sr.rows], dtype=np.int64),
                                     len(vendors))
        points = 100.0 / scale.high
        entry["leniency"] = {
            "members": {m: _num(x) for m, x in zip(a.members, lenient.member_offset, strict=True) if not np.isnan(x)},
            "panel_offset_by_vendor": {v: {"levels": _num(lenient.group_offset[g]),
                                           "points": _num(points * lenient.group_offset[g]),
                                           "rows": int(lenient.group_rows[g])} for v, g in at.items()},
            "panel_spread_points": _num(points * lenient.spread),
        }
        entry["flags"] = {
            "omitted": {d: int(sr.consensus.no_quorum[:, i, 1].sum()) for i, d in enumerate(names)},
            "split": {d: int(sr.consensus.tie[:, i, 1].sum()) for i, d in enumerate(names)},
            "rows_with_omitted": int(sr.consensus.no_quorum[:, :, 1].any(axis=1).sum()),
        }
        out[scale.name] = entry
    return out
