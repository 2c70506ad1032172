"""Within an audited row, the deliberation audit asks its members in waves, the cheapest first, until the row's
change is decided: the same answer as with its whole panel asked, from fewer votes (a unanimous panel of five
that keeps its verdict: three votes, not five). Scoring counts such a row complete, and an undecided one not."""

from __future__ import annotations

import itertools

import numpy as np
import orjson
import pytest

import aggregator as agg
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import audit_change, audit_wave, changed_verdicts
from council.scoring.scoring import rescore
from council.store.runfolder import RunFolder
from council.transport.shape import reasoning_headroom
from tests.council.test_end_to_end import grade, lines, subset

C, I, M = agg.CORRECT, agg.INCORRECT, agg.MISSING


def waves(first: np.ndarray, full: np.ndarray, quorum: int) -> tuple[bool, int]:
    """(the change decided, votes asked) when the row's members would answer ``full`` if asked, in index order."""
    second = np.full(len(first), M, dtype=np.int8)
    open_ = np.ones(len(first), dtype=bool)
    asked = 0
    while open_.any():
        wave = audit_wave(first, second, open_, list(np.flatnonzero(open_)), quorum)
        assert wave, "a wave asks someone"
        second[wave], open_[wave] = full[wave], False
        asked += len(wave)
        decided = audit_change(first, second, open_, quorum)
        if decided is not None:
            return decided, asked
    raise AssertionError("every member asked, and still undecided")


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_waves_give_the_whole_panel_s_answer_for_every_way_it_could_answer(n):
    for verdict, quorum in itertools.product((C, I), range(1, n + 1)):
        first = np.full(n, verdict, dtype=np.int8)
        for answers in itertools.product((C, I, M), repeat=n):
            full = np.array(answers, dtype=np.int8)
            whole = bool(changed_verdicts(first[None], full[None], quorum)[0])
            decided, asked = waves(first, full, quorum)
            assert decided == whole, (verdict, quorum, answers)
            assert asked <= n
        kept, asked = waves(first, first.copy(), quorum)  # round two's usual answer: everyone keeps
        # correct stays correct with a strict majority of at least the quorum; incorrect with half the votes
        assert not kept and asked == (max(n // 2 + 1, quorum) if verdict == C else (n + 1) // 2)


def test_a_unanimous_panel_of_five_that_keeps_its_verdict_is_decided_by_three():
    first = np.full(5, C, dtype=np.int8)
    open_ = np.ones(5, dtype=bool)
    second = np.full(5, M, dtype=np.int8)
    assert audit_wave(first, second, open_, [4, 2, 0, 1, 3], quorum=3) == [4, 2, 0]
    second[[4, 2, 0]], open_[[4, 2, 0]] = C, False
    assert audit_change(first, second, open_, quorum=3) is False
    second[2] = I  # one of them revised: the two left could make it three to two
    assert audit_change(first, second, open_, quorum=3) is None
    assert audit_wave(first, second, open_, [1, 3], quorum=3) == [1]


def _cost_rank(config: CouncilConfig, vendor: str) -> float:
    """A vote's price at its output bound, which orders the audit's members (their prompts are nearly alike)."""
    member = next(m for m in config.roster if m.vendor == vendor)
    price_in, price_out = config.price_for(member.judge_model, vendor)
    out = config.judge.max_tokens + reasoning_headroom(member.judge_model, vendor, config.judge)
    return out * price_out + 500 * price_in


async def test_an_audited_row_asks_its_cheapest_members_until_decided(tmp_path):
    result = await grade(tmp_path, subset(tmp_path, 40), deliberate="disputed", deliberation_audit=0.5,
                         deliberation_audit_stop=0.2, seed=3)
    run, config = result.run_dir, CouncilConfig()
    audit = [v["row_id"] for v in lines(run / "verdicts.jsonl") if v["deliberation_audit"]]
    assert len(audit) >= 16
    panel: dict[str, set[str]] = {}
    for rec in lines(run / "round1.jsonl"):
        panel.setdefault(rec["row_id"], set()).add(rec["member"])
    asked: dict[str, set[str]] = {}
    for rec in lines(run / "round2.jsonl"):
        asked.setdefault(rec["row_id"], set()).add(rec["member"])
    block = result.summary["deliberation"]["audit"]
    assert block["changed"] == 0 and block["incomplete"] == 0 and block["rows"] == len(audit)
    for row_id in audit:
        members = sorted(panel[row_id], key=lambda v: _cost_rank(config, v))
        assert len(members) == 5 and asked[row_id] == set(members[:3])  # the three cheapest, not the panel of five
        assert not asked[row_id] & {"google", "openai"}  # the reasoning judges, dearest at their output bound
    deliberated = [r for r, v in asked.items() if r not in audit]
    assert all(len(asked[r]) == 5 for r in deliberated)  # a counted round two asks the whole panel
    before = (run / "summary.json").read_bytes()
    rescore(RunFolder.open(run))
    assert (run / "summary.json").read_bytes() == before

    # An audit row left undecided (two members that kept their verdict, three not asked) is incomplete.
    path = run / "round2.jsonl"
    records = lines(path)
    cut = next(r for r in records if r["row_id"] == audit[0])
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records if r is not cut))
    summary = rescore(RunFolder.open(run))
    again = summary["deliberation"]["audit"]
    assert (again["rows"], again["incomplete"]) == (len(audit) - 1, 1)
