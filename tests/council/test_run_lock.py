"""One writer per run folder, and no folder left stuck by a kill: a second process that would write a run being
written (a resume beside the run, a rescore) is refused at once with exit 2 naming the writer's pid and host; a lock
left by a killed process does not block a resume; a run killed before its manifest (nothing paid) is recognised, its
resume says in one line what to do, and the same `council run --run-id` starts cleanly over it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bank
from council.cli import EXIT_INPUT, EXIT_OK, main
from council.store.runfolder import RunFolder
from tests.council._provider import command, council, quiet, sim_process
from council.sim import SimConfig

ROWS = 30


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.fixture
def rows(tmp_path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(bank.SAMPLE_RESPONSES.read_bytes().splitlines()[:ROWS]) + b"\n")
    return path


@contextlib.contextmanager
def holding(runs: Path, run_id: str, *, rows: Path | None = None):
    """A process that creates ``run_id`` (its lock taken, and its rows written when ``rows`` is given: a run before
    its manifest) and then waits; yields the process."""
    script = (f"import sys, time; from pathlib import Path; from council.store.runfolder import RunFolder\n"
              f"f = RunFolder.create(Path({str(runs)!r}), {run_id!r}, command='council run (test)')\n"
              + (f"f.write_bytes('rows.jsonl', Path({str(rows)!r}).read_bytes())\n" if rows else "")
              + "print('ready', flush=True); time.sleep(60)\n")
    with command([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "ready"
        yield proc


def test_a_run_killed_before_its_manifest_is_recognised_and_its_id_starts_cleanly(tmp_path, rows):
    runs = tmp_path / "runs"
    with holding(runs, "early", rows=rows) as proc:
        code, err = run("run", "--resume", "early", "--runs-dir", str(runs))
        assert code == EXIT_INPUT and f"pid {proc.pid} on {socket.gethostname()}" in err and "being created" in err
        os.kill(proc.pid, signal.SIGKILL)  # killed after its rows, before its manifest
        proc.wait(10)
    assert sorted(p.name for p in (runs / "early").iterdir()) == [".lock", "rows.jsonl"]
    code, err = run("run", "--resume", "early", "--runs-dir", str(runs))
    assert code == EXIT_INPUT and "killed before it began" in err and "council run --run-id early" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1  # one line
    code, err = run("run", "--run-id", "early", "--runs-dir", str(runs), "--responses", str(rows), "--simulate",
                    "--backend", "local", "--no-report")
    assert code == EXIT_OK, err
    folder = RunFolder.open_run(runs, "early")
    assert folder.read_json("summary.json")["complete"] and folder.read_json("manifest.json")["rows"] == ROWS


def test_a_second_writer_is_refused_with_the_first_one_s_pid_and_host_and_a_dead_one_s_lock_does_not_block(tmp_path,
                                                                                                            rows):
    runs = tmp_path / "runs"
    assert run("run", "--run-id", "d", "--runs-dir", str(runs), "--responses", str(rows), "--simulate", "--backend",
               "local", "--no-report")[0] == EXIT_OK
    lock = runs / "d" / ".lock"
    script = (f"import time; from pathlib import Path; from council.store.lock import RunLock\n"
              f"RunLock.take(Path({str(runs / 'd')!r}), 'council run --resume d (test)'); print('ready', flush=True);"
              f" time.sleep(60)\n")
    with command([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "ready"
        for argv in (("run", "--resume", "d"), ("rescore", "d")):
            started = time.monotonic()
            code, err = run(*argv, "--runs-dir", str(runs))
            assert code == EXIT_INPUT and time.monotonic() - started < 5
            assert f"being written by pid {proc.pid} on {socket.gethostname()}" in err and "twice" in err
        assert json.loads(lock.read_bytes())["pid"] == proc.pid
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert run("run", "--resume", "d", "--runs-dir", str(runs))[0] == EXIT_OK  # the dead writer's lock is gone
    assert run("rescore", "d", "--runs-dir", str(runs))[0] == EXIT_OK


def test_a_resume_beside_a_running_run_is_refused_and_every_vote_is_recorded_once(tmp_path, rows):
    slow = quiet(SimConfig.planted(seed=0), latency_ms=1500.0, latency_jitter_ms=0.0, malformed_rate=0.0)
    runs = tmp_path / "runs"
    with sim_process(slow, tmp_path) as url:
        common = ["--backend", "local", "--provider-url", url, "--no-check", "--runs-dir", str(runs), "--no-report"]
        # the second process is started (its imports done) before the first, and let go the moment the first has
        # archived votes: a loaded machine's start-up must not outlast the first run
        ready = "import sys; from council.cli import main; sys.stdin.readline(); sys.exit(main(sys.argv[1:]))"
        with command([sys.executable, "-c", ready, "run", "--resume", "busy", *common], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as second, \
                command(council("run", "--run-id", "busy", "--responses", str(rows), *common),
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as first:
            deadline = time.monotonic() + 60
            while not (runs / "busy" / "round1.jsonl").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            _, said = second.communicate("go\n", timeout=60)
            assert first.poll() is None, "the first run ended before the second began"
            assert second.returncode == EXIT_INPUT and f"pid {first.pid}" in said
            assert first.wait(120) == EXIT_OK
    folder = RunFolder.open_run(runs, "busy")
    for round_ in (1, 2):
        keys = [(r.row_id, r.member) for r in folder.read_records(round_)]
        assert keys and len(keys) == len(set(keys))  # one record a vote: the second process wrote nothing
