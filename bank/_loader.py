"""Read bank and response JSONL files, reporting every bad line before anything is used.

Each problem is one string ``"{file}:{line}: {field}: {problem}"`` (1-based line; ``field`` is the
pydantic location joined by ``"."``, or ``"-"`` when the line itself is not a JSON object). A file with
any problem raises :class:`InputError` carrying all of them, and nothing is returned.

A line that is not UTF-8 is ``file:line: -: invalid UTF-8 at byte N of the line`` (N counted from 1); a
duplicate is reported on the later line (``id: duplicate of line N``, or ``row_id: ...`` for responses). A
file that is not JSONL at all (binary data, UTF-16, a JSON array, one object over several lines), or is
empty, gets one ``file: ...`` problem instead.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from council.core.errors import InputError
from council.core.schema import BankItem, ResponseRow, Scale

M = TypeVar("M", bound=BaseModel)

_BOM = b"\xef\xbb\xbf"
_FINGERPRINT_VERSION = 1


class BankScale(BaseModel):
    """A bank line holding only ``{"scale": {...}}``: the scale of every item that declares none."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    scale: Scale


class _BankLine:
    """Validates a bank line as the bank's scale (a line with the one key ``scale``) or as an item."""

    @staticmethod
    def model_validate(obj: dict[str, Any], context: Any = None) -> BankItem | BankScale:
        if set(obj) == {"scale"}:
            return BankScale.model_validate(obj, context=context)
        return BankItem.model_validate(obj, context=context)


def load_bank(path: str | os.PathLike[str]) -> list[BankItem]:
    """Every item of the bank at ``path``, in file order; raises InputError listing every problem.

    A line ``{"scale": {...}}`` (at most one) declares the bank's scale: every item without a ``scale`` of
    its own is graded on it (dimensions, weights and anchored levels: ``council.core.schema.Scale``)."""
    name = os.fspath(path)
    problems: list[str] = []
    items: list[BankItem] = []
    first_line: dict[str, int] = {}
    bank_scale: tuple[int, Scale] | None = None
    for lineno, raw, item in _parse(name, _BankLine, problems):  # type: ignore[arg-type]
        if isinstance(item, BankScale):
            if bank_scale is not None:
                problems.append(_problem(name, lineno, "scale", f"the bank's scale is already given on line {bank_scale[0]}"))
            else:
                bank_scale = (lineno, item.scale)
            continue
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
    if bank_scale is not None:
        items = [i if i.scale is not None else i.model_copy(update={"scale": bank_scale[1]}) for i in items]
    return items


def load_responses(
    path: str | os.PathLike[str], items: list[BankItem] | None = None, vendor_map: Mapping[str, str] | None = None
) -> list[ResponseRow]:
    """Every response row at ``path``, in file order; raises InputError listing every problem.

    With ``items``, a row whose ``item_id`` is not in that bank is a problem too. Each row's vendor is
    decided by ``council.core.vendors.row_vendor`` with ``vendor_map`` (the operator's ``--vendor-map``, which
    wins over the built-in rules and over the row's own ``vendor``): a model whose vendor cannot be decided,
    or whose stated vendor contradicts it, is a problem of that line (``file:line: model: ...`` or
    ``file:line: vendor: ...``).
    """
    rows: list[ResponseRow] = []
    check_responses(path, items, vendor_map, on_row=rows.append)
    return rows


@dataclass
class ResponsesScan:
    """What one validating pass over a responses file found (its rows themselves are not kept)."""

    rows: int = 0
    item_ids: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    vendors: set[str] = field(default_factory=set)


def check_responses(
    path: str | os.PathLike[str], items: list[BankItem] | None = None, vendor_map: Mapping[str, str] | None = None,
    *, on_row: Callable[[ResponseRow], None] | None = None,
) -> ResponsesScan:
    """Validate the responses at ``path`` in one streaming pass, as :func:`load_responses` does (every problem
    reported, all or nothing), keeping no row: ``on_row`` sees each valid row as it is read. Rows are then read
    again with :func:`iter_responses`.

    Duplicates are found from an 8-byte digest of each row id (a few bytes per row); only when two digests
    collide is the file read again with the exact check, which reports each duplicate on its later line."""
    name = os.fspath(path)
    known = None if items is None else {item.id for item in items}
    problems: list[str] = []
    scan = ResponsesScan()
    digests = array("Q")
    for lineno, raw, row in _parse(name, ResponseRow, problems, context={"vendor_map": vendor_map}):
        key = row.row_id if row is not None else _raw_row_id(raw)
        if key is not None:
            digests.append(_key_digest(key))
        if row is None:
            continue
        if known is not None and row.item_id not in known:
            problems.append(_problem(name, lineno, "item_id", f"unknown item {row.item_id!r}"))
            continue
        scan.rows += 1
        scan.item_ids.add(row.item_id)
        scan.models.add(row.model)
        scan.vendors.add(row.vendor)
        if on_row is not None:
            on_row(row)
    if len(digests) and len(np.unique(np.frombuffer(digests, dtype=np.uint64))) < len(digests):
        problems = _exact_problems(name, known, vendor_map)
    if problems:
        raise InputError(problems)
    return scan


def _key_digest(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def _exact_problems(name: str, known: set[str] | None, vendor_map: Mapping[str, str] | None) -> list[str]:
    """Every problem of a responses file, duplicates found by row id (keeps each row id and its line)."""
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for lineno, raw, row in _parse(name, ResponseRow, problems, context={"vendor_map": vendor_map}):
        key = row.row_id if row is not None else _raw_row_id(raw)
        if key is not None:
            if key in first_line:
                problems.append(_problem(name, lineno, "row_id", f"duplicate of line {first_line[key]}"))
                continue
            first_line[key] = lineno
        if row is not None and known is not None and row.item_id not in known:
            problems.append(_problem(name, lineno, "item_id", f"unknown item {row.item_id!r}"))
    return problems


def iter_responses(path: str | os.PathLike[str], vendor_map: Mapping[str, str] | None = None) -> Iterator[ResponseRow]:
    """The rows of a responses file already passed by :func:`check_responses`, read one at a time. A file
    that changed since and now has a bad line raises InputError at that line."""
    name = os.fspath(path)
    problems: list[str] = []
    for _, _, row in _parse(name, ResponseRow, problems, context={"vendor_map": vendor_map}):
        if problems:
            break
        if row is not None:
            yield row
    if problems:
        raise InputError([*problems, f"{name}: changed while it was being read"])


def dataset_fingerprint(items: Iterable[BankItem]) -> str:
    """sha256 (64 hex) of the items' (id, prompt, reference) in id order.

    Only those three fields count: the fingerprint does not change with file order, rationale, tags,
    probe or rubric.
    """
    triples = sorted([item.id, item.prompt, item.reference] for item in items)
    return _digest(["bank", _FINGERPRINT_VERSION, triples])


def responses_fingerprint(rows: Iterable[ResponseRow]) -> str:
    """sha256 (64 hex) of the rows' (row_id, item_id, model, response) in row_id order."""
    builder = ResponsesFingerprint()
    for row in rows:
        builder.add(row)
    return builder.hexdigest()


class ResponsesFingerprint:
    """:func:`responses_fingerprint` of rows seen one at a time, without keeping them: each row's entry goes to
    a temporary file and only its row id's bytes and two offsets stay in memory, until the entries are hashed
    in row_id order."""

    def __init__(self) -> None:
        self._entries = tempfile.TemporaryFile()
        self._entry_end = array("Q")
        self._keys = bytearray()
        self._key_end = array("Q")
        self._size = 0

    def add(self, row: ResponseRow) -> None:
        entry = orjson.dumps([row.row_id, row.item_id, row.model, row.response])
        self._entries.write(entry)
        self._size += len(entry)
        self._entry_end.append(self._size)
        self._keys += row.row_id.encode("utf-8", "surrogatepass")
        self._key_end.append(len(self._keys))

    def hexdigest(self) -> str:
        try:
            return self._hexdigest()
        finally:
            self._entries.close()

    def _hexdigest(self) -> str:
        n = len(self._key_end)
        digest = hashlib.sha256(b'["responses",' + orjson.dumps(_FINGERPRINT_VERSION) + b",[")
        if n == 0:
            digest.update(b"]]")
            return digest.hexdigest()
        self._entries.flush()
        key_end = np.frombuffer(self._key_end, dtype=np.uint64).astype(np.int64)
        key_start = np.concatenate(([0], key_end[:-1]))
        width = max(1, int((key_end - key_start).max()))
        keys = np.zeros(n, dtype=f"S{width}")
        blob = bytes(self._keys)
        for i in range(n):  # UTF-8 byte order is code point order, as str comparison
            keys[i] = blob[key_start[i]:key_end[i]]
        del blob
        order = np.argsort(keys, kind="stable")
        if n > 1 and (keys[order[1:]] == keys[order[:-1]]).any():
            return _digest(["responses", _FINGERPRINT_VERSION, sorted(self._all_entries())])  # repeated row ids
        del keys
        entry_end = np.frombuffer(self._entry_end, dtype=np.uint64).astype(np.int64)
        entry_start = np.concatenate(([0], entry_end[:-1]))
        with mmap.mmap(self._entries.fileno(), 0, access=mmap.ACCESS_READ) as view:
            for k, i in enumerate(order):
                if k:
                    digest.update(b",")
                digest.update(view[entry_start[i]:entry_end[i]])
        digest.update(b"]]")
        return digest.hexdigest()

    def _all_entries(self) -> list[list[str]]:
        self._entries.seek(0)
        data = self._entries.read()
        ends = list(self._entry_end)
        return [orjson.loads(data[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]


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
        handle = open(name, "rb")
    except FileNotFoundError:
        problems.append(f"{name}: file not found")
        return
    except IsADirectoryError:
        problems.append(f"{name}: is a directory, not a file")
        return
    except OSError as exc:
        problems.append(f"{name}: cannot read file: {exc.strerror or exc}")
        return
    with handle:
        yield from _records(name, model, problems, context, _file_lines(handle), lambda: _whole(name))


def _file_lines(handle: Any) -> Iterator[bytes]:
    """The lines of an open binary file without their ``\n`` (a BOM at the start dropped), one at a time."""
    first = True
    for line in handle:
        if first:
            first = False
            if line.startswith(_BOM):
                line = line[len(_BOM):]
        yield line[:-1] if line.endswith(b"\n") else line


def _whole(name: str) -> bytes:
    with open(name, "rb") as handle:
        data = handle.read()
    return data[len(_BOM):] if data.startswith(_BOM) else data


def _records(
    name: str, model: type[M], problems: list[str], context: dict[str, Any] | None, lines: Iterable[bytes],
    whole: Any,
) -> Iterator[tuple[int, dict[str, Any], M | None]]:
    for lineno, obj, error in _lines(name, lines, whole, problems):
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
    """(line number, parsed value or None, error or None) for every non-blank line of a JSONL file.

    A line that is not valid UTF-8 gets ``invalid UTF-8 at byte N of the line`` (N counts the line's bytes
    from 1) and one that is not valid JSON ``invalid JSON (... at column N)``. A file of which no line holds a
    JSON object and that is not JSONL at all (binary data, another encoding, a JSON array, one object over
    several lines) gets one file-level problem instead of one per line; so does an empty file.
    """
    return _lines(name, data.split(b"\n"), lambda: data, problems)


def _lines(name: str, lines: Iterable[bytes], whole: Any, problems: list[str]) -> Iterator[tuple[int, Any, str | None]]:
    """:func:`json_lines` over ``lines`` (without their ``\n``); ``whole()`` gives the whole file's bytes, asked
    only when no line holds a JSON object (to say what the file is instead)."""
    pending: list[tuple[int, Any, str | None]] = []  # the lines before the first one holding an object
    seen_object = seen_any = False
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        seen_any = True
        parsed = _json_line(lineno, raw, line)
        if seen_object:
            yield parsed
        elif isinstance(parsed[1], dict):
            seen_object = True
            yield from pending
            pending.clear()
            yield parsed
        else:
            pending.append(parsed)
    if not seen_any:
        problems.append(f"{name}: empty file (no records)")
        return
    if pending:
        kind = not_jsonl(whole())
        if kind is not None:
            problems.append(f"{name}: {kind}")
            return
        yield from pending


def _json_line(lineno: int, raw: bytes, line: bytes) -> tuple[int, Any, str | None]:
    try:
        return lineno, orjson.loads(line), None
    except orjson.JSONDecodeError as exc:
        bad = utf8_error(raw)
        if bad is not None:
            return lineno, None, f"invalid UTF-8 at byte {bad} of the line"
        column = exc.colno + len(raw) - len(raw.lstrip())  # count the leading blanks stripped off
        return lineno, None, f"invalid JSON ({exc.msg} at column {column})"


def utf8_error(data: bytes) -> int | None:
    """The 1-based position of the first byte of ``data`` that is not valid UTF-8, or None if it all is."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start + 1
    return None


def utf8_problem(data: bytes) -> tuple[int, str] | None:
    """(line number, ``invalid UTF-8 at byte N of the line``) for the first invalid byte of a whole file."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        return data.count(b"\n", 0, exc.start) + 1, f"invalid UTF-8 at byte {exc.start - line_start + 1} of the line"
    return None


_ENCODINGS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"), (b"\xfe\xff", "UTF-16"),
              (b"\xff\xfe", "UTF-16"))
_MAGIC = ((b"\x1f\x8b", "gzip-compressed data"), (b"PK\x03\x04", "a zip archive"), (b"%PDF", "a PDF document"),
          (b"\x89PNG", "a PNG image"), (b"SQLite format 3\x00", "an SQLite database"), (b"PAR1", "a Parquet file"),
          (b"\xd0\xcf\x11\xe0", "an Office document"), (b"\x7fELF", "an executable"))
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")


def not_jsonl(data: bytes) -> str | None:
    """Why ``data`` is not a JSONL file at all, or None when it is text to be judged line by line.

    Asked only of a file none of whose lines holds a JSON object.
    """
    for mark, encoding in _ENCODINGS:
        if data.startswith(mark):
            return f"not JSONL: the text is encoded as {encoding}; save it as UTF-8"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return f"not JSONL: {kind}, not a text file of one JSON object per line"
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        whole = None
    else:
        if isinstance(whole, list):
            return ("not JSONL: the file is one JSON array; put one JSON object on each line "
                    "(for example: jq -c '.[]' FILE)")
        if isinstance(whole, dict):
            return ("not JSONL: the file is one JSON object spread over several lines; put each object on one line "
                    "(for example: jq -c . FILE)")
    sample = data[:65536]
    if b"\x00" in sample:
        return "not JSONL: binary data (NUL bytes), not a text file of one JSON object per line"
    invalid = len(sample) - len(sample.decode("utf-8", "ignore").encode("utf-8"))
    controls = sum(1 for byte in sample if byte < 0x20 and byte not in _TEXT_CONTROLS)
    if invalid + controls > 0.3 * len(sample):
        return "not JSONL: binary data, not a text file of one JSON object per line"
    return None


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
