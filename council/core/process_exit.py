"""The last step of a council process (the command line, the report's child, the embedded provider's process).

At exit the interpreter clears every module and runs the garbage collector several times over, each pass walking
every object still alive: after a run, with Ray, aiohttp, pydantic and numpy loaded, that was 0.27-0.38 s of a
core for the command line, and 0.19-0.25 s for the report's child, whose exit the command waits for. Objects
frozen by ``gc.freeze()`` are left out of every collection. Nothing is skipped that a process's end should do:
atexit handlers run, modules are cleared, files are closed, as before; only cycles among the frozen objects are
never collected, which at the end of the process loses nothing."""

from __future__ import annotations

import gc
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End the process with ``code``, its live objects frozen first (call it only once its work is done)."""
    gc.freeze()
    raise SystemExit(code)
