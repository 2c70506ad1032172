"""A council member's judge: sends prepared prompts to its vendor's model, reads the verdict, asks for
one repair when the output is unreadable, and returns one record per vote. Plain Python: the Ray actor
in :mod:`council.actors` is a thin shell over this class."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from council.client import ChatClient
from council.config import Endpoint, JudgeParams
from council.errors import ProviderError
from council.parsing import parse_verdict
from council.prompts import PROMPT_HASHES, PROMPT_VERSION, VERDICT_SCHEMA, repair_messages
from council.schema import JudgeCallRecord, MemberSpec, Usage

RESPONSE_FORMAT = {"type": "json_schema", "json_schema": VERDICT_SCHEMA}


@dataclass(frozen=True, slots=True)
class JudgeTask:
    """One vote to ask for: the row, the round and the exact messages (already rendered and scrubbed)."""

    row_id: str
    round: int
    messages: list[dict[str, str]]
    peer_letters: dict[str, str] = field(default_factory=dict)


class Judge:
    def __init__(self, member: MemberSpec, endpoint: Endpoint, params: JudgeParams, *, seed: int = 0) -> None:
        self.member = member
        self.params = params
        self.client = ChatClient(endpoint, seed=seed)
        self._slots = asyncio.Semaphore(endpoint.concurrency)

    async def grade_batch(self, tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
        return list(await asyncio.gather(*(self.grade(t) for t in tasks)))

    async def grade(self, task: JudgeTask) -> JudgeCallRecord:
        async with self._slots:
            return await self._grade(task)

    async def _grade(self, task: JudgeTask) -> JudgeCallRecord:
        started = time.perf_counter()
        raws: list[str] = []
        usage, attempts, finish, status = Usage(), 0, None, "unparseable"
        verdict = reason = error = None
        messages = task.messages
        try:
            for ask in range(2):  # the question, then at most one repair re-ask
                result = await self.client.chat(
                    self.member.judge_model, messages, temperature=self.params.temperature,
                    max_tokens=self.params.max_tokens, response_format=RESPONSE_FORMAT,
                )
                usage, attempts, finish = usage + result.usage, attempts + result.attempts, result.finish_reason
                raws.append(result.content or "")
                parsed = parse_verdict(result.content)
                if parsed is not None:
                    verdict, reason = parsed
                    status = "ok" if ask == 0 else "repaired"
                    break
                messages = repair_messages(task.messages, result.content or "")
        except ProviderError as exc:
            status, error, attempts = "error", str(exc), attempts + exc.attempts
        return JudgeCallRecord(
            row_id=task.row_id, round=task.round, member=self.member.vendor, judge_model=self.member.judge_model,
            verdict=verdict, reason=reason, ok=verdict is not None, parse_status=status, raw_outputs=raws,
            finish_reason=finish, usage=usage, latency_s=round(time.perf_counter() - started, 6), attempts=attempts,
            error=error, prompt_version=PROMPT_VERSION, prompt_hash=PROMPT_HASHES[f"round{task.round}"],
            request_id=uuid.uuid4().hex, batch_size=1, peer_letters=task.peer_letters,
        )

    async def close(self) -> None:
        await self.client.close()
