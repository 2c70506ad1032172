"""The help of ``council`` and of its commands: the formatter (every option's default, prose filled, lists kept),
the parser class, and the exit codes as an epilog."""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Sequence
from typing import Any

from council.console.exits import EXIT_CODES, EXIT_OK


def exit_codes_epilog(codes: Sequence[int] | None = None, ok: str | None = None) -> str:
    """The exit codes (``codes`` of them, else all), with ``ok`` as what 0 means for one command."""
    shown = [(c, ok if c == EXIT_OK and ok else m) for c, m in EXIT_CODES if codes is None or c in codes]
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in shown)


def add_command(sub: argparse._SubParsersAction, name: str, summary: str, description: str = "",
                exits: Sequence[int] = (), ok: str = "done", epilog: str | None = None, *,
                example: str) -> argparse.ArgumentParser:
    """A command of ``council``: its one-line ``summary`` in ``council --help``, its description (default: the
    summary as a sentence) and, at the end of its help, its exit ``exits`` (``ok``: what 0 means) or ``epilog``,
    then its ``example``."""
    parser = sub.add_parser(name, help=summary, description=description or summary[0].upper() + summary[1:] + ".",
                            epilog=epilog or (exit_codes_epilog(exits, ok) if exits else None))
    add_example(parser, example)
    return parser


def add_example(parser: argparse.ArgumentParser, example: str) -> None:
    """End ``parser``'s help with ``example``: one command line, as typed, that this parser takes."""
    parser.example = example  # type: ignore[attr-defined] - a CouncilParser's, read by examples_epilog
    parser.epilog = "\n\n".join(filter(None, [(parser.epilog or "").rstrip("\n"), f"example:\n  {example}"]))


def examples_epilog(commands: dict[str, argparse.ArgumentParser]) -> str:
    """One example for each of ``commands`` that has one, in their order: the menu at the end of ``council
    --help``."""
    return "examples:\n" + "\n".join(f"  {p.example}" for p in commands.values() if getattr(p, "example", None))


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (or says it is required), whether its author wrote one or
    not. In descriptions and epilogs, prose paragraphs are filled to the terminal's width and a block with
    indented lines (a list, such as the exit codes) is kept as written."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("max_help_position", 30)
        super().__init__(prog, **kwargs)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # argparse measures the commands 2 columns short
            self._action_max_length += 2

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            if any(line.startswith(" ") for line in lines):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                            subsequent_indent=indent))
        return "\n\n".join(blocks)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if text == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                                             argparse._SubParsersAction)):
            return action.help
        if type(action).__name__ == "_ChoicesPseudoAction":  # a command's line in the list of commands
            return action.help
        if re.search(r"\(default[ :]", text) or "(required)" in text:
            return text
        if action.required:
            return f"{text} (required)".strip()
        return f"{text} (default: {_shown_default(action.default)})".strip()


def _shown_default(value: Any) -> str:
    if value is None or value == []:
        return "none"
    if value is False:
        return "off"
    if value is True:
        return "on"
    return str(value).replace("%", "%%")


class CouncilParser(argparse.ArgumentParser):
    """The parser of ``council`` and of each of its commands (argparse builds subcommands with the parent's
    class): help with defaults and exit codes, and a command's example (:func:`add_example`)."""

    example: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
