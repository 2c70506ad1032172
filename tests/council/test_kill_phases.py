"""SIGKILL (a machine's crash, no handler runs) at the late phases of ``council run``: while the deliberation audit
asks round two of rows round one agreed on, while the run is scored and while its report is drawn. (Before the manifest and after the rows: tests/council/test_run_lock.py; during
round one and round two: tests/council/test_crash_resume.py.) Each kill is timed at a moment read from the run
folder. After it the folder is not stuck: ``council run --resume`` completes it with the verdicts of a run never
interrupted, and the report is drawn again by ``council report``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.council._provider import command, council
from tests.council.test_end_to_end import lines
from tests.council.test_stop_moments import _drawing, _state, inputs  # noqa: F401 - inputs is a fixture


def _kill_at(argv: list[str], run: Path, moment: Callable[[Path, subprocess.Popen], bool]) -> bool:
    """Start ``argv`` in a process group of its own and SIGKILL the whole group once ``moment`` holds (polled
    every 2 ms, at most 120 s); whether the moment came before the command ended by itself."""
    with command(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if moment(run, proc):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                return proc.returncode == -signal.SIGKILL
            time.sleep(0.002)
    return False


def _records(path: Path) -> list[dict]:
    data = path.read_bytes() if path.exists() else b""
    return [orjson.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]  # a torn last line left out


def _auditing(run: Path, _proc: subprocess.Popen) -> bool:  # a round two is archived for a row round one agreed on
    asked = {r["row_id"] for r in _records(run / "round2.jsonl")}
    if not asked:
        return False
    first: dict[str, set] = {}
    for r in _records(run / "round1.jsonl"):
        first.setdefault(r["row_id"], set()).add(r.get("verdict"))
    return any(len(first.get(row, ())) == 1 and None not in first[row] for row in asked)


def _scoring(run: Path, _proc: subprocess.Popen) -> bool:  # graded (the state is written just before scoring)
    state = _state(run)
    return state is not None and state["state"] == "finished" and not (run / "summary.json").exists()


def _resumed(run: Path, runs: Path) -> subprocess.CompletedProcess:
    return subprocess.run(council("run", "--resume", run.name, "--runs-dir", str(runs)), capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("moment", [_auditing, _scoring, pytest.param(_drawing, marks=pytest.mark.report_at_end)],
                         ids=["audit", "scoring", "report"])
def test_sigkill_late_in_a_run_leaves_a_folder_its_resume_completes(tmp_path, inputs, moment):  # noqa: F811
    reference, common = inputs
    runs = tmp_path / "runs"
    run = runs / "killed"
    assert _kill_at(council("run", "--run-id", "killed", "--backend", "local", "--runs-dir", str(runs), *common),
                    run, moment), "the moment was not caught"
    assert not (run / "report.html").exists()
    done = _resumed(run, runs)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _state(run)["state"] == "finished"
    assert lines(run / "verdicts.jsonl") == lines(reference / "verdicts.jsonl")
    assert (run / "summary.json").is_file() and (run / "scores.csv").is_file()
    drawn = subprocess.run(council("report", "killed", "--runs-dir", str(runs)), capture_output=True, text=True,
                           timeout=300)
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    assert (run / "report.html").is_file()
