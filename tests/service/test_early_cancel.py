"""A job cancelled before its run has begun (while its rows are still being read) ends cancelled, not failed."""

from __future__ import annotations

import asyncio

import orjson

import bank
from council.service.jobs import JOBS, JobManager
from council.service.models import JobSubmission
from council.service.tenants import Tenant
from tests.service.test_service import sample_rows


async def test_a_job_cancelled_before_its_run_began_is_cancelled(tmp_path):
    jobs = JobManager(tmp_path / "runs", bank.load_bank(bank.SAMPLE_BANK), provider_url=None)
    await jobs.start()
    tenant = Tenant(name="t", token_sha256="0" * 64)
    job, created = jobs.submit(tenant, JobSubmission(rows=sample_rows(tmp_path, 2)), None)
    assert created and job.task is not None and not job.task.done()
    jobs.cancel(job)  # before the job's task has run at all: its run stops before making a folder
    await asyncio.wait_for(job.done.wait(), 60)
    assert job.record.state == "cancelled" and job.record.reason == "interrupt", job.record
    assert not (tmp_path / "runs" / job.record.id / "manifest.json").exists()  # nothing was sent
    saved = orjson.loads((tmp_path / "runs" / JOBS / job.record.id / "job.json").read_bytes())
    assert saved["state"] == "cancelled"
