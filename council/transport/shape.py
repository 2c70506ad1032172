"""A seat's requests fitted to its model and its endpoint: the id sent, the parameter that bounds the output, the
sampling parameter (or none), the reasoning effort or thinking budget, and the room reasoning gets on top of the
answer. Built once per seat (:func:`shape_for`) from the model's capabilities (:mod:`council.protocol.capabilities`)
and the judge config; every request of the seat, synchronous or batched, carries it (:meth:`RequestShape.fields`).

How reasoning is asked for depends on where the request goes:

- **a gateway** (OpenRouter-style ids, ``/chat/completions``): ``reasoning_effort`` for a model that takes an effort;
  OpenRouter's ``reasoning: {"max_tokens": N}`` for one that takes a thinking budget (Gemini, Claude)
  (https://openrouter.ai/docs/use-cases/reasoning-tokens);
- **OpenAI's own API**: ``reasoning_effort`` (https://platform.openai.com/docs/guides/reasoning);
- **Gemini's OpenAI-compatible endpoint**: ``extra_body.google.thinking_config.thinking_budget``
  (https://ai.google.dev/gemini-api/docs/openai#thinking);
- **Anthropic's Messages API**: ``thinking: {"type": "enabled", "budget_tokens": N}``, only when thinking is on
  (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking).

A reasoning model's output bound is the answer's budget plus the thinking budget: its reasoning comes out of the
same bound, and a bound the reasoning fills returns an empty answer cut at length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from council.protocol.capabilities import Capabilities, capabilities_of, native_id, unknown_warning
from council.protocol.prompts import request_key

Ids = Literal["gateway", "native"]
EFFORT_ORDER = ("minimal", "low", "medium", "high")


@dataclass(frozen=True, slots=True)
class RequestShape:
    """What every request of one seat carries besides its messages (see the module's docstring)."""

    model: str  # the id sent: the seat's (gateway) or the provider's own (native)
    budget_param: str = "max_tokens"
    temperature: float | None = 0.0  # None: not sent (the model's default)
    headroom: int = 0  # tokens of reasoning allowed on top of the answer's budget
    reasoning: dict[str, Any] = field(default_factory=dict)  # the body's reasoning fields
    reasons: bool = False  # the model reasons under this shape
    problems: tuple[str, ...] = ()  # what the provider would refuse: the run cannot start
    warnings: tuple[str, ...] = ()

    def fields(self, max_tokens: int) -> dict[str, Any]:
        """The body's fields for an answer of at most ``max_tokens`` tokens, reasoning's room added."""
        out: dict[str, Any] = {self.budget_param: max_tokens + self.headroom}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        out.update(self.reasoning)
        return out


def plain(model: str, temperature: float = 0.0) -> RequestShape:
    """The shape of a request to a model with no rules to follow (tests, tools): ``max_tokens`` and a temperature."""
    return RequestShape(model=model, temperature=temperature)


def shape_for(model: str, vendor: str, *, temperature: float, reasoning: str, effort: str, thinking_budget: int,
              api: str = "openai", ids: Ids = "gateway", host: str = "") -> RequestShape:
    """The shape of ``model``'s requests (a seat's id, made by ``vendor``) through ``api`` with ``ids`` ids; ``host``
    is the endpoint's host (Gemini's own API is told apart by it). ``reasoning`` is ``auto`` (the model's own
    default: reasoning where it reasons by default), ``on`` or ``off``; ``effort`` and ``thinking_budget`` set how much."""
    sent = native_id(model, vendor) if ids == "native" or api == "anthropic" else model
    caps = capabilities_of(model, vendor)
    problems: list[str] = []
    warnings: list[str] = []
    if not caps.known:
        warnings.append(unknown_warning(model, thinking_budget))
        return RequestShape(model=sent, budget_param=_budget_param(caps, api), temperature=None,
                            headroom=thinking_budget, reasons=True, warnings=tuple(warnings))
    on = _reasons(caps, reasoning)
    if reasoning == "off" and on:
        warnings.append(f"{model} always reasons: judge.reasoning = off cannot turn it off")
    if reasoning == "on" and caps.reasoning == "none":
        warnings.append(f"{model} does not reason: judge.reasoning = on changes nothing")
    fields: dict[str, Any] = {}
    if on:
        if caps.thinking_budget is not None:
            low, high = caps.thinking_budget
            if thinking_budget < low or (high is not None and thinking_budget > high):
                span = f"{low}..{high}" if high is not None else f"at least {low}"
                problems.append(f"{model}: judge.thinking_budget {thinking_budget} is outside the model's thinking "
                                f"budget ({span} tokens; {caps.pages[0] if caps.pages else 'its provider'})")
            fields = _budget_fields(api, ids, host, thinking_budget)
        elif caps.efforts:
            fields = {"reasoning_effort": nearest_effort(effort, caps.efforts)}
    elif caps.reasoning == "default" and caps.thinking_budget is not None and caps.thinking_budget[0] == 0:
        fields = _budget_fields(api, ids, host, 0)  # thinking turned off: a budget of 0 (Gemini Flash)
    sampling = not on or caps.sampling_while_reasoning
    return RequestShape(model=sent, budget_param=_budget_param(caps, api), temperature=temperature if sampling else None,
                        headroom=thinking_budget if on else 0, reasoning=fields, reasons=on, problems=tuple(problems),
                        warnings=tuple(warnings))


def _reasons(caps: Capabilities, reasoning: str) -> bool:
    if caps.reasoning == "always":
        return True
    if caps.reasoning == "none":
        return False
    if reasoning == "auto":
        return caps.reasoning == "default"
    return reasoning == "on"


def _budget_param(caps: Capabilities, api: str) -> str:
    return "max_tokens" if api == "anthropic" else caps.budget_param


def _budget_fields(api: str, ids: Ids, host: str, budget: int) -> dict[str, Any]:
    """A thinking budget in the dialect of the endpoint (see the module's docstring)."""
    if api == "anthropic":
        return {"thinking": {"type": "enabled", "budget_tokens": budget}} if budget else {}
    if ids == "native" and "googleapis.com" in host:
        return {"extra_body": {"google": {"thinking_config": {"thinking_budget": budget}}}}
    return {"reasoning": {"max_tokens": budget}}


def nearest_effort(wanted: str, accepted: tuple[str, ...]) -> str:
    """``wanted`` if the model takes it, else the accepted effort nearest to it (the higher one on a tie)."""
    if wanted in accepted:
        return wanted
    rank = EFFORT_ORDER.index(wanted) if wanted in EFFORT_ORDER else 1
    known = [e for e in accepted if e in EFFORT_ORDER]
    if not known:
        return accepted[0]
    return min(known, key=lambda e: (abs(EFFORT_ORDER.index(e) - rank), -EFFORT_ORDER.index(e)))


def seat_shape(model: str, vendor: str, params: Any, endpoint: Any, api: str = "openai") -> RequestShape:
    """:func:`shape_for` with the judge config's settings (``JudgeParams``: temperature, reasoning, effort and
    thinking budget) for a seat asked at ``endpoint`` (an ``Endpoint``: its ids, gateway or native, and its host)."""
    return shape_for(model, vendor, temperature=params.temperature, reasoning=params.reasoning,
                     effort=params.reasoning_effort, thinking_budget=params.thinking_budget, api=api, ids=endpoint.ids,
                     host=endpoint.host)


@lru_cache(maxsize=256)
def reasoning_variant(model: str, vendor: str, params: Any) -> str:
    """What of the judge config's reasoning settings changes ``model``'s answers, for its votes' request keys: ""
    for a model that does not reason under them (its keys are what they were before reasoning was configured).
    Asked once a vote: cached per seat and config (``params``, a frozen ``JudgeParams``, is hashable)."""
    caps = capabilities_of(model, vendor)
    if caps.known and not _reasons(caps, params.reasoning):
        return ""
    effort = nearest_effort(params.reasoning_effort, caps.efforts) if caps.efforts else ""
    return f"reasoning:{effort}:{params.thinking_budget}"



def sent_fields(shape: RequestShape | None, model: str, max_tokens: int) -> dict[str, Any] | None:
    """What a request of ``shape`` for ``model`` (the seat's id) sent besides its messages, for the vote's record;
    None where it sent only that id, its temperature and ``max_tokens`` (a record as it was before shapes)."""
    if shape is None or (shape.model == model and shape.budget_param == "max_tokens" and shape.temperature is not None
                         and not shape.reasoning and not shape.headroom):
        return None
    return {"model": shape.model, **shape.fields(max_tokens)}


def reasoning_headroom(model: str, vendor: str, params: Any) -> int:
    """The tokens of reasoning a request of ``model`` may spend on top of its answer under the judge config
    ``params``: its thinking budget where it reasons (or may: a model the table does not know), else 0."""
    return params.thinking_budget if reasoning_variant(model, vendor, params) else 0


def vote_key(model: str, vendor: str, round_: int, body: str, params: Any) -> str:
    """A vote's request key (:func:`council.protocol.prompts.request_key`) under the judge config ``params``, its
    seat's reasoning settings included where its model reasons: the one way every asker computes it."""
    return request_key(model, round_, body, params.temperature, params.max_tokens,
                       reasoning_variant(model, vendor, params))
