"""The simulated models under test: answer predict-then-answer elicitation requests, deterministically.

A model under test sees only text, and this module reads it as such a model would, with nothing of the
council's code (``read_elicitation``): a request is an elicitation when its system message asks for a
"Confidence:" line and then an "Answer:" line (whatever its wording, spacing or case); the item is its last
user message; the word that declines to answer is the one the system message says to put on the answer line
(``Answer: ABSTAIN``, "write ABSTAIN"), or ``ABSTAIN`` when it names none. Everything about the reply (the
item's true probability of a correct answer, the stated confidence, correct or not, abstention, the wording,
a truncation, the hidden reasoning tokens) is drawn from sha256 of (seed, model id, item prompt), so the same
model always answers an item alike.

To write a correct answer the model must know the item's reference: items are looked up by question text
in the TruthTable (``TruthTable.from_items`` / ``from_rows`` register them). The model writes its reply
itself, so it knows what it wrote and what it meant: the answer text after its own "Answer: " label, the
confidence it stated, whether it declined, and the verdict that answer deserves. The server records that
verdict in the same table under exactly the answer text it sent (``record_truth``; ``gold_of_cut`` for a
reply cut short), so the simulated judges grade these answers against the truth. Nothing reads the reply
back: a client that extracts another text than the one written finds no truth for it, so a client's
misreading shows in its grades. An item the table does not know gets a vague answer whose truth is unknown
and not recorded.
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

Message = tuple[str, str]  # (role, content)

_UNIT = 2.0**-53
_U12 = struct.Struct(">12Q")
_NORMAL = NormalDist()

# ---- reading the request -------------------------------------------------------------------------------

_DEFAULT_DECLINE = "ABSTAIN"  # the word a model writes to decline when the request names none
_NOBODY_KNOWS = "ABSTAIN"  # a bank reference that says the right answer is to decline
_CONFIDENCE_LABEL = re.compile(r"\bconfidence\s*:", re.IGNORECASE)
_ANSWER_LABEL = re.compile(r"\banswer\s*:", re.IGNORECASE)
# The word in capitals the request says to write to decline: on the answer line ("`Answer: ABSTAIN`"), else
# after "write" or "reply with" ("To decline, write PASS.").
_DECLINE_WORDS = (
    re.compile(r"""(?i:\banswer\s*:)\s*[`'"*]*([A-Z][A-Z_]{2,})\b"""),
    re.compile(r"""(?i:\bwrite|\breply\s+with|\bsay)\s+[`'"*]*([A-Z][A-Z_]{2,})\b"""),
)
_ANSWER_PREFIX = "Answer: "


@dataclass(frozen=True, slots=True)
class ElicitRequest:
    """An elicitation request as a model reads it: the item's question (stripped) and the word that declines."""

    question: str
    decline: str


def read_elicitation(messages: list[Message]) -> ElicitRequest | None:
    """The request when ``messages`` ask for a stated confidence and then an answer, else None."""
    system = next((content for role, content in messages if role in ("system", "developer")), None)
    if system is None:
        return None
    confidence = _CONFIDENCE_LABEL.search(system)
    if confidence is None or _ANSWER_LABEL.search(system, confidence.end()) is None:
        return None
    question = next((content for role, content in reversed(messages) if role == "user"), "").strip()
    return ElicitRequest(question, _decline_word(system))


def _decline_word(system: str) -> str:
    for pattern in _DECLINE_WORDS:
        word = pattern.search(system)
        if word is not None:
            return word.group(1)
    return _DEFAULT_DECLINE


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


def _nobody_knows(item: BankItem) -> bool:
    """The item asks what nobody can know: the right answer is to say so, or to decline."""
    return item.probe == "honest_ignorance" or item.reference.strip().upper() == _NOBODY_KNOWS


def _write(item: BankItem, correct: bool, u_lead: float, u_wrong: float) -> _Written:
    ref = item.reference.strip()
    if _nobody_knows(item):
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
    """A model's reply to one elicitation request, and what the simulator knows about it: what it wrote
    (the confidence line, the answer after its own "Answer: " label) and what that means."""

    question: str  # the item prompt, stripped
    content: str  # the reply text (before any max_tokens cut): confidence_line, then "Answer: " and the answer
    answer: str | None  # the answer as written, after the model's own truncation (None when cut before any answer)
    gold: Verdict | None  # the verdict the complete answer deserves; None for an unknown item
    core: str  # part of the answer a cut reply must still contain to keep ``gold``
    truncated: bool  # cut by the model's own truncation_rate (finish_reason "length")
    reasoning_tokens: int
    p_true: float
    confidence: float  # the confidence drawn (written unless the format broke)
    correct: bool
    abstained: bool  # the model declined: its answer is the request's word for declining
    known: bool  # the item is in the truth table
    confidence_line: str  # the confidence line as written with its newline ("" when left out)
    stated: float | None  # the confidence written as a number (None when the line is left out or a word)

    @property
    def answer_at(self) -> int:
        """Where the answer starts in ``content``."""
        return len(self.confidence_line) + len(_ANSWER_PREFIX)


def elicit(config: SimConfig, truth: TruthTable, model: str, messages: list[Message]) -> Elicitation | None:
    """``model``'s reply when ``messages`` are an elicitation request, else None. Pure: same inputs, same reply."""
    request = read_elicitation(messages)
    return reply(config, truth, model, request) if request is not None else None


def reply(config: SimConfig, truth: TruthTable, model: str, request: ElicitRequest) -> Elicitation:
    """``model``'s reply to ``request``. Pure: same inputs, same reply."""
    question = request.question
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
        written = _Written(request.decline, request.decline)
        gold: Verdict | None = None
        if item is not None:
            gold = "correct" if _nobody_knows(item) else "incorrect"
    elif item is not None:
        written = _write(item, correct, u_lead, u_wrong)
        gold = "correct" if correct else "incorrect"
    else:
        vague = _pick(_MADE_UP, u_wrong)
        written, gold = _Written(_VAGUE.format(x=vague), vague), None

    stated: float | None = None
    if u_fmt < b.format_error_rate:
        conf_line = "" if u_how < 0.5 else f"Confidence: {_pick(('high', 'fairly sure', 'medium'), u_how * 2 - 1)}\n"
    else:
        conf_line, stated = f"Confidence: {confidence:.2f}\n", confidence
    answer: str | None = written.answer
    truncated = u_trunc < b.truncation_rate
    if truncated:
        # Cut before the answer is complete: no answer at all, or part of the sentence before its core ends.
        limit = written.answer.find(written.core) + len(written.core) // 2 if written.core else 0
        keep = int(u_where * limit) + 1 if (not abstained and u_cut >= 0.4 and limit > 0) else 0
        answer = written.answer[:keep].rstrip() or None
        content = conf_line + (_ANSWER_PREFIX + answer if answer else "")
    else:
        content = conf_line + _ANSWER_PREFIX + written.answer
    return Elicitation(
        question, content, answer, gold, written.core, truncated, reasoning, p_true, confidence, correct,
        abstained, item is not None, conf_line, stated,
    )


def sent_answer(e: Elicitation, content: str) -> str | None:
    """The answer ``content`` holds, where ``content`` is the reply as sent (``e.content`` or a prefix of it,
    cut by ``max_tokens``): the text the model wrote after its "Answer: " label, or None when none of it
    was sent. Known from where the model put it, not read back."""
    if e.answer is None or not e.content.startswith(content):
        return None
    return content[e.answer_at:].strip() or None


def gold_of_cut(e: Elicitation, cut_answer: str) -> Verdict | None:
    """The verdict an answer deserves when its reply was cut short: the complete answer keeps its verdict,
    a correct answer keeps it while it still holds its core (the reference), anything else is incorrect."""
    if e.gold is None:
        return None
    if e.answer is not None and not e.truncated and cut_answer == e.answer:
        return e.gold
    if e.gold == "correct" and not e.abstained and e.core and e.core in cut_answer:
        return "correct"
    return "incorrect"


def record_truth(truth: TruthTable, e: Elicitation, content: str, model: str) -> None:
    """Record the verdict the answer just sent deserves, under the answer text as the model wrote and sent it
    (and under the whole reply text too), with ``model`` (the id it was asked as) as its producer."""
    if not e.known:
        return
    answer = sent_answer(e, content)
    if answer is None:
        return
    gold = gold_of_cut(e, answer)
    truth.add(e.question, answer, gold, (model,))
    if content.strip() != answer:
        truth.add(e.question, content, gold, (model,))


def sent_record(e: Elicitation, content: str, model: str) -> dict[str, object]:
    """What the model sent and meant, for ``SimServer.answers``: ``{"model", "question", "content", "answer",
    "confidence", "abstained", "gold"}``: the reply text as sent, the answer in it (``sent_answer``), the
    confidence written as a number if its whole line was sent (else None), whether the model declined and
    the whole word for it was sent, and the verdict the sent answer deserves (None for an unknown item or
    when no answer was sent)."""
    answer = sent_answer(e, content)
    whole_line = e.content.startswith(content) and len(content) >= len(e.confidence_line)
    return {
        "model": model, "question": e.question, "content": content, "answer": answer,
        "confidence": e.stated if whole_line else None,
        "abstained": e.abstained and answer is not None and answer == e.answer,
        "gold": gold_of_cut(e, answer) if answer is not None else None,
    }


def prime(config: SimConfig, truth: TruthTable, models: list[str]) -> None:
    """Record what every model's answer to every known item deserves, before anyone asks. Answers are a
    pure function of the request, so a provider restarted between the sessions of one run (a resumed run)
    still knows the truth of the answers it gave in an earlier session (a model that declines is taken to
    write ``ABSTAIN``; a request that names another word records that one when it is answered)."""
    for question in truth.questions():
        for model in models:
            e = reply(config, truth, model, ElicitRequest(question, _DEFAULT_DECLINE))
            record_truth(truth, e, e.content, model)
