"""The embedded provider's HTTP face: an OpenAI-compatible chat-completions server on aiohttp.

It answers as a council judge, or, when the system message asks for a stated confidence and then an
answer, as a model under test (see ``council.sim._eliciting``); both draw on the vendor's one quota.

Routes: ``POST /v1/chat/completions``, ``GET /v1/models`` (both need ``Authorization: Bearer <anything>``),
and the unauthenticated test hooks ``GET /v1/sim/stats`` and ``POST /v1/sim/reset``; Anthropic's native
``POST /v1/messages`` (``council.sim._messages``: the same answers in Anthropic's shape) and both providers'
batch APIs, ``/v1/files`` + ``/v1/batches`` and ``/v1/messages/batches`` (``council.sim._batches``).

A message's ``content`` is a string or, as the chat API allows, a list of text parts (read as their texts run
together; any other part type is a 400). A part may carry ``cache_control: {"type": "ephemeral"}``: a vendor
with ``prompt_cache_breakpoints`` caches at those breakpoints only (``council.sim._cache``), the others ignore it.

Who made which model is the simulated world's (``council.sim._world`` plus ``SimConfig.world``), never the
council's: a chat request for a model the world does not know is answered 404 ``model_not_found`` in the
OpenAI error shape, and ``GET /v1/models`` lists every model of the world with its vendor as ``owned_by``.

The stats count, per model and per vendor (the world's): requests, rate_limited, billed, errors,
prompt_tokens, completion_tokens, batched_items (rows received inside batched requests), elicitations
(elicitation requests received), reasoning_tokens (billed hidden reasoning, part of completion_tokens),
own_vendor_rows (rows a judge received whose producer is a model of the judge's own vendor, per the world:
the provider-side check of self-exclusion), unknown_producers (producer models of received rows that the
world does not know, counted as no vendor), prose_json and fenced (replies whose JSON came inside prose or
inside a ```json fence), and the transport faults served: stalls (``timeout_rate``), resets, bad_bodies,
slow_answers and storm_429s (429s of a storm, also counted in rate_limited), and cached_tokens (billed prompt
tokens served from the prompt cache, ``council.sim._cache``: part of prompt_tokens). Everything counted on receipt
is counted billed or not. Requests answered inside the batch APIs (``council.sim._batches``) are counted in the
same counters when their result is produced, and also in batch_requests, batch_billed and batch_billed_twice
(batch requests billed under a ``(model, custom_id)`` already billed in any batch since the last reset).

Billing is truthful: ``billed`` counts the chat requests whose work was done and whose 200 status line went
out, whatever happened next: an answer whose body is then cut or unreadable (``bad_body_rate``) or trickled
out to a client that gave up (``slow_rate``) is billed. A 429 (quota or storm), a 500, a reset (the
connection closed before the work was done, after a few bytes that are no HTTP answer) and a stall the
client gave up on before the answer went out (``start_sim`` serves with handler cancellation, so the
stalled handler is cancelled) are not billed. So for a client
``billed`` is its 200s received plus the billed answers it could not read or waited for no longer.

With ``record_requests`` (``start_sim(..., record_requests=True)``) the server also keeps every judge chat
request it receives, billed or not (repairs and rate-limited attempts included; elicitations excluded), in
``SimServer.requests``, in arrival order, as ``{"model", "vendor", "round", "batch", "messages", "rows"}``:
the model id as asked, its vendor per the world, the round (0 when the request is not a council prompt),
whether it was a batched prompt, the messages as ``{"role", "content"}`` dicts, and the ``(question,
response)`` pair of each council row it carried.
It keeps too every reply billed as a model under test, in ``SimServer.answers``: what the model sent and
what it meant (the answer it wrote, the confidence it stated, whether it declined, the verdict the answer
deserves), so a client's reading of the replies can be checked against what was written.

A request carries one row (a single-row judge prompt) or several (a batched judge prompt, answered with
``{"verdicts": [...]}``). The reply's content (verdicts, reasons, malformed or not) is a pure function of
the request, so the same request always gets the same content, and each row's verdict and reason depend
only on that row's item text, so a row is answered alike alone or in any batch. Transport faults (5xx,
timeouts, resets, bad bodies, slow answers, truncation, latency) are drawn from one seeded stream per
server, so a retried request can succeed where the first attempt failed; a fault whose rate is 0 draws
nothing, so adding a fault leaves the others' draws alone. A 429 storm (``storm_429``) is a window of time
per vendor, not a draw.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import orjson
from aiohttp import web

from council.sim._cache import Breakpoint, BreakpointCache, PrefixCache
from council.sim._config import ModelBehaviour, SimConfig, VendorBehaviour
from council.sim._eliciting import Elicitation, elicit, record_truth, sent_record
from council.sim._judging import Message, decide
from council.sim._quota import Admission, Clock, QuotaBook
from council.sim._truth import TruthTable
from council.sim._world import JUDGES

_JSON = "application/json"
_STAT_KEYS = (
    "requests", "rate_limited", "billed", "errors", "prompt_tokens", "completion_tokens", "batched_items",
    "elicitations", "reasoning_tokens", "own_vendor_rows", "unknown_producers", "prose_json", "fenced",
    "stalls", "resets", "bad_bodies", "slow_answers", "storm_429s", "cached_tokens",
    "batch_requests", "batch_billed", "batch_billed_twice",
)
_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema"})
MAX_BREAKPOINTS = 4  # cache_control blocks a request may mark, at a vendor caching at breakpoints (Anthropic's limit)


class _ModelStats:
    __slots__ = _STAT_KEYS

    def __init__(self) -> None:
        self.zero()

    def zero(self) -> None:
        for key in _STAT_KEYS:
            setattr(self, key, 0)

    def as_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in _STAT_KEYS}


@dataclass(slots=True)
class _Model:
    """What the server keeps per model id: its vendor, that vendor's (judge and account) behaviour, how
    it answers as a model under test, and the counters."""

    vendor: str
    behaviour: VendorBehaviour
    stats: _ModelStats
    under_test: ModelBehaviour


class _State:
    def __init__(self, config: SimConfig, truth: TruthTable, clock: Clock, record_requests: bool = False) -> None:
        self.config = config
        self.truth = truth
        self.world = config.catalogue
        self.quota = QuotaBook(config, clock)
        self.prompt_cache = PrefixCache(clock)
        self.breakpoint_cache = BreakpointCache(clock)
        self.clock = clock
        self.first_seen: dict[str, float] = {}  # vendor -> time of its first chat request (429 storms)
        self.models: dict[str, _Model] = {}
        self.faults = random.Random(f"sim-faults:{config.seed}")
        self.ids = itertools.count(1)
        self.requests: list[dict[str, Any]] | None = [] if record_requests else None
        self.answers: list[dict[str, Any]] | None = [] if record_requests else None
        self.batch_billed_ids: set[tuple[str, str]] = set()  # (model, custom_id) of every batch request billed
        self.before_stats: list[Callable[[], None]] = []  # brings the batches up to now before a count is read
        for model in JUDGES.values():
            self.model(model)

    def model(self, model_id: str) -> _Model | None:
        """The model's entry (created on first use), or None when the world does not know it."""
        got = self.models.get(model_id)
        if got is None:
            vendor = self.world.vendor(model_id)
            if vendor is None:
                return None
            got = self.models[model_id] = _Model(
                vendor, self.config.behaviour(vendor), _ModelStats(), self.config.model_behaviour(model_id)
            )
        return got

    def stats(self) -> dict[str, Any]:
        for catch_up in self.before_stats:
            catch_up()
        models = {mid: m.stats.as_dict() for mid, m in self.models.items()}
        vendors: dict[str, dict[str, int]] = {}
        for m in self.models.values():
            acc = vendors.setdefault(m.vendor, dict.fromkeys(_STAT_KEYS, 0))
            for key in _STAT_KEYS:
                acc[key] += getattr(m.stats, key)
        return {"models": models, "vendors": vendors}

    def reset(self, quotas: bool = False) -> None:
        for m in self.models.values():
            m.stats.zero()
        if self.requests is not None:
            self.requests.clear()
        if self.answers is not None:
            self.answers.clear()
        self.batch_billed_ids.clear()
        if quotas:
            self.quota.reset()


STATE: web.AppKey[_State] = web.AppKey("council_sim_state", _State)


# ---- responses -----------------------------------------------------------------------------------------


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    hdrs = {"Content-Type": _JSON}
    if headers:
        hdrs.update(headers)
    return web.Response(body=orjson.dumps(payload), status=status, headers=hdrs)


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _error(
    status: int, message: str, type_: str, code: str | None = None, param: str | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    return _json(_error_body(message, type_, code, param), status, headers)


def _bad_request(message: str, param: str | None = None) -> web.Response:
    return _error(400, message, "invalid_request_error", None, param)


def _authorized(request: web.Request) -> bool:
    auth = request.headers.get("Authorization", "")
    return auth[:7].lower() == "bearer " and bool(auth[7:].strip())


_UNAUTHORIZED = (
    401, "You didn't provide an API key. Provide it in an Authorization header: 'Bearer YOUR_KEY'.",
    "invalid_request_error", "invalid_api_key",
)


def _storm_left_s(st: _State, vendor: str, b: VendorBehaviour) -> float:
    """Seconds left of the vendor's 429 storm now (0 outside it)."""
    now = st.clock()
    first = st.first_seen.setdefault(vendor, now)
    if not b.storm_429:
        return 0.0
    start = first + b.storm_429_start_s
    return start + b.storm_429 - now if start <= now < start + b.storm_429 else 0.0


def _hang_up(request: web.Request, faults: random.Random) -> web.Response:
    """Close the connection after a few bytes that are no valid HTTP answer; the response returned is
    never sent."""
    transport = request.transport
    if transport is not None:
        transport.write(b"HTTP/1.1 2"[: 1 + int(faults.random() * 9)])
        transport.abort()
    return web.Response(status=500)


async def _cut(request: web.Request, body: bytes, headers: dict[str, str], keep: int) -> web.StreamResponse:
    """A 200 announcing the whole body, of which only ``keep`` bytes arrive before the connection closes."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": _JSON, **headers})
    resp.content_length = len(body)
    await resp.prepare(request)
    await resp.write(body[:keep])
    if request.transport is not None:
        request.transport.abort()
    return resp


async def _trickle(request: web.Request, body: bytes, headers: dict[str, str], total_ms: float) -> web.StreamResponse:
    """A 200 whose headers go out at once and whose body follows in small chunks over ``total_ms``."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": _JSON, **headers})
    resp.content_length = len(body)
    await resp.prepare(request)
    chunks = max(2, min(16, len(body) // 32))
    size = -(-len(body) // chunks)
    for i in range(0, len(body), size):
        await asyncio.sleep(total_ms / 1000.0 / chunks)
        await resp.write(body[i:i + size])
    await resp.write_eof()
    return resp


_BAD_PAGE = (b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
             b"</center></body></html>")


def _est_tokens(chars: int) -> int:
    return -(-chars // 4)  # ceil(chars / 4)


# ---- request parsing -----------------------------------------------------------------------------------


class Parsed(NamedTuple):
    """A chat request as the provider reads it, whatever API it came through."""

    model: str
    messages: list[Message]
    max_tokens: int | None
    breakpoints: list[Breakpoint]


class _BadBody(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _content_text(content: Any, i: int, where: str | None = None) -> tuple[str, list[int]]:
    """A message's content as the model reads it (a list of text parts is their texts run together), and where
    in it each part marked ``cache_control`` ends (characters from its start); errors name ``where`` (default
    ``messages[i].content``)."""
    if isinstance(content, str):
        return content, []
    if content is None:
        return "", []
    where = where or f"messages[{i}].content"
    if not isinstance(content, list):
        raise _BadBody(f"{where} must be a string or a list of content parts", where)
    text, marks = "", []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise _BadBody(f"{where} parts must be objects", where)
        if part.get("type") != "text":
            raise _BadBody(f"{where}[{j}].type: the embedded provider reads text parts only, not {part.get('type')!r}",
                           where)
        if not isinstance(part.get("text"), str):
            raise _BadBody(f"{where}[{j}]: a text part needs a string 'text'", where)
        text += part["text"]
        if "cache_control" in part:
            _check_cache_control(part["cache_control"], f"{where}[{j}].cache_control")
            marks.append(len(text))
    return text, marks


def _check_cache_control(value: Any, where: str) -> None:
    if not isinstance(value, dict) or value.get("type") != "ephemeral":
        raise _BadBody(f"{where}: the type must be 'ephemeral'", where)
    if value.get("ttl", "5m") != "5m":
        raise _BadBody(f"{where}.ttl: the embedded provider keeps a cached prefix 5m (prompt_cache_ttl_s)", where)


def _parse_body(raw: bytes) -> Parsed:
    """The model, the messages as ``(role, text)``, the output bound and the cache breakpoints marked."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _BadBody(f"We could not parse the JSON body of your request: {exc}") from exc
    return read_body(body)


def read_body(body: Any) -> Parsed:
    """A decoded chat-completions body read as :func:`_parse_body` reads one (a batch line's ``body`` too)."""
    if not isinstance(body, dict):
        raise _BadBody("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _BadBody("you must provide a model parameter", "model")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise _BadBody("'messages' must be a non-empty array", "messages")
    messages: list[Message] = []
    breakpoints: list[Breakpoint] = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise _BadBody(f"messages[{i}] must be an object with a string 'role'", f"messages[{i}]")
        text, marks = _content_text(m.get("content"), i)
        messages.append((m["role"], text))
        breakpoints += [(i, chars) for chars in marks]
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
        raise _BadBody("'temperature' must be a number", "temperature")
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        max_tokens = body.get("max_completion_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise _BadBody("'max_tokens' must be a positive integer", "max_tokens")
    fmt = body.get("response_format")
    if fmt is not None:
        if not isinstance(fmt, dict) or fmt.get("type") not in _RESPONSE_FORMATS:
            raise _BadBody("'response_format.type' must be one of text, json_object, json_schema", "response_format")
        if fmt["type"] == "json_schema" and not isinstance(fmt.get("json_schema"), dict):
            raise _BadBody("'response_format.json_schema' must be an object", "response_format")
    if body.get("stream"):
        raise _BadBody("streaming is not supported by the embedded provider", "stream")
    return Parsed(model, messages, max_tokens, breakpoints)


# ---- handlers ------------------------------------------------------------------------------------------


Refusal = tuple[int, dict[str, Any], dict[str, str] | None]
"""A refused request: the status, the error body and its headers."""


class Face(Protocol):
    """How one API (chat completions, Anthropic's Messages) words the provider's answers: the same work and
    the same faults, each API's own error and reply shapes."""

    def bad_request(self, message: str, param: str | None) -> Refusal: ...

    def not_found(self, model_id: str) -> Refusal: ...

    def storm(self, model_id: str, left_s: float) -> Refusal: ...

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str]) -> Refusal: ...

    def server_error(self, headers: dict[str, str] | None) -> Refusal: ...

    def reply(self, st: _State, work: Work, usage: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(slots=True)
class Work:
    """A received request's answer before billing: what the model wrote, how it ended, what it costs."""

    model_id: str
    model: _Model
    messages: list[Message]
    breakpoints: list[Breakpoint]
    content: str
    finish: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int
    reasoning: int
    elicited: Elicitation | None
    latency_ms: float
    jitter_ms: float


def receive(st: _State, parsed: Parsed, face: Face) -> Work | Refusal:
    """Count a request as received and write its answer (drawing the truncation fault), or refuse it (unknown
    model, too many breakpoints). No quota, no transport fault, no billing: the same for every way in."""
    model_id, messages, max_tokens, breakpoints = parsed
    model = st.model(model_id)
    if model is None:
        return face.not_found(model_id)
    b = model.behaviour
    if b.prompt_cache_breakpoints and len(breakpoints) > MAX_BREAKPOINTS:
        return face.bad_request(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                                f"Found {len(breakpoints)}.", "messages")
    stats = model.stats
    stats.requests += 1

    prompt_tokens = _est_tokens(sum(len(c) for _, c in messages))
    faults = st.faults
    elicited = elicit(st.config, st.truth, model_id, messages)
    reasoning = 0
    if elicited is not None:  # a model under test: its own truncation, reasoning and latency
        stats.elicitations += 1
        content, finish = elicited.content, "length" if elicited.truncated else "stop"
        reasoning = elicited.reasoning_tokens
        completion_tokens = reasoning + _est_tokens(len(content))
        if max_tokens is not None and max_tokens < completion_tokens:  # reasoning comes first
            reasoning = min(reasoning, max_tokens)
            content, completion_tokens, finish = content[: (max_tokens - reasoning) * 4], max_tokens, "length"
        latency_ms, jitter_ms = model.under_test.latency_ms, model.under_test.latency_jitter_ms
    else:
        decision = decide(st.config, st.truth, model_id, messages, b)
        if decision.batch:
            stats.batched_items += len(decision.items)
        stats.own_vendor_rows += decision.own_vendor_rows
        stats.unknown_producers += decision.unknown_producers
        if decision.wrapping == "prose":
            stats.prose_json += 1
        elif decision.wrapping == "fenced":
            stats.fenced += 1
        if st.requests is not None:
            st.requests.append({
                "model": model_id, "vendor": model.vendor, "round": decision.round, "batch": decision.batch,
                "messages": [{"role": role, "content": text} for role, text in messages],
                "rows": list(decision.rows),
            })
        content = decision.content
        completion_tokens = _est_tokens(len(content))
        finish = "stop"
        if b.truncation_rate and faults.random() < b.truncation_rate:
            content = content[: max(1, int(len(content) * (0.2 + 0.6 * faults.random())))]
            completion_tokens, finish = _est_tokens(len(content)), "length"
        if max_tokens is not None and max_tokens < completion_tokens:
            content, completion_tokens, finish = content[: max_tokens * 4], max_tokens, "length"
        latency_ms, jitter_ms = b.latency_ms, b.latency_jitter_ms
    return Work(model_id, model, messages, breakpoints, content, finish, prompt_tokens, completion_tokens, reasoning,
                elicited, latency_ms, jitter_ms)


def bill(st: _State, work: Work) -> dict[str, Any]:
    """Bill a request whose answer goes out (counters, prompt cache, the truth of an elicited answer) and
    return its usage in the chat-completions shape."""
    model_id, b, stats = work.model_id, work.model.behaviour, work.model.stats
    prompt_tokens, completion_tokens, reasoning = work.prompt_tokens, work.completion_tokens, work.reasoning
    stats.billed += 1
    stats.prompt_tokens += prompt_tokens
    stats.completion_tokens += completion_tokens
    stats.reasoning_tokens += reasoning
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if b.prompt_cache_ttl_s > 0 and b.prompt_cache_breakpoints:
        cached, written = st.breakpoint_cache.serve(model_id, work.messages, work.breakpoints,
                                                    min_tokens=b.prompt_cache_min_tokens, ttl_s=b.prompt_cache_ttl_s)
        stats.cached_tokens += cached
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "cache_write_tokens": written}
    elif b.prompt_cache_ttl_s > 0:
        cached = st.prompt_cache.serve(model_id, work.messages, prompt_tokens, min_tokens=b.prompt_cache_min_tokens,
                                       block_tokens=b.prompt_cache_block_tokens, ttl_s=b.prompt_cache_ttl_s)
        stats.cached_tokens += cached
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if work.elicited is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        record_truth(st.truth, work.elicited, work.content, model_id)
        if st.answers is not None:
            st.answers.append(sent_record(work.elicited, work.content, model_id))
    return usage


class _ChatFace:
    """Chat completions' (OpenAI's) wording of answers and refusals."""

    def bad_request(self, message: str, param: str | None) -> Refusal:
        return 400, _error_body(message, "invalid_request_error", None, param), None

    def not_found(self, model_id: str) -> Refusal:
        return 404, _error_body(f"The model `{model_id}` does not exist or you do not have access to it.",
                                "invalid_request_error", "model_not_found"), None

    def storm(self, model_id: str, left_s: float) -> Refusal:
        return 429, _error_body(
            f"Rate limit reached for {model_id}: the service is overloaded. Please try again in {left_s:.3g}s.",
            "requests", "rate_limit_exceeded", None,
        ), {"retry-after": str(math.ceil(left_s)), "retry-after-ms": str(math.ceil(left_s * 1000))}

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str]) -> Refusal:
        what = admission.limited_by
        return 429, _error_body(
            f"Rate limit reached for {model_id} on {what} per min. Please try again in "
            f"{admission.retry_after_s:.3g}s.",
            what, "rate_limit_exceeded", None,
        ), headers

    def server_error(self, headers: dict[str, str] | None) -> Refusal:
        return 500, _error_body("The server had an error while processing your request.", "server_error"), headers

    def reply(self, st: _State, work: Work, usage: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-sim{next(st.ids):012x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": work.model_id,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": work.content}, "finish_reason": work.finish,
                 "logprobs": None}
            ],
            "usage": usage,
        }


CHAT = _ChatFace()


async def _chat(request: web.Request) -> web.StreamResponse:
    if not _authorized(request):
        return _error(*_UNAUTHORIZED)
    try:
        parsed = _parse_body(await request.read())
    except _BadBody as exc:
        return _bad_request(str(exc), exc.param)
    return await serve_request(request, parsed, CHAT)


async def serve_request(request: web.Request, parsed: Parsed, face: Face) -> web.StreamResponse:
    """Answer a synchronous request through the vendor's quota and transport faults, worded by ``face``."""
    st = request.app[STATE]
    work = receive(st, parsed, face)
    if not isinstance(work, Work):
        return _json(work[1], work[0], work[2])
    model_id, model = work.model_id, work.model
    b, stats, faults = model.behaviour, model.stats, st.faults

    storm = _storm_left_s(st, model.vendor, b)
    if storm > 0:  # every request of the vendor, no quota used
        stats.rate_limited += 1
        stats.storm_429s += 1
        return _json(*_swap(face.storm(model_id, storm)))
    admission = st.quota.admit(model.vendor, work.prompt_tokens + work.completion_tokens)
    headers = admission.headers if b.rate_limit_headers else None
    if not admission.ok:
        stats.rate_limited += 1
        if headers is None:  # a provider that reveals little: only when to come back
            headers = {"retry-after": admission.headers["retry-after"]}
        return _json(*_swap(face.limited(model_id, admission, headers)))
    if b.error_rate and faults.random() < b.error_rate:
        stats.errors += 1
        return _json(*_swap(face.server_error(headers)))
    if b.reset_rate and faults.random() < b.reset_rate:
        stats.resets += 1
        return _hang_up(request, faults)
    if b.timeout_rate and faults.random() < b.timeout_rate:
        stats.stalls += 1
        await asyncio.sleep(st.config.timeout_s)  # a client that gives up cancels this handler: not billed
    if work.latency_ms or work.jitter_ms:
        delay = work.latency_ms + work.jitter_ms * (2.0 * faults.random() - 1.0)
        if delay > 0:
            await asyncio.sleep(delay / 1000.0)

    payload = face.reply(st, work, bill(st, work))
    if b.bad_body_rate and faults.random() < b.bad_body_rate:  # billed: the work was done and answered 200
        stats.bad_bodies += 1
        body = orjson.dumps(payload)
        kind = b.bad_body if b.bad_body != "any" else ("invalid" if faults.random() < 0.5 else "cut")
        keep = max(1, int(len(body) * (0.1 + 0.8 * faults.random())))
        if kind == "cut":
            return await _cut(request, body, headers or {}, keep)
        garbage = _BAD_PAGE if faults.random() < 0.5 else body[:keep]
        return web.Response(body=garbage, status=200, headers={"Content-Type": _JSON, **(headers or {})})
    if b.slow_rate and faults.random() < b.slow_rate:
        stats.slow_answers += 1
        return await _trickle(request, orjson.dumps(payload), headers or {}, b.slow_ms)
    return _json(payload, 200, headers)


def _swap(refusal: Refusal) -> tuple[dict[str, Any], int, dict[str, str] | None]:
    """A refusal in :func:`_json`'s argument order."""
    status, body, headers = refusal
    return body, status, headers


async def _models(request: web.Request) -> web.Response:
    if not _authorized(request):
        return _error(*_UNAUTHORIZED)
    st = request.app[STATE]
    data = [{"id": mid, "object": "model", "created": 0, "owned_by": vendor} for mid, vendor in st.world.items()]
    return _json({"object": "list", "data": data})


async def _stats(request: web.Request) -> web.Response:
    return _json(request.app[STATE].stats())


async def _reset(request: web.Request) -> web.Response:
    quotas = request.query.get("quotas", "").lower() in {"1", "true", "yes"}
    request.app[STATE].reset(quotas=quotas)
    return _json({"ok": True})


def build_app(
    config: SimConfig | None = None, truth: TruthTable | None = None, *, clock: Clock | None = None,
    record_requests: bool = False,
) -> web.Application:
    """The aiohttp application; ``clock`` (default ``time.monotonic``) drives the quota buckets;
    ``record_requests`` keeps every judge request received (see the module docstring)."""
    app = web.Application(client_max_size=32 * 1024 * 1024)
    truth = truth if truth is not None else TruthTable()  # an empty table is falsy but may know items
    app[STATE] = _State(config or SimConfig.planted(), truth, clock or time.monotonic, record_requests)
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/v1/sim/stats", _stats)
    app.router.add_post("/v1/sim/reset", _reset)
    from council.sim import _batches, _messages  # they build on this module: imported once it is complete

    _messages.add_routes(app)
    _batches.add_routes(app)
    return app


# ---- running -------------------------------------------------------------------------------------------


class SimServer:
    """A running embedded provider. ``url`` is the OpenAI-style base URL (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, app: web.Application, runner: web.AppRunner, host: str, port: int) -> None:
        self.app = app
        self._runner = runner
        self.host = host
        self.port = port
        self.url = f"http://{host}:{port}/v1"

    @property
    def config(self) -> SimConfig:
        return self.app[STATE].config

    @property
    def truth(self) -> TruthTable:
        return self.app[STATE].truth

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every judge chat request received, in arrival order, when started with ``record_requests=True``
        (``{"model", "vendor", "round", "batch", "messages", "rows"}``, see the module docstring); else empty."""
        got = self.app[STATE].requests
        return got if got is not None else []

    @property
    def answers(self) -> list[dict[str, Any]]:
        """Every reply billed as a model under test, in arrival order, when started with ``record_requests=True``
        (``{"model", "question", "content", "answer", "confidence", "abstained", "gold"}``: what the model sent
        and meant, see ``council.sim._eliciting.sent_record``); else empty."""
        got = self.app[STATE].answers
        return got if got is not None else []

    async def stats(self) -> dict[str, Any]:
        """The same counters as ``GET /v1/sim/stats``, read directly."""
        return self.app[STATE].stats()

    async def reset(self, quotas: bool = False) -> None:
        """Zero the counters and forget recorded requests (and, with ``quotas``, refill every bucket)."""
        self.app[STATE].reset(quotas=quotas)

    async def close(self) -> None:
        await self._runner.cleanup()

    async def __aenter__(self) -> SimServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def start_sim(
    config: SimConfig | None = None,
    truth: TruthTable | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    record_requests: bool = False,
    *,
    clock: Clock | None = None,
) -> SimServer:
    """Start the provider on ``host:port`` (port 0 = an ephemeral port) and return it running.

    With ``record_requests`` the server keeps every judge chat request it receives in ``SimServer.requests``
    (each a dict ``{"model", "vendor", "round", "batch", "messages", "rows"}``; see the module docstring)."""
    app = build_app(config, truth, clock=clock, record_requests=record_requests)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = port
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            bound = int(addr[1])
            break
    shown = f"[{host}]" if ":" in host else host
    return SimServer(app, runner, shown, bound)


def serve(
    config: SimConfig | None = None, truth: TruthTable | None = None, host: str = "127.0.0.1", port: int = 0
) -> None:
    """Run the provider until interrupted, printing its base URL first (for ``council sim``)."""

    async def main() -> None:
        server = await start_sim(config, truth, host, port)
        print(f"embedded provider listening on {server.url}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
