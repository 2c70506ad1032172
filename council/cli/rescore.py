"""``council rescore``: rebuild a run's verdicts.jsonl and summary.json from its archive
(:func:`council.scoring.scoring.rescore`)."""

from __future__ import annotations

import argparse

from rich.markup import escape

from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import runs_dir_arg
from council.console.output import say
from council.console.results import print_partial, print_warnings
from council.console.runs import open_run
from council.store.lock import RunLock


def add_parser(sub: argparse._SubParsersAction) -> None:
    rescore = add_command(sub, "rescore", "rebuild a run's verdicts.jsonl and summary.json from its archive",
                          exits=(EXIT_OK, EXIT_INPUT), example="council rescore 20261130-210326-ffbe")
    rescore.add_argument("run_id", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                         "folder's path (required)")
    runs_dir_arg(rescore)


def rescore(args: argparse.Namespace) -> int:
    from council.scoring.scoring import rescore as rebuild

    folder = open_run(args.runs_dir, args.run_id)
    folder.lock = RunLock.take(folder.path, "council rescore")  # not while a run writes it
    try:
        summary = rebuild(folder)
    finally:
        folder.release()
    say(f"rescored {escape(folder.path.name)}: {summary['rows']} rows, {len(summary['models'])} models")
    print_partial(summary)
    print_warnings(summary)
    return EXIT_OK
