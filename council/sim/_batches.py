"""Both providers' batch APIs on the embedded provider, in their documented shapes: OpenAI's routes and the store
and clock both share.

OpenAI (``Authorization: Bearer``): ``POST /v1/files`` (multipart, ``purpose=batch``, at most 200 MB), ``GET
/v1/files/{id}`` and ``/v1/files/{id}/content``; ``POST /v1/batches`` (``input_file_id``, ``endpoint``
``/v1/chat/completions``, ``completion_window`` ``24h``, ``metadata``), ``GET /v1/batches/{id}``, ``POST
/v1/batches/{id}/cancel``, ``GET /v1/batches`` (``limit``, ``after``). A batch is created ``validating`` and its
file is checked at once: every line a JSON object with a unique ``custom_id``, ``method`` POST, ``url`` the
batch's endpoint, a ``body`` with a ``model``, one model for the whole file, at most 50,000 lines. A file that
breaks a rule makes the batch ``failed``, with one error per broken line (``errors.data[{code, message, line,
param}]``). Then ``in_progress`` until it ends ``completed``, ``expired`` or (``cancelling`` first)
``cancelled``; its output file holds the answered requests (``{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error": null}``), its error file the requests answered with an error status and those
never answered (``"response": null, "error": {"code": "batch_expired" | "batch_cancelled", "message"}``).
``request_counts.completed`` and ``failed`` count the answered requests (200 / error status) as they are
answered; the expired and cancelled ones are in neither.

Anthropic's Message Batches API (``/v1/messages/batches``) is ``council.sim._message_batches``, on the same store.

Time: a batch ends ``SimConfig.batch_completion_s`` after its creation, on the provider's clock; in between its
requests are answered one by one, evenly spread, in a seeded order that is not the request order (the order of
the result files). Nothing runs in the background: the batches are brought up to now whenever a batch route or
the stats are read. Each request is answered by the code of a synchronous one (``council.sim._serving.receive``
and ``bill``: same content for the same body, the same counters), but through no per-minute quota, no 429 storm
and no transport fault, and is billed once, when its result is produced.

A vendor with no batch API (DeepSeek: its API reference has no batch endpoint, ``NO_BATCH_API``) has its models
refused by either batch API, whatever host the batch is created on, as a gateway that forwards batches to the
vendor's own API would be: an OpenAI batch of such a model is ``failed`` with an error per line
(``model_not_supported``), a Message Batches request of one ``errored``.

Faults (``VendorBehaviour``, of the vendor of the batch's first request, all off by default): the batch expires
with a fraction done (``batch_expire_rate``, ``batch_expire_done``), a request fails with a server error
(``batch_error_rate``, drawn per request with that request's vendor's rate), a well-formed batch is refused
(``batch_fail_rate``), and a queue of ``batch_queue_tokens`` enqueued prompt tokens across the vendor's
unfinished batches (OpenAI: ``failed`` with ``token_limit_exceeded``; Anthropic: 429 ``rate_limit_error``).

A create may answer ``SimConfig.batch_reply_delay_s`` after the batch is made (a slow answer: a client that dies
meanwhile never hears of a batch that exists).

Both APIs are served on the gateway and on their provider's own host (``/api.openai.com/v1/...``,
``/api.anthropic.com/v1/messages/batches...``, and OpenAI's on the hosts whose documentation says they take its
files and batches: Gemini's OpenAI-compatible endpoint, DashScope's compatible mode; ``council.sim._hosts``), one
store for all: a batch's requests are answered with the face of the host it was created on (native ids only
there, and on Anthropic's API everywhere).

Batches and files live in this process's memory: a provider restart loses them all, which a real provider
never does (a client that resumes after restarting the provider finds its batches unknown, 404).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from council.sim._faces import CHAT, Face
from council.sim._messages import read_params
from council.sim._serving import PREFIX, STATE, bill, face_of, receive
from council.sim._state import Work, _State
from council.sim._wire import Parsed, _authorized, _BadBody, _error, _est_tokens, _json, _UNAUTHORIZED, read_body

OPENAI_MAX_LINES = 50_000
OPENAI_MAX_BYTES = 200 * 1024 * 1024
NO_BATCH_API = {"deepseek": "https://api-docs.deepseek.com/"}  # vendor -> the page that shows it has none
# a host whose batch API takes some of its models only -> those (native ids), as its page lists them
HOST_BATCH_MODELS = {"/dashscope-intl.aliyuncs.com": ("qwen-max", "qwen-plus", "qwen-flash", "qwen-turbo")}
_ENDPOINT = "/v1/chat/completions"
_DAY_S = 24 * 3600
_MAX_LISTED_ERRORS = 100


@dataclass(slots=True)
class _Batch:
    """One batch of either API: its requests, the order they are answered in, and what is done so far."""

    id: str
    api: str  # "openai" | "anthropic"
    custom_ids: list[str]
    bodies: list[Any]  # chat bodies (OpenAI) or params (Anthropic)
    created: float  # on the provider's clock
    rng: random.Random
    face: Face = CHAT  # the face its requests are answered with (the host it was created on)
    order: list[int] = field(default_factory=list)
    queued: dict[str, int] = field(default_factory=dict)  # vendor -> prompt tokens enqueued
    expire_after: int | None = None  # the expiry fault: requests done before the batch expires
    refused: bool = False  # the refusal fault (Anthropic: every request errored)
    done: int = 0
    cancel_at: float | None = None
    end: str | None = None  # "completed" | "expired" | "cancelled" | "failed"
    ended: float | None = None
    answered: list[dict[str, Any]] = field(default_factory=list)  # result lines, in the order produced
    failed_answers: int = 0  # answered with an error status
    # OpenAI only
    input_file_id: str = ""
    metadata: dict[str, str] | None = None
    model: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None


class BatchStore:
    """Every file and batch of the provider (in memory), and the clock that moves them on."""

    def __init__(self, st: _State) -> None:
        self.st = st
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, _Batch] = {}
        self.ids = itertools.count(1)
        self.wall0, self.clock0 = time.time(), st.clock()

    def epoch(self, t: float) -> float:
        """A time of the provider's clock as Unix time."""
        return self.wall0 + (t - self.clock0)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids):012x}"

    def add_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        obj = {"id": self.new_id("file-sim"), "object": "file", "bytes": len(data),
               "created_at": int(self.epoch(self.st.clock())), "filename": filename, "purpose": purpose,
               "status": "processed", "status_details": None, "expires_at": None}
        self.files[obj["id"]] = (obj, data)
        return obj

    def queued(self, vendor: str) -> int:
        return sum(b.queued.get(vendor, 0) for b in self.batches.values() if b.end is None)

    def catch_up(self) -> None:
        now = self.st.clock()
        for batch in self.batches.values():
            self.advance(batch, now)

    def advance(self, b: _Batch, now: float) -> None:
        """Answer the requests of ``b`` due by ``now`` and end it when its time has come."""
        if b.end is not None:
            return
        if b.cancel_at is not None:  # cancelling lasts until the batch is next looked at
            self.finish(b, "cancelled", now)
            return
        n, span, elapsed = len(b.bodies), self.st.config.batch_completion_s, now - b.created
        due = n if elapsed >= span else int(n * elapsed / span)
        if b.expire_after is not None:
            due = min(due, b.expire_after)
        while b.done < due:
            self._produce(b, b.order[b.done])
            b.done += 1
        if elapsed >= span:
            self.finish(b, "completed" if b.done == n else "expired", b.created + span)

    def cancel(self, b: _Batch) -> None:
        now = self.st.clock()
        self.advance(b, now)
        if b.end is None:
            b.cancel_at = now

    def _produce(self, b: _Batch, i: int) -> None:
        custom_id = b.custom_ids[i]
        status, body = self._answer(b, custom_id, b.bodies[i], b.face)
        if status != 200:
            b.failed_answers += 1
        if b.api == "anthropic":
            result = ({"type": "succeeded", "message": body} if status == 200
                      else {"type": "errored", "error": body})
            b.answered.append({"custom_id": custom_id, "result": result})
        else:
            b.answered.append({"id": self.new_id("batch_req_sim"), "custom_id": custom_id, "response": {
                "status_code": status, "request_id": self.new_id("req_sim"), "body": body}, "error": None})

    def _answer(self, b: _Batch, custom_id: str, raw: Any, face: Face) -> tuple[int, dict[str, Any]]:
        """One request's status and body, by the code of a synchronous request; billed here when answered."""
        try:
            parsed: Parsed = read_body(raw) if b.api == "openai" else read_params(raw)
        except _BadBody as exc:
            status, body, _ = face.bad_request(str(exc), exc.param)
            return status, body
        work = receive(self.st, parsed, face)
        if not isinstance(work, Work):
            return work[0], work[1]
        stats = work.model.stats
        stats.batch_requests += 1
        rate = work.model.behaviour.batch_error_rate
        if b.refused or (rate and b.rng.random() < rate):
            stats.errors += 1
            status, body, _ = face.server_error(None)
            return status, body
        reply = face.reply(self.st, work, bill(self.st, work))
        stats.batch_billed += 1
        key = (work.model_id, custom_id)
        if key in self.st.batch_billed_ids:
            stats.batch_billed_twice += 1
        self.st.batch_billed_ids.add(key)
        return 200, reply

    def finish(self, b: _Batch, end: str, at: float) -> None:
        """End ``b`` as ``end`` at ``at``: the requests left are expired or cancelled, OpenAI's result files
        written."""
        b.end, b.ended = end, at
        left = [b.custom_ids[i] for i in b.order[b.done:]]
        if b.api == "anthropic":
            kind = {"expired": "expired", "cancelled": "canceled"}.get(end)
            b.answered += [{"custom_id": cid, "result": {"type": kind}} for cid in left] if kind else []
            return
        if end == "failed":
            return
        code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(end)
        never = [{"id": self.new_id("batch_req_sim"), "custom_id": cid, "response": None,
                  "error": {"code": code, "message": f"This request could not be executed before the batch was {end}."}}
                 for cid in left] if code else []
        good = [line for line in b.answered if line["response"]["status_code"] == 200]
        bad = [line for line in b.answered if line["response"]["status_code"] != 200] + never
        if good:
            b.output_file_id = self.add_file(_jsonl(good), f"{b.id}_output.jsonl", "batch_output")["id"]
        if bad:
            b.error_file_id = self.add_file(_jsonl(bad), f"{b.id}_error.jsonl", "batch_output")["id"]

    def new_batch(self, api: str, prefix: str, custom_ids: list[str], bodies: list[Any],
                  read: Callable[[Any], Parsed]) -> _Batch:
        """A batch created now: its answer order, what it enqueues, and its faults drawn (the batch's own
        stream, so the synchronous requests' draws are left alone)."""
        bid = self.new_id(prefix)
        rng = random.Random(f"sim-batch:{self.st.config.seed}:{bid}")
        b = _Batch(bid, api, custom_ids, bodies, self.st.clock(), rng)
        b.order = list(range(len(bodies)))
        b.rng.shuffle(b.order)
        vendors = []
        for raw in bodies:
            try:
                parsed = read(raw)
            except _BadBody:
                continue
            model, messages = parsed.model, parsed.messages
            vendor = self.st.world.vendor(model)
            if vendor is not None:
                vendors.append(vendor)
                b.queued[vendor] = b.queued.get(vendor, 0) + _est_tokens(sum(len(c) for _, c in messages))
        behaviour = self.st.config.behaviour(vendors[0]) if vendors else self.st.config.default
        if behaviour.batch_expire_rate and b.rng.random() < behaviour.batch_expire_rate:
            b.expire_after = int(len(bodies) * behaviour.batch_expire_done)
        if behaviour.batch_fail_rate and b.rng.random() < behaviour.batch_fail_rate:
            b.refused = True
        return b

    def over_queue(self, b: _Batch) -> str | None:
        """The vendor whose batch queue ``b`` would overflow, if any."""
        for vendor, tokens in b.queued.items():
            limit = self.st.config.behaviour(vendor).batch_queue_tokens
            if limit and self.queued(vendor) + tokens > limit:
                return vendor
        return None


BATCHES: web.AppKey[BatchStore] = web.AppKey("council_sim_batches", BatchStore)


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


async def _read_capped(read: Callable[[int], Awaitable[bytes]], cap: int) -> bytes | None:
    """All that ``read`` (of a request body or a multipart part) gives, or None when it is more than ``cap``
    bytes. Read past aiohttp's ``client_max_size`` (32 MB), which bounds the chat requests only."""
    chunks, size = [], 0
    while True:
        chunk = await read(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)


def _page(items: list[Any], limit: int, after: str | None, before: str | None,
          key: Callable[[Any], str]) -> tuple[list[Any], bool]:
    """The page of ``items`` (newest first) after the id ``after`` or before the id ``before``, and whether more
    follow."""
    ids = [key(x) for x in items]
    if after in ids:
        items = items[ids.index(after) + 1:]
    elif before in ids:
        head = items[:ids.index(before)]
        return head[-limit:], len(head) > limit
    return items[:limit], len(items) > limit


def _limit(request: web.Request, most: int) -> int | None:
    try:
        limit = int(request.query.get("limit", "20"))
    except ValueError:
        return None
    return limit if 1 <= limit <= most else None


def _openai_store(request: web.Request) -> BatchStore | web.Response:
    """The provider's files and batches, brought up to now, or the refusal of a request without a key."""
    if not _authorized(request):
        return _error(*_UNAUTHORIZED)
    store = request.config_dict[BATCHES]
    store.catch_up()
    return store


# ---- OpenAI: files and batches ----------------------------------------------------------------------------


def _openai_view(store: BatchStore, b: _Batch, status: str | None = None) -> dict[str, Any]:
    """``b`` as an ``openai.types.Batch``; ``status`` overrides (a batch is ``validating`` when created)."""
    at = lambda t: int(store.epoch(t)) if t is not None else None  # noqa: E731
    failed = b.end == "failed"
    if status is None:
        status = b.end or ("cancelling" if b.cancel_at is not None else "in_progress")
    ended = b.ended if status == b.end else None
    return {
        "id": b.id, "object": "batch", "endpoint": _ENDPOINT, "model": b.model,
        "errors": {"object": "list", "data": b.errors} if b.errors else None,
        "input_file_id": b.input_file_id, "completion_window": "24h", "status": status,
        "output_file_id": b.output_file_id if ended is not None else None,
        "error_file_id": b.error_file_id if ended is not None else None,
        "created_at": at(b.created), "in_progress_at": None if failed else at(b.created),
        "expires_at": at(b.created + _DAY_S),
        "finalizing_at": at(ended) if status == "completed" else None,
        "completed_at": at(ended) if status == "completed" else None,
        "failed_at": at(ended) if status == "failed" else None,
        "expired_at": at(ended) if status == "expired" else None,
        "cancelling_at": at(b.cancel_at), "cancelled_at": at(ended) if status == "cancelled" else None,
        "request_counts": {"total": len(b.bodies), "completed": len(b.answered) - b.failed_answers,
                           "failed": b.failed_answers},
        "metadata": b.metadata,
    }


def _line_error(code: str, message: str, line: int | None, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "line": line, "param": param}


def _check_lines(data: bytes) -> tuple[list[str], list[Any], str | None, list[dict[str, Any]]]:
    """The custom ids, bodies and model of an input file, and every rule its lines break (lines from 1)."""
    custom_ids: list[str] = []
    bodies: list[Any] = []
    models: set[str] = set()
    errors: list[dict[str, Any]] = []
    lines = [line for line in data.splitlines() if line.strip()]
    if not lines:
        errors.append(_line_error("empty_file", "The batch input file is empty.", None))
    if len(lines) > OPENAI_MAX_LINES:
        errors.append(_line_error("too_many_requests", f"The batch input file holds {len(lines)} requests; at "
                                  f"most {OPENAI_MAX_LINES} are allowed.", None))
    seen: set[str] = set()
    for n, raw in enumerate(lines, 1):
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            line = None
        if not isinstance(line, dict):
            errors.append(_line_error("invalid_json_line", "This line is not a JSON object.", n))
            continue
        cid, body = line.get("custom_id"), line.get("body")
        if not isinstance(cid, str) or not cid:
            errors.append(_line_error("missing_required_parameter", "Missing custom_id.", n, "custom_id"))
        elif cid in seen:
            errors.append(_line_error("duplicate_custom_id", f"The custom_id {cid!r} is used by an earlier line.",
                                      n, "custom_id"))
        if line.get("method") != "POST":
            errors.append(_line_error("invalid_method", "The method must be POST.", n, "method"))
        if line.get("url") != _ENDPOINT:
            errors.append(_line_error("invalid_url", f"The url must be the batch's endpoint {_ENDPOINT}.", n, "url"))
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            errors.append(_line_error("missing_required_parameter", "The body must hold a model.", n, "body.model"))
        elif models and body["model"] not in models:
            errors.append(_line_error("mismatched_model", "Every line of a batch must use the same model; this one "
                                      f"uses {body['model']!r}.", n, "body.model"))
        else:
            models.add(body["model"])
        if isinstance(cid, str):
            seen.add(cid)
        custom_ids.append(cid if isinstance(cid, str) else "")
        bodies.append(body)
    return custom_ids, bodies, next(iter(models), None), errors[:_MAX_LISTED_ERRORS]


async def _upload(request: web.Request) -> web.Response:
    if not _authorized(request):
        return _error(*_UNAUTHORIZED)
    store = request.config_dict[BATCHES]
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError):
        return _error(400, "The request must be multipart/form-data.", "invalid_request_error")
    purpose, data, filename = None, None, "upload.jsonl"
    while (part := await reader.next()) is not None:
        if part.name == "purpose":
            purpose = (await part.read()).decode()
        elif part.name == "file":
            filename = part.filename or filename
            data = await _read_capped(part.read_chunk, OPENAI_MAX_BYTES)
            if data is None:
                return _error(400, f"Batch input files may be at most {OPENAI_MAX_BYTES // 2**20} MB.",
                              "invalid_request_error", None, "file")
    if purpose != "batch":
        return _error(400, "The embedded provider keeps files of purpose 'batch' only.", "invalid_request_error",
                      None, "purpose")
    if data is None:
        return _error(400, "Missing file.", "invalid_request_error", None, "file")
    return _json(store.add_file(data, filename, purpose))


def _openai_file(request: web.Request) -> tuple[dict[str, Any], bytes] | web.Response:
    store = _openai_store(request)
    if isinstance(store, web.Response):
        return store
    fid = request.match_info["file_id"]
    got = store.files.get(fid)
    if got is None:
        return _error(404, f"No such File object: {fid}", "invalid_request_error", None, "id")
    return got


async def _file(request: web.Request) -> web.Response:
    got = _openai_file(request)
    return got if isinstance(got, web.Response) else _json(got[0])


async def _file_content(request: web.Request) -> web.Response:
    got = _openai_file(request)
    return got if isinstance(got, web.Response) else web.Response(body=got[1], content_type="application/octet-stream")


async def _create_batch(request: web.Request) -> web.Response:
    store = _openai_store(request)
    if isinstance(store, web.Response):
        return store
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        return _error(400, "The request body must be a JSON object.", "invalid_request_error")
    if body.get("endpoint") != _ENDPOINT:
        return _error(400, f"The embedded provider batches {_ENDPOINT} only.", "invalid_request_error", None,
                      "endpoint")
    if body.get("completion_window") != "24h":
        return _error(400, "completion_window must be '24h'.", "invalid_request_error", None, "completion_window")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return _error(400, "metadata must be an object.", "invalid_request_error", None, "metadata")
    got = store.files.get(body.get("input_file_id"))
    if got is None or got[0]["purpose"] != "batch":
        return _error(404, f"No such File object: {body.get('input_file_id')}", "invalid_request_error", None,
                      "input_file_id")
    custom_ids, bodies, model, errors = _check_lines(got[1])
    unserved = no_batch_api(store, model, request.app.get(PREFIX, "")) if model else None
    if unserved and not errors:
        errors = [_line_error("model_not_supported", unserved, n, "body.model") for n in
                  range(1, min(len(bodies), _MAX_LISTED_ERRORS) + 1)]
    b = store.new_batch("openai", "batch_sim", custom_ids, [] if errors else bodies, read_body)
    b.face = face_of(request)
    b.input_file_id, b.metadata, b.model = got[0]["id"], metadata, model
    if not errors and b.refused:
        errors = [_line_error("server_error", "The batch could not be validated; please try again.", None)]
    vendor = None if errors else store.over_queue(b)
    if vendor is not None:
        errors = [_line_error("token_limit_exceeded", f"Enqueued token limit reached for {model}: the {vendor} "
                              "batch queue is full. Try again once some batches have completed.", None)]
    store.batches[b.id] = b
    if errors:
        b.errors, b.bodies, b.queued = errors, [], {}
        store.finish(b, "failed", b.created)
    await _slow_reply(store)
    return _json(_openai_view(store, b, "validating"))


def no_batch_api(store: BatchStore, model: str, prefix: str = "") -> str | None:
    """Why ``model`` cannot be batched on the host of ``prefix`` (the gateway: ""): its vendor has no batch API
    (``NO_BATCH_API``), or the host's batch API takes other models (``HOST_BATCH_MODELS``); None when it can."""
    vendor = store.st.world.vendor(model)
    if vendor in NO_BATCH_API:
        return f"The model {model!r} is not available through a batch API: {vendor} has none ({NO_BATCH_API[vendor]})."
    takes = HOST_BATCH_MODELS.get(prefix)
    if takes is not None and model not in takes:
        return f"The model {model!r} is not supported by this batch API, which takes {', '.join(takes)}."
    return None


async def _slow_reply(store: BatchStore) -> None:
    """The answer to a create, ``batch_reply_delay_s`` after the batch was made (``SimConfig``)."""
    if store.st.config.batch_reply_delay_s:
        await asyncio.sleep(store.st.config.batch_reply_delay_s)


def _batch_of(request: web.Request, store: BatchStore | web.Response, api: str) -> _Batch | web.Response | None:
    """The batch of ``api`` the path names (None: no such batch), or the store's refusal of the request."""
    if isinstance(store, web.Response):
        return store
    b = store.batches.get(request.match_info["batch_id"])
    return b if b is not None and b.api == api else None


def _openai_batch(request: web.Request) -> _Batch | web.Response:
    b = _batch_of(request, _openai_store(request), "openai")
    if b is None:
        return _error(404, f"No batch found with id '{request.match_info['batch_id']}'.", "invalid_request_error",
                      None, "batch_id")
    return b


async def _get_batch(request: web.Request) -> web.Response:
    got = _openai_batch(request)
    return got if isinstance(got, web.Response) else _json(_openai_view(request.config_dict[BATCHES], got))


async def _cancel_batch(request: web.Request) -> web.Response:
    got = _openai_batch(request)
    if isinstance(got, web.Response):
        return got
    if got.end is not None:
        return _error(400, f"Cannot cancel a batch with status '{got.end}'.", "invalid_request_error")
    store = request.config_dict[BATCHES]
    store.cancel(got)
    return _json(_openai_view(store, got))


async def _list_batches(request: web.Request) -> web.Response:
    store = _openai_store(request)
    if isinstance(store, web.Response):
        return store
    limit = _limit(request, 100)
    if limit is None:
        return _error(400, "limit must be an integer from 1 to 100.", "invalid_request_error", None, "limit")
    newest = [b for b in reversed(store.batches.values()) if b.api == "openai"]
    page, more = _page(newest, limit, request.query.get("after"), None, lambda b: b.id)
    data = [_openai_view(store, b) for b in page]
    return _json({"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                  "last_id": data[-1]["id"] if data else None, "has_more": more})


def add_routes(app: web.Application) -> None:
    """The store of both batch APIs (Anthropic's routes: ``council.sim._message_batches``), which the stats bring up
    to date first, and OpenAI's routes."""
    st = app[STATE]
    store = app[BATCHES] = BatchStore(st)
    st.before_stats.append(store.catch_up)
    add_openai_routes(app)


def add_openai_routes(app: web.Application, prefix: str = "/v1") -> None:
    """OpenAI's files and batches under ``prefix`` (on the main application or a host's, which shares the main
    one's store)."""
    app.router.add_post(f"{prefix}/files", _upload)
    app.router.add_get(f"{prefix}/files/{{file_id}}", _file)
    app.router.add_get(f"{prefix}/files/{{file_id}}/content", _file_content)
    app.router.add_post(f"{prefix}/batches", _create_batch)
    app.router.add_get(f"{prefix}/batches", _list_batches)
    app.router.add_get(f"{prefix}/batches/{{batch_id}}", _get_batch)
    app.router.add_post(f"{prefix}/batches/{{batch_id}}/cancel", _cancel_batch)
