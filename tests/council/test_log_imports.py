"""The log module imports structlog without rich where nothing has imported rich (each Ray actor's process: rich
and pygments are 25-55 ms of a core there, bench/actor_imports.py), and rich stays importable for the
processes that show it."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from council.core.logs import _WithoutRich

SCRIPT = """
import sys
import council.cluster.actors  # what a judge's or the quota actor's process imports
print("rich" in sys.modules)
from council.core import logs
logs.get_logger("t").info("t.event")  # structlog works without it
import rich.console
print(rich.console.Console.__name__)
"""


def test_an_actor_process_imports_no_rich_and_rich_still_imports():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "Console"]


def test_only_the_importing_thread_is_refused_rich():
    """While structlog is imported, ``import rich`` fails in the importing thread alone: another thread that
    imports rich meanwhile gets it."""
    finder = _WithoutRich()
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("rich")
    assert finder.find_spec("rich.console") is None and finder.find_spec("orjson") is None  # only rich itself
    elsewhere: list = []
    thread = threading.Thread(target=lambda: elsewhere.append(finder.find_spec("rich")))
    thread.start()
    thread.join()
    assert elsewhere == [None]  # left to the other finders: imported as usual
