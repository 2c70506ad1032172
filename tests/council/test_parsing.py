import pytest

from council.parsing import parse_verdict


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
