"""``council crossjudge``: re-score an archived run with another grader (:mod:`council.tools.crossjudge`) and
report whether its scores survive."""

from __future__ import annotations

import argparse
import asyncio

from council.console.compare import print_crossjudge
from council.console.exits import EXIT_INPUT, EXIT_OK, EXIT_PROVIDER
from council.console.help import add_command
from council.console.options import count, runs_dir_arg
from council.console.output import out


def add_parser(sub: argparse._SubParsersAction) -> None:
    cj = add_command(sub, "crossjudge", "re-score a run with another grader: do its scores survive?",
                     "Re-score an archived run with another grader into <run>/crossjudge/<name>/ and report whether "
                     "its scores survive: mean delta, rank correlation, family and target preference.",
                     (EXIT_OK, EXIT_INPUT, EXIT_PROVIDER),
                     example="council crossjudge 20261130-210326-ffbe --judge single:openai")
    cj.add_argument("run_id", metavar="RUN", help="the run to re-score (its folder under --runs-dir); its results are "
                    "never changed (required)")
    cj.add_argument("--judge", required=True, metavar="MODEL|single:VENDOR",
                    help="a judge model that grades every row blind (asked through the run's provider), or "
                         "single:<vendor>: that council member's round-one votes alone, no calls")
    cj.add_argument("--name", help="the report's folder under <run>/crossjudge/ (default: from --judge)")
    runs_dir_arg(cj)
    cj.add_argument("--provider-url", metavar="URL", help="OpenAI-compatible base URL for the judge (default: none; "
                    "needed unless the run was simulated: then the embedded provider plays it)")
    cj.add_argument("--resamples", type=count, metavar="N", help="bootstrap resamples (default: the run's)")
    cj.add_argument("--json", action="store_true", help="print the report as one JSON object (default: off)")


def crossjudge(args: argparse.Namespace) -> int:
    from council.tools.crossjudge import crossjudge as rescore_with

    result = asyncio.run(rescore_with(args.runs_dir, args.run_id, args.judge, name=args.name,
                                        provider_url=args.provider_url, resamples=args.resamples))
    if args.json:
        out.print_json(data=result.report)
        return EXIT_OK
    print_crossjudge(result, args.run_id)
    return EXIT_OK
