"""Votes asked by ticket: a judge that holds its votes a long time (the batch judge, whose votes wait on a provider's
batch for minutes or hours) keeps of each only an integer, and asks whoever sent it for the vote's task when it needs
it (to pack, to write, to read the answer), and hands the outcome back by that integer. No future, no task, no
callback object per waiting vote.

A :class:`Receiver` is whoever sent the vote: the parked rows of a batch run (:mod:`council.grading.parked`) read the
task back from disk; :class:`Futures` holds tasks and futures in memory, for callers that want a future
(``submit``). :func:`send` asks any pool by ticket: its own ``send`` when it has one, else its ``submit``, the outcome
handed over when the future is done.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from council.core.schema import JudgeCallRecord

if TYPE_CHECKING:
    from council.transport.judge import JudgeTask


NUMBER_BITS = 20  # an entry is its ticket << NUMBER_BITS | its receiver's number


class Receiver(Protocol):
    """Whoever sent votes by ticket."""

    def task(self, ticket: int) -> JudgeTask | None: ...  # the vote's task as it was sent; None: no one waits for it

    def done(self, ticket: int, record: JudgeCallRecord | None, error: BaseException | None) -> None: ...


class Futures:
    """Tickets for votes asked with a future: the task and the future are held here until the outcome comes."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]] = {}
        self._next = itertools.count()

    def add(self, task: JudgeTask) -> tuple[int, asyncio.Future[JudgeCallRecord]]:
        future: asyncio.Future[JudgeCallRecord] = asyncio.get_running_loop().create_future()
        ticket = next(self._next)
        self._held[ticket] = task, future
        return ticket, future

    def task(self, ticket: int) -> JudgeTask:
        return self._held[ticket][0]

    def done(self, ticket: int, record: JudgeCallRecord | None, error: BaseException | None) -> None:
        held = self._held.pop(ticket, None)
        if held is None or held[1].done():
            return
        if error is not None:
            held[1].set_exception(error)
        else:
            held[1].set_result(record)  # type: ignore[arg-type]


class Entries:
    """A waiting vote as one integer, its ticket and its receiver's number (receivers are held weakly: the entries of
    one that is gone find none, and its number is given to another)."""

    def __init__(self) -> None:
        self._receivers: dict[int, weakref.ref[Any]] = {}
        self._numbers: dict[int, int] = {}  # id(receiver) -> number
        self._free: list[int] = []
        self._next = 0

    def entry(self, ticket: int, receiver: Receiver) -> int:
        number = self._numbers.get(id(receiver))
        if number is None:
            number = self._free.pop() if self._free else self._take()
            self._numbers[id(receiver)] = number
            key = id(receiver)
            self._receivers[number] = weakref.ref(receiver, lambda _, n=number, k=key: self._gone(n, k))
        return ticket << NUMBER_BITS | number

    def _take(self) -> int:
        if self._next >= 1 << NUMBER_BITS:
            raise RuntimeError("too many receivers of votes at once")
        self._next += 1
        return self._next - 1

    def _gone(self, number: int, key: int) -> None:
        if self._numbers.get(key) == number:
            del self._numbers[key]
        self._receivers.pop(number, None)
        self._free.append(number)

    def receiver(self, entry: int) -> tuple[Receiver | None, int]:
        """The entry's receiver (None: gone) and ticket."""
        ref = self._receivers.get(entry & ((1 << NUMBER_BITS) - 1))
        return (ref() if ref is not None else None), entry >> NUMBER_BITS


def deliver(future: asyncio.Future[JudgeCallRecord], ticket: int, receiver: Receiver) -> None:
    """Hand ``future``'s outcome to ``receiver`` once it is done."""
    def handed(f: asyncio.Future[JudgeCallRecord]) -> None:
        if f.cancelled():
            receiver.done(ticket, None, asyncio.CancelledError())
        elif f.exception() is not None:
            receiver.done(ticket, None, f.exception())
        else:
            receiver.done(ticket, f.result(), None)
    future.add_done_callback(handed)


def send(pool: Any, vendor: str, task: JudgeTask, ticket: int, receiver: Receiver) -> None:
    """Ask ``pool`` for ``vendor``'s vote on ``task``, its outcome handed to ``receiver`` by ``ticket``."""
    by_ticket = getattr(pool, "send", None)
    if by_ticket is not None:
        by_ticket(vendor, task, ticket, receiver)
    else:
        deliver(asyncio.ensure_future(pool.submit(vendor, task)), ticket, receiver)
