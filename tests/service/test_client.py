"""The service's Python client and ``council submit`` against a real ``council serve``: verdicts streamed while the
job runs equal its run folder's, NDJSON from a file, idempotent resubmission, errors as ServiceError, and the
command's output and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from council.core.errors import ServiceError
from council.service.client import Client
from tests.service._server import TOKENS, service
from tests.service.test_service import sample_rows, slow_world


def on_disk(runs, job_id: str) -> list[dict]:
    return sorted((orjson.loads(x) for x in (runs / job_id / "verdicts.jsonl").read_bytes().splitlines()),
                  key=lambda v: v["row_id"])


def by_row(verdicts: list[dict]) -> list[dict]:
    return sorted(verdicts, key=lambda v: v["row_id"])


async def test_client_streams_verdicts_while_the_job_runs(tmp_path):
    rows = sample_rows(tmp_path, 16)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows[:8]))
    with service(tmp_path, "--simulate", "--sim-config", str(slow_world(tmp_path))) as svc:
        async with Client(svc.url, TOKENS["team-a"]) as client:
            job = await client.submit(rows)
            got, running_when_first = [], None
            async for verdict in client.verdicts(job["id"]):
                if running_when_first is None:
                    running_when_first = (await client.job(job["id"]))["state"] == "running"
                got.append(verdict)
            view = await client.wait(job["id"], poll_s=0.1, timeout_s=60)
            summary = await client.summary(job["id"])
            from_file = await client.submit(path, idempotency_key="rows-1", options={"seed": 0})
            again = await client.submit(path, idempotency_key="rows-1", options={"seed": 0})
            assert again["id"] == from_file["id"] and from_file["progress"]["rows_total"] == 8
            assert {j["id"] for j in await client.jobs()} == {job["id"], from_file["id"]}
            cancelled = await client.cancel(from_file["id"])
            assert cancelled["id"] == from_file["id"]
            ended = await client.wait(from_file["id"], poll_s=0.1, timeout_s=60)
            with pytest.raises(ServiceError) as bad:
                await client.submit([dict(rows[0], item_id="no-such-item")])
            with pytest.raises(ServiceError) as missing:
                await client.job("job-0000")
        async with Client(svc.url, TOKENS["team-a"] + "x") as wrong:
            with pytest.raises(ServiceError) as refused:
                await wrong.jobs()
        async with Client("http://127.0.0.1:9", TOKENS["team-a"]) as nowhere:
            with pytest.raises(ServiceError) as unreachable:
                await nowhere.jobs()
    assert running_when_first  # the first verdict came while the job was still running
    assert by_row(got) == on_disk(svc.runs, job["id"]) and len(got) == len(rows)
    assert view["state"] == "finished" and summary["run_id"] == job["id"]
    assert ended["state"] in ("cancelled", "finished"), ended
    assert bad.value.status == 422 and bad.value.problem["problems"][0]["field"] == "item_id"
    assert "row 0: item_id" in str(bad.value)
    assert missing.value.status == 404
    assert refused.value.status == 401 and refused.value.problem["error"] == "unauthorized"
    assert unreachable.value.status is None and "cannot reach" in str(unreachable.value)
    assert TOKENS["team-a"] not in str(refused.value) + repr(wrong)


def council(*args: str, token: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COUNCIL_SERVICE_TOKEN"}
    if token is not None:
        env["COUNCIL_SERVICE_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "council.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_council_submit_waits_and_writes_the_verdicts(tmp_path):
    rows = sample_rows(tmp_path, 3)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out.jsonl"
    with service(tmp_path) as svc:
        to_file = council("submit", str(path), "--url", svc.url, "--wait", "--verdicts", str(out), token=TOKENS["team-a"])
        to_stdout = council("submit", str(path), "--url", svc.url, "--wait", "--idempotency-key", "k1",
                            token=TOKENS["team-b"])
        accepted = council("submit", str(path), "--url", svc.url, token=TOKENS["team-a"])
    assert to_file.returncode == 0, to_file.stderr
    job_id = to_file.stdout.strip()
    assert by_row([orjson.loads(x) for x in out.read_bytes().splitlines()]) == on_disk(svc.runs, job_id)
    assert f"job {job_id} finished" in to_file.stderr and "0 not graded" in to_file.stderr
    assert to_stdout.returncode == 0, to_stdout.stderr
    second = to_stdout.stderr.split()[0]  # the id goes to stderr when stdout carries the verdicts
    assert by_row([orjson.loads(x) for x in to_stdout.stdout.splitlines()]) == on_disk(svc.runs, second)
    assert accepted.returncode == 0 and accepted.stdout.strip().startswith("job-")


def test_council_submit_with_a_wrong_or_missing_token(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in sample_rows(tmp_path, 1)))
    with service(tmp_path) as svc:
        wrong = council("submit", str(path), "--url", svc.url, "--wait", token=TOKENS["team-a"] + "x")
        missing = council("submit", str(path), "--url", svc.url, token=None)
        other_var = council("submit", str(path), "--url", svc.url, "--token-env", "MY_TOKEN", token=TOKENS["team-a"])
        nowhere = council("submit", str(path), "--url", "http://127.0.0.1:9", token=TOKENS["team-a"])
    assert wrong.returncode == 2 and "refused the token in $COUNCIL_SERVICE_TOKEN" in wrong.stderr
    assert missing.returncode == 2 and "set COUNCIL_SERVICE_TOKEN" in missing.stderr
    assert other_var.returncode == 2 and "set MY_TOKEN" in other_var.stderr
    assert nowhere.returncode == 2 and "cannot reach the service" in nowhere.stderr
    for result in (wrong, missing, other_var, nowhere):
        assert "Traceback" not in result.stderr and result.stdout == ""
        assert TOKENS["team-a"] not in result.stderr
