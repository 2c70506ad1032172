"""Which vendor made a model, from the model names that other evaluation tools write.

Order of resolution (:func:`resolve_vendor`):

1. the operator's vendor map, first on the exact id (as written, then case-insensitively, then after the
   normalisation below), then on the prefix before the first ``/``;
2. the vendor an OpenRouter-style ``org/model`` id names (as ``council.vendors.vendor_of``: ``qwen/...`` is
   ``alibaba``, an unknown org is its own vendor), after the routing prefixes of the tools are stripped;
3. the family of a bare model name (``gpt-4o`` and ``o3`` -> openai, ``claude-*`` -> anthropic, ...).

Normalisation strips what the tools put around a model id without naming its maker: hosting and routing
prefixes (inspect_ai's ``openrouter/``, ``together/``, ``hf/``, ``vllm/``, ``ollama/``, ``bedrock/``, ...;
any third path level, as in ``cf/meta/llama-3.1-8b``), lm-evaluation-harness ``model_args`` strings
(``pretrained=org/name,dtype=bfloat16``), local checkpoint paths (only the last path part is kept) and
``provider:model`` spellings. A bare name of no known family resolves to ``None``: the caller reports it
rather than guessing, because self-exclusion needs the vendor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from council.vendors import PREFIX_VENDOR

# Path prefixes that say where a model was served, not who made it.
ROUTING_PREFIXES: frozenset[str] = frozenset({
    "openrouter", "together", "togetherai", "hf", "huggingface", "hf-inference-providers", "vllm", "sglang",
    "ollama", "groq", "fireworks", "fireworksai", "bedrock", "azure", "azureai", "vertex", "vertexai", "litellm",
    "openai-api", "cf", "cloudflare", "deepinfra", "llama-cpp-python", "transformer_lens", "replicate",
})

# Organisation prefixes whose vendor is not the prefix itself (on top of council.vendors.PREFIX_VENDOR).
ORG_ALIASES: dict[str, str] = {
    **PREFIX_VENDOR,
    "grok": "xai",
    "openai-community": "openai",
    "google-deepmind": "google",
    "mistral-community": "mistral",
    "qwen-ai": "alibaba",
}

# Vendors recognised as the first part of an id even when written bedrock-style (``anthropic.claude-v2``).
KNOWN_VENDORS: frozenset[str] = frozenset({
    "openai", "anthropic", "google", "alibaba", "deepseek", "meta", "xai", "mistral", "moonshot",
    "microsoft", "cohere", "amazon", "nvidia", "ai21",
})

# Families of bare model names, tried in order on the last part of the id.
BARE_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), vendor)
    for pattern, vendor in (
        (r"^(gpt(?!-neo|-j\b|4all)|chatgpt|o\d+(-|$)|text-davinci|davinci|babbage|codex)", "openai"),
        (r"^claude", "anthropic"),
        (r"^(gemini|gemma|palm|learnlm)", "google"),
        (r"^(qwen|qwq)", "alibaba"),
        (r"^deepseek", "deepseek"),
        (r"^(meta-llama|llama|codellama)", "meta"),
        (r"^grok", "xai"),
        (r"^(mistral|mixtral|codestral|ministral|magistral|pixtral|devstral)", "mistral"),
        (r"^(kimi|moonshot)", "moonshot"),
    )
)

# model_args keys that name the model, in the order lm-evaluation-harness backends use them.
MODEL_ARG_KEYS: tuple[str, ...] = ("pretrained", "model", "model_name", "model_id", "path", "engine")


def resolve_vendor(model_id: str, vendor_map: Mapping[str, str] | None = None) -> str | None:
    """The vendor of ``model_id``, or None when neither the map nor the defaults know it."""
    if not isinstance(model_id, str) or not model_id.strip():
        return None
    return mapped_vendor(model_id, vendor_map) or default_vendor(normalize_model_id(model_id))


def mapped_vendor(model_id: str, vendor_map: Mapping[str, str] | None) -> str | None:
    """The vendor the operator's map gives ``model_id``, or None when the map does not name it."""
    if not vendor_map or not isinstance(model_id, str) or not model_id.strip():
        return None
    raw = model_id.strip()
    return _lookup(vendor_map, raw, normalize_model_id(raw))


def org_vendor(name: str) -> str:
    """The vendor an organisation or provider name stands for (``moonshotai`` -> ``moonshot``)."""
    key = name.strip().lower()
    return ORG_ALIASES.get(key, key)


def model_from_model_args(model_args: Any) -> str | None:
    """The model named by an lm-evaluation-harness ``model_args`` (string ``k=v,...`` or dict), if any."""
    if isinstance(model_args, Mapping):
        pairs = {str(k).strip(): v for k, v in model_args.items()}
    elif isinstance(model_args, str):
        pairs = {}
        for part in model_args.split(","):
            key, sep, value = part.partition("=")
            if sep:
                pairs[key.strip()] = value.strip().strip("'\"")
    else:
        return None
    for key in MODEL_ARG_KEYS:
        value = pairs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def normalize_model_id(model_id: str) -> str:
    """Lower-cased ``org/name`` or ``name``, with routing prefixes, model_args and paths taken off."""
    text = model_id.strip()
    if "=" in text:
        text = model_from_model_args(text) or text
    if text.startswith(("/", "./", "../", "~")) or "\\" in text:
        text = re.split(r"[\\/]", text.rstrip("/\\"))[-1]
    text = text.lower()
    head, sep, rest = text.partition(":")
    if sep and "/" not in head and (head in ROUTING_PREFIXES or head in KNOWN_VENDORS or head in ORG_ALIASES):
        text = f"{head}/{rest}"
    parts = [p for p in text.split("/") if p]
    while len(parts) > 1 and parts[0] in ROUTING_PREFIXES:
        parts = parts[1:]
    while len(parts) > 2:  # a third level is a route in front of org/model
        parts = parts[1:]
    return "/".join(parts)


def default_vendor(normal: str) -> str | None:
    """The built-in answer for a normalised id (see :func:`normalize_model_id`)."""
    if not normal:
        return None
    if "/" in normal:
        org = normal.split("/", 1)[0]
        return org_vendor(org)  # OpenRouter convention: the org is the vendor
    return _family(normal)


def _family(name: str) -> str | None:
    for pattern, vendor in BARE_FAMILIES:
        if pattern.search(name):
            return vendor
    segments = name.split(".")
    for segment in segments[:2]:  # bedrock ids: "anthropic.claude-...", "us.meta.llama3-..."
        if len(segments) > 1 and (segment in KNOWN_VENDORS or segment in ORG_ALIASES):
            return org_vendor(segment)
    return None


def _lookup(vendor_map: Mapping[str, str], raw: str, normal: str) -> str | None:
    folded = {str(k).strip().lower(): v for k, v in vendor_map.items()}
    for key in (raw, raw.lower(), normal):
        value = vendor_map.get(key) if key == raw else folded.get(key)
        if value:
            return value
    for key in (raw, normal):
        if "/" in key:
            prefix = key.split("/", 1)[0]
            value = vendor_map.get(prefix) or folded.get(prefix.lower())
            if value:
                return value
    return None
