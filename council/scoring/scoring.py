"""Scoring a run from its archive alone: vote arrays in, ``verdicts.jsonl`` and ``summary.json`` out.

``council run`` scores by this path too, re-reading what it archived, so only archived votes count and
``council rescore`` reproduces the summary byte for byte. The arithmetic is the aggregator's; this
module turns arrays into records and names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

import aggregator as agg
from council.core.schema import (BankItem, ElicitedRecord, JudgeCallRecord, MemberSpec, ResponseRow, RowVerdict,
                                 RunManifest)
from council.protocol.config import HonestyWeights
from council.protocol.deliberation import AUDIT_CI, Rule, audit_decided, changed_verdicts, keep_auditing
from council.protocol.panels import panel
from council.scoring import scales
from council.scoring.arrays import CODE, SPEND, WORD, Counters, VoteArrays, build, row_role
from council.store.runfolder import ITEMS, MANIFEST, SUMMARY, VERDICTS, RunFolder, read_jsonl
from council.store.tables import write_scores

ON_DELIBERATED = ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift", "member_flips")
"""The deliberation summary's metrics computed on the rows that deliberated (with ``herding``)."""
WARN_RATE = 0.02  # a diagnostic above this share of votes (or rows) is printed as a warning


def score(a: VoteArrays, quorum: int, run_id: str, *, seed: int = 0, resamples: int = 1000,
          penalty: float = 1.0, simulated: bool = False, refused: frozenset[str] = frozenset(),
          honesty: HonestyWeights | None = None) -> tuple[Iterator[RowVerdict], dict[str, Any]]:
    """Verdicts of every row (made one at a time, as they are consumed) and the summary. Rows not graded (a panel member without a result in some
    round: budget, interrupt, provider failure) get no consensus and are left out of every score."""
    full = a
    binary = full.graded & (full.scale_of_row < 0)  # graded items are scored by their scale (``scales``)
    a = full.subset(binary) if not binary.all() else full  # rows never graded are never scored
    tallied = agg.tally_rounds(a.votes)  # one count of the votes serves every metric below
    cons = agg.consensus(a.votes, quorum=quorum, tally=tallied)
    # Deliberation metrics are on the rows that deliberated (all of them unless ``--deliberate disputed``).
    d = a if a.deliberated.all() else a.subset(a.deliberated)
    deliberated = (d, tallied if d is a else agg.tally_rounds(d.votes))
    position = np.cumsum(binary) - 1  # a binary graded row's index among them
    decided_scales = scales.decide(full, quorum)
    scaled_at = {int(i): (sr, k) for sr in decided_scales for k, i in enumerate(sr.rows)}
    verdicts = (_row_verdict(i, full, cons, int(position[i]) if binary[i] else None, refused, scaled_at.get(i))
                for i in range(len(full.row_ids)))
    n_models = len(a.models)
    s2, counts = agg.group_scores(cons.verdict[:, 1], a.model, n_models)
    s1, _ = agg.group_scores(cons.verdict[:, 0], a.model, n_models)
    known = a.gold != agg.MISSING  # a row without gold says nothing of its model's true score
    has_gold = bool(known.any())
    truth, _ = agg.group_scores((a.gold[known] == agg.CORRECT).astype(np.int8), a.model[known], n_models)
    ties, _ = agg.group_scores(cons.tie[:, 1].astype(np.int8), a.model, n_models)  # ties resolve to incorrect

    not_graded = np.bincount(full.model[~full.graded], minlength=n_models)
    summary: dict[str, Any] = {"run_id": run_id, "simulated": simulated, "quorum": quorum, "members": a.members,
                               "reserves": [m for m, r in zip(a.members, a.reserve, strict=True) if r]}
    summary.update(agg.deliberation_summary(a.votes, a.members, quorum=quorum, tally=tallied))
    if d is not a:  # the rows, ties and quorum counts stay every graded row's
        on = agg.deliberation_summary(d.votes, a.members, quorum=quorum, tally=deliberated[1])
        summary.update({k: on[k] for k in ON_DELIBERATED})
    summary["rows_total"] = len(full.row_ids)
    summary["not_graded_rows"] = int(not_graded.sum())
    summary["panels"] = _panels(full)
    summary["deliberation"] = _deliberation(full, a, cons, decided_scales, quorum)
    summary["models"] = {
        name: {
            "vendor": a.model_vendors[k], "rows": int(counts[k]), "not_graded": int(not_graded[k]),
            "score": _num(s2[k]), "score_round1": _num(s1[k]), "tie_rate": _num(ties[k]),
            **({"true_score": _num(truth[k])} if has_gold else {}),
        }
        for k, name in sorted(enumerate(a.models), key=lambda kv: kv[1])
    }
    summary["flags"] = _flag_counts(a, cons)
    summary["diagnostics"] = diagnostics(a.counters, a.members, summary["flags"]["no_quorum"], len(a.row_ids))
    if summary["panels"]["sizes_differ"]:
        summary["diagnostics"]["warnings"].append("panels differ in size (add a reserve member to the roster)")
    if summary["not_graded_rows"]:
        summary["diagnostics"]["warnings"].append(f"{summary['not_graded_rows']} rows not graded")
    if has_gold:
        summary["accuracy_vs_gold"] = {
            "council": _num(agg.accuracy_against(cons.verdict[:, 1], a.gold)),
            "round1": _num(agg.accuracy_against(cons.verdict[:, 0], a.gold)),
            "members_round1": dict(zip(a.members, map(_num, agg.member_accuracy(a.votes[:, :, 0], a.gold)), strict=True)),
            "members_round2": dict(zip(a.members, map(_num, agg.member_accuracy(a.votes[:, :, 1], a.gold)), strict=True)),
        }
        versus = agg.council_versus_members(cons.verdict[:, 1], a.votes[:, :, 0], a.gold, a.item, len(a.items),
                                            a.members, n_resamples=resamples, seed=seed)
        if versus is not None:
            summary["accuracy_vs_gold"].update({
                "council_ci": versus["judges"]["council"], "members_round1_ci": {
                    m: versus["judges"][m] for m in a.members},
                "council_minus_member": versus["council_minus_member"],  # each on the rows it voted, paired
                "best_member_round1": versus["best_member"],
                "council_minus_best_member": versus["council_minus_best_member"]})
    if len(full.audit):  # batched votes asked again alone: does batching change verdicts?
        summary["batch_audit"] = agg.paired_agreement(full.audit[:, 0], full.audit[:, 1], full.audit[:, 2], a.members)
    if (a.shadow != agg.MISSING).any():
        summary["self_preference"] = _self_preference(a, seed=seed, resamples=resamples)
    summary.update(statistics(a, cons, tallied, quorum, seed=seed, resamples=resamples, penalty=penalty,
                              deliberated=deliberated))
    summary["honesty"] = _honesty(a, cons.verdict[:, 1], honesty or HonestyWeights(), seed=seed, resamples=resamples)
    if full.scales:
        summary["scales"] = scales.summary(decided_scales, full, seed=seed, resamples=resamples)
        summary["scaled_rows"] = int((full.scale_of_row >= 0).sum())
    return verdicts, summary


def _deliberation(full: VoteArrays, a: VoteArrays, cons: agg.Consensus, decided: list[scales.ScaleRows],
                  quorum: int) -> dict[str, Any]:
    """Which graded rows deliberated (``full``: every row; ``a`` and ``cons``: the graded correct / incorrect
    rows and their consensus; ``decided``: the graded items'), and the deliberation audit: over the audit rows
    whose round two is complete, how many verdicts round two would have changed (a correct / incorrect row:
    its consensus, :func:`council.protocol.deliberation.changed_verdicts`; a graded item's: the council's level
    on some dimension), with a 95% Wilson interval whose upper end (``ci_high``) is the bound the sequential
    audit stops on: ``stop_at`` its threshold, ``candidates`` the graded skipped rows in the audit's seeded
    share, ``stopped_early`` whether the audit left some of them out once its bound was at or under
    ``stop_at``. deliberation_impact, agreement_lift, consensus_flip_rate, unanimity_lift, member_flips and
    herding are computed on ``rows_deliberated`` only."""
    graded = full.graded
    audit = a.deliberation_audit & _audit_complete(a, quorum)
    changed = int(changed_verdicts(a.votes[audit, :, 0], a.audit_round2[audit], quorum).sum())
    scaled_changed, scaled_n = scales.audit_changes(decided, full, quorum)
    n, k = int(audit.sum()) + scaled_n, changed + scaled_changed
    low, high = agg.wilson_interval(k, n, AUDIT_CI)
    rule = full.deliberation
    rows_audit = int((graded & full.deliberation_audit).sum())
    candidates = int((graded & full.audit_candidate).sum())
    return {
        "mode": rule.mode, "audit_share": rule.audit_share, "metrics_on": "rows_deliberated",
        "rows_deliberated": int((graded & full.deliberated).sum()),
        "rows_skipped": int((graded & ~full.deliberated).sum()),
        "rows_audit": rows_audit,
        "audit": {"rows": n, "changed": k, "changed_rate": _num(k / n) if n else None, "ci": AUDIT_CI,
                  "ci_low": _num(low), "ci_high": _num(high),
                  "incomplete": int((graded & full.deliberation_audit & ~_audit_complete(full, quorum)).sum()),
                  "candidates": candidates, "stop_at": rule.audit_stop,
                  "stopped_early": bool(rule.audit_stop > 0 and rows_audit < candidates
                                        and not keep_auditing(rule.audit_stop, k, n))},
    }


def _audit_complete(a: VoteArrays, quorum: int) -> np.ndarray:
    """(R,) bool: the audit row's round two is complete: every member asked answered, and those answers decide
    whether its verdict would change (:func:`council.protocol.deliberation.audit_decided`)."""
    return a.audit_complete & audit_decided(a.votes[:, :, 0], a.audit_round2, a.audit_open, quorum)


def statistics(a: VoteArrays, cons: agg.Consensus, tallied: agg.Tally, quorum: int, *, seed: int, resamples: int,
               penalty: float, deliberated: tuple[VoteArrays, agg.Tally] | None = None) -> dict[str, Any]:
    """Agreement, reliability against truth, herding, grader-rule sensitivity, uncertainty, calibration.
    ``deliberated``: the rows that deliberated and their tally (None: every row), on which herding and the
    deliberation metrics' intervals are computed."""
    d, tally_d = deliberated or (a, tallied)
    out: dict[str, Any] = {
        "agreement": agg.agreement_summary(a.votes, a.members),
        "herding": agg.herding_summary(d.votes, a.members),
        "grader_rules": agg.sensitivity_summary(a.votes, a.model, a.models, a.members, quorum=quorum),
        "uncertainty": _uncertainty(a, cons, d, tally_d, seed=seed, resamples=resamples),
    }
    truth = agg.truth_summary(a.votes, cons.verdict, a.gold, a.members)
    if truth is not None:
        out["reliability_vs_truth"] = truth
    if not np.isnan(a.confidence).all():
        out["calibration"] = agg.calibration_summary(
            a.confidence, cons.verdict[:, 1], a.abstained, a.model, a.models, penalty=penalty)
    return out


def _uncertainty(a: VoteArrays, cons: agg.Consensus, d: VoteArrays, tallied: agg.Tally, *, seed: int,
                 resamples: int) -> dict[str, Any]:
    """Percentile bootstrap over items, paired across models: scores overall and per probe, and the
    deliberation metrics (as ratios of per-item sums) on the rows that deliberated (``d``, ``tallied`` its
    count)."""
    n_items = len(a.items)
    S, C = agg.score_matrix(a.item, a.model, cons.verdict[:, 1].astype(np.float64), n_items, len(a.models))
    kw = {"n_resamples": resamples, "seed": seed}
    overall = agg.bootstrap_summary(agg.bootstrap_scores(S, C, **kw), a.models)
    by_probe = agg.bootstrap_by_group(S, C, a.probe_of_item, len(a.probes), **kw)
    agreement = agg.agreement(d.votes, tally=tallied)
    lifted = ~np.isnan(agreement).any(axis=1)
    lift = np.where(lifted, agreement[:, 1] - agreement[:, 0], 0.0)

    def ratio(num: np.ndarray, den: np.ndarray) -> dict[str, float | None]:
        point, low, high = agg.bootstrap_ratio(np.bincount(d.item, weights=num, minlength=n_items),
                                               np.bincount(d.item, weights=den, minlength=n_items), **kw)
        return {"value": _num(point), "ci_low": _num(low), "ci_high": _num(high)}

    return {
        "scores": overall,
        "by_probe": {p: agg.bootstrap_summary(r, a.models) for p, r in zip(a.probes, by_probe, strict=True)},
        "deliberation_impact": ratio(tallied.changed.astype(np.float64), tallied.eligible.astype(np.float64)),
        "agreement_lift": ratio(lift, lifted.astype(np.float64)),
    }


def _honesty(a: VoteArrays, correct: np.ndarray, weights: HonestyWeights, *, seed: int, resamples: int
             ) -> dict[str, Any]:
    """The abstention-aware composite (with its weights and a paired bootstrap over items), consistency under
    paraphrase and the compute signature, per model by name; ``None`` where there is nothing to compute."""
    w = weights.model_dump()
    n_models, order = len(a.models), sorted(range(len(a.models)), key=lambda k: a.models[k])
    comp = agg.honesty_composite(correct, a.abstained, a.confidence, a.model, n_models, **w)
    boot = agg.bootstrap_honesty(correct, a.abstained, a.confidence, a.model, a.item, n_models, len(a.items),
                                 n_resamples=resamples, seed=seed, **w)
    composite = {
        "overall": _num(comp["overall"]), "rows": int(comp["n_rows"].sum()), "n_resamples": resamples, "seed": seed,
        "ci": boot.ci, "models": {a.models[k]: {
            "score": _num(comp["score"][k]), "ci_low": _num(boot.low[k]), "ci_high": _num(boot.high[k]),
            "rows": int(comp["n_rows"][k]), **{o: int(comp[f"n_{o}"][k]) for o in agg.OUTCOMES}} for k in order},
    }
    group = a.paraphrase_group[a.item] if len(a.item) else np.zeros(0, dtype=np.int64)
    n_groups = int(a.paraphrase_group.max()) + 1 if len(a.paraphrase_group) else 0
    paraphrase = None
    if n_groups:
        pc = agg.paraphrase_consistency(correct, a.model, group, n_models, n_groups)
        paraphrase = {a.models[k]: {"consistency": _num(pc["consistency"][k]), "groups": int(pc["n_groups"][k])}
                      for k in order}
    signature = None
    if not np.isnan(a.spend).all():
        derived = agg.consensus_difficulty(correct, a.item, a.model, len(a.items), n_models)
        difficulty = np.where(np.isnan(a.difficulty), derived, a.difficulty)
        rho = {what: agg.compute_signature(difficulty, a.item, a.model, a.spend[:, j], n_models)
               for j, what in enumerate(SPEND)}
        signature = {
            "difficulty_items": {"bank": int((~np.isnan(a.difficulty)).sum()),
                                 "consensus": int((np.isnan(a.difficulty) & ~np.isnan(derived)).sum())},
            "models": {a.models[k]: {what: None if r["n_items"][k] < agg.MIN_SIGNATURE_ITEMS else {
                "rho": _num(r["rho"][k]), "items": int(r["n_items"][k])} for what, r in rho.items()} for k in order},
        }
    return {"weights": w, "composite": composite, "paraphrase_consistency": paraphrase, "compute_signature": signature}


def _self_preference(a: VoteArrays, *, seed: int, resamples: int) -> dict[str, Any]:
    """The ``--shadow-self`` audit per producing vendor with a shadow vote (:func:`aggregator.self_preference`):
    the vendor's own judge against the other members, on its own vendor's rows and on the others'."""
    vendors = sorted(set(a.vendor_of_row))
    index = {v: g for g, v in enumerate(vendors)}
    group = np.array([index[v] for v in a.vendor_of_row], dtype=np.int64)
    judge = np.array([a.members.index(v) if v in a.members else -1 for v in vendors], dtype=np.int64)
    audit = agg.self_preference(a.shadow, a.votes[:, :, 0], a.gold, group, judge, a.item, len(a.items), a.members,
                                n_resamples=resamples, seed=seed)
    return {v: audit[g] for g, v in enumerate(vendors) if audit[g] is not None}


def diagnostics(c: Counters, members: list[str], no_quorum_rows: int, rows: int) -> dict[str, Any]:
    """Counts that say how far the votes can be trusted, each with its rate."""
    counts = {
        "votes": c.votes, "truncated": c.truncated, "empty_outputs": c.empty_outputs, "unparseable": c.unparseable,
        "repair_reasks": len(c.reasked_requests), "errors": c.errors, "reused": c.reused,
        "no_quorum_rows": no_quorum_rows,
    }
    rates = {f"{k}_rate": round(v / max(1, rows if k == "no_quorum_rows" else c.votes), 6)
             for k, v in counts.items() if k not in ("votes", "reused")}
    status = {m: c.member_status.get(m, Counter()) for m in members}  # member -> parse status -> votes
    share = {m: {k: s[k] / max(1, c.member_votes[m]) for k in ("ok", "extracted", "repaired", "unparseable", "error")}
             for m, s in status.items()}
    per_member = {m: round(r["error"] + r["unparseable"], 6) for m, r in share.items()}
    warnings = [k.removesuffix("_rate") for k, v in rates.items() if v > WARN_RATE]
    warnings += [f"member {m} errors" for m, v in per_member.items() if v > WARN_RATE]
    parsing = {m: {f"{k}_rate": round(v, 6) for k, v in r.items()} for m, r in share.items()}
    return {**counts, **rates, "error_rate_per_member": per_member, "parse_status_per_member": parsing,
            "self_identifying_responses": dict(sorted(c.self_identified.items())), "warnings": warnings}


def _panels(a: VoteArrays) -> dict[str, Any]:
    """How many rows had each panel size, how many an even panel, and how many seated a reserve."""
    sizes = a.eligible.sum(axis=1)
    by_size = {str(k): int(v) for k, v in zip(*np.unique(sizes, return_counts=True), strict=True)}
    return {"rows_by_size": by_size, "even_panel_rows": int((sizes % 2 == 0).sum()),
            "reserve_rows": int(a.eligible[:, a.reserve].any(axis=1).sum()), "sizes_differ": len(by_size) > 1}


def _flag_counts(a: VoteArrays, cons: agg.Consensus) -> dict[str, int]:
    """How many graded rows carry each flag of :func:`_row_verdict` (``a`` holds the graded rows only)."""
    tie = cons.tie & ~cons.no_quorum  # a row without quorum is flagged for that, not for a tie
    missing = ((a.votes == agg.MISSING) & a.eligible[:, :, None]).any(axis=(1, 2))
    return {"tie": int(tie[:, 1].sum()), "no_quorum": int(cons.no_quorum[:, 1].sum()),
            "tie_round1": int(tie[:, 0].sum()), "no_quorum_round1": int(cons.no_quorum[:, 0].sum()),
            "missing_votes": int(missing.sum())}


def _row_verdict(i: int, a: VoteArrays, cons: agg.Consensus, k: int | None, refused: frozenset[str],
                 scaled: tuple[scales.ScaleRows, int] | None = None) -> RowVerdict:
    """Row ``i`` of ``a``; ``k`` is its index in ``cons`` (None: not a graded binary row); ``scaled`` its
    scale's rows and its index among them (a graded row of a graded item)."""
    decided = None if k is None else (cons.verdict[k], cons.tie[k], cons.no_quorum[k])
    cols = np.flatnonzero(a.eligible[i])
    levels = None if scaled is None else scaled[0].fields(scaled[1], a.members, cols)
    stated = float(a.confidence[i])
    return _verdict(a.row_ids[i], a.items[a.item[i]], a.models[a.model[i]], a.vendor_of_row[i], int(a.gold[i]),
                    a.members, a.reserve, a.eligible[i], a.votes[i], decided, a.row_ids[i] in refused,
                    probe=a.probes[a.probe_of_item[a.item[i]]], levels=levels,
                    confidence=None if np.isnan(stated) else stated, abstained=bool(a.abstained[i]),
                    deliberated=bool(a.deliberated[i]), deliberation_audit=bool(a.deliberation_audit[i]))


def _verdict(row_id: str, item_id: str, model: str, vendor: str, gold: int, members: list[str], reserve: np.ndarray,
             eligible: np.ndarray, v: np.ndarray, decided: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
             refused: bool, *, probe: str = "", levels: dict[str, Any] | None = None,
             confidence: float | None = None, abstained: bool = False, deliberated: bool = True,
             deliberation_audit: bool = False) -> RowVerdict:
    """One row's record: ``v`` its (M, 2) votes, ``decided`` its consensus, ties and missing quorum per round
    (None: the row was not graded); ``levels`` a graded row's scale fields (:meth:`scales.ScaleRows.fields`);
    ``confidence`` and ``abstained`` the row's own (as stated in ``rows.jsonl``). ``council_score`` puts every
    graded row on 0-100: 100 / 0 for a correct / incorrect consensus, the normalised score of a graded item."""
    cols = np.flatnonzero(eligible)
    names = [members[j] for j in cols]
    flags = []
    if levels is not None:
        flags = levels.pop("flags")
    elif decided is None:
        flags.append("not_graded")
        if refused:
            flags.append("refused")
    else:
        for r, suffix in ((1, ""), (0, "_round1")):
            if decided[2][r]:
                flags.append("no_quorum" + suffix)
            elif decided[1][r]:
                flags.append("tie" + suffix)
    if levels is None and len(cols) and (v[cols] == agg.MISSING).any():
        flags.append("missing_votes")
    if levels is not None:
        council_score = levels["score_normalised"]
    else:
        council_score = None if decided is None else (100.0 if int(decided[0][1]) == agg.CORRECT else 0.0)
    return RowVerdict(
        row_id=row_id, item_id=item_id, model=model, vendor=vendor, probe=probe, **(levels or {}),
        members=names, reserves=[members[j] for j in cols if reserve[j]], graded=decided is not None or levels is not None,
        votes_round1={m: WORD.get(int(v[j, 0])) for m, j in zip(names, cols, strict=True)},
        votes_round2={m: WORD.get(int(v[j, 1])) for m, j in zip(names, cols, strict=True)},
        consensus_round1=None if decided is None else WORD[int(decided[0][0])],
        consensus=None if decided is None else WORD[int(decided[0][1])],
        flags=flags, gold_verdict=WORD.get(gold), council_score=council_score, confidence=confidence,
        abstained=abstained, deliberated=deliberated, deliberation_audit=deliberation_audit,
    )


def row_verdict(row: ResponseRow, records: Iterable[JudgeCallRecord], roster: list[MemberSpec],
                self_exclusion: bool, quorum: int, *, deliberation: Rule, refused: bool = False,
                item: BankItem | None = None) -> RowVerdict:
    """One row's verdict from its own records, by the rules of :func:`score` (the record ``verdicts.jsonl``
    will hold for it), so that it can be given out as soon as the row's second round is in. ``item``: the
    row's bank item (its probe, and its scale if it is graded); ``deliberation``: the run's rule
    (``Rule.of(config)``; required, as a verdict depends on it)."""
    scale = item.scale if item is not None else None
    members = [m.vendor for m in roster]
    column = {v: j for j, v in enumerate(members)}
    eligible = np.zeros(len(members), dtype=bool)
    eligible[[column[m.vendor] for m in panel(row.vendor, roster, self_exclusion)]] = True
    votes = np.full((1, len(members), 2), agg.MISSING, dtype=np.int8)
    answered = np.zeros((len(members), 2), dtype=bool)
    dims = {d: k for k, d in enumerate(scale.names)} if scale is not None else {}
    levels = np.full((1, len(members), len(dims), 2), np.nan)
    asked = False  # some panel member's round two is among the records
    for rec in records:
        j = column.get(rec.member)
        if j is not None and eligible[j] and not rec.shadow and rec.audit_of is None:
            asked = asked or rec.round == 2
            votes[0, j, rec.round - 1] = CODE.get(rec.verdict, agg.MISSING)
            answered[j, rec.round - 1] = rec.parse_status != "error"
            for name, level in (rec.scores or {}).items():
                if name in dims:
                    levels[0, j, dims[name], rec.round - 1] = level
    role = row_role(deliberation, row.row_id, eligible, answered[:, 0], votes[0, :, 0],
                    levels[0, :, :, 0] if scale is not None else None, scale.names if scale is not None else None,
                    asked)
    if role != "deliberated":  # round one's votes stand in round two's place, as in :func:`build`
        votes[0, :, 1], answered[:, 1], levels[..., 1] = votes[0, :, 0], answered[:, 0], levels[..., 0]
    full = bool((answered | ~eligible[:, None]).all())
    decided = fields = None
    if full and scale is not None:
        fields = scales.ScaleRows.of(scale, np.zeros(1, dtype=np.int64), levels, quorum).fields(
            0, members, np.flatnonzero(eligible))
    elif full:
        cons = agg.consensus(votes, quorum=quorum)
        decided = (cons.verdict[0], cons.tie[0], cons.no_quorum[0])
    return _verdict(row.row_id, row.item_id, row.model, row.vendor, CODE.get(row.gold_verdict, agg.MISSING), members,
                    np.array([m.reserve for m in roster], dtype=bool), eligible, votes[0], decided, refused,
                    probe=item.probe if item is not None else "", levels=fields, confidence=row.confidence,
                    abstained=row.abstained, deliberated=role == "deliberated",
                    deliberation_audit=role == "audit")


def _num(x: float) -> float | None:
    x = float(x)
    return None if np.isnan(x) else round(x, 6)


def load_arrays(folder: RunFolder) -> tuple[RunManifest, VoteArrays]:
    manifest = RunManifest.model_validate(folder.read_json(MANIFEST))
    items = read_jsonl(folder.path / ITEMS, BankItem)
    return manifest, build(folder.path, manifest.roster, manifest.self_exclusion, {i.id: i.probe for i in items},
                           paraphrase_of={i.id: i.paraphrase_of for i in items},
                           difficulty={i.id: i.difficulty for i in items}, scales={i.id: i.scale for i in items},
                           deliberation=Rule.of(manifest.config))


def elicitation(records: list[ElicitedRecord]) -> dict[str, Any]:
    """Per model under test: what was asked, what could be graded, and why not (truncation is counted and
    warned about, never scored as a wrong answer)."""
    out: dict[str, Any] = {}
    for model in sorted({r.model for r in records}):
        mine = [r for r in records if r.model == model]
        speeds = [r.tokens_per_s for r in mine if r.tokens_per_s]
        n = len(mine)
        out[model] = {
            "asked": n, "graded": sum(r.gradable for r in mine), "truncated": sum(r.truncated for r in mine),
            "empty": sum(r.empty and not r.truncated and r.error is None for r in mine),
            "errors": sum(r.error is not None for r in mine), "abstained": sum(r.abstained for r in mine),
            "confidence_missing": sum(r.confidence_status == "missing" for r in mine),
            "confidence_malformed": sum(r.confidence_status in ("malformed", "out_of_range") for r in mine),
            "truncated_rate": round(sum(r.truncated for r in mine) / max(1, n), 6),
            "reasoning_tokens": sum(r.usage.reasoning_tokens for r in mine),
            "completion_tokens": sum(r.usage.completion_tokens for r in mine),
            "mean_tokens_per_s": round(sum(speeds) / len(speeds), 3) if speeds else None,
            "cost_usd": round(sum(r.cost_usd for r in mine), 6),
        }
    return out


def costs(counters: Counters, elicited: list[ElicitedRecord], output_rates: dict[str, float] | None = None
          ) -> dict[str, Any]:
    """What the run cost (what a simulated run would have cost on the real providers): the total, and its
    judging part by round and by judge vendor, each of which adds up, with the elicitation, to the total; and per
    judge vendor its paid votes' tokens (``judge_tokens``, :func:`judge_tokens`)."""
    elicitation = sum(r.cost_usd for r in elicited)
    return {"cost_usd": round(counters.cost_usd + elicitation, 6),
            "cost_by_round_usd": {str(k): round(counters.cost_by_round[k], 6) for k in (1, 2)},
            "cost_by_vendor_usd": {v: round(c, 6) for v, c in sorted(counters.cost_by_vendor.items())},
            "cost_elicitation_usd": round(elicitation, 6),
            "judge_tokens": judge_tokens(counters, output_rates or {})}


REASONING_DOMINATES = 0.5  # a judge whose reasoning is over this share of its cost is said to be dominated by it


def judge_tokens(counters: Counters, output_rates: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Per judge vendor: paid votes, their prompt, completion and reasoning tokens (reasoning is part of completion),
    reasoning and cost per vote, and the reasoning's cost (its tokens at the judge's output rate, ``output_rates``
    in USD per million, the batch rate for batched votes being at most that) and share of the judge's cost."""
    out = {}
    for vendor, t in sorted(counters.tokens_by_vendor.items()):
        votes, cost = t["votes"], counters.cost_by_vendor[vendor]
        reasoning_usd = t["reasoning_tokens"] * output_rates.get(vendor, 0.0) / 1e6
        out[vendor] = {
            "votes": votes, "prompt_tokens": t["prompt_tokens"], "completion_tokens": t["completion_tokens"],
            "reasoning_tokens": t["reasoning_tokens"],
            "reasoning_tokens_per_vote": round(t["reasoning_tokens"] / votes, 3) if votes else 0.0,
            "cost_per_vote_usd": round(cost / votes, 9) if votes else 0.0,
            "reasoning_cost_usd": round(min(reasoning_usd, cost), 6),
            "reasoning_share_of_cost": round(min(1.0, reasoning_usd / cost), 6) if cost else 0.0,
        }
    return out


def _output_rates(manifest: Any) -> dict[str, float]:
    """Each seat's output rate in USD per million tokens, as the manifest recorded its price (0 when unpriced)."""
    prices = manifest.prices or {}
    return {m.vendor: float((prices.get(m.judge_model) or {}).get("output_mtok") or 0.0) for m in manifest.roster}


def rescore(folder: RunFolder) -> dict[str, Any]:
    """Rebuild ``verdicts.jsonl`` and ``summary.json`` from the archived rows and judge-call records, and the
    tables beside them (``scores.csv``, ``scores.parquet``, ``leaderboard.csv``: :mod:`council.store.tables`)."""
    manifest, arrays = load_arrays(folder)
    config = manifest.config
    refused = folder.read_refused()
    verdicts, summary = score(arrays, manifest.quorum, manifest.run_id, seed=manifest.seed,
                              resamples=config.get("bootstrap_resamples", 1000),
                              penalty=config.get("selective_penalty", 1.0), simulated=manifest.simulated,
                              refused=frozenset(refused),
                              honesty=HonestyWeights.model_validate(config.get("honesty", {})))
    state = folder.read_state()
    summary["state"] = state
    summary["complete"] = state["state"] == "finished" and not summary["not_graded_rows"]
    summary["refused_rows"] = len(refused)
    summary["anonymisation"] = arrays.counters.shown.summary()  # names cut from each member's reasons shown to peers
    if refused:
        summary["diagnostics"]["warnings"].append(
            f"{len(refused)} rows refused before any call (e.g. {next(iter(refused.values()))})")
    elicited = folder.read_elicited()
    if elicited:
        summary["elicitation"] = elicitation(elicited)
        summary["diagnostics"]["warnings"] += [
            f"model {m} truncated" for m, e in summary["elicitation"].items() if e["truncated_rate"] > WARN_RATE]
    summary.update(costs(arrays.counters, elicited, _output_rates(manifest)))
    folder.write_lines(VERDICTS, verdicts)
    folder.write_json(SUMMARY, summary)
    write_scores(folder.path)  # scores.csv, scores.parquet, leaderboard.csv: the same results for data tools
    return summary
