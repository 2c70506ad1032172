"""Where a run's wall time went: named phases on one monotonic clock, each with when it began and how long it
took (phases may overlap: Ray and the embedded provider start while the coordinator is built). Printed by
``council run --timings`` and logged with the run's end (``run.done``, field ``timings``)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


def _process_age() -> float:
    """Seconds since this process started (Linux ``/proc``; 0 where that cannot be read)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            started_ticks = int(handle.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class Timings:
    """Phases of one run, measured from ``origin`` (by default: when this process started)."""

    def __init__(self) -> None:
        self.origin = time.perf_counter() - _process_age()
        self.phases: list[tuple[str, float, float]] = []  # name, began (s after origin), seconds

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, began, time.perf_counter() - began)

    async def timed(self, name: str, work: Awaitable[T]) -> T:
        """``await work``, recorded as phase ``name``."""
        with self.phase(name):
            return await work

    def add(self, name: str, began: float, seconds: float) -> None:
        """Record a phase that began at ``began`` (``time.perf_counter()``) and lasted ``seconds``."""
        self.phases.append((name, began - self.origin, seconds))

    def since_start(self) -> float:
        return time.perf_counter() - self.origin

    def as_dict(self) -> dict[str, object]:
        """``{"phases": [{"phase", "at_s", "seconds"}...], "total_s"}`` rounded to milliseconds."""
        return {"phases": [{"phase": n, "at_s": round(at, 3), "seconds": round(s, 3)} for n, at, s in self.phases],
                "total_s": round(self.since_start(), 3)}
