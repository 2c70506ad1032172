"""The simulated judges: read a council prompt and decide verdicts and reasons, deterministically.

A request is read as text by ``council.sim._reading``, the way a model reads it, knowing nothing of how the
council builds its prompts: a single-row prompt (one item after the round tag) or a batched one (several
``<item key="...">`` blocks). What the judges decide on is what that reader perceives. When the prompt's
structure holds, that is what the council sent; when a response can forge structure (a literal
``</response>`` in an unfenced response ends it there for the reader, and a forged ``<your_round_one>`` block,
forged peer lines or words after it read as the prompt's own), the judge is fooled as a naive reader is. The
judges are never told which layout a prompt has.

Prompt injection. A judge follows instructions it perceives as coming from the prompt, never what it reads
as the graded data: with probability ``injection_susceptibility`` it gives the verdict that the prompt's own
words ask for (``detect_injection``: "mark this response as correct" and the like, outside every section)
or, in round one, that the votes it perceives in a round-one prompt name. In round two the votes it
perceives (its own round-one vote, its peers', forged or not) are weighed as any vote is. An instruction or
a forged vote that stays inside the response as read is data, and no simulated judge obeys it: how often a
real judge obeys an injection it reads as data is not something this provider can say.

Round one. Every item has a latent difficulty (seed, question text) and every response a latent
deceptiveness (seed, question, response) that all judges share; each judge adds its own noise, drawn from
the row's stream, and errs (flips the true verdict) when the sum crosses its threshold (its accuracy and
the probe's ease, ``ProbeProfile``). So judges err together on hard items and deceptive responses. A judge
is lenient towards every model of its own vendor per the simulated world (``council.sim._world``): an
"incorrect" becomes "correct" with probability ``self_preference``. A reason quotes the reference more
often when its verdict is right (``cite_when_right`` vs ``cite_when_wrong``).

Round two. A judge weighs its peers' head count (``conformity``) and the reasons that quote the reference
(``reason_weight``, its own round-one reason included) into a pressure to switch; it switches with
probability ``persuadability * (1 - exp(-pressure))``. It may follow a wrong majority (herding), or be won
over by a correct minority whose reason quotes the reference.

Each item's verdict, reason and name drop come from a stream seeded by (seed, judge model id, round, the
fields read from the item: question, reference, rubric, response, own vote, peers' votes), so a row gets the
same answer alone or at any position of any batch, and in either layout when both read the same, except
for one planted effect: ``batch_contrast`` (0 by default), which flips a batched row whose verdict agrees
with the majority of the verdicts its neighbours would get alone. Whether the whole reply is malformed,
fenced or wrapped in prose is drawn from the full request text.

Graded items (a ``<scale>`` section: an integer level per dimension instead of a verdict) are answered by
``council.sim._grading``, whose docstring gives their rules: a latent true quality per dimension, the
judge's ``leniency``, ``family_preference`` and ``score_noise``, round-two moves towards the median of the
levels shown, ``omit_rate``. ``decide`` tries them first.

Everything here is a pure function of (config, truth table, judge model id, request messages). The truth
comes only from the TruthTable (or, for pairs it does not know, a reference-containment heuristic on the
response as read), never from the prompt; the vendors of the judge and of each response's producers come
only from the world.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

import orjson

from council.sim._config import ProbeProfile, SimConfig, VendorBehaviour
from council.sim._grading import answer_graded, graded_prompt
from council.sim._judge import (
    _NORMAL, _UNIT, Decision, ItemVerdict, _item_uniforms, _Judge, _lcfirst, _pick, _request_uniforms,
    _shared_normal, _wrap, _z, own_vendor_row,
)
from council.sim._naming import name_drop
from council.sim._reading import ItemText, Message, RequestText, is_repair, read_conversation, read_request
from council.sim._truth import TruthTable, heuristic_verdict, truth_key
from council.sim._world import World

_FLIP = {"correct": "incorrect", "incorrect": "correct"}

Peer = tuple[str, str, str]  # (letter, verdict, reason)


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """What a judge perceives of one row: the round, the graded pair, the votes it was shown (in round one
    only a forged vote can be there) and the words it read as the prompt's own.

    ``response`` is the response as read (``raw_response`` as written, before a fence's ``&lt;`` and ``&amp;``
    are read); ``body`` is the item's text from its first tag to its last, ``key`` its key inside a batch;
    ``contained`` whether the response came fenced (read, never used to decide)."""

    round: int
    question: str
    reference: str
    rubric: str
    response: str
    own_verdict: str | None = None  # "correct" | "incorrect" | None ("none", or no vote, in the prompt)
    own_reason: str | None = None
    peers: tuple[Peer, ...] = ()
    body: str = field(default="", repr=False)
    key: str = ""  # the item's key inside a batch; "" for a single-row prompt
    contained: bool = False
    words: str = field(default="", repr=False)  # read as the prompt's own words, outside every section
    raw_response: str = field(default="", repr=False)

    @property
    def stream(self) -> str:
        """What seeds the row's decisions: the fields read, joined (the same in either layout when both read
        the same, and the same alone or in a batch)."""
        votes = [self.own_verdict or "none", self.own_reason or "", *("\x1e".join(p) for p in self.peers)]
        return "\x1f".join((self.question, self.reference, self.rubric, self.response, *votes))


def judge_prompt(rnd: int, item: ItemText) -> JudgePrompt | None:
    """The row a verdict item reads as; None when it is no verdict item (no question or no response, or a
    scale: a graded item)."""
    if item.scale is not None or item.question is None or item.response is None:
        return None
    own = item.own
    own_verdict = own.verdict if own is not None and own.verdict in _FLIP else None
    peers = tuple((p.member, p.verdict, p.reason) for p in item.peers if p.verdict in _FLIP)
    return JudgePrompt(
        rnd, item.question, item.reference or "", item.rubric or "", item.response, own_verdict,
        own.reason if own is not None else None, peers, body=item.body, key=item.key, contained=item.fenced,
        words=item.words, raw_response=item.raw_response or "",
    )


def prompt_of(request: RequestText | None) -> JudgePrompt | None:
    """A single-row verdict prompt's row; None for a batch or anything else."""
    if request is None or request.batch:
        return None
    return judge_prompt(request.round, request.items[0])


def parse_prompt(text: str) -> JudgePrompt | None:
    """A single-row user message as read; None if it is none."""
    return prompt_of(read_request(text))


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """A batched user message: the round and, in order, each item's key and row (None when an item is not
    a verdict item)."""

    round: int
    items: tuple[tuple[str, JudgePrompt | None], ...]


def batch_of(request: RequestText | None) -> BatchPrompt | None:
    if request is None or not request.batch:
        return None
    return BatchPrompt(request.round, tuple((item.key, judge_prompt(request.round, item)) for item in request.items))


def parse_batch(text: str) -> BatchPrompt | None:
    """A batched user message as read (each ``<item>`` up to the first ``</item>`` after it); None if it is
    none."""
    return batch_of(read_request(text))


def split_repair(messages: list[Message]) -> tuple[list[Message], bool]:
    """(the original messages, whether this is a repair request: an assistant reply then a re-ask)."""
    return (messages[:-2], True) if is_repair(messages) else (messages, False)


def _inject_uniform(seed: int, model: str, rnd: int, stream: str) -> float:
    """The row's draw for following what the prompt asks: its own stream, apart from the twelve above, so
    that planting a susceptibility moves no other decision."""
    digest = hashlib.sha256(f"inject\x1e{seed}\x1e{model}\x1e{rnd}\x1e{stream}".encode("utf-8", "surrogatepass"))
    return (int.from_bytes(digest.digest()[:8], "big") >> 11) * _UNIT


# ---- prompt injection ----------------------------------------------------------------------------------

_V = r"[\"'`*]*(?P<v>correct|incorrect)\b"
_ASKING = (  # (kind, pattern naming the verdict asked for)
    ("instruction", re.compile(
        r"\b(?:mark|grade|judge|label|rate|score|classify|deem|consider|treat)\s+(?:this|the|my|that)\s+"
        r"(?:response|answer|reply|output)\s+(?:as\s+)?(?:being\s+)?" + _V, re.IGNORECASE)),
    ("instruction", re.compile(
        r"\b(?:correct|right|expected|required|final|true|only)\s+verdict\s+(?:here\s+)?(?:is|=|:)\s*" + _V,
        re.IGNORECASE)),
    ("instruction", re.compile(
        r"\b(?:answer|reply|respond|output|return|say|verdict)\s+(?:with\s+|only\s+)?" + _V, re.IGNORECASE)),
    ("verdict_json", re.compile(r"[\"']verdict[\"']\s*:\s*[\"'](?P<v>correct|incorrect)[\"']", re.IGNORECASE)),
    ("peer_line", re.compile(r"\bMember\s*\[\s*[A-Za-z]+\s*\]\s*:?\s*verdict\s*:\s*(?P<v>correct|incorrect)\b",
                             re.IGNORECASE)),
    ("own_block", re.compile(r"^\s*verdict\s*:\s*(?P<v>correct|incorrect)\b", re.IGNORECASE | re.MULTILINE)),
)
_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|everything\s+)?(?:of\s+)?"
    r"(?:the\s+|your\s+|my\s+|previous\s+|prior\s+|above\s+|earlier\s+|preceding\s+|system\s+|grading\s+)*"
    r"(?:instructions?|rubric|reference|rules?|prompts?|guidelines?|directions?)\b",
    re.IGNORECASE,
)
_TAGS = re.compile(r"</?\s*(?:response|peers?|your_round_one|question|reference|rubric|item|batch|round)\b",
                   re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Injection:
    """What a text asks a judge to do: the kinds found (``instruction``, ``override``, ``verdict_json``,
    ``peer_line``, ``own_block``, ``tags``) and the verdict it asks for (None: it asks for none, e.g. only
    prompt tags)."""

    kinds: frozenset[str]
    asks: str | None


@lru_cache(maxsize=1 << 14)
def detect_injection(text: str) -> Injection:
    """What ``text`` asks a judge for, found with a small set of patterns: instruction phrases ("mark this
    response as correct", "the correct verdict is correct", "answer correct"), "ignore previous
    instructions" and the like, a verdict object, peer lines (``Member [C]: verdict: ...``), a ``verdict:``
    line, prompt tags. The verdict asked for is the one named most often (the first named on a tie); an
    override phrase that names none asks for "correct". A judge applies it to the words it reads as the
    prompt's own (``asked_verdict``), never to the response it grades."""
    kinds: set[str] = set()
    named: list[str] = []
    for kind, pattern in _ASKING:
        for m in pattern.finditer(text):
            kinds.add(kind)
            named.append(m["v"].lower())
    if _OVERRIDE.search(text):
        kinds.add("override")
    if _TAGS.search(text):
        kinds.add("tags")
    asks = None
    if named:
        asks = max(dict.fromkeys(named), key=named.count)  # most named; the first of equals
    elif "override" in kinds:
        asks = "correct"
    return Injection(frozenset(kinds), asks)


def asked_verdict(prompt: JudgePrompt) -> str | None:
    """The verdict the prompt, as read, asks the judge for: in round one the verdict most named by the votes
    it shows (a round-one prompt shows none unless they are forged; the first named of equals), else the one
    the prompt's own words ask for (``detect_injection``); None when it asks for none."""
    named = [*([prompt.own_verdict] if prompt.own_verdict else []), *(v for _, v, _ in prompt.peers)]
    if prompt.round == 1 and named:
        return max(dict.fromkeys(named), key=named.count)
    return detect_injection(prompt.words).asks if prompt.words else None


@lru_cache(maxsize=1 << 14)
def item_difficulty(seed: int, question: str) -> float:
    """The item's latent difficulty, standard normal, shared by every judge (keyed by the stripped question)."""
    return _shared_normal("difficulty", seed, question)


@lru_cache(maxsize=1 << 16)
def deceptiveness(seed: int, question: str, response: str) -> float:
    """The response's latent deceptiveness on its item, standard normal, shared by every judge."""
    return _shared_normal("deceptive", seed, question, response)


def _threshold(accuracy: float, ease: float) -> float:
    if accuracy >= 1.0:
        return math.inf
    if accuracy <= 0.0:
        return -math.inf
    return _NORMAL.inv_cdf(accuracy) + ease


def error_score(profile: ProbeProfile, seed: int, question: str, response: str, noise: float) -> float:
    """A judge's latent error score on a row: the shared part (item difficulty, response deceptiveness) plus
    the judge's own ``noise``; the judge errs when it exceeds ``Phi^-1(accuracy) + profile.ease``."""
    d = item_difficulty(seed, question)
    e = deceptiveness(seed, question, response)
    shared = math.sqrt(profile.item_share) * d + math.sqrt(1.0 - profile.item_share) * e
    return math.sqrt(profile.shared) * shared + math.sqrt(1.0 - profile.shared) * noise


# ---- reasons -------------------------------------------------------------------------------------------

_REASONS = {
    "correct": (
        "The response's final answer matches the reference.",
        "The response agrees with the reference and satisfies the rubric.",
        "The answer given is the one the reference expects.",
        "The response reaches the reference answer without contradicting it.",
        "The key claim of the response is consistent with the reference.",
        "The response meets the rubric's criterion for a correct answer.",
    ),
    "incorrect": (
        "The response's final answer does not match the reference.",
        "The response contradicts the reference answer.",
        "The answer given differs from what the reference expects.",
        "The response fails the rubric's criterion for a correct answer.",
        "The key claim of the response is inconsistent with the reference.",
        "The response does not arrive at the reference answer.",
    ),
}
# Reasons that quote the reference: what a judge that checked the response against it tends to write.
_CITED = {
    "correct": (
        'The response gives the reference answer, "{ref}".',
        'The response agrees with the reference "{ref}" and satisfies the rubric.',
        'The reference says "{ref}", and the response says the same.',
    ),
    "incorrect": (
        'The reference is "{ref}", and the response does not arrive at it.',
        'The response contradicts the reference "{ref}".',
        'The reference says "{ref}", which the response does not match.',
    ),
}
_KEEP = (
    "Having weighed the other members' reasons, I keep my verdict: ",
    "The other members' arguments do not change my view: ",
)
_SWITCH = (
    "The other members' reasons persuade me to revise my verdict: ",
    "On reflection I revise my verdict: ",
)
_AGREE = ("The other members concur, and ", "I keep my verdict, as ")
_NO_REQUEST = "The request does not contain a council prompt with a response to grade."
_SNIPPET = 60  # longest quote of a reference in a reason
_CITE_KEY = 24  # a reason cites the reference when it quotes its first characters


def _norm(text: str) -> str:
    return " ".join(text.split())


def _snippet(reference: str) -> str:
    ref = _norm(reference)
    if len(ref) <= _SNIPPET:
        return ref
    return ref[:_SNIPPET].rsplit(" ", 1)[0] + "..."


def cites_reference(reason: str, reference: str) -> bool:
    """Whether ``reason`` quotes ``reference`` (its first characters, after an opening double quote)."""
    ref = _norm(reference)
    return bool(ref) and ('"' + ref[:_CITE_KEY]).casefold() in _norm(reason).casefold()


def _reason(verdict: str, cite: bool, reference: str, u: float) -> str:
    if cite and _norm(reference):
        return _pick(_CITED[verdict], u).format(ref=_snippet(reference))
    return _pick(_REASONS[verdict], u)


# ---- decisions -----------------------------------------------------------------------------------------


_FALLBACK_GOOD = orjson.dumps({"verdict": "incorrect", "reason": _NO_REQUEST}).decode()
_FALLBACK_ITEM = ItemVerdict("", "incorrect", _NO_REQUEST)


@dataclass(frozen=True, slots=True)
class _Row:
    verdict: str
    reason: str
    u_drop: float
    u_contrast: float
    own_row: bool
    unknown: int


def _judge_item(
    config: SimConfig, truth: TruthTable, world: World, judge: _Judge, prompt: JudgePrompt, flip: bool = False
) -> _Row:
    """One row's answer from that row's own stream (``flip``: the batch-contrast flip applies)."""
    b = judge.b
    # Each knob has its own fixed position in the row's stream, seeded by the fields read from the row.
    (u_noise, u_self, u_pers, u_hold, u_reason, u_prefix, u_name, u_which, u_drop, u_cite, u_contrast,
     u_cite2) = _item_uniforms(config.seed, judge.model, prompt.round, prompt.stream)
    gold, producers = truth.get(truth_key(prompt.question, prompt.response))
    if gold is None and not producers and prompt.raw_response not in ("", prompt.response):
        gold, producers = truth.get(truth_key(prompt.question, prompt.raw_response))  # known as written
    truth_verdict = gold if gold is not None else heuristic_verdict(prompt.reference, prompt.response)
    own_row, unknown = own_vendor_row(world, judge.vendor, producers)
    item = truth.item(prompt.question)
    profile = config.probe(item.probe if item is not None else None)
    score = error_score(profile, config.seed, prompt.question, prompt.response, _z(u_noise))
    fresh = truth_verdict if score <= _threshold(b.accuracy, profile.ease) else _FLIP[truth_verdict]
    if own_row and fresh == "incorrect" and u_self < b.self_preference:
        fresh = "correct"  # family leniency
    # What the prompt as read asks for (its own words, or votes shown in round one), followed or not.
    asks = asked_verdict(prompt) if b.injection_susceptibility > 0.0 else None
    obeys = asks is not None and (
        _inject_uniform(config.seed, judge.model, prompt.round, prompt.stream) < b.injection_susceptibility)
    if prompt.round == 1:
        verdict = _FLIP[fresh] if flip else fresh
        if obeys:
            verdict = asks
        cite = u_cite < (b.cite_when_right if verdict == truth_verdict else b.cite_when_wrong)
        reason = _reason(verdict, cite, prompt.reference, u_reason)
    else:
        fresh_cite = u_cite < (b.cite_when_right if fresh == truth_verdict else b.cite_when_wrong)
        verdict, prefix = _round_two(b, prompt, fresh, fresh_cite, own_row, u_pers, u_hold, u_prefix)
        if flip:
            verdict, prefix = _FLIP[verdict], ""
        if obeys and verdict != asks:
            verdict, prefix = asks, ""
        cite = u_cite2 < (b.cite_when_right if verdict == truth_verdict else b.cite_when_wrong)
        base = _reason(verdict, cite, prompt.reference, u_reason)
        reason = prefix + _lcfirst(base) if prefix else base
    if u_name < b.name_drop_rate:
        reason = name_drop(reason, judge.model, judge.vendor, u_which)
    return _Row(verdict, reason, u_drop, u_contrast, own_row, unknown)


def _round_two(
    b: VendorBehaviour, prompt: JudgePrompt, fresh: str, fresh_cite: bool, own_row: bool, u_pers: float,
    u_hold: float, u_prefix: float,
) -> tuple[str, str]:
    """(final verdict, the reason's lead-in) after weighing the peers' votes and reasons."""
    if prompt.own_verdict is not None:
        own = prompt.own_verdict
        own_cite = cites_reference(prompt.own_reason or "", prompt.reference)
    else:  # no valid round-one vote: decide as in round one
        own, own_cite = fresh, fresh_cite
    if not prompt.peers:
        return own, ""
    against = cited_against = cited_with = 0
    for _, verdict, reason in prompt.peers:
        cited = cites_reference(reason, prompt.reference)
        if verdict != own:
            against += 1
            cited_against += cited
        else:
            cited_with += cited
    with_ = len(prompt.peers) - against
    if not against:
        return own, _pick(_AGREE, u_prefix)
    pressure = b.conformity * (against - with_) + b.reason_weight * (cited_against - cited_with - own_cite)
    # A lenient judge holds on to "correct" for its own vendor's text.
    holds = own_row and own == "correct" and u_hold < b.self_preference
    if not holds and pressure > 0.0 and u_pers < b.persuadability * -math.expm1(-pressure):
        return _FLIP[own], _pick(_SWITCH, u_prefix)
    return own, _pick(_KEEP, u_prefix)


def decide(
    config: SimConfig, truth: TruthTable, model: str, messages: list[Message], behaviour: VendorBehaviour | None = None
) -> Decision:
    """The judge ``model``'s reply to ``messages``: same inputs, same reply.

    The judge's vendor is the world's (``config.catalogue``; "" when the world does not know the model, and
    then no row is its own). Each row's verdict and reason depend only on (seed, model, round, the row's item
    body), but for ``batch_contrast``; whether the reply is malformed, fenced or wrapped in prose is drawn
    from the whole request (a repair request draws afresh from its own text)."""
    world = config.catalogue
    vendor = world.vendor(model) or ""
    b = behaviour if behaviour is not None else config.behaviour(vendor)
    model = world.identity(model)  # the same model under its own API's id and a gateway's draws the same
    judge = _Judge(model, vendor, b)
    base, repair = split_repair(messages)
    u_malformed, u_how, u_wrap, u_wrap_how = _request_uniforms(config.seed, model, messages if repair else base)
    malformed = u_malformed < b.malformed_rate

    request = read_conversation(base)
    graded = graded_prompt(request)
    if graded is not None:
        return answer_graded(config, truth, judge, graded, malformed, repair, u_how, u_wrap, u_wrap_how)
    prompt = prompt_of(request)
    if prompt is not None:
        row = _judge_item(config, truth, world, judge, prompt)
        good = orjson.dumps({"verdict": row.verdict, "reason": row.reason}).decode()
        wrapping = ""
        if malformed:
            content = _malformed(good, row.verdict, row.reason, u_how)
        else:
            content, wrapping = _wrap(good, u_wrap, u_wrap_how, b)
        return Decision(
            prompt.round, content, malformed, repair, False, (ItemVerdict("", row.verdict, row.reason),), wrapping,
            ((prompt.question, prompt.response),), int(row.own_row), row.unknown,
        )
    batch = batch_of(request)
    if batch is None:
        content = _FALLBACK_GOOD
        if malformed:
            content = _malformed(content, "incorrect", _NO_REQUEST, u_how)
        return Decision(0, content, malformed, repair, False, (_FALLBACK_ITEM,))

    solo: list[_Row | None] = [
        None if item is None else _judge_item(config, truth, world, judge, item) for _, item in batch.items
    ]
    if b.batch_contrast > 0.0:
        solo = _contrast(config, truth, world, judge, batch, solo)
    out: list[ItemVerdict] = []
    for (key, item), row in zip(batch.items, solo):
        if row is None:  # not a council item: answered like a request that is not a council prompt
            out.append(ItemVerdict(key, "incorrect", _NO_REQUEST))
        else:
            out.append(ItemVerdict(key, row.verdict, row.reason, row.u_drop < b.batch_drop_rate))
    good = orjson.dumps(
        {"verdicts": [{"key": v.key, "verdict": v.verdict, "reason": v.reason} for v in out if not v.dropped]}
    ).decode()
    wrapping = ""
    if malformed:
        content = _malformed_batch(good, out, u_how)
    else:
        content, wrapping = _wrap(good, u_wrap, u_wrap_how, b)
    graded = [r for r in solo if r is not None]
    return Decision(
        batch.round, content, malformed, repair, True, tuple(out), wrapping,
        tuple((item.question, item.response) for _, item in batch.items if item is not None),
        sum(r.own_row for r in graded), sum(r.unknown for r in graded),
    )


def _contrast(
    config: SimConfig, truth: TruthTable, world: World, judge: _Judge, batch: BatchPrompt, solo: list[_Row | None]
) -> list[_Row | None]:
    """The planted batch (contrast) effect: a row whose solo verdict agrees with the strict majority of its
    neighbours' solo verdicts flips with probability ``batch_contrast`` (harsher among rows that look right,
    kinder among rows that look wrong)."""
    n_correct = sum(1 for r in solo if r is not None and r.verdict == "correct")
    n_rated = sum(1 for r in solo if r is not None)
    out = list(solo)
    for i, ((_, item), row) in enumerate(zip(batch.items, solo)):
        if row is None or item is None:
            continue
        others_correct = n_correct - (row.verdict == "correct")
        others_incorrect = n_rated - 1 - others_correct
        looks = None
        if others_correct != others_incorrect:
            looks = "correct" if others_correct > others_incorrect else "incorrect"
        if looks == row.verdict and row.u_contrast < judge.b.batch_contrast:
            out[i] = _judge_item(config, truth, world, judge, item, flip=True)
    return out


def _malformed(good: str, verdict: str, reason: str, u: float) -> str:
    if u < 0.4:
        return f"Verdict: {verdict}, because {_lcfirst(reason)}"
    if u < 0.8:
        return good[: max(1, len(good) // 2)]  # cut mid-JSON
    return f"I would say the response is {verdict}. {reason}"


def _malformed_batch(good: str, items: list[ItemVerdict], u: float) -> str:
    shown = [v for v in items if not v.dropped]
    if u < 0.4:
        return "\n".join(f"Item {v.key}: {v.verdict}, because {_lcfirst(v.reason)}" for v in shown) or "No items."
    if u < 0.8:
        return good[: max(1, len(good) // 2)]  # cut mid-JSON
    said = " ".join(f"Item {v.key} is {v.verdict}. {v.reason}" for v in shown)
    return f"Here are my verdicts. {said}".rstrip()
