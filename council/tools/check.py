"""``council check``: before a large run, one tiny real request per seat (reserves included) and, for a seat on the
batch transport, a batch of one, each saying ok or the provider's exact refusal with the fix; the reasoning tokens
the judge spent on a sample row, and what that seat would cost the run at that rate.

A seat is checked as the run would ask it: the same endpoint (the run's gateway or the vendor's own API), the same
request shape (:mod:`council.transport.shape`: the id sent, the output bound, sampling and reasoning fields) and a
round-one prompt on a row of the run's own responses that the seat would grade. Shapes the provider would refuse
(a thinking budget outside the model's range) are found before any request is sent. The request is paid: a few
hundred tokens a seat.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from council.core.errors import ProviderError, ProviderUnavailable
from council.core.schema import BankItem, JudgeCallRecord, MemberSpec, ResponseRow
from council.protocol.config import CouncilConfig, Endpoint
from council.protocol.panels import eligible_members
from council.protocol.prompts import round1_body, rubric_hash
from council.transport.judge import Judge, JudgeTask
from council.transport.shape import RequestShape, seat_shape, vote_key

CHECK_ATTEMPTS = 3  # a preflight that meets a 429 tries again, but does not wait out a long storm
BATCH_WAIT_S = 120.0


@dataclass
class SeatCheck:
    """One seat's check: what was sent, what came back, and what it means for the run."""

    vendor: str
    model: str
    sent_as: str
    endpoint: str
    reserve: bool = False
    ok: bool = False
    status: str = "not sent"  # ok | refused | unusable | empty | unparseable | error | not sent
    detail: str = ""  # the provider's words, or what went wrong
    fix: str = ""
    warnings: list[str] = field(default_factory=list)
    verdict: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    batch: str | None = None  # a batch of one: "ok", or what went wrong (None: the seat is not on the batch transport)
    run_votes: int = 0  # the seat's votes in the run (round two on every row)
    run_cost_usd: float = 0.0  # those votes at this request's cost
    run_reasoning_usd: float = 0.0  # of which its reasoning

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sample_row(member: MemberSpec, config: CouncilConfig, rows: list[ResponseRow]) -> ResponseRow | None:
    """The first of ``rows`` that ``member`` would grade (self-exclusion and reserves as the run decides)."""
    return next((r for r in rows if member in eligible_members(r, config.roster, config.self_exclusion)),
                next(iter(rows), None))


async def check_council(config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow],
                        provider_url: str, *, embedded: bool = False, batch_wait_s: float = BATCH_WAIT_S,
                        run_votes: dict[str, int] | None = None) -> list[SeatCheck]:
    """Check every seat of ``config`` at once (see the module's docstring); ``run_votes`` is each vendor's votes in
    the run, to carry each seat's measured cost to the run."""
    config = config.model_copy(update={"retry": config.retry.model_copy(
        update={"max_attempts": min(config.retry.max_attempts, CHECK_ATTEMPTS)})})
    checks = await asyncio.gather(*(
        _check_seat(m, config, items, rows, config.endpoint_of(m.vendor, provider_url, embedded), batch_wait_s)
        for m in config.roster))
    for check in checks:
        check.run_votes = (run_votes or {}).get(check.vendor, 0)
        check.run_cost_usd = round(check.run_votes * check.cost_usd, 6)
        share = _reasoning_share(check, config)
        check.run_reasoning_usd = round(check.run_cost_usd * share, 6)
    return list(checks)


async def _check_seat(member: MemberSpec, config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow],
                      endpoint: Endpoint, batch_wait_s: float) -> SeatCheck:
    settings = config.settings(member.vendor)
    shape = seat_shape(member.judge_model, member.vendor, config.judge, endpoint, settings.api)
    check = SeatCheck(vendor=member.vendor, model=member.judge_model, sent_as=shape.model,
                      endpoint=f"{endpoint.base_url} ({endpoint.ids} ids, {settings.api} API)", reserve=member.reserve,
                      warnings=list(shape.warnings))
    if shape.problems:
        check.status, check.detail = "refused", "; ".join(shape.problems)
        check.fix = "set judge.thinking_budget within the model's range (the config's [judge] table)"
        return check
    row = sample_row(member, config, rows)
    if row is None:
        check.status, check.detail = "not sent", "no response to grade"
        return check
    task = _task(member, config, items[row.item_id], row)
    judge = Judge(member, endpoint, config.judge, seed=config.seed, prices=config.rates_for(member.judge_model,
                  member.vendor), api=settings.api, cache_breakpoints=settings.cache_breakpoints, shape=shape)
    started = time.perf_counter()
    try:
        [outcome] = await judge.grade_batch([task])
    finally:
        await judge.close()
    check.latency_s = round(time.perf_counter() - started, 3)
    _read(check, outcome, shape, endpoint, config)
    if check.ok and config.transport_of(member.vendor) == "batch":
        check.batch = await _batch_of_one(member, config, endpoint, shape, task, batch_wait_s)
        if check.batch != "ok":
            check.ok, check.status = False, "refused"
    return check


def _task(member: MemberSpec, config: CouncilConfig, item: BankItem, row: ResponseRow) -> JudgeTask:
    params = config.judge
    body = round1_body(item, row, contain=params.containment)
    key = vote_key(member.judge_model, member.vendor, 1, body, params)
    return JudgeTask(row.row_id, 1, body, rubric_hash=rubric_hash(item), request_key=key, item_id=row.item_id,
                     scale=item.scale, solo=True)


def _read(check: SeatCheck, outcome: JudgeCallRecord | BaseException, shape: RequestShape, endpoint: Endpoint,
          config: CouncilConfig) -> None:
    """What a seat's answer (or failure) says, into ``check``."""
    if isinstance(outcome, ProviderError):
        check.status = "unusable" if isinstance(outcome, ProviderUnavailable) else "error"
        check.detail = str(outcome)
        check.fix = fix_for(check.detail, check, shape, endpoint, config)
        return
    if isinstance(outcome, BaseException):
        check.status, check.detail = "error", f"{type(outcome).__name__}: {outcome}"
        return
    usage = outcome.usage
    check.prompt_tokens, check.completion_tokens = usage.prompt_tokens, usage.completion_tokens
    check.reasoning_tokens, check.cost_usd = usage.reasoning_tokens, outcome.cost_usd
    check.finish_reason, check.verdict = outcome.finish_reason, outcome.verdict
    if outcome.parse_status == "error":
        check.status, check.detail = "refused" if "HTTP 4" in (outcome.error or "") else "error", outcome.error or ""
        check.fix = fix_for(check.detail, check, shape, endpoint, config)
    elif outcome.ok:
        check.ok, check.status = True, "ok"
    elif outcome.finish_reason == "length" and not any(outcome.raw_outputs):
        check.status, check.detail = "empty", (f"empty answer cut at length: {usage.reasoning_tokens} reasoning tokens "
                                               f"filled the bound of {config.judge.max_tokens + shape.headroom}")
        check.fix = (f"raise judge.thinking_budget (now {config.judge.thinking_budget}) or lower "
                     f"judge.reasoning_effort (now {config.judge.reasoning_effort})")
    else:
        check.status, check.detail = "unparseable", f"no verdict in the answer: {(outcome.raw_outputs or [''])[-1][:160]!r}"
        check.fix = "the model does not follow the verdict format: choose another judge model for this seat"


_PARAM = re.compile(r"'([^']+)'")


def fix_for(text: str, check: SeatCheck, shape: RequestShape, endpoint: Endpoint, config: CouncilConfig) -> str:
    """The fix of a refusal, from the provider's words."""
    low = text.lower()
    if "http 401" in low:
        return f"set {endpoint.api_key_env or 'the key variable'} to a valid API key for {endpoint.host}"
    if any(word in low for word in ("region", "country", "territory", "location is not supported")):
        return f"{endpoint.host} refuses requests from this region: ask this seat through a gateway (--provider-url)"
    if "unknown model" in low or "not_found" in low or "does not exist" in low:
        other = "gateway" if endpoint.ids == "native" else "native"
        return (f"{check.sent_as!r} is not a model at {endpoint.host}: give the seat the id it knows there, or set "
                f"vendors.{check.vendor}.model_ids = \"{other}\"")
    if "http 403" in low:
        return f"the key in {endpoint.api_key_env or 'the key variable'} may not use {check.sent_as}"
    if "budget" in low or "thinking" in low:
        return "set judge.thinking_budget within the model's range"
    if "unsupported" in low or "unrecognized" in low or "not supported" in low:
        param = next(iter(_PARAM.findall(text)), "a parameter")
        return (f"the model refuses {param}: the capability table has no rule for {check.model} "
                f"({'known as ' + repr(shape.model) if shape.model != check.model else 'unknown'}); "
                f"set judge.reasoning (auto/on/off) or judge.reasoning_effort to what it takes")
    if "cannot connect" in low or "http 404 for" in low:
        return f"check the base URL {endpoint.base_url}"
    if "quota" in low or "http 429" in low:
        return "the account's quota or credit is spent: check its limits and billing"
    return "see the provider's message"


def _reasoning_share(check: SeatCheck, config: CouncilConfig) -> float:
    """The share of this request's cost that its reasoning tokens make (at the seat's output rate)."""
    if not check.cost_usd or not check.reasoning_tokens:
        return 0.0
    _, out_rate, *_ = config.rates_for(check.model, check.vendor)
    return min(1.0, check.reasoning_tokens * out_rate / 1e6 / check.cost_usd)


async def _batch_of_one(member: MemberSpec, config: CouncilConfig, endpoint: Endpoint, shape: RequestShape,
                        task: JudgeTask, wait_s: float) -> str:
    """Send ``task`` alone through the vendor's batch API and wait up to ``wait_s`` for it: "ok", or what failed."""
    from council.batching.api import batch_api
    from council.batching.journal import Journal
    from council.batching.judge import BatchJudge

    settings = config.settings(member.vendor)
    with tempfile.TemporaryDirectory(prefix="council-check-") as folder:
        journal = Journal(Path(folder))
        api = batch_api(endpoint, settings.api, member.vendor, cache_breakpoints=settings.cache_breakpoints,
                        seed=config.seed)
        batch = config.batch.model_copy(update={"flush_s": 0.05, "poll_s": min(config.batch.poll_s, 2.0),
                                                "sync_below": 0})
        judge = BatchJudge(member, config.judge, api, journal, settings=settings, batch=batch,
                           prices=config.vote_rates(member.judge_model, member.vendor), shape=shape)
        try:
            record = await asyncio.wait_for(judge.submit(task), wait_s)
        except asyncio.TimeoutError:
            return f"batch accepted, not ended within {wait_s:.0f} s (it runs on; the provider bills it when it ends)"
        except ProviderError as exc:
            return f"batch refused: {exc}"
        finally:
            await judge.close()
            journal.close()
    return "ok" if record.parse_status != "error" else f"batch request failed: {record.error}"
