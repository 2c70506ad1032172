import pytest

from council.protocol.parsing import parse_verdict, read_batch, read_verdict


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"verdict": "correct", "reason": "Matches the reference."}', ("correct", "Matches the reference.")),
        ('  {"verdict": "Incorrect", "reason": "Wrong  year.\\n"} ', ("incorrect", "Wrong year.")),
        ('```json\n{"verdict": "incorrect", "reason": "No."}\n```', ("incorrect", "No.")),
    ],
)
def test_structured_json_is_read(content, expected):
    assert parse_verdict(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        None,
        "",
        "Verdict: correct, because it matches.",  # a verdict word outside JSON is not a vote
        "correct",
        '{"verdict": "correct"}',  # no reason
        '{"verdict": "mostly correct", "reason": "close"}',
        '{"verdict": "correct", "reason": "cut off',  # truncated JSON
        '["correct", "reason"]',
        '{"verdict": true, "reason": "x"}',
    ],
)
def test_anything_else_is_not_a_vote(content):
    assert parse_verdict(content) is None


@pytest.mark.parametrize(
    "content",
    [
        'Here is my verdict: {"verdict": "incorrect", "reason": "No."} Hope this helps.',
        '```json\n{"verdict": "incorrect", "reason": "No."}\n```',
        'Sure!\n```\n{"verdict": "incorrect", "reason": "No."}\n```\nLet me know.',
        # the same object twice (a model repeating itself) still says one thing
        '{"verdict": "incorrect", "reason": "No."}\n\n{"verdict": "incorrect", "reason": "No."}',
        # braces in prose before the object do not derail the search
        'The set {1, 2} is wrong, so: {"verdict": "incorrect", "reason": "No."}',
    ],
)
def test_an_object_inside_prose_or_a_fence_is_found_and_marked(content):
    assert read_verdict(content) == (("incorrect", "No."), "extracted")


def test_clean_json_is_ok_and_not_extracted():
    assert read_verdict('{"verdict": "correct", "reason": "Yes."}') == (("correct", "Yes."), "ok")


@pytest.mark.parametrize(
    "content",
    [
        # two objects that disagree: reading either would be a guess
        'First {"verdict": "correct", "reason": "a"} then {"verdict": "incorrect", "reason": "b"}',
        'I think {"verdict": "probably", "reason": "x"}',
        'Verdict: correct {"note": "no verdict here"}',
    ],
)
def test_ambiguous_or_shapeless_objects_are_not_votes(content):
    assert read_verdict(content)[0] is None


def test_batch_reply_inside_prose():
    content = 'Results:\n```json\n{"verdicts": [{"key": "1", "verdict": "correct", "reason": "a"}, ' \
              '{"key": "2", "verdict": "incorrect", "reason": "b"}]}\n```'
    assert read_batch(content, 2) == ({1: ("correct", "a"), 2: ("incorrect", "b")}, "extracted")
    assert read_batch('{"verdicts": []}', 2) == ({}, "ok")
