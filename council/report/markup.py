"""HTML pieces of the report: escaping, numbers as text, tables, figures and sections."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ABSENT = "absent"


def esc(value: Any) -> str:
    """Text as HTML. ``://`` is written with an entity: a URL in the run's data (a provider's address) shows as
    text but never appears as a URL in the page's bytes."""
    return html.escape(str(value), quote=True).replace("://", ":&#47;&#47;")


def number(value: Any) -> float | None:
    """A JSON number as float; ``None`` for null, booleans, non-numbers and non-finite values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def as_dict(value: Any) -> dict[str, Any]:
    """A JSON object as it is, anything else (absent, null, another type) as an empty one."""
    return value if isinstance(value, dict) else {}


def real(value: Any) -> float:
    """A JSON number as float, NaN for anything else (0 stays 0)."""
    v = number(value)
    return math.nan if v is None else v


def descending(value: Any) -> tuple[int, float]:
    """Sort key: larger numbers first, missing ones last."""
    v = number(value)
    return (1, 0.0) if v is None else (0, -v)


def fmt(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    v = number(value)
    if v is None:
        return "—"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def pct(value: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage."""
    v = number(value)
    return "—" if v is None else f"{100 * v:.{digits}f}%"


def count(value: Any) -> str:
    v = number(value)
    return "—" if v is None else f"{int(v):,}"


def interval(low: Any, high: Any, digits: int = 1, scale: float = 1.0) -> str:
    lo, hi = number(low), number(high)
    if lo is None or hi is None:
        return "—"
    return f"[{lo * scale:.{digits}f}–{hi * scale:.{digits}f}]"


def slug(name: str, taken: set[str]) -> str:
    """A lower-case id fragment of ``name``, unique among ``taken`` (which it joins)."""
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"
    out, k = base, 2
    while out in taken:
        out, k = f"{base}-{k}", k + 1
    taken.add(out)
    return out


@dataclass
class Cell:
    """A table cell: HTML content (already escaped), an optional class, and whether it is a number."""

    html: str
    cls: str = ""
    numeric: bool = False


def cell(value: Any, cls: str = "", *, numeric: bool | None = None, raw: bool = False) -> Cell:
    text = value if raw else esc(value)
    return Cell(text, cls, numeric if numeric is not None else bool(re.fullmatch(r"[−+\-\d.,%\[\]–$ —]+", text)))


def table(caption: str, head: Sequence[str], rows: Sequence[Sequence[Cell | str]], *, cls: str = "") -> str:
    """A data table: a caption, column headers, and the first cell of each row as the row's header."""
    table_attr = f' class="{cls}"' if cls else ""
    out = [f'<div class="table-wrap"><table{table_attr}>',
           f"<caption>{caption}</caption>" if caption else "", "<thead><tr>"]
    out += [f'<th scope="col">{h}</th>' for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for k, c in enumerate(row):
            c = c if isinstance(c, Cell) else cell(c)
            classes = " ".join(x for x in (c.cls, "num" if c.numeric else "") if x)
            attr = f' class="{classes}"' if classes else ""
            out.append(f'<th scope="row"{attr}>{c.html}</th>' if k == 0 else f"<td{attr}>{c.html}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def figure(fig_id: str, svg: str, caption: str) -> str:
    """An inline SVG in a ``<figure>``, labelled by its caption for screen readers."""
    svg = svg.replace("<svg ", f'<svg role="img" aria-labelledby="{fig_id}-cap" ', 1)
    return f'<figure id="{fig_id}">\n{svg}\n<figcaption id="{fig_id}-cap">{caption}</figcaption>\n</figure>'


def absent(why: str) -> str:
    return f'<p class="{ABSENT}">Left out: {esc(why)}</p>'


def lead(text: str) -> str:
    """The one line a reader takes away from a section (HTML)."""
    return f'<p class="lead">{text}</p>'


@dataclass
class Section:
    id: str
    title: str
    body: str
