"""The sequential deliberation audit: slices of the audit's candidates in the order the run takes its rows, each
later slice audited only while the upper end of the 95% Wilson interval of the flip rate is above
``deliberation_audit_stop``; the same decisions however the calls interleave and on resume; summary.json records
the bound, and a rescore reproduces it from the archive (a row not disputed with a round two is an audit row)."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest

import aggregator as agg
from council.grading.coordinator import item_major
from council.grading.sequential import SequentialAudit
from council.grading.stop import Stopped
from council.core.schema import ResponseRow
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import (
    Rule, audit_bound, audit_first_slice, disputed, keep_auditing, next_slice_end,
)
from council.run.runner import resume_council
from council.scoring.scoring import rescore
from council.store.runfolder import RunFolder
from tests.council.test_end_to_end import grade, lines, subset

Z95 = 1.959963984540054


# -- the bound and the slices ---------------------------------------------------------------------------------


def test_the_bound_is_wilson_s_upper_end_checked_against_statsmodels():
    proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint
    for k, n in ((0, 1), (0, 16), (0, 35), (1, 16), (3, 20), (7, 40), (40, 40)):
        assert audit_bound(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson")[1], abs=1e-9)
    # k = 0: z^2 / (n + z^2), the published closed form of the Wilson upper bound with no success
    assert audit_bound(0, 16) == pytest.approx(Z95**2 / (16 + Z95**2), rel=1e-9)
    assert audit_bound(0, 0) == 1.0


def ends(stop: float, up_to: int) -> list[int]:
    """Where the audit's slices end, in candidates, up to ``up_to``."""
    out = [audit_first_slice(stop)]
    while out[-1] < up_to:
        out.append(next_slice_end(out[-1]))
    return out


def test_the_first_slice_is_the_fewest_rows_that_could_stop_and_later_ones_grow_by_a_quarter():
    for stop in (0.05, 0.1, 0.2, 0.3, 0.5):
        first = audit_first_slice(stop)
        assert audit_bound(0, first) <= stop < audit_bound(0, first - 1) if first > 1 else audit_bound(0, 1) <= stop
    assert audit_first_slice(0.2) == 16 and audit_first_slice(0.1) == 35
    assert audit_first_slice(0.0) == 0  # never stops: the whole share
    assert ends(0.2, 60) == [16, 20, 25, 32, 40, 50, 63]
    assert len(ends(0.2, 100_000)) == 40  # an audit that never stops waits on few slices, even over a large share
    assert keep_auditing(0.0, 0, 10_000) and not keep_auditing(0.2, 0, 16) and keep_auditing(0.2, 1, 16)


# -- the order ------------------------------------------------------------------------------------------------


def reference(candidates: list[bool], outcome: dict[int, tuple[bool, bool]], stop: float) -> list[int]:
    """The rows the audit takes, decided one candidate after another in the run's order (no concurrency)."""
    audited, rows, changed, index, end, going = [], 0, 0, 0, audit_first_slice(stop), True
    for seq, candidate in enumerate(candidates):
        if not candidate:
            continue
        if index == end:
            going, end = going and keep_auditing(stop, changed, rows), next_slice_end(end)
        if going:
            audited.append(seq)
            complete, flipped = outcome[seq]
            rows, changed = rows + complete, changed + (complete and flipped)
        index += 1
    return audited


async def play(candidates: list[bool], outcome: dict[int, tuple[bool, bool]], stop: float, rng: random.Random,
               in_flight: int) -> tuple[list[int], SequentialAudit]:
    """The rows taken in order by ``in_flight`` workers, each row's round one and round two of random length."""
    audit, audited = SequentialAudit(stop), []
    source = iter(enumerate(candidates))

    async def row(seq: int, candidate: bool) -> None:
        try:
            await asyncio.sleep(rng.random() / 500)  # round one
            audit.known(seq, candidate)
            if candidate and await audit.decide(seq):
                audited.append(seq)
                await asyncio.sleep(rng.random() / 500)  # the audit's round two
                audit.done(seq, *outcome[seq])
        finally:
            audit.ended(seq)

    async def worker() -> None:
        for seq, candidate in source:
            await row(seq, candidate)

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return sorted(audited), audit


@pytest.mark.parametrize("flip", [0.0, 0.05, 0.3])
async def test_the_audit_takes_the_same_rows_however_the_calls_interleave(flip):
    for trial in range(6):
        rng = random.Random(trial * 101 + int(flip * 100))
        candidates = [rng.random() < 0.4 for _ in range(300)]
        outcome = {s: (rng.random() > 0.05, rng.random() < flip) for s, c in enumerate(candidates) if c}
        expected = reference(candidates, outcome, 0.2)
        got, audit = await play(candidates, outcome, 0.2, rng, in_flight=rng.choice([1, 3, 16, 64]))
        assert got == expected
        assert audit.audited == len(expected) and audit.stopped == (len(expected) < sum(candidates))
        complete = [outcome[s] for s in expected if outcome[s][0]]
        assert (audit.rows, audit.changed) == (len(complete), sum(f for _, f in complete))


async def test_the_audit_stops_once_the_bound_is_at_or_under_the_threshold():
    first = audit_first_slice(0.2)
    candidates = [True] * 60
    none = {s: (True, False) for s in range(60)}  # no flip: the first slice brings the bound under 0.2
    got, audit = await play(candidates, none, 0.2, random.Random(1), in_flight=8)
    assert got == list(range(first)) and audit.stopped and audit_bound(0, first) <= 0.2


async def test_the_audit_goes_on_while_the_bound_is_above_the_threshold():
    first = audit_first_slice(0.2)
    # two flips in the first slice: bound(2, 16) > 0.2; with no more flips it falls under 0.2 at a later slice's end
    outcome = {s: (True, s in (3, 9)) for s in range(80)}
    got, audit = await play([True] * 80, outcome, 0.2, random.Random(2), in_flight=8)
    n = first
    while keep_auditing(0.2, 2, n):
        n = next_slice_end(n)
    assert keep_auditing(0.2, 2, first) and n > first
    assert got == list(range(n)) and audit.stopped and (audit.rows, audit.changed) == (n, 2)
    every = {s: (True, True) for s in range(40)}  # a flip on every row: the bound stays above: every candidate
    got, audit = await play([True] * 40, every, 0.2, random.Random(3), in_flight=8)
    assert got == list(range(40)) and not audit.stopped


async def test_a_broken_order_stops_the_candidates_after_it():
    audit = SequentialAudit(0.2)
    audit.known(1, True)
    waiting = asyncio.ensure_future(audit.decide(1))
    await asyncio.sleep(0)
    assert not waiting.done()  # row 0 has not said yet: row 1's index is not known
    audit.ended(0)  # row 0 ended without its round one (the run stopping)
    with pytest.raises(Stopped):
        await waiting
    audit.known(2, True)
    with pytest.raises(Stopped):
        await audit.decide(2)


# -- a simulated run ------------------------------------------------------------------------------------------


def _candidates_in_order(run) -> list[str]:
    """The audit's candidates in the order the run took its rows (skipped rows in the seeded share)."""
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    rule = Rule.of(manifest["config"])
    first: dict[str, list] = {}
    for rec in lines(run / "round1.jsonl"):
        if not rec.get("shadow"):
            first.setdefault(rec["row_id"], []).append(rec["verdict"] if rec["parse_status"] != "error" else None)
    rows = [ResponseRow.model_validate(r) for r in lines(run / "rows.jsonl")]
    return [r.row_id for r in item_major(rows) if not disputed(first[r.row_id]) and rule.candidate(r.row_id)]


async def test_summary_records_the_bound_and_the_audit_is_a_prefix_of_the_candidates(tmp_path):
    result = await grade(tmp_path, subset(tmp_path, 40), deliberate="disputed", deliberation_audit=0.5,
                         deliberation_audit_stop=0.2, seed=3)
    run = result.run_dir
    verdicts = {v["row_id"]: v for v in lines(run / "verdicts.jsonl")}
    asked = {r["row_id"] for r in lines(run / "round2.jsonl")}
    audited = {r for r, v in verdicts.items() if v["deliberation_audit"]}
    assert audited == {r for r, v in verdicts.items() if not v["deliberated"]} & asked  # as the archive holds it
    candidates = _candidates_in_order(run)
    slices = ends(0.2, len(audited))
    assert len(candidates) > next_slice_end(slices[-1])  # room for the audit to stop early
    assert set(candidates[:len(audited)]) == audited  # the first candidates in the run's order, whole slices
    assert len(audited) == slices[-1]
    block = result.summary["deliberation"]["audit"]
    changed = block["changed"]
    assert (block["rows"], block["candidates"], block["stop_at"]) == (len(audited), len(candidates), 0.2)
    assert block["ci_high"] == pytest.approx(agg.wilson_interval(changed, len(audited))[1], abs=1e-6)
    assert block["ci_high"] <= 0.2 and block["stopped_early"]  # it stopped once the bound was under the threshold
    before_last = slices[-2] if len(slices) > 1 else 0
    assert not keep_auditing(0.2, changed, len(audited)) and keep_auditing(0.2, changed, before_last)
    before = (run / "summary.json").read_bytes()
    rescore(RunFolder.open(run))
    assert (run / "summary.json").read_bytes() == before  # the rescore counts exactly the rows the run audited


async def test_a_run_stopped_mid_audit_resumes_to_the_same_verdicts(tmp_path):
    responses = subset(tmp_path, 40)
    options = dict(deliberate="disputed", deliberation_audit=0.5, deliberation_audit_stop=0.1, seed=3)
    whole = await grade(tmp_path, responses, run_id="whole", **options)
    cut = await grade(tmp_path, responses, run_id="cut", **options)
    audit = [v["row_id"] for v in lines(whole.run_dir / "verdicts.jsonl") if v["deliberation_audit"]]
    assert len(audit) >= audit_first_slice(0.1)
    late = set(audit[len(audit) // 2:])
    dropped = 0
    for name in ("round1.jsonl", "round2.jsonl"):  # as a run stopped in the middle of its audit leaves them
        path = cut.run_dir / name
        data = lines(path)
        keep = [r for r in data if r["row_id"] not in late] if name == "round2.jsonl" else data[: int(len(data) * 0.8)]
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in keep))
        dropped += len(data) - len(keep)
    resumed = await resume_council(tmp_path / "runs", "cut", backend="local")
    assert resumed.issued == dropped  # the lost votes asked again, no audit row more, none less
    assert (resumed.run_dir / "verdicts.jsonl").read_bytes() == (whole.run_dir / "verdicts.jsonl").read_bytes()
    assert resumed.summary["deliberation"] == whole.summary["deliberation"]


def test_an_older_disputed_run_audits_its_whole_share():
    old = CouncilConfig(deliberate="disputed").model_dump(mode="json")
    del old["deliberation_audit_stop"]  # a manifest written before the sequential audit
    assert CouncilConfig.recorded(old, "judge-v3").deliberation_audit_stop == 0.0
    assert Rule.of(old).audit_stop == 0.0 and Rule.of(CouncilConfig()).audit_stop == 0.2
