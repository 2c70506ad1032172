"""``--transport batch`` with ``--shards``: each shard worker's batches journalled in a folder of its own
(``shards/<i>/``), the run's verdicts those of a run in one process, every batch request billed once; and a
sharded batch run stopped while its batches wait, resumed with another number of workers, polls the batches it
left (a chunk now on another worker reads them from the other's journal) instead of paying for them again.
On the suite's local Ray instance (127.0.0.1) and a ``council sim`` process that outlives the runs."""

from __future__ import annotations

import asyncio
import urllib.request

import orjson

import bank
from council.batching.journal import JOURNAL, SHARDS
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, resume_council, run_council
from council.sim import SimConfig
from tests.council._provider import sim_process
from tests.council.test_end_to_end import lines, subset

ITEMS = 6  # of the sample's 160: 36 rows
FAST = {"flush_s": 0.05, "poll_s": 0.2}


def provider_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/sim/stats", timeout=10) as resp:
        return orjson.loads(resp.read())["models"]


def shard_journals(run_dir) -> dict[str, list[dict]]:
    """Each shard folder's journal events (folder name -> events)."""
    return {folder.name: [orjson.loads(x) for x in (folder / JOURNAL).read_bytes().splitlines()]
            for folder in sorted((run_dir / SHARDS).iterdir()) if (folder / JOURNAL).is_file()}


def request(tmp_path, run_id: str, url: str, **kw) -> RunRequest:
    return RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, ITEMS), runs_dir=tmp_path / "runs",
                      run_id=run_id, provider_url=url, config=CouncilConfig(transport="batch", batch=FAST), **kw)


async def test_a_sharded_batch_run_journals_each_worker_s_batches_and_gives_one_process_s_verdicts(
        tmp_path, ray_session):
    config = SimConfig.planted(seed=0).model_copy(update={"batch_completion_s": 0.3})
    with sim_process(config, tmp_path) as url:  # a provider each: a request is billed twice by its custom id
        one = await run_council(request(tmp_path, "one", url, backend="local"))
    with sim_process(config, tmp_path) as url:
        sharded = await run_council(request(tmp_path, "sharded", url, backend="ray", shards=2))
        stats = provider_stats(url)
    assert one.complete and sharded.complete and sharded.summary["not_graded_rows"] == 0
    assert lines(sharded.run_dir / "verdicts.jsonl") == lines(one.run_dir / "verdicts.jsonl")
    journals = shard_journals(sharded.run_dir)
    assert set(journals) == {"0", "1"} and not (sharded.run_dir / JOURNAL).exists()
    submitted = {e["batch_id"]: name for name, events in journals.items() for e in events
                 if e["event"] == "submitted"}
    records = [r for name in ("round1.jsonl", "round2.jsonl") for r in lines(sharded.run_dir / name)]
    batched = [r for r in records if r["batch_id"] is not None]
    assert batched and all(r["batch_id"] in submitted for r in batched)  # each in its worker's journal
    assert {r["member"] for r in records if r["batch_id"] is None} == {"deepseek"}  # no batch API: synchronous
    assert any(r["batch_size"] > 1 for r in batched)  # packed, in the workers as in one process
    assert sum(m["batch_billed_twice"] for m in stats.values()) == 0


async def test_a_stopped_sharded_batch_run_resumed_on_other_workers_polls_what_it_left(tmp_path, ray_session):
    config = SimConfig.planted(seed=0).model_copy(update={"batch_completion_s": 3.0})
    with sim_process(config.model_copy(update={"batch_completion_s": 0.3}), tmp_path) as url:
        whole = await run_council(request(tmp_path, "whole", url, backend="local"))
    with sim_process(config, tmp_path) as url:
        stop = StopControl()
        running = asyncio.ensure_future(run_council(request(tmp_path, "stopped", url, backend="ray", shards=2),
                                                    stop=stop))
        folder = tmp_path / "runs" / "stopped"
        while not ((folder / SHARDS).is_dir() and any(e["event"] == "submitted" for events in shard_journals(
                folder).values() for e in events)):
            await asyncio.sleep(0.05)  # bounded by the test's timeout
        await asyncio.sleep(0.5)  # the other worker's batches too, likely
        stop.request("interrupt")
        stopped = await running
        assert stopped.summary["state"]["state"] == "stopped"
        held = {e["local"] for events in shard_journals(folder).values() for e in events if e["event"] == "submitted"}
        ended_before = {e["local"] for events in shard_journals(folder).values() for e in events
                        if e["event"] == "ended"}
        assert held - ended_before  # batches left open at the provider
        resumed = await resume_council(tmp_path / "runs", "stopped", shards=1)  # one worker takes every chunk
        after = provider_stats(url)
    assert resumed.complete and resumed.summary["not_graded_rows"] == 0
    assert lines(folder / "verdicts.jsonl") == lines(whole.run_dir / "verdicts.jsonl")
    events = shard_journals(folder)
    ended = {e["local"] for evs in events.values() for e in evs if e["event"] == "ended"}
    assert held <= ended  # polled to their end by the resume, not sent again
    assert sum(m["batch_billed_twice"] for m in after.values()) == 0  # each batch request billed once
