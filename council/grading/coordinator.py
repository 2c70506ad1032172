"""The two-round coordinator: drives every row through a blind round one and an anonymised round two.

Rounds are pipelined per row: a row's round two starts as soon as its own round one is complete, while
other rows are still in round one. There is no run-wide barrier. Each vote's record goes to the archive
(``on_record``) the moment it returns, before the row moves on. A run with a vendor on a batch API, whose rows wait
minutes or hours for their votes, parks each row in flight on disk instead of holding it in a coroutine
(:mod:`council.grading.parked`), through the same steps.

A vote already in the archive is not asked again: a resumed run passes the votes it had archived
(matched by row, member, round and request key), and ``--reuse-from`` passes another run's votes (matched
by request key alone; the copy is archived with ``reused_from``).

With ``--deliberate disputed`` round two is sent only on a row whose round one is disputed, or that the
deliberation audit takes (:class:`council.protocol.deliberation.Rule`); the others end after round one. The audit
is sequential (:class:`council.grading.sequential.SequentialAudit`) when one :meth:`Coordinator.run` grades the
whole run; rows graded apart (:meth:`Coordinator.grade_row` alone, a shard's chunks) and a run through a batch
API audit every candidate. Each member's round two is laid out by
:func:`council.protocol.deliberation.round_two_layout`: a follow-up of round one's conversation only where a
prompt cache serves the repeat (sent alone, as round one was, or as round one's request again), else one new
message.

Each row's panel is the protocol's (self-exclusion, reserves filling emptied seats). A row too large for
the limits or a judge's context is refused before any call. ``--batch-audit`` re-asks a seeded sample of
batched votes alone in the background. A stop (signal, budget, a vendor that cannot be used) ends the
taking of new work; work in flight gets the grace period, then is abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from council.core.errors import ProviderUnavailable
from council.core.schema import BankItem, ElicitedRecord, JudgeCallRecord, MemberSpec, ResponseRow, Scale
from council.grading.budget import Budget, BudgetExhausted
from council.grading.parked import ParkedRows
from council.grading.pools import JudgePool
from council.grading.sequential import SequentialAudit, audit_outcome, audit_round_two
from council.grading.stop import StopControl, Stopped
from council.protocol.anonymise import Anonymiser
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Role, Rule, disputed, disputed_levels, round_two_layout, sampled
from council.protocol.panels import eligible_members, peers_for, row_order
from council.protocol.prompts import (
    CACHED_VERSION, CONVERSATION_VERSION, round1_body, round2_body, rubric_hash, single_messages,
)
from council.transport.judge import JudgeTask
from council.transport.quota import estimate_tokens
from council.transport.tickets import Receiver, send
from council.transport.shape import reasoning_headroom, vote_key
from elicitor.prompts import elicit_messages

R = TypeVar("R", JudgeCallRecord, ElicitedRecord)
VoteKey = tuple[str, str, int]  # (row_id, member, round)
NO_LETTERS: dict[str, str] = {}  # round one's peer letters, shared by its tasks: never written to


class ArchivedVotes(Protocol):
    """The archived result of a vote, if any: a dict, or the run folder's index that reads it back from disk."""

    def get(self, key: VoteKey, /) -> JudgeCallRecord | None: ...


class Coordinator:
    def __init__(
        self,
        config: CouncilConfig,
        items: dict[str, BankItem],
        pool: JudgePool,
        on_record: Callable[[JudgeCallRecord], None],
        *,
        on_row_done: Callable[[ResponseRow], None] | None = None,
        extra_names: Iterable[str] = (),
        archived: ArchivedVotes | None = None,
        reusable: dict[str, tuple[str, JudgeCallRecord]] | None = None,
        budget: Budget | None = None,
        on_elicited: Callable[[ElicitedRecord], None] | None = None,
        archived_elicited: dict[str, ElicitedRecord] | None = None,
        audited: set[VoteKey] | None = None,
        stop: StopControl | None = None,
        on_refused: Callable[[ResponseRow, str], None] | None = None,
        on_row_graded: Callable[[ResponseRow, list[JudgeCallRecord], bool], None] | None = None,
        sequential_audit: bool = True,
        scratch_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.items = items
        self._pool = pool
        self._on_record = on_record
        self._on_row_done = on_row_done
        self._archived = archived or {}
        self._reusable = reusable or {}
        self.budget = budget or Budget(None)
        self._on_elicited = on_elicited
        self._archived_elicited = archived_elicited or {}
        # round two's anonymiser: the roster's vendors and judge models, and the rows' models and vendors
        self._scrub = Anonymiser([*config.roster_vendors, *(m.judge_model for m in config.roster), *extra_names])
        self.issued = 0
        self.served_from_archive = 0
        self._audited = set(audited or ())  # votes whose batch audit is archived or under way
        self.stop = stop or StopControl()
        self._on_refused = on_refused
        self._on_row_graded = on_row_graded  # a row's records once both rounds are in (and whether it was refused)
        self.abandoned = 0  # rows or answers whose calls were still in flight when the grace period ended
        self.error: ProviderUnavailable | None = None
        self._audits: set[asyncio.Task[None]] = set()
        self._deliberation = Rule.of(config)  # which rows get round two (``--deliberate``, its audit)
        rule = self._deliberation
        # False: every candidate is audited (a shard's chunks are graded apart, in no one order; a batch API would
        # hold each slice of the audit for a batch's turnaround)
        self._sequential = (sequential_audit and not config.batching and rule.mode == "disputed"
                            and rule.audit_share > 0 and rule.audit_stop > 0)
        self.deliberation_audit: SequentialAudit | None = None  # the run's, while run() grades in order
        self._scratch_dir = scratch_dir  # where a batch run parks its rows in flight (None: the system's temp folder)
        self._parked: ParkedRows | None = None
        self._parked_calls = 0
        self.stop.on_request(lambda: self._parked is not None and self._parked.stopping())

    def note_audited(self, keys: Iterable[VoteKey]) -> None:
        """Votes whose batch audit is already archived (a shard learns them chunk by chunk)."""
        self._audited.update(keys)

    async def run(self, rows: Iterable[ResponseRow]) -> None:
        """Grade every row; at most ``config.rows_in_flight`` rows are in progress at once. A budget that
        runs out stops new rows; the votes in flight finish and are archived."""
        order = self._ordered()
        with heap_frozen():
            if order is None and self.config.batching:
                await self._grade_parked(item_major(rows))
            elif order is None:
                await self._work(item_major(rows), self.grade_row)
            else:
                await self._work(enumerate(item_major(rows)), self._grade_in_order)
            await self._finish_audits()

    async def _grade_parked(self, rows: Iterator[ResponseRow]) -> None:
        """Rows parked on disk while their votes wait (a batch run). The calls in progress at once (a shard worker's
        chunks) share one :class:`ParkedRows`, closed when the last one ends."""
        if self._parked is None:
            self._parked = ParkedRows(self, self._scratch_dir)
        parked = self._parked
        self._parked_calls += 1
        try:
            await parked.grade(rows)
        finally:
            self._parked_calls -= 1
            if not self._parked_calls:
                self._parked = None
                await parked.close()

    def _ordered(self) -> SequentialAudit | None:
        """The run's sequential deliberation audit, begun (None where every candidate is audited)."""
        self.deliberation_audit = SequentialAudit(self._deliberation.audit_stop) if self._sequential else None
        if self.deliberation_audit is not None:  # a stopping run takes no more rows: no candidate waits for one
            self.stop.on_request(self.deliberation_audit.halt)
        return self.deliberation_audit

    async def _grade_in_order(self, numbered: tuple[int, ResponseRow]) -> None:
        seq, row = numbered
        try:
            await self.grade_row(row, seq=seq)
        finally:
            assert self.deliberation_audit is not None
            self.deliberation_audit.ended(seq)

    async def run_elicited(self, tasks: list) -> list[ResponseRow]:  # noqa: ANN001 - ElicitTasks
        """Ask the models under test, then grade each answer as soon as it arrives (no barrier between
        elicitation and grading). Answers that were truncated or empty are archived, never graded."""
        rows: dict[str, ResponseRow] = {}
        audit = self._ordered()

        async def one(numbered) -> None:  # noqa: ANN001 - (its place, an ElicitTask)
            seq, task = numbered
            try:
                record = self._archived_elicited.get(task.row_id)
                if record is None or record.error is not None:
                    record = await self._elicit(task)
                if record.gradable:
                    row = ResponseRow.model_validate(
                        {"row_id": record.row_id, "item_id": record.item_id, "model": record.model,
                         "vendor": record.vendor, "response": record.answer or "", "confidence": record.confidence,
                         "abstained": record.abstained},
                        context={"vendor_map": self.config.vendor_map})
                    rows[row.row_id] = row
                    await self.grade_row(row, seq=None if audit is None else seq)
                elif audit is not None:
                    audit.known(seq, False)  # never graded: not a candidate
            finally:
                if audit is not None:
                    audit.ended(seq)

        order = [t.row_id for t in tasks]
        with heap_frozen():
            await self._work(enumerate(tasks), one)
            await self._finish_audits()
        return [rows[r] for r in order if r in rows]

    async def _work(self, source: Iterator, handle: Callable) -> None:
        """Run ``handle`` over ``source`` with up to ``in_flight`` workers until done, or until the budget is
        exhausted or a stop is requested: then nothing new starts, work in flight gets ``stop.grace_s`` to
        finish (its records are archived as they return) and whatever is still waiting after that is
        abandoned. A vendor that cannot be used at all stops the run.

        Workers are started as they are needed: each one, having taken a row, starts the next (up to
        ``in_flight``), so a run of a few rows holds a few workers, not ``in_flight`` of them (50,000 idle tasks
        when a vendor batches)."""
        workers: set[asyncio.Task[None]] = set()
        ended = asyncio.get_running_loop().create_future()
        limit = self.config.in_flight
        running = 0

        def start() -> None:
            nonlocal running
            task = asyncio.create_task(worker())
            workers.add(task)
            running += 1
            task.add_done_callback(finished)

        def finished(task: asyncio.Task[None]) -> None:
            nonlocal running
            running -= 1
            if not task.cancelled() and task.exception() is not None and not ended.done():
                ended.set_exception(task.exception())
            if not running and not ended.done():
                ended.set_result(None)

        async def worker() -> None:
            for thing in source:  # workers share one iterator: each is taken exactly once
                if self.budget.exhausted or self.stop.requested:
                    return
                if len(workers) < limit:
                    start()
                try:
                    await handle(thing)
                except (BudgetExhausted, Stopped, ProviderUnavailable) as exc:
                    self.stopped_by(exc)
                    return

        start()
        stopping = asyncio.create_task(self.stop.wait())
        try:
            await asyncio.wait({ended, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not ended.done():
                try:
                    await asyncio.wait_for(asyncio.shield(ended), self.stop.grace_s)
                except TimeoutError:
                    self.abandoned += sum(not w.done() for w in workers)
                    for w in workers:
                        w.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)
            else:
                ended.result()
        finally:
            stopping.cancel()

    def stopped_by(self, exc: BudgetExhausted | Stopped | ProviderUnavailable) -> None:
        """What a row's failure means for the run: a spent budget or a vendor that cannot be used stops it (the
        vendor's error kept); a stop is already under way."""
        if isinstance(exc, BudgetExhausted):
            self.stop.request("budget")
        elif isinstance(exc, ProviderUnavailable):
            self.error = self.error or exc
            self.stop.request("error", str(exc))

    async def _elicit(self, task) -> ElicitedRecord:  # noqa: ANN001
        out = self.config.elicit_max_tokens + reasoning_headroom(task.model, task.vendor, self.config.judge)
        record = await self._paid(lambda: elicit_messages(task.prompt), out, task.model, task.vendor,
                                  lambda: self._pool.elicit(task.vendor, task))
        if self._on_elicited is not None:
            self._on_elicited(record)
        return record

    def _projected(self, messages: Callable[[], list[dict[str, str]]], max_tokens: int, model: str,
                   vendor: str) -> float:
        """A call's projected cost (its prompt plus its output bound); nothing to work out without a budget."""
        if self.budget.limit_usd is None:
            return 0.0
        price_in, price_out = self.config.price_for(model, vendor)
        return (estimate_tokens(messages(), 0) * price_in + max_tokens * price_out) / 1e6

    def vote_cost(self, member: MemberSpec, task: JudgeTask) -> float:
        """A vote's cost at its output bound, budget or not (the audit asks its cheapest votes first)."""
        price_in, price_out = self.config.price_for(member.judge_model, member.vendor)
        return estimate_tokens(single_messages(task.round, task.body), 0) * price_in + self._out(member) * price_out

    def refusal(self, item: BankItem, row: ResponseRow, members: list[MemberSpec]) -> str | None:
        """Why a row must not be sent at all: a response over ``max_response_chars``, or a round-two prompt
        (round one's plus the peers' reasons and the verdict) over some panel member's context window."""
        limit = self.config.max_response_chars
        if len(row.response) > limit:
            return f"response of {len(row.response):,} characters is over max_response_chars ({limit:,})"
        out = self.config.judge.max_tokens
        tokens = estimate_tokens(single_messages(1, round1_body(item, row)), out) + len(members) * out
        for m in members:
            context = self.config.settings(m.vendor).context_tokens
            if tokens > context:
                return f"prompt of about {tokens:,} tokens is over {m.vendor}'s context of {context:,} tokens"
        return None

    def seats(self, row: ResponseRow) -> tuple[BankItem, list[MemberSpec], list[MemberSpec]]:
        """The row's item, its panel and its shadow seats, by the protocol (before any refusal)."""
        item = self.items[row.item_id]
        members = eligible_members(row, self.config.roster, self.config.self_exclusion)
        shadows = ([m for m in self.config.roster if m.vendor == row.vendor and not m.reserve]
                   if self.config.shadow_self and members else [])
        return item, members, shadows

    def panel(self, row: ResponseRow) -> tuple[BankItem, list[MemberSpec], list[MemberSpec], str | None]:
        """:meth:`seats`, and why the row is refused, if it is (reported through ``on_refused``; its panel and shadow
        seats are then empty: never sent, the row is counted as not graded, with its reason)."""
        item, members, shadows = self.seats(row)
        refused = self.refusal(item, row, members) if members else None
        if refused is None:
            return item, members, shadows, None
        if self._on_refused is not None:
            self._on_refused(row, refused)
        return item, [], [], refused

    def graded(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        """A row is done: its records (round one's counted votes, then round two's) go to the hooks."""
        if self._on_row_graded is not None:
            self._on_row_graded(row, records, refused)
        if self._on_row_done is not None:
            self._on_row_done(row)

    async def grade_row(self, row: ResponseRow, *, seq: int | None = None) -> None:
        """Both rounds of ``row``; ``seq``: its place in the run's order (the sequential audit's), if it has one."""
        item, members, shadows, refused = self.panel(row)
        if members:
            first = _settled(await asyncio.gather(*(self._vote(m, t) for m, t in self.first(item, row, members, shadows)),
                                                  return_exceptions=True))
            round1 = {r.member: r for r in first if not r.shadow}  # a shadow vote is never shown to peers
            role = await self.role(item, row, members, round1, seq)
            if role == "audit" and item.scale is None and self._deliberation.audit_stop > 0:  # asked until decided
                round2 = await audit_round_two(self.seconds(item, row, members, round1), self._vote, self.vote_cost,
                                               round1, self.config.quorum)
            else:
                second = [] if role == "skipped" else self.seconds(item, row, members, round1)
                round2 = _settled(await asyncio.gather(*(self._vote(m, t) for m, t in second), return_exceptions=True))
            if role == "audit" and seq is not None and self.deliberation_audit is not None:
                self.deliberation_audit.done(seq, *audit_outcome(self.config, item, members, round1, round2))
            records = [*round1.values(), *round2]
        else:
            if seq is not None and self.deliberation_audit is not None:
                self.deliberation_audit.known(seq, False)  # never sent: not a candidate
            records = []
        self.graded(row, records, refused is not None)

    async def role(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
                    round1: dict[str, JudgeCallRecord], seq: int | None) -> Role:
        """What round two is on the row, from its round one (:class:`council.protocol.deliberation.Rule`): a
        candidate of the audit is audited if the run's sequential audit says so (it may wait for earlier rows),
        or always where rows are graded apart."""
        rule, audit = self._deliberation, self.deliberation_audit if seq is not None else None
        if rule.mode == "all" or round_one_disputed(item, members, round1):
            if audit is not None:
                audit.known(seq, False)
            return "deliberated"
        candidate = rule.candidate(row.row_id)
        if audit is None:
            return "audit" if candidate else "skipped"
        audit.known(seq, candidate)
        return "audit" if candidate and await audit.decide(seq) else "skipped"

    def first(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
              shadows: list[MemberSpec]) -> list[tuple[MemberSpec, JudgeTask]]:
        """The row's round-one votes: one blind prompt for every seat, its panel's and then its shadows'."""
        rubric = rubric_hash(item)
        body = round1_body(item, row, contain=self.config.judge.containment)
        return [(m, self.task(m, row, 1, body, NO_LETTERS, rubric, scale=item.scale, shadow=shadow))
                for m, shadow in [*((m, False) for m in members), *((m, True) for m in shadows)]]

    def seconds(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
                round1: dict[str, JudgeCallRecord]) -> list[tuple[MemberSpec, JudgeTask]]:
        """The row's round-two votes, one for each member of its panel (``round1``: member -> its round-one vote).
        Each member's is in the layout the rule gives it: a follow-up of a round one sent alone is sent alone, one
        of a round one sent with other rows goes out with them when they are all queued."""
        order = row_order(self.config.seed, row.row_id, [m.vendor for m in members])
        rubric, params = rubric_hash(item), self.config.judge
        out = []
        for m in members:
            own = round1[m.vendor]
            peers, letters, scrubbed = peers_for(m.vendor, order, round1, self._scrub)
            layout = round_two_layout(params.prompt_version, own, mode=self._deliberation.mode,
                                      contain=params.containment)
            body = round2_body(item, row, own.verdict, own.reason, peers, contain=params.containment,
                               own_scores=own.scores, version=layout)
            follow = layout == CONVERSATION_VERSION
            out.append((m, self.task(m, row, 2, body, letters, rubric, scale=item.scale, scrubbed=scrubbed,
                                     after=tuple(own.batch_rows) if follow else (),
                                     solo=follow and params.prompt_version == CACHED_VERSION
                                     and len(own.batch_rows) <= 1)))
        return out

    def task(self, member: MemberSpec, row: ResponseRow, round_: int, body: str, letters: dict[str, str],
             rubric: str, *, shadow: bool = False, scale: Scale | None = None, scrubbed: dict[str, int] | None = None,
             after: tuple[str, ...] = (), solo: bool = False) -> JudgeTask:
        """Member ``member``'s vote on ``row`` in ``round_``, as the judge is asked for it (its request key made)."""
        key = vote_key(member.judge_model, member.vendor, round_, body, self.config.judge)
        return JudgeTask(row.row_id, round_, body, letters, rubric_hash=rubric, request_key=key, item_id=row.item_id,
                         scale=scale, after=after, solo=solo, shadow=shadow, scrubbed=scrubbed or None)

    def known(self, member: MemberSpec, task: JudgeTask) -> JudgeCallRecord | None:
        """The vote's result without a call, if there is one: archived by this run (a resume), or another run's with
        the same request key (``--reuse-from``; the copy is archived here)."""
        archived = self._archived.get((task.row_id, member.vendor, task.round))
        if archived is not None and archived.request_key == task.request_key:
            self.served_from_archive += 1
            self._maybe_audit(member, archived, task)
            return archived
        reuse = self._reusable.get(task.request_key)
        if reuse is not None:
            source_run, record = reuse
            copy = record.model_copy(update={"row_id": task.row_id, "peer_letters": dict(task.peer_letters),
                                             "reused_from": source_run, "shadow": task.shadow})
            self._on_record(copy)
            self.served_from_archive += 1
            return copy
        return None

    def received(self, member: MemberSpec, task: JudgeTask, record: JudgeCallRecord) -> JudgeCallRecord:
        """A vote's answer, marked (a shadow vote, the names cut from the peers' reasons) and archived."""
        if task.shadow:
            record = record.model_copy(update={"shadow": True})
        if task.scrubbed:  # what the anonymiser cut from each peer's reason shown (archived: rescore counts it)
            record = record.model_copy(update={"peers_scrubbed": task.scrubbed})
        self._on_record(record)
        if not task.shadow:
            self._maybe_audit(member, record, task)
        return record

    async def _vote(self, member: MemberSpec, task: JudgeTask) -> JudgeCallRecord:
        known = self.known(member, task)
        if known is not None:
            return known
        return self.received(member, task, await self._ask(member, task))

    def _send(self, member: MemberSpec, task: JudgeTask) -> Awaitable[JudgeCallRecord]:
        self.issued += 1
        return self._pool.submit(member.vendor, task)

    def _out(self, member: MemberSpec) -> int:
        """A judge call's output bound (a reasoning judge's holds its reasoning too)."""
        params = self.config.judge
        return params.max_tokens + reasoning_headroom(member.judge_model, member.vendor, params)

    async def _ask(self, member: MemberSpec, task: JudgeTask) -> JudgeCallRecord:
        """One judge call through the pool (see :meth:`_paid`)."""
        return await self._paid(lambda: single_messages(task.round, task.body), self._out(member),
                                member.judge_model, member.vendor, lambda: self._send(member, task))

    async def reserve(self, member: MemberSpec, task: JudgeTask) -> float:
        """The cost reserved for a vote about to be sent by ticket (:meth:`send`), which the caller settles once its
        answer is in; none once the run is stopping (:class:`Stopped`)."""
        return await self._reserve(lambda: single_messages(task.round, task.body), self._out(member),
                                   member.judge_model, member.vendor)

    def send(self, member: MemberSpec, task: JudgeTask, ticket: int, receiver: Receiver) -> None:
        """The vote sent without waiting for its answer, which ``receiver`` is handed by ``ticket``
        (:mod:`council.transport.tickets`)."""
        self.issued += 1
        send(self._pool, member.vendor, task, ticket, receiver)

    async def _reserve(self, messages: Callable[[], list[dict[str, str]]], max_tokens: int, model: str,
                       vendor: str) -> float:
        if self.stop.requested:
            raise Stopped(f"run stopping ({self.stop.reason})")
        projected = self._projected(messages, max_tokens, model, vendor)
        await self.budget.reserve(projected)
        return projected

    async def _paid(self, messages: Callable[[], list[dict[str, str]]], max_tokens: int, model: str, vendor: str,
                    call: Callable[[], Awaitable[R]]) -> R:
        """One paid call, its projected cost held against the budget meanwhile (given back if the call
        fails); none once the run is stopping."""
        projected = await self._reserve(messages, max_tokens, model, vendor)
        try:
            record = await call()
        except BaseException:
            await self.budget.settle(projected, 0.0)
            raise
        await self.budget.settle(projected, record.cost_usd)
        return record

    # -- batch audit ----------------------------------------------------------------------------------------
    def _maybe_audit(self, member: MemberSpec, record: JudgeCallRecord, asked: JudgeTask) -> None:
        """Re-ask a seeded sample (``config.batch_audit``) of batched votes alone, in the background; the
        solo vote is archived with ``audit_of`` and never counted."""
        key = (asked.row_id, member.vendor, record.round)
        if (record.batch_size < 2 or record.verdict is None or key in self._audited
                or not audit_sampled(self.config.seed, key, self.config.batch_audit)):
            return
        self._audited.add(key)
        task = JudgeTask(asked.row_id, record.round, asked.body, asked.peer_letters, rubric_hash=asked.rubric_hash,
                         request_key=record.request_key, item_id=asked.item_id, solo=True)

        async def audit() -> None:
            try:
                solo = await self._ask(member, task)
            except (BudgetExhausted, Stopped, ProviderUnavailable):
                return  # an audit never stops a run, and is not asked once it is stopping
            self._on_record(solo.model_copy(update={"audit_of": record.request_id}))

        job = asyncio.create_task(audit())
        self._audits.add(job)
        job.add_done_callback(self._audits.discard)

    async def _finish_audits(self) -> None:
        while self._audits:
            pending = list(self._audits)
            if self.stop.requested:  # audits in flight get the grace period, like votes
                _, late = await asyncio.wait(pending, timeout=self.stop.grace_s)
                for task in late:
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)
                return
            await asyncio.gather(*pending)


_frozen = 0
_frozen_lock = threading.Lock()
_thresholds = gc.get_threshold()
YOUNG_THRESHOLD = 20_000  # net allocations between young collections while a run grades (the default: 700)


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """While a run grades, what was alive before it (modules, the bank, the config...) is left out of the
    garbage collector's passes (``gc.freeze``) and young collections are rarer (:data:`YOUNG_THRESHOLD`);
    both are put back when the last grading run of the process ends.

    A vote's objects live while its call is in flight, so at the default threshold many outlive two young
    collections and reach the oldest generation before they are freed; the full passes they set off walked
    the whole heap each time, and the young ones walked every vote in flight (together about 40% of the
    coordinator's time on a fast provider). With rarer young collections most of a vote's objects are freed
    by reference counting before any pass sees them. Objects are still freed when no longer referenced;
    only garbage cycles wait longer (those frozen, until the end of the run)."""
    global _frozen, _thresholds
    with _frozen_lock:
        if _frozen == 0:
            gc.freeze()
            _thresholds = gc.get_threshold()
            if _thresholds[0]:  # 0: automatic collection is off, and stays off
                gc.set_threshold(max(_thresholds[0], YOUNG_THRESHOLD), *_thresholds[1:])
        _frozen += 1
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen -= 1
            if _frozen == 0:
                gc.set_threshold(*_thresholds)
                gc.unfreeze()


ITEM_WINDOW = 2048  # rows read ahead to send the answers to one item together


def item_major(rows: Iterable[ResponseRow], window: int = ITEM_WINDOW) -> Iterator[ResponseRow]:
    """``rows`` with the answers to one item brought together, within windows of ``window`` rows (items in the
    order they first appear, rows of an item in input order). A judge's prompts on one item all begin with the
    same question, reference and rubric, so sent one after another they share a prefix a provider's prompt cache
    serves; a file ordered by model would otherwise spread them over the whole run. The window keeps a large
    file streamed."""
    source = iter(rows)
    while chunk := list(itertools.islice(source, window)):
        groups: dict[str, list[ResponseRow]] = {}
        for row in chunk:
            groups.setdefault(row.item_id, []).append(row)
        for group in groups.values():
            yield from group


def audit_sampled(seed: int, key: VoteKey, fraction: float) -> bool:
    """Whether the vote ``key`` is in the batch audit's seeded sample of ``fraction`` of the votes."""
    return sampled("audit", seed, key, fraction)


def round_one_disputed(item: BankItem, members: list[MemberSpec], round1: dict[str, JudgeCallRecord]) -> bool:
    """Whether the row's round one (``round1``: member -> its vote) is disputed, by the protocol's rule
    (:mod:`council.protocol.deliberation`): on the verdicts, or on a graded item's levels."""
    votes = [round1[m.vendor] for m in members]
    if item.scale is not None:
        return disputed_levels([v.scores if v.parse_status != "error" else None for v in votes], item.scale.names)
    return disputed([v.verdict if v.parse_status != "error" else None for v in votes])


def _settled(results: list) -> list[JudgeCallRecord]:
    """Results of a gather in which every vote was left to finish; the first failure is raised after all."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
