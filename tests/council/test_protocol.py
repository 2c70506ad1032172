import re
from collections import Counter

from council.anonymise import Anonymiser
from council.prompts import round1_messages, round2_messages
from council.protocol import eligible_members, peers_for, row_order
from council.schema import BankItem, JudgeCallRecord, MemberSpec, ResponseRow
from council.vendors import DEFAULT_ROSTER

ROSTER = [MemberSpec(vendor=v, judge_model=m) for v, m in DEFAULT_ROSTER.items()]
ITEM = BankItem(id="q1", probe="calibration", prompt="What is 17 x 23?", reference="391",
                rationale="SECRET-RATIONALE: checks multiplication", tags=["math"])


def row(model="openai/gpt-4.1-mini", text="It is 391."):
    return ResponseRow(item_id="q1", model=model, response=text)


def record(member, verdict, reason, round_=1):
    return JudgeCallRecord(row_id="q1::m", round=round_, member=member, judge_model=DEFAULT_ROSTER[member],
                           verdict=verdict, reason=reason, ok=verdict is not None,
                           parse_status="ok" if verdict else "unparseable", judge_prompt_version="v", judge_prompt_hash="h",
                           request_id="r")


def test_self_exclusion_removes_exactly_the_row_vendor():
    r = row("qwen/qwen3-235b-a22b")
    assert r.vendor == "alibaba"
    members = [m.vendor for m in eligible_members(r, ROSTER)]
    assert members == ["anthropic", "google", "openai", "deepseek"]
    assert len(eligible_members(row("meta-llama/llama-3.3-70b-instruct"), ROSTER)) == 5
    assert len(eligible_members(r, ROSTER, self_exclusion=False)) == 5


def test_round_one_prompt_is_blind():
    r = row("openai/gpt-4.1-mini", "The product is 391.")
    text = " ".join(m["content"] for m in round1_messages(ITEM, r))
    assert "SECRET-RATIONALE" not in text
    assert "gpt" not in text.lower() and "openai" not in text.lower()
    assert "391" in text and "What is 17 x 23?" in text


def test_round_two_names_peers_by_letter_only_and_scrubs_names():
    anonymiser = Anonymiser([*DEFAULT_ROSTER, *DEFAULT_ROSTER.values(), "openai/gpt-4.1-mini"])
    round1 = {
        "anthropic": record("anthropic", "correct", "As Claude, I agree with the reference."),
        "google": record("google", "incorrect", "gemini-2.5-pro thinks GPT-4.1 got it wrong."),
        "deepseek": record("deepseek", "correct", "DeepSeek-V3.2 checked: 17*23=391."),
        "alibaba": record("alibaba", None, None),  # invalid round-one vote: not shown
    }
    order = row_order(7, "q1::openai/gpt-4.1-mini", list(round1))
    peers, letters = peers_for("anthropic", order, round1, anonymiser)
    assert [p.letter for p in peers] == ["B", "C"]
    assert set(letters.values()) == {"google", "deepseek"}
    msgs = round2_messages(ITEM, row(), "correct", "As Claude, I agree.", peers)
    user = msgs[-1]["content"]
    peer_block = user.split("<peers>")[1]
    for name in ("claude", "gemini", "gpt", "deepseek", "google", "anthropic", "openai", "alibaba", "qwen"):
        assert name not in peer_block.lower(), name
    assert re.findall(r"^Member \[([A-Z])\]", peer_block, re.M) == ["B", "C"]
    assert "SECRET-RATIONALE" not in user


def test_letters_are_shuffled_per_row_and_seeded():
    vendors = ["anthropic", "google", "openai", "alibaba", "deepseek"]
    first = Counter(row_order(0, f"item-{i}::m", vendors)[0] for i in range(500))
    assert set(first) == set(vendors)  # every vendor gets letter B on some rows
    assert max(first.values()) < 150  # roughly uniform (expected 100 each)
    assert row_order(0, "x", vendors) == row_order(0, "x", vendors)
    assert any(row_order(0, f"r{i}", vendors) != row_order(1, f"r{i}", vendors) for i in range(10))


def test_scrub_leaves_ordinary_words():
    anonymiser = Anonymiser(["openai/gpt-5", "meta"])
    assert anonymiser.scrub("The metadata and metaphor are fine.") == "The metadata and metaphor are fine."
    assert anonymiser.scrub("gpt-5 said GPT-4o and Llama3 agree") == "[redacted] said [redacted] and [redacted] agree"
