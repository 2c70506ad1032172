"""A council verdict as inspect shows it: the explanation (both rounds' votes and reasons, each member by a
letter) and the score's metadata (who sat and how each voted, the flags, where the run is)."""

from __future__ import annotations

from string import ascii_uppercase
from typing import Any

from council.core.schema import JudgeCallRecord
from council.inspect._session import Graded
from council.protocol.config import CouncilConfig
from council.protocol.panels import row_order


def letters(graded: Graded, config: CouncilConfig) -> dict[str, str]:
    """Letter -> member, in the row's seeded order (the order in which round two letters each member's peers)."""
    order = row_order(config.seed, graded.verdict.row_id, graded.verdict.members)
    return dict(zip(ascii_uppercase, order, strict=False))


def describe(graded: Graded, config: CouncilConfig, *, actor: str) -> dict[str, Any]:
    """The score's metadata."""
    v = graded.verdict
    judges = {m.vendor: m.judge_model for m in config.roster}
    regular = [m.vendor for m in config.roster if not m.reserve]
    return {
        "actor": actor, "vendor": v.vendor, "graders": [judges[m] for m in v.members],
        "members": v.members, "reserves": v.reserves, "excluded": [m for m in regular if m not in v.members],
        "letters": letters(graded, config), "votes_round1": v.votes_round1, "votes_round2": v.votes_round2,
        "consensus_round1": v.consensus_round1, "consensus": v.consensus, "flags": v.flags,
        "tie": "tie" in v.flags, "no_quorum": "no_quorum" in v.flags, "not_graded": not v.graded,
        "deliberated": v.deliberated, "refused": graded.refused, "stopped": graded.stopped,
        "run_id": graded.run_id, "row_id": v.row_id, "item_id": v.item_id,
        "quorum": config.quorum, "deliberate": config.deliberate,
    }


def explanation(graded: Graded, config: CouncilConfig) -> str:
    """Markdown: the consensus, then each round's votes and reasons by letter."""
    v = graded.verdict
    by_vote = {(r.member, r.round): r for r in graded.records if not r.shadow and r.audit_of is None}
    flags = f" ({', '.join(v.flags)})" if v.flags else ""
    if v.consensus is None:
        why = graded.refused or graded.stopped
        head = f"Not graded{flags}" + (f": {why}" if why else "")
    else:
        head = f"Council: **{v.consensus}** (round one: {v.consensus_round1}){flags}"
    lines = [head]
    rounds = (1, 2) if v.deliberated else (1,)
    for round_ in rounds:
        lines += ["", f"Round {'one' if round_ == 1 else 'two'}:"]
        for letter, member in letters(graded, config).items():
            lines.append(f"- {letter}: {_vote(by_vote.get((member, round_)))}")
    if not v.deliberated:
        lines += ["", "Round two was not asked: round one was not disputed."]
    return "\n".join(lines)


def _vote(record: JudgeCallRecord | None) -> str:
    if record is None:
        return "no vote"
    if record.parse_status == "error":
        return f"no valid vote ({record.error or record.parse_status})"
    reason = " ".join((record.reason or "").split())
    return f"{record.verdict}" + (f": {reason}" if reason else "")
