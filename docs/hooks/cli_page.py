"""The command line's reference, read from the argparse parsers (``council.cli.build_parser``): every command,
its description, usage, options with their defaults and help, and its exit codes."""

from __future__ import annotations

import argparse
import re

from markdown_text import cell

from council.cli import build_parser
from council.console.exits import EXIT_CODES


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line summary, parser) of every command of ``parser``, in the order of ``council --help``."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help or "" for a in action._choices_actions}
    return [(name, summaries.get(name, ""), sub) for name, sub in action.choices.items()]


def _argument(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs == 0:
            return _code(names)
        return _code(f"{names} {formatter._format_args(action, formatter._get_default_metavar_for_optional(action))}")
    return _code(formatter._format_args(action, formatter._get_default_metavar_for_positional(action)))


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    text = formatter._expand_help(action) if action.help else ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    return cell(text)


def _epilog(text: str | None) -> list[str]:
    """An epilog's exit codes as a table; any other epilog as its paragraphs."""
    if not text:
        return []
    head, _, codes = text.partition("exit codes:\n")
    out = [" ".join(p.split()) for p in head.split("\n\n") if p.strip()]
    if codes:
        out += ["", "| exit code | meaning |", "| --- | --- |"]
        for line in codes.splitlines():
            match = re.match(r"\s*(\d+)\s+(.*)", line)
            if match:
                out.append(f"| {match[1]} | {cell(match[2])} |")
    return [*out, ""]


def command_section(name: str, summary: str, sub: argparse.ArgumentParser) -> list[str]:
    formatter = sub._get_formatter()
    out = [f"## council {name}", "", f"*{cell(summary)}*", "", " ".join((sub.description or "").split()), "",
           "```text", sub.format_usage().strip(), "```", ""]
    for group in sub._action_groups:
        actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS
                   and not isinstance(a, argparse._HelpAction)]
        if not actions:
            continue
        out += [f"**{group.title}**", "", "| argument | what it does |", "| --- | --- |"]
        out += [f"| {_argument(a, formatter)} | {_help(a, formatter)} |" for a in actions]
        out.append("")
    return out + _epilog(sub.epilog)


def exit_codes_table() -> str:
    """Every exit code of ``council`` (``council.console.exits.EXIT_CODES``) as a Markdown table."""
    rows = [f"| {code} | {cell(meaning)} |" for code, meaning in EXIT_CODES]
    return "\n".join(["| exit code | meaning |", "| --- | --- |", *rows])


def command_epilog(name: str) -> str:
    """The epilog of one command (its own exit codes), as Markdown."""
    sub = dict((n, p) for n, _, p in commands(build_parser()))[name]
    return "\n".join(_epilog(sub.epilog))


def cli_page() -> str:
    parser = build_parser()
    listed = commands(parser)
    out = ["# Command line", "",
           "<!-- Generated at build time from council.cli.build_parser(): do not edit by hand. -->", "",
           " ".join((parser.description or "").split()), "",
           "`council --help` lists the commands, `council COMMAND --help` a command's options, each with its "
           "default. A command takes only the options it reads.", "",
           "| command | what it does |", "| --- | --- |"]
    out += [f"| [`{name}`](#council-{name}) | {cell(summary)} |" for name, summary, _ in listed]
    out += ["", "Exit codes of every command:", "", exit_codes_table(), ""]
    for name, summary, sub in listed:
        out += command_section(name, summary, sub)
    return "\n".join(out) + "\n"
