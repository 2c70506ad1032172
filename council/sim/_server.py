"""The embedded provider's HTTP face: an OpenAI-compatible chat-completions server on aiohttp.

It answers as a council judge, or, when the system message asks for a stated confidence and then an
answer, as a model under test (see ``council.sim._eliciting``); both draw on the vendor's one quota.

Routes: ``POST /v1/chat/completions`` (the gateway, OpenRouter-like: any model the world knows), ``GET
/v1/models`` (both need ``Authorization: Bearer <anything>``), and the unauthenticated test hooks ``GET
/v1/sim/stats`` and ``POST /v1/sim/reset``; Anthropic's native ``POST /v1/messages`` (``council.sim._messages``:
the same answers in Anthropic's shape, native ids only) and both providers' batch APIs, ``/v1/files`` +
``/v1/batches`` and ``/v1/messages/batches`` (``council.sim._batches``). Each provider's own API is served under a
prefix naming its real host (``/api.openai.com/v1/...``, ``/api.anthropic.com/v1/messages``, ...:
``council.sim._hosts``), native ids only, in that provider's wording (``council.sim._faces``).

With ``SimConfig.api_rules`` (the default) every request is read first by its model's maker's documented rules
(``council.sim._apis``): a parameter the maker refuses is answered 400 in the maker's words (counted as refused,
not as a request, not billed), and a reasoning model spends reasoning tokens (``council.sim._reasoning``) that
come first out of the output cap and are billed as output, for judges and models under test alike.

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
(batch requests billed under a ``(model, custom_id)`` already billed in any batch since the last reset); refused
(requests a maker's rule refused, ``council.sim._apis``: not counted in requests) and overloaded (Anthropic's
529s, ``overloaded_rate``).

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
import random
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from council.sim._apis import ApiError, Asked, Plan, permissive
from council.sim._apis import plan as api_plan
from council.sim._cache import Breakpoint, BreakpointCache, PrefixCache
from council.sim._config import ModelBehaviour, SimConfig, VendorBehaviour
from council.sim._eliciting import Elicitation, elicit, record_truth, sent_record
from council.sim._faces import CHAT, Face, Refusal
from council.sim._judging import Message, decide
from council.sim._quota import Clock, QuotaBook
from council.sim._reasoning import fit, spend
from council.sim._truth import TruthTable
from council.sim._wire import (
    _BAD_PAGE, _JSON, Parsed, _authorized, _BadBody, _cut, _est_tokens, _hang_up, _json, _parse_body, _trickle,
)
from council.sim._world import JUDGES

_STAT_KEYS = (
    "requests", "rate_limited", "billed", "errors", "prompt_tokens", "completion_tokens", "batched_items",
    "elicitations", "reasoning_tokens", "own_vendor_rows", "unknown_producers", "prose_json", "fenced",
    "stalls", "resets", "bad_bodies", "slow_answers", "storm_429s", "cached_tokens",
    "batch_requests", "batch_billed", "batch_billed_twice", "refused", "overloaded",
)
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
FACE: web.AppKey[Face] = web.AppKey("council_sim_face")
"""A host's sub-application: the face its chat-completions routes answer with (the main application: ``CHAT``)."""
PREFIX: web.AppKey[str] = web.AppKey("council_sim_prefix", str)
"""A host's sub-application: its path prefix (``/api.anthropic.com``)."""


# ---- receiving and billing -----------------------------------------------------------------------------


def _storm_left_s(st: _State, vendor: str, b: VendorBehaviour) -> float:
    """Seconds left of the vendor's 429 storm now (0 outside it)."""
    now = st.clock()
    first = st.first_seen.setdefault(vendor, now)
    if not b.storm_429:
        return 0.0
    start = first + b.storm_429_start_s
    return start + b.storm_429 - now if start <= now < start + b.storm_429 else 0.0


@dataclass(slots=True)
class Work:
    """A received request's answer before billing: what the model wrote, how it ended, what it costs (the
    reasoning spent is part of ``completion_tokens``), and how its maker's rules answer it (``plan``)."""

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
    plan: Plan


def receive(st: _State, parsed: Parsed, face: Face) -> Work | Refusal:
    """Count a request as received and write its answer (drawing the truncation fault and the reasoning spend),
    or refuse it (unknown model or not one of the face's native ids, too many breakpoints, a parameter its maker
    refuses). No quota, no transport fault, no billing: the same for every way in."""
    model_id = face.model_id(parsed.model)
    messages, breakpoints = parsed.messages, parsed.breakpoints
    rules = st.config.api_rules
    if rules and face.vendor is not None and not st.world.native(face.vendor, model_id):
        return face.not_found(model_id)
    model = st.model(model_id)
    if model is None:
        return face.not_found(model_id)
    b = model.behaviour
    if b.prompt_cache_breakpoints and len(breakpoints) > MAX_BREAKPOINTS:
        return face.bad_request(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                                f"Found {len(breakpoints)}.", "messages")
    stats = model.stats
    if rules:
        plan = api_plan(Asked(model_id, "messages" if parsed.api == "messages" else "chat", face.vendor is None,
                              parsed.body, parsed.max_tokens))
        if isinstance(plan, ApiError):
            stats.refused += 1
            return face.refused(plan)
    else:
        plan = permissive(parsed.max_tokens)
    stats.requests += 1

    prompt_tokens = _est_tokens(sum(len(c) for _, c in messages))
    faults = st.faults
    elicited = elicit(st.config, st.truth, model_id, messages)
    if elicited is not None:  # a model under test: its own truncation, reasoning and latency
        stats.elicitations += 1
        content, finish = elicited.content, "length" if elicited.truncated else "stop"
        if plan.known:
            reasoning = spend(plan, b.reasoning_means, st.config.seed, model_id, messages,
                              model.under_test.reasoning_tokens)
        else:
            reasoning = elicited.reasoning_tokens
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
        content, finish = decision.content, "stop"
        if b.truncation_rate and faults.random() < b.truncation_rate:
            content, finish = content[: max(1, int(len(content) * (0.2 + 0.6 * faults.random())))], "length"
        reasoning = spend(plan, b.reasoning_means, st.config.seed, model_id, messages)
        latency_ms, jitter_ms = b.latency_ms, b.latency_jitter_ms
    content, finish, completion_tokens, reasoning = fit(content, finish, reasoning, plan.cap)  # reasoning first
    return Work(model_id, model, messages, breakpoints, content, finish, prompt_tokens, completion_tokens, reasoning,
                elicited, latency_ms, jitter_ms, plan)


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
    if work.elicited is not None or work.plan.reasons or reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if work.elicited is not None:
        record_truth(st.truth, work.elicited, work.content, model_id)
        if st.answers is not None:
            st.answers.append(sent_record(work.elicited, work.content, model_id))
    return usage


# ---- handlers ------------------------------------------------------------------------------------------


def respond(refusal: Refusal) -> web.Response:
    """A refusal as the response that carries it."""
    status, body, headers = refusal
    return _json(body, status, headers)


def face_of(request: web.Request) -> Face:
    """The chat-completions face of the (sub-)application serving ``request``: the gateway's, or a host's."""
    return request.app.get(FACE, CHAT)


async def _chat(request: web.Request) -> web.StreamResponse:
    face = face_of(request)
    if not _authorized(request):
        return respond(face.unauthorized())
    try:
        parsed = _parse_body(await request.read())
    except _BadBody as exc:
        return respond(face.bad_request(str(exc), exc.param))
    return await serve_request(request, parsed, face)


async def serve_request(request: web.Request, parsed: Parsed, face: Face) -> web.StreamResponse:
    """Answer a synchronous request through the vendor's quota and transport faults, worded by ``face``."""
    st = request.config_dict[STATE]
    work = receive(st, parsed, face)
    if not isinstance(work, Work):
        return respond(work)
    model_id, model = work.model_id, work.model
    b, stats, faults = model.behaviour, model.stats, st.faults

    if face.overloads and b.overloaded_rate and faults.random() < b.overloaded_rate:  # no quota used, not billed
        stats.overloaded += 1
        return respond(face.overloaded())
    storm = _storm_left_s(st, model.vendor, b)
    if storm > 0:  # every request of the vendor, no quota used
        stats.rate_limited += 1
        stats.storm_429s += 1
        return respond(face.storm(model_id, storm))
    admission = st.quota.admit(model.vendor, work.prompt_tokens + work.completion_tokens)
    headers = face.headers(admission, b.rate_limit_headers)
    if not admission.ok:
        stats.rate_limited += 1
        return respond(face.limited(model_id, admission, headers))
    if b.error_rate and faults.random() < b.error_rate:
        stats.errors += 1
        return respond(face.server_error(headers))
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


async def _models(request: web.Request) -> web.Response:
    face = face_of(request)
    if not _authorized(request):
        return respond(face.unauthorized())
    st = request.config_dict[STATE]
    if face.vendor is None:
        listed = st.world.items()
    else:
        listed = [(mid, face.vendor) for mid in st.world.native_ids(face.vendor)]
    data = [{"id": mid, "object": "model", "created": 0, "owned_by": vendor} for mid, vendor in listed]
    return _json({"object": "list", "data": data})


async def _stats(request: web.Request) -> web.Response:
    return _json(request.config_dict[STATE].stats())


async def _reset(request: web.Request) -> web.Response:
    quotas = request.query.get("quotas", "").lower() in {"1", "true", "yes"}
    request.config_dict[STATE].reset(quotas=quotas)
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
    # They build on this module: imported once it is complete.
    from council.sim import _batches, _hosts, _message_batches, _messages

    _messages.add_routes(app)
    _batches.add_routes(app)
    _message_batches.add_routes(app)
    _hosts.add_hosts(app)
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
