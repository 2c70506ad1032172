"""``council check``: one tiny real request per seat, as the run would send it (:mod:`council.tools.check`);
and the same check that ``council run`` makes before a run against a real provider."""

from __future__ import annotations

import argparse
import asyncio

import bank
from council.cli.config import council_config, provider_url
from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.options import council_args, input_args, positive, provider_args
from council.core.errors import ConfigError, ProviderUnavailable
from council.protocol.config import CouncilConfig


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = add_command(
        sub, "check", "one tiny real request per seat: does each judge work, and what does it spend?",
        "Before a large run: one tiny real request per seat and reserve, as the run would send it (its "
        "endpoint, model id, output bound, sampling and reasoning fields), on a row of the responses the "
        "seat would grade, and for a seat on the batch transport a batch of one. Prints per seat ok or "
        "the provider's exact refusal with the fix, the reasoning tokens the judge spent, and what the "
        "seat would cost the run at that rate. `council run` runs it first against any provider but the "
        "embedded one (--no-check skips it).", (EXIT_OK, EXIT_INPUT), "every seat works",
        example="council check --config council.toml --provider-url https://gateway.example.com/v1")
    input_args(check.add_argument_group("the rows a seat is checked on"), responses_required=False)
    council_args(check.add_argument_group("who grades"))
    provider_args(check.add_argument_group("where the calls go"), "the checks")
    check.add_argument("--transport", choices=("sync", "batch"),
                       help="check the batch API too for every vendor (batch), as a run with --transport batch would "
                            "use it (default: the config's, else sync)")
    check.add_argument("--batch-wait", type=positive, default=120.0, metavar="S",
                       help="how long a batch of one may take before it is reported as still running (default: 120)")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of a table (default: off)")


def check(args: argparse.Namespace) -> int:
    config = council_config(args)
    checks = _checks(args, config, provider_url(args, config))
    from council.console.check import print_checks

    print_checks(checks, as_json=args.json)
    return EXIT_OK if all(c.ok for c in checks) else EXIT_INPUT


def _checks(args: argparse.Namespace, config: CouncilConfig, url: str | None, rows: list | None = None) -> list:
    """Every seat checked (:mod:`council.tools.check`) against ``url``, or against the embedded provider (None)
    started for the check with the run's behaviour, on ``rows`` (default: --responses)."""
    from council.tools.check import check_council
    from council.tools.estimate import estimate

    items = {i.id: i for i in bank.load_bank(args.bank)}
    if rows is None:
        rows = bank.load_responses(args.responses, list(items.values()), vendor_map=config.vendor_map)
    votes = {v.vendor: v.votes for v in estimate(config, items, rows).vendors}

    async def main() -> list:
        if url is not None:
            return await check_council(config, items, rows, url, batch_wait_s=getattr(args, "batch_wait", 120.0),
                                       run_votes=votes)
        from council.sim import SimConfig, TruthTable, start_sim

        behaviour = SimConfig.from_file(args.sim_config) if args.sim_config else SimConfig.planted(config.seed)
        async with await start_sim(behaviour, TruthTable.from_rows(items.values(), rows)) as sim:
            return await check_council(config, items, rows, sim.url, embedded=True,
                                       batch_wait_s=getattr(args, "batch_wait", 120.0), run_votes=votes)

    return asyncio.run(main())


def preflight(args: argparse.Namespace, config: CouncilConfig, url: str | None, rows: list | None = None) -> None:
    """`council check` before a run against a real provider (``url``, or a vendor's own API), on the run's ``rows``
    (default: --responses); ConfigError naming every seat that failed (ProviderUnavailable where none can be used)."""
    # None: the embedded provider; no rows to grade: nothing to check them on
    if url is None or args.no_check or (not rows and args.command == "grade"):
        return
    from council.console.check import print_checks

    checks = _checks(args, config, url, rows)
    print_checks(checks, to_stderr=True)
    failed = [c for c in checks if not c.ok]
    if failed:
        message = (f"council check: {len(failed)} seat(s) cannot grade ({', '.join(c.vendor for c in failed)}); "
                   f"fix them and run again, or pass --no-check to start anyway")
        # a provider that cannot be used at all is the run's exit 5, as if the run had met it; else bad options
        raise (ProviderUnavailable if all(c.status == "unusable" for c in failed) else ConfigError)(message)
