"""One writer per run folder: the process that creates, resumes or rescores a run holds an exclusive ``flock`` on the
folder's ``.lock`` file until it is done, and writes its pid, host, start time and command there. A second process
that would write the folder is refused at once with the first one's pid and host. The operating system releases the
lock when its holder's process ends, however it ends (a SIGKILL included), so a lock left by a dead process never
blocks a resume. (``flock`` is advisory and local to one machine's kernel: a run folder on a network filesystem
shared by several hosts is guarded only where that filesystem passes ``flock`` on.)
"""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from council.core.errors import RunFolderError

LOCK = ".lock"


class RunLock:
    """A held lock on one run folder; :meth:`release` (or the process's end) gives it up."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, folder: Path, command: str = "") -> RunLock:
        """The lock of ``folder``, or :class:`RunFolderError` naming the process that holds it."""
        path = Path(folder) / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise RunFolderError(busy_message(Path(folder), holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                    "since": datetime.now(UTC).isoformat(timespec="seconds"), "command": command}), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor gives the flock up
            self._fd = None


def writer_of(folder: Path) -> dict[str, Any] | None:
    """Who is writing ``folder`` now (pid, host, since, command), or None when no live process holds its lock."""
    path = Path(folder) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd)
        return None
    finally:
        os.close(fd)


def busy_message(folder: Path, holder: dict[str, Any]) -> str:
    return (f"run {folder.name} is being written by pid {holder.get('pid', '?')} on {holder.get('host', '?')} "
            f"(since {holder.get('since', '?')}: {holder.get('command') or 'a run'}); wait for it to end or stop it: "
            f"two writers would ask and pay for the same votes twice")


def _read(fd: int) -> dict[str, Any]:
    try:
        data = orjson.loads(os.pread(fd, 4096, 0))
    except (orjson.JSONDecodeError, OSError):
        return {}
    return data if isinstance(data, dict) else {}
