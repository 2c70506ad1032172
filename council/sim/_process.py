"""The embedded provider in a process of its own, so that its judges and the council's client do not take
turns on one event loop (on a machine of two cores, each gets one).

The parent pickles the behaviour and the truth to a private temporary file and starts
``python -m council.sim._process FILE``; the child reads and removes the file, serves on an ephemeral port of
127.0.0.1 and prints the port on its standard output. It runs in a session of its own, so a Ctrl-C at the
terminal reaches only the council, which lets calls in flight finish before it stops the provider; and it
exits when its standard input reaches end of file, so it never outlives the council, however that ends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import sys
import tempfile
from typing import Any

import aiohttp

from council.core.process_exit import exit_process
from council.sim._config import SimConfig
from council.sim._truth import TruthTable

START_TIMEOUT_S = 60.0


class SimProcess:
    """A running embedded provider in a child process; ``url`` is its OpenAI-style base URL."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int, errors: Any) -> None:
        self._proc = proc
        self._errors = errors
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def stats(self) -> dict[str, Any]:
        """The provider's counters (``GET /v1/sim/stats``)."""
        async with aiohttp.ClientSession() as session, session.get(f"{self.url}/sim/stats") as reply:
            reply.raise_for_status()
            return await reply.json()

    async def close(self) -> None:
        """End the child (end of its standard input, then SIGKILL if it has not gone within 5 s)."""
        if self._proc.returncode is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                await asyncio.wait_for(self._proc.wait(), 5.0)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        self._errors.close()

    async def __aenter__(self) -> SimProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def start_sim_process(config: SimConfig, truth: TruthTable, *, timeout_s: float = START_TIMEOUT_S) -> SimProcess:
    """Start the provider in a child process and return it once it listens; RuntimeError (with what the child
    said) if it does not within ``timeout_s``."""
    fd, path = tempfile.mkstemp(prefix="council-sim-", suffix=".pickle")
    with os.fdopen(fd, "wb") as handle:
        pickle.dump((config, truth), handle, protocol=pickle.HIGHEST_PROTOCOL)
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the child's life, read if it fails
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "council.sim._process", path, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=errors, start_new_session=True)
    except BaseException:
        os.unlink(path)
        errors.close()
        raise
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
        port = int(line)
    except (TimeoutError, ValueError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        errors.seek(0)
        said = errors.read().decode(errors="replace").strip().splitlines()[-5:]
        errors.close()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise RuntimeError(f"the embedded provider did not start: {' | '.join(said) or 'no message'}") from None
    return SimProcess(proc, port, errors)


async def _serve(path: str) -> None:
    from council.sim._server import start_sim

    with open(path, "rb") as handle:
        config, truth = pickle.load(handle)
    os.unlink(path)
    server = await start_sim(config, truth)
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()

    def on_stdin() -> None:
        if not os.read(0, 4096):  # end of file: the parent closed it, or has gone
            loop.remove_reader(0)
            gone.set()

    loop.add_reader(0, on_stdin)
    loop.add_signal_handler(signal.SIGTERM, gone.set)
    sys.stdout.write(f"{server.port}\n")
    sys.stdout.flush()
    await gone.wait()
    await server.close()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1]))
    exit_process(0)  # the run waits for this process to end
