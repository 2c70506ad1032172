"""Runs sharing a process (the service's jobs) each keep their own log: every line of a run's ``log.jsonl``
names that run, and a run that ends does not silence the others."""

from __future__ import annotations

import asyncio

import orjson

import bank
from council.run.runner import RunRequest, run_council
from tests.council.test_end_to_end import subset


async def test_concurrent_runs_log_to_their_own_folders(tmp_path):
    small, large = subset(tmp_path, 2), subset(tmp_path, 10)

    def request(responses, run_id):
        return RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
                          backend="local")

    await asyncio.gather(run_council(request(small, "small")), run_council(request(large, "large")))
    for run_id in ("small", "large"):
        lines = [orjson.loads(x) for x in (tmp_path / "runs" / run_id / "log.jsonl").read_bytes().splitlines()]
        events = [x["event"] for x in lines]
        assert events[0] == "run.start" and events[-1] == "run.done"  # the large run logs after the small ends
        assert {x.get("run_id") for x in lines if "run_id" in x} == {run_id}
