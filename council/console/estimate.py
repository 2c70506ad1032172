"""What a run would send, cost and take, as ``council estimate`` prints it: a table per vendor, then the totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from council.console.output import say, table

if TYPE_CHECKING:
    from council.tools.estimate import Estimate


def print_estimate(est: Estimate) -> None:
    """Per vendor: votes, batch size, requests, tokens, cost, sustainable rate and minutes; then the requests, the
    cost and T*, and the vendors without a price."""
    table(f"estimate: {est.rows} rows",
          ("vendor", "votes", "batch", "reqs", "tok in", "tok out", "cost $", "max rpm", "min"),
          [(v.vendor, str(v.votes), str(v.batch_size), str(v.requests), str(v.input_tokens), str(v.output_tokens),
            f"{v.cost_usd:.4f}", f"{v.sustainable_rpm:.0f}" if v.sustainable_rpm else "∞", f"{v.minutes:.1f}")
           for v in est.vendors])
    d = est.as_dict()
    bound = f"{est.t_star_s:.1f} s" if est.t_star_s else "none (no vendor has a limit)"
    say(f"requests {d['requests']}, cost ${d['cost_usd']:.4f}, quota lower bound T* = {bound}")
    if est.unpriced:
        say(f"[yellow]no price[/yellow] for {escape(', '.join(est.unpriced))}: their cost is counted as $0 and "
            "--budget-usd will refuse to run until they are priced")
