"""Import responses that other benchmarks produced, so ``council grade`` can grade them.

``import_responses(path, fmt, items=..., vendor_map=..., model=...)`` reads one file in one of
:data:`FORMATS` and returns an :class:`ImportResult`: the rows that map cleanly to
:class:`~council.core.schema.ResponseRow`, one ``"{file}:{location}: {field}: {problem}"`` string for every
record that does not (location: the line number for JSONL, a JSON path such as ``samples[3]`` for a JSON
log), and how many records were skipped. Unlike bank loading, the good records are kept: the caller prints
the problems and grades the rest. A file that is missing or unreadable, or of which no record survives,
raises :class:`~council.core.errors.InputError` with the problems.

Every record needs a vendor, because a vendor's judge must not grade its own models: see
:func:`council.core.vendors.row_vendor` (the operator's vendor map first, then the built-in rules for
OpenRouter-style ids, tool routing prefixes, provider-native ids and common bare model names, then a vendor
the record states). A record whose model maps to no vendor, or whose stated vendor contradicts its model,
is reported and skipped. Each format module's docstring says exactly which fields it reads.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping


from council.core.errors import ConfigError, InputError
from council.core.schema import BankItem
from council.core.vendors import mapped_vendor, model_from_model_args, normalize_model_id, resolve_vendor
from council.importers import _inspect, _jsonl, _lm_eval, _openai_evals, _overlooked
from council.importers._core import Candidate, ImportResult, collect
from council.protocol.config import read_json_object

Reader = Callable[..., Iterator[Candidate]]

_READERS: dict[str, Reader] = {
    "jsonl": _jsonl.read,
    "inspect": _inspect.read,
    "lm_eval": _lm_eval.read,
    "openai_evals": _openai_evals.read,
    "overlooked": _overlooked.read,
}

FORMATS: tuple[str, ...] = tuple(_READERS)

FORMAT_HELP: dict[str, str] = {
    "jsonl": "this project's responses JSONL (one ResponseRow per line)",
    "inspect": "inspect_ai evaluation log (.json or .eval)",
    "lm_eval": "lm-evaluation-harness --log_samples samples_<task>_<date>.jsonl",
    "openai_evals": "OpenAI evals recorder JSONL (sampling events)",
    "overlooked": "overlooked-bench raw responses (run folder, .json or JSONL)",
}

__all__ = [
    "FORMATS",
    "ImportResult",
    "add_arguments",
    "import_responses",
    "load_from_args",
    "load_vendor_map",
    "mapped_vendor",
    "model_from_model_args",
    "normalize_model_id",
    "resolve_vendor",
]


def import_responses(
    path: str | os.PathLike[str],
    fmt: str,
    *,
    items: list[BankItem] | None,
    vendor_map: Mapping[str, str] | None = None,
    model: str | None = None,
) -> ImportResult:
    """The rows of ``path`` read as ``fmt``; raises InputError when the file is unusable or nothing survives.

    ``items`` (the bank) makes an unknown ``item_id`` a reported problem; ``vendor_map`` maps a model id or
    its prefix before ``/`` to a vendor and wins over every default; ``model`` names the model of every
    record (for formats that do not name it per record, or to relabel a run).
    """
    reader = _READERS.get(fmt)
    if reader is None:
        raise ConfigError(f"unknown responses format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    name = os.fspath(path)
    model = model.strip() if isinstance(model, str) and model.strip() else None
    problems: list[str] = []
    result = collect(name, reader(name, model=model, problems=problems), items=items, vendor_map=vendor_map,
                     model=model, problems=problems)
    if not result.rows:
        if result.skipped:
            problems.append(f"{name}: no usable records ({result.skipped} skipped)")
        elif not problems:
            problems.append(f"{name}: no records")
        raise InputError(problems)
    return result


def load_vendor_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """A vendor map file: one JSON object, model id or prefix -> vendor (non-empty strings)."""
    name = os.fspath(path)
    data = read_json_object(name, "vendor map")
    bad = [k for k, v in data.items() if not k.strip() or not isinstance(v, str) or not v.strip()]
    if bad:
        listed = ", ".join(map(repr, bad))
        raise ConfigError(f"{name}: vendor map entries need a non-empty key and vendor string: {listed}")
    return {k.strip(): v.strip().lower() for k, v in data.items()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--format`` and ``--model`` (how ``--responses`` is read) to ``parser``; ``--vendor-map`` is a
    grading option of every command (``council.cli``)."""
    parser.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="format of --responses: " + "; ".join(f"{k}: {v}" for k, v in FORMAT_HELP.items())
                        + " (default: jsonl)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="grade the valid records of a file that has bad ones (each skipped record is named and "
                             "recorded in the manifest); by default one bad record stops the command")
    parser.add_argument("--model", help="model id for every imported record (formats that do not name the model "
                                        "per record, or to relabel a run)")


def load_from_args(args: argparse.Namespace, items: list[BankItem] | None,
                   vendor_map: Mapping[str, str] | None = None) -> ImportResult:
    """Import ``args.responses`` as the arguments of :func:`add_arguments` say, with the run's vendor map."""
    return import_responses(args.responses, getattr(args, "format", "jsonl") or "jsonl", items=items,
                            vendor_map=vendor_map, model=getattr(args, "model", None))
