"""Builds ``capabilities.json``, the table :mod:`council.protocol.capabilities` reads, from maintained sources.

Run ``python -m council.protocol.capabilities_build`` (with ``pydantic-ai-slim`` installed: the test extra has it)
after upgrading pydantic-ai; ``tests/council/test_capabilities.py`` rebuilds the table the same way and fails when
the shipped file differs, so the table cannot drift from its source unnoticed.

Where the facts come from:

- **pydantic-ai's model profiles** (``pydantic_ai.profiles.<maker>``, whose reasoning and sampling rules per model
  family are verified against the live APIs and pinned in its tests): whether a model reasons (never, on request,
  by default, always), the ``reasoning_effort`` values an OpenAI model takes, whether sampling parameters are
  refused while it reasons (OpenAI's reasoning models, Claude with thinking), Claude's output ceiling.
- **by hand, only what neither pydantic-ai nor genai-prices has**, each fact beside the page it follows
  (:data:`HAND`): Gemini's and Claude's thinking-budget ranges, which parameter bounds the output of OpenAI's own
  models, DeepSeek's and Qwen's reasoning models' sampling rules, Qwen's thinking models.

The profiles are asked about the names in :data:`MODELS` (the provider-native names of the judges people use);
:func:`council.protocol.capabilities.capabilities_of` matches a model by the longest of these names of which its own
name is a version (``gpt-5-2025-08-07`` is ``gpt-5``'s).
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("capabilities.json")

# Provider-native model names per maker, as pydantic-ai's profile of that maker is asked about them.
MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-pro", "gpt-5-codex", "gpt-5-chat", "gpt-5.1", "gpt-5.1-chat",
               "gpt-5.2", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "gpt-4-turbo",
               "gpt-3.5-turbo", "o1", "o1-mini", "o3", "o3-mini", "o3-pro", "o4-mini", "gpt-oss"),
    "google": ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash",
               "gemini-2.0-flash-lite", "gemini-1.5-pro", "gemini-1.5-flash", "gemma"),
    "anthropic": ("claude-sonnet-4-5", "claude-sonnet-4", "claude-opus-4-1", "claude-opus-4", "claude-haiku-4-5",
                  "claude-3-7-sonnet", "claude-3-5-sonnet", "claude-3-5-haiku", "claude-3-opus", "claude-3-haiku"),
    "deepseek": ("deepseek-chat", "deepseek-reasoner", "deepseek-v3", "deepseek-r1"),
    "alibaba": ("qwen3-max", "qwen-max", "qwen-plus", "qwen-turbo", "qwen3", "qwen2.5", "qwq", "qwen3-235b-a22b-thinking",
                "qwen3-30b-a3b-thinking", "qwen3-next-80b-a3b-thinking"),
    "mistral": ("mistral-medium", "mistral-large", "mistral-small", "magistral-medium", "magistral-small",
                "codestral", "ministral", "open-mistral-nemo"),
    "xai": ("grok-4", "grok-3", "grok-3-mini"),
    "moonshot": ("kimi-k2", "kimi-k2-thinking"),
}

# The pydantic-ai profile module and function of each maker (None: pydantic-ai has no profile that says anything
# about reasoning for it; the hand facts below then decide).
PROFILES: dict[str, tuple[str, str] | None] = {
    "openai": ("openai", "openai_model_profile"), "google": ("google", "google_model_profile"),
    "anthropic": ("anthropic", "anthropic_model_profile"), "deepseek": ("deepseek", "deepseek_model_profile"),
    "alibaba": ("qwen", "qwen_model_profile"), "mistral": ("mistral", "mistral_model_profile"),
    "xai": ("grok", "grok_model_profile"), "moonshot": ("moonshotai", "moonshotai_model_profile"),
}

GEMINI_THINKING = "https://ai.google.dev/gemini-api/docs/thinking"
CLAUDE_THINKING = "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
OPENAI_CHAT = "https://platform.openai.com/docs/api-reference/chat/create"
DEEPSEEK_REASONER = "https://api-docs.deepseek.com/guides/reasoning_model"
QWEN_THINKING = "https://www.alibabacloud.com/help/en/model-studio/deep-thinking"

# Facts no maintained source has, per maker by name prefix (every matching prefix applies, the longest last),
# each with the page it follows.
HAND: dict[tuple[str, str], dict[str, Any]] = {
    # Gemini's thinking budget: 2.5 Pro 128..32768 and cannot be turned off; Flash 0..24576; Flash-Lite 512..24576.
    ("google", "gemini-2.5-pro"): {"thinking_budget": [128, 32768], "page": GEMINI_THINKING},
    ("google", "gemini-2.5-flash"): {"thinking_budget": [0, 24576], "page": GEMINI_THINKING},
    ("google", "gemini-2.5-flash-lite"): {"thinking_budget": [512, 24576], "page": GEMINI_THINKING},
    # Claude's extended thinking: budget_tokens at least 1,024 and below max_tokens.
    ("anthropic", "claude"): {"thinking_budget": [1024, None], "page": CLAUDE_THINKING},
    # OpenAI: max_tokens is deprecated and refused by the reasoning models; max_completion_tokens bounds reasoning and
    # answer together (every OpenAI chat model takes it).
    ("openai", "gpt"): {"budget_param": "max_completion_tokens", "page": OPENAI_CHAT},
    ("openai", "o"): {"budget_param": "max_completion_tokens", "page": OPENAI_CHAT},
    # DeepSeek's reasoner takes no sampling parameters (they have no effect).
    ("deepseek", "deepseek-reasoner"): {"sampling_while_reasoning": False, "page": DEEPSEEK_REASONER},
    ("deepseek", "deepseek-r1"): {"sampling_while_reasoning": False, "page": DEEPSEEK_REASONER},
    # Qwen's thinking-only models (pydantic-ai's Qwen profile says nothing of reasoning).
    ("alibaba", "qwq"): {"reasoning": "always", "page": QWEN_THINKING},
    ("alibaba", "qwen3-235b-a22b-thinking"): {"reasoning": "always", "page": QWEN_THINKING},
    ("alibaba", "qwen3-30b-a3b-thinking"): {"reasoning": "always", "page": QWEN_THINKING},
    ("alibaba", "qwen3-next-80b-a3b-thinking"): {"reasoning": "always", "page": QWEN_THINKING},
}


def _profile(maker: str, name: str) -> dict[str, Any]:
    from importlib import import_module

    where = PROFILES.get(maker)
    if where is None:
        return {}
    module = import_module(f"pydantic_ai.profiles.{where[0]}")
    return dict(getattr(module, where[1])(name) or {})


def entry(maker: str, name: str) -> dict[str, Any]:
    """One model's capabilities: pydantic-ai's profile, then the hand facts for its longest matching prefix."""
    p = _profile(maker, name)
    if not p.get("supports_thinking"):
        reasoning = "none"
    elif p.get("thinking_always_enabled"):
        reasoning = "always"
    else:
        reasoning = "default" if p.get("thinking_enabled_by_default") else "optional"
    efforts = sorted(p.get("openai_reasoning_efforts") or p.get("grok_reasoning_efforts") or ())
    if maker == "openai" and reasoning != "none" and not efforts:
        efforts = ["low", "medium", "high"] + (["minimal"] if p.get("openai_supports_minimal_reasoning_effort") else [])
        if p.get("openai_supports_reasoning_effort_none"):
            efforts.append("none")
        efforts.sort()
    # Sampling while reasoning: OpenAI's reasoning models refuse it (pydantic-ai's SAMPLING_PARAMS rule), Claude's
    # thinking restricts it (anthropic_restricts_sampling_with_thinking).
    sampling = not (maker == "openai" and reasoning != "none") and not p.get("anthropic_restricts_sampling_with_thinking")
    out: dict[str, Any] = {"maker": maker, "reasoning": reasoning, "efforts": [e for e in efforts if e != "none"],
                           "sampling_while_reasoning": sampling,
                           "budget_param": "max_tokens", "thinking_budget": None,
                           "max_output_tokens": p.get("anthropic_max_output_tokens"), "pages": []}
    for key in sorted((k for k in HAND if k[0] == maker and name.startswith(k[1])), key=lambda k: len(k[1])):
        facts = dict(HAND[key])
        out["pages"].append(facts.pop("page"))
        out.update(facts)
    out["pages"] = sorted(set(out["pages"]))
    return out


def build() -> dict[str, Any]:
    """The whole table: the source's name and version, and an entry per model name."""
    models = {name: entry(maker, name) for maker, names in MODELS.items() for name in names}
    return {"source": f"pydantic-ai-slim {version('pydantic-ai-slim')} model profiles, and the pages named per model",
            "generated_by": "python -m council.protocol.capabilities_build", "models": models}


def text(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    TABLE_PATH.write_text(text(build()), encoding="utf-8")
    print(f"wrote {TABLE_PATH}")
