"""How each API words the provider's answers and refusals (a "face"): the same work, quota and faults behind
every face, each API's own shapes.

``CHAT`` is the gateway (``/v1/chat/completions``, OpenRouter-like: any model the world knows); :class:`ChatFace`
with a vendor is that vendor's own OpenAI-compatible API (OpenAI's, DeepSeek's, Alibaba's, Mistral's: OpenAI's
error shape and ``x-ratelimit-*`` headers, native ids only); ``GEMINI`` is Gemini's OpenAI-compatible endpoint,
whose errors come in Google's list-wrapped shape ``[{"error": {"code", "message", "status", "details"}}]`` and
which sends no rate-limit headers (its 429 says when to come back in a ``google.rpc.RetryInfo`` detail). Anthropic's
Messages face is ``council.sim._messages.MESSAGES``.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Protocol

from council.sim._apis import ApiError
from council.sim._quota import Admission
from council.sim._wire import _error_body

if TYPE_CHECKING:
    from council.sim._state import Work, _State

Refusal = tuple[int, Any, dict[str, str] | None]
"""A refused request: the status, the error body and its headers."""

GEMINI_RATE_LIMITS = "https://ai.google.dev/gemini-api/docs/rate-limits"
GEMINI_TROUBLESHOOTING = "https://ai.google.dev/gemini-api/docs/troubleshooting"
OPENAI_RATE_LIMITS = "https://platform.openai.com/docs/guides/rate-limits"
OPENAI_ERRORS = "https://platform.openai.com/docs/guides/error-codes"


class Face(Protocol):
    """How one API words the provider's answers: the same work and the same faults, each API's own error, header
    and reply shapes."""

    vendor: str | None  # the vendor whose own API this is (native ids only), None for the gateway
    overloads: bool  # answers VendorBehaviour.overloaded_rate's 529s (Anthropic's face)

    def model_id(self, asked: str) -> str: ...

    def unauthorized(self) -> Refusal: ...

    def bad_request(self, message: str, param: str | None) -> Refusal: ...

    def not_found(self, model_id: str) -> Refusal: ...

    def refused(self, error: ApiError) -> Refusal: ...

    def overloaded(self) -> Refusal: ...

    def storm(self, model_id: str, left_s: float) -> Refusal: ...

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str] | None) -> Refusal: ...

    def server_error(self, headers: dict[str, str] | None) -> Refusal: ...

    def headers(self, admission: Admission, shown: bool) -> dict[str, str] | None: ...

    def reply(self, st: _State, work: Work, usage: dict[str, Any]) -> dict[str, Any]: ...


class ChatFace:
    """Chat completions' (OpenAI's) wording of answers and refusals: the gateway (``vendor`` None) or a vendor's own
    OpenAI-compatible API."""

    overloads = False

    def __init__(self, vendor: str | None = None) -> None:
        self.vendor = vendor

    def model_id(self, asked: str) -> str:
        return asked

    def unauthorized(self) -> Refusal:
        return 401, _error_body("You didn't provide an API key. Provide it in an Authorization header: 'Bearer "
                                "YOUR_KEY'.", "invalid_request_error", "invalid_api_key"), None

    def bad_request(self, message: str, param: str | None) -> Refusal:
        return 400, _error_body(message, "invalid_request_error", None, param), None

    def not_found(self, model_id: str) -> Refusal:
        return 404, _error_body(f"The model `{model_id}` does not exist or you do not have access to it.",
                                "invalid_request_error", "model_not_found"), None

    def refused(self, error: ApiError) -> Refusal:
        return error.status, _error_body(error.message, error.type, error.code, error.param), None

    def overloaded(self) -> Refusal:
        return 503, _error_body("The engine is currently overloaded, please try again later.", "server_error"), None

    def storm(self, model_id: str, left_s: float) -> Refusal:
        return 429, _error_body(
            f"Rate limit reached for {model_id}: the service is overloaded. Please try again in {left_s:.3g}s.",
            "requests", "rate_limit_exceeded", None,
        ), {"retry-after": str(math.ceil(left_s)), "retry-after-ms": str(math.ceil(left_s * 1000))}

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str] | None) -> Refusal:
        what = admission.limited_by
        return 429, _error_body(
            f"Rate limit reached for {model_id} on {what} per min. Please try again in "
            f"{admission.retry_after_s:.3g}s.",
            what, "rate_limit_exceeded", None,
        ), headers

    def server_error(self, headers: dict[str, str] | None) -> Refusal:
        return 500, _error_body("The server had an error while processing your request.", "server_error"), headers

    def headers(self, admission: Admission, shown: bool) -> dict[str, str] | None:
        """``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (and ``retry-after``, ``retry-after-ms`` on a
        429); a vendor that shows none still says when to come back."""
        if shown:
            return admission.headers
        return None if admission.ok else {"retry-after": admission.headers["retry-after"]}

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


CHAT = ChatFace()


_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                  500: "INTERNAL", 503: "UNAVAILABLE"}
_QUOTA_IDS = {"requests": ("generate_content_requests", "GenerateRequestsPerMinutePerProjectPerModel"),
              "tokens": ("generate_content_input_token_count", "GenerateContentInputTokensPerModelPerMinute")}


def google_error(code: int, message: str, details: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """An error in the shape Gemini's OpenAI-compatible endpoint answers: a list holding one ``{"error": ...}``."""
    error: dict[str, Any] = {"code": code, "message": message, "status": _GOOGLE_STATUS.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return [{"error": error}]


def _retry_info(wait_s: float) -> dict[str, Any]:
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{max(1, math.ceil(wait_s))}s"}


class GeminiFace(ChatFace):
    """Gemini's OpenAI-compatible endpoint: chat completions' replies, Google's errors, no rate-limit headers.
    A model may be named ``models/gemini-2.5-pro`` as well as ``gemini-2.5-pro``."""

    def __init__(self) -> None:
        super().__init__("google")

    def model_id(self, asked: str) -> str:
        return asked.strip().removeprefix("models/")

    def unauthorized(self) -> Refusal:
        return 401, google_error(401, "Request is missing required authentication credential. Expected an API key."), None

    def bad_request(self, message: str, param: str | None) -> Refusal:
        return 400, google_error(400, message), None

    def not_found(self, model_id: str) -> Refusal:
        return 404, google_error(404, f"models/{model_id} is not found for API version v1beta, or is not supported "
                                      "for generateContent. Call ListModels to see the list of available models and "
                                      "their supported methods."), None

    def refused(self, error: ApiError) -> Refusal:
        return error.status, google_error(error.status, error.message), None

    def storm(self, model_id: str, left_s: float) -> Refusal:
        return 429, google_error(429, "Resource has been exhausted (e.g. check quota).", [_retry_info(left_s)]), None

    def limited(self, model_id: str, admission: Admission, headers: dict[str, str] | None) -> Refusal:
        metric, quota_id = _QUOTA_IDS.get(admission.limited_by, _QUOTA_IDS["requests"])
        bucket = admission.buckets.get(admission.limited_by)
        violation = {"quotaMetric": f"generativelanguage.googleapis.com/{metric}", "quotaId": quota_id,
                     "quotaDimensions": {"location": "global", "model": model_id}}
        if bucket is not None:
            violation["quotaValue"] = str(bucket.limit)
        return 429, google_error(
            429, "You exceeded your current quota, please check your plan and billing details. For more information "
                 f"on this error, head to: {GEMINI_RATE_LIMITS}.",
            [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
             {"@type": "type.googleapis.com/google.rpc.Help",
              "links": [{"description": "Learn more about Gemini API quotas", "url": GEMINI_RATE_LIMITS}]},
             _retry_info(admission.retry_after_s)],
        ), None

    def server_error(self, headers: dict[str, str] | None) -> Refusal:
        return 500, google_error(500, "An internal error has occurred. Please retry or report in "
                                      f"{GEMINI_TROUBLESHOOTING}"), None

    def headers(self, admission: Admission, shown: bool) -> dict[str, str] | None:
        return None


GEMINI = GeminiFace()
