"""The embedded provider as a separate ``council sim`` process on 127.0.0.1, for tests that run the CLI in
other processes (or need the provider to outlive one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from council.sim import SimConfig


def council(*args: str) -> list[str]:
    return [sys.executable, "-m", "council.cli", *args]


@contextmanager
def sim_process(config: SimConfig, folder: Path, *extra: str) -> Iterator[str]:
    """Serve ``config`` (plus ``extra`` arguments of ``council sim``); yields the base URL."""
    path = folder / "sim.json"
    path.write_bytes(orjson.dumps(config.model_dump(mode="json")))
    proc = subprocess.Popen(council("sim", "--port", "0", "--config", str(path), *extra), stdout=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def command(argv: list[str], **popen) -> Iterator[subprocess.Popen]:
    """``argv`` started in a session of its own; on the way out, whatever failed meanwhile, it and everything it
    started (the embedded provider's process, the report's child) are killed if still running, so that a
    failing test leaves nothing grading in the background of the rest of the suite."""
    proc = subprocess.Popen(argv, start_new_session=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()


def quiet(config: SimConfig, **update: float) -> SimConfig:
    """``config`` with every vendor's behaviour updated (latency, faults...)."""
    return config.model_copy(update={"vendors": {v: b.model_copy(update=update) for v, b in config.vendors.items()}})
