"""``council estimate``: what a run would send, cost and take, per vendor, without a call (--pilot excepted);
the figures come from :mod:`council.tools.estimate`."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from typing import Any

from rich.markup import escape

import bank
from council.cli.config import council_config, models_under_test, provider_url
from council.console.estimate import print_estimate
from council.console.exits import EXIT_INPUT, EXIT_OK, EXIT_PROVIDER
from council.console.help import CouncilParser, add_command
from council.console.options import council_args, count, input_args, provider_args, runs_dir_arg, share
from council.console.output import console, out, say
from council.core.errors import ConfigError

DESCRIPTION = (
    "What a run would send, cost and take, per vendor, without making a call (--pilot excepted): "
    "votes, requests at the batch size the quotas would choose, tokens, cost at the config's prices "
    "(else the price table's), without and with a prompt cache, at the chat rates and at the batch rates "
    "(`this run`: each vendor at its own transport's), and T*, the time the tightest chat quota "
    "needs; for --deliberate all and, given the share of rows whose round one is unanimous "
    "(--unanimity, or measured by --pilot), for --deliberate disputed. Without either, only `all` is "
    "estimated: the unanimity rate depends on the bank, the responses and the judges, and a guessed "
    "default would print a saving nobody measured.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_options(add_command(sub, "estimate", "cost and quota-bound time T* of a run, --deliberate all vs disputed, "
                            "without a call", DESCRIPTION, (EXIT_OK, EXIT_INPUT, EXIT_PROVIDER),
                            example="council estimate --responses answers.jsonl --unanimity 0.8"))


def add_options(est: argparse.ArgumentParser) -> None:
    input_args(est.add_argument_group("what would be graded"), responses_required=False)
    council_args(est.add_argument_group("who would grade"))
    est.add_argument("--models", metavar="LIST",
                     help="comma-separated models under test: estimate asking them every bank item too, instead of "
                          "grading --responses (default: none)")
    how = est.add_argument_group("the disputed strategy")
    rate = how.add_mutually_exclusive_group()
    rate.add_argument("--unanimity", type=share, metavar="P",
                      help="share of rows whose round one is unanimous, as you expect it (default: none)")
    rate.add_argument("--pilot", type=count, metavar="N",
                      help="measure it: grade N rows, drawn with the config's seed, for real under --deliberate "
                           "disputed as a run of its own under --runs-dir (its id is printed; its calls are paid "
                           "and archived), then extrapolate at its rate and its 95%% interval's ends (default: none)")
    how.add_argument("--deliberation-audit", type=share, metavar="SHARE",
                     help="the audit share of the skipped rows that still get round two (default: the config's, "
                          "else 0.1)")
    pilot = est.add_argument_group("where the pilot runs (only with --pilot)")
    runs_dir_arg(pilot, "where the pilot's run folder goes")
    provider_args(pilot, "the pilot's calls")
    est.add_argument("--json", action="store_true", help="print one JSON object instead of a table (default: off)")


def estimate(args: argparse.Namespace) -> int:
    """With --pilot, the pilot run first (its progress and id on stderr), then the estimate at its rate."""
    from council.tools.estimate import Unanimity, run_pilot
    from council.tools.estimate import estimate as figures

    items = bank.load_bank(args.bank)
    models = models_under_test(args)
    config = council_config(args)
    if models and args.pilot:
        raise ConfigError("--pilot grades responses, and with --models there are none yet: state --unanimity P")
    if not args.pilot and (args.provider_url or args.simulate or args.sim_config):
        raise ConfigError("--provider-url, --simulate and --sim-config say where the pilot runs: give --pilot N")
    rows = [] if models else bank.load_responses(args.responses, items, vendor_map=config.vendor_map)
    unanimity = None if args.unanimity is None else Unanimity.stated(args.unanimity)
    if args.pilot:
        url = provider_url(args, config)
        say(f"pilot: grading {min(args.pilot, len(rows))} of {len(rows)} rows (seed {config.seed}) under "
            f"--deliberate disputed, {'at ' + escape(url) if url else 'on the embedded provider'}", to=console)
        unanimity = asyncio.run(run_pilot(config, args.bank, args.responses, rows, args.pilot,
                                          runs_dir=args.runs_dir, provider_url=url, sim_config=args.sim_config,
                                          command=_command(args)))
        say(f"pilot run {escape(unanimity.pilot['run_id'])} under {escape(str(args.runs_dir))}", to=console)
    est = figures(config, {i.id: i for i in items}, rows, models, unanimity=unanimity,
                  audit_share=args.deliberation_audit)
    if args.json:
        out.print_json(data=est.as_dict())
        return EXIT_OK
    print_estimate(est)
    return EXIT_OK


def _defaults() -> dict[str, Any]:
    """Every option of ``council estimate`` -> its default, as the parsed command line holds it."""
    parser = CouncilParser(prog="council estimate")
    add_options(parser)
    return {"command": "estimate", **vars(parser.parse_args([]))}


def _command(args: argparse.Namespace) -> str:
    """The estimate's command line as its pilot run's manifest records it: the options that differ from their
    defaults."""
    defaults = _defaults()
    words = ["council", "estimate"]
    for name, value in vars(args).items():
        if value != defaults.get(name) and value is not False:
            words += [f"--{name.replace('_', '-')}", *([] if value is True else [str(value)])]
    return shlex.join(words)
