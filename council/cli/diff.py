"""``council diff``: whether two runs are comparable (:mod:`council.scoring.diff`), and their score and verdict
changes."""

from __future__ import annotations

import argparse

from council.console.compare import print_diff
from council.console.exits import EXIT_INPUT, EXIT_NOT_COMPARABLE, EXIT_OK
from council.console.help import add_command
from council.console.options import runs_dir_arg
from council.console.output import out
from council.console.runs import open_run


def add_parser(sub: argparse._SubParsersAction) -> None:
    diff = add_command(sub, "diff", "whether two runs are comparable, and their score and verdict changes",
                       "Whether two runs are comparable (same prompts, rules, data and judges, both complete), each "
                       "model's score in both, and the rows whose verdict changed. Runs graded on other responses "
                       "stay comparable; the verdicts on rows whose response changed are marked.",
                       (EXIT_OK, EXIT_INPUT, EXIT_NOT_COMPARABLE), "the runs are comparable",
                       example="council diff 20261130-210326-ffbe 20261201-093012-a41c")
    diff.add_argument("run_a", metavar="RUN_A", help="the earlier run: an id, a unique prefix or a path (required)")
    diff.add_argument("run_b", metavar="RUN_B", help="the later run: an id, a unique prefix or a path (required)")
    runs_dir_arg(diff)
    diff.add_argument("--json", action="store_true", help="print one JSON object (default: off)")


def diff(args: argparse.Namespace) -> int:
    """Exit 6 whenever the runs are not comparable, whatever is printed."""
    from council.scoring.diff import diff_runs

    d = diff_runs(open_run(args.runs_dir, args.run_a), open_run(args.runs_dir, args.run_b))
    code = EXIT_OK if d["comparable"] else EXIT_NOT_COMPARABLE
    if args.json:
        out.print_json(data=d)
        return code
    print_diff(d)
    return code
