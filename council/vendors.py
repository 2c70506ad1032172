"""Who makes which model: the vendor of an OpenRouter-style model id, and the default council roster."""

from __future__ import annotations

# OpenRouter-style id prefixes whose vendor is not the prefix itself.
PREFIX_VENDOR: dict[str, str] = {
    "qwen": "alibaba",
    "meta-llama": "meta",
    "x-ai": "xai",
    "mistralai": "mistral",
    "deepseek-ai": "deepseek",
    "moonshotai": "moonshot",
}

# Default council: one judge model per vendor.
DEFAULT_ROSTER: dict[str, str] = {
    "anthropic": "anthropic/claude-sonnet-4.5",
    "google": "google/gemini-2.5-pro",
    "openai": "openai/gpt-5",
    "alibaba": "qwen/qwen3-max",
    "deepseek": "deepseek/deepseek-v3.2",
}

# Names that identify a vendor or a model family in free text; scrubbed from peers' reasons.
BRAND_NAMES: tuple[str, ...] = (
    "anthropic", "claude", "google", "gemini", "gemma", "bard", "openai", "chatgpt", "gpt", "o1", "o3",
    "alibaba", "qwen", "deepseek", "meta", "llama", "xai", "grok", "mistral", "mixtral", "moonshot", "kimi",
)


def vendor_of(model: str) -> str:
    """The vendor of ``model`` (``"qwen/qwen3-max"`` -> ``"alibaba"``); a bare id is its own vendor."""
    prefix = model.split("/", 1)[0].strip().lower()
    return PREFIX_VENDOR.get(prefix, prefix)
