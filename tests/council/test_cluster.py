"""Sharded runs on a real multi-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head node
and three worker nodes, every socket on 127.0.0.1).

- a sharded run's verdicts equal a single-process run's with the same seed and provider;
- a worker node removed mid-run: the run completes, no row is lost, the lost worker's archived votes are served
  to its replacement, and the provider billed no more calls than an undisturbed run plus the lost worker's
  calls it had billed and the archive did not hold when the node died;
- a vendor's quota actor killed mid-run is restarted and the run completes with the same verdicts;
- the embedded provider, which only this machine can reach, is refused on a cluster of several nodes.

The provider is the embedded one, served as its own process on 127.0.0.1 (every node of this cluster shares
that address); one provider process per run, so its billing counts belong to that run alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess

import orjson
import pytest

import bank
from council.protocol.config import CouncilConfig
from council.store.runfolder import ArchiveIndex
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig
from tests.council._provider import council, quiet, sim_process
from tests.council._ray import actors
from tests.council.test_end_to_end import lines, subset

WORLD = quiet(SimConfig.planted(seed=0), error_rate=0.0, timeout_rate=0.0, reset_rate=0.0, bad_body_rate=0.0,
              slow_rate=0.0, storm_429=0.0, latency_ms=25.0, latency_jitter_ms=0.0)
# Without repair re-asks too: every billed request is one vote, so billing can be checked vote for vote. (Its
# timing also made a shard's budget starve behind another's stale reservations, until reservations that settle
# below their projection gave their room back.)
NO_REPAIRS = quiet(WORLD, malformed_rate=0.0)


@pytest.fixture(scope="module")
def local_cluster():
    from ray.cluster_utils import Cluster

    from council.cluster.raycluster import LOOPBACK, ensure_ray, shutdown_ray

    shutdown_ray()  # this module's cluster replaces any instance of the session (ray_session starts it again)
    fast_failure = {"health_check_period_ms": 500, "health_check_failure_threshold": 4}
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "node_ip_address": LOOPBACK, "include_dashboard": False, "_system_config": fast_failure})
    workers = [cluster.add_node(num_cpus=2, node_ip_address=LOOPBACK) for _ in range(3)]
    cluster.wait_for_nodes()
    ensure_ray(cluster.address)
    try:
        yield cluster, workers
    finally:
        shutdown_ray()
        cluster.shutdown()


def request(tmp_path, responses, run_id: str, url: str, **extra) -> RunRequest:
    return RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id=run_id,
                      provider_url=url, config=CouncilConfig(deliberate="all"), **extra)  # both rounds on every
    # row: work enough left for a lost node or a stop to land mid-run, and a vote count the tests can reason on


async def billed(url: str) -> int:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url.rsplit("/v1", 1)[0] + "/v1/sim/stats") as resp:
        stats = await resp.json()
    return sum(v["billed"] for v in stats["vendors"].values())


async def reference_run(tmp_path, responses, config: CouncilConfig | None = None, world: SimConfig = WORLD) -> tuple:
    with sim_process(world, tmp_path, "--responses", str(responses)) as url:
        req = request(tmp_path, responses, "reference", url, backend="local")
        result = await run_council(req if config is None else dataclasses.replace(req, config=config))
        return result, await billed(url)


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    """``undisturbed(items, world, config)``: the undisturbed local run a test compares with, made once per module
    for each (items, world, config), so tests comparing with the same run share it (they only read its folder)."""
    made: dict[tuple, tuple] = {}

    async def run(items: int, world: SimConfig = WORLD, config: CouncilConfig | None = None) -> tuple:
        key = (items, world.model_dump_json(), config and config.model_dump_json())
        if key not in made:
            folder = tmp_path_factory.mktemp("reference")
            made[key] = await reference_run(folder, subset(folder, items), config, world)
        return made[key]

    return run


def lose_node(cluster, node) -> None:
    """What the loss of a machine does: its raylet and every worker process on it killed at once (a removed
    node's workers would otherwise linger until they notice their raylet is gone)."""
    doomed = [a["Pid"] for a in actors("ShardActor") if a["Address"]["NodeID"] == node.node_id]
    cluster.remove_node(node, allow_graceful=False)
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)




def archived_votes(run_dir) -> int:
    """Votes in the run folder's round files now."""
    return sum((run_dir / name).read_bytes().count(b"\n") for name in ("round1.jsonl", "round2.jsonl")
               if (run_dir / name).exists())


async def settled(url: str, run_dir) -> tuple[int, int]:
    """(calls billed, votes archived), once neither has moved for 0.5 s (bounded: 30 s)."""
    last = None
    for _ in range(60):
        now = (await billed(url), archived_votes(run_dir))
        if now == last:
            return now
        last = now
        await asyncio.sleep(0.5)
    raise AssertionError(f"the provider's bill and the archive did not settle: {last}")


async def until_archived(run_dir, votes: int, run: asyncio.Task) -> None:
    round1 = run_dir / "round1.jsonl"
    for _ in range(1200):  # bounded: 60 s
        await asyncio.sleep(0.05)
        assert not run.done(), "the run finished before the fault could be injected"
        if round1.exists() and round1.read_bytes().count(b"\n") >= votes:
            return
    raise AssertionError("no votes were archived")


def test_a_joined_cluster_is_not_this_process_s_own(local_cluster):
    """A run on a cluster this process joined shares the vendors' quotas through the quota actor, whatever it
    was told (other drivers may draw on them); only an instance this process started may hold them elsewhere."""
    from council.cluster.raycluster import is_up, started_here

    assert is_up() and not started_here()


async def test_sharded_run_matches_one_process(tmp_path, local_cluster, undisturbed):
    cluster, _ = local_cluster
    responses = subset(tmp_path, 12)  # 72 rows: five chunks of 16 for three workers
    reference, reference_billed = await undisturbed(12)
    with sim_process(WORLD, tmp_path, "--responses", str(responses)) as url:
        result = await run_council(request(tmp_path, responses, "sharded", url, backend="ray", shards=3,
                                           ray_address=cluster.address))
        sharded_billed = await billed(url)
    assert result.complete and result.summary["not_graded_rows"] == 0
    assert lines(result.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")
    assert sharded_billed == reference_billed  # nothing paid twice
    assert result.issued == reference.issued
    quota = orjson_load(result.run_dir / "quota_stats.json")
    assert all(len(q["holders"]) >= 3 for q in quota.values())  # every shard drew on each vendor's one ledger


async def test_a_worker_node_lost_mid_run(tmp_path, local_cluster, undisturbed):
    cluster, workers = local_cluster
    responses = subset(tmp_path, 24)
    reference, reference_billed = await undisturbed(24, NO_REPAIRS)
    with sim_process(NO_REPAIRS, tmp_path, "--responses", str(responses)) as url:
        # One worker: every call the provider bills is that worker's, so its bill at the loss is the worker's own.
        run = asyncio.create_task(run_council(request(tmp_path, responses, "node-lost", url, backend="ray", shards=1,
                                                      ray_address=cluster.address)))
        await until_archived(tmp_path / "runs" / "node-lost", 400, run)
        before = actors("ShardActor")
        (lost,) = before
        victim = next(n for n in workers if n.node_id == lost["Address"]["NodeID"])
        # The moment of the loss: the worker frozen, then what it had been paid for and what the archive holds,
        # once the provider has answered (and billed) its last calls and the writer has written its last batch.
        os.kill(lost["Pid"], signal.SIGSTOP)
        billed_at_loss, archived_at_loss = await settled(url, tmp_path / "runs" / "node-lost")
        await asyncio.to_thread(lose_node, cluster, victim)
        workers.remove(victim)
        result = await asyncio.wait_for(run, timeout=240)
        paid = await billed(url)
    moved = [a for a in actors("ShardActor", alive=False) if a["ActorID"] == lost["ActorID"]]
    assert moved and moved[0]["NumRestarts"] >= 1  # the lost node's worker came back on another node
    assert result.complete and result.summary["not_graded_rows"] == 0
    assert lines(result.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")
    # The replacement is served what reached the archive and asks the rest again. Only the votes the lost worker
    # had been paid for and that had not reached the archive when it died can have been paid twice: its calls
    # answered but not yet taken in, and its results not yet taken by the writer (under load, hundreds): the
    # provider's bill at the loss minus the archive's votes then. The votes its replacement asks for the first
    # time are not among them.
    replacement = [w for w in result.processes["workers"] if w["pid"] not in {a["Pid"] for a in before}]
    assert len(replacement) == 1, result.processes["workers"]
    served, again = replacement[0]["served_from_archive"], replacement[0]["issued"]
    # Served from the archive: what the lost worker had archived of the chunks sent again. A chunk it had finished
    # before the loss is not sent again, so its archived votes are not served (not equal to the archive at the loss).
    assert 0 < served <= archived_at_loss
    unarchived = billed_at_loss - archived_at_loss
    print(f"node lost mid-run: billed {paid}, undisturbed {reference_billed}; at the loss {billed_at_loss} billed "
          f"and {archived_at_loss} archived; the replacement was served {served} votes and asked {again}")
    assert reference_billed <= paid <= reference_billed + unarchived, (paid, reference_billed, unarchived, again)


async def test_a_killed_quota_actor_recovers(tmp_path, local_cluster, undisturbed):
    cluster, _ = local_cluster
    responses = subset(tmp_path, 12)
    reference, _ = await undisturbed(12)
    with sim_process(WORLD, tmp_path, "--responses", str(responses)) as url:
        run = asyncio.create_task(run_council(request(tmp_path, responses, "quota-killed", url, backend="ray",
                                                      shards=2, ray_address=cluster.address)))
        await until_archived(tmp_path / "runs" / "quota-killed", 100, run)
        victim = next(a for a in actors("QuotaActor") if a["Name"] == "quotas")  # every vendor's ledger
        os.kill(victim["Pid"], signal.SIGKILL)
        result = await asyncio.wait_for(run, timeout=240)
    restarted = [a for a in actors("QuotaActor", alive=False) if a["ActorID"] == victim["ActorID"]]
    assert restarted and restarted[0]["NumRestarts"] >= 1  # the same actor came back (it ends with the run)
    assert result.complete and result.summary["not_graded_rows"] == 0
    assert lines(result.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")


def orjson_load(path):
    import orjson

    return orjson.loads(path.read_bytes())


async def test_a_stopped_sharded_run_resumes(tmp_path, local_cluster, undisturbed):
    """A stop (what SIGTERM does) reaches every worker; the folder says stopped; resumed, sharded again, the run
    completes with the verdicts of an undisturbed run and pays only for what the archive lacked."""
    from council.grading.stop import StopControl
    from council.run.runner import resume_council

    cluster, _ = local_cluster
    responses = subset(tmp_path, 12)
    reference, reference_billed = await undisturbed(12)
    with sim_process(WORLD, tmp_path, "--responses", str(responses)) as url:
        stop = StopControl(grace_s=6.0)
        run = asyncio.create_task(run_council(request(tmp_path, responses, "stopped", url, backend="ray", shards=2,
                                                      ray_address=cluster.address), stop=stop))
        await until_archived(tmp_path / "runs" / "stopped", 60, run)
        stop.request("terminate")
        first = await asyncio.wait_for(run, timeout=120)
        assert orjson_load(first.run_dir / "state.json")["state"] == "stopped"
        assert not first.complete and first.not_graded > 0
        archived = first.issued
        index = ArchiveIndex.build(first.run_dir)  # what the archive holds before the resume
        held, cost = len(index), index.cost_usd
        index.close()
        resumed = await asyncio.wait_for(resume_council(tmp_path / "runs", "stopped", shards=3), timeout=240)
        paid = await billed(url)
    assert resumed.complete and resumed.summary["not_graded_rows"] == 0
    assert resumed.served_from_archive > 0 and resumed.issued + archived >= reference.issued
    # The writer, not the driver, indexed the archive: its count and cost are in the run's log.
    events = [orjson.loads(x) for x in (resumed.run_dir / "log.jsonl").read_bytes().splitlines()]
    seen = [e for e in events if e["event"] == "shards.archive"][-1]
    assert seen["votes"] == held > 0 and seen["cost_usd"] == round(cost, 6)
    assert orjson_load(resumed.run_dir / "manifest.json")["resumes"][-1]["archived_votes"] is None
    assert lines(resumed.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")
    in_flight = sum(CouncilConfig().settings(v).concurrency for v in CouncilConfig().roster_vendors)
    assert reference_billed <= paid <= reference_billed + in_flight, (paid, reference_billed)


async def test_a_sharded_budget_holds_across_workers(tmp_path, local_cluster, undisturbed):
    """Three workers share one budget: the run stops by it without passing it, and resumed with a larger
    budget it completes with the verdicts of an unbounded run."""
    from council.run.runner import resume_council
    from tests.council.test_run_states import PRICED

    cluster, _ = local_cluster
    responses = subset(tmp_path, 12)
    priced = CouncilConfig.model_validate({"vendors": PRICED})
    reference, _ = await undisturbed(12, NO_REPAIRS, priced)
    full_cost = reference.summary["cost_usd"]
    with sim_process(NO_REPAIRS, tmp_path, "--responses", str(responses)) as url:
        limit = round(full_cost / 2, 6)
        req = RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs", run_id="budget",
                         provider_url=url, backend="ray", shards=3, ray_address=cluster.address,
                         config=priced.model_copy(update={"budget_usd": limit}))
        first = await run_council(req)
        assert first.stopped_by_budget and not first.complete
        assert orjson_load(first.run_dir / "state.json")["reason"] == "budget"
        assert limit * 0.8 <= first.summary["cost_usd"] <= limit  # most of it used, never passed
        resumed = await resume_council(tmp_path / "runs", "budget", budget_usd=full_cost * 1.5)
    assert resumed.complete, (resumed.summary["state"], resumed.summary["not_graded_rows"], resumed.summary["cost_usd"],
                              full_cost)
    assert lines(resumed.run_dir / "verdicts.jsonl") == lines(reference.run_dir / "verdicts.jsonl")


def test_the_embedded_provider_is_refused_on_a_cluster_it_cannot_serve(tmp_path, local_cluster):
    """`council run` joining this cluster with the embedded provider: judges on the other nodes could not reach a
    provider bound to the driver's loopback (on a real cluster they are other machines), so the run is refused
    with a clear message instead of failing silently."""
    cluster, _ = local_cluster
    done = subprocess.run(council("run", "--backend", "ray", "--ray-address", cluster.address, "--runs-dir",
                                  str(tmp_path / "runs")), capture_output=True, text=True, timeout=180)
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-2000:])
    assert "other nodes of the cluster cannot reach" in done.stderr
