"""Ray actor shells. No logic here: each method forwards to the plain class it wraps."""

from __future__ import annotations

import ray

from council.config import Endpoint, JudgeParams
from council.judge import Judge, JudgeTask
from council.schema import JudgeCallRecord, MemberSpec


@ray.remote
class JudgeActor:
    def __init__(self, member: MemberSpec, endpoint: Endpoint, params: JudgeParams, seed: int) -> None:
        self._judge = Judge(member, endpoint, params, seed=seed)

    async def grade_batch(self, tasks: list[JudgeTask]) -> list[JudgeCallRecord]:
        return await self._judge.grade_batch(tasks)

    async def close(self) -> None:
        await self._judge.close()
