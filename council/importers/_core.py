"""What every importer shares: reading the file, turning candidates into rows, reporting the rest.

A format module reads its file and yields :class:`Candidate` records, each with its location in the file
(a line number, or a JSON path such as ``samples[3]``) and the ResponseRow fields it could find, plus the
problems it already saw. :func:`collect` then applies the ``model`` override, resolves the vendor,
validates the row against the wire schema, checks the item against the bank and drops duplicates. Every
record that does not become a row is reported as ``"{file}:{location}: {field}: {problem}"`` and counted
in ``skipped``; the good ones are kept.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from bank._loader import _json_type, _loc, _message, json_lines, utf8_problem
from council.core.errors import VendorConflictError
from council.core.schema import BankItem, ResponseRow
from council.core.vendors import row_vendor

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class ImportResult:
    """The rows that could be imported, one problem string per reported issue, and how many records were
    skipped because of them."""

    rows: list[ResponseRow]
    problems: list[str]
    skipped: int


@dataclass
class Candidate:
    """One record of a foreign file, on its way to becoming a ResponseRow.

    ``fields`` uses ResponseRow's names. ``vendor_hint`` is a vendor the record itself states (the
    ``stated`` vendor of :func:`council.core.vendors.row_vendor`: used when the model id resolves to no vendor,
    an error when it contradicts the model's vendor). ``variant`` marks a record that legitimately repeats
    another one (lm-evaluation-harness writes a sample once per filter): a repeat with a different variant
    and the same response is folded into the first silently instead of being reported as a duplicate.
    """

    loc: str
    fields: dict[str, Any] = field(default_factory=dict)
    issues: list[tuple[str, str]] = field(default_factory=list)
    vendor_hint: str | None = None
    variant: str | None = None
    dup_field: str = "item_id"

    def issue(self, field_name: str, message: str) -> Candidate:
        self.issues.append((field_name, message))
        return self


def problem(name: str, loc: str, field_name: str, message: str) -> str:
    return f"{name}:{loc}: {field_name}: {message}"


def where(loc: str) -> str:
    """How a location reads inside a sentence: ``line 3`` or ``samples[3]``."""
    return f"line {loc}" if loc.isdigit() else loc


def read_bytes(name: str, problems: list[str]) -> bytes | None:
    """The file's bytes (gunzipped, without a UTF-8 BOM), or None with a file-level problem appended."""
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        problems.append(f"{name}: file not found")
        return None
    except IsADirectoryError:
        problems.append(f"{name}: is a directory, not a file")
        return None
    except OSError as exc:
        problems.append(f"{name}: cannot read file: {exc.strerror or exc}")
        return None
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            problems.append(f"{name}: not a readable gzip file (corrupt or truncated)")
            return None
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    return data


NOTHING = object()  # what json_document gives for a file with no JSON value


def json_document(name: str, data: bytes, problems: list[str]) -> Any:
    """The one JSON value of a file, or ``NOTHING`` with the problem recorded (empty or invalid; invalid UTF-8
    as ``file:line: -: invalid UTF-8 at byte N of the line``)."""
    if not data.strip():
        problems.append(f"{name}: empty file (no records)")
        return NOTHING
    value, error = parse_document(data)
    if error is not None:
        problems.append(f"{name}:{error[0]}: -: {error[1]}" if error[0] else f"{name}: {error[1]}")
        return NOTHING
    return value


def parse_document(data: bytes, *, line: bool = True) -> tuple[Any, tuple[int | None, str] | None]:
    """(value, None), or (None, (line or None, problem)) for bytes that are not one JSON document (``line``:
    whether an invalid JSON problem names the line as well as the column)."""
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as exc:
        bad = utf8_problem(data)
        if bad is not None:
            return None, bad
        where = f"line {exc.lineno}, column {exc.colno}" if line else f"column {exc.colno}"
        return None, (None, f"invalid JSON ({exc.msg} at {where})")


def document_issue(data: bytes, *, line: bool = True) -> tuple[Any, str | None]:
    """(value, None), or (None, problem) for a JSON document inside a container (an archive entry, a file of
    a folder), whose location is not a line: the line is named in the problem."""
    value, error = parse_document(data, line=line)
    if error is None:
        return value, None
    lineno, message = error
    if lineno is None:
        return None, message
    return None, message.replace("of the line", f"of line {lineno}")


def jsonl_candidates(name: str, problems: list[str], make: Callable[[str, dict[str, Any]], Candidate]
                     ) -> Iterator[Candidate]:
    """A candidate per line of a JSONL file: ``make(line, object)``, or the line's problem."""
    data = read_bytes(name, problems)
    if data is None:
        return
    for lineno, obj, error in json_lines(name, data, problems):
        loc = str(lineno)
        if error is not None:
            yield Candidate(loc).issue("-", error)
        elif not isinstance(obj, dict):
            yield not_an_object(loc, obj)
        else:
            yield make(loc, obj)


def not_an_object(loc: str, value: Any) -> Candidate:
    return Candidate(loc).issue("-", f"expected a JSON object, got {_json_type(value)}")


def text_of(value: Any) -> str | None:
    """A response text: a string, or the text parts of a list of content parts joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [
            part["text"] if isinstance(part, dict) else part
            for part in value
            if (isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str))
            or isinstance(part, str)
        ]
        return "\n".join(texts) if texts else None
    return None


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[p0][p1]...`` or None as soon as a step is missing or of the wrong kind."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or not -len(obj) <= step < len(obj):
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj


def non_blank(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def collect(
    name: str,
    candidates: Iterable[Candidate],
    *,
    items: list[BankItem] | None,
    vendor_map: Mapping[str, str] | None,
    model: str | None,
    problems: list[str],
) -> ImportResult:
    """Rows from ``candidates``; every other record reported in ``problems`` and counted as skipped."""
    known = None if items is None else {item.id for item in items}
    rows: list[ResponseRow] = []
    first: dict[str, tuple[str, Candidate, str]] = {}
    skipped = 0
    for cand in candidates:
        issues = list(cand.issues)
        row: ResponseRow | None = None
        if not issues:
            row, issues = _validate(cand, vendor_map, model)
        if row is not None and known is not None and row.item_id not in known:
            issues.append(("item_id", f"unknown item {row.item_id!r}"))
        if issues or row is None:
            problems.extend(problem(name, cand.loc, f, m) for f, m in issues)
            skipped += 1
            continue
        seen = first.get(row.row_id)
        if seen is not None:
            loc, prior, response = seen
            if cand.variant is not None and cand.variant != prior.variant and row.response == response:
                continue  # the same answer logged again under another filter
            problems.append(problem(name, cand.loc, cand.dup_field,
                                    f"duplicate of {where(loc)} (same item {row.item_id!r} and model {row.model!r})"))
            skipped += 1
            continue
        first[row.row_id] = (cand.loc, cand, row.response)
        rows.append(row)
    return ImportResult(rows=rows, problems=problems, skipped=skipped)


def _validate(
    cand: Candidate, vendor_map: Mapping[str, str] | None, model: str | None
) -> tuple[ResponseRow | None, list[tuple[str, str]]]:
    data = dict(cand.fields)
    if model:
        data["model"] = model
    model_id = data.get("model")
    if isinstance(model_id, str) and model_id.strip():
        data["model"] = model_id = model_id.strip()
        try:
            data["vendor"] = row_vendor(model_id, non_blank(cand.vendor_hint), vendor_map)
        except ValueError as exc:
            return None, [("vendor" if isinstance(exc, VendorConflictError) else "model", str(exc))]
    try:
        row = ResponseRow.model_validate(data, context={"vendor_map": vendor_map})
    except ValidationError as exc:
        return None, [(_loc(e["loc"]), _message(e)) for e in exc.errors(include_url=False)]
    return row, []
