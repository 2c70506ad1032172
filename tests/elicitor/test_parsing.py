"""The predict-then-answer contract: the prompt, and parsing what models reply."""

from __future__ import annotations

import hashlib

import pytest

from elicitor.parsing import Elicited, parse_confidence, parse_elicited
from elicitor.prompts import ABSTAIN, ELICIT_HASH, ELICIT_SYSTEM, ELICIT_VERSION, elicit_messages


def test_prompt_contract() -> None:
    assert ELICIT_VERSION == "elicit-v1"
    assert "Confidence: <number from 0 to 1" in ELICIT_SYSTEM and "Answer: <your answer>" in ELICIT_SYSTEM
    assert f"Answer: {ABSTAIN}" in ELICIT_SYSTEM
    assert ELICIT_HASH == hashlib.sha256((ELICIT_VERSION + ELICIT_SYSTEM).encode()).hexdigest()[:16]
    assert len(ELICIT_HASH) == 16 and int(ELICIT_HASH, 16) >= 0
    assert elicit_messages("  What is 2 + 2?\n") == [
        {"role": "system", "content": ELICIT_SYSTEM},
        {"role": "user", "content": "What is 2 + 2?"},
    ]


def test_well_formed_reply() -> None:
    got = parse_elicited("Confidence: 0.74\nAnswer: The answer is 52,544.")
    assert got == Elicited("The answer is 52,544.", False, 0.74, "ok", False, "0.74")
    assert got.confidence == 0.74 and not got.empty


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.7", 0.7), (".7", 0.7), ("70%", 0.7), ("70 %", 0.7), ("0.70 (fairly sure)", 0.7), ("1", 1.0), ("0", 0.0),
     ("1.0.", 1.0), ("100%", 1.0), ("0.7 out of 1", 0.7)],
)
def test_confidence_forms_accepted(text: str, value: float) -> None:
    got = parse_elicited(f"Confidence: {text}\nAnswer: x")
    assert got.confidence_status == "ok" and got.confidence == pytest.approx(value)
    assert got.answer == "x"


@pytest.mark.parametrize(
    ("text", "status"),
    [("high", "malformed"), ("", "malformed"), ("very sure (0.9)", "malformed"), ("0,7", "malformed"),
     ("0.6-0.8", "malformed"), ("0.6 to 0.8", "malformed"), ("7/10", "malformed"),
     ("1.3", "out_of_range"), ("-0.1", "out_of_range"), ("70", "out_of_range"), ("120%", "out_of_range"),
     ("-5%", "out_of_range")],
)
def test_confidence_never_guessed(text: str, status: str) -> None:
    got = parse_elicited(f"Confidence: {text}\nAnswer: x")
    assert got.confidence is None and got.confidence_status == status
    assert got.answer == "x" and not got.abstained
    assert parse_confidence(text) == (None, status)


def test_missing_confidence() -> None:
    got = parse_elicited("Answer: Paris")
    assert got.answer == "Paris" and got.confidence is None and got.confidence_status == "missing"
    assert got.confidence_text is None


def test_no_answer_marker_uses_the_whole_text() -> None:
    assert parse_elicited("Confidence: 0.9\nParis, obviously.").answer == "Paris, obviously."
    plain = parse_elicited("I think it is Paris.")
    assert plain.answer == "I think it is Paris." and plain.confidence_status == "missing"
    # "answer:" inside a sentence is not a marker
    assert parse_elicited("My answer: Paris").answer == "My answer: Paris"


def test_multi_line_answer_and_windows_newlines() -> None:
    text = "Confidence: 0.55\r\nAnswer: First line.\r\nSecond line.\r\n\r\nThird line.\r\n"
    got = parse_elicited(text)
    assert got.answer == "First line.\nSecond line.\n\nThird line." and got.confidence == 0.55
    assert parse_elicited("Confidence: 0.5\rAnswer: a\rb").answer == "a\nb"


def test_confidence_twice_takes_the_first() -> None:
    got = parse_elicited("Confidence: 0.3\nConfidence: 0.9\nAnswer: 42")
    assert got.confidence == 0.3 and got.answer == "42"
    later = parse_elicited("Confidence: 0.6\nAnswer: 42\nConfidence: 0.95")
    assert later.confidence == 0.6 and later.answer == "42"  # confidence lines never join the answer
    bad_first = parse_elicited("Confidence: high\nConfidence: 0.9\nAnswer: 42")
    assert bad_first.confidence is None and bad_first.confidence_status == "malformed"


def test_answer_before_confidence_and_one_line_and_markdown() -> None:
    got = parse_elicited("Answer: 42\nConfidence: 0.8")
    assert got.answer == "42" and got.confidence == 0.8
    one = parse_elicited("Confidence: 0.8 Answer: 42")
    assert one.answer == "42" and one.confidence == 0.8
    md = parse_elicited("**Confidence:** 0.9\n**Answer:** Paris")
    assert md.answer == "Paris" and md.confidence == 0.9
    lower = parse_elicited("confidence: 0.2\nanswer: maybe")
    assert lower.answer == "maybe" and lower.confidence == 0.2


@pytest.mark.parametrize("answer", ["ABSTAIN", "abstain", "Abstain.", "**ABSTAIN**", "[ABSTAIN]", " ABSTAIN! "])
def test_abstention(answer: str) -> None:
    got = parse_elicited(f"Confidence: 0.1\nAnswer: {answer}")
    assert got.abstained and got.answer == answer.strip()


@pytest.mark.parametrize("answer", ["I abstain from guessing", "ABSTAIN because unsure", "Abstained"])
def test_not_abstention(answer: str) -> None:
    got = parse_elicited(f"Confidence: 0.1\nAnswer: {answer}")
    assert not got.abstained and got.answer == answer


@pytest.mark.parametrize("text", [None, "", "   ", "\r\n\n"])
def test_empty(text: str | None) -> None:
    got = parse_elicited(text)
    assert got.empty and got.answer is None and not got.abstained
    assert got.confidence is None and got.confidence_status == "missing"


def test_cut_replies() -> None:
    # A reply cut after the confidence line has a confidence and no answer; it is not "empty".
    for text in ("Confidence: 0.74\n", "Confidence: 0.74\nAnswer:", "Confidence: 0.74\nAnswer:   \n"):
        got = parse_elicited(text)
        assert got.answer is None and got.confidence == 0.74 and not got.empty
    half = parse_elicited("Confidence: 0.74\nAnswer: After working it through, the")
    assert half.answer == "After working it through, the"


def test_elicited_is_frozen() -> None:
    got = parse_elicited("Confidence: 0.5\nAnswer: a")
    with pytest.raises(AttributeError):
        got.answer = "b"  # type: ignore[misc]
