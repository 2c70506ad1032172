"""The providers' batch formats, as pure functions (no I/O): what a batch of council requests looks like on the
way in, how its results read on the way back, and how a large regrade is cut into batches each provider accepts.

- OpenAI-style (OpenAI, and every provider that copies its Batch API): a JSONL file, one line per request
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``, the body being the one the
  synchronous call sends (:class:`council.transport.wire.OpenAIWire`). A file holds one model, at most 50,000
  lines and 200 MB. Results come back in an output file and an error file, in no particular order: lines are
  matched to requests by ``custom_id``.
- Anthropic's Message Batches: a ``{"requests": [{"custom_id", "params"}]}`` body, ``params`` being a
  ``/v1/messages`` body (:class:`council.transport.wire.AnthropicWire`); at most 100,000 requests and 256 MB;
  each custom_id matches ``^[a-zA-Z0-9_-]{1,64}$`` (a vote's 32-hex ``request_key`` does). Result lines are
  ``{"custom_id", "result": {"type": "succeeded" | "errored" | "canceled" | "expired", ...}}``.

The size limits are read as decimal megabytes (200,000,000 and 256,000,000 bytes), the smaller of the two
readings, so a file the council writes is never over either.

A large regrade writes its batches to disk as it makes them (:func:`spool_openai`, :func:`spool_anthropic`: one
request's body in memory at a time) and reads results back a line at a time (:func:`iter_results`), so no batch is
ever whole in memory.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from council.transport.shape import RequestShape, plain
from council.transport.wire import AnthropicWire, MalformedReply, OpenAIWire, Reply

OPENAI_URL = "/v1/chat/completions"
OPENAI_MAX_LINES = 50_000
OPENAI_MAX_BYTES = 200_000_000
ANTHROPIC_MAX_REQUESTS = 100_000
ANTHROPIC_MAX_BYTES = 256_000_000
ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_OPENAI = OpenAIWire()
_ANTHROPIC = AnthropicWire()
_REQUESTS_OPEN, _REQUESTS_CLOSE = b'{"requests":[', b"]}"


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One call of a batch: what :meth:`council.transport.client.ChatClient.chat` would send, and its id."""

    custom_id: str
    model: str
    messages: list[dict[str, Any]]
    temperature: float = 0.0
    max_tokens: int = 256
    response_format: dict[str, Any] | None = None
    shape: RequestShape | None = None  # the seat's (council.transport.shape): then model and temperature are its

    def body(self, wire: OpenAIWire | AnthropicWire, cache_breakpoints: bool) -> dict[str, Any]:
        """The body its synchronous call would send through ``wire``."""
        shape = self.shape or plain(self.model, self.temperature)
        return wire.body(shape.model, self.messages, shape.fields(self.max_tokens),
                         response_format=self.response_format, cache_breakpoints=cache_breakpoints)


@dataclass(frozen=True, slots=True)
class BatchError:
    """A request of a batch that has no reply: the provider's code (``batch_expired``, ``invalid_request_error``,
    ``expired``, ``canceled``...), the HTTP status it would have had where the provider says, and its message."""

    code: str | None
    status: int | None
    message: str


BatchOutcome = Reply | BatchError


@dataclass(frozen=True, slots=True)
class BatchFile:
    """One upload: an OpenAI-style JSONL input file (``content``, its bytes exactly) of one model."""

    model: str
    content: bytes
    custom_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AnthropicBatch:
    """One Message Batches request body (``body``, its bytes exactly)."""

    body: bytes
    custom_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Spooled:
    """One batch's input written to disk (``path``: the OpenAI input file, or the Message Batches body), its model,
    its custom ids in order and its size in bytes."""

    path: Path
    model: str
    custom_ids: tuple[str, ...]
    size: int


# -- OpenAI-style -----------------------------------------------------------------------------------------------------


def openai_line(request: BatchRequest, *, cache_breakpoints: bool = False) -> bytes:
    """The request's line of a JSONL input file, newline included."""
    line = {"custom_id": request.custom_id, "method": "POST", "url": OPENAI_URL,
            "body": request.body(_OPENAI, cache_breakpoints)}
    return orjson.dumps(line) + b"\n"


def openai_files(requests: Iterable[BatchRequest], *, cache_breakpoints: bool = False,
                 max_lines: int = OPENAI_MAX_LINES, max_bytes: int = OPENAI_MAX_BYTES) -> list[BatchFile]:
    """``requests`` as input files of one model each (models in order of first appearance, requests in their
    order), each at most ``max_lines`` lines and ``max_bytes`` bytes. Raises ``ValueError`` for a custom_id
    given twice or a request whose line alone is over ``max_bytes``."""
    by_model: dict[str, list[tuple[str, bytes]]] = {}
    for request in _unique(requests):
        by_model.setdefault(request.model, []).append(
            (request.custom_id, openai_line(request, cache_breakpoints=cache_breakpoints)))
    return [BatchFile(model, b"".join(lines), ids)
            for model, entries in by_model.items()
            for ids, lines in _packed(entries, max_lines, max_bytes, overhead=0, separator=0)]


def spool_openai(requests: Iterable[BatchRequest], folder: Path, *, cache_breakpoints: bool = False,
                 max_lines: int = OPENAI_MAX_LINES, max_bytes: int = OPENAI_MAX_BYTES) -> list[Spooled]:
    """``requests`` written to input files in ``folder`` as they come (a new file when the model changes or a file
    is full), each file as :func:`openai_files` would make it. Raises ``ValueError`` as it does."""
    entries = ((r.model, r.custom_id, openai_line(r, cache_breakpoints=cache_breakpoints)) for r in _unique(requests))
    return _spool(entries, folder, max_lines, max_bytes, b"", b"", b"")


def read_openai_results(lines: Iterable[bytes | str]) -> dict[str, BatchOutcome]:
    """Each custom_id's outcome, from the lines of an output file and an error file (in any order, blank lines
    skipped): a :class:`Reply` for a 200 response, else a :class:`BatchError` (the line's ``error``, such as
    ``batch_expired``, or the response's status and error body). Raises ``ValueError`` for a line that is not
    JSON or has no custom_id, or a custom_id seen twice."""
    return _collect(iter_results("openai", lines))


def iter_results(api: str, lines: Iterable[bytes | str]) -> Iterator[tuple[str, BatchOutcome]]:
    """Each result line's custom id and outcome, one line at a time (``api``: "openai" for an output or error file,
    "anthropic" for a Message Batch's results). Raises ``ValueError`` for a line that is not JSON or has no
    custom_id."""
    outcome = _anthropic_outcome if api == "anthropic" else _openai_outcome
    return (outcome(data) for data in _records(lines))


def _openai_outcome(data: dict[str, Any]) -> tuple[str, BatchOutcome]:
    custom_id = data["custom_id"]
    error = data.get("error")
    if isinstance(error, dict):
        return custom_id, BatchError(_text(error.get("code")), None, str(error.get("message") or ""))
    response = data.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    if status == 200:
        return custom_id, _reply(_OPENAI, body)
    said = _OPENAI.error(status or 0, orjson.dumps(body)) if body is not None else None
    return custom_id, BatchError(said.code if said else None, status, said.text if said else "no response")


# -- Anthropic --------------------------------------------------------------------------------------------------------


def anthropic_entry(request: BatchRequest, *, cache_breakpoints: bool = False) -> dict[str, Any]:
    """The request as an entry of a Message Batches body. Raises ``ValueError`` for a custom_id Anthropic refuses."""
    if not ANTHROPIC_CUSTOM_ID.match(request.custom_id):
        raise ValueError(f"custom_id {request.custom_id!r} does not match {ANTHROPIC_CUSTOM_ID.pattern}")
    return {"custom_id": request.custom_id, "params": request.body(_ANTHROPIC, cache_breakpoints)}


def anthropic_batches(requests: Iterable[BatchRequest], *, cache_breakpoints: bool = False,
                      max_requests: int = ANTHROPIC_MAX_REQUESTS,
                      max_bytes: int = ANTHROPIC_MAX_BYTES) -> list[AnthropicBatch]:
    """``requests`` as Message Batches bodies (in their order; models may mix), each at most ``max_requests``
    requests and ``max_bytes`` bytes. Raises ``ValueError`` for a custom_id refused or given twice, or a request
    too large for a batch of its own."""
    entries = [(r.custom_id, orjson.dumps(anthropic_entry(r, cache_breakpoints=cache_breakpoints)))
               for r in _unique(requests)]
    overhead = len(_REQUESTS_OPEN) + len(_REQUESTS_CLOSE)
    return [AnthropicBatch(_REQUESTS_OPEN + b",".join(parts) + _REQUESTS_CLOSE, ids)
            for ids, parts in _packed(entries, max_requests, max_bytes, overhead=overhead, separator=1)]


def spool_anthropic(requests: Iterable[BatchRequest], folder: Path, *, cache_breakpoints: bool = False,
                    max_requests: int = ANTHROPIC_MAX_REQUESTS, max_bytes: int = ANTHROPIC_MAX_BYTES) -> list[Spooled]:
    """``requests`` written to Message Batches bodies in ``folder`` as they come, each as :func:`anthropic_batches`
    would make it (models may mix; a spooled body's model is its first request's). Raises ``ValueError`` as it
    does."""
    entries = ((r.model, r.custom_id, orjson.dumps(anthropic_entry(r, cache_breakpoints=cache_breakpoints)))
               for r in _unique(requests))
    return _spool(entries, folder, max_requests, max_bytes, _REQUESTS_OPEN, b",", _REQUESTS_CLOSE, one_model=False)


def read_anthropic_results(lines: Iterable[bytes | str]) -> dict[str, BatchOutcome]:
    """Each custom_id's outcome, from the lines of a batch's results (blank lines skipped): a :class:`Reply` for
    ``succeeded``, else a :class:`BatchError` whose code is the error's type (``errored``) or the result's type
    (``canceled``, ``expired``). Raises ``ValueError`` for a line that is not JSON or has no custom_id, or a
    custom_id seen twice."""
    return _collect(iter_results("anthropic", lines))


def _anthropic_outcome(data: dict[str, Any]) -> tuple[str, BatchOutcome]:
    custom_id = data["custom_id"]
    result = data.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        return custom_id, _reply(_ANTHROPIC, result.get("message"))
    if kind == "errored":
        said = _ANTHROPIC.error(0, orjson.dumps(result.get("error")))
        return custom_id, BatchError(said.code, None, said.text)
    return custom_id, BatchError(_text(kind), None, f"request {kind or 'without a result'}")


# -- shared -----------------------------------------------------------------------------------------------------------


def _unique(requests: Iterable[BatchRequest]) -> Iterator[BatchRequest]:
    """``requests``, refusing a custom_id seen before (results are matched by it)."""
    seen: set[str] = set()
    for request in requests:
        if request.custom_id in seen:
            raise ValueError(f"custom_id {request.custom_id!r} appears twice")
        seen.add(request.custom_id)
        yield request


def _packed(entries: list[tuple[str, bytes]], max_count: int, max_bytes: int, *, overhead: int,
            separator: int) -> Iterator[tuple[tuple[str, ...], list[bytes]]]:
    """``entries`` (id, bytes) in order, cut into runs of at most ``max_count`` whose bytes, plus ``overhead``
    once and ``separator`` between two entries, come to at most ``max_bytes``."""
    ids: list[str] = []
    parts: list[bytes] = []
    size = overhead
    for custom_id, part in entries:
        if overhead + len(part) > max_bytes:
            raise ValueError(f"request {custom_id!r} alone is {len(part)} bytes, over the {max_bytes} a batch may hold")
        grown = size + len(part) + (separator if parts else 0)
        if parts and (len(parts) == max_count or grown > max_bytes):
            yield tuple(ids), parts
            ids, parts, size = [], [], overhead
            grown = size + len(part)
        ids.append(custom_id)
        parts.append(part)
        size = grown
    if parts:
        yield tuple(ids), parts


def _spool(entries: Iterable[tuple[str, str, bytes]], folder: Path, max_count: int, max_bytes: int, head: bytes,
           separator: bytes, tail: bytes, *, one_model: bool = True) -> list[Spooled]:
    """(model, custom id, bytes) entries written to files in ``folder``, ``head`` first and ``tail`` last in each,
    ``separator`` between two entries; a new file when one holds ``max_count`` entries, when the next entry would
    take it over ``max_bytes``, or (``one_model``) when the model changes."""
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Spooled] = []
    made: list[Path] = []
    handle, path, model, ids, size = None, Path(), "", [], 0
    overhead = len(head) + len(tail)

    def close() -> None:
        assert handle is not None
        handle.write(tail)
        handle.close()
        out.append(Spooled(path, model, tuple(ids), size + len(tail)))

    try:
        for entry_model, custom_id, part in entries:
            if overhead + len(part) > max_bytes:
                raise ValueError(f"request {custom_id!r} alone is {len(part)} bytes, over the {max_bytes} a batch "
                                 "may hold")
            grown = size + len(part) + (len(separator) if ids else 0)
            if handle is not None and (len(ids) == max_count or grown + len(tail) > max_bytes
                                       or (one_model and entry_model != model)):
                close()
                handle = None
            if handle is None:
                path = folder / f"in-{uuid.uuid4().hex[:16]}.json"
                made.append(path)
                handle, model, ids, size = open(path, "wb"), entry_model, [], len(head)
                handle.write(head)
            if ids:
                handle.write(separator)
                size += len(separator)
            handle.write(part)
            size += len(part)
            ids.append(custom_id)
        if handle is not None:
            close()
            handle = None
    except BaseException:
        if handle is not None:
            handle.close()
        for made_path in made:
            made_path.unlink(missing_ok=True)
        raise
    return out


def _records(lines: Iterable[bytes | str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"result line {number} is not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
            raise ValueError(f"result line {number} has no custom_id")
        yield data


def _collect(outcomes: Iterable[tuple[str, BatchOutcome]]) -> dict[str, BatchOutcome]:
    out: dict[str, BatchOutcome] = {}
    for custom_id, outcome in outcomes:
        if custom_id in out:
            raise ValueError(f"custom_id {custom_id!r} has two results")
        out[custom_id] = outcome
    return out


def _reply(wire: OpenAIWire | AnthropicWire, body: Any) -> BatchOutcome:
    """The reply in a succeeded result's body, or the error saying it could not be read."""
    try:
        return wire.reply_of(body)
    except MalformedReply as exc:
        return BatchError("malformed_result", None, str(exc))


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None
