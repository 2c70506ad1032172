"""Every figure's text stays inside the figure, with the longest names the figures write and many rows.

The figures lay themselves out from measured labels (council.report.layout) instead of matplotlib's constrained
layout, so nothing but these checks stands between a wrong margin and a clipped label. Extents are taken with
the SVG backend's renderer: the one whose text metrics the page's SVG is written with.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from matplotlib.backends.backend_svg import RendererSVG
from matplotlib.text import Text

from council.report import figures as F
from council.report import layout
from council.report.reading import Timeline
from council.report.svg import BLACK, ORANGE, _style

LONG = 38  # figures._short's limit: a longer name is cut to this many characters


def names(n: int, prefix: str = "vendor") -> list[str]:
    """``n`` names of ``LONG`` characters, like the longest model names (vendor/model-version-variant)."""
    tail = "llama-3.3-70b-instruct-turbo-preview-2025"
    return [(f"{prefix}-{k:02d}/" + tail)[:LONG] for k in range(n)]


def leaderboard():
    rows = [{"name": name, "score": 100 - 2.5 * k, "low": 90 - 2.5 * k, "high": 100.0, "round1": 50.0, "truth": 100.0}
            for k, name in enumerate(names(F.MAX_ROWS))]
    extra = [("round1", "round one (blind)", ORANGE, "D"), ("truth", "true score (simulation's ground truth)",
                                                              BLACK, "x")]
    return F.leaderboard(rows, xlabel="score: % of the model's graded rows judged correct", extra=extra)


def rule_slopes():
    models = names(F.MAX_LINES)
    members = [f"vendor-{k:02d}-with-a-long-name" for k in range(8)]
    rules = ["council", "round1", "all_concur", *(f"without:{m}" for m in members), *(f"single:{m}" for m in members)]
    scores = {r: {m: 100.0 - j - k for k, m in enumerate(models)} for j, r in enumerate(rules)}
    return F.rule_slopes(rules, models, scores, {r: -0.12 for r in rules},
                         {r: models[0] if j % 2 else models[1] for j, r in enumerate(rules)})


def diverging_flips():
    members = names(12)
    return F.diverging_flips(members, [10_000 * k for k in range(12)], [9_999] * 12, [99_999] * 12)


def agreement_heatmap():
    members = names(10)
    kappa = np.full((10, 10), -0.25)
    return F.agreement_heatmap(members, kappa, np.full((10, 10), 0.5), "round two (after seeing peers)")


def scale_kappa_grid():
    members, dims = names(7), ["a dimension with a long name", "accuracy", "style"]
    matrices = {(d, r): np.full((7, 7), 0.5) for d in dims for r in ("round1", "round2")}
    return F.scale_kappa_grid(members, dims, ["round1", "round2"], matrices)


def herding():
    members = names(12)
    return F.herding(members, [10_000] * 12, [9_999] * 12, [1_234] * 12, -0.1234, 0.5678, 1_000_000, 2_000_000)


def reliability_diagrams():
    models = names(7)
    bins = np.linspace(0.05, 0.95, 10)
    titles = [f"{m}\nBrier 0.123 · ECE 0.456 · n 123,456" for m in models]
    return F.reliability_diagrams(models, np.tile(bins, (7, 1)), np.tile(bins[::-1], (7, 1)),
                                  np.full((7, 10), 99_999), titles)


def quota_timelines():
    vendors = names(5)
    t = np.arange(600) * 30.0
    tl = Timeline(bucket_s=30.0, t=t, requests=np.full(600, 123_456.0), rate_limited=(np.arange(600) % 7 == 0) * 3.0)
    return F.quota_timelines(vendors, [tl] * 5)


def crossjudge_deltas():
    models = names(F.MAX_ROWS)
    return F.crossjudge_deltas(models, [-99.9] * len(models), [-100.0] * len(models), [100.0] * len(models),
                               "a cross-judge grader with a name of fifty characters")


FIGURES = [leaderboard, rule_slopes, diverging_flips, agreement_heatmap, scale_kappa_grid, herding,
           reliability_diagrams, quota_timelines, crossjudge_deltas]


def outside(draw) -> list[tuple[str, tuple[float, ...]]]:
    """The texts of the figure ``draw`` returns that reach outside it (with their extents in points)."""
    with _style():
        fig = draw()
        width, height = (72 * x for x in fig.get_size_inches())
        renderer = RendererSVG(width, height, io.StringIO())
        fig.draw(renderer)
        out = []
        for text in fig.findobj(Text):
            if not text.get_visible() or not text.get_text() or (text.axes and not text.axes.get_visible()):
                continue
            box = text.get_window_extent(renderer)
            if not all(map(math.isfinite, box.extents)):
                continue
            if box.x0 < -0.01 or box.y0 < -0.01 or box.x1 > width + 0.01 or box.y1 > height + 0.01:
                out.append((text.get_text(), tuple(round(v, 1) for v in box.extents)))
    return out


@pytest.mark.parametrize("draw", FIGURES, ids=lambda f: f.__name__)
def test_no_label_reaches_outside_the_figure(draw):
    assert outside(draw) == []


@pytest.mark.parametrize("draw", [leaderboard, diverging_flips, herding, crossjudge_deltas],
                         ids=lambda f: f.__name__)
def test_a_margin_without_the_ticks_room_is_caught(draw, monkeypatch):
    # The layout's room for a tick and its pad taken away: the row labels (drawn where matplotlib puts them)
    # reach past the left edge, and the check must say so.
    monkeypatch.setattr(layout, "TICK", 0.0)
    assert any(x0 < 0 for _, (x0, *_rest) in outside(draw))
