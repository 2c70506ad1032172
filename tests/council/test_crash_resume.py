"""Crash and resume: SIGKILL at several points of both rounds, resume each time, lose nothing, pay once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from council.sim import SimConfig
from tests.council._provider import command, council, quiet, sim_process
from tests.council.test_end_to_end import subset

CONCURRENCY = 4  # per vendor: keeps the run long enough to be killed at chosen points
VENDORS = ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")
ITEMS = 48  # of the sample's 160 (288 rows, 2,880 votes): the kill points are fractions of the run, whatever its size


def billed(url: str) -> int:
    with urllib.request.urlopen(url + "/sim/stats", timeout=10) as resp:
        return sum(v["billed"] for v in orjson.loads(resp.read())["vendors"].values())


def archived_calls(run_dir: Path) -> tuple[int, int, int]:
    """(calls archived, round-one records, round-two records), ignoring a torn last line."""
    calls, counts = 0, []
    for name in ("round1.jsonl", "round2.jsonl"):
        path = run_dir / name
        data = path.read_bytes() if path.exists() else b""
        lines = data.split(b"\n")[:-1]  # whatever follows the last newline is torn
        counts.append(len(lines))
        calls += sum(len(orjson.loads(line)["raw_outputs"]) for line in lines if line.strip())
    return calls, counts[0], counts[1]


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    config = quiet(SimConfig.planted(seed=0), latency_ms=20.0, latency_jitter_ms=10.0, malformed_rate=0.0,
                   error_rate=0.0)
    with sim_process(config, tmp_path_factory.mktemp("provider")) as url:
        yield url


def test_sigkill_at_five_points_then_resume(tmp_path, provider):
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"vendors": {v: {"concurrency": CONCURRENCY} for v in VENDORS}}))
    runs = tmp_path / "runs"
    rows = ["--responses", str(subset(tmp_path, ITEMS))]  # a resume reads them from the manifest
    # --no-check: the paid calls counted here are the run's alone (council check's would be billed too)
    common = ["--backend", "local", "--provider-url", provider, "--no-check", "--runs-dir", str(runs), "--config",
              str(config)]

    before = billed(provider)
    subprocess.run(council("run", "--run-id", "whole", *rows, *common), check=True, capture_output=True, timeout=120)
    whole_billed = billed(provider) - before
    total_votes = sum(archived_calls(runs / "whole")[1:])

    crash_dir = runs / "crashed"
    start_billed = billed(provider)
    unarchived = []  # after each kill: calls paid for since the start that are not in the archive
    seen_rounds = set()
    for i, fraction in enumerate((0.08, 0.25, 0.45, 0.65, 0.85)):
        args = (("run", "--run-id", "crashed", *rows, *common) if i == 0
                else ("run", "--resume", "crashed", *common[:-2]))
        with command(council(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if crash_dir.exists() and sum(archived_calls(crash_dir)[1:]) >= fraction * total_votes:
                    break
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        time.sleep(0.3)  # requests the dead client had sent are answered (and billed) by now
        calls, r1, r2 = archived_calls(crash_dir)
        assert r1 < total_votes / 2 or r2 < total_votes / 2, "killed too late"
        seen_rounds.update({1} if r1 < total_votes / 2 else set())
        seen_rounds.update({2} if r2 > 0 else set())
        unarchived.append(billed(provider) - start_billed - calls)
    subprocess.run(council("run", "--resume", "crashed", *common[:-2]), check=True, capture_output=True, timeout=120)

    # Killed while round one was still running and while round two was running.
    assert seen_rounds == {1, 2}
    # Nothing lost: the same verdicts and summary as the run that was never interrupted.
    whole_v = (runs / "whole" / "verdicts.jsonl").read_bytes()
    assert (crash_dir / "verdicts.jsonl").read_bytes() == whole_v
    assert len(whole_v.splitlines()) == 6 * ITEMS
    sw = orjson.loads((runs / "whole" / "summary.json").read_bytes())
    sc = orjson.loads((crash_dir / "summary.json").read_bytes())
    assert {k: v for k, v in sc.items() if k != "run_id"} == {k: v for k, v in sw.items() if k != "run_id"}, (sc["diagnostics"], sw["diagnostics"])
    # Never paid twice: every billed call is archived, or was in flight at a kill (and asked again once).
    distinct = archived_calls(crash_dir)[0]
    assert distinct == archived_calls(runs / "whole")[0] == whole_billed
    crash_billed = billed(provider) - start_billed
    lost_per_kill = [b - a for a, b in zip([0, *unarchived], unarchived)]  # the calls in flight at each kill
    assert all(0 <= x <= CONCURRENCY * len(VENDORS) for x in lost_per_kill), lost_per_kill
    assert crash_billed <= distinct + sum(lost_per_kill), (crash_billed, distinct, lost_per_kill)
    manifest = orjson.loads((crash_dir / "manifest.json").read_bytes())
    assert len(manifest["resumes"]) == 5
