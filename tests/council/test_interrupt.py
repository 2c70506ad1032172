"""Stopping cleanly: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM mid-run,
on both backends. Nothing new is issued, calls in flight finish and are archived, the command exits within
3 s with its documented code and the exact resume command, and the resumed run's verdicts are those of a
run never interrupted. Billed calls that are not archived can only be calls in flight at the signal. (This is
the mid-grading moment of a Ray run for tests/council/test_stop_moments.py too, which presses at the others.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from council.sim import SimConfig
from tests.council._provider import command, council, quiet, sim_process
from tests.council._roster import SMALL_ROSTER
from tests.council.test_crash_resume import archived_calls
from tests.council.test_end_to_end import lines
from tests.council.test_stop_moments import EXIT_WITHIN_S

CONCURRENCY = 6  # each of the small roster's four judges: 24 calls at a time
ROWS = 60  # 198 votes of 150 ms (180 in round one, 18 in round two), stopped at 30% of them with about 24 in flight


def stats(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url + "/sim/stats", timeout=10) as resp:
        vendors = orjson.loads(resp.read())["vendors"].values()
    return {k: sum(v[k] for v in vendors) for k in ("requests", "billed", "rate_limited", "errors")}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    config = quiet(SimConfig.planted(seed=0), latency_ms=150.0, latency_jitter_ms=50.0, malformed_rate=0.0,
                   error_rate=0.0)
    with sim_process(config, tmp_path_factory.mktemp("provider")) as url:
        yield url


@pytest.fixture(scope="module")
def whole(provider, tmp_path_factory):
    """The reference: the same rows graded without interruption (the verdicts do not depend on the backend)."""
    import bank

    tmp = tmp_path_factory.mktemp("whole")
    config = tmp / "council.json"
    limits = {seat["vendor"]: {"concurrency": CONCURRENCY} for seat in SMALL_ROSTER}
    config.write_bytes(orjson.dumps({"roster": SMALL_ROSTER, "vendors": limits}))
    subset = tmp / "rows.jsonl"
    subset.write_bytes(b"\n".join(bank.SAMPLE_RESPONSES.read_bytes().splitlines()[:ROWS]) + b"\n")
    subprocess.run(council("run", "--run-id", "whole", "--backend", "local", "--provider-url", provider, "--runs-dir",
                           str(tmp / "runs"), "--responses", str(subset), "--config", str(config)),
                   check=True, capture_output=True, timeout=300)
    return tmp / "runs" / "whole", subset, config


@pytest.mark.parametrize(("backend", "signum"), [("local", signal.SIGINT), ("local", signal.SIGTERM),
                                                  ("ray", signal.SIGINT)])
def test_a_signal_stops_cleanly_and_the_run_resumes(tmp_path, provider, whole, backend, signum):
    reference, subset, config = whole
    runs = tmp_path / "runs"
    # --no-check: the calls billed here are the run's alone (council check's would be billed too)
    common = ["--backend", backend, "--provider-url", provider, "--no-check", "--runs-dir", str(runs), "--responses",
              str(subset)]
    total = sum(archived_calls(reference)[1:])

    before = stats(provider)
    with command(council("run", "--run-id", "cut", *common, "--config", str(config)),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + 120
        in_flight, at_signal = 0, {}
        while time.monotonic() < deadline and proc.poll() is None:  # a moment with calls in flight, once 30% is in
            if sum(archived_calls(runs / "cut")[1:] if (runs / "cut").exists() else (0, 0)) >= 0.3 * total:
                at_signal = stats(provider)
                in_flight = at_signal["requests"] - sum(at_signal[k] for k in ("billed", "rate_limited", "errors"))
                if in_flight > 0:
                    break
            time.sleep(0.05)
        assert in_flight > 0, at_signal  # the signal lands while calls are in flight
        signalled = time.monotonic()
        os.killpg(proc.pid, signum)  # the whole group, as a terminal's Ctrl-C
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - signalled
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert took <= EXIT_WITHIN_S, took
    assert "council run --resume cut" in err.replace("\n", " ")
    calls, r1, r2 = archived_calls(runs / "cut")
    assert r1 + r2 < total  # it did stop early
    time.sleep(0.5)
    billed = stats(provider)["billed"] - before["billed"]
    assert billed - calls <= in_flight, (billed, calls, in_flight)  # paid and not archived: only those in flight
    print(f"\n{backend} {signal.Signals(signum).name}: exit {proc.returncode} after {took:.2f} s; billed {billed}, "
          f"archived {calls}, unarchived {billed - calls}, in flight at the signal {in_flight}")
    state = orjson.loads((runs / "cut" / "state.json").read_bytes())
    assert state["state"] == "stopped" and state["reason"] == ("interrupt" if signum == signal.SIGINT else "terminate")
    summary = orjson.loads((runs / "cut" / "summary.json").read_bytes())
    assert summary["complete"] is False and summary["not_graded_rows"] > 0
    # Resumed on the local backend whichever backend was stopped: the verdicts do not depend on it, and a second
    # Ray start (10 s of the two cores) would test nothing new (a sharded Ray run resumes in test_cluster.py).
    resumed = subprocess.run(council("run", "--resume", "cut", "--runs-dir", str(runs), "--backend", "local"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert (runs / "cut" / "verdicts.jsonl").read_bytes() == (reference / "verdicts.jsonl").read_bytes()
    assert orjson.loads((runs / "cut" / "summary.json").read_bytes())["complete"] is True
    assert lines(runs / "cut" / "round1.jsonl")  # the archive was kept and extended, never rewritten
    assert Path(runs / "cut" / "manifest.json").is_file()


def test_a_second_ctrl_c_stops_at_once(tmp_path_factory):
    """While calls in flight are draining (a slow provider: 3 s a call), a second Ctrl-C exits at once; what
    was archived stays readable and the run resumes."""
    slow = quiet(SimConfig.planted(seed=0), latency_ms=3000.0, latency_jitter_ms=0.0, malformed_rate=0.0)
    tmp = tmp_path_factory.mktemp("twice")
    with sim_process(slow, tmp) as url:
        runs = tmp / "runs"
        with command(council("run", "--backend", "local", "--provider-url", url, "--no-check", "--runs-dir", str(runs),
                             "--run-id", "twice"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (runs / "twice" / "round1.jsonl").exists():
                time.sleep(0.05)  # some calls have come back: others are in flight
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.3)
            second = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - second
    assert proc.returncode == 130 and "stopped at once" in err, err
    assert took < 2.0, took  # not the 3 s a call in flight would take to drain
    assert lines(runs / "twice" / "round1.jsonl")  # the archive is intact and readable
