"""A council member's judge: queues the votes it is asked for, sends them to its vendor's model as fast as
the vendor's quota allows, reads the verdicts, and returns one record per vote. Plain Python: the Ray
actor in :mod:`council.cluster.actors` is a thin shell over this class.

Scheduling: one pump per judge takes round-two votes before round-one votes (they finish rows), waits
for a concurrency slot and for quota admission, then sends. When the vendor's request limit binds and
its token limit has room, several rows of the same round go in one request (rate-limit-aware batching);
the batch size comes from the quotas (:func:`council.transport.quota.choose_batch_size`). A batch never holds two
answers to the same item (each response is judged on its own, as alone), and each vote records its
request's rows (``batch_rows``). A row missing from a batched answer is asked again alone.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from council.core.errors import ProviderError, ProviderUnavailable
from council.core.schema import JudgeCallRecord, MemberSpec, ParseStatus, RequestParams, Scale, Usage
from council.protocol.config import Endpoint, JudgeParams, Limits
from council.protocol.panels import METHODOLOGY_VERSION
from council.protocol.parsing import parse_batch, read_batch, read_scores, read_verdict
from council.protocol.prompts import (
    BATCH_VERDICT_SCHEMA, VERDICT_SCHEMA, batch_messages, is_followup, prompt_hash, repair_messages,
    scale_schema, single_messages,
)
from council.transport.client import ChatClient
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import QuotaLedger, choose_batch_size, estimate_tokens
from council.transport.shape import RequestShape, seat_shape, sent_fields
from council.transport.wire import Api

RESPONSE_FORMAT = {"type": "json_schema", "json_schema": VERDICT_SCHEMA}
BATCH_RESPONSE_FORMAT = {"type": "json_schema", "json_schema": BATCH_VERDICT_SCHEMA}
OUTPUT_TOKENS_PER_ROW = 96  # max_tokens per row of a batched request
BATCH_OVERHEAD_CHARS = 1200  # system prompt and instructions of a batched request


_Request = tuple[list[dict[str, str]], int, dict]  # messages, max_tokens, response_format


@dataclass(frozen=True, slots=True)
class JudgeTask:
    """One vote to ask for: the row, the round and the prompt body (rendered and scrubbed by the coordinator).
    ``item_id`` keeps two answers to one item out of one batched request; a ``solo`` task is always sent
    alone (the batch audit). A graded item's task carries its ``scale`` and is always sent alone."""

    row_id: str
    round: int
    body: str
    peer_letters: dict[str, str] = field(default_factory=dict)
    rubric_hash: str = ""
    request_key: str = ""
    item_id: str = ""
    solo: bool = False
    scale: Scale | None = None
    after: tuple[str, ...] = ()  # a judge-v3 round two: the rows of its round-one request, in key order
    shadow: bool = False  # the coordinator's: a shadow vote (``shadow_self``), archived and never counted
    scrubbed: dict[str, int] | None = None  # the coordinator's: what the anonymiser cut from each peer's reason


_Vote = tuple[str, str] | tuple[dict[str, int], str]  # (verdict, reason) or a graded item's (levels, reason)


@dataclass(slots=True)
class Call:
    """What one request produced, before it is turned into records."""

    raws: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    finish: str | None = None
    error: str | None = None
    max_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)


class Judge:
    def __init__(
        self, member: MemberSpec, endpoint: Endpoint, params: JudgeParams, *, limiter: Limiter | None = None,
        max_batch: int = 1, seed: int = 0, prices: tuple[float, ...] = (0.0, 0.0), cache_breakpoints: bool = False,
        api: Api = "openai", shape: RequestShape | None = None,
    ) -> None:
        self.member = member
        self.params = params
        self.max_batch = max_batch
        self.prices = prices  # USD per million input, output, cache-read and cache-write tokens
        self.limiter = limiter or Limiter(LocalLedger(QuotaLedger(Limits())), f"judge:{member.vendor}")
        self.client = ChatClient(endpoint, seed=seed, limiter=self.limiter, vendor=member.vendor,
                                 cache_breakpoints=cache_breakpoints, api=api)
        # the seat's requests fitted to its model and endpoint (given: made by the driver, which has the price table)
        self.shape = shape or seat_shape(member.judge_model, member.vendor, params, endpoint, api)
        self._queues: dict[int, deque[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]]] = {1: deque(), 2: deque()}
        self._work = asyncio.Event()
        self._pump_task: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self._row_chars = 2000.0  # running mean of a row body's length
        self.batch_sizes: dict[int, int] = {}

    # -- public --------------------------------------------------------------------------------------------
    async def grade_batch(self, tasks: list[JudgeTask]) -> list[JudgeCallRecord | BaseException]:
        """Each task's record, or the exception that task ended with (one task's failure is its own)."""
        return list(await asyncio.gather(*(self.submit(t) for t in tasks), return_exceptions=True))

    def cancel_queued(self, exc: BaseException) -> int:
        """Fail every vote still queued (not yet sent) with ``exc``; requests already sent finish."""
        return fail_queued(self._queues.values(), exc)

    def submit(self, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        if self._pump_task is None or self._pump_task.done():
            self._pump_task = asyncio.create_task(self._pump(), name=f"judge-{self.member.vendor}")
        future: asyncio.Future[JudgeCallRecord] = asyncio.get_running_loop().create_future()
        self._queues[task.round].append((task, future))
        self._row_chars += (len(task.body) - self._row_chars) * 0.05
        self._work.set()
        return future

    async def close(self) -> None:
        """Stop sending and close the session. A request still in flight here was abandoned by the run
        (its grace period is over): it is cancelled, not waited for."""
        if self._pump_task is not None:
            self._pump_task.cancel()
            await asyncio.gather(self._pump_task, return_exceptions=True)
        for sending in self._sending:
            sending.cancel()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        await self.client.close()

    # -- scheduling ----------------------------------------------------------------------------------------
    def batch_size(self) -> int:
        """Rows per request now, from the limits in force (1 unless the request limit binds)."""
        return batch_size_for(self.limiter.rpm, self.limiter.tpm, self._row_chars, self.max_batch)

    async def _pump(self) -> None:
        while True:
            if not (self._queues[1] or self._queues[2]):
                self._work.clear()
                await self._work.wait()
                continue
            await self.limiter.acquire_slot()
            try:
                k = self.batch_size()
                # Reserve for a full batch; what a smaller batch does not use is given back on settling.
                reserve = (int(k * (self._row_chars / 4 + OUTPUT_TOKENS_PER_ROW)) + self.shape.headroom
                           + (BATCH_OVERHEAD_CHARS // 4 if k > 1 else 0))
                await self.limiter.admit(reserve)
                round_ = self._next_round(k)
                batch = take_batch(self._queues[round_], k)
            except BaseException:
                await self.limiter.release_slot()
                raise
            if not batch:  # cannot happen while the pump is the only one to take from the queues
                self.limiter.settle(reserve, 0)
                await self.limiter.release_slot()
                continue
            request = self._request(round_, [t for t, _ in batch])
            self.limiter.settle(reserve, self._estimate(request))  # the request's own estimate
            send = asyncio.create_task(self._send(batch, request))
            self._sending.add(send)
            send.add_done_callback(self._sending.discard)

    def _next_round(self, k: int) -> int:
        """Round two first (it finishes rows), unless round one can fill a larger batch."""
        q1, q2 = len(self._queues[1]), len(self._queues[2])
        return 2 if q2 and q2 >= min(k, q1) else 1

    async def _send(self, batch: list[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]],
                    request: _Request) -> None:
        """Ask for a batch and hand each vote its record. A vendor that cannot be used
        (:class:`ProviderUnavailable`) is never turned into a record: the votes of this batch, and every vote
        still queued for this judge, get the exception at once."""
        try:
            if all(future.done() for _, future in batch):  # failed or cancelled while queued: nothing to ask
                self.limiter.settle(self._estimate(request), 0)
                return
            tasks = [t for t, _ in batch]
            try:
                if len(tasks) == 1:
                    records: list[JudgeCallRecord | ProviderUnavailable] = [await self._ask_one(tasks[0], request)]
                else:
                    records = await self._ask_many(tasks, request)
            except ProviderUnavailable as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                self._fail_queued(exc)
                return
            except Exception as exc:  # never leave a waiting row hanging
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                raise
            self.batch_sizes[len(tasks)] = self.batch_sizes.get(len(tasks), 0) + 1
            unavailable = None
            for record, (_, future) in zip(records, batch, strict=True):
                if future.done():
                    continue
                if isinstance(record, ProviderUnavailable):
                    unavailable = record
                    future.set_exception(record)
                else:
                    future.set_result(record)
            if unavailable is not None:
                self._fail_queued(unavailable)
        finally:
            await self.limiter.release_slot()

    def _fail_queued(self, exc: ProviderUnavailable) -> None:
        """Every vote still queued fails at once with ``exc``'s cause (the breaker is open: none of them
        would be sent). The entries stay queued; the pump finds them done and sends nothing for them."""
        for queue in self._queues.values():
            for _, future in queue:
                if not future.done():
                    future.set_exception(ProviderUnavailable(str(exc), status=exc.status))

    # -- one request ---------------------------------------------------------------------------------------
    def _estimate(self, request: _Request) -> int:
        """A request's tokens as the quota counts them before it is sent: its bound includes reasoning's room."""
        return estimate_tokens(request[0], request[1] + self.shape.headroom)

    def _request(self, round_: int, tasks: list[JudgeTask]) -> _Request:
        return request_for(self.params, round_, tasks)

    async def _chat(self, messages: list[dict[str, str]], max_tokens: int, response_format: dict, call: Call,
                    admitted: bool) -> str:
        result = await self.client.chat(self.member.judge_model, messages, max_tokens=max_tokens,
                                        response_format=response_format, admitted=admitted, shape=self.shape)
        call.usage = call.usage + result.usage if call.raws else result.usage  # the first answer: nothing to add to
        call.max_tokens = max_tokens
        call.attempts += result.attempts
        call.finish = result.finish_reason
        call.raws.append(result.content or "")
        return result.content or ""

    async def _ask_one(self, task: JudgeTask, request: _Request | None = None) -> JudgeCallRecord:
        """One row alone: the question, then at most one repair re-ask; never a guessed vote. A ``request``
        given was built and admitted by the pump; without one the row is asked anew (a batch's leftover)."""
        call, vote, status = Call(), None, "unparseable"
        messages, max_tokens, fmt = request or self._request(task.round, [task])
        try:
            content = await self._chat(messages, max_tokens, fmt, call, admitted=request is not None)
            vote, status = read_vote(content, task.scale)
            if vote is None:
                content = await self._chat(repair_messages(messages, content), max_tokens, fmt, call, False)
                vote = read_vote(content, task.scale)[0]
                status = "repaired" if vote else "unparseable"
        except ProviderUnavailable:
            raise  # the vendor cannot be used: not a vote, and not archived
        except ProviderError as exc:
            status, call.error, call.attempts = "error", str(exc), call.attempts + exc.attempts
        return self._record(task, vote, status, call, uuid.uuid4().hex, [], call.usage)

    async def _ask_many(self, tasks: list[JudgeTask],
                        request: _Request) -> list[JudgeCallRecord | ProviderUnavailable]:
        """Several rows of one round in one (admitted) request; rows the answer leaves out are asked again
        alone. Raises :class:`ProviderUnavailable` if the request meets an unusable vendor; a row asked again
        alone that meets one gets the exception in its place (the others keep their records)."""
        call, votes, status = Call(), None, "ok"
        rows = [t.row_id for t in tasks]
        messages, max_tokens, fmt = request
        try:
            content = await self._chat(messages, max_tokens, fmt, call, admitted=True)
            votes, status = read_batch(content, len(tasks))
            if votes is None:
                content = await self._chat(repair_messages(messages, content), max_tokens, fmt, call, False)
                votes, status = parse_batch(content, len(tasks)), "repaired"
        except ProviderUnavailable:
            raise
        except ProviderError as exc:
            call.error, call.attempts = str(exc), call.attempts + exc.attempts
        if call.error is not None:  # one failed request: its votes share its id, as the votes of any request do
            shares, failed = split_usage(call.usage, len(tasks)), uuid.uuid4().hex
            return [self._record(t, None, "error", call, failed, rows, u) for t, u in zip(tasks, shares, strict=True)]
        votes = votes or {}
        request_id = uuid.uuid4().hex
        answered = [k for k in range(1, len(tasks) + 1) if k in votes]
        shares = iter(split_usage(call.usage, max(1, len(answered))))
        out: list[JudgeCallRecord | ProviderUnavailable | None] = [None] * len(tasks)
        for k in answered:
            out[k - 1] = self._record(tasks[k - 1], votes[k], status, call, request_id, rows, next(shares))
        alone = [i for i, r in enumerate(out) if r is None]
        again = await asyncio.gather(*(self._ask_one(tasks[i]) for i in alone), return_exceptions=True)
        for i, record in zip(alone, again, strict=True):
            if isinstance(record, BaseException) and not isinstance(record, ProviderUnavailable):
                raise record
            out[i] = record
        return [r for r in out if r is not None]

    def _record(self, task: JudgeTask, vote: _Vote | None, status: ParseStatus, call: Call,
                request_id: str, batch_rows: list[str], usage: Usage) -> JudgeCallRecord:
        """One vote's record; ``batch_rows`` are the rows of its batched request in key order ([] alone)."""
        return vote_record(self.member, self.params, self.prices, task, vote, status, call, request_id, batch_rows,
                           usage, shape=self.shape)


def request_for(params: JudgeParams, round_: int, tasks: list[JudgeTask]) -> _Request:
    """Messages, output bound and response format of one request for ``tasks``: one row alone, or several rows of
    one round (a batched request; the batch transport packs its requests by the same rule)."""
    if len(tasks) == 1:
        return one_request(params, tasks[0])
    bodies = [t.body for t in tasks]
    return batch_messages(round_, bodies), 32 + OUTPUT_TOKENS_PER_ROW * len(bodies), BATCH_RESPONSE_FORMAT


def one_request(params: JudgeParams, task: JudgeTask) -> _Request:
    """Messages, output bound and response format of a request for one row alone."""
    return single_messages(task.round, task.body), *request_bounds(params, task)


def request_bounds(params: JudgeParams, task: JudgeTask) -> tuple[int, dict]:
    """Output bound and response format of a request for one row alone (its messages not made)."""
    scale = task.scale
    return params.max_tokens, RESPONSE_FORMAT if scale is None else {"type": "json_schema",
                                                                     "json_schema": scale_schema(scale)}


def read_vote(text: str, scale: Scale | None) -> tuple[_Vote | None, ParseStatus]:
    """A one-row answer's vote (a verdict and reason, or a graded item's levels) and how it parsed."""
    return read_verdict(text) if scale is None else read_scores(text, scale)


def vote_record(member: MemberSpec, params: JudgeParams, prices: tuple[float, ...], task: JudgeTask,
                vote: _Vote | None, status: ParseStatus, call: Call, request_id: str, batch_rows: list[str],
                usage: Usage, batch_id: str | None = None, cost_usd: float | None = None,
                shape: RequestShape | None = None) -> JudgeCallRecord:
    """One vote's record, however it was asked (a chat call, or a provider's batch: ``batch_id``); its cost is
    ``usage`` at ``prices`` unless ``cost_usd`` says it. Where the seat's ``shape`` sent more than a model, a
    temperature and a bound (another id, reasoning fields), the request records what was sent."""
    max_tokens = call.max_tokens or params.max_tokens
    graded = vote is not None and isinstance(vote[0], dict)
    return JudgeCallRecord(
        row_id=task.row_id, round=task.round, member=member.vendor, judge_model=member.judge_model,
        verdict=vote[0] if vote and not graded else None, reason=vote[1] if vote else None, ok=vote is not None,
        scores=vote[0] if graded else None,
        parse_status=status if vote or status == "error" else "unparseable", raw_outputs=call.raws,
        finish_reason=call.finish, usage=usage,
        cost_usd=usage.cost_usd(*prices) if cost_usd is None else cost_usd,
        latency_s=round(time.perf_counter() - call.started, 6), attempts=call.attempts, error=call.error,
        judge_prompt_version=params.prompt_version,
        judge_prompt_hash=prompt_hash(task.round, task.body, params.prompt_version),
        rubric_hash=task.rubric_hash, methodology_version=METHODOLOGY_VERSION,
        request=RequestParams(model=member.judge_model, temperature=params.temperature, max_tokens=max_tokens,
                              sent=sent_fields(shape, member.judge_model, max_tokens)),
        request_key=task.request_key, request_id=request_id or uuid.uuid4().hex,
        batch_size=max(1, len(batch_rows)), batch_rows=batch_rows, peer_letters=task.peer_letters,
        reserve=member.reserve, batch_id=batch_id,
    )


def take_batch(queue: deque[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]], k: int,
               window: int = 256) -> list[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]]:
    """Up to ``k`` queued votes for one request, oldest first, never two answers to the same item (each
    response is judged on its own, as alone), never a ``solo`` task with others, and never a judge-v3 follow-up
    with a one-message body (a judge-v4 round two has both). Votes passed over keep their place; at most
    ``window`` are looked at."""
    first = queue.popleft()
    batch = [first]
    if k == 1 or first[0].solo or first[0].scale is not None:
        return batch
    if len(first[0].after) > 1:
        same = _same_request(queue, first, k, window)
        if same is not None:
            return same
    items, follow = {first[0].item_id}, is_followup(first[0].body)
    passed: list[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]] = []
    while queue and len(batch) < k and len(passed) < window:
        entry = queue.popleft()
        task = entry[0]
        if task.solo or task.scale is not None or task.item_id in items or is_followup(task.body) != follow:
            passed.append(entry)
        else:
            batch.append(entry)
            items.add(task.item_id)
    queue.extendleft(reversed(passed))
    return batch


def _same_request(queue: deque[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]],
                  first: tuple[JudgeTask, asyncio.Future[JudgeCallRecord]], k: int,
                  window: int) -> list[tuple[JudgeTask, asyncio.Future[JudgeCallRecord]]] | None:
    """The round twos of every row of ``first``'s round-one request, in that request's order, when all of them
    are queued (within ``window``) and fit in ``k``: their request then begins with round one's exact messages,
    which a provider's prompt cache serves. None otherwise (the queue as it was, but for ``first``)."""
    rows = first[0].after
    if len(rows) > k:
        return None
    found = {first[0].row_id: first}
    for entry in itertools.islice(queue, window):
        if entry[0].after == rows and entry[0].row_id in rows:
            found.setdefault(entry[0].row_id, entry)
    if len(found) < len(rows):
        return None
    taken = {id(e) for e in found.values()}
    kept = [e for e in queue if id(e) not in taken]
    queue.clear()
    queue.extend(kept)
    return [found[r] for r in rows]


def batch_size_for(rpm: float, tpm: float, row_chars: float, max_batch: int) -> int:
    """Rows per judge request for a vendor with these limits and rows of about ``row_chars`` characters."""
    row_tokens = row_chars / 4 + OUTPUT_TOKENS_PER_ROW / 2
    return choose_batch_size(rpm, tpm, row_tokens, BATCH_OVERHEAD_CHARS / 4, max_batch)


def split_usage(usage: Usage, n: int) -> list[Usage]:
    """A request's usage shared among its ``n`` votes; the parts add up exactly to the whole."""
    def parts(total: int) -> list[int]:
        base, extra = divmod(total, n)
        return [base + (1 if i < extra else 0) for i in range(n)]

    shares = {name: parts(getattr(usage, name)) for name in Usage.model_fields}  # every count, cache ones too
    return [Usage(**{name: share[i] for name, share in shares.items()}) for i in range(n)]


def fail_queued(queues: Iterable[deque], exc: BaseException) -> int:
    """Empty ``queues`` of (task, future) pairs, failing each future not yet done with ``exc``; how many were."""
    cancelled = 0
    for queue in queues:
        while queue:
            _, future = queue.popleft()
            if not future.done():
                future.set_exception(exc)
                cancelled += 1
    return cancelled
