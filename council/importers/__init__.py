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

Each record's bank item is found from the id its format documents, or as the operator says
(``council.importers._ids``): ``id_field`` (``--id-field``), ``id_map`` (``--id-map``) or ``match_prompt``
(``--match-prompt``); ``ImportResult.ids`` says which was used. When most records name no bank item, the
problems end with one that names those three ways.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path


from council.core.errors import ConfigError, InputError
from council.core.schema import BankItem
from council.core.vendors import mapped_vendor, model_from_model_args, normalize_model_id, resolve_vendor
from council.importers import _inspect, _jsonl, _lm_eval, _openai_evals, _overlooked
from council.importers._candidate import Candidate
from council.importers._core import ImportResult, collect
from council.importers._ids import IdPolicy, load_id_map
from council.protocol.config import read_json_object

Reader = Callable[..., Iterator[Candidate]]

_MODULES = {
    "jsonl": _jsonl,
    "inspect": _inspect,
    "lm_eval": _lm_eval,
    "openai_evals": _openai_evals,
    "overlooked": _overlooked,
}
_READERS: dict[str, Reader] = {fmt: module.read for fmt, module in _MODULES.items()}

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
    "IdPolicy",
    "ImportResult",
    "add_arguments",
    "import_responses",
    "load_from_args",
    "load_id_map",
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
    id_field: str | None = None,
    id_map: Mapping[str, str] | str | os.PathLike[str] | None = None,
    match_prompt: bool = False,
) -> ImportResult:
    """The rows of ``path`` read as ``fmt``; raises InputError when the file is unusable or nothing survives.

    ``items`` (the bank) makes an unknown ``item_id`` a reported problem; ``vendor_map`` maps a model id or
    its prefix before ``/`` to a vendor and wins over every default; ``model`` names the model of every
    record (for formats that do not name it per record, or to relabel a run). ``id_field`` (a dotted path
    into each record), ``id_map`` (record id -> bank id, or the path of a JSON or CSV file of them) and
    ``match_prompt`` (by the record's input text; needs ``items``) say how records find their bank item.
    """
    reader = _READERS.get(fmt)
    if reader is None:
        raise ConfigError(f"unknown responses format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    name = os.fspath(path)
    model = model.strip() if isinstance(model, str) and model.strip() else None
    map_name = "the id map"
    if isinstance(id_map, (str, os.PathLike)):
        map_name = os.fspath(id_map)
        id_map = load_id_map(id_map)
    policy = IdPolicy(field=id_field.strip() if isinstance(id_field, str) and id_field.strip() else None,
                      id_map=id_map, map_name=map_name, match_prompt=match_prompt)
    problems: list[str] = []
    result = collect(name, reader(name, model=model, problems=problems), items=items, vendor_map=vendor_map,
                     model=model, problems=problems, ids=policy, default_ids=_MODULES[fmt].ID_SOURCE)
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
    """Add ``--format``, ``--skip-invalid``, ``--model`` and the id options (how ``--responses`` is read) to
    ``parser``; ``--vendor-map`` is a grading option of every command (``council.cli``)."""
    parser.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="format of --responses: " + "; ".join(f"{k}: {v}" for k, v in FORMAT_HELP.items())
                        + " (default: jsonl)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="grade the valid records of a file that has bad ones (each skipped record is named and "
                             "recorded in the manifest); by default one bad record stops the command")
    parser.add_argument("--model", help="model id for every imported record (formats that do not name the model "
                                        "per record, or to relabel a run)")
    ids = parser.add_mutually_exclusive_group()
    ids.add_argument("--match-prompt", action="store_true",
                     help="find each record's bank item by prompt text: the item whose prompt equals the record's "
                          "input after whitespace normalisation (no match, or several, is a problem of that record)")
    ids.add_argument("--id-field", metavar="FIELD",
                     help="the record field that holds the bank id, as a dotted path (e.g. metadata.item_id for an "
                          "inspect sample, doc.question_id for lm-eval, data.item_id for OpenAI evals)")
    parser.add_argument("--id-map", metavar="FILE", type=Path,
                        help="map each record's id (or --id-field's value) to a bank id: a JSON object, or a CSV of "
                             "two columns, record id and bank id")


def load_from_args(args: argparse.Namespace, items: list[BankItem] | None,
                   vendor_map: Mapping[str, str] | None = None) -> ImportResult:
    """Import ``args.responses`` as the arguments of :func:`add_arguments` say, with the run's vendor map."""
    return import_responses(args.responses, getattr(args, "format", "jsonl") or "jsonl", items=items,
                            vendor_map=vendor_map, model=getattr(args, "model", None),
                            id_field=getattr(args, "id_field", None), id_map=getattr(args, "id_map", None),
                            match_prompt=bool(getattr(args, "match_prompt", False)))
