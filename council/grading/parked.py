"""Rows of a batch run, parked on disk while their votes wait in the providers' batches.

A batch answers in minutes or hours, so a run through the batch APIs keeps tens of thousands of rows in flight
(``batch.rows_in_flight``). Graded as a synchronous run grades them (a coroutine per row, one per vote), each row held
its coroutines, itself, its prompts and its round-one records while it waited: about 24 KB of Python heap a row on
the sample, more with longer responses. Here a row in flight is a slot of a few arrays: the row, each prompt, each vote
sent (whom it is for, its task without its prompt, the cost reserved for it) and each vote's record as it comes in are
written to a scratch file and read back when needed (a vote's task and prompt when the judge packs, sends, repairs or
records it: votes are sent by ticket, :mod:`council.transport.tickets`, so the judge holds an integer per vote; the row
and its records when it moves on, its round one complete, to round two or to its end, its round two complete, to its
end). What a row in flight holds in memory does not depend on the length of its prompts.

The protocol is the coordinator's, step for step (:meth:`Coordinator.panel`, :meth:`~Coordinator.first`,
:meth:`~Coordinator.role`, :meth:`~Coordinator.seconds`, :meth:`~Coordinator.graded`); only the waiting differs. Each call
of :meth:`ParkedRows.grade` starts its rows (their round one) while there is room, beside any other call in progress (a
shard worker's chunks share one instance); two loops do the rest: one starts the round two of rows whose round one is
complete, one takes the answers in (settles their cost, archives them, moves their row on). A vote that fails fails
its row, which is not graded (a resume asks it again), and stops the run as on the synchronous path when the vendor
cannot be used or the budget is spent.

The scratch files are unlinked as soon as they are open: a killed run leaves nothing behind, and a file's space is
given back once nothing in it is still needed.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import tempfile
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Protocol

import numpy as np

from council.core.errors import ProviderUnavailable
from council.core.schema import BankItem, JudgeCallRecord, MemberSpec, ResponseRow
from council.grading.budget import Budget, BudgetExhausted
from council.grading.stop import StopControl, Stopped
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Role
from council.transport.judge import JudgeTask
from council.transport.tickets import Receiver


class Steps(Protocol):
    """The coordinator's steps of the protocol, which parked rows take as a coroutine per row takes them
    (:class:`council.grading.coordinator.Coordinator`)."""

    config: CouncilConfig
    stop: StopControl
    budget: Budget
    abandoned: int

    def seats(self, row: ResponseRow) -> tuple[BankItem, list[MemberSpec], list[MemberSpec]]: ...
    def panel(self, row: ResponseRow) -> tuple[BankItem, list[MemberSpec], list[MemberSpec], str | None]: ...
    def stopped_by(self, exc: BudgetExhausted | Stopped | ProviderUnavailable) -> None: ...
    def first(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
              shadows: list[MemberSpec]) -> list[tuple[MemberSpec, JudgeTask]]: ...
    async def role(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
                   round1: dict[str, JudgeCallRecord], seq: int | None) -> Role: ...
    def seconds(self, item: BankItem, row: ResponseRow, members: list[MemberSpec],
                round1: dict[str, JudgeCallRecord]) -> list[tuple[MemberSpec, JudgeTask]]: ...
    def known(self, member: MemberSpec, task: JudgeTask) -> JudgeCallRecord | None: ...
    async def reserve(self, member: MemberSpec, task: JudgeTask) -> float: ...
    def send(self, member: MemberSpec, task: JudgeTask, ticket: int, receiver: Receiver) -> None: ...
    def received(self, member: MemberSpec, task: JudgeTask, record: JudgeCallRecord) -> JudgeCallRecord: ...
    def graded(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None: ...


class Scratch:
    """Append-only scratch files: ``put`` gives where its bytes went, ``get`` reads them back, ``release`` says one
    entry is no longer needed. A file takes up to ``file_bytes``; one whose entries are all released is closed."""

    FILE_BITS = 32  # a location is file << FILE_BITS | offset

    def __init__(self, folder: Path | None = None, file_bytes: int = 64 << 20) -> None:
        self._folder = folder
        self._file_bytes = file_bytes
        self._fds: dict[int, int] = {}
        self._live: dict[int, int] = {}  # file -> entries not released
        self._current = -1
        self._end = 0
        self._open()

    def _open(self) -> None:
        self._current += 1
        fd, path = tempfile.mkstemp(prefix="parked-", suffix=".tmp", dir=self._folder)
        os.unlink(path)
        self._fds[self._current] = fd
        self._live[self._current] = 0
        self._end = 0

    def put(self, data: bytes) -> int:
        if self._end >= self._file_bytes:
            done = self._current
            self._open()
            if not self._live[done]:
                self._close(done)
        os.pwrite(self._fds[self._current], data, self._end)
        where = self._current << self.FILE_BITS | self._end
        self._end += len(data)
        self._live[self._current] += 1
        return where

    def get(self, where: int, length: int) -> bytes:
        return os.pread(self._fds[where >> self.FILE_BITS], length, where & ((1 << self.FILE_BITS) - 1))

    def release(self, where: int) -> None:
        file = where >> self.FILE_BITS
        self._live[file] -= 1
        if not self._live[file] and file != self._current:
            self._close(file)

    def _close(self, file: int) -> None:
        os.close(self._fds.pop(file))
        del self._live[file]

    @property
    def files(self) -> int:
        return len(self._fds)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._live.clear()


class ParkedTask(JudgeTask):
    """A vote's task whose prompt is parked on disk: ``body`` reads it back each time the judge needs it (to pack, to
    make the request, to repair it, to record the vote), so a vote waiting on a batch does not hold its prompt. Sent to
    another process (a Ray actor), it goes as a plain :class:`JudgeTask` with its prompt."""

    __slots__ = ("_scratch", "_where", "_length")
    _scratch: Scratch
    _where: int
    _length: int

    @classmethod
    def of(cls, task: JudgeTask, scratch: Scratch, where: int, length: int) -> ParkedTask:
        return cls.made(task_values(task), scratch, where, length)

    @classmethod
    def made(cls, values: tuple[object, ...], scratch: Scratch, where: int, length: int) -> ParkedTask:
        """The task of ``values`` (:func:`task_values`), its prompt the ``length`` bytes at ``where``."""
        parked = object.__new__(cls)
        for name, value in zip(_TASK_FIELDS, values, strict=True):  # set under the frozen dataclass's __setattr__
            JudgeTask.__dict__[name].__set__(parked, value)
        for name, value in (("_scratch", scratch), ("_where", where), ("_length", length)):
            cls.__dict__[name].__set__(parked, value)
        return parked

    @property  # type: ignore[override]
    def body(self) -> str:
        return self._scratch.get(self._where, self._length).decode()

    def __reduce__(self) -> tuple[type[JudgeTask], tuple[object, ...]]:
        return JudgeTask, tuple(getattr(self, name) for name in _TASK_FIELDS)


_TASK_FIELDS = tuple(f.name for f in fields(JudgeTask))


def task_values(task: JudgeTask) -> tuple[object, ...]:
    """A task's fields but its prompt (``body`` is empty), in order."""
    return tuple("" if name == "body" else getattr(task, name) for name in _TASK_FIELDS)


class _Held:
    """The votes of a vendor that answers synchronously, in a batch run: at most ``room`` are out at once (enough to
    keep its judge busy), the others wait here as tickets (their tasks are on disk) for their turn. Else every row in
    flight would have its vote waiting in that judge's queue, with its task and its future."""

    __slots__ = ("room", "out", "_tickets", "_head")

    def __init__(self, room: int) -> None:
        self.room = room
        self.out = 0
        self._tickets = array("q")
        self._head = 0

    def push(self, ticket: int) -> None:
        self._tickets.append(ticket)

    def pop(self) -> int:
        ticket = self._tickets[self._head]
        self._head += 1
        if self._head > 4096 and self._head * 2 > len(self._tickets):
            del self._tickets[:self._head]
            self._head = 0
        return ticket

    def __len__(self) -> int:
        return len(self._tickets) - self._head


class _Group:
    """The rows of one call of :meth:`ParkedRows.grade`: how many are in flight, whether all were fed, and its end."""

    __slots__ = ("id", "in_flight", "fed", "over")

    def __init__(self, id_: int, over: asyncio.Future[None]) -> None:
        self.id = id_
        self.in_flight = 0
        self.fed = False
        self.over = over


class ParkedRows:
    """Grades rows for ``coordinator`` with every row in flight parked in a slot (:meth:`grade`, from any number of
    callers at once; :meth:`close` once none is left).

    Its votes are sent by ticket (:mod:`council.transport.tickets`), the ticket a vote's slot and place: the place
    holds, until the answer replaces it, whom the vote is for, its task (its prompt elsewhere in the slot) and the cost
    reserved for it, from which the judge is given the task whenever it asks (:meth:`task`)."""

    def __init__(self, coordinator: Steps, scratch_dir: Path | None = None, *, grow: int = 1024) -> None:
        self._c = coordinator
        seats = sum(not m.reserve for m in coordinator.config.roster)  # a row's panel: a reserve fills an emptied seat
        self._first = seats * (2 if coordinator.config.shadow_self else 1)  # round one's places: panel, shadow seats
        self._second_end = 1 + self._first + seats  # round two's records: one per member
        # the row, round one's records, round two's, then the prompts: round one's (all its votes share it), round two's
        places = self._places = self._second_end + 1 + seats
        self._where = np.zeros((grow, places), np.int64)
        self._length = np.zeros((grow, places), np.int32)  # 0: nothing in this place
        self._answered = np.zeros((grow, places), np.bool_)  # a vote's place holds its record (else what it asks)
        self._pending = np.zeros(grow, np.int32)  # votes the slot's round waits for, plus one while it is sending
        self._round = np.zeros(grow, np.int8)
        self._failed = np.zeros(grow, np.bool_)
        self._group_of = np.zeros(grow, np.int64)  # the call (:meth:`grade`) whose row the slot holds
        self._used = 0  # slots ever taken
        self._free = array("l")
        self.in_flight = 0
        self._scratch = Scratch(scratch_dir)
        config = coordinator.config
        self._held = {v: _Held(2 * config.settings(v).concurrency * config.settings(v).max_batch)
                      for v in config.roster_vendors if config.transport_of(v) != "batch"}
        self._members: list[MemberSpec] = []  # the members votes were sent to; a vote's place names one by number
        self._numbers: dict[tuple[str, str, bool], int] = {}
        self._arrivals: deque[tuple[int, JudgeCallRecord | None, BaseException | None]] = deque()
        self._ready: deque[int] = deque()  # slots whose round one is complete
        self._wakes = {name: asyncio.Event() for name in ("arrival", "ready", "room")}
        self._groups: dict[int, _Group] = {}  # the calls in progress
        self._next_group = 0
        self._loops: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None  # a loop's: every call fails with it
        self._closed = False

    async def grade(self, rows: Iterator[ResponseRow]) -> None:
        """Grade ``rows``, beside the rows of other calls in progress (a shard worker's chunks share one instance);
        returns once each of them is graded (or was dropped by a stop), or raises the first error that is not a stop.
        A stop ends the taking of new rows; rows in flight get ``stop.grace_s`` to finish and are then abandoned
        (counted in the coordinator's ``abandoned``)."""
        self._begin()
        group = _Group(self._next_group, asyncio.get_running_loop().create_future())
        self._next_group += 1
        self._groups[group.id] = group
        stop = self._c.stop
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await self._feed(rows, group)
            await asyncio.wait({group.over, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not group.over.done():
                try:
                    await asyncio.wait_for(asyncio.shield(group.over), stop.grace_s)
                except TimeoutError:
                    self._c.abandoned += group.in_flight
                    return
            group.over.result()
        finally:
            stopping.cancel()
            del self._groups[group.id]

    def stopping(self) -> None:
        """The run is stopping: feeders waiting for room stop waiting, held votes are never sent (as a pool's queued
        votes are not)."""
        self._wakes["room"].set()
        self._drop_held()

    async def close(self) -> None:
        """Stop the loops and give the scratch files back (rows still in flight are dropped)."""
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops = []
        self._closed = True
        self._scratch.close()

    def _begin(self) -> None:
        if self._error is not None:
            raise self._error
        if not self._loops:
            self._loops = [asyncio.create_task(self._collect()), asyncio.create_task(self._advance())]
            for loop in self._loops:
                loop.add_done_callback(self._loop_ended)

    def _loop_ended(self, loop: asyncio.Task[None]) -> None:
        if loop.cancelled() or loop.exception() is None:
            return
        self._error = loop.exception()
        for group in self._groups.values():
            if not group.over.done():
                group.over.set_exception(self._error)
        self._wakes["room"].set()

    # -- feeding, and the two loops ------------------------------------------------------------------------------
    async def _feed(self, rows: Iterator[ResponseRow], group: _Group) -> None:
        """Round one of each row, while there is room and the run is not stopping."""
        c = self._c
        try:
            for row in rows:
                while self.in_flight >= c.config.in_flight and not self._halted():
                    await self._wait("room")
                if self._halted():
                    break
                await self._start(row, group)
        except (BudgetExhausted, Stopped, ProviderUnavailable) as exc:
            c.stopped_by(exc)
        finally:
            group.fed = True
            self._check_over(group)

    async def _collect(self) -> None:
        """Each answer as it comes in: its cost settled, its record archived and parked, its row moved on."""
        while True:
            while self._arrivals:
                await self._arrive(*self._arrivals.popleft())
            await self._wait("arrival")

    async def _advance(self) -> None:
        """Round two of each row whose round one is complete (or its end, where round two is skipped)."""
        while True:
            while self._ready:
                slot = self._ready.popleft()
                try:
                    await self._second(slot)
                except (BudgetExhausted, Stopped, ProviderUnavailable) as exc:
                    self._c.stopped_by(exc)
            await self._wait("ready")

    async def _wait(self, name: str) -> None:
        wake = self._wakes[name]
        await wake.wait()
        wake.clear()

    def _halted(self) -> bool:
        return self._c.budget.exhausted or self._c.stop.requested or self._error is not None

    # -- a row's steps -----------------------------------------------------------------------------------------
    async def _start(self, row: ResponseRow, group: _Group) -> None:
        c = self._c
        item, members, shadows, refused = c.panel(row)
        if not members:
            c.graded(row, [], refused is not None)
            return
        slot = self._take(group)
        self._keep(slot, 0, row.model_dump_json().encode())
        self._round[slot] = 1
        await self._send(slot, 1, self._second_end, c.first(item, row, members, shadows))

    async def _second(self, slot: int) -> None:
        c = self._c
        row = self._row(slot)
        item, members, _ = c.seats(row)  # not refused: it was sent
        round1 = {r.member: r for r in self._records(slot, 1, 1 + self._first) if not r.shadow}
        role = await c.role(item, row, members, round1, None)
        self._round[slot] = 2
        await self._send(slot, 1 + self._first, self._second_end + 1,
                         [] if role == "skipped" else c.seconds(item, row, members, round1))

    async def _send(self, slot: int, first_place: int, prompt_place: int,
                    votes: list[tuple[MemberSpec, JudgeTask]]) -> None:
        """Send a round's votes of the slot's row (a vote already answered, by the archive or another run, is parked
        at once), each with its prompt parked from ``prompt_place`` on (a prompt the votes share, once). The round is
        complete once every vote is sent and answered."""
        c = self._c
        self._pending[slot] = 1  # held while sending: answers that come in meanwhile do not complete the round
        parked: dict[int, tuple[int, int]] = {}  # id of a prompt -> where it is
        try:
            for place, (member, task) in enumerate(votes, first_place):
                known = c.known(member, task)
                if known is not None:
                    self._record(slot, place, known)
                    continue
                at = parked.get(id(task.body))
                if at is None:
                    prompt = prompt_place + len(parked)
                    self._keep(slot, prompt, task.body.encode())
                    at = parked[id(task.body)] = int(self._where[slot, prompt]), int(self._length[slot, prompt])
                projected = await c.reserve(member, task)
                try:
                    self._keep(slot, place, pickle.dumps((self._number(member), projected, task_values(task), *at),
                                                         pickle.HIGHEST_PROTOCOL))
                    ticket, held = slot * self._places + place, self._held.get(member.vendor)
                    if held is not None and held.out >= held.room:
                        held.push(ticket)
                    else:
                        if held is not None:
                            held.out += 1
                        c.send(member, ParkedTask.of(task, self._scratch, *at), ticket, self)
                except BaseException:
                    await c.budget.settle(projected, 0.0)
                    raise
                self._pending[slot] += 1
        except BaseException:
            self._failed[slot] = True
            raise
        finally:
            self._one_in(slot)

    def _number(self, member: MemberSpec) -> int:
        key = (member.vendor, member.judge_model, member.reserve)
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self._members)
            self._members.append(member)
        return number

    def _vote(self, slot: int, place: int) -> tuple[MemberSpec, ParkedTask, float]:
        """A vote sent and not answered: its member, its task and the cost reserved for it."""
        number, projected, values, where, length = pickle.loads(self._read(slot, place))
        return self._members[number], ParkedTask.made(values, self._scratch, where, length), projected

    def _release(self, held: _Held) -> None:
        """Held votes sent while their vendor has room."""
        while held and held.out < held.room and not self._c.stop.requested:
            ticket = held.pop()
            member, task, _ = self._vote(*divmod(ticket, self._places))
            held.out += 1
            self._c.send(member, task, ticket, self)

    def _drop_held(self) -> None:
        for held in self._held.values():
            while held:
                held.out += 1  # as if sent: its answer is the stop
                self.done(held.pop(), None, Stopped("run stopping"))

    # -- the judges' side (council.transport.tickets.Receiver) ---------------------------------------------------
    def task(self, ticket: int) -> JudgeTask | None:
        """The task of the vote ``ticket``, read back (None once closed: no one waits for it any more)."""
        return None if self._closed else self._vote(*divmod(ticket, self._places))[1]

    def done(self, ticket: int, record: JudgeCallRecord | None, error: BaseException | None) -> None:
        """The vote ``ticket`` answered (or failed): taken in by the collecting loop."""
        self._arrivals.append((ticket, record, error))
        self._wakes["arrival"].set()

    async def _arrive(self, ticket: int, record: JudgeCallRecord | None, failure: BaseException | None) -> None:
        c = self._c
        slot, place = divmod(ticket, self._places)
        member, task, projected = self._vote(slot, place)
        held = self._held.get(member.vendor)
        if held is not None:
            held.out -= 1
            self._release(held)
        await c.budget.settle(projected, 0.0 if record is None else record.cost_usd)
        self._scratch.release(int(self._where[slot, place]))
        self._length[slot, place] = 0
        if record is not None:
            self._record(slot, place, c.received(member, task, record))
        else:
            self._failed[slot] = True
            if isinstance(failure, asyncio.CancelledError):
                failure = Stopped("cancelled")
            if not isinstance(failure, (BudgetExhausted, Stopped, ProviderUnavailable)):
                raise failure  # type: ignore[misc]  # the run fails, as a synchronous run's would
            c.stopped_by(failure)
        self._one_in(slot)

    def _one_in(self, slot: int) -> None:
        """One vote of the slot's round is in (or its sending is over): a complete round moves the row on."""
        self._pending[slot] -= 1
        if self._pending[slot]:
            return
        if self._failed[slot]:
            self._give_back(slot)  # not graded: a resume asks its votes again
        elif self._round[slot] == 1:
            self._ready.append(slot)
            self._wakes["ready"].set()
        else:
            self._end(slot)

    def _end(self, slot: int) -> None:
        row = self._row(slot)
        first = [r for r in self._records(slot, 1, 1 + self._first) if not r.shadow]
        second = self._records(slot, 1 + self._first, self._second_end)
        self._give_back(slot)
        self._c.graded(row, [*first, *second], False)

    # -- slots -------------------------------------------------------------------------------------------------
    def _take(self, group: _Group) -> int:
        if self._free:
            slot = self._free.pop()
        else:
            slot = self._used
            self._used += 1
            if slot == len(self._pending):
                self._grow()
        self.in_flight += 1
        group.in_flight += 1
        self._group_of[slot] = group.id
        return slot

    def _grow(self) -> None:
        """Twice the slots, or as many as the rows in flight may need (never more)."""
        size = len(self._pending)
        more = max(1, min(size, self._c.config.in_flight - size))
        for name in ("_where", "_length", "_answered", "_pending", "_round", "_failed", "_group_of"):
            old = getattr(self, name)
            setattr(self, name, np.concatenate([old, np.zeros((more, *old.shape[1:]), old.dtype)]))

    def _give_back(self, slot: int) -> None:
        for place in np.flatnonzero(self._length[slot]):
            self._scratch.release(int(self._where[slot, place]))
        self._length[slot] = 0
        self._answered[slot] = False
        self._failed[slot] = False
        self._round[slot] = 0
        self._free.append(slot)
        self.in_flight -= 1
        self._wakes["room"].set()
        group = self._groups.get(int(self._group_of[slot]))
        if group is not None:  # else its call has returned (abandoned by a stop)
            group.in_flight -= 1
            self._check_over(group)

    def _keep(self, slot: int, place: int, data: bytes) -> None:
        self._where[slot, place] = self._scratch.put(data)
        self._length[slot, place] = len(data)

    def _record(self, slot: int, place: int, record: JudgeCallRecord) -> None:
        self._keep(slot, place, record.model_dump_json().encode())
        self._answered[slot, place] = True

    def _read(self, slot: int, place: int) -> bytes:
        return self._scratch.get(int(self._where[slot, place]), int(self._length[slot, place]))

    def _row(self, slot: int) -> ResponseRow:
        return ResponseRow.model_validate_json(self._read(slot, 0), context={"vendor_map": self._c.config.vendor_map})

    def _records(self, slot: int, start: int, stop: int) -> list[JudgeCallRecord]:
        return [JudgeCallRecord.model_validate_json(self._read(slot, place))
                for place in range(start, stop) if self._answered[slot, place]]

    @staticmethod
    def _check_over(group: _Group) -> None:
        if group.fed and not group.in_flight and not group.over.done():
            group.over.set_result(None)
