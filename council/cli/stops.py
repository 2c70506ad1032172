"""How a run of ``council run`` or ``council grade`` stops: cleanly at the first Ctrl-C or SIGTERM, at once at
the second, and how its process ends when Ray is still starting or stopping."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence

from council.console.exits import EXIT_SIGNAL
from council.console.output import console, say
from council.grading.stop import StopControl
from council.run.runner import RunResult


def finish(code: int, stopping: Sequence[threading.Thread] = ()) -> int:
    """``code``, to return from main. A Ray still starting in its thread (the run stopped meanwhile), or still
    stopping, would hold the interpreter's exit until it is done; then the process ends here, its output
    flushed, and Ray's local processes end with it (they die with the thread that started them)."""
    from council.cluster import raycluster

    if raycluster.still_starting() or any(t.is_alive() for t in stopping):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def with_signals(start: Callable[[StopControl], Awaitable[RunResult]]) -> RunResult:
    """Run to the end, or to a clean stop: the first Ctrl-C or SIGTERM issues nothing new and lets calls in
    flight finish (up to the grace period) and be archived; a second one exits at once."""
    stop = StopControl()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            stop.request("interrupt" if signum == signal.SIGINT else "terminate")
            say(f"[yellow]stopping[/yellow]: no new calls; calls in flight have {stop.grace_s:.0f} s to finish and "
                "be archived (press Ctrl-C again to stop at once)", to=console)
            return
        say("[red]stopped at once[/red]: calls in flight are lost; the archive is intact", to=console)
        sys.stderr.flush()
        os._exit(EXIT_SIGNAL["interrupt" if signum == signal.SIGINT else "terminate"])

    async def main() -> RunResult:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await start(stop)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    return asyncio.run(main())
