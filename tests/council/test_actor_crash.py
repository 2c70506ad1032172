"""A vendor's judge actor whose process dies mid-run (SIGKILL) is restarted and the batches it held are sent
again: the run completes with every row graded and the same verdicts as a run never disturbed."""

from __future__ import annotations

import asyncio
import os
import signal

import orjson

import bank
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig
from tests.council._ray import actors
from tests.council._roster import SMALL_ROSTER
from tests.council.test_end_to_end import lines, subset


async def test_a_killed_judge_actor_recovers(tmp_path, ray_session):
    sim = SimConfig.planted(seed=0)
    slow = sim.model_copy(update={"vendors": {v: b.model_copy(update={"latency_ms": 30.0})
                                              for v, b in sim.vendors.items()}})
    path = tmp_path / "sim.json"
    path.write_bytes(orjson.dumps(slow.model_dump(mode="json")))
    responses = subset(tmp_path, 12)

    def request(run_id: str, backend: str) -> RunRequest:
        return RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
                          backend=backend, sim_config=path, config=CouncilConfig(roster=SMALL_ROSTER))

    reference = await run_council(request("reference", "local"))
    run = asyncio.create_task(run_council(request("crashed", "ray")))
    round1 = tmp_path / "runs" / "crashed" / "round1.jsonl"
    victim = None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120  # bounded; the judges' start is slow on a loaded machine
    while victim is None and not run.done() and loop.time() < deadline:
        await asyncio.sleep(0.05)  # until the run's judges exist and some votes are archived
        if round1.exists() and len(round1.read_bytes().splitlines()) > 40:
            alive = [a for a in actors("JudgeActor") if a["Pid"]]
            if alive:
                victim = alive[0]
                os.kill(victim["Pid"], signal.SIGKILL)
    assert victim is not None, ("the run finished before an actor could be killed" if run.done()
                                else "no judge had archived votes within 120 s")
    result = await asyncio.wait_for(run, timeout=240)
    restarted = [a for a in actors("JudgeActor", alive=False) if a["ActorID"] == victim["ActorID"]]
    assert restarted and restarted[0]["NumRestarts"] >= 1  # the same actor, restarted
    assert result.summary["not_graded_rows"] == 0 and result.complete
    assert lines(result.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")
