"""The report's sections on how the run went: quota use per vendor, diagnostics, provenance and the cross-judge
reports, each from the run's files (``quota_stats.json``, the manifest, ``crossjudge/``) and the summary.
The sections on the grading's results, and the order of them all: :mod:`council.report.sections`.
"""

from __future__ import annotations

from typing import Any

import orjson

from council.report import figures as F
from council.report import reading
from council.report.markup import (
    Section, absent, as_dict, cell, count, descending, esc, figure, fmt, interval, lead, number, pct, slug, table,
)
from council.report.svg import render

Ctx = reading.RunData


# -- 8. quota ------------------------------------------------------------------------------------------------

MIN_TIMELINE_BUCKETS = 3  # a vendor's timeline is drawn from this many intervals on
QUOTA_KEYS = ("requests", "tokens", "rate_limited", "cuts", "leases", "seconds", "factor", "holders",
              "granted_requests", "granted_tokens", "effective_rpm", "effective_tpm")  # the last four: older folders


def quota(ctx: Ctx) -> Section:
    q = {v: as_dict(x) for v, x in as_dict(ctx.quota).items()}
    if not q:
        return Section("sec-quota", "Quota use", absent(
            "no quota_stats.json in the run folder" if ctx.quota is None else "quota_stats.json names no vendor"))
    tls = reading.timelines(q)
    short = {v: tl for v, tl in tls.items() if len(tl.t) < MIN_TIMELINE_BUCKETS}
    tls = {v: tl for v, tl in tls.items() if v not in short}
    out = ""
    if tls:
        vendors = list(tls)
        svg = render(lambda: F.quota_timelines(vendors, [tls[v] for v in vendors]), "fig-quota")
        out += figure("fig-quota", svg, (
            "Requests per minute over the run per vendor (each interval's requests scaled to a minute); a "
            "triangle marks an interval with at least one 429 (rate limited). The title gives the totals."))
    elif short:
        longest = max(len(tl.t) * tl.bucket_s for tl in short.values())
        out += absent(f"the run's requests span {longest:g} s, under {MIN_TIMELINE_BUCKETS} intervals of its "
                      "timeline: too short to draw over time, so only the totals are shown")
    else:
        out += absent("quota_stats.json has no timeline per vendor, so only its totals are shown")
    flat = {vendor: _flatten(stats) for vendor, stats in q.items()}
    keys = [k for k in QUOTA_KEYS if any(k in x for x in flat.values())]
    keys += sorted({k for x in flat.values() for k in x} - set(keys))
    vendors = sorted(q)
    body = []
    for k in keys:
        row = [cell(k.replace("_", " "))]
        for vendor in vendors:
            v = flat[vendor].get(k)
            if isinstance(v, list):
                row.append(cell(", ".join(map(str, v)), numeric=False))
            elif number(v) is not None and float(v).is_integer() and k != "factor":
                row.append(cell(count(v), "hi" if k == "rate_limited" and v else ""))
            else:
                row.append(cell(fmt(v, 3) if number(v) is not None else ("—" if v is None else str(v))))
        body.append(row)
    limited = sum(int(number(x.get("rate_limited")) or 0) for x in q.values())
    text = (f"{limited:,} rate-limited responses (429) across {len(q)} vendors." if any("rate_limited" in x for x in q.values())
            else f"{len(q)} vendors.")
    return Section("sec-quota", "Quota use per vendor", lead(text) + out + table(
        "Quota ledger per vendor (quota_stats.json).", ["measure", *[esc(v) for v in vendors]], body))


def _flatten(stats: dict[str, Any]) -> dict[str, Any]:
    """A vendor's quota report without its timeline, nested objects one level up (``limits`` → ``limits rpm``)."""
    out: dict[str, Any] = {}
    for k, v in stats.items():
        if k == "timeline":
            continue
        if isinstance(v, dict):
            out.update({f"{k} {kk}": vv for kk, vv in v.items() if not isinstance(vv, (dict, list))})
        else:
            out[k] = v
    return out


# -- 9. diagnostics ------------------------------------------------------------------------------------------

RATES = (("errors", "failed calls"), ("unparseable", "unparseable outputs"), ("repair_reasks", "repair re-asks"),
         ("truncated", "truncated outputs"), ("empty_outputs", "empty outputs"), ("no_quorum_rows", "rows without quorum"),
         ("reused", "votes reused"))
HIGH_RATE = 0.02  # a parse or error rate above this is highlighted


def diagnostics(ctx: Ctx) -> Section:
    s = (ctx.summary or {})
    dg = as_dict(s.get("diagnostics"))
    if not dg:
        return Section("sec-diagnostics", "Diagnostics", absent("the summary has no diagnostics"))
    warnings = [str(w) for w in dg.get("warnings", []) if w]
    out = ""
    if warnings:
        out += ('<div class="warnings" role="note"><p><strong>⚠ Warnings</strong></p><ul>'
                + "".join(f"<li>{esc(w)}</li>" for w in warnings) + "</ul></div>")
    else:
        out += lead("✓ No warnings.")
    body = [[cell("votes"), cell(count(dg.get("votes"))), cell("")]]
    for key, label in RATES:
        if key in dg:
            rate = number(dg.get(f"{key}_rate"))
            body.append([cell(label), cell(count(dg.get(key))),
                         cell(("▲ " if rate and rate > HIGH_RATE else "") + pct(rate, 2),
                              "hi" if rate and rate > HIGH_RATE else "", numeric=True)])
    flags = as_dict(s.get("flags"))
    for key in sorted(flags):
        body.append([cell(f"flag: {key.replace('_', ' ')}"), cell(count(flags[key])), cell("")])
    for key, label in (("not_graded_rows", "rows not graded"), ("refused_rows", "rows refused")):
        if key in s:
            body.append([cell(label), cell(count(s[key]), "hi" if (number(s[key]) or 0) > 0 else ""), cell("")])
    out += table("Diagnostics over every vote and row (▲: above 2%).", ["measure", "count", "rate"], body)
    parse = {m: as_dict(v) for m, v in as_dict(dg.get("parse_status_per_member")).items()}
    errors = as_dict(dg.get("error_rate_per_member"))
    if parse:
        statuses = ["ok", "extracted", "repaired", "unparseable", "error"]
        rows = []
        for m in [x for x in s.get("members", []) if x in parse] + sorted(set(parse) - set(s.get("members", []))):
            row = [cell(m)]
            for st in statuses:
                v = number(parse[m].get(f"{st}_rate"))
                bad = st in ("unparseable", "error") and v is not None and v > HIGH_RATE
                row.append(cell(("▲ " if bad else "") + pct(v), "hi" if bad else "", numeric=True))
            v = number(errors.get(m))
            row.append(cell(("▲ " if v and v > HIGH_RATE else "") + pct(v), "hi" if v and v > HIGH_RATE else "",
                            numeric=True))
            rows.append(row)
        out += table("Parse status per member: ok (plain JSON), extracted (a JSON object inside prose or a fence), "
                     "repaired (after a re-ask), unparseable, error (the call failed).",
                     ["member", *statuses, "error rate"], rows)
    naming = {m: n for m, n in as_dict(dg.get("self_identifying_responses")).items() if (number(n) or 0) > 0}
    if naming:
        out += table("Answers under test that name their own model or vendor.", ["model", "responses"],
                     [[cell(m), cell(count(n), "hi")] for m, n in sorted(naming.items())])
    panels = as_dict(s.get("panels"))
    if panels:
        sizes = ", ".join(f"{count(n)} rows of {esc(k)}" for k, n in sorted(as_dict(panels.get("rows_by_size")).items()))
        out += (f'<p class="note">Panels: {sizes or "—"}; rows where a reserve sat: {count(panels.get("reserve_rows"))}; '
                f"even panels: {count(panels.get('even_panel_rows'))}.</p>")
    return Section("sec-diagnostics", "Diagnostics", out)


# -- 10. provenance ------------------------------------------------------------------------------------------


def provenance(ctx: Ctx) -> Section:
    m = ctx.manifest
    if not m:
        return Section("sec-provenance", "Provenance", absent("no manifest.json in the run folder"))
    s = (ctx.summary or {})
    sim = s.get("simulated", m.get("simulated"))
    hashes = as_dict(m.get("prompt_hashes"))
    facts: list[tuple[str, str]] = [
        ("run", esc(m.get("run_id", ctx.folder.name))),
        ("judges", "<strong>SIMULATED</strong>: the embedded provider played every judge; no real model was asked"
         if sim else "real providers" + (f" at <code>{esc(m['provider_url'])}</code>" if m.get("provider_url") else "")),
        ("created", esc(m.get("created_at", "—"))),
        ("command", esc(f"{m.get('command', '—')} (backend {m.get('backend', '—')}, shards {m.get('shards', 0)})")),
        ("judge prompt", esc(m.get("judge_prompt_version", "—")) + "".join(
            f" · {esc(k)} <code>{esc(v)}</code>" for k, v in sorted(hashes.items()))),
        ("methodology", esc(m.get("methodology_version", "—"))),
    ]
    if m.get("elicit_prompt_version"):
        facts.append(("elicitation prompt", f"{esc(m['elicit_prompt_version'])} <code>{esc(m.get('elicit_prompt_hash'))}</code>"))
    if m.get("models"):
        facts.append(("models asked", esc(", ".join(map(str, m["models"])))))
    facts += [
        ("dataset fingerprint", f"<code>{esc(m.get('dataset_fingerprint') or '—')}</code> ({esc(m.get('bank_path') or '—')})"),
        ("responses fingerprint", f"<code>{esc(m.get('responses_fingerprint') or '—')}</code> "
                                  f"({esc(m.get('responses_path') or 'elicited in this run')})"),
        ("seed · quorum", f"{esc(m.get('seed', '—'))} · {esc(m.get('quorum', '—'))}"),
        ("self-exclusion", "on: a vendor's judge never grades its own vendor's models" if m.get("self_exclusion")
         else "<strong>off</strong> (audit: vendors graded their own models)"),
        ("resumes", esc(len(m.get("resumes") or [])) + (f" · reused from {esc(', '.join(map(str, m['reuse_from'])))}"
                                                        if m.get("reuse_from") else "")),
        ("versions", esc(" · ".join(f"{k} {v}" for k, v in sorted(as_dict(m.get("versions")).items())) or "—")),
    ]
    out = '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    roster = [r for r in m.get("roster", []) if isinstance(r, dict)]
    if roster:
        out += table("Roster: a reserve sits in only where self-exclusion emptied a seat.",
                     ["vendor", "judge model", "seat"],
                     [[cell(r.get("vendor")), cell(r.get("judge_model")), cell("reserve" if r.get("reserve") else "regular")]
                      for r in roster])
    rub = reading.rubric_hashes(ctx.folder)
    if rub is not None and rub.counts:
        top = sorted(rub.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = top[:12]
        note = (f"{len(rub.counts):,}{'+' if rub.more else ''} distinct rubric hashes over "
                f"{rub.scanned:,} round-one votes" + ("" if rub.complete else " (the first ones of the file)")
                + (f"; {len(top) - len(shown):,} more hashes not listed" if len(top) > len(shown) else "") + ".")
        out += table(esc(note), ["rubric hash", "votes"], [[cell(f"<code>{esc(h)}</code>", raw=True), cell(f"{n:,}")]
                                                            for h, n in shown])
    config = m.get("config")
    if isinstance(config, dict):
        text = orjson.dumps(config, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
        out += f"<details><summary>Council configuration (manifest.json config)</summary><pre>{esc(text)}</pre></details>"
    skipped = m.get("skipped_inputs") or []
    if skipped:
        out += f'<p class="note">{len(skipped):,} input lines were skipped (manifest.json skipped_inputs).</p>'
    return Section("sec-provenance", "Provenance", out)


# -- 11. cross-judge -----------------------------------------------------------------------------------------


def crossjudge(ctx: Ctx) -> Section:
    if not ctx.crossjudge:
        return Section("sec-crossjudge", "Cross-judge reports", absent(
            "no cross-judge report (council crossjudge RUN --judge ... writes crossjudge/<name>/report.json)"))
    taken: set[str] = set()
    out = []
    for name, rep in ctx.crossjudge:
        fid = f"fig-crossjudge-{slug(name, taken)}"
        grader = str(rep.get("grader", name))
        per = {m: as_dict(v) for m, v in as_dict(rep.get("per_model")).items()}
        part = (f"<h3>{esc(grader)}</h3><p class=\"note\">{count(rep.get('paired_rows'))} paired rows of "
                f"{count(rep.get('rows'))}, {count(rep.get('items'))} items, {count(rep.get('n_resamples'))} resamples; "
                "scores 0-100 (a verdict is 100 / 0).</p>")
        if per:
            order = sorted(per, key=lambda m: (descending(per[m].get("delta")), m))
            svg = render(lambda order=order, per=per, grader=grader: F.crossjudge_deltas(
                order, [per[m].get("delta") for m in order], [per[m].get("delta_low") for m in order],
                [per[m].get("delta_high") for m in order], grader), fid)
            part += figure(fid, svg, f"Per model, {esc(grader)}'s mean score minus the council's, with a 95% "
                                     "bootstrap interval over items.")
        rows = []
        for key, label in (("mean_delta", "mean delta"), ("rank_correlation", "rank correlation (Kendall τ-b)"),
                           ("provider_spread", "provider spread"), ("group_spread", "group spread")):
            v = as_dict(rep.get(key))
            if not v:
                continue
            if key == "rank_correlation":
                value, ci = fmt(v.get("kendall"), 3), interval(v.get("kendall_low"), v.get("kendall_high"), 3)
                value += f" (Spearman {fmt(v.get('spearman'), 3)})"
            else:
                value, ci = fmt(v.get("value"), 2), interval(v.get("low"), v.get("high"), 2)
                if "null_high" in v:
                    ci += f"; no-preference up to {fmt(v.get('null_high'), 2)}"
                if v.get("highest_vendor"):
                    ci += f"; highest {v['highest_vendor']}, lowest {v.get('lowest_vendor', '—')}"
            reading_ = v.get("reading")
            shown = {"safe": "✓ safe", "not_safe": "✗ not safe"}.get(str(reading_), "no reading")
            rows.append([cell(label), cell(value, numeric=True), cell(ci, numeric=False),
                         cell(shown, "hi" if reading_ == "not_safe" else ""), cell(v.get("rule", ""), "rule")])
        part += table(f"Readings of {esc(grader)} against the council.", ["measure", "value", "95% interval",
                                                                           "reading", "rule"], rows)
        out.append(part)
    return Section("sec-crossjudge", "Cross-judge reports", "".join(out))
