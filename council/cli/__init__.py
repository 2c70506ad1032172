"""The ``council`` command line: one module per command, holding its options next to the code that runs it.

Every command says what it does in ``council --help`` and takes only the options it reads (``council COMMAND
--help`` lists them, each with its default). Results go to stdout, everything else (progress, warnings,
errors) to stderr. On a terminal, tables are drawn and wrap long names; piped or redirected, each table is
plain aligned lines with every name in full, and progress is one plain line every ``--progress-every``
seconds. Every failure is one short message on stderr, never a traceback, and the exit code says how the
command ended (:data:`EXIT_CODES`, printed at the end of ``council --help``).
"""

from __future__ import annotations

from council.cli.config import council_config, provider_url
from council.cli.dispatch import entry, main
from council.cli.parser import build_parser
from council.console.exits import (EXIT_BUDGET, EXIT_CODES, EXIT_INPUT, EXIT_INTERNAL, EXIT_NOT_COMPARABLE,
                                   EXIT_NOT_GRADED, EXIT_OK, EXIT_PIPE, EXIT_PROVIDER, EXIT_SIGNAL)
from council.console.progress import RunBoard
from council.console.results import print_result

__all__ = ["EXIT_BUDGET", "EXIT_CODES", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_NOT_COMPARABLE", "EXIT_NOT_GRADED",
           "EXIT_OK", "EXIT_PIPE", "EXIT_PROVIDER", "EXIT_SIGNAL", "RunBoard", "build_parser", "council_config",
           "entry", "main", "print_result", "provider_url"]
