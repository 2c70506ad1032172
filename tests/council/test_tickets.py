"""Votes asked by ticket (:mod:`council.transport.tickets`): an entry names its receiver by a small number, held
weakly, and a future's caller gets its record or its error."""

from __future__ import annotations

import asyncio
import gc

import pytest

from council.transport.judge import JudgeTask
from council.transport.tickets import Entries, Futures


class Sender:
    def __init__(self) -> None:
        self.outcomes: list[tuple[int, object, object]] = []

    def task(self, ticket: int) -> JudgeTask:
        return JudgeTask(f"row-{ticket}", 1, "prompt")

    def done(self, ticket: int, record: object, error: object) -> None:
        self.outcomes.append((ticket, record, error))


def test_an_entry_finds_its_receiver_until_it_is_gone_and_its_number_goes_to_another():
    entries = Entries()
    first, second = Sender(), Sender()
    a, b = entries.entry(7, first), entries.entry(7, second)
    assert a != b and entries.entry(9, first) >> 20 == 9
    assert entries.receiver(a) == (first, 7) and entries.receiver(b) == (second, 7)
    del first
    gc.collect()
    assert entries.receiver(a) == (None, 7)  # its votes are dropped, not delivered to a stranger
    third = Sender()
    c = entries.entry(3, third)
    assert c & ((1 << 20) - 1) == a & ((1 << 20) - 1) and entries.receiver(c) == (third, 3)


async def test_a_future_gets_its_record_or_its_error_once():
    futures = Futures()
    task = JudgeTask("r", 1, "prompt")
    ticket, future = futures.add(task)
    other, failing = futures.add(task)
    assert futures.task(ticket) is task
    futures.done(ticket, "record", None)  # type: ignore[arg-type]
    futures.done(ticket, None, RuntimeError("late"))  # a second outcome is ignored
    futures.done(other, None, RuntimeError("lost"))
    assert await future == "record"
    with pytest.raises(RuntimeError, match="lost"):
        await failing
    with pytest.raises(KeyError):
        futures.task(ticket)  # let go once answered
    await asyncio.sleep(0)
