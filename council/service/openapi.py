"""``/openapi.json``: OpenAPI 3.1 made from the pydantic models that validate requests and shape answers."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic.json_schema import models_json_schema

from council.service.models import Health, JobList, JobSubmission, JobView, Problem

REF = "#/components/schemas/{model}"
BEARER = [{"bearer": []}]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF.format(model=name)}


def _answer(description: str, schema: dict[str, Any] | None = None, media: str = "application/json",
            headers: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if schema is not None:
        out["content"] = {media: {"schema": schema}}
    if headers:
        out["headers"] = headers
    return out


def _problem(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    return _answer(description, _ref("Problem"), headers=headers)


RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait"}}
JOB_ID = [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}]
COMMON = {"401": _problem("no or wrong bearer token"), "404": _problem("no such job (or another tenant's)")}


@cache
def openapi() -> dict[str, Any]:
    _, schemas = models_json_schema([(m, "validation" if m is JobSubmission else "serialization")
                                     for m in (JobSubmission, JobView, JobList, Problem, Health)],
                                    ref_template=REF)
    job = _answer("the job", _ref("JobView"))
    ndjson_rows = {"type": "object", "additionalProperties": True, "description": "one row per line"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "grading-council", "version": "1",
                 "description": "Grade model outputs with a two-round council of LLM judges from different vendors."},
        "components": {"schemas": schemas["$defs"],
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/jobs": {
                "post": {
                    "summary": "Submit rows to grade", "security": BEARER,
                    "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                    "schema": {"type": "string"},
                                    "description": "a retried submission with the same key returns the same job"}],
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": _ref("JobSubmission")},
                        "application/x-ndjson": {"schema": ndjson_rows}}},
                    "responses": {"201": _answer("the new job", _ref("JobView"), headers={
                        "Location": {"schema": {"type": "string"}}}),
                                  "200": _answer("the job an earlier submission with this Idempotency-Key made",
                                                 _ref("JobView")),
                                  "401": COMMON["401"], "409": _problem("Idempotency-Key used for another request"),
                                  "413": _problem("body over the size limit"),
                                  "415": _problem("neither JSON nor NDJSON"),
                                  "422": _problem("invalid rows, bank or options: every problem, by row index"),
                                  "429": _problem("a tenant limit is reached", RETRY_AFTER),
                                  "503": _problem("the service is stopping", RETRY_AFTER)}},
                "get": {"summary": "The tenant's jobs", "security": BEARER,
                        "responses": {"200": _answer("the jobs", _ref("JobList")), "401": COMMON["401"]}},
            },
            "/v1/jobs/{job_id}": {
                "get": {"summary": "A job's state, progress, counts and spend", "security": BEARER,
                        "parameters": JOB_ID, "responses": {"200": job, **COMMON}},
                "delete": {"summary": "Cancel a job (calls in flight finish and are archived)", "security": BEARER,
                           "parameters": JOB_ID, "responses": {"202": job, **COMMON}},
            },
            "/v1/jobs/{job_id}/verdicts": {
                "get": {"summary": "The job's verdicts, streamed as rows are decided", "security": BEARER,
                        "parameters": JOB_ID, "responses": {
                            "200": _answer("one RowVerdict per line", {"type": "string"}, "application/x-ndjson"),
                            **COMMON}},
            },
            "/v1/jobs/{job_id}/summary": {
                "get": {"summary": "The summary of a job that ended", "security": BEARER, "parameters": JOB_ID,
                        "responses": {"200": _answer("summary.json", {"type": "object"}), **COMMON,
                                      "409": _problem("the job has not ended")}},
            },
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _answer("ok", _ref("Health"))}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {
                "200": _answer("text format", {"type": "string"}, "text/plain")}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {
                "200": _answer("OpenAPI 3.1", {"type": "object"})}}},
        },
    }
