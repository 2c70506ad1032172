"""``council``'s main: parse the command line, run its command, and turn every failure into one short message on
stderr and its exit code."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import NoReturn

from pydantic import ValidationError
from rich.markup import escape

from council.cli import (check, crossjudge, diff, estimate, init, loadtest, report, rescore, run, serve, show, sim,
                         submit)
from council.cli.parser import build_parser
from council.console.exits import EXIT_INPUT, EXIT_INTERNAL, EXIT_PIPE, EXIT_PROVIDER, EXIT_SIGNAL
from council.console.output import console, quiet_stdout, say
from council.core.errors import CouncilError, ProviderUnavailable
from council.core.memory import settle_allocator
from council.core.process_exit import exit_process
from council.protocol.config import validation_problems

# Every command but run and grade (which are also told their command line and the parser): its handler.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "estimate": estimate.estimate, "loadtest": loadtest.run, "rescore": rescore.rescore, "diff": diff.diff,
    "crossjudge": crossjudge.crossjudge, "show": show.show, "runs": show.runs, "report": report.report,
    "init": init.init, "serve": serve.serve, "submit": submit.submit, "sim": sim.sim, "check": check.check,
}


def _parse(argv: list[str]) -> argparse.Namespace:
    """The options of ``argv``; one that its command does not take is an error of that command (exit 2), which
    says which commands take it."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        elsewhere = []
        for flag in dict.fromkeys(x.split("=", 1)[0] for x in extra if x.startswith("--")):
            takers = [name for name, p in commands.items() if flag in p._option_string_actions]
            if takers:
                elsewhere.append(f"{flag} is an option of {', '.join(takers)}")
        hint = f" ({'; '.join(elsewhere)})" if elsewhere else ""
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: list[str] | None = None) -> int:
    settle_allocator()  # a long run's freed memory goes back to the system (council.core.memory)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    try:
        if args.command in ("run", "grade"):
            return run.grade(args, shlex.join(["council", *argv]), build_parser)
        return COMMANDS[args.command](args)
    except ProviderUnavailable as exc:
        say(f"[red]provider unusable:[/red] {escape(str(exc))}", to=console)
        return EXIT_PROVIDER
    except CouncilError as exc:
        say(f"[red]error:[/red] {escape(str(exc))}", to=console)
        return EXIT_INPUT
    except ValidationError as exc:
        say(f"[red]error:[/red] {escape(validation_problems(exc))}", to=console)
        return EXIT_INPUT
    except KeyboardInterrupt:
        say("[yellow]interrupted[/yellow]: records archived so far are in the run folder", to=console)
        return EXIT_SIGNAL["interrupt"]
    except BrokenPipeError:
        quiet_stdout()
        return EXIT_PIPE  # the reader has gone (`| head`): nothing left to say, and nobody to say it to
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, the traceback to the log
        from council.core import logs

        logs.get_logger("council.cli").exception("internal_error")
        say(f"[red]internal error:[/red] {type(exc).__name__}: {escape(str(exc))}", to=console)
        return EXIT_INTERNAL


def entry() -> NoReturn:
    """The ``council`` command: :func:`main`, then the process ends at once (:mod:`council.core.process_exit`)."""
    exit_process(main())
