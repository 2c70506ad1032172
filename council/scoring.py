"""Scoring a run from its archive alone: rows and judge-call records in, verdicts and summary out.

``council run`` scores by this path too, re-reading what it archived, so only archived votes count.
The arithmetic is the aggregator's; this module only turns records into vote arrays and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import aggregator as agg
from council.protocol import eligible_members
from council.runfolder import MANIFEST, ROWS, SUMMARY, VERDICTS, RunFolder, read_jsonl
from council.schema import JudgeCallRecord, MemberSpec, ResponseRow, RowVerdict, RunManifest

_CODE = {"correct": agg.CORRECT, "incorrect": agg.INCORRECT, None: agg.MISSING}
_WORD = {agg.CORRECT: "correct", agg.INCORRECT: "incorrect"}


@dataclass(frozen=True)
class VoteTable:
    """Votes of every row as an (R, M, 2) int8 array, with the row and member axes named."""

    rows: list[ResponseRow]
    members: list[str]
    votes: np.ndarray
    eligible: np.ndarray  # (R, M) bool


def build_votes(
    rows: list[ResponseRow], roster: list[MemberSpec], self_exclusion: bool, records: list[JudgeCallRecord]
) -> VoteTable:
    members = [m.vendor for m in roster]
    row_index = {r.row_id: i for i, r in enumerate(rows)}
    member_index = {v: j for j, v in enumerate(members)}
    votes = np.full((len(rows), len(members), 2), agg.MISSING, dtype=np.int8)
    eligible = np.zeros((len(rows), len(members)), dtype=bool)
    for i, row in enumerate(rows):
        for m in eligible_members(row, roster, self_exclusion):
            eligible[i, member_index[m.vendor]] = True
    for rec in records:  # later records for the same vote supersede earlier ones
        i, j = row_index.get(rec.row_id), member_index.get(rec.member)
        if i is not None and j is not None and eligible[i, j]:
            votes[i, j, rec.round - 1] = _CODE[rec.verdict]
    return VoteTable(rows=rows, members=members, votes=votes, eligible=eligible)


def score(table: VoteTable, quorum: int, records: list[JudgeCallRecord], run_id: str) -> tuple[list[RowVerdict], dict[str, Any]]:
    votes, rows, members = table.votes, table.rows, table.members
    cons = agg.consensus(votes, quorum=quorum)
    verdicts = [_row_verdict(i, row, table, cons) for i, row in enumerate(rows)]

    models = sorted({r.model for r in rows})
    model_idx = np.array([models.index(r.model) for r in rows], dtype=np.int64)
    s2, counts = agg.group_scores(cons.verdict[:, 1], model_idx, len(models))
    s1, _ = agg.group_scores(cons.verdict[:, 0], model_idx, len(models))
    gold = np.array([_CODE[r.gold_verdict] for r in rows], dtype=np.int8)
    has_gold = bool((gold != agg.MISSING).any())
    gold_scores = agg.group_scores((gold == agg.CORRECT).astype(np.int8), model_idx, len(models))[0]
    vendor_of_model = {r.model: r.vendor for r in rows}

    summary: dict[str, Any] = {"run_id": run_id, "quorum": quorum, "members": members}
    summary.update(agg.deliberation_summary(votes, members, quorum=quorum))
    summary["models"] = {
        m: {
            "vendor": vendor_of_model[m], "rows": int(counts[k]), "score": _num(s2[k]), "score_round1": _num(s1[k]),
            **({"true_score": _num(gold_scores[k])} if has_gold else {}),
        }
        for k, m in enumerate(models)
    }
    summary["flags"] = {
        flag: sum(flag in v.flags for v in verdicts) for flag in ("tie", "no_quorum", "tie_round1", "no_quorum_round1", "missing_votes")
    }
    summary["diagnostics"] = diagnostics(records, members, summary["flags"]["no_quorum"], len(rows))
    if has_gold:
        summary["accuracy_vs_gold"] = {
            "council": _num(agg.accuracy_against(cons.verdict[:, 1], gold)),
            "round1": _num(agg.accuracy_against(cons.verdict[:, 0], gold)),
            "members_round1": dict(zip(members, map(_num, agg.member_accuracy(votes[:, :, 0], gold)), strict=True)),
            "members_round2": dict(zip(members, map(_num, agg.member_accuracy(votes[:, :, 1], gold)), strict=True)),
        }
    return verdicts, summary


WARN_RATE = 0.02  # a diagnostic above this share of votes (or rows) is printed as a warning


def diagnostics(records: list[JudgeCallRecord], members: list[str], no_quorum_rows: int, rows: int) -> dict[str, Any]:
    """Counts that say how far the votes can be trusted, each with its rate."""
    n = max(1, len(records))
    requests = {r.request_id: r for r in records}.values()
    counts = {
        "votes": len(records),
        "truncated": sum(r.finish_reason == "length" for r in records),
        "empty_outputs": sum(r.parse_status != "error" and any(not raw for raw in r.raw_outputs) for r in records),
        "unparseable": sum(r.parse_status == "unparseable" for r in records),
        "repair_reasks": sum(len(r.raw_outputs) > 1 for r in requests),
        "errors": sum(r.parse_status == "error" for r in records),
        "reused": sum(r.reused_from is not None for r in records),
        "no_quorum_rows": no_quorum_rows,
    }
    rates = {f"{k}_rate": round(v / (max(1, rows) if k == "no_quorum_rows" else n), 6)
             for k, v in counts.items() if k not in ("votes", "reused")}
    per_member = {}
    for m in members:
        mine = [r for r in records if r.member == m]
        per_member[m] = round(sum(r.parse_status in ("error", "unparseable") for r in mine) / max(1, len(mine)), 6)
    warnings = [k.removesuffix("_rate") for k, v in rates.items() if v > WARN_RATE]
    warnings += [f"member {m} errors" for m, v in per_member.items() if v > WARN_RATE]
    return {**counts, **rates, "error_rate_per_member": per_member, "warnings": warnings}


def _row_verdict(i: int, row: ResponseRow, table: VoteTable, cons: agg.Consensus) -> RowVerdict:
    names = [m for j, m in enumerate(table.members) if table.eligible[i, j]]
    cols = [j for j in range(len(table.members)) if table.eligible[i, j]]
    v = table.votes[i]
    flags = []
    for k, suffix in ((1, ""), (0, "_round1")):
        if cons.no_quorum[i, k]:
            flags.append("no_quorum" + suffix)
        elif cons.tie[i, k]:
            flags.append("tie" + suffix)
    if cols and (v[cols] == agg.MISSING).any():
        flags.append("missing_votes")
    return RowVerdict(
        row_id=row.row_id, item_id=row.item_id, model=row.model, vendor=row.vendor, members=names,
        votes_round1={m: _WORD.get(int(v[j, 0])) for m, j in zip(names, cols, strict=True)},
        votes_round2={m: _WORD.get(int(v[j, 1])) for m, j in zip(names, cols, strict=True)},
        consensus_round1=_WORD[int(cons.verdict[i, 0])], consensus=_WORD[int(cons.verdict[i, 1])],
        flags=flags, gold_verdict=row.gold_verdict,
    )


def _num(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else round(x, 6)


def rescore(folder: RunFolder) -> dict[str, Any]:
    """Rebuild ``verdicts.jsonl`` and ``summary.json`` from the archived rows and judge-call records."""
    manifest = RunManifest.model_validate(folder.read_json(MANIFEST))
    rows = read_jsonl(folder.path / ROWS, ResponseRow)
    records = folder.read_records(1) + folder.read_records(2)
    table = build_votes(rows, manifest.roster, manifest.self_exclusion, records)
    verdicts, summary = score(table, manifest.quorum, records, manifest.run_id)
    folder.write_lines(VERDICTS, verdicts)
    folder.write_json(SUMMARY, summary)
    return summary
