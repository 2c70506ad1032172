"""The embedded provider's wire: JSON responses and OpenAI-shaped errors, the transport faults' bytes, and the
reading of a chat-completions body (``read_body``) that every face and the batch APIs share."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson
from aiohttp import web

from council.sim._cache import Breakpoint
from council.sim._reasoning import est_tokens

Message = tuple[str, str]  # (role, content)

_JSON = "application/json"
_RESPONSE_FORMATS = frozenset({"text", "json_object", "json_schema"})


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


_est_tokens = est_tokens


# ---- request parsing -----------------------------------------------------------------------------------


class Parsed(NamedTuple):
    """A chat request as the provider reads it, whatever API it came through: the model id asked, the messages
    as ``(role, text)``, the output cap (chat: ``max_completion_tokens``, else ``max_tokens``; Messages:
    ``max_tokens``), the cache breakpoints marked, the API (``chat`` or ``messages``) and the decoded body (for
    the makers' rules, ``council.sim._apis``)."""

    model: str
    messages: list[Message]
    max_tokens: int | None
    breakpoints: list[Breakpoint]
    api: str = "chat"
    body: Mapping[str, Any] = {}


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
    for param in ("temperature", "top_p"):
        value = body.get(param)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _BadBody(f"'{param}' must be a number", param)
    for param in ("max_tokens", "max_completion_tokens"):
        value = body.get(param)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise _BadBody(f"'{param}' must be a positive integer", param)
    max_tokens = body.get("max_completion_tokens")
    if max_tokens is None:
        max_tokens = body.get("max_tokens")
    fmt = body.get("response_format")
    if fmt is not None:
        if not isinstance(fmt, dict) or fmt.get("type") not in _RESPONSE_FORMATS:
            raise _BadBody("'response_format.type' must be one of text, json_object, json_schema", "response_format")
        if fmt["type"] == "json_schema" and not isinstance(fmt.get("json_schema"), dict):
            raise _BadBody("'response_format.json_schema' must be an object", "response_format")
    if body.get("stream"):
        raise _BadBody("streaming is not supported by the embedded provider", "stream")
    return Parsed(model, messages, max_tokens, breakpoints, "chat", body)
