"""Micro-batching of calls that are dear one by one.

A call to a Ray actor costs a round trip of about half a millisecond, so a vendor's votes are not sent to
its judge actor one by one: a :class:`MicroBatcher` gathers whatever is queued (up to ``max_batch``) into
one call and hands each caller its own result when the batch returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class MicroBatcher(Generic[T, R]):
    def __init__(self, send: Callable[[list[T]], Awaitable[list[R]]], *, max_batch: int = 64,
                 linger_s: float = 0.0, name: str = "batcher") -> None:
        self._send_batch = send
        self._max_batch = max_batch
        self._linger_s = linger_s
        self._name = name
        self._queue: asyncio.Queue[tuple[T, asyncio.Future[R]]] = asyncio.Queue()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None

    def submit(self, item: T) -> asyncio.Future[R]:
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self._loop(), name=self._name)
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((item, future))
        return future

    async def _loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            await asyncio.sleep(self._linger_s)  # let the callers of this moment join the batch
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            send = asyncio.create_task(self._send(batch))
            self._inflight.add(send)
            send.add_done_callback(self._inflight.discard)

    async def _send(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._send_batch([item for item, _ in batch])
        except Exception as exc:  # a failed call fails each of its callers, loudly
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for result, (_, future) in zip(results, batch, strict=True):
            if future.done():
                continue
            if isinstance(result, BaseException):  # one item's own failure, sent back as a value
                future.set_exception(result)
            else:
                future.set_result(result)

    def cancel_pending(self, exc: BaseException) -> int:
        """Fail every item not yet sent with ``exc``; batches already sent finish."""
        cancelled = 0
        while not self._queue.empty():
            _, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(exc)
                cancelled += 1
        return cancelled

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
