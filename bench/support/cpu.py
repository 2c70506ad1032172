"""CPU seconds used by a benchmark's whole process tree: this process and every process it started (the
embedded provider, Ray's head and worker nodes and the actors they run), however short-lived.

A background thread polls the tree every ``period_s`` and keeps each process's latest CPU time, so a process
that ends between two polls loses at most one period of its CPU. A process already running when the count
starts counts only what it used since; one started later counts all of it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import psutil


def process_cpu(proc: psutil.Process) -> float | None:
    """``proc``'s CPU seconds (user and system) so far; None once it has ended."""
    try:
        times = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return times.user + times.system


def _label(proc: psutil.Process, root: psutil.Process) -> str | None:
    """``driver`` (this process), ``provider`` (a ``council sim``, or a run's embedded provider in its own
    process), ``council run``, ``report`` (a run's report drawn aside), else the process's name (Ray's are
    ``ray::ShardActor``, ``raylet``, ``gcs_server``...); None for an ended process, whose command line is gone."""
    if proc.pid == root.pid:
        return "driver"
    cmdline = proc.cmdline()
    if not cmdline:  # a process that has ended and is not yet reaped: its command line is gone
        return None
    if ("council.cli" in cmdline and "sim" in cmdline) or "council.sim._process" in cmdline:
        return "provider"
    if "council.cli" in cmdline and "run" in cmdline:
        return "council run"
    if "council.report" in cmdline:
        return "report"
    if cmdline[0].startswith("ray::"):  # an actor's process is titled by the method it runs too
        return cmdline[0].split()[0].split(".")[0]
    return proc.name()


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return [root]


@dataclass
class TreeCpu:
    """CPU seconds of this process's tree between :meth:`start` and :meth:`stop`, per process name too."""

    period_s: float = 0.1
    _root: psutil.Process = field(default_factory=psutil.Process)
    _base: dict[tuple[int, float], float] = field(default_factory=dict)
    _last: dict[tuple[int, float], float] = field(default_factory=dict)
    _names: dict[tuple[int, float], str] = field(default_factory=dict)
    _done: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _poll(self, *, base: bool = False) -> None:
        for proc in _tree(self._root):
            try:
                key = (proc.pid, proc.create_time())  # a pid reused by a new process is another process
                # The latest: a Ray worker takes its actor's name once it runs one (an ended process keeps its last).
                name = _label(proc, self._root) or self._names.get(key) or proc.name()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            used = process_cpu(proc)
            if used is None:
                continue
            if base:
                self._base[key] = used
            self._last[key] = used
            self._names[key] = name

    def _loop(self) -> None:
        while not self._done.wait(self.period_s):
            self._poll()

    def start(self) -> TreeCpu:
        self._poll(base=True)
        self._thread = threading.Thread(target=self._loop, name="tree-cpu", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """CPU seconds since :meth:`start`: ``total``, and by process name (``python3``, ``ray::ShardActor``...)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self._poll()
        by_name: dict[str, float] = {}
        for key, used in self._last.items():
            spent = used - self._base.get(key, 0.0)
            by_name[self._names[key]] = by_name.get(self._names[key], 0.0) + spent
        return {"total": round(sum(by_name.values()), 3),
                **{name: round(v, 3) for name, v in sorted(by_name.items(), key=lambda kv: -kv[1])}}
