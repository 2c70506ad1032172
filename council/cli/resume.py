"""``council run --resume``: which options given with it would change the run (they were fixed when it started)."""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from council.cli.config import models_under_test
from council.store.runfolder import MANIFEST, RunFolder

# What --resume may change: where and how the calls are made and shown, never what the run is.
RESUME_MAY_SET = frozenset({"command", "resume", "backend", "budget_usd", "ray_address", "provider_url", "runs_dir",
                            "shards", "progress_every", "no_check"})


def conflicts(args: argparse.Namespace, build_parser: Callable[[], argparse.ArgumentParser]) -> list[str]:
    """The options given with --resume that would change what the run is (they were fixed when it started),
    each with the value given and the run's own: an option given with the value the run already has (the same
    command line repeated with --resume added) changes nothing and is accepted."""
    defaults = vars(build_parser().parse_args([args.command]))
    given = {k: v for k, v in vars(args).items() if k not in RESUME_MAY_SET and v != defaults.get(k)}
    if not given:
        return []
    own = _run_options(RunFolder.open_run(args.runs_dir, args.resume).read_json(MANIFEST), build_parser)
    return [f"--{k.replace('_', '-')} {_shown(v)} (the run's: {_shown(own[k]) if k in own else 'not recorded'})"
            for k, v in sorted(given.items()) if k not in own or _comparable(k, v) != _comparable(k, own[k])]


def _run_options(manifest: dict[str, Any], build_parser: Callable[[], argparse.ArgumentParser]) -> dict[str, Any]:
    """A run's own value of each option, in the parser's terms: the setting as its manifest records it (seed,
    quorum, self-exclusion, containment, audits, inputs, models), else as its recorded command line gave it
    (the config and behaviour files, the vendor map)."""
    words = shlex.split(manifest.get("command", ""))
    own: dict[str, Any] = {}
    if words[:1] == ["council"]:
        with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            own = vars(build_parser().parse_args(words[1:]))
    config = manifest.get("config", {})
    own.update(
        seed=manifest["seed"], quorum=manifest["quorum"], no_self_exclusion=not manifest["self_exclusion"],
        no_containment=not config.get("judge", {}).get("containment", True),
        shadow_self=bool(config.get("shadow_self")), batch_audit=config.get("batch_audit"),
        deliberate=config.get("deliberate", "all"), transport=config.get("transport", "sync"),
        deliberation_audit=config.get("deliberation_audit", 0.0),
        compress_archive=bool(config.get("compress_archive")), simulate=bool(manifest.get("simulated")),
        run_id=manifest["run_id"], reuse_from=list(manifest.get("reuse_from", [])),
        models=",".join(manifest.get("models", [])) or None, bank=Path(manifest["bank_path"]),
        **({"responses": Path(manifest["responses_path"])} if manifest.get("responses_path") else {}))
    return own


def _comparable(option: str, value: Any) -> Any:
    """An option's value as compared with the run's own: paths resolved, the models as a list."""
    if isinstance(value, Path):
        return value.resolve()
    if option == "models":
        return models_under_test(argparse.Namespace(models=value))
    return value


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)
