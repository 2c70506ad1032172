"""``council sim``: serve the embedded OpenAI-compatible provider (:mod:`council.sim`) on its own, for
--provider-url of another command."""

from __future__ import annotations

import argparse
from pathlib import Path

import bank
from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import SAMPLE_BANK_HELP, SAMPLE_RESPONSES_HELP, host_arg, positive


def add_parser(sub: argparse._SubParsersAction) -> None:
    sim = add_command(sub, "sim", "serve the embedded OpenAI-compatible provider on its own",
                      "Serve the embedded provider (every vendor's simulated judge and the models of the sample) as "
                      "an OpenAI-compatible server, for --provider-url of another command.", (EXIT_OK, EXIT_INPUT),
                      "stopped cleanly", example="council sim --port 8000 --seed 1")
    host_arg(sim)
    sim.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    sim.add_argument("--seed", type=int, default=0, help="seed of its planted behaviour (default: 0)")
    sim.add_argument("--config", type=Path, metavar="FILE",
                     help="JSON behaviour file: vendors, quotas, faults (default: the planted behaviour)")
    sim.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                     help=f"bank whose responses' truth it knows (default: {SAMPLE_BANK_HELP})")
    sim.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES, metavar="FILE",
                     help=f"responses with gold verdicts (default: {SAMPLE_RESPONSES_HELP})")
    sim.add_argument("--batch-completion-s", type=positive, metavar="S",
                     help="seconds a batch (either batch API) takes from creation to its end (default: the "
                     "config's batch_completion_s, 3)")


def sim(args: argparse.Namespace) -> int:
    from council.sim import SimConfig, TruthTable, serve

    items = bank.load_bank(args.bank)
    rows = bank.load_responses(args.responses, items)
    config = SimConfig.from_file(args.config) if args.config else SimConfig.planted(seed=args.seed)
    if args.batch_completion_s is not None:
        config = config.model_copy(update={"batch_completion_s": args.batch_completion_s})
    serve(config, TruthTable.from_rows(items, rows), args.host, args.port)
    return EXIT_OK
