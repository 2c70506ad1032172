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

While a vote waits, the judge holds one integer for it (:mod:`council.transport.tickets`): its sender (the parked
rows of a batch run, which keep it on disk; or the judge's own :class:`~council.transport.tickets.Futures`, for
``submit``) is asked for its task whenever the judge needs it (to pack it, to write its request, to read its answer)
and is handed its record by that integer. Nothing of its prompt is made until its batch is written to disk. A resumed
run's vote whose request an earlier process sent is read from that request's answer (:meth:`BatchSender.held`).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from array import array
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
from council.transport.judge import (BATCH_OVERHEAD_CHARS, Call, Judge, JudgeTask, read_vote, request_for, split_usage,
                                     take_batch, vote_record)
from council.transport.shape import RequestShape, plain
from council.transport.tickets import Entries, Futures, Receiver

TAKE_WINDOW = 256  # waiting votes a request's packing looks past (take_batch's window)
REPAIR = "-repair"  # the custom id of a request's repair: its own, with this after it
NONE = -1  # a position of a resumed request that no vote waits for now


class _Pack:
    """One request: the votes of its rows in key order (``entries``: each vote an integer, see
    :class:`council.transport.tickets.Entries`; :data:`NONE` for a position of a resumed request whose vote no one
    waits for), with the votes of the same prompt that share it (``more``), and what its answers brought so far. It is
    what the sender sends (:class:`council.batching.sender.Request`); its votes' tasks are asked of their senders
    whenever it needs them, never held."""

    __slots__ = ("judge", "round", "entries", "more", "custom_id", "tokens", "sends", "rebuildable", "rows", "first",
                 "replies", "call", "started", "_members")

    def __init__(self, judge: BatchJudge, round_: int, entries: array[int], custom_id: str, *,
                 rebuildable: bool = True, rows: list[str] | None = None, first: str | None = None) -> None:
        self.judge = judge
        self.round = round_
        self.entries = entries
        self.more: dict[int, list[int]] | None = None
        self.custom_id = custom_id
        self.tokens = 0
        self.sends = 0
        self.rebuildable = rebuildable
        self.rows = rows  # a resumed request's rows (its entries are those of the votes waiting now)
        self.first = first  # the first answer, once a repair is asked
        self.replies: list[tuple[Usage, tuple[float, ...]]] = []  # each answer's usage and the rates it is paid at
        self.call: Call | None = None
        self.started = time.perf_counter()
        self._members: list[tuple[str, str]] | None = None  # made with the body, until the journal takes them

    @property
    def size(self) -> int:
        return len(self.entries)

    def waiting(self, position: int) -> list[int]:
        """The votes waiting on ``position``: its own, then those sharing it."""
        entry = self.entries[position]
        own = [entry] if entry != NONE else []
        return own + ((self.more or {}).get(position) or [])

    def everyone(self) -> list[int]:
        return [e for p in range(self.size) for e in self.waiting(p)]

    def share(self, position: int, entry: int) -> None:
        self.more = self.more or {}
        self.more.setdefault(position, []).append(entry)

    def build(self) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        tasks = [self.judge._task(e) for e in self.entries]  # a request made here has every position's vote
        self._members = [(t.request_key, t.row_id) for t in tasks if t is not None]
        messages, max_tokens, response_format = request_for(self.judge.params, self.round, tasks)  # type: ignore[arg-type]
        if self.first is not None:
            messages = repair_messages(messages, self.first)
        return messages, max_tokens, response_format

    def members(self) -> list[tuple[str, str]]:
        """The (request key, row id) of its votes, as its body was just made (the journal takes them once)."""
        members, self._members = self._members, None
        assert members is not None, "a request's members are asked after its body is made"
        return members

    def done(self, outcome: BatchOutcome, batch_id: str | None) -> None:
        self.judge._answered(self, outcome, batch_id)

    def fail(self, exc: BaseException) -> int:
        everyone = self.everyone()
        self.entries = array("q", [NONE] * self.size)
        self.more = None
        for entry in everyone:
            self.judge._done(entry, None, exc)
        return len(everyone)


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
        self._queues: dict[int, array[int]] = {1: array("q"), 2: array("q")}  # waiting votes by round, oldest first
        self._entries = Entries()
        self._futures = Futures()  # the votes asked with submit
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
        ticket, future = self._futures.add(task)
        self.send(task, ticket, self._futures)
        return future

    def send(self, task: JudgeTask, ticket: int, receiver: Receiver) -> None:
        """Ask the vote ``task`` for ``receiver``, which is asked for the task again whenever it is needed, and is
        handed the vote's record (or error) by ``ticket``: nothing of the vote but one integer is held here."""
        entry = self._entries.entry(ticket, receiver)
        held = self.sender.held(task.request_key)
        if held is not None and not ((task.solo or task.scale is not None) and held[2]):
            self._resume(task, entry, *held)
        else:
            self._queues[task.round].append(entry)
            self.sender.wake()

    def cancel_queued(self, exc: BaseException) -> int:
        """A stop: every waiting vote fails at once. Those in an open batch are not lost: the journal holds it, and
        a resume polls it (their answer may be hours away, longer than a stop's grace period is worth)."""
        queued = [e for queue in self._queues.values() for e in queue]
        self._queues = {1: array("q"), 2: array("q")}
        for entry in queued:
            self._done(entry, None, exc)
        resumed = sum(pack.fail(exc) for pack in self._resumed.values())
        self._resumed.clear()
        return len(queued) + resumed + self.sender.cancel(exc)

    async def close(self) -> None:
        await self.sender.close()

    def open_batches(self) -> list[dict[str, Any]]:
        return self.sender.open_batches()

    # -- the votes' senders --------------------------------------------------------------------------------------
    def _task(self, entry: int) -> JudgeTask | None:
        """The vote's task, asked of its sender (None: its sender is gone, or waits for it no more)."""
        receiver, ticket = self._entries.receiver(entry)
        return receiver.task(ticket) if receiver is not None else None

    def _done(self, entry: int, record: JudgeCallRecord | None, error: BaseException | None) -> None:
        receiver, ticket = self._entries.receiver(entry)
        if receiver is not None:
            receiver.done(ticket, record, error)

    # -- making requests -------------------------------------------------------------------------------------------
    def _requests_waiting(self) -> int:
        return -(-sum(len(q) for q in self._queues.values()) // self.max_batch)

    def _take(self, most: int) -> list[_Pack]:
        """Up to ``most`` requests of the waiting votes (round two first: it finishes rows), packed as the
        synchronous judge packs them; a vote whose prompt one of them already asks shares that request. The votes'
        tasks are asked of their senders for the packing only."""
        out: list[_Pack] = []
        asked: dict[str, tuple[_Pack, int]] = {}
        for round_ in (2, 1):
            waiting, read = self._queues[round_], 0
            queue: deque[tuple[JudgeTask, int]] = deque()  # the next of them, their tasks read back a few at a time
            while len(out) < most:
                while len(queue) < self.max_batch + TAKE_WINDOW and read < len(waiting):
                    entry = waiting[read]
                    read += 1
                    task = self._task(entry)
                    if task is not None:
                        queue.append((task, entry))
                if not queue:
                    break
                taken = take_batch(queue, self.max_batch, TAKE_WINDOW)  # type: ignore[arg-type]
                own: list[tuple[JudgeTask, int]] = []
                for task, entry in taken:  # type: ignore[misc]
                    if task.request_key in asked:
                        pack, position = asked[task.request_key]
                        pack.share(position, entry)
                        self.stats.shared += 1
                    else:
                        own.append((task, entry))
                if not own:
                    continue
                tasks = [t for t, _ in own]
                pack = _Pack(self, round_, array("q", [e for _, e in own]), _custom_id(tasks, self.sender.waited))
                pack.tokens = self._tokens(tasks)
                for position, task in enumerate(tasks):
                    asked[task.request_key] = (pack, position)
                out.append(pack)
            self._queues[round_] = array("q", [e for _, e in queue]) + waiting[read:]
        self.stats.votes += sum(p.size for p in out)
        return out

    def _tokens(self, tasks: list[JudgeTask]) -> int:
        """The request's prompt and output bound in tokens, estimated from its bodies (its messages are not made
        before its batch is written)."""
        size = len(tasks)
        chars = sum(len(t.body) for t in tasks) + (BATCH_OVERHEAD_CHARS if size > 1 else 0)
        bound = self.params.max_tokens if size == 1 else 32 + 96 * size
        return chars // 4 + bound + self.shape.headroom

    def _alone(self, entries: list[int]) -> None:
        """Votes an answer left out (or a resumed request cannot give), asked again each alone."""
        for entry in entries:
            task = self._task(entry)
            if task is None:
                continue
            pack = _Pack(self, task.round, array("q", [entry]), _custom_id([task], self.sender.waited))
            pack.tokens = self._tokens([task])
            self.sender.add(pack)

    def _resume(self, task: JudgeTask, entry: int, custom_id: str, position: int, rows: list[str]) -> None:
        """A vote that a request of an earlier process asked for: it waits on that request's answer."""
        pack = self._resumed.get(custom_id)
        if pack is None:
            size = max(1, len(rows))
            pack = self._resumed[custom_id] = _Pack(self, task.round, array("q", [NONE] * size), custom_id,
                                                    rebuildable=False, rows=rows)
            self.sender.add(pack)
        if pack.entries[position] == NONE:
            pack.entries[position] = entry
        else:
            pack.share(position, entry)

    # -- reading answers -------------------------------------------------------------------------------------------
    def _answered(self, pack: _Pack, outcome: BatchOutcome, batch_id: str | None) -> None:
        """A request's outcome: its votes' records; an unparseable first answer gets a repair request, and rows
        left out are asked again alone. A request of an earlier process that cannot give its votes an answer (its
        batch is gone, or its repair was never sent) has them asked anew."""
        self._resumed.pop(pack.custom_id, None)
        resumed = not pack.rebuildable
        if resumed and isinstance(outcome, BatchError):
            self._alone(pack.everyone())
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
                self._alone(pack.everyone())
                return
            pack.first, pack.custom_id = content, repair
            pack.sends = 0  # a new request: its own sends, not the first answer's (it would be lost after one)
            if resumed:
                self._resumed[repair] = pack
            self.sender.add(pack)
            return
        if resumed:
            self.stats.read_again += len(pack.everyone())
        self._records(pack, votes, status, batch_id)

    def _read(self, pack: _Pack, content: str, repaired: bool) -> tuple[dict[int, Any] | None, ParseStatus]:
        """A request's votes by key (1-based) and how they parsed, read as the synchronous judge reads an answer of
        one row or of several; None: a first answer nothing could be read from."""
        if pack.size == 1:
            task = next((t for t in map(self._task, pack.waiting(0)) if t is not None), None)
            vote, status = read_vote(content, task.scale if task is not None else None)
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
        slots = [e for p in answered for e in (pack.waiting(p) or [NONE])]
        positions = {e: p for p in answered for e in pack.waiting(p)}
        parts = iter(_parts(pack.replies, len(slots)))
        tasks = {e: self._task(e) for e in pack.everyone()}
        rows = pack.rows
        if rows is None and pack.size > 1:
            rows = [t.row_id for t in (tasks.get(e) for e in pack.entries) if t is not None]
        rows = rows if pack.size > 1 else []
        request_id = uuid.uuid4().hex
        for entry in slots:
            usage, cost = next(parts)
            task = tasks.get(entry)
            if task is None:
                continue
            record = vote_record(self.member, self.params, self.prices, task, votes.get(positions[entry] + 1),
                                 status, call, request_id, rows, usage, batch_id=batch_id, cost_usd=cost,
                                 shape=self.shape)
            self._done(entry, record, None)
        self._alone([e for p in range(pack.size) if p not in answered for e in pack.waiting(p)])

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


def _custom_id(tasks: list[JudgeTask], taken: Any) -> str:
    """A request's custom id: its one vote's request key, or for several rows a hash of their keys (32 characters,
    as every provider takes); salted when ``taken`` (the ids waiting now) has it."""
    keys = [task.request_key for task in tasks]
    cid = keys[0] if len(keys) == 1 else hashlib.sha256("\x1f".join(keys).encode()).hexdigest()[:32]
    while cid in taken:
        cid = hashlib.sha256(f"{cid}\x1f{uuid.uuid4().hex}".encode()).hexdigest()[:32]
    return cid
