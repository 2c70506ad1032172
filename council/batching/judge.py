"""A council member's judge on the batch transport: the votes it is asked for go out in the provider's batches.

Same face as :class:`council.transport.judge.Judge` (``submit`` returns a future of the vote's record), so the
coordinator, and with it every rule of the protocol, does not know which transport a vendor uses.

Requests are made as the synchronous judge makes them: when a batch is cut, the waiting votes of one round are
packed up to ``max_batch`` rows a request (:func:`council.transport.judge.take_batch`: never two answers to the
same item, a ``solo`` or graded vote alone, a judge-v3 round two with its round-one request's rows), their
messages made by :func:`council.transport.judge.request_for` and their answers read by the same parsers; each vote
records its request's rows (``batch_rows``) and the request's usage is split among the votes it answered. An
unparseable answer gets one repair request, in a later batch, as a chat call gets one repair call; a row the
answer leaves out is asked again alone. Two votes with the same prompt waiting for the same cut share one request
and split its usage. A request lost for good or refused by the provider is an error record for each of its votes,
as a chat call's would be (asked again by a resume). Votes are charged at the batch rates, and a request sent
again as a chat call at the chat rates.

While a vote waits, the judge holds its task (which the coordinator holds anyway) and its future, in a list of its
request; nothing of its prompt is made until its batch is written to disk. A resumed run's vote whose request an
earlier process sent is read from that request's answer (:meth:`BatchSender.held`).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections import deque
from typing import Any

from council.batching.api import BatchApi
from council.batching.journal import Journal
from council.batching.sender import BatchSender, BatchStats
from council.core.schema import JudgeCallRecord, MemberSpec, ParseStatus, Usage
from council.protocol.config import BatchSettings, JudgeParams, VendorSettings
from council.protocol.parsing import parse_batch, read_batch
from council.protocol.prompts import repair_messages
from council.transport.batch_formats import BatchError, BatchOutcome
from council.transport.judge import (BATCH_OVERHEAD_CHARS, Call, Judge, JudgeTask, fail_queued, read_vote,
                                     request_for, split_usage, take_batch, vote_record)
from council.transport.shape import RequestShape, plain
from council.transport.wire import Reply

REPAIR = "-repair"  # the custom id of a request's repair: its own, with this after it

_Entry = tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]


class _Pack:
    """One request: the votes of its rows in key order (``tasks``, ``futures``; a position of a resumed request
    whose vote no one waits for is None), with the votes of the same prompt that share it (``more``), and what its
    answers brought so far. It is what the sender sends (:class:`council.batching.sender.Request`)."""

    __slots__ = ("judge", "round", "tasks", "futures", "more", "custom_id", "tokens", "sends", "rebuildable",
                 "rows", "first", "replies", "call", "started")

    def __init__(self, judge: BatchJudge, round_: int, tasks: list[JudgeTask | None],
                 futures: list[asyncio.Future[JudgeCallRecord] | None], custom_id: str, *,
                 rebuildable: bool = True, rows: list[str] | None = None, first: str | None = None) -> None:
        self.judge = judge
        self.round = round_
        self.tasks = tasks
        self.futures = futures
        self.more: dict[int, list[_Entry]] | None = None
        self.custom_id = custom_id
        self.tokens = 0
        self.sends = 0
        self.rebuildable = rebuildable
        self.rows = rows  # a resumed request's rows (its tasks are those of the votes waiting now)
        self.first = first  # the first answer, once a repair is asked
        self.replies: list[tuple[Usage, tuple[float, ...]]] = []  # each answer's usage and the rates it is paid at
        self.call: Call | None = None
        self.started = time.perf_counter()

    @property
    def size(self) -> int:
        return len(self.tasks)

    def entries(self, position: int) -> list[_Entry]:
        """The votes waiting on ``position``: its own, then those sharing it."""
        task, future = self.tasks[position], self.futures[position]
        own = [(task, future)] if task is not None and future is not None else []
        return own + ((self.more or {}).get(position) or [])

    def share(self, position: int, entry: _Entry) -> None:
        self.more = self.more or {}
        self.more.setdefault(position, []).append(entry)

    def build(self) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        tasks: list[JudgeTask] = self.tasks  # type: ignore[assignment]  # a request made here has every task
        messages, max_tokens, response_format = request_for(self.judge.params, self.round, tasks)
        if self.first is not None:
            messages = repair_messages(messages, self.first)
        return messages, max_tokens, response_format

    def members(self) -> list[tuple[str, str]]:
        return [(t.request_key, t.row_id) for t in self.tasks if t is not None]

    def done(self, outcome: BatchOutcome, batch_id: str | None) -> None:
        self.judge._answered(self, outcome, batch_id)

    def fail(self, exc: BaseException) -> int:
        failed = 0
        for position in range(self.size):
            for _, future in self.entries(position):
                if not future.done():
                    future.set_exception(exc)
                    failed += 1
        return failed


class BatchJudge:
    def __init__(self, member: MemberSpec, params: JudgeParams, api: BatchApi, journal: Journal, *,
                 settings: VendorSettings, batch: BatchSettings, prices: tuple[float, ...],
                 fallback: Judge | None = None, shape: RequestShape | None = None) -> None:
        self.member = member
        self.params = params
        self.prices = prices
        self.fallback = fallback
        self.max_batch = settings.max_batch
        self.shape = shape or plain(member.judge_model, params.temperature)  # the seat's requests (its pool's)
        self._queues: dict[int, deque[_Entry]] = {1: deque(), 2: deque()}
        self._waiting = 0
        self._resumed: dict[str, _Pack] = {}  # requests of an earlier process, by custom id, until answered
        self.sender = BatchSender(member.vendor, self.shape, api, journal, settings=settings, batch=batch,
                                  fallback=fallback, source=self._take, waiting=self._requests_waiting)

    @property
    def vendor(self) -> str:
        return self.member.vendor

    @property
    def stats(self) -> BatchStats:
        return self.sender.stats

    def submit(self, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        future: asyncio.Future[JudgeCallRecord] = asyncio.get_running_loop().create_future()
        held = self.sender.held(task.request_key)
        if held is not None and not ((task.solo or task.scale is not None) and held[2]):
            self._resume(task, future, *held)
        else:
            self._queues[task.round].append((task, future))
            self._waiting += 1
            self.sender.wake()
        return future

    def cancel_queued(self, exc: BaseException) -> int:
        """A stop: every waiting vote fails at once. Those in an open batch are not lost: the journal holds it, and
        a resume polls it (their answer may be hours away, longer than a stop's grace period is worth)."""
        cancelled = fail_queued(self._queues.values(), exc)
        self._waiting = 0
        self._resumed.clear()
        return cancelled + self.sender.cancel(exc)

    async def close(self) -> None:
        await self.sender.close()

    def open_batches(self) -> list[dict[str, Any]]:
        return self.sender.open_batches()

    # -- making requests -------------------------------------------------------------------------------------------
    def _requests_waiting(self) -> int:
        return -(-self._waiting // self.max_batch)

    def _take(self, most: int) -> list[_Pack]:
        """Up to ``most`` requests of the waiting votes (round two first: it finishes rows), packed as the
        synchronous judge packs them; a vote whose prompt one of them already asks shares that request."""
        out: list[_Pack] = []
        asked: dict[str, tuple[_Pack, int]] = {}
        for round_ in (2, 1):
            queue = self._queues[round_]
            while queue and len(out) < most:
                taken = take_batch(queue, self.max_batch)
                self._waiting -= len(taken)
                own: list[_Entry] = []
                for task, future in taken:
                    if future.done():
                        continue
                    if task.request_key in asked:
                        pack, position = asked[task.request_key]
                        pack.share(position, (task, future))
                        self.stats.shared += 1
                    else:
                        own.append((task, future))
                if not own:
                    continue
                pack = _Pack(self, round_, [t for t, _ in own], [f for _, f in own],
                             _custom_id(own, self.sender.waited))
                pack.tokens = self._tokens(pack)
                for position, (task, _) in enumerate(own):
                    asked[task.request_key] = (pack, position)
                out.append(pack)
        self._waiting = max(0, self._waiting)
        self.stats.votes += sum(p.size for p in out)
        return out

    def _tokens(self, pack: _Pack) -> int:
        """The request's prompt and output bound in tokens, estimated from its bodies (its messages are not made
        before its batch is written)."""
        chars = sum(len(t.body) for t in pack.tasks if t is not None) + (BATCH_OVERHEAD_CHARS if pack.size > 1 else 0)
        bound = self.params.max_tokens if pack.size == 1 else 32 + 96 * pack.size
        return chars // 4 + bound + self.shape.headroom

    def _alone(self, entries: list[_Entry]) -> None:
        """Votes an answer left out (or a resumed request cannot give), asked again each alone."""
        for task, future in entries:
            if future.done():
                continue
            pack = _Pack(self, task.round, [task], [future], _custom_id([(task, future)], self.sender.waited))
            pack.tokens = self._tokens(pack)
            self.sender.add(pack)

    def _resume(self, task: JudgeTask, future: asyncio.Future[JudgeCallRecord], custom_id: str, position: int,
                rows: list[str]) -> None:
        """A vote that a request of an earlier process asked for: it waits on that request's answer."""
        pack = self._resumed.get(custom_id)
        if pack is None:
            size = max(1, len(rows))
            pack = self._resumed[custom_id] = _Pack(self, task.round, [None] * size, [None] * size, custom_id,
                                                    rebuildable=False, rows=rows)
            self.sender.add(pack)
        if pack.tasks[position] is None:
            pack.tasks[position], pack.futures[position] = task, future
        else:
            pack.share(position, (task, future))

    # -- reading answers -------------------------------------------------------------------------------------------
    def _answered(self, pack: _Pack, outcome: BatchOutcome, batch_id: str | None) -> None:
        """A request's outcome: its votes' records; an unparseable first answer gets a repair request, and rows
        left out are asked again alone. A request of an earlier process that cannot give its votes an answer (its
        batch is gone, or its repair was never sent) has them asked anew."""
        self._resumed.pop(pack.custom_id, None)
        resumed = not pack.rebuildable
        everyone = [e for p in range(pack.size) for e in pack.entries(p)]
        if resumed and isinstance(outcome, BatchError):
            self._alone(everyone)
            return
        call = pack.call = pack.call or Call(max_tokens=self._bound(pack), started=pack.started)
        if isinstance(outcome, BatchError):
            call.error = f"{self.vendor}: batch {batch_id}: {outcome.code}: {outcome.message}"
            self._records(pack, {}, "error", batch_id, every=True)
            return
        call.raws.append(outcome.content or "")
        call.finish, call.attempts = outcome.finish_reason, call.attempts + 1
        pack.replies.append((outcome.usage, self.prices if batch_id is not None or self.fallback is None
                             else self.fallback.prices))
        content = outcome.content or ""
        repaired = pack.first is not None or pack.custom_id.endswith(REPAIR)
        votes, status = self._read(pack, content, repaired)
        if votes is None:  # unparseable: one repair request, as a chat call gets one repair call
            repair = pack.custom_id + REPAIR
            if resumed and not self.sender.holds(repair):
                self._alone(everyone)
                return
            pack.first, pack.custom_id = content, repair
            pack.sends = 0  # a new request: its own sends, not the first answer's (it would be lost after one)
            if resumed:
                self._resumed[repair] = pack
            self.sender.add(pack)
            return
        if resumed:
            self.stats.read_again += len(everyone)
        self._records(pack, votes, status, batch_id)

    def _read(self, pack: _Pack, content: str, repaired: bool) -> tuple[dict[int, Any] | None, ParseStatus]:
        """A request's votes by key (1-based) and how they parsed, read as the synchronous judge reads an answer of
        one row or of several; None: a first answer nothing could be read from."""
        if pack.size == 1:
            task = next(t for t, _ in pack.entries(0))
            vote, status = read_vote(content, task.scale)
            if repaired:
                return ({1: vote} if vote is not None else {}), "repaired" if vote is not None else "unparseable"
            return ({1: vote} if vote is not None else None), status
        if repaired:
            return parse_batch(content, pack.size) or {}, "repaired"
        return read_batch(content, pack.size)

    def _records(self, pack: _Pack, votes: dict[int, Any], status: ParseStatus, batch_id: str | None, *,
                 every: bool = False) -> None:
        """Each vote's record. The request's usage is shared among the votes it answered (``every``: all, an error;
        a position of a resumed request no vote waits on now keeps the share its vote had); a single row that stayed
        unparseable is recorded so, and the votes of a position the answer left out are asked again alone, as the
        synchronous judge does."""
        call = pack.call
        assert call is not None
        answered = [p for p in range(pack.size) if every or pack.size == 1 or (p + 1) in votes]
        slots = [e for p in answered for e in (pack.entries(p) or [None])]
        parts = iter(_parts(pack.replies, len(slots)))
        rows = [t.row_id for t in pack.tasks if t is not None] if pack.rows is None else pack.rows
        rows = rows if pack.size > 1 else []
        request_id = uuid.uuid4().hex
        for position in answered:
            for entry in pack.entries(position) or [None]:
                usage, cost = next(parts)
                if entry is None:
                    continue
                task, future = entry
                record = vote_record(self.member, self.params, self.prices, task, votes.get(position + 1),
                                     status, call, request_id, rows, usage, batch_id=batch_id, cost_usd=cost,
                                     shape=self.shape)
                if not future.done():
                    future.set_result(record)
        self._alone([e for p in range(pack.size) if p not in answered for e in pack.entries(p)])

    def _bound(self, pack: _Pack) -> int:
        return self.params.max_tokens if pack.size == 1 else 32 + 96 * pack.size


def _parts(replies: list[tuple[Usage, tuple[float, ...]]], n: int) -> list[tuple[Usage, float]]:
    """A request's answers' usage shared among ``n`` votes (the parts add up to the whole), and each part's cost at
    the rates its answer is paid at."""
    out = [(Usage(), 0.0)] * n
    for usage, rates in replies:
        for i, part in enumerate(split_usage(usage, n) if n else []):
            total, cost = out[i]
            out[i] = (total + part, cost + part.cost_usd(*rates))
    return out


def _custom_id(entries: list[_Entry], taken: Any) -> str:
    """A request's custom id: its one vote's request key, or for several rows a hash of their keys (32 characters,
    as every provider takes); salted when ``taken`` (the ids waiting now) has it."""
    keys = [task.request_key for task, _ in entries]
    cid = keys[0] if len(keys) == 1 else hashlib.sha256("\x1f".join(keys).encode()).hexdigest()[:32]
    while cid in taken:
        cid = hashlib.sha256(f"{cid}\x1f{uuid.uuid4().hex}".encode()).hexdigest()[:32]
    return cid


def share_of(usage: Usage, share: tuple[int, int]) -> Usage:
    """Vote ``index``'s part of a request's usage shared by ``n`` votes (the parts add up to the whole); nothing
    when ``n`` is 0."""
    index, n = share
    if n == 0:
        return Usage()
    return usage if n == 1 else split_usage(usage, n)[index]
