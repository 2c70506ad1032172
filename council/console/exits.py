"""The exit codes of ``council``: how a command ended, and what each code means (listed in ``council --help``)."""

from __future__ import annotations

import signal

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, EXIT_NOT_COMPARABLE = 0, 1, 2, 3, 4, 5, 6
EXIT_SIGNAL = {"interrupt": 128 + signal.SIGINT, "terminate": 128 + signal.SIGTERM}
EXIT_PIPE = 128 + signal.SIGPIPE  # stdout closed before everything was printed (``| head``)
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done: every row graded (diff: the runs are comparable)"),
    (EXIT_INTERNAL, "internal error (one line; the traceback goes to the log)"),
    (EXIT_INPUT, "bad input or options (the message names the file, line or option)"),
    (EXIT_BUDGET, "stopped by the budget: resumable with a larger --budget-usd"),
    (EXIT_NOT_GRADED, "finished, but some rows not graded (failed calls, refused rows)"),
    (EXIT_PROVIDER, "a provider cannot be used (unreachable, key refused, wrong URL or model)"),
    (EXIT_NOT_COMPARABLE, "diff: the runs are not comparable"),
    (EXIT_SIGNAL["interrupt"], "interrupted (Ctrl-C; a second Ctrl-C stops at once): resumable"),
    (EXIT_PIPE, "stdout was closed before the output ended (e.g. `| head`)"),
    (EXIT_SIGNAL["terminate"], "terminated (SIGTERM): resumable"),
)
