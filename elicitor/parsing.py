"""Reading a model's predict-then-answer reply (the format set by ``elicitor.prompts.ELICIT_SYSTEM``).

Nothing is guessed: a confidence that is absent, not a number, ambiguous (a range, a fraction, a decimal
comma) or outside [0, 1] is reported as ``None`` with a status saying why. Percentages are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from elicitor.prompts import ABSTAIN

ConfidenceStatus = Literal["ok", "missing", "malformed", "out_of_range"]

# A label at the start of a line, tolerating markdown decoration: "Confidence: 0.7", "**Confidence:** 0.7".
_DECOR = r"[ \t>*_#-]*"
_CONF_LINE = re.compile(rf"^{_DECOR}confidence[*_ \t]*[:=][*_ \t]*(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)
_ANSWER_LINE = re.compile(rf"^{_DECOR}answer[*_ \t]*:[*_]*", re.IGNORECASE | re.MULTILINE)
_ANSWER_INLINE = re.compile(r"\banswer[*_ \t]*:[*_]*", re.IGNORECASE)
_NUMBER = re.compile(r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<pct>[ \t]*%)?")
# After the number: another number joined by a dash, comma, slash or "to" makes it ambiguous.
_AMBIGUOUS_TAIL = re.compile(r"^\s*(?:[-\u2013\u2014,/]|to\b)\s*\.?\d", re.IGNORECASE)
_ABSTAIN_RE = re.compile(rf"^\W*{ABSTAIN}\W*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Elicited:
    """What a reply says. ``answer`` is None when there is no answer text; ``empty`` when there was no text
    at all. ``confidence`` is set only when ``confidence_status == "ok"``; ``confidence_text`` is the raw
    value written after the first "Confidence:" label (None when there is none)."""

    answer: str | None
    abstained: bool
    confidence: float | None
    confidence_status: ConfidenceStatus
    empty: bool
    confidence_text: str | None = None


_EMPTY = Elicited(None, False, None, "missing", True)


def parse_confidence(value: str) -> tuple[float | None, ConfidenceStatus]:
    """A stated confidence: ``"0.7"``, ``".7"``, ``"70%"``, ``"0.70 (fairly sure)"`` -> 0.7, "ok"."""
    m = _NUMBER.match(value.strip())
    if m is None:
        return None, "malformed"
    rest = value.strip()[m.end():]
    if _AMBIGUOUS_TAIL.match(rest) or (rest[:1].isdigit()):
        return None, "malformed"
    try:
        number = float(m["num"])
    except ValueError:  # pragma: no cover - the pattern only matches floats
        return None, "malformed"
    if m["pct"]:
        number /= 100.0
    if not 0.0 <= number <= 1.0:
        return None, "out_of_range"
    return number, "ok"


def parse_elicited(text: str | None) -> Elicited:
    """Parse a reply. The first "Confidence:" line gives the confidence. The answer is the text after the
    first "Answer:" line marker (or an "Answer:" inside the confidence line), possibly over several lines;
    without a marker it is the whole text. Confidence lines are never part of the answer."""
    if text is None or not text.strip():
        return _EMPTY
    text = text.replace("\r\n", "\n").replace("\r", "\n")

    conf_match = _CONF_LINE.search(text)
    confidence: float | None = None
    status: ConfidenceStatus = "missing"
    conf_text: str | None = None
    if conf_match is not None:
        conf_text = conf_match["value"]
        inline = _ANSWER_INLINE.search(conf_text)  # "Confidence: 0.8 Answer: 42" on one line
        value = conf_text[: inline.start()] if inline else conf_text
        conf_text = value.strip()
        confidence, status = parse_confidence(value)

    marker = _ANSWER_LINE.search(text)
    if marker is None and conf_match is not None:  # "Confidence: 0.8 Answer: 42" on one line
        marker = _ANSWER_INLINE.search(text, conf_match.start("value"), conf_match.end("value"))
    body = text[marker.end():] if marker is not None else text
    kept = [line for line in body.split("\n") if not _CONF_LINE.fullmatch(line)]
    answer = "\n".join(kept).strip() or None
    abstained = answer is not None and _ABSTAIN_RE.match(answer) is not None
    return Elicited(answer, abstained, confidence, status, False, conf_text)
