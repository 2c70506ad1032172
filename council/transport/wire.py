"""The two wire formats a vendor's calls can use (``VendorSettings.api``): OpenAI-compatible chat completions and
Anthropic's native Messages API. Each format is one small class that knows the request path, the auth headers,
the request body built from the council's messages, how to read a 200 body and how to read an error body. The
client (:mod:`council.transport.client`) and the batch formats (:mod:`council.transport.batch_formats`) share
them, so a batched request carries the very body its synchronous call would send.

Nothing here does I/O or knows the retry policy: the client decides what an error means for the run, from the
facts an :class:`ErrorBody` states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from council.core.schema import Usage

Api = Literal["openai", "anthropic"]
ANTHROPIC_VERSION = "2023-06-01"
_DECODE_ERRORS = (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError, ValueError)


@dataclass(frozen=True, slots=True)
class Reply:
    """What a model answered, in the council's terms (OpenAI's finish reasons, :class:`Usage`)."""

    content: str | None
    finish_reason: str | None
    usage: Usage


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """What an error body says: the provider's message and code, and whether it names a model that does not
    exist (or that the key cannot use) or an account with no quota or credit left (both permanent)."""

    text: str
    code: str | None
    unknown_model: bool = False
    no_quota: bool = False
    # the request carries a parameter (or value) the model refuses: every request of the seat would be refused
    refused_parameter: bool = False
    retry_after_s: float | None = None  # the body's wait hint (Gemini's RetryInfo ``retryDelay``)


class MalformedReply(Exception):
    """A 200 body that is not a reply the format can read (the provider billed it all the same)."""


def marked(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """``messages`` with two cache breakpoints marked, for a provider that caches only up to a content block
    marked ``cache_control`` (and only when the whole prefix up to it is identical to an earlier request's):
    the system message, which every request of a run shares, and the user message that ends round one's prompt
    (the last user message before the first assistant message, or the last one when there is none), which a
    judge-v3 round two (and a repair) repeats after it. Round one's request marks that message as it is written,
    so round two's prefix up to the breakpoint is the same bytes. A marked message is sent as one text part,
    ``[{"type": "text", "text": ..., "cache_control": {"type": "ephemeral"}}]``; every other message, and a
    content that is not a string, is sent as it is. Two breakpoints, within the four a request may mark."""
    roles = [m.get("role") for m in messages]
    first_reply = roles.index("assistant") if "assistant" in roles else len(messages)
    users = [i for i in range(first_reply) if roles[i] == "user"]
    marks = {i for i, role in enumerate(roles) if role == "system"} | set(users[-1:])
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if i in marks and isinstance(content, str):
            part = {"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}
            message = {**message, "content": [part]}
        out.append(message)
    return out


class _Wire:
    """What both formats share: a 200 body read into a :class:`Reply` by the format's ``read``."""

    noun: str

    def read(self, data: Any) -> Reply:
        raise NotImplementedError

    def reply(self, raw: bytes) -> Reply:
        """A 200 body's reply; :class:`MalformedReply` when it is not one."""
        try:
            return self.read(orjson.loads(raw))
        except _DECODE_ERRORS as exc:
            raise self._malformed(exc, raw) from None

    def reply_of(self, data: Any) -> Reply:
        """An already decoded body's reply (a batch result's), read without encoding it again."""
        try:
            return self.read(data)
        except _DECODE_ERRORS as exc:
            raise self._malformed(exc, orjson.dumps(data)) from None

    def _malformed(self, exc: Exception, raw: bytes) -> MalformedReply:
        return MalformedReply(f"malformed {self.noun} body ({type(exc).__name__}): {raw[:120]!r}")


class OpenAIWire(_Wire):
    """OpenAI-compatible chat completions (OpenAI, OpenRouter, LiteLLM, the embedded provider)."""

    path = "/chat/completions"
    noun = "completion"

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def body(self, model: str, messages: list[dict[str, str]], fields: dict[str, Any], *,
             response_format: dict[str, Any] | None = None, cache_breakpoints: bool = False) -> dict[str, Any]:
        """The request: ``fields`` are the seat's output bound, sampling and reasoning fields
        (:meth:`council.transport.shape.RequestShape.fields`)."""
        body: dict[str, Any] = {"model": model, "messages": marked(messages) if cache_breakpoints else messages, **fields}
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def read(self, data: Any) -> Reply:
        """A decoded completion (raises ``KeyError``, ``TypeError``... when it is not one). Content given as chunks
        (Mistral's reasoning models: a ``thinking`` chunk, then ``text`` chunks) reads as its text chunks joined.
        Tokens a total counts beyond prompt and completion are reasoning billed as output that the completion left
        out (Gemini's OpenAI-compatible endpoint: its thoughts): they join the completion, as OpenAI counts them.
        Cached tokens are ``prompt_tokens_details.cached_tokens`` or Mistral's older ``num_cached_tokens``; a cache
        write that overlaps them (more read and written than the prompt holds: Gemini's cache made and read by one
        request, through OpenRouter) is the same tokens, counted once, as read."""
        choice = data["choices"][0]
        content = choice["message"].get("content")
        if isinstance(content, list):
            texts = [part["text"] for part in content
                     if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)]
            content = "".join(texts) if texts else None
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = int(usage.get("total_tokens") or 0)
        reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
        if total > prompt + completion:
            hidden = total - prompt - completion
            completion, reasoning = completion + hidden, max(reasoning, hidden)
        cached = int(details.get("cached_tokens") or usage.get("num_cached_tokens") or 0)
        written = int(details.get("cache_write_tokens") or 0)  # OpenRouter's (and OpenAI's) name for it
        if cached + written > prompt:
            written = max(0, min(written - cached, prompt - cached))
        return Reply(
            content=content if isinstance(content, str) else None,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total,
                        reasoning_tokens=reasoning, cached_tokens=cached, cache_write_tokens=written),
        )

    def error(self, status: int, raw: bytes) -> ErrorBody:
        """An OpenAI-shaped error body ``{"error": {"message", "code"}}``, else the body's start. A gateway's
        error that passes on the upstream provider's (OpenRouter: "Provider returned error", the upstream's own
        words in ``error.metadata.raw``, its name in ``provider_name``) says both."""
        text, code, retry = raw[:300].decode(errors="replace"), None, None
        try:
            data = orjson.loads(raw)
            if isinstance(data, list) and data and isinstance(data[0], dict):  # Gemini's: a list of one error
                data = data[0]
            if isinstance(data, dict) and isinstance(data.get("error"), dict) and "status" in data["error"]:
                error = data["error"]  # Google's {"code": 429, "message", "status": "RESOURCE_EXHAUSTED", "details"}
                text, code, retry = str(error.get("message", ""))[:300], str(error["status"]), _retry_delay(error)
            elif isinstance(data, dict) and isinstance(data.get("error"), dict):
                error = data["error"]
                text = str(error.get("message", ""))
                metadata = error.get("metadata")
                upstream = metadata.get("raw") if isinstance(metadata, dict) else None
                if isinstance(upstream, str) and upstream.strip() and upstream not in text:
                    provider = metadata.get("provider_name")
                    text = f"{text} ({provider}): {upstream}" if isinstance(provider, str) else f"{text}: {upstream}"
                text = text[:300]
                code = str(error["code"]) if error.get("code") is not None else None
        except orjson.JSONDecodeError:
            pass
        return ErrorBody(text, code, unknown_model=_names_missing_model(text, code),
                         no_quota=status == 429 and code == "insufficient_quota",
                         refused_parameter=status == 400 and _refuses_parameter(text, code), retry_after_s=retry)


# Anthropic's stop reasons in the finish reasons the council reads (OpenAI's); any other passes as it is.
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
           "model_context_window_exceeded": "length", "refusal": "content_filter", "tool_use": "tool_calls"}


class AnthropicWire(_Wire):
    """Anthropic's Messages API (``/v1/messages``), as its batches take it too."""

    path = "/messages"
    noun = "message"

    def headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION, "Content-Type": "application/json"}

    def body(self, model: str, messages: list[dict[str, str]], fields: dict[str, Any], *,
             response_format: dict[str, Any] | None = None, cache_breakpoints: bool = False) -> dict[str, Any]:
        """System messages become the top-level ``system`` (text blocks), the other turns ``messages`` of text
        blocks; the blocks :func:`marked` marks carry their ``cache_control``; ``fields`` as for chat completions
        (``max_tokens``, ``temperature`` or ``thinking``). ``response_format`` is not sent: the Messages API has no
        such field (the prompt asks for the JSON shape)."""
        system: list[dict[str, Any]] = []
        turns: list[dict[str, Any]] = []
        for message in marked(messages) if cache_breakpoints else messages:
            blocks = _blocks(message.get("content"))
            if message.get("role") == "system":
                system.extend(blocks)
            else:
                turns.append({"role": message["role"], "content": blocks})
        body: dict[str, Any] = {"model": model, "max_tokens": fields["max_tokens"], "messages": turns}
        if system:
            body["system"] = system
        body.update((k, v) for k, v in fields.items() if k != "max_tokens")
        return body

    def read(self, data: Any) -> Reply:
        """A decoded Message: its text blocks joined; prompt tokens count the cache's reads and writes too."""
        texts = [block["text"] for block in data["content"] if block.get("type") == "text"]
        usage = data["usage"]
        fresh = int(usage.get("input_tokens") or 0)
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        output = int(usage.get("output_tokens") or 0)
        stop = data.get("stop_reason")
        return Reply(
            content="".join(texts) if texts else None,
            finish_reason=_FINISH.get(stop, stop),
            usage=Usage(
                prompt_tokens=fresh + read + written, completion_tokens=output,
                total_tokens=fresh + read + written + output,
                reasoning_tokens=int((usage.get("output_tokens_details") or {}).get("thinking_tokens") or 0),
                cached_tokens=read, cache_write_tokens=written,
            ),
        )

    def error(self, status: int, raw: bytes) -> ErrorBody:
        """An Anthropic error body ``{"type": "error", "error": {"type", "message"}}``, else the body's start.
        The error's ``type`` is the code: ``not_found_error`` naming a model is an unknown model,
        ``billing_error`` an account with no credit left (``overloaded_error``, HTTP 529, is retried by status)."""
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if not (isinstance(data, dict) and isinstance(data.get("error"), dict)):
            return ErrorBody(raw[:300].decode(errors="replace"), None)
        error = data["error"]
        text = str(error.get("message", ""))[:300]
        code = str(error["type"]) if error.get("type") is not None else None
        names_model = code == "not_found_error" and bool(re.search(r"\bmodel\b", text, re.IGNORECASE))
        return ErrorBody(text, code, unknown_model=names_model or _names_missing_model(text, code),
                         no_quota=code == "billing_error", refused_parameter=status == 400 and _refuses_parameter(text, code))


Wire = OpenAIWire | AnthropicWire
WIRES: dict[str, Wire] = {"openai": OpenAIWire(), "anthropic": AnthropicWire()}


def wire_for(api: str) -> Wire:
    """The wire format named by ``VendorSettings.api``."""
    try:
        return WIRES[api]
    except KeyError:
        raise ValueError(f"unknown API {api!r} (expected one of {', '.join(WIRES)})") from None


def _blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as Anthropic text blocks (a list of blocks is already in that form)."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


_MISSING_MODEL = re.compile(
    r"\bmodel\b.*\b(does not exist|do(es)? not have access|not found|no such|is not a valid|unknown)\b"
    r"|\b(unknown|invalid|unsupported) model\b|\bno model\b",
    re.IGNORECASE,
)


def _names_missing_model(text: str, code: str | None) -> bool:
    return code in ("model_not_found", "model_not_available") or bool(_MISSING_MODEL.search(text))


# What a 400 says when the request carries a parameter or value the model refuses whatever the prompt: OpenAI's codes
# and words (https://platform.openai.com/docs/guides/reasoning), Anthropic's for extended thinking
# (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking), Gemini's for its thinking budget
# (https://ai.google.dev/gemini-api/docs/thinking).
_REFUSED_PARAMETER = re.compile(
    r"unsupported (parameter|value)|is not supported with this model|unrecognized request argument"
    r"|budget_tokens|thinking[ _]budget|only works in thinking mode|when thinking is enabled|thinking is not supported",
    re.IGNORECASE,
)


def _refuses_parameter(text: str, code: str | None) -> bool:
    return code in ("unsupported_parameter", "unsupported_value") or bool(_REFUSED_PARAMETER.search(text))


def _retry_delay(error: dict[str, Any]) -> float | None:
    """Google's RetryInfo ``retryDelay`` ("23s", "1.5s") of an error, in seconds."""
    for detail in error.get("details") or ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None
