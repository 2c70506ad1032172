"""Every council process that a run waits for ends through ``exit_process``: its objects frozen before the
interpreter's shutdown (which otherwise walks them all in its collections). Each process is a real one; an
atexit handler (from a ``sitecustomize`` module on ``PYTHONPATH``, inherited by the processes the command
starts) writes what the garbage collector holds frozen when it ends: nothing, unless the process froze it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from council.core.process_exit import exit_process

REPO = Path(__file__).resolve().parents[2]
REPORTER = '''\
import atexit, gc, os, sys


def _report():
    with open(os.environ["FREEZE_REPORT"], "a") as f:
        f.write(f"{os.path.basename(sys.argv[0])}\\t{gc.get_freeze_count()}\\n")


atexit.register(_report)
'''
START_AND_STOP_PROVIDER = '''\
import asyncio
from council.sim import SimConfig, TruthTable, start_sim_process


async def main():
    sim = await start_sim_process(SimConfig.planted(0), TruthTable())
    await sim.close()


asyncio.run(main())
'''


def test_exit_process_freezes_then_exits_with_the_code() -> None:
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exited:
            exit_process(3)
        assert exited.value.code == 3
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def _ends(tmp_path: Path, argv: list[str], stdin: str = "") -> dict[str, int]:
    """Run ``argv``; each Python process it was or started (by the name of its script) -> the objects frozen at
    its end."""
    (tmp_path / "hook").mkdir(exist_ok=True)
    (tmp_path / "hook" / "sitecustomize.py").write_text(REPORTER, encoding="utf-8")
    report = tmp_path / "frozen.tsv"
    report.unlink(missing_ok=True)
    env = {**os.environ, "FREEZE_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, *argv], input=stdin, env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {name: int(count) for name, count in (line.split("\t") for line in report.read_text().splitlines())}


def test_the_command_line_ends_through_exit_process(tmp_path: Path) -> None:
    ends = _ends(tmp_path, ["-m", "council.cli", "runs", "--runs-dir", str(tmp_path / "runs")])
    assert set(ends) == {"__main__.py"}  # council/cli/__main__.py
    assert ends["__main__.py"] > 0
    # what the installed `council` command calls
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["council"] == "council.cli:entry"


def test_the_report_child_ends_through_exit_process(tmp_path: Path) -> None:
    ends = _ends(tmp_path, ["-m", "council.report"], stdin="")  # told nothing: draws nothing, then ends
    assert set(ends) == {"__main__.py"}
    assert ends["__main__.py"] > 0


def test_the_provider_process_ends_through_exit_process(tmp_path: Path) -> None:
    ends = _ends(tmp_path, ["-c", START_AND_STOP_PROVIDER])
    assert set(ends) == {"-c", "_process.py"}
    assert ends["-c"] == 0  # the script that started it exits plainly: the hook tells a frozen end from another
    assert ends["_process.py"] > 0
