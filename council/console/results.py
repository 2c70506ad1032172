"""What a run found, as the command line prints it: the leaderboard, the graded scales, the grader rules, the
models under test, deliberation and agreement, what it cost, and the partial-run and warning lines."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape

from council.console.output import console, num, pairs, pct, points, say, table, usd
from council.run.runner import RunResult
from council.run.timings import Timings
from council.scoring.scoring import REASONING_DOMINATES, WARN_RATE
from council.store.runfolder import MANIFEST


def print_result(result: RunResult, command: str = "run") -> None:
    """What a run found: the leaderboard (or the graded scales), the grader rules, the models under test,
    deliberation and agreement, warnings and the run folder; titled by the command that ran it."""
    s = result.summary
    if s.get("scales"):
        print_scales(s)
    label = "  SIMULATED" if s.get("simulated") else ""
    if s.get("scaled_rows", 0) < s["rows_total"]:  # graded items only: the correct / incorrect tables are empty
        print_leaderboard(s, f"council {command} {s['run_id']}  ({s['rows']} rows, {result.seconds:.1f} s){label}")
    print_simulated(s)
    print_partial(s)
    if s.get("scaled_rows", 0) < s["rows_total"]:
        print_rules(s.get("grader_rules"))
        print_elicitation(s)
        print_metrics(s)
    print_cost(s, _manifest(result))
    print_warnings(s)
    say(f"run folder: {escape(str(result.run_dir))}")


def _manifest(result: RunResult) -> dict[str, Any]:
    try:
        return orjson.loads((result.run_dir / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


def _reasoning(judge: dict[str, Any] | None) -> str:
    """What a reasoning judge's reasoning took of its cost, said beside it (dominated: over half)."""
    if not judge or not judge.get("reasoning_tokens"):
        return ""
    share = judge["reasoning_share_of_cost"]
    said = "reasoning dominates: " if share > REASONING_DOMINATES else ""
    return f" ({said}{100 * share:.0f}% reasoning, {judge['reasoning_tokens_per_vote']:.0f} tokens a vote)"


def print_cost(s: dict[str, Any], manifest: dict[str, Any]) -> None:
    """What the run cost (a simulated run: what it would have cost on the real providers, since the embedded
    provider reports usage like a real one), in total, per round and per judge vendor; where the prices came
    from, and the models with none (counted as $0, so the total is short of their calls)."""
    if "cost_by_round_usd" not in s:  # a summary written before costs were broken down
        return
    facts = [("total", usd(s["cost_usd"]))]
    facts += [(f"round {k}", usd(v)) for k, v in s["cost_by_round_usd"].items()]
    if s.get("cost_elicitation_usd"):
        facts.append(("models under test (answers)", usd(s["cost_elicitation_usd"])))
    tokens = s.get("judge_tokens") or {}
    facts += [(f"judge {vendor}", usd(v) + _reasoning(tokens.get(vendor))) for vendor, v in s["cost_by_vendor_usd"].items()]
    prices = manifest.get("prices") or {}
    sources = sorted({p["source"] for p in prices.values() if p})
    if sources:
        facts.append(("prices from", ", ".join(sources)))
    unpriced = [m for m, p in prices.items() if p is None]
    if unpriced:
        facts.append(("no price (counted as $0)", f"{', '.join(unpriced)}: set model_prices in --config"))
    pairs("what it would have cost on the real providers" if s.get("simulated") else "what it cost", facts)


def print_leaderboard(s: dict[str, Any], title: str) -> None:
    """Each model's round-one and council score, its 95% interval, its tie rate and its true score (when known),
    best first."""
    ci = s.get("uncertainty", {}).get("scores", {})
    has_truth = "accuracy_vs_gold" in s
    header = ("model", "rows", "round 1", "council", "95% CI", "ties", *(("truth",) if has_truth else ()))
    ranked = sorted(s.get("models", {}).items(), key=lambda kv: -(kv[1]["score"] or 0.0))
    rows = []
    for model, m in ranked:
        c = ci.get(model, {})
        rows.append((model, str(m["rows"]), pct(m["score_round1"]), pct(m["score"]),
                     f"{pct(c.get('ci_low'))}-{pct(c.get('ci_high'))}" if c else "-", pct(m.get("tie_rate")),
                     *((pct(m.get("true_score")),) if has_truth else ())))
    table(title, header, rows)


def print_simulated(s: dict[str, Any]) -> None:
    """The SIMULATED line, for a run graded by the embedded provider."""
    if s.get("simulated"):
        say("[bold yellow]SIMULATED[/bold yellow]: graded by the embedded provider's simulated judges; no real "
            "model was asked.")


def print_metrics(s: dict[str, Any]) -> None:
    """Deliberation and agreement: the effects of round two with their intervals, agreement per round, herding,
    the flags and the accuracy against the truth."""
    facts: list[tuple[str, str]] = _deliberated(s.get("deliberation"))
    unc = s.get("uncertainty", {})
    for key in ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift"):
        band = unc.get(key)
        facts.append((key, num(s.get(key)) + (f"  [{num(band['ci_low'])}, {num(band['ci_high'])}]" if band else "")))
    for round_, a in s.get("agreement", {}).items():
        facts.append((f"{round_}: Fleiss kappa / Krippendorff alpha",
                      f"{num(a['fleiss_kappa'])} / {num(a['krippendorff_alpha'])}"))
    herding = s.get("herding")
    if herding:
        facts.append(("flips conforming to peers' majority", pct(herding["conformity_share_overall"])))
        facts.append(("agreement_lift from weak majorities", num(herding["agreement_lift_weak"])))
    for key, value in s.get("flags", {}).items():
        facts.append((f"rows flagged {key}", str(value)))
    if "accuracy_vs_gold" in s:
        acc = s["accuracy_vs_gold"]
        facts.append(("accuracy vs truth: council", pct(acc["council"])))
        facts.append(("accuracy vs truth: round one", pct(acc["round1"])))
        for member, value in acc["members_round1"].items():
            facts.append((f"accuracy vs truth: {member} alone", pct(value)))
        for member, d in acc.get("council_minus_member", {}).items():  # paired: on the rows the member voted
            best = " (strongest)" if member == acc.get("best_member_round1") else ""
            facts.append((f"council minus {member} on its {d['rows']} rows{best}",
                          f"{_signed_points(d['value'])}  [{_signed_points(d['ci_low'])}, "
                          f"{_signed_points(d['ci_high'])}]"))
        facts.append(("effective independent judges", num(s.get("reliability_vs_truth", {}).get("effective_judges"))))
    for audit in s.get("self_preference", {}).values():  # --shadow-self: its own family's wrong answers favoured
        d = audit["self_preference"]
        facts.append((f"self-preference of {audit['judge']}'s judge ({d['rows_own']} wrong answers of its own)",
                      f"{_signed_points(d['value'])}  [{_signed_points(d['ci_low'])}, {_signed_points(d['ci_high'])}]"))
    pairs("deliberation and agreement", facts)


def _deliberated(d: dict[str, Any] | None) -> list[tuple[str, str]]:
    """With ``--deliberate disputed``: how many rows deliberated (the deliberation metrics are theirs), how many
    kept their round-one verdict, and what the audit of those says round two would have changed."""
    if not d or d["mode"] == "all":
        return []
    facts = [("rows deliberated (the metrics below are on these)", str(d["rows_deliberated"])),
             ("rows undisputed in round one (their verdict stands)", str(d["rows_skipped"]))]
    audit = d["audit"]
    if audit["rows"]:
        facts.append((f"audit: verdicts round two would have changed, of {audit['rows']} skipped rows",
                      f"{audit['changed']}  ({pct(audit['changed_rate'])}, 95% CI [{pct(audit['ci_low'])}, "
                      f"{pct(audit['ci_high'])}])"))
    return facts


def _signed_points(share: float | None) -> str:
    """A difference of two shares in percentage points, signed."""
    return "-" if share is None else f"{100 * share:+.1f} pts"


def print_partial(s: dict[str, Any], to: Console | None = None) -> None:
    """A line saying that a run is partial (and why), since its scores cover only the rows it graded."""
    if s.get("complete", True):
        return
    state = s.get("state", {})
    why = state.get("reason") or ("still running, or crashed" if state.get("state") == "running" else "rows not graded")
    say(f"[bold yellow]PARTIAL[/bold yellow] run ({escape(str(why))}): {s['not_graded_rows']} of {s['rows_total']} "
        "rows not graded; scores cover the graded rows only.", to=to)


def _warnings(summary: dict[str, Any]) -> list[str]:
    diag = summary.get("diagnostics", {})
    lines = []
    for name in diag.get("warnings", []):
        rate = diag.get(f"{name}_rate")
        detail = f" ({100 * rate:.1f}%)" if isinstance(rate, float) else ""
        lines.append(f"{name}{detail} above {100 * WARN_RATE:.0f}%")
    return lines


def print_warnings(summary: dict[str, Any], to: Console | None = None) -> None:
    """One line per diagnostic above its warning rate, on stderr unless ``to`` says otherwise."""
    for line in _warnings(summary):
        say(f"[yellow]warning:[/yellow] {escape(line)}", to=to or console)


def print_scales(s: dict[str, Any]) -> None:
    """Per graded scale: each model's 0-100 score with its interval and per dimension; then reliability and
    deliberation per dimension."""
    for name, sc in s.get("scales", {}).items():
        dims = list(sc["dimensions"])
        ranked = sorted(sc.get("models", {}).items(), key=lambda kv: -(kv[1]["score"] or 0.0))
        table(f"scale {name} ({sc['rows']} rows; levels 0-{sc['high']}; 0-100 normalised)",
              ("model", "rows", "score", "95% CI", *dims),
              [(model, str(m["rows"]), points(m["score"]), f"{points(m['ci_low'])}-{points(m['ci_high'])}",
                *(points(m["by_dimension"][d]["score"]) for d in dims)) for model, m in ranked])
        if "reliability" not in sc:
            continue
        rows = []
        for d in dims:
            r1, r2 = sc["reliability"][d]["round1"], sc["reliability"][d]["round2"]
            rows.append((d, f"{sc['dimensions'][d]:g}", f"{num(r1['alpha_ordinal'])} / {num(r2['alpha_ordinal'])}",
                         f"{num(r1['icc2_1'])} / {num(r2['icc2_1'])}",
                         pct(sc["deliberation_impact"]["by_dimension"][d]),
                         num(sc["agreement_lift"]["by_dimension"][d]),
                         str(sc["flags"]["omitted"][d]), str(sc["flags"]["split"][d])))
        table(f"scale {name}: agreement and deliberation per dimension",
              ("dimension", "weight", "alpha ordinal r1/r2", "ICC(2,1) r1/r2", "levels moved", "dispersion lift",
               "omitted", "split"), rows)


def print_elicitation(s: dict[str, Any]) -> None:
    """Per model under test: what was asked and graded, truncation, and calibration against the council."""
    el, cal = s.get("elicitation"), s.get("calibration", {})
    if not el:
        return
    table("models under test", ("model", "asked", "graded", "truncated", "abstained", "Brier", "ECE", "selective"),
          [(model, str(e["asked"]), str(e["graded"]), str(e["truncated"]), str(e["abstained"]),
            num(cal.get(model, {}).get("brier")), num(cal.get(model, {}).get("ece")),
            num(cal.get(model, {}).get("selective"))) for model, e in el.items()])


def print_rules(rules: dict[str, Any] | None) -> None:
    """The grader-rule table: how the leaderboard moves under other grading rules."""
    if not rules:
        return
    rows = []
    for rule in rules["rules"]:
        change = rules["max_abs_change_vs_council"].get(rule)
        rows.append((rule, rules["top_model"].get(rule) or "-", num(rules["kendall_tau_vs_council"].get(rule)),
                     "-" if change is None else f"{100 * change:.1f} pts"))
    table("grader-rule sensitivity (vs council)", ("rule", "top model", "Kendall tau", "max score change"), rows,
          text_columns=2)


def print_timings(timings: Timings) -> None:
    """Where the run's wall time went: each phase, when it began (seconds after the process started) and how
    long it took; phases that ran side by side overlap."""
    say("where the time went (phase, began at, took)")
    for name, at, seconds in timings.phases:
        say(f"  {name:<16} {at:7.2f} s {seconds:7.2f} s")
    say(f"  {'total':<16} {'':>9} {timings.since_start():7.2f} s")
