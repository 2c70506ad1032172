"""Stopping a run cleanly: once a stop is requested (Ctrl-C, SIGTERM, a provider that cannot be used) no new
call is issued, calls already sent may finish within a grace period and are archived, and the run stays
resumable. The first request wins; its reason is recorded in the run's state."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from council.core.errors import CouncilError

REASONS = ("interrupt", "terminate", "budget", "error")


class Stopped(CouncilError):
    """The run is stopping: this call was not issued."""


class StopControl:
    """A run's stop switch, shared by the command line (signals), the coordinator and the pools."""

    def __init__(self, grace_s: float = 6.0) -> None:
        self.grace_s = grace_s  # how long calls in flight may take to finish once a stop is requested
        self.reason: str | None = None
        self.detail: str | None = None
        self._event: asyncio.Event | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str, detail: str | None = None) -> None:
        """Ask the run to stop (the first reason is kept); callbacks run once, on the first request."""
        if reason not in REASONS:
            raise ValueError(f"unknown stop reason {reason!r}")
        if self.reason is not None:
            return
        self.reason, self.detail = reason, detail
        if self._event is not None:
            self._event.set()
        for callback in self._callbacks:
            callback()

    def on_request(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self.requested:
                self._event.set()
        await self._event.wait()

    async def first(self, work: Awaitable[object]) -> bool:
        """Wait for ``work`` or for a stop, whichever comes first: True when ``work`` is done (its outcome is
        left in it), False when the stop came first (``work`` goes on)."""
        work = asyncio.ensure_future(work)
        if not work.done():
            stopping = asyncio.ensure_future(self.wait())
            try:
                await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
        return work.done()
