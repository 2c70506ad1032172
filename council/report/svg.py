"""How every report figure is drawn: the palette, matplotlib's settings, and the figure turned into inline SVG.

Every figure is drawn under the same settings (matplotlib's defaults, then ours: ``RC``), so a run gives the same
bytes whatever the machine's matplotlibrc says. Text stays text (``svg.fonttype = none``); the SVG loses its XML
prologue, metadata, namespace declarations and unreferenced ids, and the ids it keeps are prefixed with the
figure's id, so many SVGs sit in one page without clashing. Colours are Okabe-Ito (lines, bars); the figures
themselves are :mod:`council.report.figures`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import matplotlib
import matplotlib.style
from matplotlib.figure import Figure

# Okabe & Ito's palette, distinguishable with every common colour-vision deficiency (yellow left out: too pale
# on white for lines).
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, BLACK = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
SERIES = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, BLACK)
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
GREY = "#8c8c8c"

RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "grading-council-report",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#444444",
    "axes.labelcolor": "#222222",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "path.simplify": True,
}


@contextmanager
def _style() -> Iterator[None]:
    with matplotlib.rc_context():
        matplotlib.style.use("default")
        matplotlib.rcParams.update(RC)
        yield


def series(k: int) -> tuple[str, str]:
    """The colour and marker of the ``k``-th series (a marker as well as a colour, never colour alone)."""
    return SERIES[k % len(SERIES)], MARKERS[k % len(MARKERS)]


def render(draw: Callable[[], Figure], prefix: str) -> str:
    """The figure that ``draw`` returns (drawn under the report's settings) as inline SVG markup."""
    with _style():
        fig = draw()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return clean_svg(buf.getvalue(), prefix)


_ID = re.compile(r' id="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')
_FONT_FAMILY = re.compile(r"font-family: [^;\"]*(?:; )?")
_PATH = re.compile(r' d="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")
_DECIMALS = re.compile(r"(?<![\w.#])(-?\d+\.\d\d)\d+")


def clean_svg(raw: str, prefix: str) -> str:
    """Matplotlib's SVG made fit to inline: no prologue, metadata, global style, namespace declarations (the
    HTML parser puts ``<svg>`` in its namespace), ``xlink:href`` as SVG 2's ``href``, font families left to the
    page's style sheet, ids kept only where referenced and prefixed with ``prefix``, whitespace squeezed."""
    s = raw[raw.index("<svg"):]
    s = re.sub(r"\s*<metadata>.*?</metadata>", "", s, flags=re.S)
    s = re.sub(r"\s*<style[^>]*>.*?</style>", "", s, flags=re.S)
    s = re.sub(r"\s*<defs>\s*</defs>", "", s)
    s = re.sub(r'\s+xmlns(?::\w+)?="[^"]*"', "", s)
    s = s.replace(' version="1.1"', "").replace("xlink:href=", "href=")
    referenced = {m.group(2) for m in _REF.finditer(s)}
    s = _ID.sub(lambda m: f' id="{prefix}-{m.group(1)}"' if m.group(1) in referenced else "", s)
    s = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", s)
    s = _FONT_FAMILY.sub("", s)
    s = _PATH.sub(lambda m: ' d="' + " ".join(m.group(1).split()) + '"', s)
    s = _TAG.sub(lambda m: _DECIMALS.sub(r"\1", m.group(0)), s)  # coordinates to 1/100 pt
    s = re.sub(r' transform="rotate\(-?0 [^"]*\)"', "", s)
    s = _unwrap_groups(re.sub(r"\n\s+", "\n", s).strip())
    return s.replace("://", ":&#47;&#47;")  # text, never a link: no URL survives in the page's bytes


_GROUP = re.compile(r"<g(?:\s[^>]*)?>\n?|</g>\n?")


def _unwrap_groups(s: str) -> str:
    """Drop every ``<g>`` without attributes (and its ``</g>``): once unreferenced ids are gone, most of
    matplotlib's groups only nest."""
    out, stack, at = [], [], 0
    for m in _GROUP.finditer(s):
        out.append(s[at:m.start()])
        at = m.end()
        tag = m.group(0)
        if tag.startswith("</g"):
            if not stack.pop():
                out.append(tag)
        else:
            bare = tag.strip() == "<g>"
            stack.append(bare)
            if not bare:
                out.append(tag)
    out.append(s[at:])
    return "".join(out)
