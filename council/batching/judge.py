"""A council member's judge on the batch transport: the votes it is asked for go out in the provider's batches.

Same face as :class:`council.transport.judge.Judge` (``submit`` returns a future of the vote's record), so the
coordinator, and with it every rule of the protocol, does not know which transport a vendor uses. Each vote is
one request of a batch (:class:`council.batching.sender.BatchSender`), its ``custom_id`` the vote's
``request_key``; two votes with the same key (the same prompt for two rows) share one request, and its usage is
split between them. A succeeded request is read as a synchronous answer is; an unparseable one gets one repair
request, in a later batch, as a chat call gets one repair call. A request lost for good or refused by the
provider is an error record, as a chat call's would be (asked again by a resume). Votes are charged at the
batch rates, and a request sent again as a chat call at the chat rates.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from council.batching.api import BatchApi
from council.batching.journal import Journal
from council.batching.sender import BatchSender, BatchStats
from council.core.schema import JudgeCallRecord, MemberSpec, Usage
from council.protocol.config import BatchSettings, JudgeParams, VendorSettings
from council.protocol.prompts import repair_messages
from council.transport.batch_formats import BatchError
from council.transport.judge import (Call, Judge, JudgeTask, one_request, read_vote, request_bounds, split_usage,
                                     vote_record)
from council.transport.shape import RequestShape, plain
from council.transport.wire import Reply


class BatchJudge:
    def __init__(self, member: MemberSpec, params: JudgeParams, api: BatchApi, journal: Journal, *,
                 settings: VendorSettings, batch: BatchSettings, prices: tuple[float, ...],
                 fallback: Judge | None = None, shape: RequestShape | None = None) -> None:
        self.member = member
        self.params = params
        self.prices = prices
        self.fallback = fallback
        self.shape = shape or plain(member.judge_model, params.temperature)  # the seat's requests (its pool's)
        self.sender = BatchSender(member.vendor, self.shape, api, journal, settings=settings, batch=batch,
                                  fallback=fallback)

    @property
    def vendor(self) -> str:
        return self.member.vendor

    @property
    def stats(self) -> BatchStats:
        return self.sender.stats

    def submit(self, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        return asyncio.ensure_future(self._vote(task))

    def cancel_queued(self, exc: BaseException) -> int:
        """A stop: every waiting vote fails at once. Those in an open batch are not lost: the journal holds it, and
        a resume polls it (their answer may be hours away, longer than a stop's grace period is worth)."""
        return self.sender.cancel(exc)

    async def close(self) -> None:
        await self.sender.close()

    def open_batches(self) -> list[dict[str, Any]]:
        return self.sender.open_batches()

    # -- one vote ----------------------------------------------------------------------------------------------
    async def _vote(self, task: JudgeTask) -> JudgeCallRecord:
        """One vote: its request in a batch, then at most one repair request (as a chat call gets one repair
        call). While it waits, nothing of its prompt is held here: a batch holds it, and it is made again from
        ``task`` if it must be sent again."""
        call = Call()
        max_tokens, fmt = request_bounds(self.params, task)
        call.max_tokens, call.attempts = max_tokens, 1
        outcome, batch_id, share = await self.sender.outcome(task.request_key, lambda: one_request(self.params, task)[0],
                                                       max_tokens, fmt)
        usage, cost = Usage(), 0.0
        vote, status = None, "error"
        if isinstance(outcome, Reply):
            usage, cost = self._charged(call, outcome, batch_id, share)
            vote, status = read_vote(outcome.content or "", task.scale)
            if vote is None:
                first = outcome.content or ""

                def repair() -> list[dict[str, Any]]:
                    return repair_messages(one_request(self.params, task)[0], first)

                outcome, batch_id, share = await self.sender.outcome(f"{task.request_key}-repair", repair, max_tokens, fmt)
                if isinstance(outcome, Reply):
                    more, more_cost = self._charged(call, outcome, batch_id, share)
                    usage, cost = usage + more, cost + more_cost
                    vote = read_vote(outcome.content or "", task.scale)[0]
                    status = "repaired" if vote else "unparseable"
        if isinstance(outcome, BatchError):
            vote, status = None, "error"
            call.error = f"{self.vendor}: batch {batch_id}: {outcome.code}: {outcome.message}"
        return vote_record(self.member, self.params, self.prices, task, vote, status, call, uuid.uuid4().hex, [],
                           usage, batch_id=batch_id, cost_usd=cost, shape=self.shape)

    def _charged(self, call: Call, reply: Reply, batch_id: str | None, share: tuple[int, int]) -> tuple[Usage, float]:
        """This vote's part of a reply's usage and its cost: at the batch rates, or at the chat rates for a request
        sent again as a chat call (``batch_id`` None)."""
        call.raws.append(reply.content or "")
        call.finish = reply.finish_reason
        usage = share_of(reply.usage, share)
        prices = self.prices if batch_id is not None or self.fallback is None else self.fallback.prices
        return usage, usage.cost_usd(*prices)


def share_of(usage: Usage, share: tuple[int, int]) -> Usage:
    """Vote ``index``'s part of a request's usage shared by ``n`` votes (the parts add up to the whole); nothing
    when ``n`` is 0 (an earlier vote was charged for the whole request)."""
    index, n = share
    if n == 0:
        return Usage()
    return usage if n == 1 else split_usage(usage, n)[index]


