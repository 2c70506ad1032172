"""Anthropic's Message Batches API on the embedded provider (``x-api-key`` and ``anthropic-version``), on the store
and clock of ``council.sim._batches`` (which describes the time, the faults and the billing both batch APIs share).

``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``, custom ids ``^[a-zA-Z0-9_-]{1,64}$`` and
unique, at most 100,000 requests and 256 MB, else 400 or 413), ``GET /v1/messages/batches/{id}``, ``POST
.../{id}/cancel``, ``GET .../{id}/results`` (JSONL of ``{"custom_id", "result"}``, once ended), ``GET
/v1/messages/batches`` (``limit``, ``after_id``, ``before_id``). As Anthropic documents it, ``request_counts`` shows
every request ``processing`` until the batch ends, and each request's ``params`` are checked when it is processed
(a bad one, or a model that is not one of Anthropic's native ids, is ``errored``). On Anthropic's host
(``/api.anthropic.com``) a batch's ``results_url`` names the host's prefix.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import orjson
from aiohttp import web

from council.sim._batches import (
    _DAY_S, BATCHES, BatchStore, _Batch, _batch_of, _jsonl, _limit, _page, _read_capped, _slow_reply,
)
from council.sim._messages import MESSAGES, anthropic_headers_refusal, read_params, refusal
from council.sim._serving import PREFIX
from council.sim._wire import _json

ANTHROPIC_MAX_REQUESTS = 100_000
ANTHROPIC_MAX_BYTES = 256 * 1024 * 1024
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _anthropic_store(request: web.Request) -> BatchStore | web.Response:
    """The provider's batches, brought up to now, or the refusal of a request without a key or a version."""
    refused = anthropic_headers_refusal(request)
    if refused is not None:
        return refused
    store = request.config_dict[BATCHES]
    store.catch_up()
    return store


def _rfc3339(store: BatchStore, t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(store.epoch(t), tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _anthropic_view(request: web.Request, store: BatchStore, b: _Batch) -> dict[str, Any]:
    """``b`` as an ``anthropic.types.messages.MessageBatch``."""
    counts = {"processing": len(b.bodies), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if b.end is not None:
        counts["processing"] = 0
        for line in b.answered:
            counts[line["result"]["type"]] += 1
    status = "ended" if b.end is not None else ("canceling" if b.cancel_at is not None else "in_progress")
    prefix = request.app.get(PREFIX, "")
    results_url = f"{request.url.origin()}{prefix}/v1/messages/batches/{b.id}/results" if b.end is not None else None
    return {
        "id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
        "created_at": _rfc3339(store, b.created), "ended_at": _rfc3339(store, b.ended),
        "expires_at": _rfc3339(store, b.created + _DAY_S), "cancel_initiated_at": _rfc3339(store, b.cancel_at),
        "archived_at": None, "results_url": results_url,
    }


def _check_requests(body: Any) -> tuple[list[str], list[Any]] | str:
    """The custom ids and params of a batch's requests, or what is wrong with them."""
    requests = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(requests, list) or not requests:
        return "requests: at least one request is required"
    if len(requests) > ANTHROPIC_MAX_REQUESTS:
        return f"requests: at most {ANTHROPIC_MAX_REQUESTS} requests are allowed, got {len(requests)}"
    custom_ids, params, seen = [], [], set()
    for i, r in enumerate(requests):
        cid = r.get("custom_id") if isinstance(r, dict) else None
        if not isinstance(cid, str) or not _CUSTOM_ID.fullmatch(cid):
            return f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"
        if cid in seen:
            return f"requests.{i}.custom_id: {cid!r} is used by an earlier request; custom ids must be unique"
        if not isinstance(r.get("params"), dict):
            return f"requests.{i}.params: Field required"
        seen.add(cid)
        custom_ids.append(cid)
        params.append(r["params"])
    return custom_ids, params


async def _create_message_batch(request: web.Request) -> web.Response:
    store = _anthropic_store(request)
    if isinstance(store, web.Response):
        return store
    raw = await _read_capped(request.content.read, ANTHROPIC_MAX_BYTES)
    if raw is None:
        return refusal(413, "request_too_large", f"A batch may be at most {ANTHROPIC_MAX_BYTES // 2**20} MB.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    checked = _check_requests(body)
    if isinstance(checked, str):
        return refusal(400, "invalid_request_error", checked)
    b = store.new_batch("anthropic", "msgbatch_sim", *checked, read_params)
    b.face = MESSAGES
    vendor = store.over_queue(b)
    if vendor is not None:
        return refusal(429, "rate_limit_error", f"This batch would exceed the {vendor} batch queue "
                                f"limit of enqueued tokens.")
    store.batches[b.id] = b
    await _slow_reply(store)
    return _json(_anthropic_view(request, store, b))


def _message_batch(request: web.Request) -> _Batch | web.Response:
    b = _batch_of(request, _anthropic_store(request), "anthropic")
    if b is None:
        return refusal(404, "not_found_error", f"message_batch: {request.match_info['batch_id']}")
    return b


async def _get_message_batch(request: web.Request) -> web.Response:
    got = _message_batch(request)
    return got if isinstance(got, web.Response) else _json(_anthropic_view(request, request.config_dict[BATCHES], got))


async def _cancel_message_batch(request: web.Request) -> web.Response:
    got = _message_batch(request)
    if isinstance(got, web.Response):
        return got
    store = request.config_dict[BATCHES]
    if got.end is None:
        store.cancel(got)
    return _json(_anthropic_view(request, store, got))


async def _message_batch_results(request: web.Request) -> web.Response:
    got = _message_batch(request)
    if isinstance(got, web.Response):
        return got
    if got.end is None:
        return refusal(400, "invalid_request_error", f"Message Batch {got.id} has not yet ended.")
    return web.Response(body=_jsonl(got.answered), content_type="application/binary")


async def _list_message_batches(request: web.Request) -> web.Response:
    store = _anthropic_store(request)
    if isinstance(store, web.Response):
        return store
    limit = _limit(request, 1000)
    if limit is None:
        return refusal(400, "invalid_request_error", "limit: must be an integer from 1 to 1000")
    newest = [b for b in reversed(store.batches.values()) if b.api == "anthropic"]
    page, more = _page(newest, limit, request.query.get("after_id"), request.query.get("before_id"), lambda b: b.id)
    data = [_anthropic_view(request, store, b) for b in page]
    return _json({"data": data, "has_more": more, "first_id": data[0]["id"] if data else None,
                  "last_id": data[-1]["id"] if data else None})


def add_routes(app: web.Application) -> None:
    """Anthropic's message batches (on the main application or a host's), on the store of
    ``council.sim._batches`` (added first to the main application)."""
    app.router.add_post("/v1/messages/batches", _create_message_batch)
    app.router.add_get("/v1/messages/batches", _list_message_batches)
    app.router.add_get("/v1/messages/batches/{batch_id}", _get_message_batch)
    app.router.add_post("/v1/messages/batches/{batch_id}/cancel", _cancel_message_batch)
    app.router.add_get("/v1/messages/batches/{batch_id}/results", _message_batch_results)
