"""What a run would send, cost and take, as ``council estimate`` prints it: the strategies side by side (cost
without and with a prompt cache, round-two requests, T*), the pilot that measured the unanimity rate, then a
table per vendor for ``all`` and for ``disputed`` at that rate, and the totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from council.console.output import say, table

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
    say(f"all: requests {first['requests']}, cost ${first['cost_usd']:.4f}, quota lower bound T* = {bound}")
    if len(est.strategies) == 1:
        say(HOW_TO_COMPARE)
    if est.unpriced:
        say(f"[yellow]no price[/yellow] for {escape(', '.join(est.unpriced))}: their cost is counted as $0 and "
            "--budget-usd will refuse to run until they are priced")


def _print_strategies(est: Estimate) -> None:
    u = est.unanimity
    rows = []
    for s in est.strategies:
        t = s.totals()
        rows.append((_label(s, u), f"{100 * s.round2_share:.1f}%", str(t["round2_requests"]),
                     f"{t['cost_usd']:.4f}", f"{t['cost_cached_usd']:.4f}", f"{t['t_star_s']:.1f}"))
    table(f"strategies: {est.rows} rows, deliberation audit share {est.audit_share:g}",
          ("strategy", "round-2 rows", "round-2 reqs", "cost $", "cached $", "T* s"), rows)
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
    table(title, ("vendor", "votes", "batch", "reqs", "tok in", "cached", "tok out", "cost $", "cached $", "max rpm",
                  "min"),
          [(v.vendor, str(v.votes), str(v.batch_size), str(v.requests), str(v.input_tokens), str(v.cached_tokens),
            str(v.output_tokens), f"{v.cost_usd:.4f}", f"{v.cost_cached_usd:.4f}",
            f"{v.sustainable_rpm:.0f}" if v.sustainable_rpm else "∞", f"{v.minutes:.1f}") for v in s.vendors])
