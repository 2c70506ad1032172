"""Anthropic's native Messages API on the embedded provider: ``POST /v1/messages`` (also under Anthropic's own
host, ``/api.anthropic.com/v1/messages``). Like Anthropic's API it serves Anthropic's native model ids only
(``claude-sonnet-4-5``, ``claude-sonnet-4-5-20250929``; ``council.sim._world.NATIVE``): any other id is a 404
``not_found_error`` (``SimConfig.api_rules`` off: any id the world knows).

A request is read into the same conversation a chat-completions request would carry (the ``system`` prompt
first, as a system message, then the turns) and answered by the same work (``council.sim._serving.receive``
and ``bill``): the same verdicts and reasons, the same quota, faults, billing and stats. Only the wording is
Anthropic's: the reply is a ``message`` object, an error is ``{"type": "error", "error": {"type", "message"}}``
(400 ``invalid_request_error``, 401 ``authentication_error``, 404 ``not_found_error``, 429 ``rate_limit_error``
for the vendor's quota, 529 ``overloaded_error`` for a 429 storm, both with ``retry-after``, and, drawn with
``VendorBehaviour.overloaded_rate``, a 529 ``overloaded_error`` before the quota; 500 ``api_error``). Rate-limit
headers carry Anthropic's names (``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
remaining,reset}``, the reset an RFC 3339 time; the provider keeps one token bucket, which the three token groups
all report) and a 429 ``retry-after`` in seconds (https://docs.anthropic.com/en/api/rate-limits).

With extended thinking on (``thinking: {"type": "enabled", "budget_tokens": N}``, ``council.sim._apis``), the
reply's ``content`` opens with a ``thinking`` block (with its ``signature``) before the text block, and the
thinking tokens are part of ``output_tokens``.

Usage is counted as Anthropic counts it: ``input_tokens`` are the prompt tokens neither read from nor written
to the cache, next to ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
from aiohttp import web

from council.sim._apis import ApiError
from council.sim._quota import Admission
from council.sim._reasoning import thinking_block
from council.sim._faces import Refusal
from council.sim._serving import serve_request
from council.sim._state import Work, _State
from council.sim._wire import Parsed, _authorized, _BadBody, _content_text, _json

ANTHROPIC_RATE_LIMITS = "https://docs.anthropic.com/en/api/rate-limits"
ANTHROPIC_ERRORS = "https://docs.anthropic.com/en/api/errors"

_ROLES = frozenset({"user", "assistant"})
_STOP = {"stop": "end_turn", "length": "max_tokens"}


def error_body(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}}


def refusal(status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """An error answered in Anthropic's shape."""
    return _json(error_body(type_, message), status, headers)


def anthropic_headers_refusal(request: web.Request) -> web.Response | None:
    """The refusal of a request without an API key or an API version (every Anthropic route needs both). The
    key comes in ``x-api-key`` or, as the ``anthropic`` SDK (2.x) sends it, ``Authorization: Bearer``."""
    if not request.headers.get("x-api-key", "").strip() and not _authorized(request):
        return refusal(401, "authentication_error", "x-api-key header is required")
    if not request.headers.get("anthropic-version", "").strip():
        return refusal(400, "invalid_request_error", "anthropic-version: header is required")
    return None


def read_params(body: Any) -> Parsed:
    """A Messages request body as the provider reads it: ``system`` becomes the first (system) message."""
    if not isinstance(body, dict):
        raise _BadBody("The request body must be a JSON object.")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _BadBody("model: Field required")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _BadBody("max_tokens: Field required, a positive integer")
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= 1):
        raise _BadBody("temperature: must be a number between 0 and 1")
    if body.get("stream"):
        raise _BadBody("stream: streaming is not supported by the embedded provider")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise _BadBody("messages: at least one message is required")
    messages, breakpoints = [], []
    system = body.get("system")
    if system is not None:
        text, marks = _content_text(system, 0, "system")
        messages.append(("system", text))
        breakpoints += [(0, chars) for chars in marks]
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            raise _BadBody(f"messages.{i}.role: must be 'user' or 'assistant'")
        text, marks = _content_text(m.get("content"), i, f"messages.{i}.content")
        breakpoints += [(len(messages), chars) for chars in marks]
        messages.append((m["role"], text))
    return Parsed(model, messages, max_tokens, breakpoints, "messages", body)


def anthropic_usage(usage: dict[str, Any]) -> dict[str, int]:
    """A chat-completions usage in Anthropic's counting: input tokens exclude those read from or written to the
    cache."""
    details = usage.get("prompt_tokens_details") or {}
    read, written = details.get("cached_tokens", 0), details.get("cache_write_tokens", 0)
    return {
        "input_tokens": usage["prompt_tokens"] - read - written,
        "output_tokens": usage["completion_tokens"],
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
    }


def _rfc3339_in(seconds: float) -> str:
    at = datetime.now(timezone.utc) + timedelta(seconds=math.ceil(seconds))
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


class _MessagesFace:
    """Anthropic's wording of the provider's answers and refusals."""

    vendor = "anthropic"
    overloads = True

    def model_id(self, asked: str) -> str:
        return asked

    def unauthorized(self) -> Refusal:
        return 401, error_body("authentication_error", "x-api-key header is required"), None

    def bad_request(self, message: str, param: str | None) -> Refusal:
        return 400, error_body("invalid_request_error", message), None

    def not_found(self, model_id: str) -> Refusal:
        return 404, error_body("not_found_error", f"model: {model_id}"), None

    def refused(self, error: ApiError) -> Refusal:
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(error.status, "api_error")
        return error.status, error_body(kind, error.message), None

    def overloaded(self) -> Refusal:
        return 529, error_body("overloaded_error", "Overloaded"), None

    def headers(self, admission: Admission, shown: bool) -> dict[str, str] | None:
        """Anthropic's rate-limit headers (the one token bucket reported as tokens, input and output tokens), and
        ``retry-after`` on a 429."""
        out: dict[str, str] = {}
        if shown:
            for kind, groups in (("requests", ("requests",)),
                                 ("tokens", ("tokens", "input-tokens", "output-tokens"))):
                bucket = admission.buckets.get(kind)
                if bucket is None:
                    continue
                for group in groups:
                    out[f"anthropic-ratelimit-{group}-limit"] = str(bucket.limit)
                    out[f"anthropic-ratelimit-{group}-remaining"] = str(bucket.remaining)
                    out[f"anthropic-ratelimit-{group}-reset"] = _rfc3339_in(bucket.reset_s)
        if not admission.ok:
            out["retry-after"] = str(max(1, math.ceil(admission.retry_after_s)))
        return out or None

    def storm(self, model_id: str, left_s: float) -> Refusal:
        return 529, error_body("overloaded_error", "Overloaded"), {"retry-after": str(math.ceil(left_s))}

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str] | None) -> Refusal:
        return 429, error_body(
            "rate_limit_error",
            f"This request would exceed the rate limit for your organization of {admission.limited_by} per "
            f"minute for {model_id}. Please try again in {admission.retry_after_s:.3g}s.",
        ), headers

    def server_error(self, headers: dict[str, str] | None) -> Refusal:
        return 500, error_body("api_error", "Internal server error"), headers

    def reply(self, st: _State, work: Work, usage: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": work.content}]
        if work.plan.thinking_block:
            content.insert(0, thinking_block(st.config.seed, work.model_id, work.messages))
        return {
            "id": f"msg_sim{next(st.ids):012x}",
            "type": "message",
            "role": "assistant",
            "model": work.model_id,
            "content": content,
            "stop_reason": _STOP[work.finish],
            "stop_sequence": None,
            "usage": anthropic_usage(usage),
        }


MESSAGES = _MessagesFace()


async def _messages(request: web.Request) -> web.StreamResponse:
    refused = anthropic_headers_refusal(request)
    if refused is not None:
        return refused
    try:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            raise _BadBody(f"There was an issue with your request body: {exc}") from exc
        parsed = read_params(body)
    except _BadBody as exc:
        return refusal(400, "invalid_request_error", str(exc))
    return await serve_request(request, parsed, MESSAGES)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/messages", _messages)

