"""The deliberation audit of one run, taken in the order the run takes its rows (the rule and its slices:
:mod:`council.protocol.deliberation`).

Each row the run takes gets its place in that order (``seq``). Once its round one is in, the row says whether it
is one of the audit's candidates (:meth:`SequentialAudit.known`): a skipped row in the seeded share. A candidate's
index among the candidates is fixed once every row before it has said so; its slice follows from its index, and
whether its slice is audited from the slices before it, once every row of those is audited
(:meth:`SequentialAudit.decide`, :meth:`SequentialAudit.done`). So a candidate may wait for the rows before it,
never for a row after it, and the same rows in the same order with the same archived votes make the same
decisions, however the calls interleave: a resumed run audits exactly the rows the run it resumes would have.

A row that ends without saying (its round one failed: the run is stopping), an audited row that ends without
its round two, or a stop of the run (:meth:`SequentialAudit.halt`: rows it will not take would never say) leaves
the order broken: every candidate still waiting, and every later one, ends with
:class:`council.grading.stop.Stopped`, and the resume decides them again.

Within an audited row the audit is sequential too (:func:`audit_round_two`, a correct / incorrect row of a run
whose ``deliberation_audit_stop`` is above 0): what the audit measures of a row is whether its verdict would
change had round two counted, and that is often decided before the whole panel has answered (on a panel of five,
three members that keep their verdict). So the row asks its members in waves, its cheapest votes first, each
wave the fewest that could decide it (:func:`council.protocol.deliberation.audit_wave`), until it is decided:
the same answer as with the whole panel asked. A member whose vote fails ends the row (incomplete, as scoring
counts it). The waves follow the votes and a fixed order (by the config's prices), so a resumed run asks the same.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import aggregator as agg
from council.core.schema import BankItem, JudgeCallRecord, MemberSpec
from council.grading.stop import Stopped
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import (
    CODE, audit_change, audit_first_slice, audit_wave, changed_levels, changed_verdicts, keep_auditing, next_slice_end,
)
from council.transport.judge import JudgeTask



@dataclass
class _Slice:
    size: int
    finished: int = 0  # candidates of the slice whose audit is over
    decision: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class SequentialAudit:
    """Which candidates of one run's deliberation audit are audited, for the threshold ``stop`` (> 0)."""

    def __init__(self, stop: float) -> None:
        if stop <= 0.0:
            raise ValueError("a sequential audit needs a threshold above 0")
        self.stop_at = stop
        self._ends = [audit_first_slice(stop)]  # where each slice ends, in candidates
        self._said: dict[int, bool | None] = {}  # rows past the frontier that have said (None: ended without)
        self._frontier = 0  # the first row not yet passed: every row before it has said
        self._candidates = 0  # candidates before the frontier
        self._index: dict[int, asyncio.Future[int]] = {}  # a candidate's index, once the frontier passes it
        self._slices: list[_Slice] = []
        self._open: dict[int, int] = {}  # audited rows whose round two is not in: seq -> index
        self._broken = False
        self.audited = 0  # candidates audited
        self.rows = 0  # audited rows whose round two is complete
        self.changed = 0  # of those, rows whose verdict round two would have changed
        self.stopped = False  # a slice was not audited: no later candidate is

    # -- the order --------------------------------------------------------------------------------------------
    def known(self, seq: int, candidate: bool | None) -> None:
        """Row ``seq`` has its round one: whether it is a candidate (None: it ended without, the run stopping)."""
        if seq < self._frontier or seq in self._said:
            return
        self._said[seq] = candidate
        if candidate:
            self._index.setdefault(seq, asyncio.get_running_loop().create_future())
        while self._frontier in self._said:
            said = self._said.pop(self._frontier)
            if said is None:
                self._break()
                return
            if said:
                future = self._index.get(self._frontier)
                if future is not None and not future.done():
                    future.set_result(self._candidates)
                self._candidates += 1
            self._frontier += 1

    def ended(self, seq: int) -> None:
        """Row ``seq`` is over (however it ended): one that never said, or an audited one without its round two,
        breaks the order."""
        if seq >= self._frontier and seq not in self._said:
            self.known(seq, None)
        if self._open.pop(seq, None) is not None:
            self._break()

    async def decide(self, seq: int) -> bool:
        """Whether the candidate ``seq`` (which has said so) is audited; it waits for the rows before it."""
        future = self._index.get(seq)
        if self.stopped:  # every candidate not yet decided is in a slice after the last audited one
            self._index.pop(seq, None)
            return False
        self._raise_if_broken()
        if future is None:
            raise AssertionError(f"row {seq} has not said it is a candidate")
        try:
            index = await future
        finally:
            self._index.pop(seq, None)
        s = self._slice_of(index)
        audit = await self._slice(s).decision
        if audit:
            self._open[seq] = index
            self.audited += 1
        return audit

    def done(self, seq: int, complete: bool, changed: bool) -> None:
        """The audited row ``seq`` has its round two: ``complete`` (every member's vote in, none failed), and
        whether the row's verdict would have ``changed`` had it counted."""
        index = self._open.pop(seq)
        if complete:
            self.rows += 1
            self.changed += changed
        s = self._slice_of(index)
        self._slice(s).finished += 1
        self._settle(s)

    # -- slices -----------------------------------------------------------------------------------------------
    def _slice_of(self, index: int) -> int:
        while self._ends[-1] <= index:
            self._ends.append(next_slice_end(self._ends[-1]))
        return bisect.bisect_right(self._ends, index)

    def _slice(self, s: int) -> _Slice:
        while len(self._slices) <= s:
            k = len(self._slices)
            self._slices.append(_Slice(self._ends[k] - (self._ends[k - 1] if k else 0)))
            if self._broken:
                self._fail(self._slices[k].decision)
            elif k == 0:
                self._slices[0].decision.set_result(True)
            elif self.stopped:
                self._slices[k].decision.set_result(False)
            else:
                self._settle(k - 1)
        return self._slices[s]

    def _settle(self, s: int) -> None:
        """Decide the slice after ``s`` once every row of ``s`` is audited."""
        done = self._slices[s]
        if s + 1 >= len(self._slices) or self._slices[s + 1].decision.done():
            return
        if not done.decision.done() or (done.decision.result() and done.finished < done.size):
            return
        go = done.decision.result() and keep_auditing(self.stop_at, self.changed, self.rows)
        self.stopped = self.stopped or not go
        self._slices[s + 1].decision.set_result(go)
        self._settle(s + 1)

    # -- a broken order ---------------------------------------------------------------------------------------
    def halt(self) -> None:
        """The run is stopping: no candidate waits any more (the decisions made so far stand)."""
        self._break()

    def _raise_if_broken(self) -> None:
        if self._broken:
            raise Stopped("the deliberation audit's order was broken (the run is stopping)")

    def _break(self) -> None:
        self._broken = True
        for future in [*self._index.values(), *(s.decision for s in self._slices)]:
            self._fail(future)
        self._index.clear()

    @staticmethod
    def _fail(future: asyncio.Future) -> None:
        if not future.done():
            future.set_exception(Stopped("the deliberation audit's order was broken (the run is stopping)"))
            future.exception()  # retrieved: a future no one awaits any more is not reported


# -- within an audited row ------------------------------------------------------------------------------------


def _code(record: JudgeCallRecord | None) -> int:
    return agg.MISSING if record is None or record.parse_status == "error" else CODE.get(record.verdict, agg.MISSING)


async def audit_round_two(votes: Sequence[tuple[MemberSpec, JudgeTask]],
                          ask: Callable[[MemberSpec, JudgeTask], Awaitable[JudgeCallRecord]],
                          cost: Callable[[MemberSpec, JudgeTask], float], round1: dict[str, JudgeCallRecord],
                          quorum: int) -> list[JudgeCallRecord]:
    """The round-two votes of a correct / incorrect audit row (``votes``: its panel's, each member's task), asked in
    waves until they decide whether the row's verdict would change (see the module's docstring): the cheapest
    first by ``cost``, ties in panel order. A failed vote ends the row."""
    first = np.array([_code(round1.get(m.vendor)) for m, _ in votes], dtype=np.int8)
    second = np.full(len(votes), agg.MISSING, dtype=np.int8)
    open_ = np.ones(len(votes), dtype=bool)
    order = sorted(range(len(votes)), key=lambda j: (cost(*votes[j]), j))
    out: list[JudgeCallRecord] = []
    while open_.any():
        wave = audit_wave(first, second, open_, [j for j in order if open_[j]], quorum)
        results = await asyncio.gather(*(ask(*votes[j]) for j in wave), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        for j, record in zip(wave, results, strict=True):
            second[j], open_[j] = _code(record), False
            out.append(record)
        if any(r.parse_status == "error" for r in results) or audit_change(first, second, open_, quorum) is not None:
            break
    return out


def audit_outcome(config: CouncilConfig, item: BankItem, members: list[MemberSpec],
                  round1: dict[str, JudgeCallRecord], round2: list[JudgeCallRecord]) -> tuple[bool, bool]:
    """(complete, changed) of an audit row: every member asked answered (none failed) and, on a correct / incorrect
    row, those answers decide whether its verdict would change whatever the members not asked would say (a graded
    item asks its whole panel); and whether its verdict (a graded item's council level on some dimension) would
    change had round two counted, by the rule scoring counts the audit's changes with
    (:func:`council.protocol.deliberation.changed_verdicts`)."""
    second = {r.member: r for r in round2}
    seated = {m.vendor for m in members}
    columns = [m.vendor for m in config.roster]
    answered = all(r.parse_status != "error" for r in round2)
    if item.scale is None:
        first = np.array([_code(round1.get(v)) if v in seated else agg.MISSING for v in columns], dtype=np.int8)
        then = np.array([_code(second.get(v)) if v in seated else agg.MISSING for v in columns], dtype=np.int8)
        open_ = np.array([v in seated and v not in second for v in columns], dtype=bool)
        decided = audit_change(first, then, open_, config.quorum) is not None
        return answered and decided, bool(changed_verdicts(first[None], then[None], config.quorum)[0])
    complete = answered and all(m.vendor in second for m in members)
    names = item.scale.names
    levels = [[[[float((r[v].scores or {}).get(d, "nan")) if v in seated and v in r else float("nan")
                 for d in names] for v in columns]] for r in (round1, second)]
    return complete, bool(changed_levels(np.stack(levels, axis=-1), config.quorum)[0])
