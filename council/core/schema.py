"""The wire schema: every record that crosses a file, a process or the network.

Bank items and response rows are read from JSONL; judge-call records, row verdicts and the run manifest
are written to the run folder. Field names here are the on-disk names.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from council.core.errors import VendorConflictError
from council.core.vendors import row_vendor

Verdict = Literal["correct", "incorrect"]
ParseStatus = Literal["ok", "extracted", "repaired", "unparseable", "error"]
"""``ok``: the reply was the JSON object alone; ``extracted``: the object was read from inside prose or a code
fence (found, not guessed); ``repaired``: read after one re-ask; ``unparseable``: no vote; ``error``: the call
failed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


class Dimension(_Strict):
    """One dimension of a graded scale: its name (as the judge writes it), its weight, what it asks."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
    weight: float = Field(gt=0.0, le=1.0)
    description: str = ""


class Scale(_Strict):
    """An anchored ordinal scale over weighted dimensions: a judge gives each dimension an integer level
    ``0 .. high`` (``levels`` are the anchors, one per level, lowest first) and a reason. A row's council
    score per dimension is the median of the valid round-two scores (``aggregator.score_consensus``); its
    normalised score is ``100 * sum_d w_d * score_d / high`` with an omitted dimension counted 0."""

    name: str = Field(default="rubric", pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
    levels: list[str] = Field(min_length=2, max_length=101)
    dimensions: list[Dimension] = Field(min_length=1, max_length=32)

    _levels_not_blank = field_validator("levels")(lambda v: [_non_blank(x) for x in v])

    @model_validator(mode="after")
    def _check(self) -> Scale:
        names = [d.name for d in self.dimensions]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"dimension names repeat: {', '.join(repeated)}")
        total = sum(d.weight for d in self.dimensions)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"dimension weights must sum to 1, got {total:.6g}")
        return self

    @property
    def high(self) -> int:
        """The top level (the bottom is 0)."""
        return len(self.levels) - 1

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    @property
    def weights(self) -> list[float]:
        return [d.weight for d in self.dimensions]


class BankItem(_Strict):
    """One question of a bank. ``rationale`` explains why the item exists and is never sent to a judge."""

    id: str
    probe: str
    prompt: str
    reference: str
    rationale: str
    rubric: str | None = None
    tags: list[str] = Field(default_factory=list)
    paraphrase_of: str | None = None  # the original's id (its own id on the original): a paraphrase group
    difficulty: float | None = None  # the bank's own difficulty (higher: harder), for the compute signature
    group: str | None = None  # matched items (one per target) whose scores should not differ: the cross-judge report
    scale: Scale | None = None  # graded on this scale; None: correct / incorrect

    _not_blank = field_validator("id", "probe", "prompt", "reference", "rationale")(_non_blank)


class ResponseRow(_Strict):
    """A model's response to a bank item: the unit the council grades.

    ``gold_verdict`` is the known truth where there is one (human labels, or the embedded provider's
    ground truth). It is never sent to a judge.
    """

    row_id: str = ""
    item_id: str
    model: str
    vendor: str = ""
    response: str
    gold_verdict: Verdict | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)  # stated P(own answer correct)
    abstained: bool = False

    _not_blank = field_validator("item_id", "model")(_non_blank)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        """Fill ``row_id`` and decide ``vendor`` (``council.core.vendors.row_vendor``): a given vendor is
        canonicalised and checked against the model id. A validation context ``{"vendor_map": {...}}`` (the
        loaders pass the operator's map) wins over both. A vendor that cannot be decided or contradicts the
        model is an error on ``model`` or ``vendor``."""
        if isinstance(data, dict):
            data = dict(data)
            model = data.get("model")
            if isinstance(model, str) and model.strip():
                stated = data.get("vendor")
                if stated is None or isinstance(stated, str):
                    vendor_map = info.context.get("vendor_map") if isinstance(info.context, dict) else None
                    try:
                        data["vendor"] = row_vendor(model, stated or None, vendor_map)
                    except ValueError as exc:
                        field = "vendor" if isinstance(exc, VendorConflictError) else "model"
                        raise ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(
                            type=PydanticCustomError("vendor", "{reason}", {"reason": str(exc)}),
                            loc=(field,), input=data.get(field))]) from None
                if data.get("row_id") in (None, "") and isinstance(data.get("item_id"), str):
                    data["row_id"] = f"{data['item_id']}::{model}"
        return data


class Usage(_Strict):
    prompt_tokens: int = 0
    completion_tokens: int = 0  # includes reasoning tokens, as providers bill them
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prompt cache (prompt_tokens_details)
    cache_write_tokens: int = 0  # of prompt_tokens, written to the cache at a breakpoint (billed at its own rate)

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})

    def cost_usd(self, price_in_per_mtok: float, price_out_per_mtok: float,
                 price_cached_per_mtok: float | None = None, price_write_per_mtok: float | None = None) -> float:
        """USD at these prices per million tokens; cached prompt tokens at ``price_cached_per_mtok`` (the cache-read
        rate) and tokens written to the cache at ``price_write_per_mtok`` (the cache-write rate; None: the input
        rate, for either)."""
        cached_rate = price_in_per_mtok if price_cached_per_mtok is None else price_cached_per_mtok
        write_rate = price_in_per_mtok if price_write_per_mtok is None else price_write_per_mtok
        fresh = self.prompt_tokens - self.cached_tokens - self.cache_write_tokens
        return round((fresh * price_in_per_mtok + self.cached_tokens * cached_rate
                      + self.cache_write_tokens * write_rate + self.completion_tokens * price_out_per_mtok) / 1e6, 9)


class RequestParams(_Strict):
    model: str
    temperature: float
    max_tokens: int  # the answer's budget
    # what the request sent besides its messages, where that was more than these (the id sent, the output bound with
    # reasoning's room, sampling and reasoning fields): council.transport.shape
    sent: dict[str, Any] | None = None


class JudgeCallRecord(_Strict):
    """One vote: a member's answer for one row in one round, with everything needed to audit it.

    ``request_key`` hashes everything that determines the vote's request (judge model, parameters, prompt
    version and the exact prompt body), so a resumed or re-used run recognises a call it already paid for.
    Votes that shared one batched request share ``request_id`` and carry its ``batch_size``; ``usage`` and
    ``cost_usd`` are this vote's share of the request.
    """

    row_id: str
    round: Literal[1, 2]
    member: str
    judge_model: str
    verdict: Verdict | None
    reason: str | None
    ok: bool
    scores: dict[str, int] | None = None  # a graded item's vote: a level per dimension it gave validly
    parse_status: ParseStatus
    raw_outputs: list[str] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 0
    error: str | None = None
    judge_prompt_version: str
    judge_prompt_hash: str
    rubric_hash: str = ""
    methodology_version: str = ""
    request: RequestParams | None = None
    request_key: str = ""
    request_id: str
    batch_size: int = 1
    batch_rows: list[str] = Field(default_factory=list)  # a batched request's rows, by key order ([] alone)
    peer_letters: dict[str, str] = Field(default_factory=dict)
    peers_scrubbed: dict[str, int] = Field(default_factory=dict)  # round two: letter -> names cut from its reason
    reused_from: str | None = None
    reserve: bool = False  # the member sat in as a reserve, for a seat self-exclusion emptied
    shadow: bool = False  # a --shadow-self vote of the row's own vendor: recorded, never counted
    audit_of: str | None = None  # a --batch-audit vote: the request_id of the batched vote it re-asks alone
    batch_id: str | None = None  # the batch transport: the provider's batch that carried the vote (None: a chat call)


class ElicitedRecord(_Strict):
    """One model's raw answer to one bank item, archived before anything reads it."""

    row_id: str
    item_id: str
    model: str
    vendor: str
    text: str | None
    answer: str | None
    abstained: bool
    confidence: float | None
    confidence_status: str
    truncated: bool  # finish_reason "length", or empty text with tokens spent
    empty: bool
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    tokens_per_s: float | None = None
    attempts: int = 0
    error: str | None = None
    elicit_prompt_version: str
    elicit_prompt_hash: str
    request: RequestParams
    request_key: str

    @property
    def gradable(self) -> bool:
        """An answer the council can grade: not truncated, not empty, not a failed call."""
        return self.error is None and not self.truncated and not self.empty


class RowVerdict(_Strict):
    """The council's decision on one row, both rounds. A row whose panel did not vote in full (budget,
    interrupt, provider failure) is ``graded: false`` with no consensus: counted, never scored."""

    row_id: str
    item_id: str
    model: str
    vendor: str
    members: list[str]  # who sat: the panel
    reserves: list[str] = Field(default_factory=list)  # those of ``members`` who sat in as reserves
    graded: bool = True
    votes_round1: dict[str, Verdict | None]
    votes_round2: dict[str, Verdict | None]
    consensus_round1: Verdict | None
    consensus: Verdict | None
    flags: list[str] = Field(default_factory=list)
    gold_verdict: Verdict | None = None
    probe: str = ""
    # A graded item's row (its verdict fields stay empty): the members' levels per round, the council's
    # level per dimension (median of valid round-two levels; None: no valid level, counted 0) and the
    # weighted 0-100 score. Flags: ``omitted:<dim>`` (no valid level), ``split:<dim>`` (even count, the
    # lower middle level taken).
    scale: str | None = None
    scores_round1: dict[str, dict[str, int]] = Field(default_factory=dict)
    scores_round2: dict[str, dict[str, int]] = Field(default_factory=dict)
    score: dict[str, int | None] | None = None
    score_normalised: float | None = None
    # Every graded row on one 0-100 scale, for readers that want no joins: 100 / 0 for a correct / incorrect
    # consensus, ``score_normalised`` for a graded item's row; None when the row was not graded.
    council_score: float | None = None
    confidence: float | None = None  # the row's stated P(own answer correct), as in rows.jsonl (None: not stated)
    abstained: bool = False  # the row's answer was an abstention, as in rows.jsonl
    # ``--deliberate disputed``: false on a row whose round one was unanimous (round two was not counted, and its
    # round-two votes and consensus are round one's); ``deliberation_audit`` on such a row whose round two was
    # asked for the audit (archived, never counted).
    deliberated: bool = True
    deliberation_audit: bool = False


class MemberSpec(_Strict):
    """A council seat: the vendor and the judge model that speaks for it. A ``reserve`` seat sits in only on
    rows where self-exclusion emptied a regular seat, so every row has the same panel size."""

    vendor: str
    judge_model: str
    reserve: bool = False


class ResumeEntry(_Strict):
    at: str
    command: str
    archived_votes: int | None = None  # results found in the archive (a sharded run's writer logs its own count)


class RunManifest(_Strict):
    run_id: str
    created_at: str
    command: str
    roster: list[MemberSpec]  # every seat, reserves included (``reserve: true``)
    simulated: bool = False  # graded by the embedded provider: no real model was asked
    self_exclusion: bool
    quorum: int
    seed: int
    backend: str
    shards: int = 0  # shard workers the run was started with (0: one coordinator)
    provider_url: str | None
    judge_prompt_version: str
    prompt_hashes: dict[str, str]
    methodology_version: str
    bank_path: str
    responses_path: str
    dataset_fingerprint: str
    responses_fingerprint: str
    rows: int
    versions: dict[str, str]
    config: dict[str, Any] = Field(default_factory=dict)
    sim_config: dict[str, Any] | None = None
    reuse_from: list[str] = Field(default_factory=list)
    resumes: list[ResumeEntry] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)  # models under test asked by this run (elicitation)
    elicit_prompt_version: str | None = None
    elicit_prompt_hash: str | None = None
    skipped_inputs: list[str] = Field(default_factory=list)  # input records left out (--skip-invalid), with locations
    price_table: str | None = None  # the table asked for prices the config does not set ("genai-prices 0.2.3")
    # every judge model and model under test -> the price used (council.protocol.prices.Price: USD per million
    # tokens in, out, cache read and write, its source and the table's provider), or null: no price
    prices: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
    # the batch transport: each batching judge's batch price (None: unknown, its votes counted at ``prices``)
    batch_prices: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
