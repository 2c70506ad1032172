"""The embedded provider as a separate ``council sim`` process on 127.0.0.1, for tests that run the CLI in
other processes (or need the provider to outlive one)."""

from __future__ import annotations

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


def quiet(config: SimConfig, **update: float) -> SimConfig:
    """``config`` with every vendor's behaviour updated (latency, faults...)."""
    return config.model_copy(update={"vendors": {v: b.model_copy(update=update) for v, b in config.vendors.items()}})
