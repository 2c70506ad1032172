"""Scoring from records: ties and no-quorum rows are incorrect and flagged; missing votes stay missing."""

import pytest

from council.arrays import build
from council.runfolder import RunFolder
from council.schema import JudgeCallRecord, MemberSpec, ResponseRow
from council.scoring import score
from council.vendors import DEFAULT_ROSTER

ROSTER = [MemberSpec(vendor=v, judge_model=m) for v, m in DEFAULT_ROSTER.items()]


def rec(row_id, member, round_, verdict):
    return JudgeCallRecord(row_id=row_id, round=round_, member=member, judge_model=DEFAULT_ROSTER[member],
                           verdict=verdict, reason="r" if verdict else None, ok=verdict is not None,
                           parse_status="ok" if verdict else "unparseable", raw_outputs=["x"],
                           judge_prompt_version="v", judge_prompt_hash="h", request_id="q")


def test_ties_no_quorum_and_missing_votes(tmp_path):
    rows = [
        ResponseRow(item_id="a", model="openai/gpt-x", response="...", gold_verdict="correct"),  # 4 eligible
        ResponseRow(item_id="b", model="meta-llama/l", response="...", gold_verdict="incorrect"),  # 5 eligible
        ResponseRow(item_id="c", model="meta-llama/l", response="...", gold_verdict="correct"),
    ]
    votes = {  # row -> round -> member -> verdict
        "a::openai/gpt-x": {1: dict(anthropic="correct", google="correct", alibaba="incorrect", deepseek="incorrect"),
                            2: dict(anthropic="correct", google="correct", alibaba="correct", deepseek="incorrect")},
        "b::meta-llama/l": {1: dict(anthropic="correct", google="correct", openai="correct", alibaba=None, deepseek=None),
                            2: dict(anthropic="correct", google="correct", openai="incorrect", alibaba=None, deepseek=None)},
        "c::meta-llama/l": {1: dict(anthropic="correct", google=None, openai=None, alibaba=None, deepseek=None),
                            2: dict(anthropic="correct", google="correct", openai=None, alibaba=None, deepseek=None)},
    }
    records = [rec(r, m, k, v) for r, by_round in votes.items() for k, ms in by_round.items() for m, v in ms.items()]
    records.append(rec("a::openai/gpt-x", "openai", 1, "correct"))  # own vendor: ignored even if present
    folder = RunFolder(tmp_path)
    folder.write_lines("rows.jsonl", rows)
    for r in records:
        folder.append(r)
    folder.close()
    arrays = build(tmp_path, ROSTER, True, {"a": "p", "b": "p", "c": "q"})
    verdicts, summary = score(arrays, 3, "t")
    a, b, c = verdicts
    assert a.members == ["anthropic", "google", "alibaba", "deepseek"]
    assert (a.consensus_round1, a.consensus) == ("incorrect", "correct") and a.flags == ["tie_round1"]
    # row b: round one 3-0 correct; round two 2-1 with two missing votes: strict majority correct
    assert (b.consensus_round1, b.consensus) == ("correct", "correct")
    assert "missing_votes" in b.flags and b.votes_round2["alibaba"] is None
    # row c: fewer valid votes than the quorum in both rounds -> incorrect, flagged
    assert (c.consensus_round1, c.consensus) == ("incorrect", "incorrect")
    assert {"no_quorum", "no_quorum_round1"} <= set(c.flags)
    assert summary["flags"]["no_quorum"] == 1 and summary["flags"]["tie_round1"] == 1
    # deliberation: row a (alibaba flipped) and row b (openai flipped) changed; row c only gained a vote
    assert summary["deliberation_impact"] == pytest.approx(2 / 3)
    assert summary["member_flips"]["alibaba"]["to_correct"] == 1
    assert summary["member_flips"]["openai"]["to_incorrect"] == 1
    assert summary["models"]["meta-llama/l"]["score"] == 0.5
    assert summary["accuracy_vs_gold"]["council"] == round(1 / 3, 6)
