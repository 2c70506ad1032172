"""``/openapi.json``: OpenAPI 3.1 made from the pydantic models that validate requests and shape answers."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic.json_schema import models_json_schema

from council.service.models import IDEMPOTENCY_KEY, Health, JobList, JobSubmission, JobView, Problem

REF = "#/components/schemas/{model}"
BEARER = [{"bearer": []}]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF.format(model=name)}


def _answer(description: str, schema: dict[str, Any] | None = None, media: str = "application/json",
            headers: dict[str, Any] | None = None, links: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if schema is not None:
        out["content"] = {media: {"schema": schema}}
    if headers:
        out["headers"] = headers
    if links:
        out["links"] = links
    return out


def _problem(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    return _answer(description, _ref("Problem"), headers=headers)


RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait", "required": True}}
LOCATION = {"Location": {"schema": {"type": "string"}, "description": "the job's URL", "required": True}}
JOB_ID = [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}]
COMMON = {"401": _problem("no or wrong bearer token", {"WWW-Authenticate": {"schema": {"type": "string"},
                                                                            "required": True}}),
          "404": _problem("no such job (or another tenant's)")}
# What a job's id leads to, from any answer that is a JobView.
LINKS = {op: {"operationId": op, "parameters": {"job_id": "$response.body#/id"}}
         for op in ("getJob", "cancelJob", "getVerdicts", "getSummary")}
NDJSON_ONLY = "with an application/x-ndjson body only (a JSON body carries it as a field)"


def _ndjson_query(submission: dict[str, Any]) -> list[dict[str, Any]]:
    """The query parameters of an NDJSON submission: every field of :class:`JobSubmission` but its rows and bank,
    each with the field's own schema (``options`` as JSON)."""
    out = []
    for name, schema in submission["properties"].items():
        if name in ("rows", "bank"):
            continue
        if "$ref" in schema:
            out.append({"name": name, "in": "query", "description": NDJSON_ONLY,
                        "content": {"application/json": {"schema": schema}}})
            continue
        branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
        value = branches[0] if len(branches) == 1 else {"anyOf": branches}
        value = {**{k: v for k, v in value.items() if k != "title"},
                 **{k: v for k, v in schema.items() if k in ("default", "description") and v is not None}}
        out.append({"name": name, "in": "query", "description": NDJSON_ONLY, "schema": value})
    return out


@cache
def openapi() -> dict[str, Any]:
    _, schemas = models_json_schema([(m, "validation" if m is JobSubmission else "serialization")
                                     for m in (JobSubmission, JobView, JobList, Problem, Health)],
                                    ref_template=REF)
    job = _answer("the job", _ref("JobView"), links=LINKS)
    submission = schemas["$defs"]["JobSubmission"]
    ndjson_rows = {**submission["properties"]["rows"], "description": "one row per line"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "grading-council", "version": "1",
                 "description": "Grade model outputs with a two-round council of LLM judges from different vendors."},
        "components": {"schemas": schemas["$defs"],
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/jobs": {
                "post": {
                    "summary": "Submit rows to grade", "operationId": "submitJob", "security": BEARER,
                    "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                    "schema": IDEMPOTENCY_KEY.json_schema(), "example": "upload-0001",
                                    "description": "a retried submission with the same key returns the same job"},
                                   *_ndjson_query(submission)],
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": _ref("JobSubmission")},
                        "application/x-ndjson": {"schema": ndjson_rows}}},
                    "responses": {"201": _answer("the new job", _ref("JobView"), headers=LOCATION, links=LINKS),
                                  "200": _answer("the job an earlier submission with this Idempotency-Key made",
                                                 _ref("JobView"), headers=LOCATION, links=LINKS),
                                  "400": _problem("the body could not be read (e.g. not what its Content-Encoding "
                                                  "says)"),
                                  "401": COMMON["401"], "409": _problem("Idempotency-Key used for another request"),
                                  "413": _problem("body over the size limit"),
                                  "415": _problem("neither JSON nor NDJSON"),
                                  "422": _problem("invalid rows, bank, options, query or Idempotency-Key: every "
                                                  "problem, by row index"),
                                  "429": _problem("a tenant limit is reached", RETRY_AFTER),
                                  "503": _problem("the service is stopping", RETRY_AFTER)}},
                "get": {"summary": "The tenant's jobs", "operationId": "listJobs", "security": BEARER,
                        "responses": {"200": _answer("the jobs", _ref("JobList")), "401": COMMON["401"]}},
            },
            "/v1/jobs/{job_id}": {
                "get": {"summary": "A job's state, progress, counts and spend", "operationId": "getJob",
                        "security": BEARER, "parameters": JOB_ID, "responses": {"200": job, **COMMON}},
                "delete": {"summary": "Cancel a job (calls in flight finish and are archived)",
                           "operationId": "cancelJob", "security": BEARER,
                           "parameters": JOB_ID, "responses": {"202": job, **COMMON}},
            },
            "/v1/jobs/{job_id}/verdicts": {
                "get": {"summary": "The job's verdicts, streamed as rows are decided", "operationId": "getVerdicts",
                        "security": BEARER,
                        "parameters": JOB_ID, "responses": {
                            "200": _answer("one RowVerdict per line", {"type": "string"}, "application/x-ndjson"),
                            **COMMON}},
            },
            "/v1/jobs/{job_id}/summary": {
                "get": {"summary": "The summary of a job that ended", "operationId": "getSummary", "security": BEARER,
                        "parameters": JOB_ID,
                        "responses": {"200": _answer("summary.json", {"type": "object"}), **COMMON,
                                      "409": _problem("the job has not ended")}},
            },
            "/healthz": {"get": {"summary": "Liveness", "operationId": "health",
                                 "responses": {"200": _answer("ok", _ref("Health"))}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "operationId": "metrics", "responses": {
                "200": _answer("text format", {"type": "string"}, "text/plain")}}},
            "/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "responses": {
                "200": _answer("OpenAPI 3.1", {"type": "object"})}}},
        },
    }
