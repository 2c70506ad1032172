"""Asking a model under test: predict-then-answer, one item at a time, archived before anything reads it.

Plain Python; the Ray actor in :mod:`council.cluster.actors` is a thin shell. A vendor's elicitor shares its
judge's limiter (in-process) or quota actor (on a cluster): one account, one limit.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from council.core.errors import ProviderError, ProviderUnavailable
from council.core.schema import ElicitedRecord, RequestParams, Usage
from council.protocol.config import Endpoint, JudgeParams
from council.transport.client import ChatClient
from council.transport.limiter import Limiter
from council.transport.shape import RequestShape, seat_shape, sent_fields
from council.transport.wire import Api
from elicitor.parsing import parse_elicited
from elicitor.prompts import ELICIT_HASH, ELICIT_VERSION, elicit_messages


def elicit_key(model: str, prompt: str, max_tokens: int, temperature: float = 0.0) -> str:
    """Everything that determines an elicitation request, hashed (the resume and re-use key)."""
    return hashlib.sha256("\x1f".join(
        (ELICIT_VERSION, ELICIT_HASH, model, repr(float(temperature)), str(max_tokens), prompt.strip())).encode()
    ).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ElicitTask:
    row_id: str
    item_id: str
    model: str
    vendor: str
    prompt: str
    request_key: str


class Elicitor:
    def __init__(self, endpoint: Endpoint, limiter: Limiter, *, max_tokens: int = 512, temperature: float = 0.0,
                 prices: dict[str, tuple[float, ...]] | None = None, seed: int = 0, vendor: str = "",
                 api: Api = "openai", params: JudgeParams | None = None) -> None:
        self.limiter = limiter
        self.client = ChatClient(endpoint, seed=seed, limiter=limiter, vendor=vendor, api=api)
        self.endpoint, self.api = endpoint, api
        self.max_tokens = max_tokens
        self.temperature = temperature
        # the reasoning settings a model under test is asked with (the judges': council.transport.shape)
        self.params = (params or JudgeParams()).model_copy(update={"temperature": temperature})
        self.prices = prices or {}
        self._shapes: dict[str, RequestShape] = {}

    def shape(self, model: str, vendor: str) -> RequestShape:
        """The requests of ``model`` fitted to its API (once per model)."""
        if model not in self._shapes:
            self._shapes[model] = seat_shape(model, vendor, self.params, self.endpoint, self.api)
        return self._shapes[model]

    async def elicit_batch(self, tasks: list[ElicitTask]) -> list[ElicitedRecord]:
        import asyncio

        return list(await asyncio.gather(*(self.elicit(t) for t in tasks)))

    async def elicit(self, task: ElicitTask) -> ElicitedRecord:
        started = time.perf_counter()
        content, finish, usage, attempts, error = None, None, Usage(), 0, None
        if not self.client.vendor:  # one elicitor per vendor: its tasks name it
            self.client.vendor = task.vendor
        await self.limiter.acquire_slot()
        try:
            result = await self.client.chat(task.model, elicit_messages(task.prompt), max_tokens=self.max_tokens,
                                            shape=self.shape(task.model, task.vendor))
            content, finish, usage, attempts = result.content, result.finish_reason, result.usage, result.attempts
        except ProviderUnavailable:
            raise  # the vendor cannot be used: no record, the run stops (and the answer is asked on resume)
        except ProviderError as exc:
            error, attempts = str(exc), exc.attempts
        finally:
            await self.limiter.release_slot()
        latency = time.perf_counter() - started
        parsed = parse_elicited(content)
        return ElicitedRecord(
            row_id=task.row_id, item_id=task.item_id, model=task.model, vendor=task.vendor, text=content,
            answer=parsed.answer, abstained=parsed.abstained, confidence=parsed.confidence,
            confidence_status=parsed.confidence_status,
            truncated=finish == "length" or (parsed.empty and usage.completion_tokens > 0),
            empty=parsed.empty or not parsed.answer, finish_reason=finish, usage=usage,
            cost_usd=usage.cost_usd(*self.prices.get(task.model, (0.0, 0.0))), latency_s=round(latency, 6),
            tokens_per_s=round(usage.completion_tokens / latency, 3) if latency > 0 and usage.completion_tokens else None,
            attempts=attempts, error=error, elicit_prompt_version=ELICIT_VERSION, elicit_prompt_hash=ELICIT_HASH,
            request=RequestParams(model=task.model, temperature=self.temperature, max_tokens=self.max_tokens,
                                  sent=sent_fields(self.shape(task.model, task.vendor), task.model, self.max_tokens)),
            request_key=task.request_key,
        )

    async def close(self) -> None:
        await self.client.close()
