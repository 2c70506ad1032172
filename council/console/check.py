"""``council check`` as it prints: a table of the seats (what was sent where, what came back, the reasoning it
spent, the cost of a vote and of the seat's share of the run), then one line per seat that failed, with the
provider's exact words and the fix, and the warnings."""

from __future__ import annotations

import orjson
from rich.markup import escape

from council.console.output import console, say, table
from council.scoring.scoring import REASONING_DOMINATES
from council.tools.check import SeatCheck


def print_checks(checks: list[SeatCheck], *, as_json: bool = False, to_stderr: bool = False) -> None:
    if as_json:
        say(orjson.dumps({"ok": all(c.ok for c in checks), "seats": [c.as_dict() for c in checks]}).decode(),
            markup=False)
        return
    to = console if to_stderr else None
    rows = [(c.vendor + (" (reserve)" if c.reserve else ""), c.model, c.sent_as,
             ("ok" if c.ok else c.status.upper()) + (", batch ok" if c.batch == "ok" else ""), f"{c.reasoning_tokens:,}", f"{c.completion_tokens:,}",
             f"{c.cost_usd:.6f}", f"{c.run_votes:,}", f"{c.run_cost_usd:.4f}",
             f"{100 * c.run_reasoning_usd / c.run_cost_usd:.0f}%" if c.run_cost_usd else "-")
            for c in checks]
    table("council check: one request per seat, as the run sends it",
          ("seat", "model", "sent as", "result", "reasoning", "output", "$ a vote", "run votes", "run $",
           "reasoning $"), rows, text_columns=4, to=to)
    for c in checks:
        if not c.ok:
            say(f"[red]{escape(c.vendor)}[/red] ({escape(c.model)} at {escape(c.endpoint)}): {escape(c.detail)}",
                to=to)
            if c.fix:
                say(f"  fix: {escape(c.fix)}", to=to)
        if c.batch is not None and c.batch != "ok":
            say(f"[yellow]{escape(c.vendor)} batch of one[/yellow]: {escape(c.batch)}", to=to)
        for warning in c.warnings:
            say(f"[yellow]warning:[/yellow] {escape(c.vendor)}: {escape(warning)}", to=to)
        if c.ok and c.run_cost_usd and c.run_reasoning_usd > REASONING_DOMINATES * c.run_cost_usd:
            say(f"[yellow]{escape(c.vendor)}[/yellow]: reasoning is {100 * c.run_reasoning_usd / c.run_cost_usd:.0f}% "
                f"of this judge's cost (judge.reasoning_effort / judge.thinking_budget set how much it may spend)",
                to=to)
    total = sum(c.run_cost_usd for c in checks)
    ok = sum(c.ok for c in checks)
    say(f"{ok} of {len(checks)} seats work; at the rates measured, the run's votes (round two on every row) would "
        f"cost about ${total:.4f}", to=to)
