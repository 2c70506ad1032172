"""The report's sections, each from the summary (and, where the summary lacks the numbers, the run's files), in
their order (``SECTIONS``). Here the sections on the grading's results (leaderboard, grader rules, votes moving,
agreement, herding, calibration); those on how the run went (quota, diagnostics, provenance, cross-judge
reports) are :mod:`council.report.run_sections`.

A section whose data is absent keeps its heading and says in one line why it is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from council.report import figures as F
from council.report import reading
from council.report.markup import (
    Section,
    absent,
    as_dict,
    cell,
    count,
    descending,
    esc,
    figure,
    fmt,
    interval,
    lead,
    number,
    pct,
    real,
    slug,
    table,
)
from council.report.run_sections import crossjudge, diagnostics, provenance, quota
from council.report.svg import BLACK, ORANGE, render, series

Ctx = reading.RunData


def _summary(ctx: Ctx) -> dict[str, Any]:
    return ctx.summary or {}


def _models_in(block: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-model entries of a bootstrap summary (which mixes them with ``ci``, ``seed``, ``adjacent``...)."""
    return {k: v for k, v in block.items() if isinstance(v, dict) and "score" in v}


def _by_score(models: dict[str, dict[str, Any]], key: str = "score") -> list[str]:
    return sorted(models, key=lambda m: (descending(models[m].get(key)), m))


# -- 2. leaderboard ------------------------------------------------------------------------------------------


def leaderboard(ctx: Ctx) -> Section:
    s = _summary(ctx)
    parts: list[str] = []
    every = {m: v for m, v in as_dict(s.get("models")).items() if isinstance(v, dict)}
    models = {m: v for m, v in every.items() if number(v.get("score")) is not None}
    ci = _models_in(as_dict(as_dict(s.get("uncertainty")).get("scores")))
    if models:
        parts.append(_binary_board(s, models, ci))
        unscored = sorted(set(every) - set(models))
        if unscored:
            parts.append(f'<p class="note">Not on the board, no correct / incorrect row graded: '
                         f'{esc(", ".join(unscored))}.</p>')
    scales = as_dict(s.get("scales"))
    taken: set[str] = set()
    for name in sorted(scales):
        parts.append(_scale_board(name, as_dict(scales[name]), slug(name, taken)))
    if not parts:
        why = "no row was graded yet" if not s else "no model has a score (no row was graded)"
        return Section("sec-leaderboard", "Leaderboard", absent(why))
    if not models and s:
        parts.insert(0, absent("no correct / incorrect rows were graded: the run's items are all on graded scales"))
    return Section("sec-leaderboard", "Leaderboard", "\n".join(parts))


def _binary_board(s: dict[str, Any], models: dict[str, dict[str, Any]], ci: dict[str, dict[str, Any]]) -> str:
    adjacent_list = [a for a in as_dict(as_dict(s.get("uncertainty")).get("scores")).get("adjacent", []) if isinstance(a, dict)]
    chain = [adjacent_list[0].get("higher")] + [a.get("lower") for a in adjacent_list] if adjacent_list else []
    # The bootstrap's own order (ties broken as it broke them), so each row's P(above next) is about the next row.
    order = chain if sorted(map(str, chain)) == sorted(models) else _by_score(models)
    has_truth = any(number(models[m].get("true_score")) is not None for m in order)
    rows = [{"name": m, "score": 100 * models[m]["score"],
             "low": 100 * real(ci.get(m, {}).get("ci_low")),
             "high": 100 * real(ci.get(m, {}).get("ci_high")),
             "round1": 100 * real(models[m].get("score_round1")),
             "truth": 100 * real(models[m].get("true_score"))} for m in order]
    extra = [("round1", "round one (blind)", ORANGE, "D")]
    if has_truth:
        extra.append(("truth", "true score (simulation's ground truth)", BLACK, "x"))
    svg = render(lambda: F.leaderboard(rows, xlabel="score: % of the model's graded rows judged correct",
                                         extra=extra), "fig-leaderboard")
    top = order[0]
    top_low = number(ci.get(top, {}).get("ci_low"))
    reach = [m for m in order[1:] if top_low is not None and real(ci.get(m, {}).get("ci_high")) >= top_low]
    text = f"Top: <strong>{esc(top)}</strong> at {pct(models[top]['score'])} {interval(ci.get(top, {}).get('ci_low'), ci.get(top, {}).get('ci_high'), scale=100)}."
    if reach:
        text += (f" {len(reach)} other model{'s' if len(reach) > 1 else ''}’ intervals reach its lower bound: "
                 "their order against it is not settled by this run.")
    gold = as_dict(s.get("accuracy_vs_gold"))
    if number(gold.get("council")) is not None:
        best = gold.get("best_member_round1")
        diff = as_dict(gold.get("council_minus_best_member"))
        cc = as_dict(gold.get("council_ci"))
        text += (f" Against the ground truth the council is right on {pct(gold['council'])} of rows "
                 f"{interval(cc.get('ci_low'), cc.get('ci_high'), scale=100)}"
                 + (f"; minus its strongest member ({esc(best)}) on the {count(diff.get('rows'))} rows that member "
                    f"voted: {fmt(100 * real(diff.get('value')), 1, signed=True)} points "
                    f"{interval(diff.get('ci_low'), diff.get('ci_high'), scale=100)}." if best and diff else "."))
    adjacent = {(a.get("higher"), a.get("lower")): a for a in adjacent_list}
    head = ["#", "model", "vendor", "score", "95% CI", "round one", *(["true score"] if has_truth else []),
            "rows", "not graded", "P(above next)"]
    body = []
    for k, m in enumerate(order):
        v, c = models[m], ci.get(m, {})
        nxt = adjacent.get((m, order[k + 1])) if k + 1 < len(order) else None
        body.append([cell(k + 1), cell(m), cell(v.get("vendor", "")), cell(pct(v.get("score"))),
                     cell(interval(c.get("ci_low"), c.get("ci_high"), scale=100)), cell(pct(v.get("score_round1"))),
                     *([cell(pct(v.get("true_score")))] if has_truth else []), cell(count(v.get("rows"))),
                     cell(count(v.get("not_graded")), "hi" if (number(v.get("not_graded")) or 0) > 0 else ""),
                     cell(pct(nxt.get("p_higher_outranks"), 0) if nxt else "—")])
    n_res = as_dict(s.get("uncertainty")).get("scores", {}).get("n_resamples")
    caption = ("Council score per model (dot) with its 95% percentile-bootstrap interval over items "
               f"({count(n_res)} resamples, paired across models; bar), round one's blind majority (open diamond)"
               + (" and the simulation's true score (cross)" if has_truth else "") + ". Best first.")
    return (lead(text) + figure("fig-leaderboard", svg, caption)
            + table("Leaderboard (binary rows). P(above next): the share of bootstrap resamples in which the model "
                    "outranks the one below it.", head, body))


def _scale_board(name: str, scale: dict[str, Any], fid: str) -> str:
    models = {m: v for m, v in as_dict(scale.get("models")).items() if isinstance(v, dict)
              and number(v.get("score")) is not None}
    dims = sorted(as_dict(scale.get("dimensions")), key=lambda d: (-(number(scale["dimensions"][d]) or 0), d))
    levels = [str(x) for x in scale.get("levels", []) if isinstance(x, str)]
    weights = ", ".join(f"{d} {fmt(scale['dimensions'][d], 2)}" for d in dims)
    title = (f"<h3>Graded scale “{esc(name)}”</h3>"
             f"<p class=\"note\">0-100: 100 × Σ weight × level / {esc(scale.get('high', '?'))}; levels "
             f"{esc(' · '.join(levels))}; dimensions "
             f"{esc(weights)}; {count(scale.get('rows'))} rows.</p>")
    if not models:
        return title + absent(f"no model has a score on the scale “{name}”")
    order = _by_score(models)
    rows = [{"name": m, "score": models[m]["score"], "low": models[m].get("ci_low"), "high": models[m].get("ci_high"),
             **{f"dim:{d}": as_dict(as_dict(models[m].get("by_dimension")).get(d)).get("score") for d in dims}}
            for m in order]
    extra = [(f"dim:{d}", f"{d} (dimension)", series(k + 1)[0], series(k + 1)[1]) for k, d in enumerate(dims[:5])]
    fig_id = f"fig-scale-{fid}"
    svg = render(lambda: F.leaderboard(rows, xlabel=f"score on “{name}” (0-100)", extra=extra), fig_id)
    top = order[0]
    text = (f"Top on “{esc(name)}”: <strong>{esc(top)}</strong> at {fmt(models[top]['score'], 1)} "
            f"{interval(models[top].get('ci_low'), models[top].get('ci_high'))}.")
    head = ["#", "model", "score", "95% CI", *[f"{esc(d)}" for d in dims], "rows"]
    body = []
    for k, m in enumerate(order):
        v = models[m]
        per = [as_dict(as_dict(v.get("by_dimension")).get(d)) for d in dims]
        body.append([cell(k + 1), cell(m), cell(fmt(v["score"], 1)), cell(interval(v.get("ci_low"), v.get("ci_high"))),
                     *[cell(f"{fmt(p.get('score'), 1)} {interval(p.get('ci_low'), p.get('ci_high'))}",
                            numeric=True) for p in per], cell(count(v.get("rows")))])
    caption = (f"Score on the graded scale “{esc(name)}” per model (dot, 0-100) with its 95% bootstrap interval "
               "(bar); the open markers are the model's score on each dimension alone.")
    return (title + lead(text) + figure(fig_id, svg, caption)
            + table(f"Leaderboard on “{esc(name)}”, per dimension: score [95% CI].", head, body))


# -- 3. grader rules -----------------------------------------------------------------------------------------


def _rule_order(rules: list[str]) -> list[str]:
    def key(rule: str) -> tuple[int, str]:
        fixed = {"council": 0, "round1": 1, "all_concur": 2}
        if rule in fixed:
            return fixed[rule], rule
        return (3 if rule.startswith("without:") else 4 if rule.startswith("single:") else 5), rule
    return sorted(rules, key=key)


def grader_rules(ctx: Ctx) -> Section:
    g = as_dict(_summary(ctx).get("grader_rules"))
    scores = {r: as_dict(v) for r, v in as_dict(g.get("rules")).items()}
    if not scores or not any(number(x) is not None for v in scores.values() for x in v.values()):
        return Section("sec-rules", "Grader rules", absent(
            "no correct / incorrect rows were graded, so no alternative grader rule has scores"))
    rules = _rule_order(list(scores))
    council = scores.get("council", {})
    models = [m for m in _by_score({m: {"score": v} for m, v in council.items()}) if number(council.get(m)) is not None]
    if not models:
        models = sorted({m for v in scores.values() for m in v})
    taus = as_dict(g.get("kendall_tau_vs_council"))
    change = as_dict(g.get("max_abs_change_vs_council"))
    tops = as_dict(g.get("top_model"))
    percent = {r: {m: (None if number(x) is None else 100 * number(x)) for m, x in v.items()} for r, v in scores.items()}
    # A rule "changes the top model" only where it scores the council's top model at all (single:V never
    # scores V's own vendor's models).
    council_top = tops.get("council")
    moved = {r: tops.get(r) != council_top and number(scores.get(r, {}).get(council_top)) is not None for r in rules}
    shown_tops = {r: (council_top if not moved[r] else tops.get(r)) for r in rules}
    svg = render(lambda: F.rule_slopes(rules, models, percent, taus, shown_tops), "fig-rules")
    others = [r for r in rules if r != "council"]
    keep = [r for r in others if not moved[r]]
    finite = [(number(taus.get(r)), r) for r in others if number(taus.get(r)) is not None]
    text = (f"{len(keep)} of {len(others)} alternative rules keep the council's top model "
            f"({esc(council_top or '—')}) on top, or do not score it.")
    if finite:
        low, rule = min(finite)
        text += f" Lowest rank agreement: <strong>{esc(rule)}</strong>, Kendall τ = {low:.2f}."
    body = []
    for r in rules:
        unscored = r != "council" and number(scores.get(r, {}).get(council_top)) is None
        top = ("✱ " if moved[r] else "") + str(tops.get(r, "—")) + (
            f" ({council_top} not scored by this rule)" if unscored else "")
        body.append([cell(r), cell("—" if r == "council" else fmt(taus.get(r), 3)),
                     cell("—" if r == "council" else fmt(100 * real(change.get(r)), 1)),
                     cell(top, "hi" if moved[r] else "")])
    caption = ("One panel per alternative grader rule: each model's score under the council (left) and under the "
               "rule (right), one line per model. A flat panel changes nothing; a framed one (✱) changes the top "
               "model; τ is Kendall's rank correlation with the council. round1: round one's majority; all_concur: "
               "correct only when every valid vote says so; single:V: member V alone (no score for V's own vendor's "
               "models, drawn faint); without:V: the council without V."
               + (f" The {F.MAX_LINES} best models are drawn; the table covers all." if len(models) > F.MAX_LINES else ""))
    return Section("sec-rules", "Grader-rule sensitivity", lead(text) + figure("fig-rules", svg, caption) + table(
        "Rank correlation with the council per rule. ✱ marks a rule whose top model differs from the council's.",
        ["rule", "Kendall τ vs council", "max |Δ score| (points)", "top model"], body))


# -- 4. votes moving -----------------------------------------------------------------------------------------


def _deliberated_rows(s: dict[str, Any]) -> str:
    """Which rows round two went to, when it did not go to every row (``--deliberate disputed``), and what the
    audit of the skipped rows says skipping them changed."""
    d = as_dict(s.get("deliberation"))
    if d.get("mode") != "disputed":
        return ""
    done, skipped = int(number(d.get("rows_deliberated")) or 0), int(number(d.get("rows_skipped")) or 0)
    text = (f"Round two went only to rows whose round one was disputed: {done:,} rows deliberated, {skipped:,} "
            "kept their round-one verdict. The figures of this section are on the rows that deliberated. ")
    audit = as_dict(d.get("audit"))
    rows = int(number(audit.get("rows")) or 0)
    if rows:
        changed = int(number(audit.get("changed")) or 0)
        text += (f"The audit sent round two to {rows:,} of the skipped rows, never counted: it would have changed "
                 f"{changed:,} of their verdicts ({pct(audit.get('changed_rate'))} "
                 f"{interval(audit.get('ci_low'), audit.get('ci_high'), scale=100)}).")
    else:
        text += "No skipped row was audited (--deliberation-audit): what skipping them changed is not measured."
    return f'<p class="note">{esc(text)}</p>'


def member_flips(ctx: Ctx) -> Section:
    s = _summary(ctx)
    flips = {m: as_dict(v) for m, v in as_dict(s.get("member_flips")).items()}
    members = [m for m in s.get("members", []) if m in flips] + sorted(set(flips) - set(s.get("members", [])))
    scales = as_dict(s.get("scales"))
    scale_tables = "".join(_scale_moves(name, as_dict(scales[name])) for name in sorted(scales))
    rows_note = _deliberated_rows(s)
    if not members or not sum(int(number(flips[m].get("valid_both")) or 0) for m in members):
        return Section("sec-flips", "How votes moved between rounds", absent(
            "no member cast a valid correct / incorrect vote in both rounds") + rows_note + scale_tables)
    up = [int(number(flips[m].get("to_correct")) or 0) for m in members]
    down = [int(number(flips[m].get("to_incorrect")) or 0) for m in members]
    valid = [int(number(flips[m].get("valid_both")) or 0) for m in members]
    svg = render(lambda: F.diverging_flips(members, up, down, valid), "fig-flips")
    unc = as_dict(s.get("uncertainty"))
    di, al = as_dict(unc.get("deliberation_impact")), as_dict(unc.get("agreement_lift"))
    text = (f"{sum(up) + sum(down):,} of {sum(valid):,} votes changed in round two ({sum(up):,} to correct, "
            f"{sum(down):,} to incorrect). Deliberation impact {pct(s.get('deliberation_impact'))} "
            f"{interval(di.get('ci_low'), di.get('ci_high'), scale=100)}, agreement lift "
            f"{fmt(s.get('agreement_lift'), 3, signed=True)} {interval(al.get('ci_low'), al.get('ci_high'), 3)}, "
            f"consensus flip rate {pct(s.get('consensus_flip_rate'))}.")
    body = [[cell(m), cell(f"{u:,}"), cell(f"{d:,}"), cell(f"{v:,}"), cell(pct((u + d) / v if v else None))]
            for m, u, d, v in zip(members, up, down, valid, strict=True)]
    caption = ("Per member, round-one votes it changed in round two after seeing its peers' votes: to incorrect "
               "(left, hatched) and to correct (right), with the share of its votes valid in both rounds.")
    return Section("sec-flips", "How votes moved between rounds", lead(text) + rows_note
                   + figure("fig-flips", svg, caption)
                   + table("Votes changed per member.", ["member", "to correct", "to incorrect", "valid in both",
                                                          "share moved"], body) + scale_tables)


def _scale_moves(name: str, scale: dict[str, Any]) -> str:
    di, al = as_dict(scale.get("deliberation_impact")), as_dict(scale.get("agreement_lift"))
    dims = sorted(set(as_dict(di.get("by_dimension"))) | set(as_dict(al.get("by_dimension"))))
    if not dims:
        return ""
    body = [[cell(d), cell(pct(as_dict(di.get("by_dimension")).get(d))),
             cell(fmt(as_dict(al.get("by_dimension")).get(d), 3, signed=True))] for d in dims]
    body.append([cell("all dimensions", "total"), cell(pct(di.get("moved")), "total"),
                 cell(fmt(al.get("lift"), 3, signed=True), "total")])
    return table(f"Graded scale “{esc(name)}”: share of levels that moved between rounds (mean move "
                 f"{fmt(di.get('mean_abs_move'), 3)} levels over {count(di.get('cells'))} cells), and the drop in the "
                 "members' mean absolute deviation from their median.",
                 ["dimension", "levels moved", "agreement lift"], body)


# -- 5. agreement --------------------------------------------------------------------------------------------


def agreement(ctx: Ctx) -> Section:
    s = _summary(ctx)
    ag = as_dict(s.get("agreement"))
    members = [str(m) for m in s.get("members", [])]
    parts, rows = [], {}
    for round_ in ("round1", "round2"):
        block = as_dict(ag.get(round_))
        pairs = {p: as_dict(v) for p, v in as_dict(block.get("pairs")).items()}
        if not any((number(v.get("n")) or 0) > 0 for v in pairs.values()):
            continue
        seen = [m for m in members if any(m in p.split("|") for p in pairs)]
        seen += sorted({x for p in pairs for x in p.split("|")} - set(seen))
        kappa = F.pair_matrix(seen, pairs, "cohens_kappa")
        share = F.pair_matrix(seen, pairs, "percent_agreement")
        label = "round one (blind)" if round_ == "round1" else "round two (after seeing peers)"
        fid = f"fig-agreement-{round_}"
        svg = render(lambda seen=seen, kappa=kappa, share=share, label=label:
                       F.agreement_heatmap(seen, kappa, share, label), fid)
        ns = sorted({int(number(v.get("n")) or 0) for v in pairs.values()})
        parts.append(figure(fid, svg, (
            f"Pairwise agreement, {label}: Cohen's κ per member pair (colour, first line) and percent agreement "
            f"(second line), over {ns[0]:,}{f'–{ns[-1]:,}' if len(ns) > 1 else ''} rows both judged. Fleiss' κ "
            f"{fmt(block.get('fleiss_kappa'), 3)}, Krippendorff's α {fmt(block.get('krippendorff_alpha'), 3)}.")))
        for p, v in pairs.items():
            rows.setdefault(p, {})[round_] = v
    scales = as_dict(s.get("scales"))
    taken: set[str] = set()
    scale_parts = [_scale_agreement(name, as_dict(scales[name]), members, slug(name, taken)) for name in sorted(scales)]
    if not parts and not any(scale_parts):
        return Section("sec-agreement", "Agreement between members", absent(
            "no pair of members judged the same rows"))
    body = ""
    if parts:
        r1, r2 = as_dict(ag.get("round1")), as_dict(ag.get("round2"))
        text = (f"Fleiss' κ {fmt(r1.get('fleiss_kappa'), 3)} in round one, {fmt(r2.get('fleiss_kappa'), 3)} in round "
                "two: " + ("members agree more after deliberation." if (number(r2.get("fleiss_kappa")) or 0)
                           > (number(r1.get("fleiss_kappa")) or 0) else "deliberation did not raise agreement."))
        table_rows = [[cell(p.replace("|", " · ")),
                       *[cell(x) for r in ("round1", "round2") for x in (fmt(as_dict(rows[p].get(r)).get("cohens_kappa"), 3),
                                                                          pct(as_dict(rows[p].get(r)).get("percent_agreement")))],
                       cell(count(max((number(as_dict(rows[p].get(r)).get("n")) or 0) for r in ("round1", "round2"))))]
                      for p in sorted(rows)]
        body = (lead(text) + '<div class="pair">' + "".join(parts) + "</div>"
                + table("Agreement per member pair.", ["pair", "κ round one", "% round one", "κ round two",
                                                        "% round two", "rows"], table_rows))
    return Section("sec-agreement", "Agreement between members", body + "".join(scale_parts))


def _scale_agreement(name: str, scale: dict[str, Any], members: list[str], fid: str) -> str:
    rel = {d: as_dict(v) for d, v in as_dict(scale.get("reliability")).items()}
    dims = sorted(rel)
    rounds = [r for r in ("round1", "round2") if any(r in rel[d] for d in dims)]
    if not dims or not rounds:
        return ""
    matrices, seen = {}, []
    for d in dims:
        for r in rounds:
            pairs = as_dict(as_dict(rel[d].get(r)).get("kappa_quadratic"))
            seen += [x for p in pairs for x in p.split("|") if x not in seen]
    order = [m for m in members if m in seen] + sorted(set(seen) - set(members))
    for d in dims:
        for r in rounds:
            matrices[(d, r)] = F.pair_matrix(order, as_dict(as_dict(rel[d].get(r)).get("kappa_quadratic")), "value")
    out = f"<h3>Graded scale “{esc(name)}”</h3>"
    if order and any(np.isfinite(m).any() for m in matrices.values()):
        fig_id = f"fig-scale-{fid}-agreement"
        svg = render(lambda: F.scale_kappa_grid(order, dims, rounds, matrices), fig_id)
        out += figure(fig_id, svg, f"Quadratic-weighted κ per member pair on “{esc(name)}”, a row per dimension, "
                                   "a column per round.")
    body = []
    for d in dims:
        for r in rounds:
            v = as_dict(rel[d].get(r))
            body.append([cell(f"{d} · {'round one' if r == 'round1' else 'round two'}"),
                         cell(fmt(v.get("alpha_ordinal"), 3)), cell(fmt(v.get("alpha_interval"), 3)),
                         cell(fmt(v.get("icc2_1"), 3)), cell(fmt(v.get("icc2_k"), 3))])
    return out + table(f"Reliability on “{esc(name)}” per dimension and round (ICC: row-weighted mean over panels).",
                       ["dimension · round", "Krippendorff α (ordinal)", "α (interval)", "ICC(2,1)", "ICC(2,k)"], body)


# -- 6. herding ----------------------------------------------------------------------------------------------


def _points(share: Any) -> str:
    """A difference of shares as percentage points."""
    v = number(share)
    return "—" if v is None else f"{100 * v:+.2f} points"


def herding(ctx: Ctx) -> Section:
    s = _summary(ctx)
    h = as_dict(s.get("herding"))
    flips = {m: as_dict(v) for m, v in as_dict(h.get("flips")).items()}
    members = [m for m in s.get("members", []) if m in flips] + sorted(set(flips) - set(s.get("members", [])))
    c = [int(number(flips[m].get("conforming")) or 0) for m in members]
    d = [int(number(flips[m].get("dissenting")) or 0) for m in members]
    u = [int(number(flips[m].get("unaligned")) or 0) for m in members]
    weak, strong = int(number(h.get("weak_rows")) or 0), int(number(h.get("strong_rows")) or 0)
    if not h or (not sum(c) + sum(d) + sum(u) and not weak + strong):
        return Section("sec-herding", "Herding", absent("no correct / incorrect row was judged in both rounds"))
    text = (f"Of the changed votes that had a peers' majority to follow, {pct(h.get('conformity_share_overall'), 0)} "
            f"followed it ({sum(c):,} with, {sum(d):,} against, {sum(u):,} with no majority). Agreement lift from "
            f"weak round-one majorities {_points(h.get('agreement_lift_weak'))}, from strong ones "
            f"{_points(h.get('agreement_lift_strong'))}; mean lift on a weak-majority row "
            f"{_points(h.get('mean_lift_weak_rows'))}.")
    body = [[cell(m), cell(f"{a:,}"), cell(f"{b:,}"), cell(f"{e:,}"), cell(pct(flips[m].get("conformity_share"), 0))]
            for m, a, b, e in zip(members, c, d, u, strict=True)]
    out = lead(text)
    if sum(c) + sum(d) + sum(u):
        svg = render(lambda: F.herding(members, c, d, u, real(h.get("agreement_lift_weak")),
                                         real(h.get("agreement_lift_strong")), weak, strong),
                       "fig-herding")
        out += figure("fig-herding", svg, (
            "Left: each member's changed votes, with its peers' round-one majority (orange), against it (blue, "
            "hatched) or where the peers had none (grey); the text gives with / against / none and the conformity share. "
            "Right: the part of the agreement lift that comes from rows whose round-one majority was weak (one vote "
            "from a tie) against strong."))
    else:
        out += absent("no member changed a vote in round two, so there is no flip to attribute to herding")
    return Section("sec-herding", "Herding", out + table(
        "Changed votes per member by the peers' round-one majority.",
        ["member", "with majority", "against", "no majority", "conformity share"], body))


# -- 7. calibration ------------------------------------------------------------------------------------------


def calibration(ctx: Ctx) -> Section:
    cal = {m: as_dict(v) for m, v in as_dict(_summary(ctx).get("calibration")).items()}
    if not cal:
        return Section("sec-calibration", "Calibration", absent("no confidence was elicited"))
    rel = reading.reliability(ctx.folder)
    body = [[cell(m), cell(fmt(v.get("brier"), 3)), cell(fmt(v.get("ece"), 3)), cell(fmt(v.get("selective"), 3)),
             cell(count(v.get("n_confident"))), cell(count(v.get("n_abstained"))), cell(count(v.get("n_rows")))]
            for m, v in sorted(cal.items())]
    tab = table("Calibration per model: Brier score and expected calibration error (10 bins) over rows with a "
                "stated confidence that were answered; the selective score counts +1 right, 0 abstained, −1 wrong.",
                ["model", "Brier", "ECE", "selective", "confident rows", "abstained", "rows"], body)
    if rel is None:
        return Section("sec-calibration", "Calibration", absent(
            "confidence was stated but no such row has a correct / incorrect consensus") + tab)
    titles = [f"{m}\nBrier {fmt(cal.get(m, {}).get('brier'), 3)} · ECE {fmt(cal.get(m, {}).get('ece'), 3)} · "
              f"n {int(rel.n[k].sum()):,}" for k, m in enumerate(rel.models)]
    svg = render(lambda: F.reliability_diagrams(rel.models, rel.mean_confidence, rel.share_correct, rel.n, titles),
                   "fig-calibration")
    worst = max(((number(v.get("ece")), m) for m, v in cal.items() if number(v.get("ece")) is not None), default=None)
    text = ("Points below the diagonal: the model said it was surer than the council found it right."
            + (f" Largest ECE: <strong>{esc(worst[1])}</strong> ({worst[0]:.3f})." if worst else ""))
    caption = ("Reliability diagram per model: rows with a stated confidence, in ten equal-width bins; each point is "
               "a bin's mean stated confidence against the share the council judged correct (the number beside it: "
               "rows in the bin), the bar its gap from the diagonal.")
    return Section("sec-calibration", "Calibration", lead(text) + figure("fig-calibration", svg, caption) + tab)


SECTIONS: tuple[tuple[str, str, Callable[[Ctx], Section]], ...] = (
    ("sec-leaderboard", "Leaderboard", leaderboard),
    ("sec-rules", "Grader-rule sensitivity", grader_rules),
    ("sec-flips", "How votes moved between rounds", member_flips),
    ("sec-agreement", "Agreement between members", agreement),
    ("sec-herding", "Herding", herding),
    ("sec-calibration", "Calibration", calibration),
    ("sec-quota", "Quota use per vendor", quota),
    ("sec-diagnostics", "Diagnostics", diagnostics),
    ("sec-provenance", "Provenance", provenance),
    ("sec-crossjudge", "Cross-judge reports", crossjudge),
)

# Sections drawn from summary.json alone (the others read quota_stats.json, the manifest, crossjudge/).
FROM_SUMMARY = frozenset({"sec-leaderboard", "sec-rules", "sec-flips", "sec-agreement", "sec-herding", "sec-calibration",
                          "sec-diagnostics"})
