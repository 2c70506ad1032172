"""The council config a command runs with (the file, the environment, the options given) and where its judges
are asked: the parts of a command line that several commands read."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.markup import escape

import bank
from council import importers
from council.console.output import console
from council.core.errors import ConfigError
from council.protocol.config import CouncilConfig


def config_file(path: Path | None, **overrides: Any) -> CouncilConfig:
    """The council config at ``path`` (TOML or JSON; None: the defaults), the ``COUNCIL_<FIELD>`` environment
    variables on top and ``overrides`` (the options given) on top of both; ConfigError names where a bad value
    came from."""
    from council.protocol.configfile import load_config, mistyped_variables

    for warning in mistyped_variables(os.environ):
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, soft_wrap=True)
    return load_config(path, **overrides)


def council_config(args: argparse.Namespace) -> CouncilConfig:
    """The config file (if any) and the environment, with the command-line options that were given on top."""
    opt = lambda name: getattr(args, name, None)  # noqa: E731 - each command has only the options it reads
    overrides: dict[str, Any] = {k: v for k, v in (("seed", opt("seed")), ("quorum", opt("quorum")),
                                                   ("budget_usd", opt("budget_usd")),
                                                   ("batch_audit", opt("batch_audit")),
                                                   ("deliberate", opt("deliberate")),
                                                   ("transport", opt("transport")),
                                                   ("deliberation_audit", opt("deliberation_audit"))) if v is not None}
    if opt("vendor_map"):
        overrides["vendor_map"] = importers.load_vendor_map(args.vendor_map)
    if opt("no_self_exclusion"):
        overrides["self_exclusion"] = False
    if opt("shadow_self"):
        overrides["shadow_self"] = True
    if opt("compress_archive"):
        overrides["compress_archive"] = True
    config = config_file(opt("config"), **overrides)
    if opt("no_containment"):
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"containment": False})})
    return config


def provider_url(args: argparse.Namespace, config: CouncilConfig | None = None) -> str | None:
    """Where the judges are asked: ``--provider-url``, or the embedded provider (None) with ``--simulate``
    or for the shipped sample. A user's own files are never graded by the simulator unless asked. A config that gives
    every seat its vendor's own API (``vendors.<v>.base_url``: `council init --layout native`) needs no
    --provider-url: its first such URL stands for the run's provider (each vendor's calls go to its own)."""
    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if args.provider_url or args.simulate:
        return args.provider_url
    own = [config.settings(v).base_url for v in config.roster_vendors] if config is not None else []
    if own and all(own) and not args.sim_config:
        return own[0]
    shipped = (Path(args.bank) == bank.SAMPLE_BANK
               and (Path(args.responses) == bank.SAMPLE_RESPONSES or models_under_test(args)))
    if not shipped and getattr(args, "resume", None) is None:
        raise ConfigError("no provider: pass --provider-url URL to grade with real judges, or --simulate to grade "
                          "with the embedded provider's simulated judges (no real model is asked)")
    return None


def models_under_test(args: argparse.Namespace) -> list[str]:
    """The models of ``--models`` (none where the command has no such option)."""
    return [m.strip() for m in (getattr(args, "models", None) or "").split(",") if m.strip()]
