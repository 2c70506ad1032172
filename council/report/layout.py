"""Margins measured once, instead of matplotlib's constrained layout.

Constrained layout measures every axis and tick label several times per figure (and makes savefig draw the
figure twice); the report's figures know their labels, so each figure measures its widest strings once with the
same text metrics the SVG backend writes, and places its axes in inches. Titles and axis labels get fixed
positions too, so drawing never measures tick labels to move them.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_svg import RendererSVG
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation

PT = 1 / 72  # inches per point
DPI = 72  # the SVG backend draws at 72 dpi whatever the figure says: one pixel is one point
TICK = 7 * PT  # a tick's length plus its label's pad (matplotlib's defaults, 3.5 pt each)
LABEL_PAD = 4 * PT  # axis label to tick labels (axes.labelpad)
TITLE_PAD = 6 * PT  # title to the axes' top (axes.titlepad)
EDGE = 4 * PT  # clear space kept inside the figure's edges

_RENDERER = RendererSVG(1, 1, io.StringIO())  # measures only; kept so matplotlib's text-metrics cache lives on
_MEASURE = Figure(dpi=DPI)


def renderer() -> RendererSVG:
    """The renderer artists are measured with (the SVG backend's own text metrics)."""
    return _RENDERER


def figure(width: float, height: float) -> Figure:
    """A figure of ``width`` × ``height`` inches at the SVG backend's 72 dpi (so a measured pixel is a point)."""
    return Figure(figsize=(width, height), dpi=DPI)


def text_size(text: str, size: float, *, weight: str = "normal", rotation: float = 0.0) -> tuple[float, float]:
    """Width and height in inches of ``text`` drawn at ``size`` points (its rotated bounding box)."""
    t = Text(0, 0, text, fontsize=size, fontweight=weight, rotation=rotation)
    t.set_figure(_MEASURE)
    box = t.get_window_extent(_RENDERER)
    return box.width * PT, box.height * PT


def widest(texts: Iterable[str], size: float, **kw: Any) -> float:
    return max((text_size(t, size, **kw)[0] for t in texts if t), default=0.0)


def tallest(texts: Iterable[str], size: float, **kw: Any) -> float:
    return max((text_size(t, size, **kw)[1] for t in texts if t), default=0.0)


def extent(artist: Any) -> tuple[float, float, float, float]:
    """An artist's bounding box in inches from the figure's lower left: x0, y0, x1, y1."""
    box = artist.get_window_extent(_RENDERER)
    return box.x0 * PT, box.y0 * PT, box.x1 * PT, box.y1 * PT


def place(fig: Figure, axes: Sequence[Sequence[Any]], *, left: float, right: float, top: float, bottom: float,
          wgap: float = 0.0, hgap: float = 0.0, widths: Sequence[float] | None = None) -> tuple[float, float]:
    """Put a grid of axes (rows of axes, None for an empty cell) inside the given margins (inches), ``wgap`` and
    ``hgap`` between cells, column widths in the ratio ``widths``; returns the first cell's width and height."""
    fw, fh = fig.get_size_inches()
    n_rows, n_cols = len(axes), len(axes[0])
    ratios = np.asarray(widths if widths is not None else [1.0] * n_cols, dtype=float)
    free_w = max(fw - left - right - wgap * (n_cols - 1), 0.1)
    cell_h = max((fh - top - bottom - hgap * (n_rows - 1)) / n_rows, 0.1)
    col_w = free_w * ratios / ratios.sum()
    for i, row in enumerate(axes):
        x = left
        for j, ax in enumerate(row):
            if ax is not None:
                y = fh - top - (i + 1) * cell_h - i * hgap
                ax.set_position([x / fw, y / fh, col_w[j] / fw, cell_h / fh])
            x += col_w[j] + wgap
    return float(col_w[0]), cell_h


def title_above(ax: Any, text: str, **kw: Any) -> Any:
    """``ax.set_title`` at a fixed height (matplotlib otherwise measures the axes' ticks on every draw to lift it)."""
    return ax.set_title(text, y=1.0, pad=TITLE_PAD / PT, **kw)


def ylabel_at(ax: Any, text: str, offset: float, **kw: Any) -> None:
    """The y label ``offset`` inches left of the axes (past its tick labels), at a fixed place."""
    ax.set_ylabel(text, **kw)
    ax.yaxis.set_label_coords(0, 0.5, ax.transAxes + ScaledTranslation(-offset, 0, ax.figure.dpi_scale_trans))


def xlabel_at(ax: Any, text: str, offset: float, **kw: Any) -> None:
    """The x label ``offset`` inches under the axes (past its tick labels), at a fixed place."""
    ax.set_xlabel(text, **kw)
    ax.xaxis.set_label_coords(0.5, 0, ax.transAxes + ScaledTranslation(0, -offset, ax.figure.dpi_scale_trans))


def ticks(low: float, high: float, n: int = 5, integer: bool = False) -> tuple[list[float], list[str]]:
    """Tick values (matplotlib's MaxNLocator within ``low``–``high``) and their labels, as fixed ticks: drawing then
    neither locates nor formats, and the labels are known before the figure is laid out."""
    locator = MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10], integer=integer)
    span = high - low
    values = [float(v) for v in locator.tick_values(low, high) if low - 1e-9 * span <= v <= high + 1e-9 * span]
    decimals = next((d for d in range(4) if all(abs(round(v, d) - v) < 1e-9 for v in values)), 3)
    return values, [f"{v:.{decimals}f}".replace("-", "\N{MINUS SIGN}") for v in values]


def above(ax: Any, artist: Any) -> float:
    """How far (inches) ``artist`` reaches above the top of ``ax``."""
    fh = ax.figure.get_size_inches()[1]
    return extent(artist)[3] - ax.get_position().y1 * fh


def height(artist: Any) -> float:
    x0, y0, x1, y1 = extent(artist)
    return y1 - y0


def from_top(artist: Any) -> float:
    """How far (inches) ``artist`` reaches down from the top of its figure."""
    return artist.figure.get_size_inches()[1] - extent(artist)[1]
