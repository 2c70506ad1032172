"""Reading the files of other tools: bytes (gunzipped), one JSON document, or JSONL lines.

JSON that orjson refuses only because it holds ``NaN``, ``Infinity`` or ``-Infinity`` (Python's ``json``
writes them by default, and inspect_ai, lm-evaluation-harness and OpenAI evals all write with it) is read
with those values allowed. Every problem names the file, and the line where there is one.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from bank._loader import json_lines, utf8_problem
from council.importers._candidate import Candidate, not_an_object

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"


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
        value = lenient_json(data)
        if value is not NOTHING:
            return value, None
        where = f"line {exc.lineno}, column {exc.colno}" if line else f"column {exc.colno}"
        return None, (None, f"invalid JSON ({exc.msg} at {where})")


_NON_FINITE = (b"NaN", b"Infinity")


def _int(text: str) -> int | float:
    value = int(text)
    return value if -(2**63) <= value < 2**64 else float(value)  # as orjson reads an integer past 64 bits


def lenient_json(data: bytes) -> Any:
    """``data`` read with ``NaN``, ``Infinity`` and ``-Infinity`` allowed, or ``NOTHING`` when it holds none of
    them or is not JSON even so (nor text orjson could write back: lone surrogates)."""
    if not any(token in data for token in _NON_FINITE):
        return NOTHING
    try:
        value = json.loads(data.decode("utf-8"), parse_int=_int)
        orjson.dumps(value)
    except (ValueError, TypeError, RecursionError, orjson.JSONEncodeError):
        return NOTHING
    return value


def lenient_lines(name: str, data: bytes, problems: list[str]) -> Iterator[tuple[int, Any, str | None]]:
    """``bank._loader.json_lines``, with a line that holds ``NaN`` or ``Infinity`` read as :func:`lenient_json`."""
    lines: list[bytes] | None = None
    for lineno, obj, error in json_lines(name, data, problems):
        if error is not None and error.startswith("invalid JSON"):
            lines = data.split(b"\n") if lines is None else lines
            value = lenient_json(lines[lineno - 1])
            if value is not NOTHING:
                yield lineno, value, None
                continue
        yield lineno, obj, error


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


def jsonl_candidates(name: str, problems: list[str], make: Callable[[str, dict[str, Any]], Candidate], *,
                     lenient: bool = False) -> Iterator[Candidate]:
    """A candidate per line of a JSONL file: ``make(line, object)``, or the line's problem (``lenient``: NaN
    and Infinity allowed, as :func:`lenient_lines`)."""
    data = read_bytes(name, problems)
    if data is None:
        return
    for lineno, obj, error in (lenient_lines if lenient else json_lines)(name, data, problems):
        loc = str(lineno)
        if error is not None:
            yield Candidate(loc).issue("-", error)
        elif not isinstance(obj, dict):
            yield not_an_object(loc, obj)
        else:
            yield make(loc, obj)
