"""The parser of ``council``: every command's, added by the module that runs it, in the order ``council --help``
lists them."""

from __future__ import annotations

import argparse

from council.cli import (check, crossjudge, diff, estimate, init, loadtest, report, rescore, run, serve, show, sim,
                         submit)
from council.console.help import CouncilParser, examples_epilog, exit_codes_epilog

DESCRIPTION = """\
Grade model outputs with a council of LLM judges from different vendors: a vendor's judge never grades its
own vendor's models, round one is blind, round two shows each member its peers' votes by letter, and the
consensus is the round-two majority. `council run` grades the shipped sample against the embedded
(simulated) provider; `council COMMAND --help` lists a command's options, each with its default."""

# The modules that add the commands, in the order `council --help` lists them (run adds run and grade, show adds
# show and runs).
MODULES = (run, estimate, show, report, diff, rescore, crossjudge, check, init, loadtest, serve, submit, sim)


def build_parser() -> argparse.ArgumentParser:
    """``council``: its commands, one line each, then one example of each (the menu) and the exit codes."""
    parser = CouncilParser(prog="council", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for module in MODULES:
        module.add_parser(sub)
    parser.epilog = f"{examples_epilog(sub.choices)}\n\n{exit_codes_epilog()}"
    return parser
