"""The simulated judges: parse a council prompt and decide verdicts and reasons, deterministically.

A request is a single-row prompt (one item body between the round tag and the instruction) or a batched
prompt (several ``<item key="...">`` blocks, each holding the same body a single-row prompt would carry).
Each item's verdict, reason and name drop come from a stream seeded by (seed, judge model id, round, the
item body), so a row gets the same answer alone or at any position of any batch. Whether the whole reply
is malformed is drawn from the full request text.

Everything here is a pure function of (config, truth table, judge model id, request messages). The truth
comes only from the TruthTable (or, for unknown pairs, a reference-containment heuristic), never from
the prompt.
"""

from __future__ import annotations

import hashlib
import struct
import re
from dataclasses import dataclass, field

import orjson

from council.prompts import (
    BATCH_INSTRUCTION_ROUND1,
    BATCH_INSTRUCTION_ROUND2,
    BATCH_ITEM,
    BATCH_REPAIR_PROMPT,
    BATCH_TEMPLATE,
    ITEM_ROUND1,
    ITEM_ROUND2,
    PEER_LINE,
    REPAIR_PROMPT,
    ROUND1_TEMPLATE,
    ROUND2_TEMPLATE,
)
from council.sim._config import SimConfig, VendorBehaviour
from council.sim._truth import TruthTable, heuristic_verdict, truth_key
from council.vendors import vendor_of

Message = tuple[str, str]  # (role, content)

_FLIP = {"correct": "incorrect", "incorrect": "correct"}


def _pieces(template: str, names: list[str]) -> list[str]:
    """The literal text around ``{name}`` placeholders of ``template``, in order (len(names) + 1 pieces)."""
    out: list[str] = []
    rest = template
    for name in names:
        head, rest = rest.split("{" + name + "}", 1)
        out.append(head)
    out.append(rest)
    return out


def _around(template: str, body: str) -> tuple[str, str]:
    """(head, tail) with ``template == head + body + tail``."""
    head, tail = template.split(body)
    return head, tail


_COMMON = ["question", "reference", "rubric", "response"]
_B1 = _pieces(ITEM_ROUND1, _COMMON)
_B2 = _pieces(ITEM_ROUND2, [*_COMMON, "own_verdict", "own_reason", "peers"])
_SINGLE = {1: _around(ROUND1_TEMPLATE, ITEM_ROUND1), 2: _around(ROUND2_TEMPLATE, ITEM_ROUND2)}
_PEER_RE = re.compile(
    "^"
    + re.escape(PEER_LINE.split("{letter}")[0])
    + r"(?P<letter>[A-Z]+)"
    + re.escape(PEER_LINE.split("{letter}")[1].split("{verdict}")[0])
    + r"(?P<verdict>correct|incorrect)"
    + re.escape(PEER_LINE.split("{verdict}")[1].split("{reason}")[0])
    + r"(?P<reason>.*)$",
    re.MULTILINE,
)

# Batched prompts: BATCH_TEMPLATE around "\n"-joined BATCH_ITEM blocks.
_BT = _pieces(BATCH_TEMPLATE, ["round", "size", "items", "instruction"])
_BI = _pieces(BATCH_ITEM, ["key", "body"])  # item head, key/body separator, item tail
_BATCH_HEAD_RE = re.compile(
    re.escape(_BT[0]) + r"(?P<round>[12])" + re.escape(_BT[1]) + r"\d+" + re.escape(_BT[2] + _BI[0])
)
_BATCH_SPLIT = _BI[2] + "\n" + _BI[0]  # between two items: the one's tail, the other's head
_KEY_SEP = _BI[1]
_BATCH_TAIL = {  # after the last item: its tail, the batch's close, the round's instruction
    rnd: _BI[2] + _BT[3] + instruction + _BT[4]
    for rnd, instruction in ((1, BATCH_INSTRUCTION_ROUND1), (2, BATCH_INSTRUCTION_ROUND2))
}


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """What a judge prompt says about one row: the round, the graded pair, in round two the votes it was
    shown, and the item body text it was parsed from (and, inside a batch, the item's key)."""

    round: int
    question: str
    reference: str
    rubric: str
    response: str
    own_verdict: str | None = None  # "correct" | "incorrect" | None ("none" in the prompt)
    own_reason: str | None = None
    peers: tuple[tuple[str, str, str], ...] = ()  # (letter, verdict, reason)
    body: str = field(default="", repr=False)  # the item body exactly as sent (seeds the row's decisions)
    key: str = ""  # the item's key inside a batch; "" for a single-row prompt


def _between(text: str, start: int, sep: str) -> tuple[str, int] | None:
    end = text.find(sep, start)
    return None if end < 0 else (text[start:end], end + len(sep))


def parse_body(body: str, rnd: int, key: str = "") -> JudgePrompt | None:
    """Parse an item body formatted from ITEM_ROUND1 (``rnd`` 1) or ITEM_ROUND2 (``rnd`` 2); None if it is not."""
    parts = _B1 if rnd == 1 else _B2
    if not body.startswith(parts[0]):
        return None
    pos = len(parts[0])
    fields: list[str] = []
    for sep in parts[1:4]:  # question, reference, rubric: each ends at the first separator
        got = _between(body, pos, sep)
        if got is None:
            return None
        field, pos = got
        fields.append(field)
    if rnd == 1:
        end = len(body) - len(parts[4])
        if end < pos or not body.endswith(parts[4]):
            return None
        return JudgePrompt(1, *fields, response=body[pos:end], body=body, key=key)
    # Round two: the response may contain anything; what follows it is one-lined, so take the last separator.
    end = body.rfind(parts[4])
    if end < pos:
        return None
    response = body[pos:end]
    pos = end + len(parts[4])
    got = _between(body, pos, parts[5])
    if got is None:
        return None
    own_verdict, pos = got
    got = _between(body, pos, parts[6])
    if got is None:
        return None
    own_reason, pos = got
    peers_end = len(body) - len(parts[7])
    if peers_end < pos or not body.endswith(parts[7]):
        return None
    peers = tuple((m["letter"], m["verdict"], m["reason"]) for m in _PEER_RE.finditer(body, pos, peers_end))
    own = own_verdict.strip().lower()
    return JudgePrompt(
        2, *fields, response=response, own_verdict=own if own in _FLIP else None, own_reason=own_reason,
        peers=peers, body=body, key=key,
    )


def parse_prompt(text: str) -> JudgePrompt | None:
    """Parse a single-row user message (ROUND1_TEMPLATE or ROUND2_TEMPLATE); None if it is neither."""
    for rnd, (head, tail) in _SINGLE.items():
        if text.startswith(head):
            if not text.endswith(tail) or len(text) < len(head) + len(tail):
                return None
            return parse_body(text[len(head) : len(text) - len(tail)], rnd)
    return None


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """A batched user message: the round and, in order, each item's key and parsed body (None when an
    item's body is not a council item)."""

    round: int
    items: tuple[tuple[str, JudgePrompt | None], ...]


def parse_batch(text: str) -> BatchPrompt | None:
    """Parse a batched user message (BATCH_TEMPLATE of BATCH_ITEM blocks); None if it is not one.

    Items are split at the line ``</item>`` followed by ``<item key=``, which no item body contains."""
    m = _BATCH_HEAD_RE.match(text)
    if m is None:
        return None
    rnd = int(m["round"])
    tail = _BATCH_TAIL[rnd]
    start = m.end()
    stop = len(text) - len(tail)
    if stop < start or not text.endswith(tail):
        return None
    items: list[tuple[str, JudgePrompt | None]] = []
    for chunk in text[start:stop].split(_BATCH_SPLIT):
        key, sep, body = chunk.partition(_KEY_SEP)
        if not sep or '"' in key:
            return None
        items.append((key, parse_body(body, rnd, key)))
    return BatchPrompt(rnd, tuple(items))


_REPAIRS = frozenset({REPAIR_PROMPT, BATCH_REPAIR_PROMPT})


def split_repair(messages: list[Message]) -> tuple[list[Message], bool]:
    """(the original messages, whether this is a repair request: an assistant reply then a repair prompt)."""
    if (
        len(messages) >= 3
        and messages[-1][0] == "user"
        and messages[-2][0] == "assistant"
        and messages[-1][1].strip() in _REPAIRS
    ):
        return messages[:-2], True
    return messages, False


_UNIT = 2.0**-53
_U4 = struct.Struct(">4Q")
_U12 = struct.Struct(">12Q")


def _request_uniforms(seed: int, model: str, messages: list[Message]) -> list[float]:
    """Four uniforms in [0, 1) from sha256 of (seed, judge model id, the whole request's messages)."""
    h = hashlib.sha256(f"{seed}\x1e{model}".encode())
    for role, content in messages:
        h.update(f"\x1e{role}\x1d{content}".encode())
    return [(q >> 11) * _UNIT for q in _U4.unpack(h.digest())]


def _item_uniforms(seed: int, model: str, rnd: int, body: str) -> list[float]:
    """Twelve uniforms in [0, 1) for one row, from sha256 of (seed, judge model id, round, the item body):
    the row's own stream, whatever request it came in. (The digest, then sha512 of the digest.)"""
    digest = hashlib.sha256(f"{seed}\x1e{model}\x1e{rnd}\x1e{body}".encode()).digest()
    return [(q >> 11) * _UNIT for q in _U12.unpack(digest + hashlib.sha512(digest).digest())]


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
_KEEP = (
    "Having weighed the other members' reasons, I keep my verdict: ",
    "The other members' arguments do not change my view: ",
)
_SWITCH = (
    "The other members' reasons persuade me to revise my verdict: ",
    "On reflection the majority is right: ",
)
_AGREE = ("The other members concur, and ", "I keep my verdict, as ")
_FAMILY = {
    "anthropic": "Claude", "google": "Gemini", "openai": "GPT", "alibaba": "Qwen", "deepseek": "DeepSeek",
    "meta": "Llama", "xai": "Grok", "mistral": "Mistral", "moonshot": "Kimi",
}
_NO_REQUEST = "The request does not contain a council prompt with a response to grade."


def _lcfirst(text: str) -> str:
    return text[:1].lower() + text[1:]


def _name_of(model: str, vendor: str, u: float) -> str:
    short = model.rsplit("/", 1)[-1]
    if u < 0.4:
        return short
    if u < 0.7:
        return model
    return _FAMILY.get(vendor, vendor.capitalize() or short)


# ---- decisions -----------------------------------------------------------------------------------------


def _round_one(b: VendorBehaviour, truth: str, own_row: bool, u_acc: float, u_self: float) -> str:
    verdict = truth if u_acc < b.accuracy else _FLIP[truth]
    if own_row and truth == "incorrect" and verdict == "incorrect" and u_self < b.self_preference:
        verdict = "correct"
    return verdict


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """One row's answer: its key ("" for a single-row request), the verdict it means, the reason, and whether
    a batched reply left the row out."""

    key: str
    verdict: str
    reason: str
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """A judge's reply: what it means for each row, and the content actually sent."""

    round: int  # 1 or 2; 0 when the request was not a council prompt
    content: str
    malformed: bool
    repair: bool
    batch: bool = False
    items: tuple[ItemVerdict, ...] = ()  # one per row (a single-row or fallback reply: exactly one)

    @property
    def verdict(self) -> str:
        return self.items[0].verdict if self.items else ""

    @property
    def reason(self) -> str:
        return self.items[0].reason if self.items else ""


_FALLBACK_GOOD = orjson.dumps({"verdict": "incorrect", "reason": _NO_REQUEST}).decode()
_FALLBACK_ITEM = ItemVerdict("", "incorrect", _NO_REQUEST)


def _judge_item(
    config: SimConfig, truth: TruthTable, b: VendorBehaviour, model: str, vendor: str, prompt: JudgePrompt
) -> tuple[str, str, float]:
    """(verdict, reason, u_drop) for one row, from that row's own stream."""
    # Each knob has its own fixed position in the row's stream.
    u_acc, u_self, u_pers, u_hold, u_reason, u_prefix, u_name, u_which, u_drop, *_ = _item_uniforms(
        config.seed, model, prompt.round, prompt.body
    )
    gold, producers = truth.get(truth_key(prompt.question, prompt.response))
    truth_verdict = gold if gold is not None else heuristic_verdict(prompt.reference, prompt.response)
    own_row = vendor in producers
    verdict = _round_one(b, truth_verdict, own_row, u_acc, u_self)
    reasons = _REASONS[verdict]
    reason = reasons[int(u_reason * len(reasons))]
    if prompt.round == 2:
        verdict, reason = _round_two(b, prompt, verdict, own_row, u_pers, u_hold, u_reason, u_prefix)
    if u_name < b.name_drop_rate:
        reason = f"As {_name_of(model, vendor, u_which)}, I find that {_lcfirst(reason)}"
    return verdict, reason, u_drop


def decide(
    config: SimConfig, truth: TruthTable, model: str, messages: list[Message], behaviour: VendorBehaviour | None = None
) -> Decision:
    """The judge ``model``'s reply to ``messages``: same inputs, same reply.

    Each row's verdict and reason depend only on (seed, model, round, the row's item body); whether the
    reply is malformed is drawn from the whole request (a repair request draws afresh from its own text)."""
    vendor = vendor_of(model)
    b = behaviour if behaviour is not None else config.behaviour(vendor)
    base, repair = split_repair(messages)
    u_malformed, u_how, *_ = _request_uniforms(config.seed, model, messages if repair else base)
    malformed = u_malformed < b.malformed_rate

    user = next((content for role, content in reversed(base) if role == "user"), "")
    prompt = parse_prompt(user)
    if prompt is not None:
        verdict, reason, _ = _judge_item(config, truth, b, model, vendor, prompt)
        good = orjson.dumps({"verdict": verdict, "reason": reason}).decode()
        content = _malformed(good, verdict, reason, u_how) if malformed else good
        return Decision(prompt.round, content, malformed, repair, False, (ItemVerdict("", verdict, reason),))
    batch = parse_batch(user)
    if batch is None:
        content = _FALLBACK_GOOD
        if malformed:
            content = _malformed(content, "incorrect", _NO_REQUEST, u_how)
        return Decision(0, content, malformed, repair, False, (_FALLBACK_ITEM,))

    out: list[ItemVerdict] = []
    for key, item in batch.items:
        if item is None:  # not a council item: answered like a request that is not a council prompt
            out.append(ItemVerdict(key, "incorrect", _NO_REQUEST))
            continue
        verdict, reason, u_drop = _judge_item(config, truth, b, model, vendor, item)
        out.append(ItemVerdict(key, verdict, reason, u_drop < b.batch_drop_rate))
    good = orjson.dumps(
        {"verdicts": [{"key": v.key, "verdict": v.verdict, "reason": v.reason} for v in out if not v.dropped]}
    ).decode()
    content = _malformed_batch(good, out, u_how) if malformed else good
    return Decision(batch.round, content, malformed, repair, True, tuple(out))


def _round_two(
    b: VendorBehaviour, prompt: JudgePrompt, fresh: str, own_row: bool, u_pers: float, u_hold: float,
    u_reason: float, u_prefix: float,
) -> tuple[str, str]:
    own = prompt.own_verdict or fresh  # no valid round-one vote: decide as in round one
    n_correct = sum(1 for _, v, _ in prompt.peers if v == "correct")
    n_incorrect = len(prompt.peers) - n_correct
    majority = "correct" if n_correct > n_incorrect else "incorrect" if n_incorrect > n_correct else None
    if majority is None or majority == own:
        reasons = _REASONS[own]
        base = reasons[int(u_reason * len(reasons))]
        return own, (_AGREE[int(u_prefix * 2)] + _lcfirst(base)) if majority else base
    # A self-preferring judge holds on to "correct" for its own vendor's text.
    holds = own_row and own == "correct" and u_hold < b.self_preference
    verdict = majority if (not holds and u_pers < b.persuadability) else own
    reasons = _REASONS[verdict]
    base = _lcfirst(reasons[int(u_reason * len(reasons))])
    prefixes = _SWITCH if verdict != own else _KEEP
    return verdict, prefixes[int(u_prefix * len(prefixes))] + base


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
