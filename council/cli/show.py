"""``council show`` and ``council runs``: a run's headline or one row's two rounds, and the list of run folders
(drawn by :mod:`council.console.runs`)."""

from __future__ import annotations

import argparse

from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import runs_dir_arg
from council.console.runs import list_runs, open_run, show_row, show_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    show = add_command(sub, "show", "a run's headline, or one row's two rounds",
                       "Without ROW: the run's headline (state, rows, cost, leaderboard with intervals, graded "
                       "scales, warnings). With ROW: that row's two rounds, member by member (verdict or levels and "
                       "reason, and the letter each peer saw it under), the consensus, the flags and the key from "
                       "letters to vendors.", (EXIT_OK, EXIT_INPUT),
                       example="council show 20261130-210326-ffbe")
    show.add_argument("run", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                      "folder's path (required)")
    show.add_argument("row", metavar="ROW", nargs="?",
                      help="a row id, or a unique prefix of one (default: none: the run's headline)")
    runs_dir_arg(show)

    runs = add_command(sub, "runs", "list the run folders, newest first",
                       "List the run folders under --runs-dir, newest first: state, rows, models, cost, when it was "
                       "created and whether it was simulated.", (EXIT_OK, EXIT_INPUT),
                       example="council runs --runs-dir runs")
    runs_dir_arg(runs)


def show(args: argparse.Namespace) -> int:
    folder = open_run(args.runs_dir, args.run)
    if args.row is None:
        return show_run(folder)
    return show_row(folder, args.row)


def runs(args: argparse.Namespace) -> int:
    return list_runs(args.runs_dir)
