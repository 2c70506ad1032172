"""The grading service's API: every request body and every answer as a pydantic model. The same models
validate requests and make ``/openapi.json`` (:mod:`council.service.openapi`): there is no second copy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from council.core.schema import BankItem
from council.protocol.config import CouncilConfig

_DEFAULT = {name: field.default for name, field in CouncilConfig.model_fields.items()}

# The ``Idempotency-Key`` header: visible ASCII, as HTTP carries it unchanged.
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[!-~]+$")]
IDEMPOTENCY_KEY: TypeAdapter[str] = TypeAdapter(IdempotencyKey)
JobState = Literal["queued", "running", "finished", "stopped", "cancelled", "failed"]
TERMINAL: frozenset[str] = frozenset({"finished", "stopped", "cancelled", "failed"})


class _Api(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class JobOptions(_Api):
    """How the council grades this job (what ``council run`` takes as flags). Strict: always JSON (in a JSON body,
    or the ``options`` query parameter of an NDJSON one), so a wrongly typed value (``"batch_audit": false``,
    ``"compress_archive": 1``) is refused (422), not read as another type's value."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    # Each default is the council config's own (one place for a default: a job graded as ``council run`` is).
    seed: int = Field(default=_DEFAULT["seed"], ge=0, le=2**63 - 1)
    quorum: int = Field(default=_DEFAULT["quorum"], ge=1)
    self_exclusion: bool = _DEFAULT["self_exclusion"]
    batch_audit: float = Field(default=_DEFAULT["batch_audit"], ge=0.0, le=1.0)
    deliberate: Literal["all", "disputed"] = _DEFAULT["deliberate"]
    deliberation_audit: float = Field(default=_DEFAULT["deliberation_audit"], ge=0.0, le=1.0)
    vendor_map: dict[str, str] = Field(default_factory=dict)
    compress_archive: bool = _DEFAULT["compress_archive"]


class JobSubmission(_Api):
    """``POST /v1/jobs`` as JSON. Rows in this project's row format (``item_id``, ``model``, ``response``,
    optional ``row_id``, ``vendor``, ``gold_verdict``, ``confidence``, ``abstained``), or records of another
    benchmark's format named by ``format``. Without ``bank`` the service's bank is used."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "rows": [{"item_id": "cal-001", "model": "openai/gpt-4.1-mini", "response": "That would be 52,544."}],
        "bank": [{"id": "cal-001", "probe": "calibration", "prompt": "What is 821 × 64?", "reference": "52,544",
                  "rationale": "Checks that multi-digit multiplication is done exactly."}]}]})

    rows: list[dict[str, Any]] = Field(min_length=1)
    format: str = "jsonl"
    model: str | None = None  # the model of every record, for formats that do not name it
    bank: list[BankItem] | None = None
    options: JobOptions = Field(default_factory=JobOptions)
    budget_usd: float | None = Field(default=None, gt=0)
    callback_url: AnyHttpUrl | None = None


class RowProblem(_Api):
    index: int  # the row's position in the submission, from 0
    field: str
    problem: str


class Problem(_Api):
    """Every error answer."""

    error: str
    detail: str | None = None
    problems: list[RowProblem] = Field(default_factory=list)


class Progress(_Api):
    rows_total: int = 0
    rows_done: int = 0
    votes_round1: int = 0
    votes_round2: int = 0


class Counts(_Api):
    graded_rows: int = 0
    not_graded_rows: int = 0
    refused_rows: int = 0


class JobView(_Api):
    """``GET /v1/jobs/{id}``."""

    id: str
    tenant: str
    state: JobState
    reason: str | None = None  # why a job stopped (budget, error, interrupt) or failed
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    simulated: bool
    progress: Progress
    counts: Counts
    spend_usd: float = 0.0
    errors: list[str] = Field(default_factory=list)
    links: dict[str, str]


class JobList(_Api):
    jobs: list[JobView]


class Health(_Api):
    status: Literal["ok", "draining"]
    jobs_running: int
    jobs_queued: int
