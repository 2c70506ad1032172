"""``council serve`` as a real process on 127.0.0.1, for the service's tests."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from council.service.serve import LISTENING

# Canary tokens: they must never appear in a log, a run folder or an answer.
TOKENS = {"team-a": "canary-token-a-7f3c1e9d2b", "team-b": "canary-token-b-4a8e6f0c1d", "team-c": "canary-token-c-91ab"}


def tokens_file(folder: Path, **limits: dict) -> Path:
    path = folder / "tokens.json"
    entries = {name: {"token_sha256": hashlib.sha256(token.encode()).hexdigest(), **limits.get(name, {})}
               for name, token in TOKENS.items()}
    path.write_bytes(orjson.dumps(entries))
    return path


def auth(tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[tenant]}"}


class Service:
    def __init__(self, proc: subprocess.Popen[str], url: str, runs: Path) -> None:
        self.proc, self.url, self.runs = proc, url, runs

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@contextmanager
def service(folder: Path, *extra: str, limits: dict | None = None, runs: Path | None = None) -> Iterator[Service]:
    runs = runs or folder / "runs"
    tokens = tokens_file(folder, **(limits or {}))
    args = [sys.executable, "-m", "council.cli", "serve", "--port", "0", "--tokens", str(tokens), "--runs-dir", str(runs),
            *(extra or ("--simulate",))]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith(LISTENING), line
        yield Service(proc, line[len(LISTENING):], runs)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
