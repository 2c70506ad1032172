"""The simulated judges: parse a council prompt and decide a verdict and a reason, deterministically.

Everything here is a pure function of (config, truth table, judge model id, request messages). The truth
comes only from the TruthTable (or, for unknown pairs, a reference-containment heuristic), never from
the prompt.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

import orjson

from council.prompts import PEER_LINE, REPAIR_PROMPT, ROUND1_TEMPLATE, ROUND2_TEMPLATE
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


_COMMON = ["question", "reference", "rubric", "response"]
_R1 = _pieces(ROUND1_TEMPLATE, _COMMON)
_R2 = _pieces(ROUND2_TEMPLATE, [*_COMMON, "own_verdict", "own_reason", "peers"])
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


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """What a judge prompt says: the round, the graded pair, and in round two the votes it was shown."""

    round: int
    question: str
    reference: str
    rubric: str
    response: str
    own_verdict: str | None = None  # "correct" | "incorrect" | None ("none" in the prompt)
    own_reason: str | None = None
    peers: tuple[tuple[str, str, str], ...] = ()  # (letter, verdict, reason)


def _between(text: str, start: int, sep: str) -> tuple[str, int] | None:
    end = text.find(sep, start)
    return None if end < 0 else (text[start:end], end + len(sep))


def parse_prompt(text: str) -> JudgePrompt | None:
    """Parse a user message formatted from ROUND1_TEMPLATE or ROUND2_TEMPLATE; None if it is neither."""
    if text.startswith(_R1[0]):
        parts, rnd = _R1, 1
    elif text.startswith(_R2[0]):
        parts, rnd = _R2, 2
    else:
        return None
    pos = len(parts[0])
    fields: list[str] = []
    for sep in parts[1:4]:  # question, reference, rubric: each ends at the first separator
        got = _between(text, pos, sep)
        if got is None:
            return None
        field, pos = got
        fields.append(field)
    if rnd == 1:
        if not text.endswith(parts[4]) or len(text) - len(parts[4]) < pos:
            return None
        return JudgePrompt(1, *fields, response=text[pos : len(text) - len(parts[4])])
    # Round two: the response may contain anything; what follows it is one-lined, so take the last separator.
    end = text.rfind(parts[4])
    if end < pos:
        return None
    response = text[pos:end]
    pos = end + len(parts[4])
    got = _between(text, pos, parts[5])
    if got is None:
        return None
    own_verdict, pos = got
    got = _between(text, pos, parts[6])
    if got is None:
        return None
    own_reason, pos = got
    tail = parts[7]
    peers_end = text.rfind(tail) if tail else len(text)
    if peers_end < pos:
        return None
    peers = tuple((m["letter"], m["verdict"], m["reason"]) for m in _PEER_RE.finditer(text, pos, peers_end))
    own = own_verdict.strip().lower()
    return JudgePrompt(
        2, *fields, response=response, own_verdict=own if own in _FLIP else None, own_reason=own_reason, peers=peers
    )


def split_repair(messages: list[Message]) -> tuple[list[Message], bool]:
    """(the original messages, whether this is a repair request: an assistant reply then REPAIR_PROMPT)."""
    if (
        len(messages) >= 3
        and messages[-1][0] == "user"
        and messages[-2][0] == "assistant"
        and messages[-1][1].strip() == REPAIR_PROMPT
    ):
        return messages[:-2], True
    return messages, False


def messages_text(messages: list[Message]) -> str:
    return "\x1e".join(role + "\x1d" + content for role, content in messages)


def _rng(seed: int, model: str, text: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1e{model}\x1e{text}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


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
class Decision:
    """A judge's reply: the verdict it means, the reason, and the content actually sent."""

    round: int  # 1 or 2; 0 when the request was not a council prompt
    verdict: str
    reason: str
    content: str
    malformed: bool
    repair: bool


def decide(
    config: SimConfig, truth: TruthTable, model: str, messages: list[Message], behaviour: VendorBehaviour | None = None
) -> Decision:
    """The judge ``model``'s reply to ``messages``: same inputs, same reply."""
    vendor = vendor_of(model)
    b = behaviour if behaviour is not None else config.behaviour(vendor)
    base, repair = split_repair(messages)
    base_text = messages_text(base)
    rng = _rng(config.seed, model, base_text)
    # A fixed number of draws in a fixed order, so each knob has its own stream position.
    u_acc, u_self, u_pers, u_hold, u_reason, u_prefix, u_name, u_which = (rng.random() for _ in range(8))

    user = next((content for role, content in reversed(base) if role == "user"), "")
    prompt = parse_prompt(user)
    rnd = 0
    if prompt is None:
        verdict, reason = "incorrect", _NO_REQUEST
    else:
        rnd = prompt.round
        gold, producers = truth.get(truth_key(prompt.question, prompt.response))
        truth_verdict = gold if gold is not None else heuristic_verdict(prompt.reference, prompt.response)
        own_row = vendor in producers
        verdict = _round_one(b, truth_verdict, own_row, u_acc, u_self)
        reasons = _REASONS[verdict]
        reason = reasons[int(u_reason * len(reasons))]
        if rnd == 2:
            verdict, reason = _round_two(b, prompt, verdict, own_row, u_pers, u_hold, u_reason, u_prefix)
        if u_name < b.name_drop_rate:
            reason = f"As {_name_of(model, vendor, u_which)}, I find that {_lcfirst(reason)}"

    # Presentation: a repair request gets its own stream, so its validity is drawn afresh.
    prng = _rng(config.seed, model, messages_text(messages)) if repair else rng
    good = orjson.dumps({"verdict": verdict, "reason": reason}).decode()
    malformed = prng.random() < b.malformed_rate
    content = _malformed(good, verdict, reason, prng.random()) if malformed else good
    return Decision(rnd, verdict, reason, content, malformed, repair)


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
