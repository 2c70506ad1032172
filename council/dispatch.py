"""Per-vendor micro-batching between the coordinator and the judges.

A judge call through a Ray actor costs a round trip of about half a millisecond, so votes are not sent
one by one: each vendor's dispatcher gathers whatever is queued (up to ``max_batch``) into one pool call.
Every record is handed to ``on_record`` (the write-ahead archive) before anyone waiting for it resumes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from council.judge import JudgeTask
from council.schema import JudgeCallRecord


class JudgePool(Protocol):
    """Where a vendor's votes are graded: in-process judges or Ray actors."""

    async def grade(self, vendor: str, tasks: list[JudgeTask]) -> list[JudgeCallRecord]: ...

    async def close(self) -> None: ...


class Dispatcher:
    def __init__(
        self, vendor: str, pool: JudgePool, on_record: Callable[[JudgeCallRecord], None], *,
        max_batch: int = 64, linger_s: float = 0.0,
    ) -> None:
        self.vendor = vendor
        self._pool = pool
        self._on_record = on_record
        self._max_batch = max_batch
        self._linger_s = linger_s
        self._queue: asyncio.Queue[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]] = asyncio.Queue()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None

    def submit(self, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self._loop(), name=f"dispatch-{self.vendor}")
        future: asyncio.Future[JudgeCallRecord] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((task, future))
        return future

    async def _loop(self) -> None:
        while True:
            batch = [await self._queue.get()]
            if self._linger_s:
                await asyncio.sleep(self._linger_s)
            else:
                await asyncio.sleep(0)  # let the rows scheduled in this tick enqueue too
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            send = asyncio.create_task(self._send(batch))
            self._inflight.add(send)
            send.add_done_callback(self._inflight.discard)

    async def _send(self, batch: list[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]]) -> None:
        try:
            records = await self._pool.grade(self.vendor, [task for task, _ in batch])
        except BaseException as exc:  # a pool failure fails every vote of the batch, loudly
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for record, (_, future) in zip(records, batch, strict=True):
            self._on_record(record)
            if not future.done():
                future.set_result(record)

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
