"""``/openapi.json`` against a real ``council serve --simulate`` on 127.0.0.1: the document is valid OpenAPI 3.1,
names every route the app serves and forbids unknown fields in every request model; schemathesis finds no answer
outside it (no 5xx; status codes, content types, required headers and bodies as documented), generating requests
per operation and following the document's links from a submitted job."""

from __future__ import annotations

import json
import time

import orjson
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from pydantic import AnyHttpUrl, TypeAdapter, ValidationError
from schemathesis.checks import not_a_server_error
from schemathesis.generation.meta import negated_parameters
from schemathesis.specs.openapi.checks import (content_type_conformance, ignored_auth, negative_data_rejection,
                                               response_headers_conformance, response_schema_conformance,
                                               status_code_conformance, unsupported_method)

from council.service.app import make_app
from council.service.jobs import JobManager
from council.service.models import JobSubmission
from council.service.openapi import openapi
from council.service.tenants import Tenant, Tenants
from tests.service._server import auth, service

SEED = 20260
EXAMPLES = 40  # per operation (and per generation mode where both apply)
# What gets through is tiny and rare: team-a may run one job of at most 2 rows at a time. team-c, which the stateful
# test drives, has no running-jobs limit: whether a submission is taken (and so which links a step can follow) must
# not depend on whether an earlier job has finished yet, or Hypothesis, replaying a step, sees another machine.
LIMITS = {"team-a": {"max_running_jobs": 1, "max_rows_per_job": 2}, "team-c": {"max_running_jobs": 100_000}}
CONFORMANCE = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
               response_headers_conformance]
CHECKS = [*CONFORMANCE, negative_data_rejection, ignored_auth, unsupported_method]
QUIET = settings(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
HTTP_URL = TypeAdapter(AnyHttpUrl)
EXAMPLE = JobSubmission.model_config["json_schema_extra"]["examples"][0]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with service(tmp_path_factory.mktemp("openapi"), limits=LIMITS) as svc:
        yield svc


@pytest.fixture(scope="module")
def api_schema(served):
    config = schemathesis.Config.from_dict({"seed": SEED, "generation": {
        "mode": "all", "max-examples": EXAMPLES, "deterministic": True, "database": "none", "no-shrink": True}})
    return schemathesis.openapi.from_url(f"{served.url}/openapi.json", config=config, timeout=10)


@schemathesis.serializer("application/x-ndjson")
def _ndjson(_ctx, value):
    lines = value if isinstance(value, list) else [value]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _adapt(case) -> bool:
    """Query parameters go with an NDJSON body only (as documented), so a JSON submission is sent without them; a
    callback URL the service would accept points at a closed port on 127.0.0.1 instead. Whether every part the
    case was generated to break is undone here (its query dropped; a missing Authorization header, which the
    test supplies): such a case is no longer negative, and its acceptance is no finding."""
    meta = case.meta
    broken = {loc.value for loc, info in meta.components.items() if info.mode.is_negative} if meta else set()
    headers = {name.lower() for name, loc in negated_parameters(meta) if loc.value == "header"}
    undone = {"header"} if headers == {"authorization"} else set()
    if case.method == "POST" and case.media_type == "application/json":
        if case.query:
            undone.add("query")
        case.query = {}
    for holder in (case.body, case.query):
        url = holder.get("callback_url") if isinstance(holder, dict) else None
        if isinstance(url, str):
            try:
                HTTP_URL.validate_python(url)
            except ValidationError:
                continue
            holder["callback_url"] = "http://127.0.0.1:9/callback"
    return bool(broken) and broken <= undone


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(QUIET, max_examples=EXAMPLES)
def test_every_answer_is_documented(case):
    checks = [c for c in CHECKS if c is not negative_data_rejection] if _adapt(case) else CHECKS
    case.call_and_validate(headers=auth("team-a"), checks=checks, timeout=30)


def test_following_links_from_a_job(api_schema):
    class Workflow(api_schema.as_state_machine()):
        def before_call(self, case):
            _adapt(case)

        def get_call_kwargs(self, case):
            return {"headers": auth("team-c"), "timeout": 30}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CONFORMANCE, transport_kwargs=kwargs)

    Workflow.run(settings=settings(QUIET, max_examples=20, stateful_step_count=6))


def test_a_job_s_answers_are_documented(api_schema, served):
    """Each answer about one real job (team-b's, so the generated traffic's limits do not apply)."""
    jobs, job = api_schema["/v1/jobs"]["POST"], api_schema["/v1/jobs/{job_id}"]

    def call(case, status, tenant="team-b"):
        response = case.call_and_validate(headers=auth(tenant), checks=CONFORMANCE, timeout=30)
        assert response.status_code == status, response.text
        return response

    keyed = {**auth("team-b"), "Idempotency-Key": "openapi-1"}
    created = call(jobs.Case(body=EXAMPLE, headers=keyed, media_type="application/json"), 201).json()
    call(jobs.Case(body=EXAMPLE, headers=keyed, media_type="application/json"), 200)
    call(jobs.Case(body={**EXAMPLE, "options": {"seed": 1}}, headers=keyed, media_type="application/json"), 409)
    call(jobs.Case(body={**EXAMPLE, "rows": EXAMPLE["rows"] * 3}, media_type="application/json"), 429, "team-a")
    for key in ("", "two words", "k\u00e9y", "x" * 256):
        call(jobs.Case(body=EXAMPLE, headers={"Idempotency-Key": key}, media_type="application/json"), 422)
    call(jobs.Case(body=EXAMPLE, query={"budget_usd": 5}, media_type="application/json"), 422)
    call(jobs.Case(body=EXAMPLE, headers={"Content-Encoding": "gzip"}, media_type="application/json"), 400)
    options = {"options": json.dumps({"seed": 3})}
    call(jobs.Case(body=EXAMPLE["rows"], query=options, media_type="application/x-ndjson"), 201)
    call(jobs.Case(body={**EXAMPLE, "options": {"seed": 2**64}}, media_type="application/json"), 422)
    ids = {"job_id": created["id"]}
    for _ in range(600):  # bounded: a one-row simulated job takes well under a second
        view = call(job["GET"].Case(path_parameters=ids), 200).json()
        if view["state"] in ("finished", "stopped", "cancelled", "failed"):
            break
        time.sleep(0.1)
    assert view["state"] == "finished", view
    call(api_schema["/v1/jobs/{job_id}/verdicts"]["GET"].Case(path_parameters=ids), 200)
    call(api_schema["/v1/jobs/{job_id}/summary"]["GET"].Case(path_parameters=ids), 200)
    call(job["DELETE"].Case(path_parameters=ids), 202)
    call(job["GET"].Case(path_parameters=ids), 404, "team-a")
    listed = call(api_schema["/v1/jobs"]["GET"].Case(), 200).json()
    assert created["id"] in {j["id"] for j in listed["jobs"]}
    bad = requests.get(f"{served.url}/v1/jobs", headers={"Authorization": b"Bearer \xe9\xff"}, timeout=10)
    assert bad.status_code == 401  # a token that is not UTF-8 is a wrong token, not a crash


def test_the_document_is_openapi_3_1(api_schema, served):
    doc = requests.get(f"{served.url}/openapi.json", timeout=10).json()
    assert doc["openapi"].startswith("3.1") and doc == orjson.loads(orjson.dumps(openapi()))
    api_schema.validate()  # against the OpenAPI 3.1 meta-schema
    spec_validator = pytest.importorskip("openapi_spec_validator")
    spec_validator.validate(doc)


def test_every_route_is_documented(tmp_path):
    app = make_app(JobManager(tmp_path, [], provider_url=None), Tenants([Tenant(name="t", token_sha256="0" * 64)]))
    served = {(r.method.lower(), r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"}
    documented = {(method, path) for path, item in openapi()["paths"].items() for method in item}
    assert served == documented


def test_every_request_model_forbids_unknown_fields():
    schemas = openapi()["components"]["schemas"]
    bodies = [content["schema"] for item in openapi()["paths"].values() for op in item.values()
              for content in op.get("requestBody", {}).get("content", {}).values()]
    todo = [ref for body in bodies for ref in _refs(body)]
    seen: set[str] = set()
    while todo:  # the request models and every model they use
        name = todo.pop().rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            assert schemas[name].get("additionalProperties") is False, name
            todo += _refs(schemas[name])
    assert {"JobSubmission", "JobOptions", "BankItem"} <= seen


def _refs(node) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if "$ref" in node else []) + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []
