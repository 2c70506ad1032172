"""Job callbacks against a real ``council serve`` and a real receiver on 127.0.0.1: signed and delivered once (the
body's job equals GET /v1/jobs/{id}), 5xx retried, 4xx final, unsigned for a tenant without a secret (warned once),
and a callback still due when the service drains is sent after it starts again."""

from __future__ import annotations

import asyncio
import random

import aiohttp
import orjson
import pytest
from aiohttp import web

from council.service.callbacks import RetryPolicy, sign, verify_signature
from council.service.jobs import JobRecord
from tests.service._server import auth, service
from tests.service.test_service import sample_rows, wait_over

SECRET = "cb-secret-canary-5e2d8a71"
SECRET_ENV = {"TEAM_A_CALLBACK_SECRET": SECRET}
LIMITS = {"team-a": {"callback_secret_env": "TEAM_A_CALLBACK_SECRET"}}


class Receiver:
    """A callback receiver on 127.0.0.1 that answers each POST with the next of ``answers``, then 200."""

    def __init__(self, answers: list[int] | None = None) -> None:
        self.answers = list(answers or [])
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.url = ""

    async def _handle(self, request: web.Request) -> web.Response:
        self.got.append((dict(request.headers), await request.read()))
        return web.Response(status=self.answers.pop(0) if self.answers else 200)

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hook"
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._runner.cleanup()


def record(svc, job_id: str) -> dict:
    return orjson.loads((svc.runs / ".jobs" / job_id / "job.json").read_bytes())


async def callback_over(svc, job_id: str, timeout_s: float = 60) -> dict:
    """The job's callback state once it is delivered or failed."""
    for _ in range(int(timeout_s * 10)):  # bounded
        state = record(svc, job_id).get("callback")
        if state is not None and state["status"] != "pending":
            return state
        await asyncio.sleep(0.1)
    raise AssertionError(f"callback of {job_id} still pending: {state}")


async def submit(s, svc, rows, callback_url: str, tenant: str = "team-a") -> dict:
    async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows, "callback_url": callback_url},
                      headers=auth(tenant)) as resp:
        assert resp.status == 201, await resp.text()
        return await resp.json()


def events(svc, name: str) -> list[dict]:
    lines = (svc.runs / "service.log.jsonl").read_bytes().splitlines()
    return [e for e in map(orjson.loads, lines) if e.get("event") == name]


async def test_delivered_once_signed_with_the_job_as_get_shows_it(tmp_path):
    rows = sample_rows(tmp_path, 2)
    async with Receiver() as receiver, aiohttp.ClientSession() as s:
        with service(tmp_path, limits=LIMITS, env=SECRET_ENV) as svc:
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": rows, "callback_url": "ftp://127.0.0.1/x"},
                              headers=auth("team-a")) as resp:
                assert resp.status == 422  # http and https only
            job = await submit(s, svc, rows, receiver.url)
            view = await wait_over(s, svc.url, job["id"])
            state = await callback_over(svc, job["id"])
            async with s.get(f"{svc.url}/v1/jobs/{job['id']}", headers=auth("team-a")) as resp:
                assert await resp.json() == view
            async with s.get(f"{svc.url}/v1/jobs/{job['id']}/summary", headers=auth("team-a")) as resp:
                summary = await resp.json()
            await asyncio.sleep(1.0)  # nothing more comes
        assert state == {"status": "delivered", "attempts": 1, "last_error": None}
        assert len(receiver.got) == 1
        headers, body = receiver.got[0]
    assert headers["Content-Type"] == "application/json" and headers["X-Council-Job"] == job["id"]
    timestamp, signature = headers["X-Council-Timestamp"], headers["X-Council-Signature"]
    assert signature.startswith("sha256=")
    assert verify_signature(SECRET.encode(), timestamp, body, signature, max_age_s=300)
    assert not verify_signature(SECRET.encode(), timestamp, body.replace(b"finished", b"failed"), signature)
    assert not verify_signature(SECRET.encode(), str(int(timestamp) + 1), body, signature)
    assert not verify_signature(b"another secret", timestamp, body, signature)
    sent = orjson.loads(body)
    assert sent["job"] == view and sent["job"]["state"] == "finished" and sent["summary"] == summary
    assert [e["job_id"] for e in events(svc, "callback.delivered")] == [job["id"]]
    written = b"".join(p.read_bytes() for p in svc.runs.rglob("*") if p.is_file())
    assert SECRET.encode() not in written and signature.encode() not in written


@pytest.mark.parametrize(("answers", "attempts", "status"), [([503, 503], 3, "delivered"), ([400], 1, "failed")])
async def test_5xx_is_retried_and_4xx_is_final(tmp_path, answers, attempts, status):
    rows = sample_rows(tmp_path, 2)
    async with Receiver(answers) as receiver, aiohttp.ClientSession() as s:
        with service(tmp_path, limits=LIMITS, env=SECRET_ENV) as svc:
            job = await submit(s, svc, rows, receiver.url)
            await wait_over(s, svc.url, job["id"])
            state = await callback_over(svc, job["id"])
            await asyncio.sleep(1.5)  # longer than the first wait: no attempt after a final answer
        assert len(receiver.got) == attempts
        for headers, body in receiver.got:  # every attempt signed afresh, the same body
            assert verify_signature(SECRET.encode(), headers["X-Council-Timestamp"], body,
                                    headers["X-Council-Signature"])
            assert body == receiver.got[0][1]
    assert state["status"] == status and state["attempts"] == attempts
    assert state["last_error"] == (None if status == "delivered" else "HTTP 400")
    logged = events(svc, f"callback.{status}")
    assert [(e["job_id"], e["tenant"], e["attempts"]) for e in logged] == [(job["id"], "team-a", attempts)]


async def test_unsigned_for_a_tenant_without_a_secret(tmp_path):
    rows = sample_rows(tmp_path, 2)
    async with Receiver() as receiver, aiohttp.ClientSession() as s:
        with service(tmp_path, limits=LIMITS, env=SECRET_ENV) as svc:
            job = await submit(s, svc, rows, receiver.url, tenant="team-b")
            await wait_over(s, svc.url, job["id"], tenant="team-b")
            assert (await callback_over(svc, job["id"]))["status"] == "delivered"
        headers, body = receiver.got[0]
    assert "X-Council-Signature" not in headers and orjson.loads(body)["job"]["tenant"] == "team-b"
    assert [(e["job_id"], e["tenant"]) for e in events(svc, "callback.unsigned")] == [(job["id"], "team-b")]


async def test_a_callback_due_at_drain_is_sent_after_the_restart(tmp_path):
    rows = sample_rows(tmp_path, 2)
    runs = tmp_path / "runs"
    async with Receiver([503] * 100) as receiver, aiohttp.ClientSession() as s:
        with service(tmp_path, limits=LIMITS, env=SECRET_ENV, runs=runs) as first:
            job = await submit(s, first, rows, receiver.url)
            await wait_over(s, first.url, job["id"])
            for _ in range(100):  # bounded: the first attempt has been answered 503
                if (record(first, job["id"]).get("callback") or {}).get("attempts", 0) >= 1:
                    break
                await asyncio.sleep(0.1)
            assert await asyncio.to_thread(first.terminate) == 0
        pending = record(first, job["id"])["callback"]
        assert pending["status"] == "pending" and pending["last_error"] == "HTTP 503"
        receiver.answers.clear()  # the receiver is back
        with service(tmp_path, limits=LIMITS, env=SECRET_ENV, runs=runs) as second:
            state = await callback_over(second, job["id"])
        assert state["status"] == "delivered" and state["attempts"] == len(receiver.got) == pending["attempts"] + 1
        bodies = {body for _, body in receiver.got}
    assert len(bodies) == 1  # the body kept at the job's end, sent again byte for byte
    assert orjson.loads(bodies.pop())["job"]["state"] == "finished"


def test_signatures_backoff_and_old_records():
    body, ts = b'{"job": {}}', "1700000000"
    header = sign(b"k", ts, body)
    assert verify_signature(b"k", ts, body, header) and verify_signature(b"k", ts, body, f" {header} ")
    assert not verify_signature(b"k", ts, body + b" ", header) and not verify_signature(b"k", ts, body, "")
    assert not verify_signature(b"k", ts, body, "sha256=\udcff") and not verify_signature(b"k", "soon", body, header)
    assert not verify_signature(b"k", ts, body, header, max_age_s=300)  # long ago
    policy = RetryPolicy(first_wait_s=0.5, max_wait_s=4.0)
    random.seed(1)
    for retry, low, high in ((1, 0.375, 0.625), (2, 0.75, 1.25), (3, 1.5, 2.5), (4, 3.0, 4.0)):
        waits = [policy.wait_s(retry) for _ in range(50)]
        assert all(low <= w <= high for w in waits) and len(set(waits)) > 1  # doubling, jittered
    assert policy.wait_s(9) == 4.0  # capped
    old = {"id": "job-1", "tenant": "team-a", "created_at": "2025-01-01T00:00:00+00:00", "state": "finished",
           "request_sha256": "0" * 64, "rows": 1, "options": {}, "simulated": True}
    assert JobRecord.model_validate(old).callback is None  # a record written before callbacks still loads
