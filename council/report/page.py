"""``write_report(run_dir)``: the run folder as one self-contained ``report.html``.

Every figure is inline SVG drawn by matplotlib; the page has no script, no web font and no link to anything
but its own sections, so it opens offline and prints as it shows. The same run folder gives the same bytes.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from council.report import reading
from council.report.markup import Section, absent, esc, pct

REPORT = "report.html"

CSS = """
:root { --ink: #1d1d1f; --muted: #5b5b60; --rule: #dcdce0; --paper: #ffffff; --band: #f5f6f8;
        --blue: #0072B2; --orange: #E69F00; --vermillion: #D55E00; --yellow: #F0E442; }
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--ink); background: var(--band);
       font-family: "DejaVu Sans", "Bitstream Vera Sans", Verdana, "Segoe UI", Arial, sans-serif; line-height: 1.45; }
main { max-width: 1000px; margin: 0 auto; padding: 0 20px 48px; }
header.top { background: var(--paper); border-bottom: 1px solid var(--rule); }
header.top .inner { max-width: 1000px; margin: 0 auto; padding: 22px 20px 14px; }
h1 { font-size: 1.55rem; margin: 0 0 6px; font-weight: 700; letter-spacing: -0.01em; }
h1 .run { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-weight: 600; }
h2 { font-size: 1.2rem; margin: 0 0 10px; padding-top: 4px; }
h3 { font-size: 1.02rem; margin: 22px 0 6px; }
section { background: var(--paper); border: 1px solid var(--rule); border-radius: 10px; padding: 18px 22px;
          margin: 18px 0; }
.badges { margin: 4px 0 10px; display: flex; flex-wrap: wrap; gap: 8px; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 999px; font-weight: 700; font-size: 0.85rem;
         border: 2px solid var(--ink); }
.badge.sim { background: var(--yellow); color: #000; letter-spacing: 0.06em; }
.badge.ok { background: #e3f0fa; border-color: var(--blue); color: #00436b; }
.badge.stop { background: #fbe5d6; border-color: var(--vermillion); color: #7a2e00; }
.badge.partial { background: #fff; border-style: dashed; }
.kpis { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 8px 0 4px; padding: 0; list-style: none; }
.kpis li { min-width: 110px; }
.kpis .k { display: block; font-size: 0.78rem; color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; }
.kpis .v { font-size: 1.15rem; font-weight: 700; }
nav.toc { font-size: 0.86rem; margin-top: 8px; display: flex; flex-wrap: wrap; gap: 4px 16px; }
nav.toc a { color: var(--blue); text-decoration: none; white-space: nowrap; }
nav.toc a:hover, nav.toc a:focus { text-decoration: underline; }
.lead { font-size: 1.02rem; margin: 2px 0 12px; }
.note { color: var(--muted); font-size: 0.88rem; margin: 4px 0 10px; }
.absent { color: var(--muted); font-style: italic; margin: 4px 0; }
.absent::before { content: "○ "; font-style: normal; }
figure { margin: 12px 0 16px; padding: 0; break-inside: avoid; page-break-inside: avoid; }
figure svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figure svg text { font-family: "DejaVu Sans", "Bitstream Vera Sans", Verdana, Arial, sans-serif; }
figure svg * { stroke-linejoin: round; stroke-linecap: butt; }
figcaption { font-size: 0.84rem; color: var(--muted); margin-top: 6px; max-width: 80ch; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 8px 18px; }
.table-wrap { overflow-x: auto; margin: 10px 0 14px; }
table { border-collapse: collapse; font-size: 0.84rem; min-width: 50%; }
caption { text-align: left; font-size: 0.82rem; color: var(--muted); padding: 0 0 6px; caption-side: top; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
thead th { border-bottom: 2px solid #b9b9c0; font-weight: 700; white-space: nowrap; }
tbody th { font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafb; }
.hi { background: #fff4cc; font-weight: 700; box-shadow: inset 3px 0 0 var(--vermillion); }
td.rule { font-size: 0.78rem; color: var(--muted); min-width: 280px; }
.total { font-weight: 700; }
.warnings { border: 2px solid var(--vermillion); background: #fff4cc; border-radius: 8px; padding: 6px 14px;
            margin: 6px 0 12px; }
.warnings p { margin: 4px 0; }
.warnings ul { margin: 4px 0 6px; padding-left: 20px; }
.problems { border: 2px solid var(--vermillion); border-radius: 8px; padding: 6px 14px; margin: 10px 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 4px 0 12px; font-size: 0.88rem; }
dl.facts dt { font-weight: 700; color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.82rem; }
pre { background: var(--band); padding: 10px; border-radius: 6px; overflow-x: auto; max-height: 420px; }
details summary { cursor: pointer; color: var(--blue); margin: 8px 0; }
footer { color: var(--muted); font-size: 0.8rem; text-align: center; margin: 20px 0; }
a:focus-visible, summary:focus-visible { outline: 3px solid var(--orange); outline-offset: 2px; }
@media (max-width: 640px) { section { padding: 12px; } dl.facts { grid-template-columns: 1fr; } }
@media print {
  @page { margin: 14mm; }
  html { font-size: 11pt; }
  *, *::before, *::after { background: none !important; box-shadow: none !important; }
  body, section, header.top { color: #000; }
  main, header.top .inner { max-width: none; padding: 0; }
  section { border: none; border-top: 1px solid #999; border-radius: 0; padding: 8px 0; margin: 10px 0; }
  nav.toc, details summary { display: none; }
  details > pre { display: none; }
  figure, table, .table-wrap, dl.facts, .warnings { break-inside: avoid; page-break-inside: avoid; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  .table-wrap { overflow: visible; }
  table { font-size: 8.5pt; }
  thead th { white-space: normal; }
  th, td { padding: 2px 5px; }
  td.rule { min-width: 0; }
  .hi { font-weight: 700; text-decoration: underline; }
  .badge { border-color: #000 !important; color: #000 !important; }
  a { color: #000; text-decoration: none; }
}
"""


def _date(value: Any) -> str:
    if not isinstance(value, str):
        return "—"
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value
    return when.strftime("%Y-%m-%d %H:%M") + (" UTC" if when.utcoffset() is not None and not when.utcoffset() else "")


def _header(data: reading.RunData) -> str:
    s, m = data.summary or {}, data.manifest or {}
    run_id = s.get("run_id") or m.get("run_id") or data.folder.name
    state = s.get("state") if isinstance(s.get("state"), dict) else (data.state or {})
    name = str(state.get("state") or "unknown")
    why = " · ".join(str(x) for x in (state.get("reason"), state.get("detail")) if x)
    badges = []
    if s.get("simulated", m.get("simulated")):
        badges.append('<span class="badge sim" title="No real model was asked">SIMULATED</span>')
    cls = "ok" if name == "finished" else "stop"
    badges.append(f'<span class="badge {cls}">{esc(name)}{": " + esc(why) if why else ""}</span>')
    if s and s.get("complete") is False:
        badges.append('<span class="badge partial">PARTIAL: not comparable with a finished run</span>')
    if not s:
        badges.append('<span class="badge partial">no summary.json yet (council rescore writes it)</span>')
    rows_total = s.get("rows_total", m.get("rows"))
    kpis = [
        ("rows graded", f"{s['rows']:,}" + (f" of {rows_total:,}" if isinstance(rows_total, int) and rows_total != s["rows"] else "")
         if isinstance(s.get("rows"), int) else "—"),
        ("models", f"{len(s.get('models') or m.get('models') or []):,}"),
        ("judges", f"{len(m.get('roster') or []):,}" + (f" ({len(s.get('reserves') or [])} reserve)" if s.get("reserves") else "")),
        ("cost", f"${s['cost_usd']:,.2f}" if isinstance(s.get("cost_usd"), (int, float)) else "—"),
        ("started", _date(m.get("created_at"))),
    ]
    if isinstance(s.get("not_graded_rows"), int) and s["not_graded_rows"]:
        kpis.insert(1, ("not graded", f"{s['not_graded_rows']:,}"))
    if isinstance(s.get("deliberation_impact"), (int, float)):
        kpis.insert(3, ("votes moved in round two", pct(s["deliberation_impact"])))
    out = [f'<h1>Council report · <span class="run">{esc(run_id)}</span></h1>',
           f'<p class="badges">{" ".join(badges)}</p>',
           '<ul class="kpis">' + "".join(f'<li><span class="k">{esc(k)}</span><span class="v">{esc(v)}</span></li>'
                                         for k, v in kpis) + "</ul>"]
    if data.problems:
        out.append('<div class="problems" role="note"><strong>⚠ Unreadable files:</strong> '
                   + "; ".join(esc(p) for p in data.problems) + "</div>")
    return "\n".join(out)


def _section(html_id: str, title: str, body: str) -> str:
    return f'<section id="{html_id}" aria-labelledby="{html_id}-h">\n<h2 id="{html_id}-h">{esc(title)}</h2>\n{body}\n</section>'


def build(run_dir: Path, workers: int = 1) -> str:
    """The report of the run folder ``run_dir`` as an HTML document; with ``workers`` > 1 its sections are drawn
    by that many forked processes at once (the same page: each section depends only on the run's data)."""
    from council.report import sections  # matplotlib is imported only when a report is drawn

    data = reading.load(Path(run_dir))
    todo = list(range(len(sections.SECTIONS)))
    if workers > 1 and hasattr(os, "fork"):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        _drawing[:] = [data]  # what the forked workers inherit
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_draw_section, todo))
        _drawing.clear()
    else:
        parts = [_section_of(data, k) for k in todo]
    toc = "".join(f'<a href="#{p.id}">{esc(p.title)}</a>' for p in parts)
    run_id = (data.summary or {}).get("run_id") or (data.manifest or {}).get("run_id") or Path(run_dir).name
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light">',
        f"<title>Council report · {esc(run_id)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f'<header class="top"><div class="inner">\n{_header(data)}\n'
        f'<nav class="toc" aria-label="Sections">{toc}</nav></div></header>',
        "<main>",
        *(_section(p.id, p.title, p.body) for p in parts),
        "</main>",
        f"<footer>grading-council · report of run {esc(run_id)} · figures drawn with matplotlib, inline; "
        "no script, no external resource.</footer>",
        "</body>",
        "</html>",
        "",
    ])


_drawing: list[Any] = []  # the run data of a build drawn by forked workers


def _draw_section(k: int) -> Section:
    return _section_of(_drawing[0], k)


def _section_of(data: Any, k: int) -> Section:
    """Section ``k`` of the report (an explanation in its place when it cannot be drawn)."""
    from council.report import sections

    html_id, title, make = sections.SECTIONS[k]
    if data.summary is None and html_id in sections.FROM_SUMMARY:
        return Section(html_id, title, absent(
            "no summary.json: the run has not been scored yet (council rescore RUN writes it)"))
    try:
        return Section(html_id, title, make(data).body)
    except Exception as exc:  # one section's bad data must not cost the rest of the report
        return Section(html_id, title, f'<p class="absent error">This section could not be drawn: '
                                       f"{esc(type(exc).__name__)}: {esc(exc)}</p>")


def write_report(run_dir: Path, workers: int = 1) -> Path:
    """Write ``<run_dir>/report.html`` (atomically: a temporary file, then a rename) and return its path."""
    run_dir = Path(run_dir)
    text = build(run_dir, workers).encode("utf-8")
    path = run_dir / REPORT
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=run_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
