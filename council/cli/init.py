"""``council init``: write an example council config (:func:`council.protocol.configfile.example_toml`) to edit."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from council.console.exits import EXIT_INPUT, EXIT_OK
from council.console.help import add_command
from council.console.output import console, say
from council.core.errors import ConfigError

INIT_PATH = Path("council.toml")


def add_parser(sub: argparse._SubParsersAction) -> None:
    init = add_command(sub, "init", "write an example council config (council.toml) to edit",
                       "Write an example council config, every field with its default and a comment, to edit and "
                       "pass as --config. An existing file is never overwritten.", (EXIT_OK, EXIT_INPUT),
                       example="council init --layout native")
    init.add_argument("path", metavar="PATH", nargs="?", type=Path, default=INIT_PATH,
                      help="where to write it (default: council.toml)")
    init.add_argument("--layout", choices=("gateway", "native"), default="gateway",
                      help="gateway: every vendor through one OpenAI-compatible gateway (--provider-url, "
                           "COUNCIL_API_KEY, OpenRouter-style ids); native: each vendor at its own API with its own "
                           "key variable and native ids (default: gateway)")


def init(args: argparse.Namespace) -> int:
    from council.protocol.configfile import example_toml

    path: Path = args.path
    if path.suffix.lower() != ".toml":
        raise ConfigError(f"{path}: council init writes TOML; give the file a .toml name")
    text = example_toml(args.layout)
    try:
        with open(path, "x", encoding="utf-8") as handle:  # never over an existing file
            handle.write(text)
    except FileExistsError:
        raise ConfigError(f"{path} already exists; it is never overwritten (remove it, or give another PATH)") from None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    say(f"wrote {escape(str(path))}: edit it, then pass --config {escape(str(path))}", to=console)
    first = (f"set each vendor's key variable (vendors.<v>.api_key_env) and run `council check --config {path}`"
             if args.layout == "native" else
             f"set COUNCIL_API_KEY and run `council check --config {path} --provider-url URL` (the gateway's base URL)")
    say(f"then {escape(first)} before a large run", to=console)
    return EXIT_OK
