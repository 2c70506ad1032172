"""The providers' batch APIs over HTTP: create a batch, poll it, read its results, find one we may have created.

Two classes of one shape, :class:`OpenAIBatches` (``/files`` and ``/batches``, also served by Azure OpenAI, Groq,
Together, vLLM...) and :class:`AnthropicBatches` (``/messages/batches``). The request bodies and result lines are
:mod:`council.transport.batch_formats`'; this module only moves them, from disk and to disk: a batch is uploaded
from the file it was spooled to and its results are downloaded to a file, a chunk at a time. aiohttp's errors and
the providers' error bodies stop here and leave as the project's errors:

- :class:`ProviderUnavailable`: the key is refused (401, 403), the base URL is wrong, or a batch failed the
  provider's validation (the message names why): the run stops.
- :class:`QueueFull`: the provider's queue for the model is full (OpenAI: a batch ``failed`` with
  ``token_limit_exceeded``; Anthropic: 429 on create). Nothing was enqueued: send it again later.
- :class:`BatchGone`: the provider does not know the batch (404), e.g. an embedded provider restarted since.
- :class:`ProviderError`: anything else, after the retries a poll gets. A create is never retried here: whether
  the provider made the batch is then unknown, and the caller looks for it (:meth:`find`) before sending again.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import aiohttp
import orjson

from council.core.errors import ProviderError, ProviderUnavailable
from council.protocol.config import Endpoint
from council.transport.batch_formats import (
    ANTHROPIC_MAX_REQUESTS, OPENAI_MAX_LINES, BatchOutcome, BatchRequest, Spooled, read_anthropic_results,
    read_openai_results, spool_anthropic, spool_openai,
)
from council.transport.client import RETRYABLE_STATUS, full_jitter, one_line, safe_url
from council.transport.wire import wire_for

METADATA_KEY = "council_batch"  # an OpenAI batch's metadata field holding our id for it
OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
QUEUE_CODES = frozenset({"token_limit_exceeded", "request_limit_exceeded"})
TRANSIENT_CODES = frozenset({"server_error", "internal_error"})
CLOCK_SKEW_S = 30.0  # how far the provider's clock may be behind ours when a batch is matched by its creation time


class QueueFull(ProviderError):
    """The provider's batch queue for the model has no room for this batch now; nothing was enqueued."""


class BatchGone(ProviderError):
    """The provider does not know the batch (404)."""


class Unsure(ProviderError):
    """A create whose answer never came (timeout, reset, 5xx): the batch may or may not exist."""


Packed = Spooled  # one batch's worth of requests as the provider takes it, on disk (council.transport.batch_formats)


@dataclass(slots=True)
class Polled:
    """A batch as one poll saw it. ``counts`` has ``total``, ``succeeded``, ``errored`` and, once ended,
    ``expired`` and ``canceled`` (either API's counts in these words)."""

    status: str
    ended: bool
    counts: dict[str, int]
    created_at: float | None = None
    expires_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[tuple[str | None, str]] = field(default_factory=list)  # OpenAI: a failed batch's (code, message)
    metadata: dict[str, Any] = field(default_factory=dict)


class _Http:
    """One session for a vendor's batch calls, with the wire format's auth headers and the run's timeouts."""

    def __init__(self, endpoint: Endpoint, api: str, vendor: str, seed: int = 0) -> None:
        self.endpoint = endpoint
        self.base = endpoint.base_url
        self.vendor = vendor
        self.wire = wire_for(api)
        self._session: aiohttp.ClientSession | None = None
        self._secret = ""
        self._rng = random.Random(seed)

    @property
    def where(self) -> str:
        return f"{self.vendor}: {safe_url(self.base)}"

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            t = self.endpoint.timeouts
            self._secret = self.endpoint.api_key()
            headers = {k: v for k, v in self.wire.headers(self._secret).items() if k != "Content-Type"}
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=max(t.total_s, 600.0), sock_connect=t.connect_s,
                                              sock_read=max(t.read_s, 300.0)),
                headers=headers)
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def call(self, method: str, path: str, *, retry: bool, data: Any = None, sink: Path | None = None,
                   **kwargs: Any) -> tuple[int, bytes]:
        """``method path``'s status and body; transport faults and retryable statuses are retried when
        ``retry`` (a poll, a read), else raised as :class:`Unsure`. 401 and 403 are :class:`ProviderUnavailable`.
        ``data`` may be a function making the body afresh for each attempt (a file to stream); with ``sink``, a 200
        body is written there a chunk at a time (the body returned is then empty)."""
        policy = self.endpoint.retry
        url = path if path.startswith("http") else self.base + path
        for attempt in range(1, policy.max_attempts + 1):
            opened: list[IO[bytes]] = []
            try:
                body_data = data(opened) if callable(data) else data
                async with self._open().request(method, url, data=body_data, **kwargs) as resp:
                    status = resp.status
                    if sink is not None and status == 200:
                        await _to_file(resp, sink)
                        body = b""
                    else:
                        body = await resp.read()
            except (asyncio.TimeoutError, aiohttp.ClientError, OSError) as exc:
                if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, ConnectionRefusedError):
                    raise ProviderUnavailable(f"{self.where}: cannot connect (connection refused)") from None
                status, body = None, f"{type(exc).__name__}".encode()
            finally:
                for handle in opened:
                    handle.close()
            if status in (401, 403):
                raise ProviderUnavailable(f"{self.where}: HTTP {status} for {path} ({self.said(status, body)})",
                                          status=status)
            if status is not None and (status not in RETRYABLE_STATUS or (status == 429 and not retry)):
                return status, body  # a 429 to a create is an answer: nothing was made
            if not retry:
                raise Unsure(f"{self.where}: {method} {path}: {self.said(status, body)}", status=status,
                             attempts=attempt)
            if attempt < policy.max_attempts:
                await asyncio.sleep(full_jitter(policy, self._rng, attempt + 1))  # a first retry waits up to 2x base
        raise ProviderError(f"{self.where}: {method} {path}: {self.said(status, body)} after {policy.max_attempts} "
                            "attempts", status=status, attempts=policy.max_attempts)

    async def listed(self, path: str, cursor: str, since: float,
                     created: Callable[[dict[str, Any]], float | None]) -> AsyncIterator[dict[str, Any]]:
        """The batches ``path`` lists, newest first, page by page (``cursor``: the API's name for "after this id"),
        until one created a minute before ``since``."""
        after = None
        while True:
            query = {"limit": "100", **({cursor: after} if after else {})}
            data = self.json(*await self.call("GET", path, retry=True, params=query), f"list {path}")
            listed = data.get("data") or []
            for batch in listed:
                yield batch
            if not data.get("has_more") or not listed or (created(listed[-1]) or 0) < since - 60:
                return
            after = listed[-1]["id"]

    def said(self, status: int | None, body: bytes) -> str:
        text = self.wire.error(status or 0, body).text if status is not None else body.decode(errors="replace")
        return one_line(f"HTTP {status}: {text}" if status is not None else text, self._secret)

    def json(self, status: int, body: bytes, what: str) -> dict[str, Any]:
        """A 200 body, decoded; a 404 is :class:`BatchGone`, any other status a :class:`ProviderError`."""
        if status == 404:
            raise BatchGone(f"{self.where}: {what}: {self.said(status, body)}", status=404)
        if status != 200:
            raise ProviderError(f"{self.where}: {what}: {self.said(status, body)}", status=status)
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ProviderError(f"{self.where}: {what}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise ProviderError(f"{self.where}: {what}: the answer is not a JSON object")
        return data


class _Batches:
    """What both APIs' clients share: the session, the cache breakpoints of the bodies, the requests per batch
    (``max_requests``, or the API's own limit ``most``)."""

    api: str
    most: int

    def __init__(self, endpoint: Endpoint, vendor: str, *, cache_breakpoints: bool = False, max_requests: int = 0,
                 seed: int = 0) -> None:
        self.http = _Http(endpoint, self.api, vendor, seed)
        self.cache_breakpoints = cache_breakpoints
        self.max_requests = max_requests or self.most

    async def close(self) -> None:
        await self.http.close()


class OpenAIBatches(_Batches):
    """OpenAI's Batch API: an input file uploaded (``purpose=batch``), a batch created on it (``completion_window``
    24h, our id in its ``metadata``), polled, and its output and error files read."""

    api = "openai"
    most = OPENAI_MAX_LINES

    def spool(self, requests: Iterable[BatchRequest], folder: Path) -> list[Packed]:
        """``requests`` written to input files in ``folder`` (one model each), as many as the API's limits need."""
        return spool_openai(requests, folder, cache_breakpoints=self.cache_breakpoints, max_lines=self.max_requests)

    async def create(self, packed: Packed, local: str) -> tuple[str, str | None, float | None]:
        """The batch id, input file id and creation time of a new batch of ``packed`` (uploaded from its file)."""
        def form(opened: list[IO[bytes]]) -> aiohttp.FormData:
            opened.append(open(packed.path, "rb"))
            made = aiohttp.FormData()
            made.add_field("purpose", "batch")
            made.add_field("file", opened[-1], filename=f"{local}.jsonl", content_type="application/jsonl")
            return made

        status, body = await self.http.call("POST", "/files", retry=True, data=form)  # an upload bills nothing
        file_id = self.http.json(status, body, "upload")["id"]
        status, body = await self.http.call("POST", "/batches", retry=False, data=orjson.dumps({
            "input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "metadata": {METADATA_KEY: local}}), headers={"Content-Type": "application/json"})
        if status == 400:
            raise ProviderUnavailable(f"{self.http.where}: batch refused: {self.http.said(status, body)}", status=400)
        data = self.http.json(status, body, "create batch")
        return data["id"], file_id, data.get("created_at")

    async def poll(self, batch_id: str) -> Polled:
        return self._polled(self.http.json(*await self.http.call("GET", f"/batches/{batch_id}", retry=True),
                                           f"batch {batch_id}"))

    @staticmethod
    def _polled(data: dict[str, Any]) -> Polled:
        counts = data.get("request_counts") or {}
        errors = [(e.get("code"), str(e.get("message") or "") + (f" (line {e['line']})" if e.get("line") else ""))
                  for e in ((data.get("errors") or {}).get("data") or [])]
        return Polled(status=data["status"], ended=data["status"] in OPENAI_ENDED,
                      counts={"total": int(counts.get("total") or 0), "succeeded": int(counts.get("completed") or 0),
                              "errored": int(counts.get("failed") or 0)},
                      created_at=data.get("created_at"), expires_at=data.get("expires_at"),
                      output_file_id=data.get("output_file_id"), error_file_id=data.get("error_file_id"),
                      errors=errors, metadata=data.get("metadata") or {})

    async def results(self, batch_id: str, polled: Polled) -> dict[str, BatchOutcome]:
        """Every answered or failed request's outcome, from the output and the error file (read in memory: a small
        batch's; the sender reads a run's with :meth:`download`)."""
        lines: list[bytes] = []
        for file_id in (polled.output_file_id, polled.error_file_id):
            if file_id:
                status, body = await self.http.call("GET", f"/files/{file_id}/content", retry=True)
                if status != 200:
                    self.http.json(status, body, f"file {file_id} of batch {batch_id}")
                lines += body.splitlines()
        return _read(read_openai_results, lines, self.http.where, batch_id)

    async def download(self, batch_id: str, polled: Polled, dest: Path) -> None:
        """The output file and then the error file of the ended batch, written to ``dest`` (JSON lines)."""
        parts = []
        for n, file_id in enumerate(f for f in (polled.output_file_id, polled.error_file_id) if f):
            part = dest.with_name(f"{dest.name}.{n}")
            status, body = await self.http.call("GET", f"/files/{file_id}/content", retry=True, sink=part)
            if status != 200:
                self.http.json(status, body, f"file {file_id} of batch {batch_id}")
            parts.append(part)
        _join(parts, dest)

    async def find(self, local: str, since: float, count: int, known: frozenset[str] = frozenset()) -> str | None:
        """The id of a batch created at or after ``since`` whose metadata names ``local``, if any."""
        async for batch in self.http.listed("/batches", "after", since, lambda b: b.get("created_at")):
            if (batch.get("metadata") or {}).get(METADATA_KEY) == local:
                return batch["id"]
        return None


class AnthropicBatches(_Batches):
    """Anthropic's Message Batches: requests inline (``custom_id`` + ``params``), polled, results read as JSONL."""

    api = "anthropic"
    most = ANTHROPIC_MAX_REQUESTS

    def spool(self, requests: Iterable[BatchRequest], folder: Path) -> list[Packed]:
        """``requests`` written to Message Batches bodies in ``folder``, as many as the API's limits need."""
        return spool_anthropic(requests, folder, cache_breakpoints=self.cache_breakpoints,
                               max_requests=self.max_requests)

    async def create(self, packed: Packed, local: str) -> tuple[str, str | None, float | None]:
        def body(opened: list[IO[bytes]]) -> IO[bytes]:
            opened.append(open(packed.path, "rb"))
            return opened[-1]

        status, body = await self.http.call("POST", "/messages/batches", retry=False, data=body,
                                            headers={"Content-Type": "application/json"})
        if status == 429:
            raise QueueFull(f"{self.http.where}: batch queue full: {self.http.said(status, body)}", status=429)
        if status in (400, 413):
            raise ProviderUnavailable(f"{self.http.where}: batch refused: {self.http.said(status, body)}",
                                      status=status)
        data = self.http.json(status, body, "create message batch")
        return data["id"], None, _unix(data.get("created_at"))

    async def poll(self, batch_id: str) -> Polled:
        data = self.http.json(*await self.http.call("GET", f"/messages/batches/{batch_id}", retry=True),
                              f"message batch {batch_id}")
        return self._polled(data)

    @staticmethod
    def _polled(data: dict[str, Any]) -> Polled:
        counts = data.get("request_counts") or {}
        got = {k: int(counts.get(k) or 0) for k in ("processing", "succeeded", "errored", "canceled", "expired")}
        return Polled(status=data["processing_status"], ended=data["processing_status"] == "ended",
                      counts={"total": sum(got.values()), **{k: v for k, v in got.items() if k != "processing"}},
                      created_at=_unix(data.get("created_at")), expires_at=_unix(data.get("expires_at")))

    async def results(self, batch_id: str, polled: Polled) -> dict[str, BatchOutcome]:
        status, body = await self.http.call("GET", f"/messages/batches/{batch_id}/results", retry=True)
        if status != 200:
            self.http.json(status, body, f"results of message batch {batch_id}")
        return _read(read_anthropic_results, body.splitlines(), self.http.where, batch_id)

    async def download(self, batch_id: str, polled: Polled, dest: Path) -> None:
        """The ended batch's results, written to ``dest`` (JSON lines)."""
        part = dest.with_name(f"{dest.name}.0")
        status, body = await self.http.call("GET", f"/messages/batches/{batch_id}/results", retry=True, sink=part)
        if status != 200:
            self.http.json(status, body, f"results of message batch {batch_id}")
        _join([part], dest)

    async def find(self, local: str, since: float, count: int, known: frozenset[str] = frozenset()) -> str | None:
        """A batch of ``count`` requests created at or after ``since`` and not ``known`` (the run's other batches).
        Message Batches carry no metadata: the newest such batch is taken; its results are matched by custom id, so
        a wrong guess (another client's batch of the same size, made at the same time) costs a wait, never a wrong
        vote."""
        created = lambda b: _unix(b.get("created_at"))  # noqa: E731
        async for batch in self.http.listed("/messages/batches", "after_id", since, created):
            if (batch["id"] not in known and (created(batch) or 0) >= since - CLOCK_SKEW_S
                    and self._polled(batch).counts["total"] == count):
                return batch["id"]
        return None


BatchApi = OpenAIBatches | AnthropicBatches


def batch_api(endpoint: Endpoint, api: str, vendor: str, *, cache_breakpoints: bool = False,
              max_requests: int = 0, seed: int = 0) -> BatchApi:
    cls = AnthropicBatches if api == "anthropic" else OpenAIBatches
    return cls(endpoint, vendor, cache_breakpoints=cache_breakpoints, max_requests=max_requests, seed=seed)


async def _to_file(resp: aiohttp.ClientResponse, path: Path) -> None:
    """A response body written to ``path`` a chunk at a time."""
    with open(path, "wb") as out:
        async for chunk in resp.content.iter_chunked(1 << 16):
            out.write(chunk)


def _join(parts: list[Path], dest: Path) -> None:
    """``parts`` one after the other in ``dest`` (a line break between two, where one lacks its last), then gone."""
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                last = b"\n"
                while chunk := handle.read(1 << 20):
                    out.write(chunk)
                    last = chunk[-1:]
            if last != b"\n":
                out.write(b"\n")
            part.unlink()
    tmp.replace(dest)


def _read(reader: Any, lines: list[bytes], where: str, batch_id: str) -> dict[str, BatchOutcome]:
    try:
        return reader(lines)
    except ValueError as exc:
        raise ProviderError(f"{where}: results of batch {batch_id}: {exc}") from None


def _unix(value: Any) -> float | None:
    """An RFC 3339 time (Anthropic) or a Unix time (OpenAI) as Unix seconds."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
