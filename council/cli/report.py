"""``council report``: write a run's report.html (:mod:`council.report`) and print its path."""

from __future__ import annotations

import argparse

from rich.markup import escape

from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import runs_dir_arg
from council.console.output import say
from council.console.runs import open_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    report = add_command(sub, "report", "write a run's report.html and print its path",
                         "Write report.html (figures and tables, one self-contained page) into the run folder and "
                         "print its path.", (EXIT_OK, EXIT_INPUT),
                         example="council report 20261130-210326-ffbe")
    report.add_argument("run", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                        "folder's path (required)")
    runs_dir_arg(report)


def report(args: argparse.Namespace) -> int:
    try:
        from council.report import write_report
    except ImportError:  # the report package keeps its page in a module of its own
        from council.report.page import write_report

    folder = open_run(args.runs_dir, args.run)
    path = write_report(folder.path)
    say(escape(str(path)))
    return EXIT_OK
