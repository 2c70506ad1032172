"""The panel rule (self-exclusion with reserves), the roster's validation, and batches that keep rows blind."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest

from council.core.schema import MemberSpec
from council.protocol.config import CouncilConfig
from council.protocol.panels import panel
from council.transport.judge import JudgeTask, take_batch

REGULARS = [MemberSpec(vendor=v, judge_model=m) for v, m in (
    ("anthropic", "anthropic/claude-sonnet-4.5"), ("google", "google/gemini-2.5-pro"), ("openai", "openai/gpt-5"),
    ("alibaba", "qwen/qwen3-max"), ("deepseek", "deepseek/deepseek-v3.2"))]
RESERVES = [MemberSpec(vendor="mistral", judge_model="mistralai/mistral-medium-3.1", reserve=True),
            MemberSpec(vendor="xai", judge_model="x-ai/grok-4", reserve=True)]


def vendors(members):
    return [m.vendor for m in members]


def test_panel_keeps_size_with_reserves():
    roster = [*REGULARS, *RESERVES]
    assert vendors(panel("openai", roster)) == ["anthropic", "google", "alibaba", "deepseek", "mistral"]
    assert vendors(panel("meta", roster)) == vendors(REGULARS)  # nobody excluded: no reserve sits
    # A row of the first reserve's vendor: no regular seat is emptied, so no reserve sits at all.
    assert vendors(panel("mistral", roster)) == vendors(REGULARS)
    # Reserves never grade their own vendor either: the next reserve fills in.
    mistral_regular = [*REGULARS[:4], MemberSpec(vendor="mistral", judge_model="mistralai/mistral-large"),
                       *RESERVES]
    assert vendors(panel("mistral", mistral_regular)) == ["anthropic", "google", "openai", "alibaba", "xai"]
    for vendor in ("anthropic", "google", "openai", "alibaba", "deepseek", "meta", "mistral", "xai"):
        assert len(panel(vendor, roster)) == 5 and vendor not in vendors(panel(vendor, roster))


def test_panel_without_self_exclusion_is_the_regulars():
    assert vendors(panel("openai", [*REGULARS, *RESERVES], self_exclusion=False)) == vendors(REGULARS)


def test_default_roster_has_a_reserve():
    config = CouncilConfig()
    assert [m.vendor for m in config.roster if m.reserve] == ["mistral"]
    assert {len(panel(v, config.roster)) for v in ("openai", "google", "meta", "mistral")} == {5}


@pytest.mark.parametrize(("seat", "why"), [
    (MemberSpec(vendor="openai", judge_model="anthropic/claude-sonnet-4.5"), "made by anthropic"),
    (MemberSpec(vendor="google", judge_model="claude-3-5-sonnet-20241022"), "made by anthropic"),
    (MemberSpec(vendor="acme", judge_model="frobnicator-9"), "of no known vendor"),
])
def test_a_seat_must_speak_for_its_vendor(seat, why):
    with pytest.raises(ValueError, match=why):
        CouncilConfig(roster=[*REGULARS[3:], seat])


def test_vendor_map_can_vouch_for_a_seat():
    seat = MemberSpec(vendor="acme", judge_model="frobnicator-9")
    config = CouncilConfig(roster=[*REGULARS[:3], seat], vendor_map={"frobnicator-9": "ACME"})
    assert config.vendor_of("frobnicator-9") == "acme"


def test_contradictory_settings_are_refused():
    with pytest.raises(ValueError, match="shadow-self"):
        CouncilConfig(self_exclusion=False, shadow_self=True)
    with pytest.raises(ValueError, match="quorum 6 is larger than the smallest panel"):
        CouncilConfig(quorum=6)


def _queue(tasks):
    loop = asyncio.new_event_loop()
    try:
        return deque((t, loop.create_future()) for t in tasks)
    finally:
        loop.close()


def test_a_batch_never_holds_two_answers_to_one_item():
    # The shipped sample's order: every model's answer to item 1, then to item 2, ...
    tasks = [JudgeTask(f"i{i}::m{m}", 1, "body", item_id=f"i{i}") for i in range(10) for m in range(5)]
    queue = _queue(tasks)
    seen = []
    while queue:
        batch = take_batch(queue, 8)
        items = [t.item_id for t, _ in batch]
        assert len(items) == len(set(items)) and len(batch) <= 8
        seen += [t.row_id for t, _ in batch]
    assert sorted(seen) == sorted(t.row_id for t in tasks)  # nothing lost, nothing twice
    queue = _queue(tasks)
    first = [t.row_id for t, _ in take_batch(queue, 8)]
    assert first == [f"i{i}::m0" for i in range(8)]  # the oldest answer of each item first
    assert [t.row_id for t, _ in list(queue)[:4]] == ["i0::m1", "i0::m2", "i0::m3", "i0::m4"]  # order kept


def test_a_solo_task_goes_alone():
    tasks = [JudgeTask("a", 1, "b", item_id="x", solo=True), JudgeTask("b", 1, "b", item_id="y"),
             JudgeTask("c", 1, "b", item_id="z", solo=True), JudgeTask("d", 1, "b", item_id="w")]
    queue = _queue(tasks)
    assert [t.row_id for t, _ in take_batch(queue, 4)] == ["a"]
    assert [t.row_id for t, _ in take_batch(queue, 4)] == ["b", "d"]
    assert [t.row_id for t, _ in take_batch(queue, 4)] == ["c"]
