"""Read bank and response JSONL files, reporting every bad line before anything is used.

Each problem is one string ``"{file}:{line}: {field}: {problem}"`` (1-based line; ``field`` is the
pydantic location joined by ``"."``, or ``"-"`` when the line itself is not a JSON object). A file with
any problem raises :class:`InputError` carrying all of them, and nothing is returned.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from council.errors import InputError
from council.schema import BankItem, ResponseRow

M = TypeVar("M", bound=BaseModel)

_BOM = b"\xef\xbb\xbf"
_FINGERPRINT_VERSION = 1


def load_bank(path: str | os.PathLike[str]) -> list[BankItem]:
    """Every item of the bank at ``path``, in file order; raises InputError listing every problem."""
    name = os.fspath(path)
    problems: list[str] = []
    items: list[BankItem] = []
    first_line: dict[str, int] = {}
    for lineno, raw, item in _parse(name, BankItem, problems):
        key = item.id if item is not None else raw.get("id")
        if isinstance(key, str):
            if key in first_line:
                problems.append(_problem(name, lineno, "id", f"duplicate of line {first_line[key]}"))
                continue
            first_line[key] = lineno
        if item is not None:
            items.append(item)
    if problems:
        raise InputError(problems)
    return items


def load_responses(
    path: str | os.PathLike[str], items: list[BankItem] | None = None, vendor_map: Mapping[str, str] | None = None
) -> list[ResponseRow]:
    """Every response row at ``path``, in file order; raises InputError listing every problem.

    With ``items``, a row whose ``item_id`` is not in that bank is a problem too. Each row's vendor is
    decided by ``council.vendors.row_vendor`` with ``vendor_map`` (the operator's ``--vendor-map``, which
    wins over the built-in rules and over the row's own ``vendor``): a model whose vendor cannot be decided,
    or whose stated vendor contradicts it, is a problem of that line (``file:line: model: ...`` or
    ``file:line: vendor: ...``).
    """
    name = os.fspath(path)
    known = None if items is None else {item.id for item in items}
    problems: list[str] = []
    rows: list[ResponseRow] = []
    first_line: dict[str, int] = {}
    for lineno, raw, row in _parse(name, ResponseRow, problems, context={"vendor_map": vendor_map}):
        key = row.row_id if row is not None else _raw_row_id(raw)
        if key is not None:
            if key in first_line:
                problems.append(_problem(name, lineno, "row_id", f"duplicate of line {first_line[key]}"))
                continue
            first_line[key] = lineno
        if row is None:
            continue
        if known is not None and row.item_id not in known:
            problems.append(_problem(name, lineno, "item_id", f"unknown item {row.item_id!r}"))
            continue
        rows.append(row)
    if problems:
        raise InputError(problems)
    return rows


def dataset_fingerprint(items: Iterable[BankItem]) -> str:
    """sha256 (64 hex) of the items' (id, prompt, reference) in id order.

    Only those three fields count: the fingerprint does not change with file order, rationale, tags,
    probe or rubric.
    """
    triples = sorted([item.id, item.prompt, item.reference] for item in items)
    return _digest(["bank", _FINGERPRINT_VERSION, triples])


def responses_fingerprint(rows: Iterable[ResponseRow]) -> str:
    """sha256 (64 hex) of the rows' (row_id, item_id, model, response) in row_id order."""
    quads = sorted([row.row_id, row.item_id, row.model, row.response] for row in rows)
    return _digest(["responses", _FINGERPRINT_VERSION, quads])


def _digest(payload: Any) -> str:
    return hashlib.sha256(orjson.dumps(payload)).hexdigest()


def _problem(name: str, lineno: int, field: str, message: str) -> str:
    return f"{name}:{lineno}: {field}: {message}"


def _parse(
    name: str, model: type[M], problems: list[str], context: dict[str, Any] | None = None
) -> Iterator[tuple[int, dict[str, Any], M | None]]:
    """Yield (line number, raw object, record or None) for each JSON-object line.

    A problem is appended for every line that is not a JSON object or fails validation (its record is
    then None, but its raw object is still yielded so duplicates can be reported against it). ``context``
    is pydantic's validation context (the responses loader passes the vendor map in it).
    """
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        problems.append(f"{name}: file not found")
        return
    except IsADirectoryError:
        problems.append(f"{name}: is a directory, not a file")
        return
    except OSError as exc:
        problems.append(f"{name}: cannot read file: {exc.strerror or exc}")
        return
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    for lineno, obj, error in json_lines(name, data, problems):
        if error is not None:
            problems.append(_problem(name, lineno, "-", error))
            continue
        if not isinstance(obj, dict):
            problems.append(_problem(name, lineno, "-", f"expected a JSON object, got {_json_type(obj)}"))
            continue
        try:
            record = model.model_validate(obj, context=context)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                problems.append(_problem(name, lineno, _loc(error["loc"]), _message(error)))
            yield lineno, obj, None
            continue
        yield lineno, obj, record


def json_lines(name: str, data: bytes, problems: list[str]) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, parsed value or None, error or None) for every non-blank line of a JSONL file; an
    empty file is a problem."""
    seen_any = False
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        seen_any = True
        try:
            yield lineno, orjson.loads(line), None
        except orjson.JSONDecodeError as exc:
            yield lineno, None, f"invalid JSON ({exc.msg} at column {exc.colno})"
    if not seen_any:
        problems.append(f"{name}: empty file (no records)")


def _raw_row_id(raw: dict[str, Any]) -> str | None:
    """The row id a row would get from the schema, for a row that failed validation."""
    row_id = raw.get("row_id")
    if isinstance(row_id, str) and row_id:
        return row_id
    item_id, model = raw.get("item_id"), raw.get("model")
    if isinstance(item_id, str) and isinstance(model, str) and model.strip():
        return f"{item_id}::{model}"
    return None


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "-"


def _message(error: Any) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    msg = str(error.get("msg", "invalid value"))
    if error.get("type") == "value_error" and msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return msg


def _json_type(obj: Any) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    if isinstance(obj, (int, float)):
        return "a number"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, list):
        return "an array"
    return type(obj).__name__
