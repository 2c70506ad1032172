"""The simulated judges on graded items (a bank ``scale``): an integer level per dimension, deterministically.

A graded prompt is a single-row prompt with a ``<scale>`` section (the scale as one JSON line: its name, its
anchors by level, its dimensions), read by ``council.sim._reading`` as any prompt is; round two shows the
member's own levels and its peers' as JSON lines. It is answered with ``{"scores": {dimension: level, ...},
"reason": "..."}``. The rules, for a scale of top level ``high``:

Truth. Every (row, dimension) has a latent true quality in level units, shared by every judge:
``q = mu * high + QUALITY_SD * Z``, ``mu`` = ``QUALITY_CORRECT`` (0.75) when the truth table's gold verdict of
the row is "correct", ``QUALITY_INCORRECT`` (0.3) when it is "incorrect" (for a pair the table does not know, the
reference-containment heuristic decides), ``Z`` standard normal from (seed, question, response, dimension name).
:func:`true_levels` is ``q`` rounded (half up) and clipped to ``0..high``: what a perfect judge would give.

Round one. A judge's level on a dimension is ``round(q + leniency + family_preference * own + score_noise * N)``,
clipped to ``0..high``, where ``own`` is 1 when a model of the judge's own vendor (per the world) produced the
row, and ``N`` is standard normal from the row's own stream (seed, judge model id, round, the row's content,
the dimension name): the same row gets the same levels in any request.

Round two. The judge reads its own round-one levels and its peers' from the prompt (a dimension its own line
lacks is decided afresh exactly as in round one). Per dimension, the target is the median of its own level and
the peers' (a half level is rounded towards its own); with ``gap = target - own`` it moves to the target with
probability ``persuadability * (1 - exp(-|gap|))``. On a row of its own vendor's models, a move down is refused
with probability ``1 - exp(-family_preference)``. No peer level on a dimension: no move.

In either round, each dimension is left out of the reply with probability ``omit_rate`` (a reply that leaves
every dimension out holds no valid level). The reason is one sentence that names every level given, with a
lead-in in round two saying whether the judge kept or revised its levels, and names the judge at
``name_drop_rate``. Whether the reply is malformed (cut mid-JSON, or the levels in prose: no JSON object with a
``scores`` key), fenced, or inside a sentence of prose is drawn from the whole request as for verdicts
(``malformed_rate``, ``fenced_rate``, ``prose_json_rate``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import orjson
from pydantic import ValidationError

from council.core.schema import Dimension, Scale
from council.sim._config import SimConfig
from council.sim._judge import (
    Decision, ItemVerdict, _item_uniforms, _Judge, _lcfirst, _pick, _shared_normal, _wrap, _z, own_vendor_row,
)
from council.sim._naming import name_drop
from council.sim._reading import RequestText, read_request
from council.sim._truth import TruthTable, heuristic_verdict, truth_key

QUALITY_CORRECT = 0.75
"""Mean true quality, as a fraction of the top level, of a row whose gold verdict is "correct"."""
QUALITY_INCORRECT = 0.3
"""Mean true quality, as a fraction of the top level, of a row whose gold verdict is "incorrect"."""
QUALITY_SD = 0.5
"""Standard deviation, in levels, of the true quality around its mean (per row and dimension)."""

# ---- parsing -------------------------------------------------------------------------------------------

Levels = dict[str, int]


@dataclass(frozen=True, slots=True)
class GradedPeer:
    letter: str
    scores: Levels
    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class GradedPrompt:
    """A graded prompt as read: the round, the question, reference and rubric, the scale, the response and,
    in round two, the member's own levels (``{}`` when it had none valid) and reason and its peers' levels.
    ``stream`` seeds the row's decisions in this round; ``first_stream`` is the row's round-one stream."""

    round: int
    question: str
    reference: str
    rubric: str
    scale: Scale
    response: str
    own_scores: Levels | None = None
    own_reason: str | None = None
    peers: tuple[GradedPeer, ...] = ()
    stream: str = ""
    first_stream: str = ""


def _read_scale(text: str) -> Scale | None:
    """The scale from its JSON line (name, anchors by level, dimensions with their weights), or None."""
    try:
        data = orjson.loads(text)
        levels = data["levels"]
        anchors = [levels[str(k)] for k in range(len(levels))]
        dims = [Dimension(name=d["name"], weight=d["weight"], description=d.get("asks", ""))
                for d in data["dimensions"]]
        return Scale(name=data["name"], levels=anchors, dimensions=dims)
    except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError, AttributeError):
        return None


def _valid_levels(scores: object, scale: Scale) -> Levels | None:
    """The valid levels of a shown ``scores`` object (integers in ``0..high`` for the scale's dimensions)."""
    if not isinstance(scores, dict):
        return None
    names = set(scale.names)
    return {k: v for k, v in scores.items()
            if k in names and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= scale.high}


def _levels_key(levels: Levels) -> str:
    return orjson.dumps(levels, option=orjson.OPT_SORT_KEYS).decode()


def graded_prompt(request: RequestText | None) -> GradedPrompt | None:
    """A single-row request with a readable scale, as read; None otherwise. An own vote or a peer line
    without readable levels counts as no levels (``{}``) and no peer."""
    if request is None or request.batch:
        return None
    item = request.items[0]
    if item.scale is None or item.question is None or item.response is None:
        return None
    scale = _read_scale(item.scale)
    if scale is None:
        return None
    question, reference, rubric = item.question, item.reference or "", item.rubric or ""
    first = "\x1f".join(("graded", question, reference, rubric, item.scale, item.response))
    if request.round == 1:
        return GradedPrompt(1, question, reference, rubric, scale, item.response, stream=first, first_stream=first)
    own_scores = (_valid_levels(item.own.scores, scale) if item.own is not None else None) or {}
    own_reason = item.own.reason if item.own is not None else None
    peers = tuple(GradedPeer(p.member, levels, p.reason) for p in item.peers
                  if (levels := _valid_levels(p.scores, scale)) is not None)
    shown = [_levels_key(own_scores), own_reason or "",
             *("\x1e".join((p.letter, _levels_key(p.scores), p.reason)) for p in peers)]
    return GradedPrompt(2, question, reference, rubric, scale, item.response, own_scores, own_reason, peers,
                        stream="\x1f".join((first, *shown)), first_stream=first)


def parse_graded(text: str) -> GradedPrompt | None:
    """A graded user message as read; None if it is none."""
    return graded_prompt(read_request(text))


# ---- truth and levels ----------------------------------------------------------------------------------


def _round(x: float) -> int:
    return math.floor(x + 0.5)


def _clip(level: int, high: int) -> int:
    return min(max(level, 0), high)


def _truth(truth: TruthTable, question: str, response: str, reference: str) -> tuple[str, frozenset[str]]:
    gold, producers = truth.get(truth_key(question, response))
    return (gold if gold is not None else heuristic_verdict(reference, response)), producers


def true_quality(seed: int, verdict: str, high: int, question: str, response: str, dimension: str) -> float:
    """The latent true quality of a (row, dimension), in levels (not rounded, not clipped)."""
    mu = QUALITY_CORRECT if verdict == "correct" else QUALITY_INCORRECT
    return mu * high + QUALITY_SD * _shared_normal("quality", seed, question, response, dimension)


def true_levels(config: SimConfig, truth: TruthTable, question: str, response: str, scale: Scale,
                reference: str = "") -> Levels:
    """What a perfect judge would give the row: the true quality per dimension, rounded and clipped to
    ``0..high``. ``reference`` is used only when the table does not know the pair (the heuristic verdict)."""
    verdict, _ = _truth(truth, question, response, reference)
    return {d: _clip(_round(true_quality(config.seed, verdict, scale.high, question, response, d)), scale.high)
            for d in scale.names}


def _dim_uniforms(seed: int, model: str, rnd: int, stream: str, dimension: str) -> list[float]:
    """The uniforms of one dimension of a row: the row's own stream, extended by the dimension's name."""
    return _item_uniforms(seed, model, rnd, stream + "\x1e" + dimension)


def _first_levels(seed: int, judge: _Judge, p: GradedPrompt, verdict: str, own_row: bool) -> Levels:
    """The judge's round-one level on every dimension (before omission)."""
    b, high = judge.b, p.scale.high
    bias = b.leniency + (b.family_preference if own_row else 0.0)
    out: Levels = {}
    for d in p.scale.names:
        u_noise = _dim_uniforms(seed, judge.model, 1, p.first_stream, d)[0]
        q = true_quality(seed, verdict, high, p.question, p.response, d)
        out[d] = _clip(_round(q + bias + b.score_noise * _z(u_noise)), high)
    return out


def _second_levels(seed: int, judge: _Judge, p: GradedPrompt, fresh: Levels, own_row: bool) -> tuple[Levels, list[str]]:
    """(the judge's round-two levels, the dimensions it revised) after weighing its peers' levels."""
    b = judge.b
    hold = -math.expm1(-b.family_preference) if own_row else 0.0
    out: Levels = {}
    moved: list[str] = []
    for d in p.scale.names:
        own = (p.own_scores or {}).get(d, fresh[d])
        shown = [peer.scores[d] for peer in p.peers if d in peer.scores]
        out[d] = own
        if not shown:
            continue
        target = statistics.median([own, *shown])
        target = math.floor(target) if target > own else math.ceil(target)  # a half level: towards its own
        gap = target - own
        if gap == 0:
            continue
        _, _, u_pers, u_hold, *_ = _dim_uniforms(seed, judge.model, 2, p.stream, d)
        if gap < 0 and u_hold < hold:
            continue  # holds on to its own vendor's row
        if u_pers < b.persuadability * -math.expm1(-abs(gap)):
            out[d] = target
            moved.append(d)
    return out, moved


# ---- wording -------------------------------------------------------------------------------------------

_BANDS = {
    "high": (
        "The response largely meets the reference and the rubric: {levels}.",
        "The response holds up well against the reference: {levels}.",
        "The response scores high on the scale: {levels}.",
    ),
    "mid": (
        "The response partly meets the reference and the rubric: {levels}.",
        "The response is uneven against the reference: {levels}.",
        "The response scores in the middle of the scale: {levels}.",
    ),
    "low": (
        "The response falls short of the reference and the rubric: {levels}.",
        "The response does not hold up against the reference: {levels}.",
        "The response scores low on the scale: {levels}.",
    ),
}
_NOTHING = "I give no level on any dimension of the scale."
_KEEP = (
    "Having weighed the other members' scores, I keep mine: ",
    "The other members' scores do not change my view: ",
)
_AGREE = ("The other members' scores match mine, and ", "I keep my scores, as ")


def _levels_text(levels: Levels, high: int) -> str:
    return ", ".join(f"{d} {level} of {high}" for d, level in levels.items())


def _reason(levels: Levels, high: int, u: float) -> str:
    if not levels:
        return _NOTHING
    mean = sum(levels.values()) / (len(levels) * high)
    band = "high" if mean >= 2 / 3 else "low" if mean <= 1 / 3 else "mid"
    return _pick(_BANDS[band], u).format(levels=_levels_text(levels, high))


def _lead_in(p: GradedPrompt, own: Levels, moved: list[str], u: float) -> str:
    if not p.peers:
        return ""
    if moved:
        return f"Having weighed the other members' scores, I revise {', '.join(moved)}: "
    if all(peer.scores.get(d, level) == level for peer in p.peers for d, level in own.items()):
        return _pick(_AGREE, u)
    return _pick(_KEEP, u)


def _malformed(good: str, levels: Levels, reason: str, u: float) -> str:
    """A reply with no readable levels: the levels in prose, or the JSON cut in the middle (whatever it
    still holds of a complete object is the inner scores object, which has no ``scores`` key)."""
    said = ", ".join(f"{d}: {level}" for d, level in levels.items()) or "none"
    if u < 0.4:
        return f"Scores: {said}, because {_lcfirst(reason)}"
    if u < 0.8:
        return good[: max(1, len(good) // 2)]
    return f"I would score the response {said}. {reason}"


# ---- the reply -----------------------------------------------------------------------------------------


def answer_graded(
    config: SimConfig, truth: TruthTable, judge: _Judge, p: GradedPrompt, malformed: bool, repair: bool,
    u_how: float, u_wrap: float, u_wrap_how: float,
) -> Decision:
    """The judge's reply to the graded prompt ``p`` (whole-request draws made by ``decide``)."""
    b, seed, high = judge.b, config.seed, p.scale.high
    verdict, producers = _truth(truth, p.question, p.response, p.reference)
    own_row, unknown = own_vendor_row(config.catalogue, judge.vendor, producers)
    fresh = _first_levels(seed, judge, p, verdict, own_row)
    if p.round == 1:
        meant, moved = fresh, []
    else:
        meant, moved = _second_levels(seed, judge, p, fresh, own_row)
    levels = {d: level for d, level in meant.items()
              if _dim_uniforms(seed, judge.model, p.round, p.stream, d)[1] >= b.omit_rate}
    u_reason, u_lead, u_name, u_which = _item_uniforms(seed, judge.model, p.round, p.stream)[:4]
    reason = _reason(levels, high, u_reason)
    lead = _lead_in(p, meant, moved, u_lead) if p.round == 2 else ""
    if lead:
        reason = lead + _lcfirst(reason)
    if u_name < b.name_drop_rate:
        reason = name_drop(reason, judge.model, judge.vendor, u_which)
    good = orjson.dumps({"scores": levels, "reason": reason}).decode()
    wrapping = ""
    if malformed:
        content = _malformed(good, levels, reason, u_how)
    else:
        content, wrapping = _wrap(good, u_wrap, u_wrap_how, b)
    return Decision(
        p.round, content, malformed, repair, False, (ItemVerdict("", "", reason),), wrapping,
        ((p.question, p.response),), int(own_row), unknown, levels,
    )
