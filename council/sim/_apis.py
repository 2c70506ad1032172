"""The providers' documented request rules, as the embedded provider plays them (``SimConfig.api_rules``).

Written from each provider's own documentation, not from the council's code: every rule names the page it follows
(``Rule.pages``, listed in the docs' ``reference/sim-config.md``). A rule knows a family of models by the sim
world's ids (``council.sim._world``), matched case-insensitively on the whole id, in their OpenRouter-style
(``openai/gpt-5``) and native (``gpt-5``, ``models/gemini-2.5-pro`` once the Gemini face drops ``models/``) forms.

:func:`plan` reads a request's parameters as the model's maker would and answers either an :class:`ApiError`
(the maker's refusal, in its own words; each API face words it in its own shape) or a :class:`Plan`: the output
cap, and whether and how the model reasons (a reasoning effort, a thinking budget, or dynamic thinking). A model
no rule knows takes any parameters and does not reason (as the provider did before the rules).

Parameters reach a maker unchanged through the gateway (``/v1/chat/completions``, OpenRouter-like), so the maker's
rules apply there too; the gateway also reads OpenRouter's ``reasoning`` object (``{"effort": ...}`` or
``{"max_tokens": N}``), which the native hosts ignore.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import orjson

OPENAI_REASONING = "https://platform.openai.com/docs/guides/reasoning"
OPENAI_CHAT = "https://platform.openai.com/docs/api-reference/chat/create"
GEMINI_THINKING = "https://ai.google.dev/gemini-api/docs/thinking"
GEMINI_OPENAI = "https://ai.google.dev/gemini-api/docs/openai"
CLAUDE_THINKING = "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
DEEPSEEK_REASONING = "https://api-docs.deepseek.com/guides/reasoning_model"
OPENROUTER_REASONING = "https://openrouter.ai/docs/use-cases/reasoning-tokens"

Mode = Literal["effort", "budget", "dynamic"]


@dataclass(frozen=True, slots=True)
class ApiError:
    """A maker's refusal of a request: the HTTP status, its message, and the OpenAI-shaped ``param``, ``code`` and
    ``type`` (the faces that word errors otherwise use the status and the message)."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None
    type: str = "invalid_request_error"


@dataclass(frozen=True, slots=True)
class Plan:
    """How a request the maker accepts is answered: its output cap (reasoning comes out of it first) and its
    reasoning: ``mode`` None (none), ``effort`` (``effort`` names the effort), ``budget`` (at most ``budget``
    tokens; ``effort``, when the budget came from one, names it) or ``dynamic`` (the model decides)."""

    cap: int | None
    mode: Mode | None = None
    effort: str | None = None
    budget: int | None = None
    thinking_block: bool = False  # Anthropic's Messages API: the reply's content opens with a thinking block
    known: bool = True  # a rule knows the model

    @property
    def reasons(self) -> bool:
        return self.mode is not None

    @property
    def spend_key(self) -> str | None:
        """Which mean of ``VendorBehaviour.reasoning_means`` the reasoning spend draws around."""
        if self.mode is None:
            return None
        if self.effort is not None:
            return self.effort
        return "budget" if self.mode == "budget" else "dynamic"


@dataclass(frozen=True, slots=True)
class Asked:
    """A request as a maker reads it: the model id served, the API it came through (``chat`` or ``messages``),
    whether through the gateway, its decoded body, and its output cap as the API reads it (chat:
    ``max_completion_tokens``, else ``max_tokens``; Messages: ``max_tokens``)."""

    model: str
    api: Literal["chat", "messages"]
    gateway: bool
    body: Mapping[str, Any]
    cap: int | None


Check = Callable[["Rule", Asked], "Plan | ApiError"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One family of models and what its maker's API does with their parameters."""

    name: str
    maker: str  # the world's vendor
    models: str  # the ids it knows, as the documentation lists them
    pattern: re.Pattern[str]
    does: str  # what the maker refuses or does, for the docs' reference/sim-config.md
    pages: tuple[str, ...]
    check: Check
    efforts: tuple[str, ...] = ()
    budget_range: tuple[int, int] = (0, 0)
    default_thinking: bool = False  # Gemini: thinks (dynamically) when no budget is sent
    can_turn_off: bool = True  # Gemini: a budget of 0 turns thinking off


def _ids(expr: str) -> re.Pattern[str]:
    return re.compile(expr, re.IGNORECASE)


def _shown(value: Any) -> str:
    """A parameter's value as OpenAI's messages show it: the JSON sent (``0``, ``0.7``, ``"low"``)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _router(asked: Asked) -> Mapping[str, Any]:
    """OpenRouter's ``reasoning`` object, read on the gateway only (the native hosts ignore it)."""
    got = asked.body.get("reasoning") if asked.gateway else None
    return got if isinstance(got, Mapping) else {}


# ---- OpenAI ----------------------------------------------------------------------------------------------------


def _openai_unsupported(param: str) -> ApiError:
    hint = " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
    return ApiError(400, f"Unsupported parameter: '{param}' is not supported with this model.{hint}", param,
                    "unsupported_parameter")


def _openai_reasoning(rule: Rule, asked: Asked) -> Plan | ApiError:
    body = asked.body
    if body.get("max_tokens") is not None:
        return _openai_unsupported("max_tokens")
    for param in ("temperature", "top_p"):
        value = body.get(param)
        if value is not None and value != 1:
            return ApiError(400, f"Unsupported value: '{param}' does not support {_shown(value)} with this model. "
                            "Only the default (1) value is supported.", param, "unsupported_value")
    if not rule.efforts:  # o1-mini: no system or developer messages either
        for i, message in enumerate(body.get("messages") or ()):
            role = message.get("role") if isinstance(message, Mapping) else None
            if role in ("system", "developer"):
                return ApiError(400, f"Unsupported value: 'messages[{i}].role' does not support '{role}' with this "
                                "model.", f"messages[{i}].role", "unsupported_value")
    effort = body.get("reasoning_effort")
    if effort is not None and not rule.efforts:
        return _openai_unsupported("reasoning_effort")
    if effort is None and rule.efforts:
        effort = _router(asked).get("effort")  # OpenRouter's reasoning.effort, passed on as reasoning_effort
    if effort is None:
        effort = "medium"
    elif effort not in rule.efforts:
        allowed = ", ".join(f"'{e}'" for e in rule.efforts[:-1]) + f", and '{rule.efforts[-1]}'"
        return ApiError(400, f"Unsupported value: 'reasoning_effort' does not support {_shown(effort)} with this "
                        f"model. Supported values are: {allowed}.", "reasoning_effort", "unsupported_value")
    return Plan(asked.cap, "effort", effort)


def _openai_plain(rule: Rule, asked: Asked) -> Plan | ApiError:
    if asked.body.get("reasoning_effort") is not None:
        return _openai_unsupported("reasoning_effort")
    return Plan(asked.cap)


# ---- Google Gemini 2.5 -----------------------------------------------------------------------------------------

GEMINI_EFFORT_BUDGET = {"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576, "none": 0}
"""Gemini's OpenAI-compatible endpoint: reasoning_effort -> thinking budget (``GEMINI_OPENAI``)."""


def _gemini_invalid(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param)


def _thinking_budget(body: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether the body sets ``extra_body.google.thinking_config.thinking_budget`` (the raw JSON the openai SDK
    sends for the documented ``extra_body={"extra_body": {"google": {"thinking_config": ...}}}``), and to what."""
    node: Any = body
    for key in ("extra_body", "google", "thinking_config"):
        node = node.get(key) if isinstance(node, Mapping) else None
    if isinstance(node, Mapping) and "thinking_budget" in node:
        return True, node["thinking_budget"]
    return False, None


def _gemini(rule: Rule, asked: Asked) -> Plan | ApiError:
    body = asked.body
    effort = body.get("reasoning_effort")
    has_budget, budget = _thinking_budget(body)
    if effort is not None and has_budget:
        return _gemini_invalid("reasoning_effort and thinking_budget cannot both be set: they overlap in "
                               "functionality.", "reasoning_effort")
    router = _router(asked)
    if effort is None and not has_budget and router:
        if router.get("max_tokens") is not None:
            has_budget, budget = True, router["max_tokens"]
        elif router.get("effort") is not None:
            effort = router["effort"]
    if effort is not None:
        if effort not in GEMINI_EFFORT_BUDGET:
            return _gemini_invalid(f"Invalid reasoning_effort {_shown(effort)}: expected one of "
                                   f"{', '.join(GEMINI_EFFORT_BUDGET)}.", "reasoning_effort")
        if effort == "none" and not rule.can_turn_off:
            return _gemini_invalid("Budget 0 is invalid. This model only works in thinking mode.", "reasoning_effort")
        budget = GEMINI_EFFORT_BUDGET[effort]
        if budget == 0:
            return Plan(asked.cap, known=True)
        return Plan(asked.cap, "budget", effort, budget)
    if not has_budget:
        return Plan(asked.cap, "dynamic") if rule.default_thinking else Plan(asked.cap)
    if not isinstance(budget, int) or isinstance(budget, bool):
        return _gemini_invalid(f"Invalid value at 'generation_config.thinking_config.thinking_budget' "
                               f"({_shown(budget)}): an integer is expected.", "thinking_budget")
    low, high = rule.budget_range
    if budget == -1:
        return Plan(asked.cap, "dynamic")
    if budget == 0:
        if not rule.can_turn_off:
            return _gemini_invalid("Budget 0 is invalid. This model only works in thinking mode.", "thinking_budget")
        return Plan(asked.cap)
    if not low <= budget <= high:
        return _gemini_invalid(f"The thinking budget ({budget}) is invalid. Please choose a value between {low} and "
                               f"{high}.", "thinking_budget")
    return Plan(asked.cap, "budget", budget=budget)


# ---- Anthropic Claude ------------------------------------------------------------------------------------------

CLAUDE_MIN_BUDGET = 1024


def _claude_sampling(asked: Asked) -> ApiError | None:
    """Anthropic's refusals of sampling parameters while thinking is on."""
    body = asked.body
    temperature, top_p = body.get("temperature"), body.get("top_p")
    if temperature is not None and temperature != 1:
        return ApiError(400, "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
                        f"documentation at {CLAUDE_THINKING}#feature-compatibility", "temperature")
    if top_p is not None and not (_number(top_p) and 0.95 <= top_p <= 1):
        return ApiError(400, "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. "
                        f"Please consult our documentation at {CLAUDE_THINKING}#feature-compatibility", "top_p")
    if body.get("top_k") is not None:
        return ApiError(400, "`top_k` must be unset when thinking is enabled. Please consult our documentation at "
                        f"{CLAUDE_THINKING}#feature-compatibility", "top_k")
    return None


def _claude_budget(asked: Asked, budget: Any, where: str) -> Plan | ApiError:
    if not isinstance(budget, int) or isinstance(budget, bool):
        return ApiError(400, f"{where}: Input should be a valid integer", where)
    if budget < CLAUDE_MIN_BUDGET:
        return ApiError(400, f"{where}: Input should be greater than or equal to {CLAUDE_MIN_BUDGET}", where)
    if asked.cap is not None and budget >= asked.cap:
        return ApiError(400, f"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                        f"documentation at {CLAUDE_THINKING}#max-tokens-and-context-window-size", "max_tokens")
    refused = _claude_sampling(asked)
    if refused is not None:
        return refused
    return Plan(asked.cap, "budget", budget=budget, thinking_block=asked.api == "messages")


def _claude(rule: Rule, asked: Asked) -> Plan | ApiError:
    if asked.api == "chat":  # the gateway: OpenRouter's reasoning.max_tokens is Claude's thinking budget
        budget = _router(asked).get("max_tokens")
        return Plan(asked.cap) if budget is None else _claude_budget(asked, budget, "reasoning.max_tokens")
    thinking = asked.body.get("thinking")
    if thinking is None or (isinstance(thinking, Mapping) and thinking.get("type") == "disabled"):
        return Plan(asked.cap)
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return ApiError(400, "thinking.type: Input should be 'enabled' or 'disabled'", "thinking")
    if "budget_tokens" not in thinking:
        return ApiError(400, "thinking.enabled.budget_tokens: Field required", "thinking")
    return _claude_budget(asked, thinking["budget_tokens"], "thinking.enabled.budget_tokens")


def _claude_plain(rule: Rule, asked: Asked) -> Plan | ApiError:
    thinking = asked.body.get("thinking") if asked.api == "messages" else None
    if asked.api == "chat" and _router(asked).get("max_tokens") is not None:
        thinking = {"type": "enabled"}
    if isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        return ApiError(400, f"thinking: extended thinking is not supported by {asked.model}; see the supported "
                        f"models at {CLAUDE_THINKING}", "thinking")
    return Plan(asked.cap)


# ---- DeepSeek --------------------------------------------------------------------------------------------------


def _deepseek_reasoner(rule: Rule, asked: Asked) -> Plan | ApiError:
    for param in ("logprobs", "top_logprobs"):
        if asked.body.get(param) not in (None, False):
            return ApiError(400, f"deepseek-reasoner does not support the parameter `{param}`", param)
    return Plan(asked.cap, "dynamic")  # temperature, top_p and the penalties: accepted, no effect


def _plain(rule: Rule, asked: Asked) -> Plan | ApiError:
    return Plan(asked.cap)


# ---- the table -------------------------------------------------------------------------------------------------

_DATE = r"(?:-\d{4}-\d{2}-\d{2})?"
_GEMINI = r"(?:(?:google|vertex_ai|gemini)/)?gemini-2\.5-"
_GEMINI_TAIL = r"(?:-preview[\w.-]*|-\d{3})?"

RULES: tuple[Rule, ...] = (
    Rule(
        "OpenAI GPT-5 reasoning models", "openai", "gpt-5, gpt-5-mini, gpt-5-nano (dated ids too; not gpt-5-chat-latest)",
        _ids(rf"(?:openai/)?gpt-5(?:-mini|-nano)?{_DATE}"),
        "Reasoning is always on. Refuses `max_tokens` (400 `unsupported_parameter`: use `max_completion_tokens`) and "
        "`temperature` or `top_p` other than 1 (400 `unsupported_value`). `reasoning_effort`: minimal, low, medium "
        "(the default) or high; another value is a 400 `unsupported_value`. Reasoning tokens come out of "
        "`max_completion_tokens` and are billed as output (`completion_tokens_details.reasoning_tokens`).",
        (OPENAI_REASONING, OPENAI_CHAT), _openai_reasoning, efforts=("minimal", "low", "medium", "high"),
    ),
    Rule(
        "OpenAI o-series reasoning models", "openai", "o1, o3, o3-mini, o4-mini (dated ids too)",
        _ids(rf"(?:openai/)?(?:o1|o3|o3-mini|o4-mini){_DATE}"),
        "As the GPT-5 reasoning models, but `reasoning_effort` is low, medium (the default) or high.",
        (OPENAI_REASONING, OPENAI_CHAT), _openai_reasoning, efforts=("low", "medium", "high"),
    ),
    Rule(
        "OpenAI o1-mini", "openai", "o1-mini", _ids(rf"(?:openai/)?o1-mini{_DATE}"),
        "Reasoning is always on, at a fixed effort; refuses `max_tokens`, `temperature` or `top_p` other than 1, "
        "`reasoning_effort` (400 `unsupported_parameter`) and system or developer messages (400 `unsupported_value` "
        "on `messages[i].role`).",
        (OPENAI_REASONING, OPENAI_CHAT), _openai_reasoning,
    ),
    Rule(
        "OpenAI chat models", "openai",
        "gpt-4o, gpt-4o-mini, chatgpt-4o-latest, gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4-turbo, gpt-3.5-turbo, "
        "gpt-5-chat-latest (openai/gpt-5-chat)",
        _ids(rf"(?:openai/)?(?:gpt-4o(?:-mini)?{_DATE}|chatgpt-4o-latest|gpt-4\.1(?:-mini|-nano)?{_DATE}"
             rf"|gpt-4-turbo(?:-preview|{_DATE})?|gpt-4|gpt-3\.5-turbo(?:-\d{{4}})?|gpt-5-chat(?:-latest)?)"),
        "No reasoning. Refuses `reasoning_effort` (400 `unsupported_parameter`, for o-series and gpt-5 models "
        "only); takes `max_tokens` or `max_completion_tokens` and any `temperature`.",
        (OPENAI_CHAT,), _openai_plain,
    ),
    Rule(
        "Gemini 2.5 Pro", "google", "gemini-2.5-pro", _ids(rf"{_GEMINI}pro{_GEMINI_TAIL}"),
        "Thinks always: dynamic thinking when no budget is sent. A thinking budget from `reasoning_effort` (minimal "
        "and low 1024, medium 8192, high 24576 tokens; `none` is a 400: it cannot be turned off), from "
        "`extra_body.google.thinking_config.thinking_budget` (128 to 32768, or -1 for dynamic; 0 is a 400 \"Budget 0 "
        "is invalid. This model only works in thinking mode.\"), or, on the gateway, OpenRouter's "
        "`reasoning.max_tokens` / `reasoning.effort`. Both `reasoning_effort` and a thinking budget: 400; a budget "
        "out of range: 400 (`INVALID_ARGUMENT` on Gemini's host). Thinking comes out of the output cap.",
        (GEMINI_THINKING, GEMINI_OPENAI, OPENROUTER_REASONING), _gemini, budget_range=(128, 32768),
        default_thinking=True, can_turn_off=False,
    ),
    Rule(
        "Gemini 2.5 Flash-Lite", "google", "gemini-2.5-flash-lite", _ids(rf"{_GEMINI}flash-lite{_GEMINI_TAIL}"),
        "Does not think unless asked: a budget of 512 to 24576 (or -1, dynamic) turns thinking on, 0 or "
        "`reasoning_effort` `none` leaves it off; otherwise as Gemini 2.5 Pro.",
        (GEMINI_THINKING, GEMINI_OPENAI, OPENROUTER_REASONING), _gemini, budget_range=(512, 24576),
    ),
    Rule(
        "Gemini 2.5 Flash", "google", "gemini-2.5-flash", _ids(rf"{_GEMINI}flash{_GEMINI_TAIL}"),
        "Thinks by default (dynamic thinking); a budget of 0 to 24576 (0 or `reasoning_effort` `none` turns thinking "
        "off, -1 is dynamic); otherwise as Gemini 2.5 Pro.",
        (GEMINI_THINKING, GEMINI_OPENAI, OPENROUTER_REASONING), _gemini, budget_range=(0, 24576),
        default_thinking=True,
    ),
    Rule(
        "Claude with extended thinking", "anthropic",
        "claude-sonnet-4-5, claude-haiku-4-5, claude-opus-4-1, claude-opus-4, claude-sonnet-4, claude-3-7-sonnet "
        "(dated and `-latest` ids, and OpenRouter's anthropic/claude-sonnet-4.5 forms)",
        _ids(r"(?:anthropic/)?claude-(?:(?:sonnet|opus)-4(?:[-.][015])?|haiku-4[-.]5|3[-.]7-sonnet)(?:-\d{8}|-latest)?"),
        "Thinking is off unless the Messages request carries `thinking: {\"type\": \"enabled\", \"budget_tokens\": N}`"
        " with N >= 1024 and N < `max_tokens` (else 400 `invalid_request_error`); with thinking on, `temperature` "
        "other than 1, `top_p` below 0.95 and any `top_k` are refused (400). Thinking tokens are part of "
        "`output_tokens` (no separate count) and the reply's `content` opens with a `thinking` block (with its "
        "`signature`). On the gateway, OpenRouter's `reasoning.max_tokens` turns thinking on with that budget "
        "(same rules; `reasoning.effort` is not read for Claude).",
        (CLAUDE_THINKING, OPENROUTER_REASONING), _claude,
    ),
    Rule(
        "Claude without extended thinking", "anthropic", "claude-3-5-sonnet, claude-3-5-haiku, claude-3-haiku, "
        "claude-3-opus",
        _ids(r"(?:anthropic/)?claude-3(?:[-.]5)?-(?:sonnet|haiku|opus)(?:-\d{8}|-latest)?"),
        "No thinking: a request that turns thinking on is refused (400 `invalid_request_error`); other parameters "
        "as the Messages API takes them.",
        (CLAUDE_THINKING,), _claude_plain,
    ),
    Rule(
        "DeepSeek reasoner", "deepseek", "deepseek-reasoner, deepseek/deepseek-r1 (and its dated forms), "
        "deepseek-ai/DeepSeek-R1",
        _ids(r"deepseek-reasoner|(?:deepseek/|deepseek-ai/)?deepseek-r1(?:-\d{4})?"),
        "Reasons always (dynamic: no effort or budget to set). `temperature`, `top_p` and the penalties are accepted "
        "and have no effect; `logprobs` and `top_logprobs` are refused (400). Reasoning is reported in "
        "`completion_tokens_details.reasoning_tokens`, counted in `completion_tokens` and out of the output cap.",
        (DEEPSEEK_REASONING,), _deepseek_reasoner,
    ),
    Rule(
        "DeepSeek chat", "deepseek", "deepseek-chat, deepseek/deepseek-v3.2 (and the other V3 ids)",
        _ids(r"deepseek-chat|(?:deepseek/)?deepseek-(?:chat(?:-v3[\w.-]*)?|v3\.2(?:-exp)?)|deepseek-ai/deepseek-v3(?:\.1)?"),
        "No reasoning; any sampling parameters.",
        (DEEPSEEK_REASONING,), _plain,
    ),
)


@lru_cache(maxsize=4096)
def rule_for(model: str) -> Rule | None:
    """The rule that knows ``model`` (matched on the whole id, case-insensitively), or None."""
    model = model.strip()
    return next((rule for rule in RULES if rule.pattern.fullmatch(model)), None)


def plan(asked: Asked) -> Plan | ApiError:
    """The maker's answer to ``asked``: a refusal, or how it is answered. A model no rule knows takes any
    parameters and does not reason."""
    rule = rule_for(asked.model)
    if rule is None:
        return Plan(asked.cap, known=False)
    return rule.check(rule, asked)


def permissive(cap: int | None) -> Plan:
    """The plan of every request when ``SimConfig.api_rules`` is off: any parameters, no reasoning of the rules."""
    return Plan(cap, known=False)
