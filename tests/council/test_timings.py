"""Where a run's time goes (``--timings`` and ``run.done``), the embedded provider in its own process, and the
report drawn by a child while the results are printed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from council.report.page import build
from council.run.timings import Timings
from council.sim import SimConfig, TruthTable, start_sim_process
from tests.council._provider import council
from tests.council.test_end_to_end import subset

SEQUENTIAL = ("validate", "grading", "provider stop", "scoring")  # one after the other, in this order


def test_timings_measure_from_the_process_start_and_keep_overlapping_phases():
    timings = Timings()
    assert timings.since_start() > 0  # the interpreter started before this test
    began = time.perf_counter()
    with timings.phase("outer"):
        timings.add("inner", time.perf_counter(), 0.25)
        time.sleep(0.05)
    (outer, at_outer, took_outer), (inner, at_inner, took_inner) = sorted(timings.phases, key=lambda p: p[0] != "outer")
    assert (outer, inner) == ("outer", "inner")
    assert took_outer >= 0.05 and took_inner == 0.25  # an inner phase may outlast the outer one: both are kept
    assert at_outer == pytest.approx(began - timings.origin, abs=0.01) and at_inner >= at_outer
    shown = timings.as_dict()
    assert [p["phase"] for p in shown["phases"]] == ["inner", "outer"] and shown["total_s"] >= took_outer


@pytest.mark.report_at_end
def test_council_run_says_where_its_time_went_and_the_report_is_drawn_aside(tmp_path):
    responses = subset(tmp_path, 6)
    done = subprocess.run(council("run", "--backend", "local", "--run-id", "t", "--runs-dir", str(tmp_path / "runs"),
                                  "--simulate", "--responses", str(responses), "--timings", "--progress-every", "0"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "runs" / "t"
    logged = next(orjson.loads(line) for line in (run / "log.jsonl").read_bytes().splitlines()
                  if b'"run.done"' in line)["timings"]
    phases = {p["phase"]: p for p in logged["phases"]}
    assert {*SEQUENTIAL, "provider start"} <= set(phases) and "ray start" not in phases
    ends = [phases[name]["at_s"] + phases[name]["seconds"] for name in SEQUENTIAL]
    starts = [phases[name]["at_s"] for name in SEQUENTIAL]
    assert all(end <= start + 0.01 for end, start in zip(ends, starts[1:], strict=False)), logged
    assert phases["grading"]["at_s"] >= phases["provider start"]["at_s"] + phases["provider start"]["seconds"] - 0.01
    printed = done.stdout[done.stdout.index("where the time went"):]
    for name in (*SEQUENTIAL, "report", "total"):
        assert f"  {name} " in printed, printed
    page = (run / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page == build(run)  # the child drew its sections in two forked processes: the same page as one draws
    assert f"report: {run / 'report.html'}" in done.stdout


async def test_the_embedded_provider_process_serves_and_ends_with_its_parent(tmp_path):
    sim = await start_sim_process(SimConfig.planted(seed=0), TruthTable())
    try:
        assert all(v["requests"] == 0 for v in (await sim.stats())["vendors"].values())
        assert os.getpgid(sim.pid) != os.getpgid(0)  # a session of its own: a terminal's Ctrl-C is not its
    finally:
        await sim.close()
    assert sim._proc.returncode == 0  # closed: it stopped serving and exited by itself

    # A parent killed outright (no close) takes its provider with it: the provider reads end of file.
    code = ("import asyncio, sys\nfrom council.sim import SimConfig, TruthTable, start_sim_process\n"
            "async def main():\n    sim = await start_sim_process(SimConfig(), TruthTable())\n"
            "    print(sim.pid, flush=True)\n    await asyncio.sleep(60)\nasyncio.run(main())\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        await asyncio.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def test_no_report_draws_none(tmp_path):
    responses = subset(tmp_path, 2)
    done = subprocess.run(council("run", "--backend", "local", "--run-id", "n", "--runs-dir", str(tmp_path / "runs"),
                                  "--simulate", "--responses", str(responses), "--no-report", "--progress-every", "0"),
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COUNCIL_NO_REPORT": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "runs" / "n" / "report.html").exists() and "report:" not in done.stdout
