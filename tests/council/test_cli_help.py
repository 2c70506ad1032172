"""``council --help`` and each command's help as a short menu: every command listed with one example, and every
example a command line that ``council`` takes, so that an example cannot go stale when an option changes."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from council.cli import build_parser, main


def commands() -> dict[str, argparse.ArgumentParser]:
    return next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices


def example_of(help_text: str) -> str:
    """The example that ends a help: its last line, under a last block titled ``example:``."""
    *_, title, line = help_text.rstrip().splitlines()
    assert title == "example:", help_text[-300:]
    assert line.startswith("  council "), line
    return line.strip()


def parsed(example: str) -> argparse.Namespace:
    """``example`` as ``council`` parses it; an option it does not take, or a missing argument, fails here."""
    words = shlex.split(example)
    assert words[0] == "council"
    try:
        return build_parser().parse_args(words[1:])
    except SystemExit as exc:
        raise AssertionError(f"{example!r} does not parse (exit {exc.code})") from None


def test_the_top_level_help_lists_every_command_with_its_example(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    menu, rest = text.split("commands:", 1)[1].split("examples:", 1)
    examples, codes = rest.split("exit codes:", 1)
    listed = re.findall(r"^ {4}(\S+)", menu, re.M)  # a command's line (a summary folds onto deeper ones)
    assert listed == list(commands())
    shown = [line.strip() for line in examples.splitlines() if line.strip()]
    assert shown == [example_of(p.format_help()) for p in commands().values()]  # one each, in the menu's order
    assert [parsed(e).command for e in shown] == listed
    assert codes.strip()


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_help_ends_with_an_example_that_parses(name):
    help_text = commands()[name].format_help()
    args = parsed(example_of(help_text))
    assert args.command == name
    if "exit codes:" in help_text:  # the exit codes stay, before the example
        assert help_text.index("exit codes:") < help_text.rindex("example:")


def test_a_stale_example_is_caught():
    with pytest.raises(AssertionError, match="does not parse"):
        parsed("council estimate --seed 3")  # --seed is an option of run and grade only
    with pytest.raises(AssertionError, match="does not parse"):
        parsed("council show")  # RUN is required
