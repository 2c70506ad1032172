"""The service's jobs: each a run folder under the runs root, graded by the same runner as ``council run``.

A submission is validated whole (every bad row reported, nothing kept from a bad submission), then its
record, rows and bank are written to ``<root>/.jobs/<id>/`` before it is answered. The job then runs as a
task of the service's event loop. When the service starts it reads every job record: a job that was queued
or running when the service died is resumed from its run folder's archive (or started, if its folder was
never made), so no verdict is lost and no archived call is paid again. Cancelling a job, or stopping the
service (SIGTERM), stops it like Ctrl-C stops a run: nothing new is sent, calls in flight finish and are
archived.

Verdicts are given out while a job runs: a row's verdict is written to ``verdicts.live.jsonl`` in its run
folder as soon as its second round is in (the record ``verdicts.jsonl`` will hold for it).

A job with a ``callback_url`` is posted its summary when it ends (:mod:`council.service.callbacks`), in the
background. The callback's body and its ``pending`` state are saved with the job's end, so one still due when the
service stops is sent when it next starts.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bank import load_bank
from council.core import logs
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Rule
from council.core.errors import ConfigError, CouncilError
from council.transport.limiter import LocalLedger
from council.transport.quota import QuotaLedger
from council.store.runfolder import MANIFEST, SUMMARY, dump_json, dump_line, run_path
from council.run.runner import RunHooks, RunRequest, check_budget, resume_council, run_council
from council.core.schema import BankItem, JudgeCallRecord, ResponseRow
from council.scoring.scoring import row_verdict
from council.service.callbacks import CallbackState, RetryPolicy, deliver
from council.service.intake import RowsRejected, check_rows
from council.service.models import (TERMINAL, Counts, JobOptions, JobState, JobSubmission, JobView, Progress,
                                    RowProblem)
from council.service.tenants import Tenant, Tenants
from council.grading.stop import StopControl, Stopped

JOBS = ".jobs"  # under the runs root; a run id never starts with "."
LIVE = "verdicts.live.jsonl"
CALLBACK_BODY = "callback.json"  # under the job's home: the body its callback sends
CALLBACK_GRACE_S = 5.0  # how long a draining service lets callbacks in progress go on; the rest stay pending


class JobRecord(BaseModel):
    """What the service keeps of a job besides its run folder (``<root>/.jobs/<id>/job.json``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    created_at: str
    state: JobState = "queued"
    reason: str | None = None
    idempotency_key: str | None = None
    request_sha256: str
    rows: int
    options: JobOptions
    budget_usd: float | None = None
    callback_url: str | None = None
    simulated: bool
    started_at: str | None = None
    finished_at: str | None = None
    errors: list[str] = Field(default_factory=list)
    callback: CallbackState | None = None  # set when the job ends, if it has a callback_url


class TooMany(CouncilError):
    """A tenant's limit is reached; ``retry_after_s`` says when asking again makes sense."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class IdempotencyConflict(CouncilError):
    """An Idempotency-Key used before with a different request."""


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class SharedQuota:
    """One ledger per vendor for every job of the service (one account, one limit); each job leases from it as
    its own holder, named ``<tenant>/<job>``."""

    def __init__(self, config: CouncilConfig) -> None:
        self.config = config
        self.ledgers: dict[str, QuotaLedger] = {}

    def handle(self, vendor: str) -> LocalLedger:
        ledger = self.ledgers.get(vendor)
        if ledger is None:
            ledger = self.ledgers[vendor] = QuotaLedger(self.config.settings(vendor).limits)
        return LocalLedger(ledger)


class Job:
    """A job while the service runs: its record, and what its run task reports."""

    def __init__(self, record: JobRecord, folder: Path) -> None:
        self.record = record
        self.folder = folder  # the run folder (made when the job starts)
        self.stop = StopControl()
        self.task: asyncio.Task[None] | None = None
        self.progress = Progress(rows_total=record.rows)
        self.counts = Counts()
        self.spend_usd = 0.0
        self.done = asyncio.Event()

    def view(self) -> JobView:
        r = self.record
        base = f"/v1/jobs/{r.id}"
        return JobView(id=r.id, tenant=r.tenant, state=r.state, reason=r.reason, created_at=r.created_at,
                       started_at=r.started_at, finished_at=r.finished_at, simulated=r.simulated,
                       progress=self.progress, counts=self.counts, spend_usd=round(self.spend_usd, 6),
                       errors=r.errors, links={"self": base, "verdicts": base + "/verdicts", "summary": base + "/summary"})


class JobManager:
    """Every job of the service, durable in the runs root."""

    def __init__(self, root: Path, bank: list[BankItem], *, provider_url: str | None, sim_config: Path | None = None,
                 config: CouncilConfig | None = None, on_record: Callable[[JudgeCallRecord], None] | None = None,
                 tenants: Tenants | None = None, callback_policy: RetryPolicy | None = None) -> None:
        self.root = Path(root)
        self.bank = bank
        self.provider_url = provider_url
        self.sim_config = sim_config
        self.config = config or CouncilConfig()
        self.jobs: dict[str, Job] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (tenant, idempotency key) -> job id
        self.on_record = on_record  # every judge-call record a job archives (the metrics)
        self.quota = SharedQuota(self.config)
        self.draining = False
        self.log = logs.get_logger("council.service")
        self.tenants: dict[str, Tenant] = dict(tenants.by_name) if tenants is not None else {}  # callback secrets
        self.callback_policy = callback_policy or RetryPolicy()
        self._callbacks: set[asyncio.Task[None]] = set()

    # -- start and stop ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Load every job record; resume the jobs that were not over when the service last stopped."""
        (self.root / JOBS).mkdir(parents=True, exist_ok=True)
        for path in sorted((self.root / JOBS).glob("*/job.json")):
            record = JobRecord.model_validate_json(path.read_bytes())
            job = self._add(record)
            if record.state in TERMINAL:
                self._settle_counts(job)
                job.done.set()
                if record.callback is not None and record.callback.status == "pending":
                    self._send_callback(job)
            else:
                self.log.info("job.resume", job_id=record.id, tenant=record.tenant, state=record.state)
                self._launch(job)

    async def drain(self) -> None:
        """Stop every running job as SIGTERM stops a run (calls in flight finish and are archived); the jobs
        stay resumable and are taken up again when the service next starts."""
        self.draining = True
        running = [j for j in self.jobs.values() if j.task is not None and not j.task.done()]
        for job in running:
            job.stop.request("terminate")
        await asyncio.gather(*(j.task for j in running if j.task is not None), return_exceptions=True)
        if self._callbacks:
            _, late = await asyncio.wait(set(self._callbacks), timeout=CALLBACK_GRACE_S)
            for task in late:
                task.cancel()  # still pending in its record: sent at the next start
            await asyncio.gather(*late, return_exceptions=True)

    # -- submission ----------------------------------------------------------------------------------------
    def submit(self, tenant: Any, submission: JobSubmission, idempotency_key: str | None) -> tuple[Job, bool]:
        """The job for this submission (new, or the one an earlier submission with the same Idempotency-Key
        made: then ``False``). Raises RowsRejected, TooMany or IdempotencyConflict."""
        digest = hashlib.sha256(submission.model_dump_json().encode()).hexdigest()
        if idempotency_key is not None:
            known = self._keys.get((tenant.name, idempotency_key))
            if known is not None:
                job = self.jobs[known]
                if job.record.request_sha256 != digest:
                    raise IdempotencyConflict(f"Idempotency-Key {idempotency_key!r} was used for another request")
                return job, False
        if len(submission.rows) > tenant.max_rows_per_job:
            raise TooMany(f"{len(submission.rows)} rows is over this tenant's limit of {tenant.max_rows_per_job} "
                          "rows per job: split the submission", 0)
        running = sum(1 for j in self.jobs.values() if j.record.tenant == tenant.name and j.record.state not in TERMINAL)
        if running >= tenant.max_running_jobs:
            raise TooMany(f"this tenant already has {running} jobs running (its limit)", 30)
        items = submission.bank if submission.bank is not None else self.bank
        self.config_for(submission.options, submission.budget_usd)
        rows = check_rows(submission, items)
        self.tenants.setdefault(tenant.name, tenant)
        record = JobRecord(id=f"job-{secrets.token_hex(8)}", tenant=tenant.name, created_at=now(),
                           idempotency_key=idempotency_key, request_sha256=digest, rows=len(rows),
                           options=submission.options, budget_usd=submission.budget_usd,
                           callback_url=str(submission.callback_url) if submission.callback_url else None,
                           simulated=self.provider_url is None)
        home = self._home(record.id)
        home.mkdir(parents=True)
        used = {r.item_id for r in rows}
        _write_lines(home / "bank.jsonl", [i for i in items if i.id in used])
        _write_lines(home / "rows.jsonl", rows)
        job = self._add(record)
        self._save(job)
        self.log.info("job.submitted", job_id=record.id, tenant=tenant.name, rows=record.rows)
        self._launch(job)
        return job, True

    def config_for(self, options: JobOptions, budget_usd: float | None) -> CouncilConfig:
        """The service's council config with a job's options on top; RowsRejected when they do not fit."""
        try:
            config = CouncilConfig.model_validate({**self.config.model_dump(), **options.model_dump(),
                                                   "budget_usd": budget_usd})
        except ValidationError as exc:
            raise RowsRejected([RowProblem(index=-1, field=".".join(["options", *map(str, e["loc"])]),
                                           problem=e["msg"]) for e in exc.errors()]) from None
        try:
            check_budget(config, [])
        except ConfigError as exc:
            raise RowsRejected([RowProblem(index=-1, field="budget_usd", problem=str(exc))]) from None
        return config

    def get(self, tenant: Any, job_id: str) -> Job | None:
        """The tenant's job ``job_id``; another tenant's job is None, as an unknown one is."""
        job = self.jobs.get(job_id)
        return job if job is not None and job.record.tenant == tenant.name else None

    def of(self, tenant: Any) -> list[Job]:
        return sorted((j for j in self.jobs.values() if j.record.tenant == tenant.name),
                      key=lambda j: j.record.created_at)

    def cancel(self, job: Job) -> None:
        if job.record.state not in TERMINAL:
            job.stop.request("interrupt", "cancelled")

    # -- running -------------------------------------------------------------------------------------------
    def _launch(self, job: Job) -> None:
        job.task = asyncio.create_task(self._run(job), name=f"job {job.record.id}")

    async def _run(self, job: Job) -> None:
        record = job.record
        home = self._home(record.id)
        config = self.config_for(record.options, record.budget_usd)
        self._set(job, state="running", started_at=record.started_at or now())
        (job.folder / LIVE).unlink(missing_ok=True)  # a resumed job gives out every row again, archived or not
        live = _LiveVerdicts(job, config, self.on_record, {i.id: i for i in load_bank(home / "bank.jsonl")})
        try:
            with structlog.contextvars.bound_contextvars(job_id=record.id, tenant=record.tenant):
                if (job.folder / MANIFEST).is_file():
                    result = await resume_council(self.root, record.id, command=f"serve: job {record.id} resumed",
                                                  hooks=live.hooks(self.quota), stop=job.stop)
                else:
                    req = RunRequest(bank=home / "bank.jsonl", responses=home / "rows.jsonl", runs_dir=self.root,
                                     run_id=record.id, backend="local", provider_url=self.provider_url,
                                     sim_config=self.sim_config, config=config, command=f"serve: job {record.id}")
                    result = await run_council(req, hooks=live.hooks(self.quota), stop=job.stop)
        except Stopped:  # stopped before its run folder was made (while its rows were read): nothing was sent
            live.close()
            self._settle_counts(job)
            state = "cancelled" if job.stop.detail == "cancelled" else "stopped"
            if job.stop.reason == "terminate" and self.draining:
                self._set(job, state="running", reason=job.stop.reason, finished_at=None)  # begun again on restart
            else:
                self._end(job, state=state, reason=job.stop.reason, finished_at=now())
            return
        except Exception as exc:  # the job failed; the service goes on
            live.close()
            self.log.error("job.failed", job_id=record.id, tenant=record.tenant, error=str(exc))
            self._end(job, state="failed", reason=type(exc).__name__, errors=[*record.errors, str(exc)],
                      finished_at=now())
            return
        live.close()
        stop = result.stop
        if stop is not None and stop.requested:
            state: JobState = "cancelled" if stop.detail == "cancelled" else "stopped"
            if stop.reason == "terminate" and self.draining:
                state = "running"  # drained with the service: resumed when it starts again
            reason = stop.reason
        else:
            state, reason = "finished", None
        errors = [*record.errors, str(result.error)] if result.error is not None else record.errors
        self._settle_counts(job, result.summary)
        if state == "running":
            self._set(job, state=state, reason=reason, errors=errors, finished_at=None)
        else:
            self._end(job, state=state, reason=reason, errors=errors, finished_at=now())

    def _end(self, job: Job, **changes: Any) -> None:
        """Record the job's end, with its callback due (body kept, state pending) if it has a callback URL; then
        release its followers and send the callback."""
        job.record = job.record.model_copy(update=changes)
        if job.record.callback_url is not None:
            (self._home(job.record.id) / CALLBACK_BODY).write_bytes(self._callback_body(job))
            job.record = job.record.model_copy(update={"callback": CallbackState()})
        self._save(job)
        job.done.set()
        if job.record.callback is not None:
            self._send_callback(job)

    # -- callbacks -------------------------------------------------------------------------------------------
    def _callback_body(self, job: Job) -> bytes:
        try:
            summary = orjson.loads((job.folder / SUMMARY).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            summary = None  # a job that failed before its summary was written
        return orjson.dumps({"job": job.view().model_dump(mode="json"), "summary": summary})

    def _send_callback(self, job: Job) -> None:
        task = asyncio.create_task(self._callback(job), name=f"callback {job.record.id}")
        self._callbacks.add(task)
        task.add_done_callback(self._callbacks.discard)

    async def _callback(self, job: Job) -> None:
        """Deliver the job's callback, keeping its state in the job record after every attempt."""
        record = job.record
        ids = {"job_id": record.id, "tenant": record.tenant}
        try:
            path = self._home(record.id) / CALLBACK_BODY
            body = path.read_bytes() if path.is_file() else self._callback_body(job)
            tenant = self.tenants.get(record.tenant)
            secret = tenant.callback_secret() if tenant is not None else None
            if secret is None:
                self.log.warning("callback.unsigned", **ids, env_var=tenant.callback_secret_env if tenant else None,
                                 why="the tenant has no callback secret (callback_secret_env unset or empty)")
            state = await deliver(str(record.callback_url), record.id, body, secret, record.callback or CallbackState(),
                                  policy=self.callback_policy, on_attempt=lambda s: self._set(job, callback=s))
        except Exception as exc:  # noqa: BLE001 - the service goes on; the callback stays pending
            self.log.error("callback.error", **ids, error=repr(exc))
            return
        log = self.log.info if state.status == "delivered" else self.log.warning
        log(f"callback.{state.status}", **ids, attempts=state.attempts, error=state.last_error)

    def _settle_counts(self, job: Job, summary: dict[str, Any] | None = None) -> None:
        if summary is None:
            path = job.folder / SUMMARY
            if not path.is_file():  # over before its run wrote a summary: none of its rows was graded
                job.counts = Counts(not_graded_rows=job.record.rows)
                return
            summary = orjson.loads(path.read_bytes())
        total = int(summary.get("rows_total", 0))
        not_graded = int(summary.get("not_graded_rows", 0))
        job.counts = Counts(graded_rows=total - not_graded, not_graded_rows=not_graded,
                            refused_rows=int(summary.get("refused_rows", 0)))
        job.spend_usd = float(summary.get("cost_usd") or 0.0)
        job.progress = job.progress.model_copy(update={"rows_done": total})

    # -- records ---------------------------------------------------------------------------------------------
    def _home(self, job_id: str) -> Path:
        return self.root / JOBS / job_id

    def _add(self, record: JobRecord) -> Job:
        job = Job(record, run_path(self.root, record.id))
        self.jobs[record.id] = job
        if record.idempotency_key is not None:
            self._keys[(record.tenant, record.idempotency_key)] = record.id
        return job

    def _set(self, job: Job, **changes: Any) -> None:
        job.record = job.record.model_copy(update=changes)
        self._save(job)

    def _save(self, job: Job) -> None:
        path = self._home(job.record.id) / "job.json"
        tmp = path.with_name("job.json.tmp")
        tmp.write_bytes(dump_json(job.record.model_dump(mode="json")))
        tmp.replace(path)

    def counts_by_state(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for job in self.jobs.values():
            key = (job.record.tenant, job.record.state)
            out[key] = out.get(key, 0) + 1
        return out


class _LiveVerdicts:
    """A running job's progress, and each row's verdict appended to ``verdicts.live.jsonl`` as it is decided."""

    def __init__(self, job: Job, config: CouncilConfig, on_record: Callable[[JudgeCallRecord], None] | None,
                 items: dict[str, BankItem]) -> None:
        self.job = job
        self.config = config
        self.items = items
        self._on_record = on_record
        self._handle = None

    def hooks(self, quota: SharedQuota) -> RunHooks:
        return RunHooks(on_progress=self.progress, on_row_graded=self.graded, on_record=self.record,
                        ledger=quota.handle, holder=f"{self.job.record.tenant}/{self.job.record.id}")

    def record(self, record: JudgeCallRecord) -> None:
        self.job.spend_usd += record.cost_usd
        if self._on_record is not None:
            self._on_record(record)

    def progress(self, rows: int) -> None:
        p = self.job.progress
        self.job.progress = p.model_copy(update={"rows_done": p.rows_done + rows})

    def graded(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        p = self.job.progress
        self.job.progress = p.model_copy(update={
            "votes_round1": p.votes_round1 + sum(r.round == 1 for r in records),
            "votes_round2": p.votes_round2 + sum(r.round == 2 for r in records)})
        verdict = row_verdict(row, records, self.config.roster, self.config.self_exclusion, self.config.quorum,
                              refused=refused, item=self.items.get(row.item_id), deliberation=Rule.of(self.config))
        if self._handle is None:
            self._handle = open(self.job.folder / LIVE, "ab")
        self._handle.write(dump_line(verdict.model_dump(mode="json")))
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


def _write_lines(path: Path, records: list[BaseModel]) -> None:
    path.write_bytes(b"".join(dump_line(r.model_dump(mode="json")) for r in records))
