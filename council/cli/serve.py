"""``council serve``: the grading service (:mod:`council.service.serve`); other benchmarks submit jobs over HTTP."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import bank
from council.cli.config import config_file
from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import CONFIG_HELP, SAMPLE_BANK_HELP, host_arg, positive, runs_dir_arg
from council.core.errors import ConfigError
from council.run.runner import provider_endpoint


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = add_command(sub, "serve", "the grading service: other benchmarks submit jobs over HTTP",
                        "The grading service: tenants submit rows over HTTP (council submit, or the Python client) "
                        "and follow their jobs; each job is a run folder under --runs-dir. SIGTERM drains it.",
                        (EXIT_OK, EXIT_INPUT), "stopped cleanly",
                        example="council serve --tokens tokens.json --simulate --port 8080")
    host_arg(serve)
    serve.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default: 8080)")
    serve.add_argument("--tokens", type=Path, required=True, metavar="FILE",
                       help="JSON mapping each tenant to the SHA-256 of its bearer token (and its limits)")
    runs_dir_arg(serve, "where the jobs' run folders go")
    serve.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                       help=f"bank for jobs that bring none (default: {SAMPLE_BANK_HELP})")
    serve.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    serve.add_argument("--provider-url", metavar="URL",
                       help="OpenAI-compatible base URL every job's judges are asked at (default: none; this or "
                            "--simulate is needed)")
    serve.add_argument("--simulate", action="store_true",
                       help="grade with the embedded provider's simulated judges (default: off)")
    serve.add_argument("--sim-config", type=Path, metavar="FILE",
                       help="JSON behaviour file of the embedded provider (default: its planted behaviour)")
    serve.add_argument("--max-body-mb", type=positive, default=64.0, metavar="MB",
                       help="largest submission accepted (default: 64)")


def serve(args: argparse.Namespace) -> int:
    from council.service.serve import serve as serve_jobs

    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if not args.provider_url and not args.simulate:
        raise ConfigError("council serve needs --provider-url (real judges) or --simulate (the embedded provider)")
    if args.provider_url:
        provider_endpoint(args.provider_url)
    config = config_file(args.config)
    asyncio.run(serve_jobs(host=args.host, port=args.port, tokens=args.tokens, runs_dir=args.runs_dir,
                           bank_items=bank.load_bank(args.bank), provider_url=args.provider_url,
                           sim_config=args.sim_config, config=config, max_body=int(args.max_body_mb * 2**20)))
    return EXIT_OK
