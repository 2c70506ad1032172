"""The embedded provider's own catalogue of who made which model.

This table is the simulated world's ground truth about vendors, kept apart from the council's own
resolution of model ids (``council.core.vendors``) on purpose: the provider decides a judge's vendor, and the
vendor of the model that wrote each graded response, from here, so it can disagree with the council (a
bare ``gpt-4o`` is OpenAI's here whatever the council makes of it).

Ids are matched exactly on the full id, case-insensitively (``Qwen/Qwen2.5-72B-Instruct`` and
``qwen/qwen2.5-72b-instruct`` are one id; ``gpt-4o`` and ``openai/gpt-4o`` are two entries). A model the
world does not know has no vendor: the server answers a chat request for it with a 404, and a producer
unknown to the world makes no row anyone's own. ``SimConfig.world`` adds to (or overrides) this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

_CATALOGUE: dict[str, tuple[str, ...]] = {
    "anthropic": (
        # OpenRouter-style
        "anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4", "anthropic/claude-opus-4.1",
        "anthropic/claude-opus-4", "anthropic/claude-haiku-4.5", "anthropic/claude-3.7-sonnet",
        "anthropic/claude-3.5-sonnet", "anthropic/claude-3.5-haiku", "anthropic/claude-3-haiku",
        "anthropic/claude-3-opus",
        # Anthropic API ids, bare and provider-prefixed
        "claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-haiku-4-5-20251001",
        "claude-opus-4-1", "claude-opus-4-1-20250805", "claude-sonnet-4-20250514", "claude-opus-4-20250514",
        "claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest", "claude-3-5-sonnet-20241022",
        "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-latest", "claude-3-5-haiku-20241022",
        "claude-3-5-haiku-latest", "claude-3-haiku-20240307", "claude-3-opus-20240229", "claude-sonnet-4-0",
        "claude-opus-4-0",
        "anthropic/claude-3-5-sonnet-latest", "anthropic/claude-3-5-sonnet-20241022",
        # Amazon Bedrock
        "anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic.claude-3-haiku-20240307-v1:0",
    ),
    "google": (
        "google/gemini-2.5-pro", "google/gemini-2.5-flash", "google/gemini-2.5-flash-lite",
        "google/gemini-2.0-flash-001", "google/gemini-flash-1.5", "google/gemma-3-27b-it", "google/gemma-3-12b-it",
        "google/gemma-3-4b-it", "google/gemma-2-27b-it", "google/gemma-2-9b-it",
        "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash", "gemini-1.5-pro",
        "gemini-1.5-flash", "gemma-2-9b-it", "gemma-2-27b-it", "gemma-3-27b-it", "gemma-3-12b-it",
        "gemini-2.0-flash-lite", "gemini-2.0-flash-001",
        "vertex_ai/gemini-2.5-pro", "gemini/gemini-2.5-flash",
        "gemma2:9b", "gemma3:27b", "gemma3:12b",  # Ollama tags
    ),
    "openai": (
        "openai/gpt-5", "openai/gpt-5-mini", "openai/gpt-5-nano", "openai/gpt-4.1", "openai/gpt-4.1-mini",
        "openai/gpt-4.1-nano", "openai/gpt-4o", "openai/gpt-4o-mini", "openai/o1", "openai/o3", "openai/o3-mini",
        "openai/o4-mini", "openai/gpt-oss-120b", "openai/gpt-oss-20b", "openai/gpt-3.5-turbo",
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini",
        "gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4-turbo", "gpt-3.5-turbo", "chatgpt-4o-latest",
        "o1", "o1-mini", "o3", "o3-mini", "o4-mini", "gpt-oss-120b", "gpt-oss-20b", "gpt-oss:20b",
        "openai/gpt-5-chat", "gpt-5-chat-latest", "gpt-5-2025-08-07", "gpt-5-mini-2025-08-07", "gpt-5-nano-2025-08-07",
        "o3-2025-04-16", "o4-mini-2025-04-16", "gpt-4.1-2025-04-14", "gpt-4o-mini-2024-07-18",
    ),
    "alibaba": (
        "qwen/qwen3-max", "qwen/qwen3-235b-a22b", "qwen/qwen3-235b-a22b-2507", "qwen/qwen3-32b",
        "qwen/qwen3-30b-a3b", "qwen/qwen3-coder", "qwen/qwen-2.5-72b-instruct", "qwen/qwen-2.5-7b-instruct",
        "qwen/qwq-32b", "qwen/qwen-max",
        "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-8B", "Qwen/Qwen3-235B-A22B",
        "Qwen2.5-72B-Instruct", "Qwen2.5-7B-Instruct", "qwen-max", "qwen-plus", "qwen-turbo", "qwen3-max",
        "qwen2.5:7b", "qwen3:8b",
        "qwen-flash", "qwen-plus-latest", "qwen-max-latest", "qwen3-235b-a22b", "qwen3-32b", "qwen3-coder-plus",
    ),
    "deepseek": (
        "deepseek/deepseek-v3.2", "deepseek/deepseek-v3.2-exp", "deepseek/deepseek-chat-v3.1",
        "deepseek/deepseek-chat-v3-0324", "deepseek/deepseek-chat", "deepseek/deepseek-r1",
        "deepseek/deepseek-r1-0528", "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-R1",
        "deepseek-chat", "deepseek-reasoner", "deepseek-r1:8b",
    ),
    "meta": (
        "meta-llama/llama-3.3-70b-instruct", "meta-llama/llama-3.1-8b-instruct", "meta-llama/llama-3.1-70b-instruct",
        "meta-llama/llama-3.1-405b-instruct", "meta-llama/llama-3-70b-instruct", "meta-llama/llama-3-8b-instruct",
        "meta-llama/llama-4-maverick", "meta-llama/llama-4-scout",
        "meta-llama/Meta-Llama-3-70B-Instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "Llama-3.3-70B-Instruct", "llama-3.3-70b-versatile", "llama-3.1-8b-instant", "llama3.1:8b", "llama3.3:70b",
    ),
    "mistral": (
        "mistralai/mistral-medium-3.1", "mistralai/mistral-medium-3", "mistralai/mistral-large",
        "mistralai/mistral-large-2411", "mistralai/mistral-small", "mistralai/mistral-small-3.2-24b-instruct",
        "mistralai/mistral-7b-instruct", "mistralai/mixtral-8x7b-instruct", "mistralai/Mistral-7B-Instruct-v0.3",
        "mistral-large-latest", "mistral-medium-latest", "mistral-small-latest", "mistral-medium-2508",
        "open-mistral-nemo", "codestral-latest", "mistral:7b", "mistral-large-2411", "mistral-small-2506",
    ),
    "xai": ("x-ai/grok-4", "x-ai/grok-3", "x-ai/grok-3-mini", "x-ai/grok-code-fast-1", "grok-4", "grok-4-0709",
            "grok-3", "grok-3-mini"),
    "moonshot": ("moonshotai/kimi-k2", "moonshotai/kimi-k2-0905", "moonshotai/kimi-k2-thinking",
                 "kimi-k2-0711-preview", "kimi-k2-turbo-preview"),
    "microsoft": ("microsoft/phi-4", "microsoft/Phi-3.5-mini-instruct", "phi4"),
    "cohere": ("cohere/command-r-plus", "cohere/command-a", "command-r-plus", "command-a-03-2025"),
}

WORLD: dict[str, str] = {model: vendor for vendor, models in _CATALOGUE.items() for model in models}
"""Every model id the simulated world knows (as usually spelled) -> the vendor that really makes it."""

NATIVE: dict[str, tuple[str, ...]] = {
    "openai": (
        "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-2025-08-07", "gpt-5-mini-2025-08-07", "gpt-5-nano-2025-08-07",
        "gpt-5-chat-latest", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4.1-2025-04-14", "gpt-4o", "gpt-4o-mini",
        "gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4o-mini-2024-07-18", "chatgpt-4o-latest", "gpt-4-turbo",
        "gpt-3.5-turbo", "o1", "o1-mini", "o3", "o3-2025-04-16", "o3-mini", "o4-mini", "o4-mini-2025-04-16",
    ),
    "anthropic": (
        "claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-haiku-4-5-20251001",
        "claude-opus-4-1", "claude-opus-4-1-20250805", "claude-opus-4-0", "claude-opus-4-20250514", "claude-sonnet-4-0",
        "claude-sonnet-4-20250514", "claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest",
        "claude-3-5-sonnet-20241022", "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-latest",
        "claude-3-5-haiku-20241022", "claude-3-5-haiku-latest", "claude-3-haiku-20240307", "claude-3-opus-20240229",
    ),
    "google": (
        "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash", "gemini-2.0-flash-001",
        "gemini-2.0-flash-lite", "gemini-1.5-pro", "gemini-1.5-flash", "gemma-3-27b-it", "gemma-3-12b-it",
    ),
    "deepseek": ("deepseek-chat", "deepseek-reasoner"),
    "alibaba": ("qwen3-max", "qwen-max", "qwen-max-latest", "qwen-plus", "qwen-plus-latest", "qwen-turbo", "qwen-flash",
                "qwen3-235b-a22b", "qwen3-32b", "qwen3-coder-plus"),
    "mistral": ("mistral-medium-2508", "mistral-medium-latest", "mistral-large-latest", "mistral-large-2411",
                "mistral-small-latest", "mistral-small-2506", "open-mistral-nemo", "codestral-latest"),
}
"""The ids each vendor's own API serves (its native host, ``council.sim._hosts``; Anthropic's Messages API): no
``org/`` part, no Ollama tag, no cloud reseller's form. ``SimConfig.world`` adds to them its ids without a ``/``."""

JUDGES: dict[str, str] = {
    "anthropic": "anthropic/claude-sonnet-4.5",
    "google": "google/gemini-2.5-pro",
    "openai": "openai/gpt-5",
    "alibaba": "qwen/qwen3-max",
    "deepseek": "deepseek/deepseek-v3.2",
}
"""The judge models the provider expects a council to ask, one per vendor: counted in its stats from the
start, asked or not. Any other model the world knows is served too, counted from its first request."""

# How models name themselves (for name drops in reasons); others use the id's last part as it is written.
DISPLAY: dict[str, str] = {
    "anthropic/claude-sonnet-4.5": "Claude Sonnet 4.5",
    "anthropic/claude-haiku-4.5": "Claude Haiku 4.5",
    "google/gemini-2.5-pro": "Gemini 2.5 Pro",
    "google/gemini-2.5-flash": "Gemini 2.5 Flash",
    "openai/gpt-5": "GPT-5",
    "openai/gpt-4.1-mini": "GPT-4.1 mini",
    "qwen/qwen3-max": "Qwen3-Max",
    "deepseek/deepseek-v3.2": "DeepSeek-V3.2",
    "mistralai/mistral-medium-3.1": "Mistral Medium 3.1",
}

# A vendor's brand and its models' family name, as a model would say them.
BRAND: dict[str, str] = {
    "anthropic": "Anthropic", "google": "Google", "openai": "OpenAI", "alibaba": "Alibaba", "deepseek": "DeepSeek",
    "meta": "Meta", "mistral": "Mistral AI", "xai": "xAI", "moonshot": "Moonshot AI", "microsoft": "Microsoft",
    "cohere": "Cohere",
}
FAMILY: dict[str, str] = {
    "anthropic": "Claude", "google": "Gemini", "openai": "GPT", "alibaba": "Qwen", "deepseek": "DeepSeek",
    "meta": "Llama", "mistral": "Mistral", "xai": "Grok", "moonshot": "Kimi", "microsoft": "Phi", "cohere": "Command",
}


# One model under two ids, a provider's own and a gateway's, where the two spell it differently: the same model,
# whichever id asks it, answers the same. (Where the gateway's id is the maker's organisation and the native id, as
# openai/gpt-5 and gpt-5, the rule in World.identity finds it.)
SAME_MODEL: dict[str, str] = {
    "claude-sonnet-4-5": "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5-20250929": "anthropic/claude-sonnet-4.5",
    "claude-haiku-4-5": "anthropic/claude-haiku-4.5", "claude-haiku-4-5-20251001": "anthropic/claude-haiku-4.5",
    "claude-opus-4-1": "anthropic/claude-opus-4.1", "claude-opus-4-1-20250805": "anthropic/claude-opus-4.1",
    "claude-3-7-sonnet-20250219": "anthropic/claude-3.7-sonnet", "claude-3-7-sonnet-latest": "anthropic/claude-3.7-sonnet",
    "deepseek-chat": "deepseek/deepseek-v3.2", "mistral-medium-2508": "mistralai/mistral-medium-3.1",
}
_ORGS = {"openai": "openai", "google": "google", "alibaba": "qwen", "deepseek": "deepseek", "mistral": "mistralai",
         "anthropic": "anthropic", "meta": "meta-llama", "xai": "x-ai", "moonshot": "moonshotai"}


class World:
    """The table plus a config's additions, looked up case-insensitively on the full id."""

    __slots__ = ("_vendors", "_ids", "_native")

    def __init__(self, extra: Mapping[str, str] | None = None) -> None:
        self._vendors: dict[str, str] = {}
        self._ids: dict[str, str] = {}
        for model, vendor in (*WORLD.items(), *(extra or {}).items()):
            key = model.strip().lower()
            self._vendors[key] = vendor
            self._ids[key] = model.strip()
        self._native = {m.lower() for models in NATIVE.values() for m in models}
        self._native |= {m.strip().lower() for m in (extra or {}) if "/" not in m}

    def native(self, vendor: str, model: str) -> bool:
        """Whether ``vendor``'s own API serves ``model`` (a native id of that vendor's, per ``NATIVE`` and the
        config's additions without an ``org/`` part)."""
        key = model.strip().lower()
        return key in self._native and self._vendors.get(key) == vendor

    def native_ids(self, vendor: str) -> list[str]:
        """Every native id of ``vendor``, as spelled, sorted case-insensitively."""
        return [self._ids[key] for key in sorted(self._native) if self._vendors.get(key) == vendor]

    def vendor(self, model: str) -> str | None:
        """The vendor that makes ``model``, or None when the world does not know it."""
        return self._vendors.get(model.strip().lower())

    def identity(self, model: str) -> str:
        """The one id of the model ``model`` names (lower case): a provider's own id is the same model as its
        gateway id (``SAME_MODEL``, or the maker's organisation before the native id), so it draws the same answers."""
        key = model.strip().lower()
        if key in SAME_MODEL:
            return SAME_MODEL[key]
        if "/" not in key.removeprefix("models/"):
            routed = f"{_ORGS.get(self._vendors.get(key, ''), '')}/{key.removeprefix('models/')}"
            if routed in self._vendors:
                return routed
        return key

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and model.strip().lower() in self._vendors

    def items(self) -> list[tuple[str, str]]:
        """(model id as spelled, vendor) for every model the world knows, sorted case-insensitively."""
        return [(self._ids[key], self._vendors[key]) for key in sorted(self._vendors)]

    def __len__(self) -> int:
        return len(self._vendors)


@lru_cache(maxsize=64)
def world_with(extra: tuple[tuple[str, str], ...] = ()) -> World:
    """The catalogue plus ``extra`` (model id, vendor) pairs, built once per distinct ``extra``."""
    return World(dict(extra))


def display_name(model: str) -> str:
    """How ``model`` names itself: ``"GPT-5"`` for ``openai/gpt-5``, else the id's last part."""
    return DISPLAY.get(model.strip().lower(), model.rsplit("/", 1)[-1])
