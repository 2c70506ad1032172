"""Work handed to a thread of its own while the event loop goes on (answering a Ctrl-C, serving calls)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(work: Callable[..., T], *args: Any, name: str, linger: bool = False) -> asyncio.Future[T]:
    """``work(*args)`` in a daemon thread, its result (or exception) in a future of the running loop. The
    interpreter's exit does not wait for the thread (it does for the default executor's), the work runs in a
    copy of the caller's context (so its log lines reach the caller's run log), and a loop closed meanwhile is
    not an error. With ``linger`` the thread then waits, idle, for the life of the process."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if not done.done():
            done.set_exception(error) if error is not None else done.set_result(result)

    def run() -> None:
        result, error = None, None
        try:
            result = context.run(work, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: its run ended meanwhile
            loop.call_soon_threadsafe(settle, result, error)
        if linger:
            threading.Event().wait()

    threading.Thread(target=run, name=name, daemon=True).start()
    return done
