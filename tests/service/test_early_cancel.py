"""A job cancelled before its run has begun (while its rows are still being read) ends cancelled, not failed, with
every row counted as not graded (in its view, and again once the service restarts)."""

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
    rows = sample_rows(tmp_path, 2)
    job, created = jobs.submit(tenant, JobSubmission(rows=rows), None)
    assert created and job.task is not None and not job.task.done()
    jobs.cancel(job)  # before the job's task has run at all: its run stops before making a folder
    await asyncio.wait_for(job.done.wait(), 60)
    assert job.record.state == "cancelled" and job.record.reason == "interrupt", job.record
    assert job.view().counts.model_dump() == {"graded_rows": 0, "not_graded_rows": len(rows), "refused_rows": 0}
    assert not (tmp_path / "runs" / job.record.id / "manifest.json").exists()  # nothing was sent
    saved = orjson.loads((tmp_path / "runs" / JOBS / job.record.id / "job.json").read_bytes())
    assert saved["state"] == "cancelled"
    again = JobManager(tmp_path / "runs", bank.load_bank(bank.SAMPLE_BANK), provider_url=None)
    await again.start()  # the service restarted: the job is read back from its record
    assert again.jobs[job.record.id].view().counts == job.view().counts
