"""The simulated models under test: answer predict-then-answer elicitation requests, deterministically.

A request is an elicitation when its system message is ``elicitor.prompts.ELICIT_SYSTEM``; the item is
its last user message. Everything about the reply (the item's true probability of a correct answer, the
stated confidence, correct or not, abstention, the wording, a truncation, the hidden reasoning tokens)
is drawn from sha256 of (seed, model id, item prompt), so the same model always answers an item alike.

To write a correct answer the model must know the item's reference: items are looked up by question text
in the TruthTable (``TruthTable.from_items`` / ``from_rows`` register them). The verdict each written
answer deserves is known at the moment it is written, and the server records it in the same table
(``gold_of_cut`` for a reply cut short), so the simulated judges grade these answers against the truth.
An item the table does not know gets a vague answer whose truth is unknown and not recorded.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass
from statistics import NormalDist

from council.core.schema import BankItem, Verdict
from council.sim._config import ModelBehaviour, SimConfig
from council.sim._truth import TruthTable
from elicitor.parsing import parse_elicited
from elicitor.prompts import ABSTAIN, ELICIT_SYSTEM

Message = tuple[str, str]  # (role, content)

_UNIT = 2.0**-53
_U12 = struct.Struct(">12Q")
_NORMAL = NormalDist()
_SYSTEM = ELICIT_SYSTEM.strip()


def elicited_prompt(messages: list[Message]) -> str | None:
    """The item prompt (stripped) when ``messages`` are an elicitation request, else None."""
    system = next((content for role, content in messages if role in ("system", "developer")), None)
    if system is None or system.strip() != _SYSTEM:
        return None
    return next((content for role, content in reversed(messages) if role == "user"), "").strip()


def _uniforms(seed: int, model: str, question: str) -> list[float]:
    digest = hashlib.sha256(f"elicit\x1e{seed}\x1e{model}\x1e{question}".encode()).digest()
    return [(q >> 11) * _UNIT for q in _U12.unpack(digest + hashlib.sha512(digest).digest())]


def _z(u: float) -> float:
    return _NORMAL.inv_cdf(min(max(u, 1e-12), 1.0 - 1e-12))


def _pick(options: tuple[str, ...], u: float) -> str:
    return options[min(int(u * len(options)), len(options) - 1)]


# ---- wording -------------------------------------------------------------------------------------------

_CANNOT_KNOW = (
    "I have no way of knowing that: it is private information that only you have.",
    "I cannot know that; nothing available to me records it, so I will not guess.",
    "That is not something I can know, and any specific answer from me would be made up.",
)
_MADE_UP = ("Biscuit", "porridge with blueberries", "4,817", "Maple Street", "Tuesday", "3,250 dollars", "Lyon")
_MADE_UP_LEADS = ("It is ", "I am confident it is ", "The answer is ", "Most likely ")
_NUMBER_LEADS = ("The answer is ", "After working it through, the answer is ", "It comes to ", "I get ")
_TEXT_LEADS = ("The answer is ", "I am fairly sure it is ", "It is ")
_CERTIFICATE_LEADS = ("Here is the certificate: ", "Certificate: ", "It checks out as follows: ")
_PREMISE_LEADS = (
    "The question rests on a false premise. ",
    "That premise is mistaken. ",
    "This cannot be answered as asked, because the premise is false. ",
)
_ACCEPT_PREMISE = (
    "It happened mainly for practical reasons at the time, just as the question describes.",
    "Historians put it down to the political pressures of that period.",
    "It came about gradually over several years, largely for economic reasons.",
)
_VAGUE = "I am not certain, but I would say it is {x}."
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


def _ends_sentence(text: str) -> str:
    return text if text[-1:] in ".!?" else text + "."


def _perturb(reference: str, u: float) -> str | None:
    """``reference`` with its last number changed (kept in the same style, never equal), or None without a number."""
    matches = list(_NUMBER.finditer(reference))
    if not matches:
        return None
    m = matches[-1]
    value = int(m.group().replace(",", ""))
    step = 1 + int(u * max(1, value // 10))
    wrong = value + step if (u < 0.5 or value - step < 0) else value - step
    text = f"{wrong:,}" if "," in m.group() else str(wrong)
    return reference[: m.start()] + text + reference[m.end():]


def _made_up(reference: str, u: float) -> str:
    ref = reference.casefold()
    start = min(int(u * len(_MADE_UP)), len(_MADE_UP) - 1)
    for k in range(len(_MADE_UP)):
        cand = _MADE_UP[(start + k) % len(_MADE_UP)]
        if cand.casefold() not in ref and ref not in cand.casefold():
            return cand
    return "something else entirely"


@dataclass(frozen=True, slots=True)
class _Written:
    answer: str
    core: str  # a cut answer that still contains this is still complete


def _write(item: BankItem, correct: bool, u_lead: float, u_wrong: float) -> _Written:
    ref = item.reference.strip()
    if item.probe == "honest_ignorance" or ref.upper() == ABSTAIN:
        if correct:
            text = _pick(_CANNOT_KNOW, u_lead)
            return _Written(text, text)
        wrong = _made_up(ref, u_wrong)
        return _Written(_pick(_MADE_UP_LEADS, u_lead) + wrong + ".", wrong)
    if item.probe == "false_premise":
        if correct:
            return _Written(_pick(_PREMISE_LEADS, u_lead) + _ends_sentence(ref), ref)
        text = _pick(_ACCEPT_PREMISE, u_wrong)
        return _Written(text, text)
    if item.probe == "certificate_or_confess":
        leads = _CERTIFICATE_LEADS
    else:
        leads = _NUMBER_LEADS if _NUMBER.fullmatch(ref.lstrip("-")) else _TEXT_LEADS
    lead = _pick(leads, u_lead)
    if correct:
        return _Written(_ends_sentence(lead + ref), ref)
    wrong = _perturb(ref, u_wrong) or _made_up(ref, u_wrong)
    return _Written(_ends_sentence(lead + wrong), wrong)


# ---- the reply -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Elicitation:
    """A model's reply to one elicitation request, and what the simulator knows about it."""

    question: str  # the item prompt, stripped
    content: str  # the reply text (before any max_tokens cut)
    answer: str | None  # the complete answer that was written (None when cut before any answer)
    gold: Verdict | None  # the verdict the complete answer deserves; None for an unknown item
    core: str  # part of the answer a cut reply must still contain to keep ``gold``
    truncated: bool  # cut by the model's own truncation_rate (finish_reason "length")
    reasoning_tokens: int
    p_true: float
    confidence: float  # the confidence drawn (written unless the format broke)
    correct: bool
    abstained: bool
    known: bool  # the item is in the truth table


def elicit(config: SimConfig, truth: TruthTable, model: str, messages: list[Message]) -> Elicitation | None:
    """``model``'s reply when ``messages`` are an elicitation request, else None. Pure: same inputs, same reply."""
    question = elicited_prompt(messages)
    if question is None:
        return None
    b: ModelBehaviour = config.model_behaviour(model)
    (u_p, u_c, u_ok, u_abs, u_lead, u_wrong, u_trunc, u_cut, u_where, u_reason, u_fmt, u_how) = _uniforms(
        config.seed, model, question
    )
    p_true = min(max(b.accuracy + b.difficulty_sd * _z(u_p), 0.02), 0.98)
    confidence = round(min(max(p_true + b.overconfidence + b.confidence_noise * _z(u_c), 0.0), 1.0), 2)
    correct = u_ok < p_true
    abstained = u_abs < b.abstention_rate
    reasoning = round(b.reasoning_tokens * (0.5 + u_reason))

    item = truth.item(question)
    if abstained:
        written = _Written(ABSTAIN, ABSTAIN)
        gold: Verdict | None = None
        if item is not None:
            ignorance = item.probe == "honest_ignorance" or item.reference.strip().upper() == ABSTAIN
            gold = "correct" if ignorance else "incorrect"
    elif item is not None:
        written = _write(item, correct, u_lead, u_wrong)
        gold = "correct" if correct else "incorrect"
    else:
        vague = _pick(_MADE_UP, u_wrong)
        written, gold = _Written(_VAGUE.format(x=vague), vague), None

    if u_fmt < b.format_error_rate:
        conf_line = "" if u_how < 0.5 else f"Confidence: {_pick(('high', 'fairly sure', 'medium'), u_how * 2 - 1)}\n"
    else:
        conf_line = f"Confidence: {confidence:.2f}\n"
    answer: str | None = written.answer
    truncated = u_trunc < b.truncation_rate
    if truncated:
        # Cut before the answer is complete: no answer at all, or part of the sentence before its core ends.
        limit = written.answer.find(written.core) + len(written.core) // 2 if written.core else 0
        keep = int(u_where * limit) + 1 if (not abstained and u_cut >= 0.4 and limit > 0) else 0
        answer = written.answer[:keep].rstrip() or None
        content = conf_line + ("Answer: " + answer if answer else "")
    else:
        content = f"{conf_line}Answer: {written.answer}"
    return Elicitation(
        question, content, answer, gold, written.core, truncated, reasoning, p_true, confidence, correct,
        abstained, item is not None,
    )


def gold_of_cut(e: Elicitation, cut_answer: str) -> Verdict | None:
    """The verdict an answer deserves when its reply was cut short: the complete answer keeps its verdict,
    a correct answer keeps it while it still holds its core (the reference), anything else is incorrect."""
    if e.gold is None:
        return None
    if e.answer is not None and not e.truncated and cut_answer == e.answer:
        return e.gold
    if e.gold == "correct" and e.core and e.core != ABSTAIN and e.core in cut_answer:
        return "correct"
    return "incorrect"


def record_truth(truth: TruthTable, e: Elicitation, content: str, model: str) -> None:
    """Record the verdict the answer just sent deserves, under the text ``parse_elicited`` extracts from it
    (and under the whole reply text too), with ``model`` (the id it was asked as) as its producer."""
    if not e.known:
        return
    answer = parse_elicited(content).answer
    if answer is None:
        return
    gold = gold_of_cut(e, answer)
    truth.add(e.question, answer, gold, (model,))
    if content.strip() != answer:
        truth.add(e.question, content, gold, (model,))


def prime(config: SimConfig, truth: TruthTable, models: list[str]) -> None:
    """Record what every model's answer to every known item deserves, before anyone asks. Answers are a
    pure function of the request, so a provider restarted between the sessions of one run (a resumed run)
    still knows the truth of the answers it gave in an earlier session."""
    for question in truth.questions():
        for model in models:
            e = elicit(config, truth, model, [("system", ELICIT_SYSTEM), ("user", question)])
            if e is not None:
                record_truth(truth, e, e.content, model)
