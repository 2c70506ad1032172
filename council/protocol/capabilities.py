"""What each judge model's API takes: the one place that knows a model's request rules and its native id.

:func:`capabilities_of` reads ``capabilities.json``, built from pydantic-ai's model profiles and the provider pages
named in it (:mod:`council.protocol.capabilities_build`): whether the model reasons (never, on request, by default,
always), the ``reasoning_effort`` values it takes, whether it refuses sampling parameters while it reasons, which
parameter bounds its output, and its thinking-budget range. A model is matched by the longest name in the table of
which its name is a version (the name, or the name and a ``-`` suffix: ``gpt-5-2025-08-07`` is ``gpt-5``'s). A model the table does not know gets safe defaults (:data:`UNKNOWN`): no sampling
parameter and room for reasoning on top of the answer, so that whatever it is it is neither refused nor cut short,
and :func:`unknown_warning` says so.

:func:`native_id` is the id a provider's own API wants for a seat's OpenRouter-style id (``anthropic/claude-sonnet-4.5``
is ``claude-sonnet-4-5`` at Anthropic): a config's own mapping first, then :data:`NATIVE_IDS` (written by hand from
the providers' model pages, for the makers the price table does not name natively), then the maker's own entry in
the price table (genai-prices: its model ids are the providers' API ids), else the name after the organisation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from council.core.vendors import normalize_model_id

Reasoning = Literal["none", "optional", "default", "always"]
TABLE_PATH = Path(__file__).with_name("capabilities.json")

# Native ids no maintained source maps from the OpenRouter-style ids, with the page each follows.
NATIVE_IDS: dict[str, tuple[str, str]] = {
    # DeepSeek-V3.2: deepseek-chat is its non-thinking mode, deepseek-reasoner its thinking mode.
    "deepseek/deepseek-v3.2": ("deepseek-chat", "https://api-docs.deepseek.com/quick_start/pricing"),
    "deepseek/deepseek-v3.2-exp": ("deepseek-chat", "https://api-docs.deepseek.com/quick_start/pricing"),
    "deepseek/deepseek-chat-v3.1": ("deepseek-chat", "https://api-docs.deepseek.com/quick_start/pricing"),
    "deepseek/deepseek-chat": ("deepseek-chat", "https://api-docs.deepseek.com/quick_start/pricing"),
    "deepseek/deepseek-r1": ("deepseek-reasoner", "https://api-docs.deepseek.com/quick_start/pricing"),
    "deepseek/deepseek-r1-0528": ("deepseek-reasoner", "https://api-docs.deepseek.com/quick_start/pricing"),
    # Mistral Medium 3.1 is mistral-medium-2508 on La Plateforme.
    "mistralai/mistral-medium-3.1": ("mistral-medium-2508", "https://docs.mistral.ai/getting-started/models/"),
    "mistralai/mistral-medium-3": ("mistral-medium-2505", "https://docs.mistral.ai/getting-started/models/"),
    "mistralai/mistral-large": ("mistral-large-latest", "https://docs.mistral.ai/getting-started/models/"),
    "mistralai/mistral-small": ("mistral-small-latest", "https://docs.mistral.ai/getting-started/models/"),
}
# Each maker's own API, as `council init --layout native` writes it: base URL, the variable its key is read from,
# the wire format, and the page that documents the endpoint.
OWN_APIS: dict[str, tuple[str, str, str, str]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY", "openai",
               "https://platform.openai.com/docs/api-reference/chat"),
    "anthropic": ("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", "anthropic",
                  "https://docs.anthropic.com/en/api/messages"),
    "google": ("https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", "openai",
               "https://ai.google.dev/gemini-api/docs/openai"),
    "alibaba": ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "openai",
                "https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope"),
    "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY", "openai", "https://api-docs.deepseek.com/"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY", "openai", "https://docs.mistral.ai/api/"),
}
# Makers whose entry in the price table carries the provider's own API id.
PRICED_NATIVELY = frozenset({"openai", "anthropic", "google", "xai", "moonshot"})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """A model's request rules (see the module's docstring); ``name`` is the table's entry, "" when unknown."""

    name: str
    maker: str
    reasoning: Reasoning
    efforts: tuple[str, ...]
    sampling_while_reasoning: bool
    budget_param: Literal["max_tokens", "max_completion_tokens"]
    thinking_budget: tuple[int, int | None] | None
    max_output_tokens: int | None
    pages: tuple[str, ...]

    @property
    def known(self) -> bool:
        return bool(self.name)


# An unknown model: it may reason (room for it is made), no sampling parameter is sent (every model accepts its
# default), no effort or thinking parameter (a model that does not reason refuses them).
UNKNOWN = Capabilities(name="", maker="", reasoning="default", efforts=(), sampling_while_reasoning=False,
                       budget_param="max_tokens", thinking_budget=None, max_output_tokens=None, pages=())


@lru_cache(maxsize=1)
def table() -> dict[str, dict]:
    """The shipped table's entries by native model name."""
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))["models"]


def table_source() -> str:
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))["source"]


def fold(name: str) -> str:
    """A model name for matching: lower case, dots as dashes (``claude-sonnet-4.5`` and ``claude-sonnet-4-5`` are
    one name), without an organisation or Google's ``models/``."""
    return normalize_model_id(name).rsplit("/", 1)[-1].replace(".", "-")


@lru_cache(maxsize=1024)
def capabilities_of(model: str, vendor: str) -> Capabilities:
    """The capabilities of ``model`` (a seat's id, any spelling: gateway or native) made by ``vendor``; the
    :data:`UNKNOWN` rules, with the maker's output parameter, when the table has no entry. A name in
    :data:`NATIVE_IDS` is looked up as its native name (``deepseek/deepseek-r1`` is ``deepseek-reasoner``)."""
    normal = normalize_model_id(model)
    name = fold(NATIVE_IDS[normal][0] if normal in NATIVE_IDS else normal)
    entries = table()
    matches = [key for key in entries if _extends(name, fold(key)) and entries[key]["maker"] == vendor]
    if not matches:
        budget = "max_completion_tokens" if vendor == "openai" else "max_tokens"
        return Capabilities(**{**_fields(UNKNOWN), "maker": vendor, "budget_param": budget})
    key = max(matches, key=len)
    e = entries[key]
    span = e["thinking_budget"]
    return Capabilities(name=key, maker=e["maker"], reasoning=e["reasoning"], efforts=tuple(e["efforts"]),
                        sampling_while_reasoning=e["sampling_while_reasoning"], budget_param=e["budget_param"],
                        thinking_budget=None if span is None else (span[0], span[1]),
                        max_output_tokens=e["max_output_tokens"], pages=tuple(e["pages"]))


def _extends(name: str, key: str) -> bool:
    """Whether ``name`` is ``key`` or a version of it (``gpt-5-2025-08-07`` of ``gpt-5``, not of ``gpt-5-2``)."""
    return name == key or (name.startswith(key) and name[len(key)] in "-:@")


def _fields(c: Capabilities) -> dict:
    return {name: getattr(c, name) for name in Capabilities.__slots__}


def unknown_warning(model: str, headroom: int) -> str:
    return (f"{model} is not in the capability table ({table_source()}): it is sent no sampling parameter and "
            f"{headroom} tokens of room for reasoning on top of its answer; `council check` shows what it does")


@lru_cache(maxsize=1024)
def native_id(model: str, vendor: str) -> str:
    """The id ``vendor``'s own API wants for ``model`` (see the module's docstring). An id without an
    organisation is taken to be native already."""
    normal = normalize_model_id(model)
    if "/" not in model.strip():
        return model.strip()
    if normal in NATIVE_IDS:
        return NATIVE_IDS[normal][0]
    name = normal.rsplit("/", 1)[-1]
    if vendor in PRICED_NATIVELY:
        from council.protocol.prices import table_model_id

        return table_model_id(name, vendor) or name
    return name
