"""The council's own figures of an eval as inspect metrics, computed by the aggregator from the votes each score's
metadata holds, as ``summary.json`` computes them: agreement lift and deliberation impact over the samples that
deliberated. Each epoch of a sample is a row of its own, so they read the unreduced scores (a reducer keeps no
metadata). The samples the council could not grade are unscored, which inspect counts itself
(``unscored_samples`` of the eval's score) and hands to no metric."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from inspect_ai.scorer import Metric, SampleScore, metric

import aggregator as agg
from council.scoring.arrays import CODE


def _votes(scores: list[SampleScore]) -> np.ndarray:
    """(R, M, 2) vote codes of the samples that were graded and deliberated, members in metadata order."""
    rows = []
    for s in scores:
        meta = s.score.metadata or {}
        if meta.get("not_graded", True) or not meta.get("deliberated"):
            continue
        rows.append([[CODE.get(meta[f"votes_round{r}"].get(m), agg.MISSING) for r in (1, 2)] for m in meta["members"]])
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width, 2), agg.MISSING, dtype=np.int8)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _over_votes(figure: Callable[[np.ndarray], float]) -> Metric:
    """A metric computing ``figure`` on the scores' vote arrays (NaN when no sample deliberated)."""

    def compute(scores: list[SampleScore]) -> float:
        votes = _votes(scores)
        return figure(votes) if len(votes) else math.nan

    return compute


@metric(name="grading_council/agreement_lift", scores="unreduced")
def agreement_lift() -> Metric:
    """Mean agreement of the members in round two minus round one, over the samples that deliberated (NaN: none)."""
    return _over_votes(agg.agreement_lift)


@metric(name="grading_council/deliberation_impact", scores="unreduced")
def deliberation_impact() -> Metric:
    """Share of the samples that deliberated on which some member changed its verdict in round two (NaN: none)."""
    return _over_votes(agg.deliberation_impact)
