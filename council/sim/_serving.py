"""How the embedded provider serves a request (see ``council.sim._server`` for the routes and the counters):
``receive`` counts it and writes its answer, or refuses it; ``serve_request`` puts a synchronous request through
its vendor's quota and transport faults; ``bill`` bills an answer that goes out. Every way in (the gateway's chat
completions, Anthropic's Messages, the batch APIs, each provider's own host) answers with this code, worded by
its face (``council.sim._faces``). Also the gateway's own routes (``add_routes``): chat completions, the model
list and the test hooks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from council.sim._apis import ApiError, Asked, permissive
from council.sim._apis import plan as api_plan
from council.sim._config import VendorBehaviour
from council.sim._eliciting import elicit, record_truth, sent_record
from council.sim._faces import CHAT, Face, Refusal
from council.sim._judging import decide
from council.sim._reasoning import fit, spend
from council.sim._state import Work, _State
from council.sim._wire import (
    _BAD_PAGE, _JSON, Parsed, _authorized, _BadBody, _cut, _est_tokens, _hang_up, _json, _parse_body, _trickle,
)

MAX_BREAKPOINTS = 4  # cache_control blocks a request may mark, at a vendor caching at breakpoints (Anthropic's limit)

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


def add_routes(app: web.Application) -> None:
    """The gateway's routes: chat completions, the model list, and the unauthenticated test hooks."""
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/v1/sim/stats", _stats)
    app.router.add_post("/v1/sim/reset", _reset)
