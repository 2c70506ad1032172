"""Ctrl-C at any moment of ``council run``: while Ray starts, while the judges' actors start, mid-grading, and
while the run is scored and its report drawn (mid-grading with Ray: tests/council/test_interrupt.py, which also
checks what was billed). Each press (SIGINT to the whole process group, as a terminal
sends it) is timed at a moment read from the run folder, never after a fixed sleep. The command exits
within 3 s of it, the run is marked as it stands (``stopped`` with the resume command printed, or
``finished`` when the grading was over), and a resumed run's verdicts are those of a run never interrupted.
A second press exits at once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

import bank
from council.sim import SimConfig
from tests.council._provider import command, council, quiet
from tests.council.test_end_to_end import lines

EXIT_WITHIN_S = 3.0
ITEMS = 24  # 144 rows


def _subset(folder: Path) -> Path:
    rows = [orjson.loads(line) for line in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if line.strip()]
    keep = sorted({r["item_id"] for r in rows})[:ITEMS]
    path = folder / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows if r["item_id"] in keep))
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A subset of the sample, a provider slow enough that grading lasts a few seconds (80 ms a call, four
    calls at a time per vendor), and the reference: the same rows graded without interruption."""
    tmp = tmp_path_factory.mktemp("moments")
    responses = _subset(tmp)
    sim = tmp / "sim.json"
    sim.write_bytes(orjson.dumps(quiet(SimConfig.planted(seed=0), latency_ms=80.0, latency_jitter_ms=20.0)
                                 .model_dump(mode="json")))
    config = tmp / "council.json"
    vendors = ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")
    config.write_bytes(orjson.dumps({"vendors": {v: {"concurrency": 4} for v in vendors}}))
    common = ["--simulate", "--responses", str(responses), "--sim-config", str(sim), "--config", str(config), "--progress-every", "0"]
    subprocess.run(council("run", "--run-id", "whole", "--backend", "local", "--runs-dir", str(tmp / "runs"), *common),
                   check=True, capture_output=True, timeout=300)
    return tmp / "runs" / "whole", common


def _state(run: Path) -> dict | None:
    try:
        return orjson.loads((run / "state.json").read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None


def _events(run: Path) -> list[str]:
    path = run / "log.jsonl"
    data = path.read_bytes() if path.exists() else b""
    return [orjson.loads(line)["event"] for line in data.split(b"\n")[:-1] if line.strip()]


def _round_one(run: Path) -> int:
    path = run / "round1.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _ray_starting(run: Path, _proc: subprocess.Popen | None = None) -> bool:  # the folder is made and Ray is not up yet (it logs when it is)
    state = _state(run)
    return state is not None and state["state"] == "running" and not _events(run)


def _actors_starting(run: Path, _proc: subprocess.Popen | None = None) -> bool:  # grading has begun and no judge has answered yet
    return "run.start" in _events(run) and _round_one(run) == 0


def _mid_grading(run: Path, _proc: subprocess.Popen | None = None) -> bool:
    return _round_one(run) >= 100


def _scoring(run: Path, _proc: subprocess.Popen | None = None) -> bool:  # the grading is over: the state is written just before the run is scored
    state = _state(run)
    return state is not None and state["state"] == "finished"


def _press(argv: list[str], run: Path, moment: Callable[[Path, subprocess.Popen], bool],
           presses: int = 1) -> tuple[subprocess.CompletedProcess, float, bool]:
    """Start ``argv``, press Ctrl-C ``presses`` times once ``moment(run, process)`` holds (polled every 5 ms, at
    most 120 s);
    the finished process, the seconds from the first press to its exit, and whether the moment was caught
    before the command ended by itself."""
    with command(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + 120
        caught = False
        while time.monotonic() < deadline and proc.poll() is None:
            if moment(run, proc):
                caught = True
                break
            time.sleep(0.005)
        pressed = time.monotonic()
        if caught:
            for _ in range(presses):
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(0.05)
        out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), time.monotonic() - pressed, caught


def _timings(run: Path) -> list[str]:
    done = [orjson.loads(line) for line in (run / "log.jsonl").read_bytes().splitlines()
            if b'"run.done"' in line]
    return [p["phase"] for p in done[-1]["timings"]["phases"]] if done else []


@pytest.mark.parametrize(("backend", "moment"), [("ray", _ray_starting), ("ray", _actors_starting),
                                                 ("local", _mid_grading)],
                         ids=["ray-start", "actors-start", "local-mid-grading"])
def test_ctrl_c_stops_within_3_s_and_the_run_resumes(tmp_path, inputs, backend, moment):
    reference, common = inputs
    runs = tmp_path / "runs"
    run = runs / "cut"
    done, took, caught = _press(council("run", "--run-id", "cut", "--backend", backend, "--runs-dir", str(runs),
                                        *common), run, moment)
    assert caught, ("the moment was never seen", done.returncode, done.stderr[-2000:])
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert took <= EXIT_WITHIN_S, (took, _timings(run))
    assert _state(run)["state"] == "stopped" and _state(run)["reason"] == "interrupt"
    assert "council run --resume cut" in done.stdout + done.stderr
    if moment in (_ray_starting, _actors_starting):  # pressed before any judge was up: nothing was graded
        assert _round_one(run) == 0 and "judges start" not in _timings(run)
    resumed = subprocess.run(council("run", "--resume", "cut", "--backend", "local", "--runs-dir", str(runs)),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _state(run)["state"] == "finished"
    assert lines(run / "verdicts.jsonl") == lines(reference / "verdicts.jsonl")


def test_ctrl_c_while_the_run_is_scored_exits_within_3_s_with_the_grading_kept(tmp_path, inputs):
    reference, common = inputs
    runs = tmp_path / "runs"
    run = runs / "late"
    done, took, caught = _press(council("run", "--run-id", "late", "--backend", "local", "--runs-dir", str(runs),
                                        *common), run, _scoring)
    assert caught, done.stderr[-2000:]
    assert took <= EXIT_WITHIN_S, took
    assert done.returncode in (0, 130), (done.returncode, done.stderr[-2000:])  # 0: it ended before the signal
    assert _state(run)["state"] == "finished"
    assert lines(run / "verdicts.jsonl") == lines(reference / "verdicts.jsonl")
    if done.returncode == 130:
        assert "council report late" in done.stdout + done.stderr  # what draws the page it did not finish


def test_a_second_ctrl_c_exits_at_once(tmp_path, inputs):
    _, common = inputs
    runs = tmp_path / "runs"
    done, took, caught = _press(council("run", "--run-id", "twice", "--backend", "local", "--runs-dir", str(runs),
                                        *common), runs / "twice", _mid_grading, presses=2)
    assert caught
    assert done.returncode == 130, done.stderr[-2000:]
    assert took <= 1.0, took


def test_ctrl_c_while_a_large_input_is_validated_exits_within_3_s_and_makes_no_run_folder(tmp_path):
    rows = [orjson.loads(line) for line in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if line.strip()]
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:  # 200,000 rows: several seconds of validation
        for copy in range(200_000 // len(rows) + 1):
            handle.write(b"".join(orjson.dumps({**r, "row_id": f"{r['row_id']}#{copy}"}) + b"\n" for r in rows))
    runs = tmp_path / "runs"

    def validating(_run: Path, proc: subprocess.Popen) -> bool:  # the command has the input open: being read
        return any(_target(proc.pid, fd) == str(big) for fd in _fds(proc.pid))

    done, took, caught = _press(council("run", "--backend", "local", "--simulate", "--responses", str(big),
                                        "--runs-dir", str(runs), "--progress-every", "0"), runs, validating)
    assert caught, done.stderr[-2000:]
    assert done.returncode == 130, done.stderr[-2000:]
    assert took <= EXIT_WITHIN_S, took
    out, err = done.stdout, done.stderr
    assert "before the run began" in out + err
    assert not runs.exists() or not any(runs.iterdir())  # nothing half-made


def _fds(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return []


def _target(pid: int, fd: str) -> str | None:
    """What descriptor ``fd`` of ``pid`` refers to; None when it was closed since it was listed."""
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except (FileNotFoundError, ProcessLookupError):
        return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(c) for c in handle.read().split()]
    except FileNotFoundError:
        return []


def _drawing(run: Path, proc: subprocess.Popen) -> bool:  # scored; the report's child at work on its page
    if not (run / "summary.json").exists() or (run / "report.html").exists():
        return False
    for child in _children(proc.pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if b"council.report" in handle.read():
                    return True
        except FileNotFoundError:
            continue
    return False


@pytest.mark.report_at_end
def test_ctrl_c_while_the_report_is_drawn_exits_within_3_s_and_says_what_draws_it(tmp_path, inputs):
    reference, common = inputs
    runs = tmp_path / "runs"
    run = runs / "page"
    done, took, caught = _press(council("run", "--run-id", "page", "--backend", "local", "--runs-dir", str(runs),
                                        *common), run, _drawing)
    assert caught, done.stderr[-2000:]
    assert done.returncode == 130, done.stderr[-2000:]
    assert took <= EXIT_WITHIN_S, took
    out, err = done.stdout, done.stderr
    assert _state(run)["state"] == "finished"
    assert lines(run / "verdicts.jsonl") == lines(reference / "verdicts.jsonl")
    assert "council report page" in out + err

