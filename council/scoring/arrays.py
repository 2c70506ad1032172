"""Compact vote arrays built from a run folder by streaming its JSONL files.

One pass over ``rows.jsonl`` and the round files yields everything the aggregator works on: a vote array
(rows × members × rounds, int8, ``MISSING`` where a member was not eligible or gave no valid vote), the
row-level index arrays (model, item, probe, gold, stated confidence), the shadow votes of the
``--shadow-self`` audit, and the diagnostic counters. Records are read as plain JSON (no model validation
per line), so millions of votes stream in seconds; a later record of the same vote supersedes an earlier.
Plain and zstd-compressed archives (:mod:`council.store.archive`) are read alike.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import aggregator as agg
from council.core.schema import MemberSpec, Scale
from council.protocol.anonymise import self_identifies
from council.protocol.deliberation import CODE, Role, Rule, disputed, disputed_levels
from council.protocol.panels import panel
from council.scoring.anonymity import ShownCounts
from council.store.runfolder import ELICITED, iter_json

WORD = {code: word for word, code in CODE.items()}  # the inverse of CODE
SPEND = ("reasoning_tokens", "tokens_per_s", "cost_usd")  # the columns of ``VoteArrays.spend``


@dataclass
class Counters:
    """Diagnostic counts gathered while streaming the round files."""

    votes: int = 0
    truncated: int = 0
    empty_outputs: int = 0
    unparseable: int = 0
    errors: int = 0
    reused: int = 0
    cost_usd: float = 0.0
    cost_by_round: Counter[int] = field(default_factory=Counter)  # round -> USD (shadow and audit votes: their round)
    cost_by_vendor: Counter[str] = field(default_factory=Counter)  # judge vendor (member) -> USD
    # judge vendor (member) -> paid votes and their prompt, completion and reasoning tokens (reasoning is part of
    # completion, as providers bill it)
    tokens_by_vendor: dict[str, Counter[str]] = field(default_factory=dict)
    reasked_requests: set[str] = field(default_factory=set)
    member_votes: Counter[str] = field(default_factory=Counter)
    member_status: dict[str, Counter[str]] = field(default_factory=dict)  # member -> parse status -> votes
    self_identified: Counter[str] = field(default_factory=Counter)  # model -> responses naming their own maker
    shown: ShownCounts = field(default_factory=ShownCounts)  # what peers were shown in round two (latest records)

    def add(self, rec: dict[str, Any]) -> None:
        status = rec.get("parse_status")
        raws = rec.get("raw_outputs") or []
        self.votes += 1
        self.truncated += rec.get("finish_reason") == "length"
        self.empty_outputs += status != "error" and any(not r for r in raws)
        self.unparseable += status == "unparseable"
        self.errors += status == "error"
        self.reused += rec.get("reused_from") is not None
        if rec.get("reused_from") is None:
            self.pay(rec)
        if len(raws) > 1:
            self.reasked_requests.add(rec.get("request_id", ""))
        self.member_votes[rec["member"]] += 1
        if rec.get("round") == 2:
            self.shown.add(rec)
        self.member_status.setdefault(rec["member"], Counter())[status] += 1

    def pay(self, rec: dict[str, Any]) -> None:
        """Count what a vote's call cost, in the total and by round and judge vendor (which add up to it)."""
        cost = rec.get("cost_usd") or 0.0
        self.cost_usd += cost
        self.cost_by_round[rec["round"]] += cost
        self.cost_by_vendor[rec["member"]] += cost
        usage = rec.get("usage") or {}
        tokens = self.tokens_by_vendor.setdefault(rec["member"], Counter())
        tokens["votes"] += 1
        tokens["batched_votes"] += rec.get("batch_id") is not None
        for name in ("prompt_tokens", "completion_tokens", "reasoning_tokens"):
            tokens[name] += usage.get(name) or 0


@dataclass
class VoteArrays:
    members: list[str]
    row_ids: list[str]
    models: list[str]  # model names; ``model`` indexes into it
    model_vendors: list[str]  # the vendor of each model, as its rows say
    items: list[str]  # item ids; ``item`` indexes into it
    probes: list[str]  # probe names; ``probe_of_item`` indexes into it
    votes: np.ndarray  # (R, M, 2) int8
    eligible: np.ndarray  # (R, M) bool: the row's panel
    reserve: np.ndarray  # (M,) bool: the seat is a reserve
    graded: np.ndarray  # (R,) bool: every panel member has a result (not an error) in both rounds
    model: np.ndarray  # (R,) int32
    item: np.ndarray  # (R,) int32
    probe_of_item: np.ndarray  # (n_items,) int32
    gold: np.ndarray  # (R,) int8, MISSING where unknown
    confidence: np.ndarray  # (R,) float64, NaN where not stated
    abstained: np.ndarray  # (R,) bool
    vendor_of_row: list[str]
    shadow: np.ndarray  # (R,) int8: the excluded own-vendor member's blind vote (never counted)
    counters: Counters
    paraphrase_group: np.ndarray  # (n_items,) int64: the item's paraphrase group (-1: none), from the bank
    difficulty: np.ndarray  # (n_items,) float64: the bank's difficulty, NaN where not given
    spend: np.ndarray  # (R, 3) float64: the row's elicitation spend by ``SPEND``, NaN where unknown
    audit: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    """(pairs, 3): the batch audit's pairs, each [the batched verdict as archived, the verdict asked alone,
    member] (a deliberation-audit row's round two is the one asked, though never counted)."""
    scales: list[Scale] = field(default_factory=list)  # the graded items' scales; ``scale_of_row`` indexes it
    scale_of_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """(R,) int32: the row's scale (-1: a correct / incorrect item)."""
    levels: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0, 2), dtype=np.int8))
    """(R, M, D, 2) int8 (D: the most dimensions of any scale, 0 without scales; a scale has at most 101
    levels): each member's level per dimension (in its scale's order) and round, ``MISSING`` where none was
    given validly."""
    deliberated: np.ndarray = field(default_factory=lambda: np.ones(0, dtype=bool))
    """(R,) bool: the row's round two counts. A row skipped or audited (``--deliberate disputed``) holds its
    round-one votes (and levels) in round two's place, so that its consensus is round one's."""
    deliberation_audit: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """(R,) bool: a skipped row of the deliberation audit, whose round two was asked and is never counted."""
    audit_round2: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int8))
    """(R, M) int8: an audit row's archived round-two votes (``MISSING`` elsewhere), never counted."""
    audit_levels: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), dtype=np.int8))
    """(R, M, D) int8: an audit row's archived round-two levels (graded items), never counted."""
    audit_complete: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """(R,) bool: every panel member asked round two on the audit row has a result (not an error); a graded item's
    whole panel was asked (a correct / incorrect row may stop once its answers decide it: ``audit_open``)."""
    audit_open: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    """(R, M) bool: a correct / incorrect audit row's panel members whose round two was not asked (the audit
    stopped asking once the row was decided, :func:`council.protocol.deliberation.audit_decided`)."""
    audit_candidate: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """(R,) bool: a skipped or audited row in the audit's seeded share (its candidates, audited or not)."""
    deliberation: Rule = field(default_factory=Rule)
    """The run's deliberation rule, by which ``deliberated`` and ``deliberation_audit`` were set."""

    def subset(self, keep: np.ndarray) -> VoteArrays:
        """The same run restricted to the rows where ``keep`` is true (models, items and members kept)."""
        idx = np.flatnonzero(keep)
        return dataclasses.replace(
            self, row_ids=[self.row_ids[i] for i in idx], votes=self.votes[idx], eligible=self.eligible[idx],
            graded=self.graded[idx], model=self.model[idx], item=self.item[idx], gold=self.gold[idx],
            confidence=self.confidence[idx], abstained=self.abstained[idx],
            vendor_of_row=[self.vendor_of_row[i] for i in idx], shadow=self.shadow[idx], spend=self.spend[idx],
            scale_of_row=self.scale_of_row[idx], levels=self.levels[idx], deliberated=self.deliberated[idx],
            deliberation_audit=self.deliberation_audit[idx], audit_round2=self.audit_round2[idx],
            audit_levels=self.audit_levels[idx], audit_complete=self.audit_complete[idx],
            audit_open=self.audit_open[idx], audit_candidate=self.audit_candidate[idx], deliberation=self.deliberation)


def build(folder: Path, roster: list[MemberSpec], self_exclusion: bool, probe_by_item: dict[str, str], *,
          paraphrase_of: dict[str, str | None] | None = None, difficulty: dict[str, float | None] | None = None,
          scales: dict[str, Scale | None] | None = None, deliberation: Rule | None = None) -> VoteArrays:
    """The run's arrays. ``paraphrase_of`` and ``difficulty`` (item id -> the bank's field) feed the honesty
    figures; the elicitation archive, where there is one, gives each row's spend; ``scales`` (item id -> its
    scale) marks the graded items, whose levels fill ``levels``; ``deliberation`` (the run's rule, None: every
    row deliberated) says which rows' round two counts (:func:`_set_aside`)."""
    members = [m.vendor for m in roster]
    member_index = {v: j for j, v in enumerate(members)}
    # Per row only its id, and compact columns: this is what scoring holds per row of a large run.
    row_ids: list[str] = []
    vendors: list[str] = []  # each vendor's one string object, shared by its rows
    vendor_names: dict[str, str] = {}
    models: dict[str, int] = {}
    model_vendors: list[str] = []
    items: dict[str, int] = {}
    model_idx, item_idx = array("i"), array("i")
    gold, abstained = array("b"), array("b")
    confidence = array("d")
    counters = Counters()
    for row in _stream(folder / "rows.jsonl"):
        counters.self_identified[row["model"]] += self_identifies(row.get("response") or "", row["model"], row["vendor"])
        row_ids.append(row["row_id"])
        vendors.append(vendor_names.setdefault(row["vendor"], row["vendor"]))
        k = models.setdefault(row["model"], len(models))
        if k == len(model_vendors):
            model_vendors.append(row["vendor"])
        model_idx.append(k)
        item_idx.append(items.setdefault(row["item_id"], len(items)))
        gold.append(CODE.get(row.get("gold_verdict"), agg.MISSING))
        c = row.get("confidence")
        confidence.append(np.nan if c is None else float(c))
        abstained.append(bool(row.get("abstained")))
    n = len(row_ids)
    row_index = {rid: i for i, rid in enumerate(row_ids)}
    scale_list: list[Scale] = []
    scale_at: dict[str, int] = {}
    for scale in (scales or {}).values():
        if scale is not None and scale.name not in scale_at:
            scale_at[scale.name] = len(scale_list)
            scale_list.append(scale)
    item_scale = np.array([scale_at[sc.name] if (sc := (scales or {}).get(it)) is not None else -1 for it in items],
                          dtype=np.int32)
    scale_of_row = item_scale[np.array(item_idx, dtype=np.int64)] if n else np.zeros(0, dtype=np.int32)
    dims = [{d: k for k, d in enumerate(sc.names)} for sc in scale_list]
    levels = np.full((n if scale_list else 0, len(members), max((len(d) for d in dims), default=0), 2), agg.MISSING,
                     dtype=np.int8)
    # One panel per producing vendor, decided by the protocol's rule; rows pick theirs by vendor.
    distinct = sorted(set(vendors))
    panels = np.zeros((len(distinct), len(members)), dtype=bool)
    for g, vendor in enumerate(distinct):
        panels[g, [member_index[m.vendor] for m in panel(vendor, roster, self_exclusion)]] = True
    group = {v: g for g, v in enumerate(distinct)}
    eligible = panels[np.array([group[v] for v in vendors], dtype=np.int64)] if n else np.zeros((0, len(members)), bool)
    votes = np.full((n, len(members), 2), agg.MISSING, dtype=np.int8)
    answered = np.zeros((n, len(members), 2), dtype=bool)
    asked = np.zeros((n, len(members)), dtype=bool)  # the panel member's round two is archived
    latest = np.full((n, len(members)), -1, dtype=np.int32)  # each round-two vote's latest record (its ordinal)
    superseded = False
    for round_ in (1, 2):
        for ordinal, rec in enumerate(_stream(folder / f"round{round_}.jsonl", missing_ok=True)):
            counters.add(rec)
            i, j = row_index.get(rec["row_id"]), member_index.get(rec["member"])
            if round_ == 2 and i is not None and j is not None:
                superseded |= bool(latest[i, j] >= 0)
                latest[i, j] = ordinal
            if i is not None and j is not None and eligible[i, j]:  # a later record supersedes an earlier
                if round_ == 2:
                    asked[i, j] = True
                votes[i, j, round_ - 1] = CODE.get(rec.get("verdict"), agg.MISSING)
                answered[i, j, round_ - 1] = rec.get("parse_status") != "error"
                if scale_list and scale_of_row[i] >= 0:
                    levels[i, j, :, round_ - 1] = agg.MISSING
                    column = dims[scale_of_row[i]]
                    for name, level in (rec.get("scores") or {}).items():
                        if name in column:
                            levels[i, j, column[name], round_ - 1] = level
    if superseded:  # rare (a vote asked again): take back what its earlier records added to the peers' counts
        for ordinal, rec in enumerate(_stream(folder / "round2.jsonl", missing_ok=True)):
            i, j = row_index.get(rec["row_id"]), member_index.get(rec["member"])
            if i is not None and j is not None and latest[i, j] != ordinal:
                counters.shown.add(rec, sign=-1)
    del latest
    rule = deliberation or Rule()
    aside = _set_aside(rule, row_ids, votes, levels, answered, eligible, scale_of_row, [sc.names for sc in scale_list],
                       asked)
    graded = (answered | ~eligible[:, :, None]).all(axis=(1, 2))
    shadow = np.full(n, agg.MISSING, dtype=np.int8)
    for rec in _stream(folder / "shadow.jsonl", missing_ok=True):
        counters.pay(rec)
        i = row_index.get(rec["row_id"])
        if i is not None:
            shadow[i] = CODE.get(rec.get("verdict"), agg.MISSING)
    audit = []
    for rec in _stream(folder / "audit.jsonl", missing_ok=True):
        counters.pay(rec)
        i, j = row_index.get(rec["row_id"]), member_index.get(rec["member"])
        if i is not None and j is not None:  # the batched vote as archived: an audit row's round two is set aside
            kept = aside["deliberation_audit"][i] and rec["round"] == 2
            batched = aside["audit_round2"][i, j] if kept else votes[i, j, rec["round"] - 1]
            audit.append((batched, CODE.get(rec.get("verdict"), agg.MISSING), j))
    spend = np.full((n, len(SPEND)), np.nan)
    for rec in _stream(folder / ELICITED, missing_ok=True):  # a later record of a row supersedes an earlier
        i = row_index.get(rec["row_id"])
        if i is not None:
            spend[i] = ((rec.get("usage") or {}).get("reasoning_tokens"), rec.get("tokens_per_s"), rec.get("cost_usd"))
    probes: dict[str, int] = {}
    probe_of_item = np.array([probes.setdefault(probe_by_item.get(it, "?"), len(probes)) for it in items],
                             dtype=np.int32)
    return VoteArrays(
        members=members, row_ids=row_ids, models=list(models), model_vendors=model_vendors, items=list(items),
        probes=list(probes), votes=votes, eligible=eligible, reserve=np.array([m.reserve for m in roster], dtype=bool),
        graded=graded, model=np.array(model_idx, dtype=np.int32),
        item=np.array(item_idx, dtype=np.int32), probe_of_item=probe_of_item, gold=np.array(gold, dtype=np.int8),
        confidence=np.array(confidence, dtype=np.float64), abstained=np.array(abstained, dtype=bool),
        vendor_of_row=vendors, shadow=shadow, counters=counters,
        audit=np.array(audit, dtype=np.int64).reshape(-1, 3),
        paraphrase_group=agg.paraphrase_groups(items, [(paraphrase_of or {}).get(it) for it in items]),
        difficulty=np.array([np.nan if (d := (difficulty or {}).get(it)) is None else d for it in items],
                            dtype=np.float64),
        spend=spend, scales=scale_list, scale_of_row=scale_of_row.astype(np.int32),
        levels=levels if scale_list else np.zeros((n, len(members), 0, 2), dtype=np.int8), **aside,
        deliberation=rule,
    )


def _set_aside(rule: Rule, row_ids: list[str], votes: np.ndarray, levels: np.ndarray, answered: np.ndarray,
               eligible: np.ndarray, scale_of_row: np.ndarray, dimensions: list[tuple[str, ...]],
               asked: np.ndarray) -> dict[str, Any]:
    """Each row's part in deliberation by the protocol's rule (:class:`council.protocol.deliberation.Rule`, the
    coordinator's own), as the ``VoteArrays`` fields it fills; ``asked`` (R, M) says whose round two is archived
    (a row not disputed with one is an audit row: the run audited it). A row that did not deliberate (skipped, or
    in the audit) gets its round-one votes, levels and answers in round two's place, in place; an audit row's
    archived round two is kept aside first."""
    n, m = votes.shape[:2]
    out = {"deliberated": np.ones(n, dtype=bool), "deliberation_audit": np.zeros(n, dtype=bool),
           "audit_round2": np.full((n, m), agg.MISSING, dtype=np.int8),
           "audit_levels": np.full((n, m, levels.shape[2]), agg.MISSING, dtype=np.int8),
           "audit_complete": np.zeros(n, dtype=bool), "audit_open": np.zeros((n, m), dtype=bool),
           "audit_candidate": np.zeros(n, dtype=bool)}
    if rule.mode == "all":
        return out
    for i, row_id in enumerate(row_ids):
        names = dimensions[scale_of_row[i]] if scale_of_row[i] >= 0 else None
        role = row_role(rule, row_id, eligible[i], answered[i, :, 0], votes[i, :, 0],
                        levels[i, :, :, 0] if names else None, names, bool(asked[i].any()))
        if role == "deliberated":
            continue
        out["deliberated"][i] = False
        out["audit_candidate"][i] = rule.candidate(row_id)
        if role == "audit":
            out["deliberation_audit"][i] = True
            out["audit_round2"][i] = votes[i, :, 1]
            if levels.shape[0]:
                out["audit_levels"][i] = levels[i, :, :, 1]
            open_ = eligible[i] & ~asked[i] if not names else np.zeros(m, dtype=bool)  # a graded row asks all
            out["audit_open"][i] = open_
            out["audit_complete"][i] = bool((answered[i, :, 1] | ~eligible[i] | open_).all())
    aside = ~out["deliberated"]
    votes[aside, :, 1] = votes[aside, :, 0]
    answered[aside, :, 1] = answered[aside, :, 0]
    if levels.shape[0]:
        levels[aside, :, :, 1] = levels[aside, :, :, 0]
    return out


def row_role(rule: Rule, row_id: str, eligible: np.ndarray, answered: np.ndarray, votes: np.ndarray,
             levels: np.ndarray | None, names: Sequence[str] | None, asked: bool) -> Role:
    """One row's part in deliberation by the rule, from its round one: ``eligible`` and ``answered`` (M,) bool,
    ``votes`` (M,) codes, and for a graded item its ``levels`` (M, D: ``MISSING`` or NaN where none was given)
    on the dimensions ``names``; and whether its round two was ``asked`` (archived for some panel member)."""
    if rule.mode == "all":
        return "deliberated"
    cols = np.flatnonzero(eligible)
    if names:
        given = [{d: int(x) for d, x in zip(names, levels[j, :len(names)], strict=False)
                  if x != agg.MISSING and not np.isnan(x)} if answered[j] else None for j in cols]
        return rule.role(row_id, disputed_levels(given, names), asked)
    return rule.role(row_id, disputed([WORD.get(int(votes[j])) if answered[j] else None for j in cols]), asked)


def _stream(path: Path, *, missing_ok: bool = False):  # noqa: ANN202 - a generator
    """Parsed JSON lines of ``path`` (plain or compressed; a torn last line left out)."""
    return (obj for _, obj in iter_json(path, missing_ok=missing_ok))
