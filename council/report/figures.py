"""The report's figures: matplotlib, drawn without pyplot, each a function returning its ``Figure``; drawn under
the report's settings and turned into inline SVG by :func:`council.report.svg.render`. Colours are Okabe-Ito
(lines, bars: :mod:`council.report.svg`) and cividis (heatmaps); every value is also written as text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import ScaledTranslation, offset_copy

from council.report import layout as L
from council.report.svg import BLUE, GREY, ORANGE, PURPLE, SKY, VERMILLION, series

WIDTH = 9.0  # inches: the page's content width at 72 pt per inch and 4/3 px per pt
MAX_ROWS = 40  # models drawn in one dot-and-interval chart (the table lists every one)
MAX_LINES = 12  # models drawn in the slope chart
VALUE_GAP = 8  # points between an axes' right edge and the values written beside it


def _num(value: Any) -> float:
    """A JSON number as float, NaN for null or anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def _short(name: str, limit: int = 38) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _fmt(value: float, digits: int = 1) -> str:
    return "—" if not math.isfinite(value) else f"{value:.{digits}f}"


# -- leaderboards --------------------------------------------------------------------------------------------


def leaderboard(rows: Sequence[dict[str, Any]], *, xlabel: str, extra: Sequence[tuple[str, str, str, str]] = ()
                ) -> Figure:
    """Dot-and-interval chart, best first. ``rows``: dicts with ``name``, ``score``, ``low``, ``high`` (0-100)
    and optionally the keys of ``extra``: (key, label, colour, marker) drawn as extra markers (round one's
    score, the true score)."""
    rows = list(rows)[:MAX_ROWS]
    n = len(rows)
    fig = L.figure(WIDTH, 0.9 + 0.34 * n)
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    bars, values = [], []
    beside = offset_copy(ax.get_yaxis_transform(), fig=fig, x=VALUE_GAP, units="points")  # past the axes' right
    for yi, r in zip(y, rows, strict=True):
        lo, hi, sc = _num(r.get("low")), _num(r.get("high")), _num(r.get("score"))
        if math.isfinite(lo) and math.isfinite(hi):
            bars.append([(lo, yi), (hi, yi)])
        label = _fmt(sc) + (f"  [{_fmt(lo)}–{_fmt(hi)}]" if math.isfinite(lo) and math.isfinite(hi) else "")
        values.append(label)
        ax.text(1, yi, label, va="center", ha="left", fontsize=8.5, color="#222222", transform=beside)
    ax.add_collection(LineCollection(bars, colors=BLUE, linewidths=3.2, alpha=0.45, capstyle="round", zorder=2),
                      autolim=False)
    ax.scatter([_num(r.get("score")) for r in rows], y, s=46, color=BLUE, edgecolors="white", linewidths=0.8, zorder=6,
               label="council score (95% CI)")
    for key, label, colour, marker in extra:
        values_ = [_num(r.get(key)) for r in rows]
        if any(math.isfinite(v) for v in values_):
            filled = marker in ("x", "+", "|")
            ax.scatter(values_, y, s=36, marker=marker, zorder=5, label=label, linewidths=1.4,
                       **({"color": colour} if filled else {"facecolors": "none", "edgecolors": colour}))
    names = [_short(str(r["name"])) for r in rows]
    ax.set_yticks(y, names)
    ax.set_xlim(0, 101.5)
    ax.set_xticks([0, 20, 40, 60, 80, 100], ["0", "20", "40", "60", "80", "100"])
    ax.set_ylim(-0.7, n - 0.3)
    tick_h = L.tallest(["100"], 9.5)
    L.xlabel_at(ax, xlabel, tick_h + L.TICK + L.LABEL_PAD)
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    legend = ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=8.5, handletextpad=0.3)
    L.place(fig, [[ax]], left=L.EDGE + L.widest(names, 9.5) + L.TICK,
            right=L.EDGE + VALUE_GAP * L.PT + L.widest(values, 8.5),
            top=L.EDGE + L.above(ax, legend), bottom=L.EDGE + tick_h + L.TICK + L.LABEL_PAD + L.tallest([xlabel], 9.5))
    return fig


# -- grader rules ----------------------------------------------------------------------------------------------


def rule_slopes(rules: Sequence[str], models: Sequence[str], scores: dict[str, dict[str, float]],
                taus: dict[str, float], tops: dict[str, str]) -> Figure:
    """Small multiples, one per alternative grader rule: each model's score (0-100) under the council (left) and
    under the rule (right), one line per model (nudged sideways so ties stay visible). A flat panel is a rule
    that changes nothing; a framed panel changes the top model. Kendall's tau against the council in the title."""
    models = list(models)[:MAX_LINES]
    others = [r for r in rules if r != "council"]
    titles = [f"{r}\nτ {_fmt(_num(taus.get(r)), 2)}" + ("  ✱ new top" if tops.get(r) != tops.get("council") else "")
              for r in others]
    cols = _columns(titles, 8.5, 5)
    rows = math.ceil(len(others) / cols)
    fig = L.figure(WIDTH, 1.0 + 1.85 * rows)
    council = scores.get("council", {})
    values = [v for r in rules for v in (_num(scores.get(r, {}).get(m)) for m in models) if math.isfinite(v)]
    low, high = (min(values), max(values)) if values else (0.0, 100.0)
    pad = max(2.0, (high - low) * 0.12)
    limits = max(-1.0, low - pad), min(101.0, high + pad)
    yticks, ylabels = L.ticks(*limits, n=4)
    step = 0.12 / max(len(models) - 1, 1)
    grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
    first = None
    handles = []
    for i, rule in enumerate(others):
        ax = fig.add_subplot(rows, cols, i + 1, sharey=first)
        grid[i // cols][i % cols] = ax
        first = first or ax
        for k, model in enumerate(models):
            colour, marker = series(k)
            dodge = (k - (len(models) - 1) / 2) * step
            a, b = _num(council.get(model)), _num(scores.get(rule, {}).get(model))
            if math.isfinite(b):
                line, = ax.plot([dodge, 1 + dodge], [a, b], color=colour, marker=marker, markersize=4, linewidth=1.4)
            else:  # no score under this rule (a single member never grades its own vendor's models)
                line, = ax.plot([dodge], [a], color=colour, marker=marker, markersize=4, linewidth=1.4, alpha=0.35)
            if i == 0:
                handles.append((line, _short(model, 34)))
        moved = tops.get(rule) != tops.get("council")
        L.title_above(ax, titles[i], fontsize=8.5,
                      color=VERMILLION if moved else "#222222")
        if moved:
            for spine in ("left", "bottom", "top", "right"):
                ax.spines[spine].set_visible(True)
                ax.spines[spine].set_color(VERMILLION)
                ax.spines[spine].set_linewidth(1.6)
        ax.set_xticks([0, 1], ["council", "rule"], fontsize=7.5)
        ax.set_xlim(-0.3, 1.3)
        ax.grid(axis="y")
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", labelsize=7.5, labelleft=i % cols == 0)
    first.set_ylim(*limits)
    first.set_yticks(yticks, ylabels)
    ytick_w = L.widest(ylabels, 7.5) + L.TICK
    for row in grid:
        L.ylabel_at(row[0], "score (%)", ytick_w + L.LABEL_PAD, fontsize=8)
    legend = fig.legend([h for h, _ in handles], [label for _, label in handles], loc="upper center",
                        bbox_to_anchor=(0.5, 1.0), ncol=min(3, max(1, len(handles))), fontsize=8)
    xtick_h = L.tallest(["council", "rule"], 7.5) + L.TICK
    _place_panels(fig, grid, legend, left=L.EDGE + L.tallest(["score (%)"], 8) + L.LABEL_PAD + ytick_w, inner=0.0,
                  under=xtick_h)
    return fig


# -- votes moving --------------------------------------------------------------------------------------------


def diverging_flips(members: Sequence[str], to_correct: Sequence[int], to_incorrect: Sequence[int],
                    valid: Sequence[int]) -> Figure:
    """Per member, votes that moved to incorrect (left) and to correct (right) between rounds."""
    n = len(members)
    fig = L.figure(WIDTH, 0.9 + 0.5 * n)
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    right, left = np.asarray(to_correct, dtype=float), np.asarray(to_incorrect, dtype=float)
    span = max(1.0, float(np.max(right, initial=0)), float(np.max(left, initial=0)))
    ax.barh(y, right, color=BLUE, height=0.6, label="to correct")
    ax.barh(y, -left, color=ORANGE, height=0.6, hatch="///", edgecolor="white", linewidth=0, label="to incorrect")
    labels = []
    for yi, r, l, v, m in zip(y, right, left, valid, members, strict=True):
        ax.text(r + span * 0.02, yi, f"+{int(r)}" if r else "0", va="center", ha="left", fontsize=8.5)
        ax.text(-l - span * 0.02, yi, f"−{int(l)}" if l else "0", va="center", ha="right", fontsize=8.5)
        labels.append(f"{m}\n{int(r + l):,} of {v:,} moved ({(r + l) / v:.1%})" if v else f"{m}\nno valid pair")
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_xlim(-span * 1.2, span * 1.2)
    ax.set_yticks(y, labels, fontsize=8.5)
    half, xlabels = L.ticks(0, span * 1.2, n=4, integer=True)
    ax.set_xticks([-v for v in half[:0:-1]] + half, xlabels[:0:-1] + xlabels)
    xlabel = "votes changed between rounds:  ← to incorrect   |   to correct →"
    tick_h = L.tallest(xlabels, 9.5)
    L.xlabel_at(ax, xlabel, tick_h + L.TICK + L.LABEL_PAD)
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    legend = ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, fontsize=8.5)
    L.place(fig, [[ax]], left=L.EDGE + L.widest(labels, 8.5) + L.TICK, right=L.EDGE + L.widest(xlabels, 9.5) / 2,
            top=L.EDGE + L.above(ax, legend), bottom=L.EDGE + tick_h + L.TICK + L.LABEL_PAD + L.tallest([xlabel], 9.5))
    return fig


# -- agreement -----------------------------------------------------------------------------------------------


def _text_colour(rgba: Sequence[float]) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"


ROTATION = 35  # degrees: the heatmaps' column labels


def _heat(ax: Any, matrix: np.ndarray, labels: Sequence[str], texts: np.ndarray, vmin: float, vmax: float,
          cmap: Any, fontsize: float = 7.5) -> Any:
    masked = np.ma.masked_invalid(matrix)
    n = len(labels)
    edges = np.arange(n + 1) - 0.5
    image = ax.pcolormesh(edges, edges, masked, cmap=cmap, vmin=vmin, vmax=vmax, edgecolors="white", linewidth=1.0)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    for i in range(n):
        for j in range(n):
            if i == j:
                ax.text(j, i, "—", ha="center", va="center", fontsize=8, color="#666666")
            elif math.isfinite(matrix[i, j]):
                ax.text(j, i, texts[i, j], ha="center", va="center", fontsize=fontsize,
                        color=_text_colour(cmap((matrix[i, j] - vmin) / (vmax - vmin or 1.0))))
            else:
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="#666666")
    ax.set_xticks(range(n), list(labels), rotation=ROTATION, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(n), list(labels))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return image


def _place_heatmaps(fig: Figure, grid: Sequence[Sequence[Any]], labels: Sequence[str], size: float, image: Any,
                    bar_label: str, shrink: float) -> None:
    """Square heatmaps (each with its own row and column labels, a title above) in a grid, one colour bar on the
    right; the squares as large as the figure allows once every label has its room."""
    fw, fh = fig.get_size_inches()
    pad = 3.5 * L.PT  # tick labels' pad (the ticks have no length)
    n = len(labels)
    row_w = L.widest(labels, size) + pad
    flat = [L.text_size(t, size) for t in labels]
    slant = math.radians(ROTATION)
    col_h = max((w * math.sin(slant) + h * math.cos(slant) for w, h in flat), default=0.0) + pad
    title_h = max(L.above(ax, ax.title) for row in grid for ax in row)
    vmin, vmax = image.get_clim()
    bar_ticks, bar_labels = L.ticks(vmin, vmax, n=5)
    bar_w = 0.14
    right = 0.12 + bar_w + L.TICK + L.widest(bar_labels, 9.5) + L.LABEL_PAD + L.tallest([bar_label], 9.5) + L.EDGE
    n_rows, n_cols = len(grid), len(grid[0])
    gap = 6 * L.PT

    def reach(side: float) -> float:  # how far the slanted column labels reach left of the square
        return max((w * math.cos(slant) - (j + 0.5) * side / n for j, (w, _) in enumerate(flat)), default=0.0)

    side = min((fw - right - L.EDGE - n_cols * row_w - (n_cols - 1) * gap) / n_cols,
               (fh - 2 * L.EDGE - n_rows * (title_h + col_h) - (n_rows - 1) * gap) / n_rows)
    left = max(row_w, reach(side))
    side = max(0.2, min(side, (fw - right - L.EDGE - n_cols * left - (n_cols - 1) * gap) / n_cols))
    left = max(row_w, reach(side))
    for i, row in enumerate(grid):
        for j, ax in enumerate(row):
            x = L.EDGE + left + j * (left + side + gap)
            y = fh - L.EDGE - title_h - side - i * (title_h + side + col_h + gap)
            ax.set_position([x / fw, y / fh, side / fw, side / fh])
    top = fh - L.EDGE - title_h
    low = top - n_rows * side - (n_rows - 1) * (title_h + col_h + gap)
    bar_h = shrink * (top - low)
    x = L.EDGE + n_cols * (left + side) + (n_cols - 1) * gap + 0.12
    cax = fig.add_axes([x / fw, (low + (top - low - bar_h) / 2) / fh, bar_w / fw, bar_h / fh])
    bar = fig.colorbar(image, cax=cax)
    bar.set_ticks(bar_ticks, labels=bar_labels)
    bar.set_label(bar_label)
    cax.yaxis.set_label_coords(1, 0.5, cax.transAxes + ScaledTranslation(
        L.TICK + L.widest(bar_labels, 9.5) + L.LABEL_PAD, 0, fig.dpi_scale_trans))


def pair_matrix(members: Sequence[str], pairs: dict[str, Any], key: str) -> np.ndarray:
    """Symmetric member × member matrix of ``pairs["a|b"][key]`` (NaN where absent; diagonal NaN)."""
    index = {m: i for i, m in enumerate(members)}
    out = np.full((len(members), len(members)), np.nan)
    for name, cell in pairs.items():
        a, _, b = name.partition("|")
        if a in index and b in index:
            value = _num(cell.get(key) if isinstance(cell, dict) else cell)
            out[index[a], index[b]] = out[index[b], index[a]] = value
    return out


def agreement_heatmap(members: Sequence[str], kappa: np.ndarray, percent: np.ndarray | None, title: str) -> Figure:
    """Cohen's kappa per member pair (colour and text), percent agreement under it."""
    cmap = matplotlib.colormaps["cividis"]
    n = len(members)
    side = 1.3 + 0.46 * n
    fig = L.figure(side + 0.9, side)
    ax = fig.add_subplot()
    texts = np.empty(kappa.shape, dtype=object)
    for i in range(n):
        for j in range(n):
            k = _fmt(kappa[i, j], 2)
            texts[i, j] = k if percent is None or not math.isfinite(percent[i, j]) else f"{k}\n{percent[i, j]:.0%}"
    vmin = min(0.0, float(np.nanmin(kappa))) if np.isfinite(kappa).any() else 0.0
    image = _heat(ax, kappa, members, texts, vmin, 1.0, cmap)
    L.title_above(ax, title)
    _place_heatmaps(fig, [[ax]], members, 9.5, image, "Cohen's κ", 0.8)
    return fig


def scale_kappa_grid(members: Sequence[str], dims: Sequence[str], rounds: Sequence[str],
                     matrices: dict[tuple[str, str], np.ndarray]) -> Figure:
    """Quadratic-weighted kappa per member pair, small multiples: a column per dimension (a row when there are
    more than four) and a row per round."""
    cmap = matplotlib.colormaps["cividis"]
    n = len(members)
    wide = len(dims) <= 4
    grid = [[(d, r) for d in dims] for r in rounds] if wide else [[(d, r) for r in rounds] for d in dims]
    n_rows, n_cols = len(grid), len(grid[0])
    cell = min(0.9 + 0.42 * n, (WIDTH - 1.0) / n_cols)
    fig = L.figure(cell * n_cols + 1.0, cell * n_rows + 0.4)
    axes = [[fig.add_subplot() for _ in row] for row in grid]
    finite = [m[np.isfinite(m)] for m in matrices.values()]
    low = min([0.0, *(float(f.min()) for f in finite if f.size)])
    size = 7.5 if n <= 6 else 6.5
    image = None
    for i, row in enumerate(grid):
        for j, (dim, round_) in enumerate(row):
            matrix = matrices.get((dim, round_), np.full((n, n), np.nan))
            texts = np.vectorize(lambda v: _fmt(v, 2), otypes=[object])(matrix)
            image = _heat(axes[i][j], matrix, members, texts, low, 1.0, cmap, fontsize=size)
            L.title_above(axes[i][j], f"{dim} · {'round one' if round_ == 'round1' else 'round two'}", fontsize=9)
            axes[i][j].tick_params(labelsize=7)
    _place_heatmaps(fig, axes, members, 7, image, "quadratic-weighted κ", 0.6)
    return fig


# -- herding -------------------------------------------------------------------------------------------------


def herding(members: Sequence[str], conforming: Sequence[int], dissenting: Sequence[int], unaligned: Sequence[int],
            lift_weak: float, lift_strong: float, weak_rows: int, strong_rows: int) -> Figure:
    """Left: each member's round-two flips, with or against its peers' round-one majority (or with no
    majority). Right: the agreement lift from rows with weak vs strong round-one majorities."""
    n = len(members)
    fig = L.figure(WIDTH, 1.3 + 0.42 * n)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    y = np.arange(n)[::-1]
    start = np.zeros(n)
    total = (np.asarray(conforming) + np.asarray(dissenting) + np.asarray(unaligned)).astype(float)
    span = max(1.0, float(total.max(initial=0)))
    for values, label, colour, hatch in ((conforming, "with the peers' majority", ORANGE, ""),
                                         (dissenting, "against it", BLUE, "///"),
                                         (unaligned, "no majority", "#c8c8c8", "")):
        v = np.asarray(values, dtype=float)
        left.barh(y, v, left=start, color=colour, height=0.6, label=label, hatch=hatch, edgecolor="white",
                  linewidth=0)
        start = start + v
    notes = []
    for yi, c, d, u, t in zip(y, conforming, dissenting, unaligned, total, strict=True):
        share = f"  {c / (c + d):.0%} conform" if c + d else ""
        notes.append((t, f"{int(c)} / {int(d)} / {int(u)}{share}"))
        left.text(t + span * 0.02, yi, notes[-1][1], va="center", fontsize=8)
    names = list(members)
    left.set_yticks(y, names)
    left.set_xlim(0, span * 1.45)
    xticks, xlabels = L.ticks(0, span * 1.45, n=6, integer=True)
    left.set_xticks(xticks, xlabels)
    tick_h = L.tallest(xlabels, 9.5)
    L.xlabel_at(left, "votes changed in round two", tick_h + L.TICK + L.LABEL_PAD)
    left.grid(axis="x")
    left.set_axisbelow(True)
    legend = left.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=8)
    values = [100 * lift_weak, 100 * lift_strong]  # percentage points of agreement
    labels = [f"{name}\n({k:,} row{'' if k == 1 else 's'})" for name, k in (("weak", weak_rows), ("strong", strong_rows))]
    shown = [v if math.isfinite(v) else 0.0 for v in values]
    right.bar([0, 1], shown, color=[VERMILLION, SKY], width=0.6)
    top = max([abs(v) for v in shown] + [1e-9])
    for xi, v in enumerate(values):
        right.text(xi, (v if math.isfinite(v) else 0.0) + top * 0.04, "—" if not math.isfinite(v) else f"{v:+.2f} pts",
                   ha="center", va="bottom", fontsize=8.5)
    right.set_xticks([0, 1], labels)
    right.set_xlim(-0.5, 1.5)
    right.axhline(0, color="#333333", linewidth=0.8)
    limits = min(0.0, min(shown) * 1.3), top * 1.35
    right.set_ylim(*limits)
    yticks, ylabels = L.ticks(*limits, n=5)
    right.set_yticks(yticks, ylabels)
    L.title_above(right, "agreement lift (points)\nby round-one majority", fontsize=9)
    right.grid(axis="y")
    right.set_axisbelow(True)
    names_w = L.widest(names, 9.5) + L.TICK
    # The right panel's tick labels, and the left panel's notes where they run past its last tick, sit in the gap.
    gap = L.widest(ylabels, 9.5) + L.TICK + 10 * L.PT
    left_w, _ = L.place(fig, [[left, right]], left=L.EDGE + names_w, right=L.EDGE, top=0, bottom=0, wgap=gap,
                        widths=[3, 1.25])
    overrun = max((L.text_size(text, 8)[0] - (1.45 - 0.02 - t / span) / 1.45 * left_w for t, text in notes), default=0)
    # The right panel's last bar sits a quarter of its width from its edge; its label and value are centred on it.
    half = max(L.widest(labels, 9.5), L.widest([f"{v:+.2f} pts" for v in values], 8.5)) / 2
    L.place(fig, [[left, right]], left=L.EDGE + names_w, right=L.EDGE + max(0.0, half - 0.8 * left_w * 1.25 / 3 / 4),
            top=L.EDGE + max(L.above(left, legend), L.above(right, right.title)),
            bottom=L.EDGE + max(tick_h + L.TICK + L.LABEL_PAD + L.tallest(["votes changed in round two"], 9.5), L.tallest(labels, 9.5) + L.TICK),
            wgap=gap + max(0.0, overrun), widths=[3, 1.25])
    return fig


# -- calibration ---------------------------------------------------------------------------------------------


def reliability_diagrams(models: Sequence[str], mean_confidence: np.ndarray, share_correct: np.ndarray,
                         n: np.ndarray, titles: Sequence[str]) -> Figure:
    """One reliability diagram per model: each confidence bin's mean stated confidence against the council's
    share judged correct, the marker's area by the bin's rows, the diagonal for perfect calibration."""
    k = len(models)
    cols = _columns(titles, 8.5, 3)
    rows = math.ceil(k / cols)
    fig = L.figure(WIDTH, 0.6 + 3.3 * rows)
    grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
    biggest = max(1, int(n.max(initial=0)))
    handles = []
    ticks = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    tick_labels = [f"{t:.1f}" for t in ticks]
    xlabel, ylabel = "stated confidence", "share judged correct by the council"
    tick_w, tick_h = L.widest(tick_labels, 7.5) + L.TICK, L.tallest(tick_labels, 7.5) + L.TICK
    for i in range(k):
        ax = grid[i // cols][i % cols] = fig.add_subplot(rows, cols, i + 1)
        have = n[i] > 0
        diagonal, = ax.plot([0, 1], [0, 1], color=GREY, linestyle="--", linewidth=1)
        xs, ys, ns = mean_confidence[i][have], share_correct[i][have], n[i][have]
        gaps = ax.vlines(xs, xs, ys, color=ORANGE, linewidth=3.5, alpha=0.7)
        ax.plot(xs, ys, color=BLUE, linewidth=1.1)
        dots = ax.scatter(xs, ys, s=16 + 150 * ns / biggest, color=BLUE, zorder=3)
        for x_, y_, n_ in zip(xs, ys, ns, strict=True):
            ax.annotate(f"{int(n_)}", (x_, y_), xytext=(6, 4), textcoords="offset points", ha="left", fontsize=7,
                        color="#333333")
        if not handles:
            handles = [(diagonal, "perfectly calibrated"), (dots, "bin (area: rows; label: rows)"),
                       (gaps, "gap from the diagonal")]
        ax.set_xlim(0, 1.05)
        ax.set_ylim(-0.03, 1.08)
        ax.set_xticks(ticks, tick_labels)
        ax.set_yticks(ticks, tick_labels)
        L.title_above(ax, titles[i], fontsize=8.5)
        L.xlabel_at(ax, xlabel, tick_h + L.LABEL_PAD, fontsize=8)
        if i % cols == 0:
            L.ylabel_at(ax, ylabel, tick_w + L.LABEL_PAD, fontsize=8)
        ax.tick_params(labelsize=7.5)
        ax.grid(True)
        ax.set_axisbelow(True)
    legend = fig.legend([h for h, _ in handles], [label for _, label in handles], loc="upper center",
                        bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8)
    counts = [f"{int(c)}" for c in n[n > 0]]
    beyond = 6 * L.PT + L.widest(counts, 7)  # a count written right of a bin at the panel's right edge
    _place_panels(fig, grid, legend, left=L.EDGE + L.tallest([ylabel], 8) + L.LABEL_PAD + tick_w, inner=tick_w,
                  under=tick_h + L.LABEL_PAD + L.tallest([xlabel], 8), beyond=beyond)
    return fig


def _columns(titles: Sequence[str], size: float, most: int) -> int:
    """Up to ``most`` panels a row, fewer where the widest title would not fit over its panel."""
    widest = L.widest(titles, size, weight="bold") + 10 * L.PT
    return max(1, min(most, len(titles), int((WIDTH - 0.6) // widest)))


def _place_panels(fig: Figure, grid: Sequence[Sequence[Any]], legend: Any, *, left: float, inner: float,
                  under: float, between: float | None = None, beyond: float = 0.0) -> None:
    """Small multiples under a figure legend: ``left`` inches for the first column's labels, ``inner`` for the
    others' tick labels, ``under`` below the bottom row (``between`` below the others, ``under`` unless given);
    titles (measured) above every panel and never reaching a neighbour's; ``beyond``: how far a panel's own
    text may reach past its right edge."""
    panels = [ax for row in grid for ax in row if ax is not None]
    cols = len(grid[0])
    title_h = max(L.above(ax, ax.title) for ax in panels)
    title_w = max(L.extent(ax.title)[2] - L.extent(ax.title)[0] for ax in panels)
    free = fig.get_size_inches()[0] - left - L.EDGE
    gap = max(inner + beyond + 10 * L.PT, cols * (title_w + 6 * L.PT) - free)  # centred titles never reach a neighbour's
    panel_w = (free - (cols - 1) * gap) / cols
    overhang = max(0.0, (title_w - panel_w) / 2)  # how far the outer columns' titles reach past their panels
    L.place(fig, grid, left=max(left, L.EDGE + overhang), right=L.EDGE + max(overhang, beyond),
            top=L.from_top(legend) + 2 * L.PT + title_h, bottom=L.EDGE + under, wgap=gap,
            hgap=title_h + (under if between is None else between) + 6 * L.PT)


# -- quota ---------------------------------------------------------------------------------------------------


def quota_timelines(vendors: Sequence[str], timelines: Sequence[Any]) -> Figure:
    """Requests per minute over time per vendor (small multiples, shared time axis), 429s marked."""
    k = len(vendors)
    titles = [f"{vendors[i]} · {int(np.nansum(tl.requests)):,} requests · {int(np.nansum(tl.rate_limited)):,} × 429"
              for i, tl in enumerate(timelines)]
    cols = _columns(titles, 9, 2)
    rows = math.ceil(k / cols)
    fig = L.figure(WIDTH, 0.5 + 2.1 * rows)
    grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
    end = max((float(np.nanmax(tl.t)) + tl.bucket_s for tl in timelines), default=1.0)
    minutes = end > 180
    scale = 60.0 if minutes else 1.0
    xticks, xlabels = L.ticks(0, end / scale, n=6)
    xlabel = "minutes since start" if minutes else "seconds since start"
    tick_h = L.tallest(xlabels, 7.5) + L.TICK
    first, widest_y = None, 0.0
    for i in range(k):
        ax = grid[i // cols][i % cols] = fig.add_subplot(rows, cols, i + 1, sharex=first)
        first = first or ax
        tl = timelines[i]
        per_min = np.append(tl.requests, tl.requests[-1]) * (60.0 / tl.bucket_s)  # the last interval drawn whole
        t = np.append(tl.t, tl.t[-1] + tl.bucket_s) / scale
        ax.step(t, per_min, where="post", color=BLUE, linewidth=1.3)
        ax.fill_between(t, per_min, step="post", color=BLUE, alpha=0.15)
        hit = np.append(np.nan_to_num(tl.rate_limited) > 0, False)
        top = float(np.nanmax(per_min, initial=0)) or 1.0
        if hit.any():
            ax.scatter(t[hit] + tl.bucket_s / (2 * scale), np.full(int(hit.sum()), top * 1.08), marker="v",
                       color=VERMILLION, s=22, zorder=3)
        ax.set_ylim(0, top * 1.2)
        yticks, ylabels = L.ticks(0, top * 1.2, n=5)
        ax.set_yticks(yticks, ylabels)
        widest_y = max(widest_y, L.widest(ylabels, 7.5) + L.TICK)
        L.title_above(ax, titles[i], fontsize=9)
        ax.grid(True)
        ax.set_axisbelow(True)
        bottom = i // cols == rows - 1 or i + cols >= k  # no panel under it
        ax.tick_params(labelsize=7.5, labelbottom=bottom)
        if bottom:
            L.xlabel_at(ax, xlabel, tick_h + L.LABEL_PAD, fontsize=8)
    first.set_xlim(0, end / scale)
    first.set_xticks(xticks, xlabels)
    for row in grid:
        L.ylabel_at(row[0], "requests / min", widest_y + L.LABEL_PAD, fontsize=8)
    handles = [Line2D([], [], color=BLUE, linewidth=1.3),
               Line2D([], [], color=VERMILLION, marker="v", linestyle="none", markersize=6)]
    legend = fig.legend(handles, ["requests per minute", "an interval with a 429 (rate limited)"], loc="upper center",
                        bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8)
    _place_panels(fig, grid, legend, left=L.EDGE + L.tallest(["requests / min"], 8) + L.LABEL_PAD + widest_y,
                  inner=widest_y, under=tick_h + L.LABEL_PAD + L.tallest([xlabel], 8), between=L.TICK,
                  beyond=L.widest(xlabels, 7.5) / 2)  # the last tick's label, centred on the panel's edge
    return fig


# -- cross-judge ---------------------------------------------------------------------------------------------


def crossjudge_deltas(models: Sequence[str], delta: Sequence[float], low: Sequence[float], high: Sequence[float],
                      grader: str) -> Figure:
    """Per model, the other grader's score minus the council's (0-100 points) with its bootstrap interval."""
    n = len(models)
    fig = L.figure(WIDTH, 0.9 + 0.34 * n)
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    d, lo, hi = (np.array([_num(v) for v in xs]) for xs in (delta, low, high))
    span = max(5.0, float(np.nanmax(np.abs(np.concatenate([lo, hi, d])), initial=0.0)) * 1.1)
    beside = offset_copy(ax.get_yaxis_transform(), fig=fig, x=VALUE_GAP, units="points")  # past the axes' right
    bars, values = [], []
    for yi, a, b, c in zip(y, lo, hi, d, strict=True):
        if math.isfinite(a) and math.isfinite(b):
            bars.append([(a, yi), (b, yi)])
        values.append(f"{c:+.1f} [{_fmt(a)}, {_fmt(b)}]" if math.isfinite(c) else "—")
        ax.text(1, yi, values[-1], va="center", fontsize=8.5, transform=beside)
    ax.add_collection(LineCollection(bars, colors=PURPLE, linewidths=3, alpha=0.5, capstyle="round"), autolim=False)
    ax.scatter(d, y, color=PURPLE, s=40, zorder=3)
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_xlim(-span, span)
    ax.set_ylim(-0.5 - 0.05 * n, n - 0.5 + 0.05 * n)
    names = [_short(m) for m in models]
    ax.set_yticks(y, names)
    xticks, xlabels = L.ticks(-span, span, n=8)
    ax.set_xticks(xticks, xlabels)
    xlabel = f"{_short(grader, 50)} − council (points of 100)"
    tick_h = L.tallest(xlabels, 9.5)
    L.xlabel_at(ax, xlabel, tick_h + L.TICK + L.LABEL_PAD)
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    L.place(fig, [[ax]], left=L.EDGE + L.widest(names, 9.5) + L.TICK,
            right=L.EDGE + VALUE_GAP * L.PT + L.widest(values, 8.5), top=L.EDGE + L.tallest(names, 9.5) / 2,
            bottom=L.EDGE + tick_h + L.TICK + L.LABEL_PAD + L.tallest([xlabel], 9.5))
    return fig
