"""What a run would send, cost and take, as ``council estimate`` prints it: the strategies side by side (cost
without and with a prompt cache, at the synchronous and at the batch rates, round-two requests, T*), the pilot
that measured the unanimity rate, then a table per vendor for ``all`` and for ``disputed`` at that rate, and the
totals, with this run's cost at each vendor's own transport."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from council.console.output import say, table
from council.scoring.scoring import REASONING_DOMINATES

if TYPE_CHECKING:
    from council.tools.estimate import Estimate, StrategyEstimate, Unanimity

HOW_TO_COMPARE = ("disputed (round two only where round one is not unanimous) needs the share of unanimous rows: "
                  "state it with --unanimity P, or measure it with --pilot N (N seeded rows graded for real)")


def print_estimate(est: Estimate) -> None:
    """The comparison of strategies (when a unanimity rate is known, else how to get it), the pilot, the
    per-vendor tables, then the requests, the cost and T* of ``all``, and the models without a price."""
    if len(est.strategies) > 1:
        _print_strategies(est)
    for s in est.strategies:
        if s.interval_end is None:
            _print_vendors(s, est.rows)
    first = est.strategies[0].totals()
    bound = f"{first['t_star_s']:.1f} s" if first["t_star_s"] else "none (no vendor has a limit)"
    say(f"all: requests {first['requests']}, cost ${first['cost_usd']:.4f} at the synchronous rates, "
        f"${first['cost_batch_usd']:.4f} at the batch rates; this run ${first['cost_run_usd']:.4f}; "
        f"quota lower bound T* = {bound}")
    if len(est.strategies) == 1:
        say(HOW_TO_COMPARE)
    _print_transports(est)
    _print_reasoning(est.strategies[0])
    if est.unpriced:
        say(f"[yellow]no price[/yellow] for {escape(', '.join(est.unpriced))}: their cost is counted as $0 and "
            "--budget-usd will refuse to run until they are priced")


def _print_strategies(est: Estimate) -> None:
    u = est.unanimity
    rows = []
    for s in est.strategies:
        t = s.totals()
        rows.append((_label(s, u), f"{100 * s.round2_share:.1f}%", str(t["round2_requests"]),
                     f"{t['cost_usd']:.4f}", f"{t['cost_cached_usd']:.4f}", f"{t['cost_batch_usd']:.4f}",
                     f"{t['cost_batch_cached_usd']:.4f}", f"{t['cost_run_usd']:.4f}", f"{t['t_star_s']:.1f}"))
    table(f"strategies: {est.rows} rows, deliberation audit share {est.audit_share:g}",
          ("strategy", "round-2 rows", "round-2 reqs", "cost $", "cached $", "batch $", "batch cached $",
           "this run $", "T* s"), rows)
    if u is not None and u.pilot is not None:
        p = u.pilot
        say(f"pilot run {escape(p['run_id'])}: {p['rows']} rows graded, {p['unanimous']} unanimous in round one: "
            f"u = {u.rate:.3f} (95% CI {u.low:.3f}-{u.high:.3f}); it cost ${p['cost_usd']:.4f} "
            f"(`council show {escape(p['run_id'])}`)")
    say("cached $: round two's prompt prefix shared with round one paid at the cache-read rate (from 1024 tokens)")


def _label(s: StrategyEstimate, u: Unanimity | None) -> str:
    if s.unanimity is None:
        return s.name
    where = {None: u.source if u else "stated", "low": "CI low", "high": "CI high"}[s.interval_end]
    return f"{s.name}, u={s.unanimity:.3f} ({where})"


def _print_vendors(s: StrategyEstimate, rows: int) -> None:
    title = f"{s.name}: {rows} rows" + ("" if s.unanimity is None else f", u={s.unanimity:.3f}")
    table(title, ("vendor", "via", "votes", "batch", "reqs", "tok in", "cached", "tok out", "cost $", "cached $",
                  "batch $", "batch cached $", "max rpm", "min"),
          [(v.vendor, v.transport, str(v.votes), str(v.batch_size), str(v.requests), str(v.input_tokens),
            str(v.cached_tokens), str(v.output_tokens), f"{v.cost_usd:.4f}", f"{v.cost_cached_usd:.4f}",
            *(f"{x:.4f}" + ("" if v.batch_price_known else " *") for x in (v.cost_batch_usd, v.cost_batch_cached_usd)),
            f"{v.sustainable_rpm:.0f}" if v.sustainable_rpm else "∞",
            "≤24 h" if v.transport == "batch" and not v.elicit_requests else f"{v.minutes:.1f}") for v in s.vendors])


def _print_transports(est: Estimate) -> None:
    """Which vendors this run sends through a batch API (their votes are out of T*), and the judges whose batch
    rate is unknown, whose batch figures are at the standard rate."""
    say("batch $: the judge votes at the batch APIs' rates; this run $: each vendor at its own transport's rates")
    if est.batching:
        say(f"batch transport: {escape(', '.join(est.batching))}: their votes go through the batch API, which has "
            "its own quota (T* does not apply to them) and answers within 24 h")
    for vendor, why in est.batch_sync.items():
        say(f"[yellow]{escape(vendor)} stays synchronous[/yellow] in this batch run: {escape(why)}")
    unknown = [v.judge_model for v in est.vendors if v.judge_model and not v.batch_price_known]
    if unknown:
        say(f"[yellow]no batch price[/yellow] for {escape(', '.join(unknown))} (*): the standard one is assumed"
            + (f"; this run counts {escape(', '.join(est.batch_unpriced))} at it" if est.batch_unpriced else ""))


def _print_reasoning(s: StrategyEstimate) -> None:
    """A line per reasoning judge: its reasoning a vote (measured by the pilot, or its bound), what it costs, and
    whether it dominates the judge's cost."""
    for v in s.vendors:
        if not v.reasoning_per_vote:
            continue
        share = v.reasoning_cost_usd / v.cost_run_usd if v.cost_run_usd else 0.0
        how = "measured by the pilot" if v.reasoning_measured else "at most: its judge.thinking_budget; --pilot N measures it"
        lead = "[yellow]reasoning dominates[/yellow] " if share > REASONING_DOMINATES else ""
        say(f"{lead}judge {escape(v.vendor)} ({escape(v.judge_model or '')}): {v.reasoning_per_vote:.0f} reasoning tokens "
            f"a vote ({how}), ${v.reasoning_cost_usd:.4f}, {100 * share:.0f}% of its cost under {s.name}")
