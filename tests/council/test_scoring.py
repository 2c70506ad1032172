"""Scoring from records: ties and no-quorum rows are incorrect and flagged; missing votes stay missing."""

import pytest

from council.core.schema import JudgeCallRecord, MemberSpec, ResponseRow
from council.core.vendors import DEFAULT_ROSTER
from council.scoring.arrays import build
from council.scoring.scoring import score
from council.store.runfolder import RunFolder

ROSTER = [MemberSpec(vendor=v, judge_model=m) for v, m in DEFAULT_ROSTER.items()]


def rec(row_id, member, round_, verdict):
    return JudgeCallRecord(row_id=row_id, round=round_, member=member, judge_model=DEFAULT_ROSTER.get(member, member),
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


def _error(row_id, member, round_):
    return rec(row_id, member, round_, None).model_copy(update={"parse_status": "error", "error": "HTTP 503"})


def test_rows_never_graded_are_counted_and_never_scored(tmp_path):
    """A row missing a panel vote (budget, interrupt) or holding a provider error is 'not graded': no
    consensus, excluded from every score, counted per model; a row with an unparseable vote is graded."""
    model = "meta-llama/l"
    rows = [ResponseRow(item_id=i, model=model, response="...", gold_verdict="correct") for i in "abcd"]
    panel = list(DEFAULT_ROSTER)
    records = []
    for row in rows:
        for member in panel:
            for k in (1, 2):
                records.append(rec(row.row_id, member, k, "correct"))
    records = [r for r in records if not (r.row_id == "b::meta-llama/l" and r.round == 2 and r.member == "google")]
    records = [r for r in records if not (r.row_id == "c::meta-llama/l" and r.round == 1 and r.member == "openai")]
    records.append(_error("c::meta-llama/l", "openai", 1))
    records = [r for r in records if not (r.row_id == "d::meta-llama/l" and r.member == "deepseek" and r.round == 2)]
    records.append(rec("d::meta-llama/l", "deepseek", 2, None))  # unparseable: a result, not a failure
    folder = RunFolder(tmp_path)
    folder.write_lines("rows.jsonl", rows)
    for r in records:
        folder.append(r)
    folder.close()
    verdicts, summary = score(build(tmp_path, ROSTER, True, {}), 3, "t")
    by_id = {v.row_id: v for v in verdicts}
    for rid in ("b::meta-llama/l", "c::meta-llama/l"):
        assert not by_id[rid].graded and by_id[rid].consensus is None and "not_graded" in by_id[rid].flags
    assert by_id["a::meta-llama/l"].graded and by_id["d::meta-llama/l"].graded
    assert summary["not_graded_rows"] == 2 and summary["rows_total"] == 4 and summary["rows"] == 2
    m = summary["models"][model]
    assert (m["rows"], m["not_graded"], m["score"]) == (2, 2, 1.0)  # two graded rows, both correct
    assert any("not graded" in w for w in summary["diagnostics"]["warnings"])


def test_reserve_sits_only_where_a_seat_was_emptied(tmp_path):
    """With a reserve in the roster every row has a panel of five; the reserve's vote counts only there."""
    roster = [*ROSTER, MemberSpec(vendor="mistral", judge_model="mistralai/mistral-medium-3.1", reserve=True)]
    rows = [ResponseRow(item_id="a", model="openai/gpt-x", response="...", gold_verdict="correct"),
            ResponseRow(item_id="a", model="meta-llama/l", response="...", gold_verdict="correct")]
    folder = RunFolder(tmp_path)
    folder.write_lines("rows.jsonl", rows)
    for row in rows:
        for m in roster:
            for k in (1, 2):
                folder.append(rec(row.row_id, m.vendor, k, "correct").model_copy(
                    update={"judge_model": m.judge_model, "reserve": m.reserve}))
    folder.close()
    verdicts, summary = score(build(tmp_path, roster, True, {}), 3, "t")
    own, other = verdicts
    assert own.members == ["anthropic", "google", "alibaba", "deepseek", "mistral"] and own.reserves == ["mistral"]
    assert other.members == ["anthropic", "google", "openai", "alibaba", "deepseek"] and other.reserves == []
    assert summary["panels"] == {"rows_by_size": {"5": 2}, "even_panel_rows": 0, "reserve_rows": 1,
                                 "sizes_differ": False}
    # Without the reserve the same rows have panels of 4 and 5: reported and warned about.
    _, plain = score(build(tmp_path, ROSTER, True, {}), 3, "t")
    assert plain["panels"]["even_panel_rows"] == 1 and plain["panels"]["sizes_differ"]
    assert any("panels differ" in w for w in plain["diagnostics"]["warnings"])


def test_true_score_counts_only_the_rows_with_gold(tmp_path, capsys):
    """A model's true score is the share of gold-"correct" among its rows WITH gold; a model without any is
    null (blank in ``leaderboard.csv``, "-" in the console), never 0."""
    from council.console.results import print_leaderboard
    from council.store.tables import leaderboard

    gold = {"meta-llama/all": ["correct", "incorrect"], "meta-llama/part": ["correct", None, None, "incorrect",
                                                                             "correct"],
            "meta-llama/none": [None, None]}
    rows = [ResponseRow(item_id=f"i{k}", model=model, response="...", gold_verdict=g)
            for model, golds in gold.items() for k, g in enumerate(golds)]
    folder = RunFolder(tmp_path)
    folder.write_lines("rows.jsonl", rows)
    for row in rows:
        for member in DEFAULT_ROSTER:
            for k in (1, 2):
                folder.append(rec(row.row_id, member, k, "correct"))
    folder.close()
    _, summary = score(build(tmp_path, ROSTER, True, {}), 3, "t", resamples=50)
    truth = {m: v["true_score"] for m, v in summary["models"].items()}
    # by hand: all 1 of 2; part 2 correct of its 3 rows with gold (its 2 rows without are left out); none: null
    assert truth == {"meta-llama/all": 0.5, "meta-llama/part": round(2 / 3, 6), "meta-llama/none": None}
    header, lines = leaderboard(summary)
    assert {line[0]: line[header.index("true_score")] for line in lines} == truth
    print_leaderboard(summary, "t")
    printed = {line.split()[0]: line.split()[-1] for line in capsys.readouterr().out.splitlines()
               if "meta-llama/" in line}
    assert printed == {"meta-llama/all": "50.0%", "meta-llama/part": "66.7%", "meta-llama/none": "-"}
