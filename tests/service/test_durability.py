"""A service killed with SIGKILL mid-job and started again finishes the job from its archive: the verdicts of an
uninterrupted job, and no more calls billed than distinct calls plus those in flight at the kill (the
embedded provider, as its own process, counts them across both lives of the service). SIGTERM drains: the
job stops cleanly, stays resumable and is taken up at the next start."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson

from council.protocol.config import CouncilConfig
from council.sim import SimConfig
from tests.council._provider import quiet, sim_process
from tests.service._server import auth, service
from tests.service.test_service import sample_rows, wait_over

WORLD = quiet(SimConfig.planted(seed=0), latency_ms=30.0, latency_jitter_ms=0.0, error_rate=0.0, timeout_rate=0.0,
              reset_rate=0.0, bad_body_rate=0.0, slow_rate=0.0, storm_429=0.0)


async def billed(url: str) -> int:
    async with aiohttp.ClientSession() as s, s.get(url.rsplit("/v1", 1)[0] + "/v1/sim/stats") as resp:
        return sum(v["billed"] for v in (await resp.json())["vendors"].values())


async def submit(url: str, rows: list[dict]) -> str:
    async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/jobs", json={"rows": rows}, headers=auth("team-a")) as r:
        assert r.status == 201
        return (await r.json())["id"]


async def until_votes(url: str, job_id: str, votes: int) -> None:
    async with aiohttp.ClientSession() as s:
        for _ in range(600):  # bounded: 60 s
            async with s.get(f"{url}/v1/jobs/{job_id}", headers=auth("team-a")) as resp:
                view = await resp.json()
            assert view["state"] == "running", view
            if view["progress"]["votes_round1"] + view["progress"]["votes_round2"] >= votes:
                return
            await asyncio.sleep(0.1)
    raise AssertionError("no progress")


async def finished(url: str, job_id: str) -> dict:
    async with aiohttp.ClientSession() as s:
        return await wait_over(s, url, job_id)


def verdicts(runs, job_id: str) -> list[dict]:
    return [orjson.loads(x) for x in (runs / job_id / "verdicts.jsonl").read_bytes().splitlines()]


async def test_kill_9_mid_job_and_restart(tmp_path):
    rows = sample_rows(tmp_path, 16)
    responses = tmp_path / "rows.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (tmp_path / "ref").mkdir()
    with sim_process(WORLD, tmp_path / "ref", "--responses", str(responses)) as provider:
        with service(tmp_path / "ref", "--provider-url", provider) as svc:
            reference = await submit(svc.url, rows)
            assert (await finished(svc.url, reference))["state"] == "finished"
        reference_billed = await billed(provider)
    with sim_process(WORLD, tmp_path, "--responses", str(responses)) as provider:
        runs = tmp_path / "runs"
        with service(tmp_path, "--provider-url", provider, runs=runs) as first:
            job = await submit(first.url, rows)
            await until_votes(first.url, job, 200)
            first.kill()
        with service(tmp_path, "--provider-url", provider, runs=runs) as second:
            view = await finished(second.url, job)
        paid = await billed(provider)
    assert view["state"] == "finished" and view["counts"]["not_graded_rows"] == 0
    assert verdicts(runs, job) == verdicts(tmp_path / "ref" / "runs", reference)
    in_flight = sum(CouncilConfig().settings(v).concurrency for v in CouncilConfig().roster_vendors)
    assert reference_billed <= paid <= reference_billed + in_flight, (paid, reference_billed)
    manifest = orjson.loads((runs / job / "manifest.json").read_bytes())
    assert len(manifest["resumes"]) == 1 and manifest["resumes"][0]["archived_votes"] >= 200


async def test_sigterm_drains_and_the_job_resumes(tmp_path):
    rows = sample_rows(tmp_path, 16)
    runs = tmp_path / "runs"
    path = tmp_path / "slow.json"
    path.write_bytes(orjson.dumps(WORLD.model_dump(mode="json")))
    with service(tmp_path, "--simulate", "--sim-config", str(path), runs=runs) as first:
        job = await submit(first.url, rows)
        await until_votes(first.url, job, 100)
        assert first.terminate() == 0  # drained: exits cleanly
    record = orjson.loads((runs / ".jobs" / job / "job.json").read_bytes())
    assert record["state"] == "running"  # not over: taken up at the next start
    assert orjson.loads((runs / job / "state.json").read_bytes())["reason"] == "terminate"
    with service(tmp_path, "--simulate", "--sim-config", str(path), runs=runs) as second:
        view = await finished(second.url, job)
    assert view["state"] == "finished" and view["counts"]["not_graded_rows"] == 0
