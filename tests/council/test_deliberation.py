"""``--deliberate disputed``: round two only where round one is disputed, the rule in one place for the
coordinator and scoring, deliberation metrics on the rows that deliberated, and the seeded audit of the
skipped rows (archived, never counted) with its count of changed verdicts."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

import aggregator as agg
from council.cli import build_parser
from council.core.schema import RowVerdict
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Rule, audited, disputed, disputed_levels
from council.run.runner import resume_council
from council.scoring.scoring import rescore
from council.store.runfolder import RunFolder
from council.sim import SimConfig
from tests.council.test_end_to_end import grade, lines, subset
from tests.council.test_scales import grade as grade_world
from tests.council.test_scales import quiet, read, write_world

DIMS = ("accuracy", "honesty")


# -- the rule -------------------------------------------------------------------------------------------------


def test_binary_rule_unanimous_split_and_missing():
    assert not disputed(["correct"] * 5)
    assert not disputed(["incorrect"] * 5)
    assert disputed(["correct"] * 4 + ["incorrect"])
    assert disputed(["correct"] * 4 + [None])  # a missing vote: unanimity not confirmed
    assert disputed([])


def test_graded_rule_on_the_levels_spread():
    same = [{"accuracy": 3, "honesty": 2}] * 3
    assert not disputed_levels(same, DIMS)  # spread 0
    assert not disputed_levels([{"accuracy": 3, "honesty": 2}, {"accuracy": 2, "honesty": 3},
                                {"accuracy": 3, "honesty": 2}], DIMS)  # spread 1 on each dimension
    assert disputed_levels([{"accuracy": 4, "honesty": 2}, {"accuracy": 2, "honesty": 2},
                            {"accuracy": 3, "honesty": 2}], DIMS)  # spread 2 on accuracy
    assert disputed_levels([{"accuracy": 3, "honesty": 2}, {"accuracy": 3}, {"accuracy": 3, "honesty": 2}], DIMS)
    assert disputed_levels([*same[:2], None], DIMS)


def test_audit_sample_is_seeded_stable_and_of_its_share():
    rows = [f"item-{k}::model" for k in range(4000)]
    chosen = [r for r in rows if audited(7, r, 0.1)]
    assert chosen == [r for r in rows if audited(7, r, 0.1)]
    assert 0.08 < len(chosen) / len(rows) < 0.12
    assert chosen != [r for r in rows if audited(8, r, 0.1)]
    assert not any(audited(7, r, 0.0) for r in rows) and all(audited(7, r, 1.0) for r in rows)
    rule = Rule("disputed", 0.1, 7)
    assert [r for r in rows if rule.candidate(r)] == chosen and not any(map(Rule("all", 0.1, 7).candidate, rows))
    # the archive says which skipped rows were audited: those whose round two was asked
    assert {rule.role(r, False, True) for r in chosen} == {"audit"} and rule.role(chosen[0], False, False) == "skipped"
    assert rule.role(rows[0], True, False) == "deliberated" and Rule().role(rows[0], False, False) == "deliberated"


def test_bad_options_are_refused_naming_the_option(capsys):
    for argv in (["run", "--deliberate", "some"], ["run", "--deliberation-audit", "1.5"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert argv[1] in err
    with pytest.raises(ValueError, match="deliberation_audit"):
        CouncilConfig(deliberation_audit=-0.1)


# -- a simulated run ------------------------------------------------------------------------------------------


def _verdicts(run_dir) -> dict[str, RowVerdict]:
    return {v["row_id"]: RowVerdict.model_validate(v) for v in lines(run_dir / "verdicts.jsonl")}


def _majority(votes: list[str | None], quorum: int = 3) -> str:
    y, n = votes.count("correct"), sum(v is not None for v in votes)
    return "correct" if n >= quorum and y > n - y else "incorrect"


async def test_disputed_sends_round_two_only_where_round_one_is_disputed(tmp_path):
    result = await grade(tmp_path, subset(tmp_path, 12), deliberate="disputed", deliberation_audit=0.0)
    run = result.run_dir
    verdicts = _verdicts(run)
    round1: dict[str, dict[str, str | None]] = {}
    for rec in lines(run / "round1.jsonl"):
        round1.setdefault(rec["row_id"], {})[rec["member"]] = rec["verdict"]
    round2 = lines(run / "round2.jsonl")
    skipped = {r for r, v in verdicts.items() if not v.deliberated}
    assert skipped and len(skipped) < len(verdicts)  # both kinds of rows are in the world
    for row_id, v in verdicts.items():
        assert v.deliberated == disputed(round1[row_id].values())
        assert not v.deliberation_audit
    assert {r["row_id"] for r in round2} == set(verdicts) - skipped  # no round-two call for a unanimous row
    stats = orjson.loads((run / "provider_stats.json").read_bytes())
    records = [*lines(run / "round1.jsonl"), *round2]
    assert result.issued == len(records)
    assert sum(s["requests"] for s in stats["vendors"].values()) == sum(len(r["raw_outputs"]) for r in records)
    for row_id in skipped:
        v = verdicts[row_id]
        assert v.graded and v.consensus == v.consensus_round1 == _majority(list(round1[row_id].values()))
        assert v.votes_round2 == v.votes_round1
    # the deliberation metrics, by hand from the run's own files, on the rows that deliberated
    changed, lift = [], []
    for row_id in set(verdicts) - skipped:
        v = verdicts[row_id]
        both = [m for m in v.members if v.votes_round1[m] and v.votes_round2[m]]
        changed.append(any(v.votes_round1[m] != v.votes_round2[m] for m in both))
        share = [max(r.count("correct"), r.count("incorrect")) / len(r) for r in
                 ([x for x in v.votes_round1.values() if x], [x for x in v.votes_round2.values() if x])]
        lift.append(share[1] - share[0])
    summary = result.summary
    assert summary["deliberation"]["rows_deliberated"] == len(changed)
    assert summary["rows"] == len(verdicts)  # the rows graded: every one
    assert summary["deliberation"]["rows_skipped"] == len(skipped)
    assert summary["deliberation_impact"] == pytest.approx(np.mean(changed))
    assert summary["agreement_lift"] == pytest.approx(np.mean(lift))
    assert summary["uncertainty"]["deliberation_impact"]["value"] == pytest.approx(np.mean(changed), abs=1e-6)
    flips = [verdicts[r].consensus != verdicts[r].consensus_round1 for r in set(verdicts) - skipped]
    assert summary["consensus_flip_rate"] == pytest.approx(np.mean(flips))
    for member, counts in summary["member_flips"].items():
        assert counts["valid_both"] == sum(bool(v.votes_round1.get(member) and v.votes_round2.get(member))
                                           for r, v in verdicts.items() if r not in skipped)
    assert summary["herding"]["weak_rows"] + summary["herding"]["strong_rows"] <= len(changed)


async def test_the_audit_is_archived_never_counted_and_its_changes_recomputed(tmp_path):
    responses = subset(tmp_path, 12)
    first = await grade(tmp_path, responses, run_id="a", deliberate="disputed", deliberation_audit=0.5, seed=3)
    again = await grade(tmp_path, responses, run_id="b", deliberate="disputed", deliberation_audit=0.5, seed=3)
    verdicts = _verdicts(first.run_dir)
    audit = {r for r, v in verdicts.items() if v.deliberation_audit}
    assert audit and audit == {r for r, v in _verdicts(again.run_dir).items() if v.deliberation_audit}
    round2: dict[str, list[str | None]] = {}
    for rec in lines(first.run_dir / "round2.jsonl"):
        round2.setdefault(rec["row_id"], []).append(rec["verdict"])
    assert audit <= set(round2)  # asked and archived ...
    changed = 0
    for row_id in audit:
        v = verdicts[row_id]
        assert not v.deliberated and v.consensus == v.consensus_round1 and v.votes_round2 == v.votes_round1
        changed += _majority(round2[row_id]) != v.consensus_round1  # ... never counted
    block = first.summary["deliberation"]["audit"]
    assert (block["rows"], block["changed"]) == (len(audit), changed)
    low, high = agg.wilson_interval(changed, len(audit))
    assert (block["ci_low"], block["ci_high"]) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))
    assert first.summary["deliberation"]["rows_audit"] == len(audit)
    # Round two seldom moves a unanimous panel: turn every audit vote around in the archive, then rescore.
    path = first.run_dir / "round2.jsonl"
    turned = {"correct": "incorrect", "incorrect": "correct", None: None}
    path.write_bytes(b"".join(orjson.dumps({**r, "verdict": turned[r["verdict"]]} if r["row_id"] in audit else r)
                              + b"\n" for r in lines(path)))
    summary = rescore(RunFolder.open(first.run_dir))
    assert _verdicts(first.run_dir) == verdicts  # never counted
    assert summary["deliberation"]["audit"]["changed"] == summary["deliberation"]["audit"]["rows"] == len(audit)


def test_wilson_interval_by_hand():
    # k = 0 of n = 67 at 95%: the upper bound is z^2 / (n + z^2) with z = 1.959964
    z2 = 1.959964**2
    assert agg.wilson_interval(0, 67) == (pytest.approx(0.0), pytest.approx(z2 / (67 + z2), rel=1e-6))
    # k = 3 of n = 20: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    p, n, z = 0.15, 20, 1.959964
    centre, half = p + z2 / (2 * n), z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low, high = agg.wilson_interval(3, 20)
    assert (low, high) == (pytest.approx((centre - half) / (1 + z2 / n)), pytest.approx((centre + half) / (1 + z2 / n)))


async def test_a_resumed_disputed_run_ends_with_the_same_verdicts(tmp_path):
    responses = subset(tmp_path, 10)
    whole = await grade(tmp_path, responses, run_id="whole", deliberate="disputed", deliberation_audit=0.3)
    cut = await grade(tmp_path, responses, run_id="cut", deliberate="disputed", deliberation_audit=0.3)
    dropped = 0
    for name, keep in (("round1.jsonl", 0.6), ("round2.jsonl", 0.3)):  # as an interrupted run leaves them
        path = cut.run_dir / name
        data = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(data[: int(len(data) * keep)]))
        dropped += len(data) - int(len(data) * keep)
    resumed = await resume_council(tmp_path / "runs", "cut", backend="local")
    assert resumed.issued == dropped  # the lost votes asked again, and no round two the rule skips
    assert (resumed.run_dir / "verdicts.jsonl").read_bytes() == (whole.run_dir / "verdicts.jsonl").read_bytes()


# -- graded items ---------------------------------------------------------------------------------------------


async def test_graded_rows_deliberate_where_some_dimension_spreads_by_more_than_one(tmp_path):
    bank_path, responses = write_world(tmp_path, 8)
    sim = quiet(SimConfig.planted(2), latency_ms=0.0)
    result = await grade_world(tmp_path, bank_path, responses, sim, deliberate="disputed", deliberation_audit=0.0)
    names = ("accuracy", "honesty", "clarity")
    verdicts = [RowVerdict.model_validate(v) for v in read(result.run_dir / "verdicts.jsonl")]
    asked = {r["row_id"] for r in read(result.run_dir / "round2.jsonl")}
    kinds = set()
    for v in verdicts:
        levels = [v.scores_round1.get(m) or None for m in v.members]
        assert v.deliberated == disputed_levels(levels, names) == (v.row_id in asked)
        if not v.deliberated:
            assert v.scores_round2 == v.scores_round1
        kinds.add(v.deliberated)
    assert kinds == {True, False}
    moved = result.summary["scales"]["quality"]["deliberation_impact"]["cells"]
    assert moved == sum(v.deliberated for v in verdicts) * len(verdicts[0].members) * len(names)


def test_disputed_rows_deliberate_by_default_with_a_tenth_audited():
    assert Rule.of(CouncilConfig()) == Rule("disputed", 0.1, 0, 0.2)
    assert Rule.of({"seed": 4}) == Rule("all", 0.0, 4, 0.0)  # a run recorded before the option: every row deliberated
    # a run recorded before the sequential audit audits its whole share, as it did
    assert Rule.of({"deliberate": "disputed", "deliberation_audit": 0.1}).audit_stop == 0.0
