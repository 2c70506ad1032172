"""Each provider's own API on the embedded provider, under a path prefix naming its real host.

A configuration written for the real providers is pointed at the provider by replacing ``https://`` with
``http://127.0.0.1:PORT/``: ``https://api.openai.com/v1`` becomes ``http://127.0.0.1:PORT/api.openai.com/v1``.
Each host is an aiohttp sub-application mounted at ``/<host>``: aiohttp strips the prefix, the routes are the
gateway's own handlers (``council.sim._serving``, ``council.sim._messages``, ``council.sim._batches``,
``council.sim._message_batches``), and the
sub-application tells them their face (``FACE``: the host's wording and native vendor) and prefix (``PREFIX``).

A host serves only its own vendor's native ids (``council.sim._world.NATIVE``, no ``org/`` part): another id,
``openai/gpt-5`` on OpenAI's host or another vendor's model, is a 404 in the host's wording (with
``SimConfig.api_rules`` off, any id the world knows). The gateway (``/v1/chat/completions``, OpenRouter-like)
keeps serving any id the world knows; the makers' parameter rules (``council.sim._apis``) apply on every way in.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from council.sim import _batches, _message_batches, _messages
from council.sim._faces import GEMINI, GEMINI_RATE_LIMITS, GEMINI_TROUBLESHOOTING, OPENAI_ERRORS, OPENAI_RATE_LIMITS
from council.sim._faces import ChatFace, Face
from council.sim._serving import FACE, PREFIX, _chat, _models

ANTHROPIC_MESSAGES = "https://docs.anthropic.com/en/api/messages"
ANTHROPIC_BATCHES = "https://docs.anthropic.com/en/docs/build-with-claude/batch-processing"
OPENAI_BATCHES = "https://platform.openai.com/docs/guides/batch"
DEEPSEEK_API = "https://api-docs.deepseek.com/"
DASHSCOPE_API = "https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope"
MISTRAL_API = "https://docs.mistral.ai/api/"
OPENROUTER_API = "https://openrouter.ai/docs/api-reference/overview"
GEMINI_OPENAI_BATCHES = "https://developers.googleblog.com/en/gemini-batch-api-now-supports-embeddings-and-openai-compatibility/"
DASHSCOPE_BATCHES = "https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai"


@dataclass(frozen=True, slots=True)
class Host:
    """One provider's own API: its host (the path prefix), its vendor, its face, its routes, and what it plays."""

    host: str
    vendor: str
    face: Face
    chat: tuple[str, ...] = ()  # chat-completions paths
    models: str | None = None  # the model list's path
    messages: bool = False  # Anthropic's Messages API and message batches
    openai_batches: bool = False  # OpenAI's files and batches
    does: str = ""
    pages: tuple[str, ...] = ()

    @property
    def batches_at(self) -> str:
        """Where OpenAI's files and batches are, beside the chat completions (``/v1``, ``/v1beta/openai``...)."""
        return self.chat[0].removesuffix("/chat/completions") if self.chat else "/v1"

    @property
    def routes(self) -> list[str]:
        """Every path the host serves, prefix included."""
        paths = [*self.chat, *([self.models] if self.models else [])]
        if self.messages:
            paths += ["/v1/messages", "/v1/messages/batches[/{id}[/cancel|/results]]"]
        if self.openai_batches:
            paths += [f"{self.batches_at}/files[/{{id}}[/content]]", f"{self.batches_at}/batches[/{{id}}[/cancel]]"]
        return [f"/{self.host}{path}" for path in paths]


HOSTS: tuple[Host, ...] = (
    Host("api.openai.com", "openai", ChatFace("openai"), ("/v1/chat/completions",), "/v1/models",
         openai_batches=True,
         does="OpenAI's API: native ids (`gpt-5`; `openai/gpt-5` or another vendor's model is a 404 "
              "`model_not_found`), OpenAI's error bodies, `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` "
              "headers and `retry-after` on a 429.",
         pages=(OPENAI_ERRORS, OPENAI_RATE_LIMITS, OPENAI_BATCHES)),
    Host("api.anthropic.com", "anthropic", _messages.MESSAGES, messages=True,
         does="Anthropic's Messages API and message batches (also at the unprefixed `/v1/messages`): native ids "
              "(`claude-sonnet-4-5`, `claude-sonnet-4-5-20250929`), else 404 `{\"type\": \"error\", \"error\": "
              "{\"type\": \"not_found_error\", \"message\": \"model: <id>\"}}`; `anthropic-ratelimit-*` headers "
              "(resets in RFC 3339), `retry-after` on a 429; 529 `overloaded_error` (`overloaded_rate`).",
         pages=(ANTHROPIC_MESSAGES, _messages.ANTHROPIC_RATE_LIMITS, _messages.ANTHROPIC_ERRORS, ANTHROPIC_BATCHES)),
    Host("generativelanguage.googleapis.com", "google", GEMINI, ("/v1beta/openai/chat/completions",),
         "/v1beta/openai/models", openai_batches=True,
         does="Gemini's OpenAI-compatible endpoint, its batches through OpenAI's files and batches: native ids "
              "(`gemini-2.5-pro`, also `models/gemini-2.5-pro`); "
              "errors in Google's list-wrapped shape `[{\"error\": {\"code\", \"message\", \"status\"}}]` "
              "(`INVALID_ARGUMENT` 400, `NOT_FOUND` 404, `INTERNAL` 500); no rate-limit headers; a 429 is "
              "`RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` detail whose `retryDelay` (\"23s\") is the wait.",
         pages=(GEMINI_RATE_LIMITS, GEMINI_TROUBLESHOOTING, "https://ai.google.dev/gemini-api/docs/openai",
                GEMINI_OPENAI_BATCHES)),
    Host("api.deepseek.com", "deepseek", ChatFace("deepseek"), ("/chat/completions", "/v1/chat/completions"),
         "/models",
         does="DeepSeek's OpenAI-compatible API: native ids `deepseek-chat` and `deepseek-reasoner`.",
         pages=(DEEPSEEK_API,)),
    Host("dashscope-intl.aliyuncs.com", "alibaba", ChatFace("alibaba"), ("/compatible-mode/v1/chat/completions",),
         "/compatible-mode/v1/models", openai_batches=True,
         does="Alibaba Cloud Model Studio's OpenAI-compatible mode and its OpenAI-compatible Batch File API "
              "(which takes `qwen-max`, `qwen-plus`, `qwen-flash` and `qwen-turbo` only): native ids (`qwen3-max`, "
              "`qwen-plus`, ...).",
         pages=(DASHSCOPE_API, DASHSCOPE_BATCHES)),
    Host("api.mistral.ai", "mistral", ChatFace("mistral"), ("/v1/chat/completions",), "/v1/models",
         does="Mistral's API: native ids (`mistral-medium-2508`, `mistral-medium-latest`, ...).",
         pages=(MISTRAL_API,)),
)


def add_hosts(app: web.Application) -> None:
    """Mount every host's sub-application on ``app`` (which holds the provider's state and batch store)."""
    for host in HOSTS:
        sub = web.Application(client_max_size=app._client_max_size)
        sub[FACE] = host.face
        sub[PREFIX] = f"/{host.host}"
        for path in host.chat:
            sub.router.add_post(path, _chat)
        if host.models:
            sub.router.add_get(host.models, _models)
        if host.messages:
            _messages.add_routes(sub)
            _message_batches.add_routes(sub)
        if host.openai_batches:
            _batches.add_openai_routes(sub, host.batches_at)
        app.add_subapp(f"/{host.host}", sub)
