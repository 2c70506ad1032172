"""Where the command line writes and how: results to stdout, everything else to stderr; on a terminal tables are
drawn and wrap long names, piped or redirected each table is plain aligned lines with every name in full; and the
formats of numbers, money and durations."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


class _Console(Console):
    """A console that reports a reader gone from a pipe (``| head``) as BrokenPipeError, which ``council.cli.main``
    turns into exit 141, instead of rich's exit 1 (which here means an internal error)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        if not self.stderr:
            quiet_stdout()
        raise BrokenPipeError("the reader of the output has gone")


console = _Console(stderr=True)
out = _Console()


def quiet_stdout() -> None:
    """The reader of stdout has gone (``| head``): send what is left to nowhere, so that exiting does not
    report the broken pipe once more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def drawn(target: Console) -> bool:
    """Whether ``target`` writes to a terminal (its file, not FORCE_COLOR and the like, decides): drawn tables
    and a live display there, plain lines anywhere else."""
    try:
        return bool(target.file.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def say(text: str, *, to: Console | None = None, markup: bool = True) -> None:
    """One line (or paragraph), never cut and never wrapped by us: a terminal wraps it, a pipe gets it whole."""
    (to or out).print(text, highlight=False, soft_wrap=True, markup=markup, emoji=False)


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *, text_columns: int = 1,
          align: str | None = None, to: Console | None = None) -> None:
    """A table whose first ``text_columns`` columns are text (left-aligned) and the rest numbers (or as
    ``align`` says, one ``l`` or ``r`` per column). On a terminal it is drawn and a long cell wraps (fold),
    never ends in an ellipsis; piped, it is plain aligned lines (the title, the header, one line per row)
    with every cell in full."""
    target = to or out
    align = align or "l" * text_columns + "r" * (len(header) - text_columns)
    if drawn(target):
        table = Table(title=escape(title))
        for col, side in zip(header, align, strict=True):
            table.add_column(escape(col), justify="left" if side == "l" else "right", overflow="fold")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        target.print(table)
        return
    for line in _aligned(title, header, rows, align):
        say(line, to=target, markup=False)


def _aligned(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if side == "l" else c.rjust(w)
                         for c, w, side in zip(cells, widths, align, strict=True)).rstrip()

    return [title, line(header), *(line(r) for r in rows), ""]


def pairs(title: str, pairs: Sequence[tuple[str, str]], *, to: Console | None = None) -> None:
    """A key-value table: drawn on a terminal, ``key: value`` lines when piped."""
    target = to or out
    if drawn(target):
        table = Table(title=escape(title), show_header=False)
        table.add_column(overflow="fold")
        table.add_column(overflow="fold")
        for key, value in pairs:
            table.add_row(escape(key), escape(value))
        target.print(table)
        return
    say(title, to=target, markup=False)
    for key, value in pairs:
        say(f"{key}: {value}", to=target, markup=False)
    say("", to=target, markup=False)


def pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def num(x: Any) -> str:
    return "-" if x is None else f"{x:+.4f}" if isinstance(x, float) and x < 0 else f"{x:.4f}" if isinstance(x, float) else str(x)


def points(x: Any) -> str:
    return "-" if x is None else f"{x:.1f}"


def usd(x: Any) -> str:
    return "-" if x is None else f"${x:.4f}"


def clock(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
