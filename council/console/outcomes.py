"""How a run or a service job ended: what is said on stderr, and the exit code that says it too."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from council.batching.journal import read_status
from council.console.batches import waiting_text
from council.console.exits import EXIT_BUDGET, EXIT_INTERNAL, EXIT_NOT_GRADED, EXIT_OK, EXIT_PROVIDER, EXIT_SIGNAL
from council.console.output import console, say
from council.console.results import print_result
from council.run.runner import RunResult


def run_outcome(result: RunResult, command: str = "run") -> int:
    """Print the run's result and say how it ended; the exit code says it too."""
    if result.summary["rows"] or result.error is None:
        print_result(result, command)
    again = f"council run --resume {result.run_dir.name}"
    reason = result.stop.reason if result.stop else None
    if result.error is not None:
        say(f"[red]stopped: a provider cannot be used:[/red] {escape(str(result.error))}. Everything answered is "
            f"archived; fix the provider settings, then `{again}`", to=console)
        return EXIT_PROVIDER
    if reason in EXIT_SIGNAL and result.summary["state"]["state"] == "finished":
        say(f"[yellow]interrupted ({reason}) once the grading was over[/yellow]: the run is finished and scored; "
            f"report.html was not drawn (`council report {result.run_dir.name}` draws it)", to=console)
        return EXIT_SIGNAL[reason]
    if reason in EXIT_SIGNAL:
        waiting = waiting_text((read_status(result.run_dir) or {}).get("batches", []))
        held = f"; {waiting} at the provider, which the resume polls" if waiting else ""
        say(f"[yellow]stopped ({reason})[/yellow]: {result.not_graded} rows not graded; every answered call is "
            f"archived{held}. Continue with `{again}`", to=console)
        return EXIT_SIGNAL[reason]
    if result.stopped_by_budget:
        say(f"[yellow]stopped by the budget[/yellow] (${result.budget.spent_usd:.4f} spent, {result.not_graded} "
            f"rows not graded); everything is archived: continue with `{again} --budget-usd LARGER`", to=console)
        return EXIT_BUDGET
    if result.not_graded:
        say(f"[red]{result.not_graded} rows not graded[/red] (calls failed after their retries, or rows were "
            f"refused; see diagnostics); they are not scored. Ask failed calls again with `{again}`", to=console)
        return EXIT_NOT_GRADED
    return EXIT_OK


def job_outcome(view: dict[str, Any]) -> int:
    """Say how a service job ended; the exit code says it too."""
    state, reason, counts = view["state"], view.get("reason"), view["counts"]
    not_graded = counts["not_graded_rows"]
    label = "  SIMULATED" if view.get("simulated") else ""
    colour = "green" if state == "finished" and not not_graded else "yellow"
    say(f"[{colour}]job {view['id']} {state}[/{colour}]{f' ({reason})' if reason else ''}: "
        f"{counts['graded_rows']} rows graded, {not_graded} not graded, ${view['spend_usd']:.4f}{label}", to=console)
    for error in view.get("errors", [])[:5]:
        say(f"[red]error:[/red] {escape(error)}", to=console)
    if state == "finished":
        return EXIT_NOT_GRADED if not_graded else EXIT_OK
    if state == "failed":
        return EXIT_INTERNAL
    if reason == "budget":
        return EXIT_BUDGET
    if reason == "error":
        return EXIT_PROVIDER
    return EXIT_SIGNAL.get(reason or "", EXIT_SIGNAL["interrupt"])
