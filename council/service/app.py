"""The grading service over HTTP (aiohttp): other benchmarks submit jobs, follow them and read their verdicts.

Every ``/v1`` route needs ``Authorization: Bearer <token>`` of a tenant (401 otherwise); a tenant sees and
cancels only its own jobs (another's is 404, so ids are not confirmed). Errors are JSON
(:class:`~council.service.models.Problem`). ``/healthz``, ``/metrics`` and ``/openapi.json`` are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from council.core import logs
from council.store.runfolder import SUMMARY, VERDICTS
from council.service.jobs import LIVE, IdempotencyConflict, Job, JobManager, RowsRejected, TooMany
from council.service.metrics import Metrics
from council.service.models import (IDEMPOTENCY_KEY, TERMINAL, Health, JobList, JobSubmission, Problem,
                                    RowProblem)
from council.service.openapi import openapi
from council.service.tenants import Tenant, Tenants

MAX_BODY = 64 * 2**20  # bytes of one submission
TAIL_S = 0.1  # how often a running job's verdicts are looked at while streaming them
NDJSON = "application/x-ndjson"
JOBS: web.AppKey[JobManager] = web.AppKey("jobs", JobManager)
TENANTS: web.AppKey[Tenants] = web.AppKey("tenants", Tenants)
METRICS: web.AppKey[Metrics] = web.AppKey("metrics", Metrics)
TENANT = "council_tenant"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def problem(status: int, error: str, detail: str | None = None, problems: list[RowProblem] | None = None,
            headers: dict[str, str] | None = None) -> web.Response:
    body = Problem(error=error, detail=detail, problems=problems or [])
    return web.Response(status=status, body=body.model_dump_json(exclude_defaults=True).encode(),
                        content_type="application/json", headers=headers)


def _json(model: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=model.model_dump_json().encode(), content_type="application/json",
                        headers=headers)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as a Problem; an unexpected one logged (without the request's headers) and answered 500."""
    metrics = request.app[METRICS]
    started = time.perf_counter()
    route = request.match_info.route.resource.canonical if request.match_info.route.resource else "unmatched"
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        return problem(exc.status, exc.reason, exc.text if exc.text and exc.text != f"{exc.status}: {exc.reason}"
                       else None, headers={k: v for k, v in exc.headers.items() if k in ("Allow", "Retry-After")})
    except Exception as exc:  # noqa: BLE001 - the service answers; the job and other requests go on
        logs.get_logger("council.service").error("request.failed", route=route, error=repr(exc))
        return problem(500, "internal error")
    finally:
        metrics.request(request.method, route, status, time.perf_counter() - started)


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/v1/"):
        tenant = request.app[TENANTS].authenticate(_text(request.headers.get("Authorization")))
        if tenant is None:
            return problem(401, "unauthorized", "send Authorization: Bearer <token> of a tenant",
                           headers={"WWW-Authenticate": 'Bearer realm="grading-council"'})
        request[TENANT] = tenant
    return await handler(request)


def _text(header: str | None) -> str | None:
    """A header as text, or None when its bytes were not UTF-8 (aiohttp keeps them as lone surrogates)."""
    if header is None:
        return None
    try:
        header.encode()
    except UnicodeEncodeError:
        return None
    return header


def _tenant(request: web.Request) -> Tenant:
    return request[TENANT]


async def _submission(request: web.Request) -> JobSubmission:
    """The body as a submission: JSON (:class:`JobSubmission`, no query parameters) or NDJSON rows with the other
    fields as query parameters. Raises RowsRejected with every problem."""
    try:
        body = await request.read()
    except web.RequestPayloadError as exc:  # e.g. a body that is not what its Content-Encoding says
        raise web.HTTPBadRequest(text=f"the body could not be read: {str(exc).splitlines()[-1].strip()}") from None
    try:
        if request.content_type == NDJSON:
            return JobSubmission.model_validate({"rows": _ndjson_rows(body), **_query_fields(request)})
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text=f"send application/json or {NDJSON}")
        if request.query:
            raise RowsRejected([RowProblem(index=-1, field=name, problem=f"read with an {NDJSON} body only; put it in "
                                           "the JSON body") for name in sorted(set(request.query))])
        return JobSubmission.model_validate_json(body)
    except ValidationError as exc:
        raise RowsRejected([_located(e) for e in exc.errors()]) from None


def _ndjson_rows(body: bytes) -> list[Any]:
    rows = []
    for number, line in enumerate(body.splitlines()):
        if line.strip():
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise RowsRejected([RowProblem(index=number, field="row", problem=f"not JSON: {exc}")]) from None
    return rows


def _query_fields(request: web.Request) -> dict[str, Any]:
    """The submission's fields an NDJSON body comes with: each query parameter once, ``options`` as JSON."""
    twice = sorted(k for k in set(request.query) if len(request.query.getall(k)) > 1)
    if twice:
        raise RowsRejected([RowProblem(index=-1, field=k, problem="given more than once") for k in twice])
    fields: dict[str, Any] = dict(request.query)
    if "options" in fields:
        try:
            fields["options"] = orjson.loads(fields["options"])
        except orjson.JSONDecodeError as exc:
            raise RowsRejected([RowProblem(index=-1, field="options", problem=f"not JSON: {exc}")]) from None
    return fields


def _located(error: Any) -> RowProblem:
    loc = list(error["loc"])
    if len(loc) >= 2 and loc[0] == "rows" and isinstance(loc[1], int):
        return RowProblem(index=loc[1], field=".".join(map(str, loc[2:])) or "row", problem=error["msg"])
    return RowProblem(index=-1, field=".".join(map(str, loc)) or "body", problem=error["msg"])


async def submit(request: web.Request) -> web.Response:
    jobs = request.app[JOBS]
    if jobs.draining:
        return problem(503, "draining", "the service is stopping; submit again shortly", headers={"Retry-After": "5"})
    tenant = _tenant(request)
    try:
        key = _idempotency_key(request)
        submission = await _submission(request)
        job, created = jobs.submit(tenant, submission, key)
    except RowsRejected as exc:
        return problem(422, "invalid submission", str(exc), exc.problems)
    except TooMany as exc:
        request.app[METRICS].limited(tenant.name)
        return problem(429, "limit reached", str(exc), headers={"Retry-After": str(max(1, exc.retry_after_s))})
    except IdempotencyConflict as exc:
        return problem(409, "idempotency conflict", str(exc))
    return _json(job.view(), 201 if created else 200, headers={"Location": f"/v1/jobs/{job.record.id}"})


def _idempotency_key(request: web.Request) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    try:
        return IDEMPOTENCY_KEY.validate_python(key)
    except ValidationError as exc:
        raise RowsRejected([RowProblem(index=-1, field="Idempotency-Key", problem=e["msg"])
                            for e in exc.errors()]) from None


def _job(request: web.Request) -> Job:
    job = request.app[JOBS].get(_tenant(request), request.match_info["job_id"])
    if job is None:
        raise web.HTTPNotFound(text="no such job")
    return job


async def list_jobs(request: web.Request) -> web.Response:
    return _json(JobList(jobs=[j.view() for j in request.app[JOBS].of(_tenant(request))]))


async def get_job(request: web.Request) -> web.Response:
    return _json(_job(request).view())


async def cancel_job(request: web.Request) -> web.Response:
    job = _job(request)
    request.app[JOBS].cancel(job)
    return _json(job.view(), 202)


async def summary(request: web.Request) -> web.Response:
    job = _job(request)
    path = job.folder / SUMMARY
    if job.record.state not in TERMINAL or not path.is_file():
        return problem(409, "not finished", f"the job is {job.record.state}; its summary is written when it ends")
    return web.Response(body=path.read_bytes(), content_type="application/json")


async def verdicts(request: web.Request) -> web.StreamResponse:
    """The job's verdicts as NDJSON, streamed: a running job's rows as they are decided until it ends, then any
    row it never reached (a stopped job's rows are in its final verdicts, not graded)."""
    job = _job(request)
    response = web.StreamResponse(headers={"Content-Type": NDJSON})
    await response.prepare(request)
    final = job.folder / VERDICTS
    sent: set[str] = set()
    if not (job.record.state in TERMINAL and final.is_file()):
        offset = 0
        while True:
            over = job.done.is_set()
            offset = await _send_new_lines(job.folder / LIVE, offset, response, sent)
            if over:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.done.wait(), TAIL_S)
    if final.is_file():
        await _send_new_lines(final, 0, response, sent)
    await response.write_eof()
    return response


async def _send_new_lines(path: Path, offset: int, response: web.StreamResponse, sent: set[str]) -> int:
    """Send the whole lines of ``path`` after ``offset`` whose row was not sent yet; returns the new offset."""
    if not path.is_file():
        return offset
    with open(path, "rb") as handle:
        handle.seek(offset)
        chunk = handle.read()
    end = chunk.rfind(b"\n") + 1
    out = []
    for line in chunk[:end].splitlines(keepends=True):
        row_id = orjson.loads(line)["row_id"]
        if row_id not in sent:
            sent.add(row_id)
            out.append(line)
    if out:
        await response.write(b"".join(out))
    return offset + end


async def healthz(request: web.Request) -> web.Response:
    jobs = request.app[JOBS]
    states = [j.record.state for j in jobs.jobs.values()]
    return _json(Health(status="draining" if jobs.draining else "ok", jobs_running=states.count("running"),
                        jobs_queued=states.count("queued")))


async def metrics(request: web.Request) -> web.Response:
    body, content_type = request.app[METRICS].render()
    return web.Response(body=body, headers={"Content-Type": content_type})


async def openapi_json(request: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(openapi()), content_type="application/json")


def make_app(jobs: JobManager, tenants: Tenants, *, max_body: int = MAX_BODY) -> web.Application:
    app = web.Application(middlewares=[_errors, _auth], client_max_size=max_body)
    app[JOBS] = jobs
    app[TENANTS] = tenants
    app[METRICS] = Metrics(jobs)
    jobs.on_record = app[METRICS].call
    app.router.add_post("/v1/jobs", submit)
    app.router.add_get("/v1/jobs", list_jobs)
    app.router.add_get("/v1/jobs/{job_id}", get_job)
    app.router.add_delete("/v1/jobs/{job_id}", cancel_job)
    app.router.add_get("/v1/jobs/{job_id}/verdicts", verdicts)
    app.router.add_get("/v1/jobs/{job_id}/summary", summary)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/openapi.json", openapi_json)

    async def started(_: web.Application) -> None:
        await jobs.start()

    async def stopping(_: web.Application) -> None:
        await jobs.drain()

    app.on_startup.append(started)
    app.on_shutdown.append(stopping)
    return app
