"""The grading service against a real ``council serve`` process on 127.0.0.1: submit, poll, stream while running,
summary, cancel, idempotent resubmission, 401, cross-tenant 404, 422 with row indexes, 413, per-tenant 429,
metrics, and a canary token that never leaks."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest

import bank
from council.protocol.config import CouncilConfig
from council.service.models import TERMINAL
from council.sim import SimConfig
from tests.council._provider import quiet
from tests.council.test_end_to_end import subset
from tests.service._server import TOKENS, auth, service


def sample_rows(tmp_path, n_items: int) -> list[dict]:
    return [orjson.loads(x) for x in subset(tmp_path, n_items).read_bytes().splitlines()]


async def wait_state(session, url: str, job_id: str, states, tenant: str = "team-a", timeout_s: float = 120,
                     every_s: float = 0.1) -> dict:
    """The job's view once its state is one of ``states`` (polled every ``every_s``, at most ``timeout_s``)."""
    view = None
    for _ in range(int(timeout_s / every_s)):  # bounded
        async with session.get(f"{url}/v1/jobs/{job_id}", headers=auth(tenant)) as resp:
            view = await resp.json()
        if view["state"] in states:
            return view
        await asyncio.sleep(every_s)
    raise AssertionError(f"job {job_id} never reached {sorted(states)}: {view}")


async def wait_over(session, url: str, job_id: str, tenant: str = "team-a", timeout_s: float = 120) -> dict:
    return await wait_state(session, url, job_id, TERMINAL, tenant, timeout_s)


async def read_ndjson(session, url: str, headers) -> list[dict]:
    async with session.get(url, headers=headers) as resp:
        assert resp.status == 200 and resp.content_type == "application/x-ndjson"
        return [orjson.loads(x) for x in (await resp.read()).splitlines() if x.strip()]


def slow_world(tmp_path, latency_ms: float = 40.0):
    path = tmp_path / "slow.json"
    world = quiet(SimConfig.planted(seed=0), latency_ms=latency_ms, latency_jitter_ms=0.0)
    path.write_bytes(orjson.dumps(world.model_dump(mode="json")))
    return path


async def test_submit_poll_verdicts_summary_and_metrics(tmp_path):
    rows = sample_rows(tmp_path, 6)
    with service(tmp_path) as svc:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows}, headers=auth("team-a")) as resp:
                assert resp.status == 201
                job = await resp.json()
                assert resp.headers["Location"] == f"/v1/jobs/{job['id']}"
            assert job["tenant"] == "team-a" and job["progress"]["rows_total"] == len(rows) and job["simulated"]
            view = await wait_over(s, svc.url, job["id"])
            assert view["state"] == "finished" and view["counts"]["graded_rows"] + view["counts"]["not_graded_rows"] == len(rows)
            assert view["progress"]["rows_done"] == len(rows) and view["progress"]["votes_round2"] > 0
            streamed = await read_ndjson(s, f"{svc.url}/v1/jobs/{job['id']}/verdicts", auth("team-a"))
            on_disk = [orjson.loads(x) for x in (svc.runs / job["id"] / "verdicts.jsonl").read_bytes().splitlines()]
            assert streamed == on_disk
            async with s.get(f"{svc.url}/v1/jobs/{job['id']}/summary", headers=auth("team-a")) as resp:
                summary = await resp.json()
            assert summary["run_id"] == job["id"] and summary["rows_total"] == len(rows)
            async with s.get(f"{svc.url}/v1/jobs", headers=auth("team-a")) as resp:
                assert [j["id"] for j in (await resp.json())["jobs"]] == [job["id"]]
            async with s.get(f"{svc.url}/metrics") as resp:
                text = await resp.text()
            assert 'council_jobs{state="finished",tenant="team-a"} 1.0' in text
            assert 'council_provider_calls_total{vendor="openai"}' in text
            assert 'council_http_requests_total{method="POST",route="/v1/jobs",status="201"} 1.0' in text
            async with s.get(f"{svc.url}/healthz") as resp:
                assert (await resp.json())["status"] == "ok"


@pytest.mark.parametrize("deliberate", ["all", "disputed"])
async def test_verdicts_stream_while_the_job_runs(tmp_path, deliberate):
    """The verdicts streamed while the job runs are those it writes at its end, rows that skipped round two
    (``deliberate: disputed``) included."""
    rows = sample_rows(tmp_path, 16)
    with service(tmp_path, "--simulate", "--sim-config", str(slow_world(tmp_path))) as svc:
        async with aiohttp.ClientSession() as s:
            submission = {"rows": rows, "options": {"deliberate": deliberate}}
            async with s.post(f"{svc.url}/v1/jobs", json=submission, headers=auth("team-a")) as resp:
                job = await resp.json()
            got, running_when_first = [], None
            async with s.get(f"{svc.url}/v1/jobs/{job['id']}/verdicts", headers=auth("team-a")) as resp:
                async for line in resp.content:
                    if running_when_first is None:
                        async with s.get(f"{svc.url}/v1/jobs/{job['id']}", headers=auth("team-a")) as view:
                            running_when_first = (await view.json())["state"] == "running"
                    got.append(orjson.loads(line))
            on_disk = [orjson.loads(x) for x in (svc.runs / job["id"] / "verdicts.jsonl").read_bytes().splitlines()]
    assert running_when_first  # the first verdict came while the job was still running
    assert sorted(got, key=lambda v: v["row_id"]) == sorted(on_disk, key=lambda v: v["row_id"])
    assert any(not v["deliberated"] for v in on_disk) == (deliberate == "disputed")


async def test_cancel_idempotency_and_tenants(tmp_path):
    """A job cancelled while it grades ends ``cancelled`` with rows it did not grade. It is cancelled once its run
    folder is made, not after a fixed sleep (16 rows at 40 ms a call were all graded within the half second once
    waited here) nor as soon as it shows ``running`` (its rows are still being read then, and a cancel stops it
    before its run begins: test_early_cancel), and every row needs round two, one second of calls after round
    one's: so the cancel comes before any row can be graded, however fast the machine."""
    rows = sample_rows(tmp_path, 16)
    with service(tmp_path, "--simulate", "--sim-config", str(slow_world(tmp_path, latency_ms=1000.0))) as svc:
        async with aiohttp.ClientSession() as s:
            key = {"Idempotency-Key": "upload-1", **auth("team-a")}
            submission = {"rows": rows, "options": {"deliberate": "all"}}
            async with s.post(f"{svc.url}/v1/jobs", json=submission, headers=key) as resp:
                assert resp.status == 201
                job = await resp.json()
            async with s.post(f"{svc.url}/v1/jobs", json=submission, headers=key) as resp:
                assert resp.status == 200 and (await resp.json())["id"] == job["id"]  # the same job, not a new one
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[:3]}, headers=key) as resp:
                assert resp.status == 409
            jid = job["id"]
            for method, path in (("GET", ""), ("DELETE", ""), ("GET", "/verdicts"), ("GET", "/summary")):
                async with s.request(method, f"{svc.url}/v1/jobs/{jid}{path}", headers=auth("team-b")) as resp:
                    assert resp.status == 404  # another tenant's job is not confirmed to exist
                async with s.request(method, f"{svc.url}/v1/jobs/{jid}{path}") as resp:
                    assert resp.status == 401 and "WWW-Authenticate" in resp.headers
                async with s.request(method, f"{svc.url}/v1/jobs/{jid}{path}",
                                     headers={"Authorization": "Bearer " + TOKENS["team-a"] + "x"}) as resp:
                    assert resp.status == 401
            async with s.get(f"{svc.url}/v1/jobs", headers=auth("team-b")) as resp:
                assert (await resp.json())["jobs"] == []
            await wait_state(s, svc.url, jid, {"running"}, every_s=0.01)
            for _ in range(12_000):  # bounded (2 min): its run folder is made once its rows are read
                if (svc.runs / jid / "manifest.json").is_file():
                    break
                await asyncio.sleep(0.01)
            async with s.delete(f"{svc.url}/v1/jobs/{jid}", headers=auth("team-a")) as resp:
                assert resp.status == 202
            view = await wait_over(s, svc.url, jid)
    assert view["state"] == "cancelled" and view["counts"]["not_graded_rows"] > 0
    state = orjson.loads((svc.runs / jid / "state.json").read_bytes())
    assert state["state"] == "stopped" and state["detail"] == "cancelled"


async def test_bad_submissions_are_refused_whole(tmp_path):
    rows = sample_rows(tmp_path, 2)
    bad = [dict(rows[0]), {k: v for k, v in rows[1].items() if k != "response"}, dict(rows[2], item_id="no-such-item"),
           dict(rows[3], model="frobnicator-7b"), dict(rows[4], colour="blue"), dict(rows[0])]
    bad[5]["row_id"] = bad[0]["row_id"] = "dup"
    limits = {"team-c": {"max_running_jobs": 1, "max_rows_per_job": 5}}
    config = tmp_path / "unpriced.json"  # a reserve judge no price table knows: a budget is refused
    config.write_bytes(orjson.dumps({"roster": [{**m.model_dump(), **({"judge_model": "mistralai/no-such-model-9"}
                                                                       if m.reserve else {})}
                                                for m in CouncilConfig().roster]}))
    with service(tmp_path, "--simulate", "--sim-config", str(slow_world(tmp_path)), "--max-body-mb", "0.05",
                 "--config", str(config), limits=limits) as svc:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": bad}, headers=auth("team-a")) as resp:
                assert resp.status == 422
                body = await resp.json()
            where = {(p["index"], p["field"]) for p in body["problems"]}
            assert {(1, "response"), (2, "item_id"), (3, "model"), (4, "colour"), (5, "row_id")} <= where
            assert not any(i == 0 for i, _ in where)
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[:2], "colour": 1}, headers=auth("team-a")) as resp:
                assert resp.status == 422 and any(p["field"] == "colour" for p in (await resp.json())["problems"])
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[:2], "options": {"quorum": 9}},
                              headers=auth("team-a")) as resp:
                assert resp.status == 422
            ndjson = b"".join(orjson.dumps(r) + b"\n" for r in rows[:2]) + b"{not json\n"
            async with s.post(f"{svc.url}/v1/jobs", data=ndjson, headers={**auth("team-a"),
                              "Content-Type": "application/x-ndjson"}) as resp:
                assert resp.status == 422 and (await resp.json())["problems"][0]["index"] == 2
            huge = {"rows": [dict(rows[0], response="x" * 60_000)]}
            async with s.post(f"{svc.url}/v1/jobs", json=huge, headers=auth("team-a")) as resp:
                assert resp.status == 413 and (await resp.json())["error"]
            async with s.get(f"{svc.url}/v1/jobs", headers=auth("team-a")) as resp:
                assert (await resp.json())["jobs"] == []  # nothing was enqueued
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[:6]}, headers=auth("team-c")) as resp:
                assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1  # rows per job
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[:5]}, headers=auth("team-c")) as resp:
                assert resp.status == 201
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows[5:9]}, headers=auth("team-c")) as resp:
                assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1  # jobs running at once
                assert "running" in (await resp.json())["detail"]
            ndjson_ok = b"".join(orjson.dumps(r) + b"\n" for r in rows[:3])
            async with s.post(f"{svc.url}/v1/jobs?budget_usd=5", data=ndjson_ok,
                              headers={**auth("team-a"), "Content-Type": "application/x-ndjson"}) as resp:
                assert resp.status == 422  # a budget needs every judge priced: said, not crashed
            async with s.get(f"{svc.url}/metrics") as resp:
                assert 'council_submissions_limited_total{tenant="team-c"} 2.0' in await resp.text()


def test_canary_tokens_never_leak(tmp_path):
    """Run a job, fail some requests, then look everywhere the service writes."""
    asyncio.run(_exercise(tmp_path))
    written = b"".join(p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file())
    for token in TOKENS.values():
        assert token.encode() not in written


async def _exercise(tmp_path) -> None:
    rows = sample_rows(tmp_path, 2)
    with service(tmp_path) as svc:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows}, headers=auth("team-a")) as resp:
                job = await resp.json()
            await wait_over(s, svc.url, job["id"])
            for headers in ({"Authorization": f"Bearer {TOKENS['team-a']}x"}, {"Authorization": TOKENS["team-b"]}):
                async with s.get(f"{svc.url}/v1/jobs", headers=headers) as resp:
                    assert TOKENS["team-a"] not in await resp.text() and TOKENS["team-b"] not in await resp.text()
            async with s.post(f"{svc.url}/v1/jobs", data=b"{", headers={**auth("team-b"),
                              "Content-Type": "application/json"}) as resp:
                assert resp.status == 422 and TOKENS["team-b"] not in await resp.text()


@pytest.mark.parametrize("bank_inline", [False, True])
async def test_a_job_may_bring_its_own_bank(tmp_path, bank_inline):
    rows = sample_rows(tmp_path, 2)
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines() if x.strip()]
    used = {r["item_id"] for r in rows}
    body = {"rows": rows, "bank": [i for i in items if i["id"] in used]} if bank_inline else {"rows": rows}
    with service(tmp_path) as svc:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{svc.url}/v1/jobs", json=body, headers=auth("team-b")) as resp:
                job = await resp.json()
            view = await wait_over(s, svc.url, job["id"], tenant="team-b")
    assert view["state"] == "finished"


def test_a_job_s_options_default_to_the_council_s_own():
    """A job with no options is graded as `council run` grades: every option's default is the config's."""
    from council.protocol.config import CouncilConfig
    from council.service.models import JobOptions

    config = CouncilConfig()
    assert {name: getattr(config, name) for name in JobOptions.model_fields} == JobOptions().model_dump()
    assert JobOptions().deliberate == "disputed" and JobOptions().deliberation_audit == 0.1
