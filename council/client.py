"""An OpenAI-compatible chat-completions client on aiohttp: one session per vendor, per-phase timeouts,
retries on 429/5xx/timeouts that honour the provider's hints, with jitter. aiohttp errors stop here and
leave as :class:`ProviderError`."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from council.config import Endpoint
from council.errors import ProviderError, RateLimited
from council.limiter import Limiter
from council.quota import estimate_tokens
from council.schema import Usage

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str | None
    finish_reason: str | None
    usage: Usage
    attempts: int
    latency_s: float


def retry_hint_s(headers: Any) -> float | None:
    """The provider's wait hint in seconds: ``retry-after-ms``, ``retry-after``, or ``x-ratelimit-reset-*``."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
    resets = [_duration_s(headers.get(h)) for h in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")]
    resets = [r for r in resets if r is not None]
    return max(resets) if resets else None


def _duration_s(text: str | None) -> float | None:
    """Parse OpenAI-style durations: ``"1.5s"``, ``"20ms"``, ``"1m30s"``, or a bare number of seconds."""
    if not text:
        return None
    total, number = 0.0, ""
    i = 0
    try:
        while i < len(text):
            ch = text[i]
            if ch.isdigit() or ch == ".":
                number += ch
            elif text.startswith("ms", i):
                total, number, i = total + float(number) / 1000.0, "", i + 1
            elif ch in "hms":
                total += float(number) * {"h": 3600.0, "m": 60.0, "s": 1.0}[ch]
                number = ""
            else:
                return None
            i += 1
        return total + (float(number) if number else 0.0)
    except ValueError:
        return None


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint. Create and use inside one event loop."""

    def __init__(self, endpoint: Endpoint, *, seed: int | None = None, limiter: Limiter | None = None) -> None:
        self.endpoint = endpoint
        self.limiter = limiter
        self._session: aiohttp.ClientSession | None = None
        self._rng = random.Random(seed)
        self._url = endpoint.base_url + "/chat/completions"

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            t = self.endpoint.timeouts
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=t.total_s, sock_connect=t.connect_s, sock_read=t.read_s),
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),  # concurrency is the limiter's
                headers={"Authorization": f"Bearer {self.endpoint.api_key()}", "Content-Type": "application/json"},
                json_serialize=lambda obj: orjson.dumps(obj).decode(),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    def backoff_s(self, attempt: int, hint_s: float | None) -> float:
        """Wait before retry number ``attempt`` (1-based): the hint plus jitter, else full-jitter exponential."""
        policy = self.endpoint.retry
        if hint_s is not None:
            return min(policy.max_delay_s, hint_s) + self._rng.uniform(0.0, policy.base_delay_s + 0.25 * hint_s)
        return self._rng.uniform(0.0, min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1)))

    async def chat(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        response_format: dict[str, Any] | None = None,
        admitted: bool = False,
    ) -> ChatResult:
        """One completion, retried as the policy allows. Every attempt passes the vendor's limiter (the
        first one not if the caller has ``admitted`` it already) and reports back what it cost."""
        body: dict[str, Any] = {
            "model": model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens,
        }
        if response_format is not None:
            body["response_format"] = response_format
        payload = orjson.dumps(body)
        session = self._open()
        started = time.perf_counter()
        last: ProviderError | None = None
        attempts = 0
        limiter = self.limiter
        estimate = estimate_tokens(messages, max_tokens) if limiter else 0
        for attempt in range(1, self.endpoint.retry.max_attempts + 1):
            attempts = attempt
            hint: float | None = None
            if limiter and (attempt > 1 or not admitted):
                await limiter.admit(estimate)
            try:
                async with session.post(self._url, data=payload) as resp:
                    raw = await resp.read()
                    if resp.status == 200:
                        result = _result(raw, attempts, time.perf_counter() - started)
                        if limiter:
                            limiter.settle(estimate, result.usage.total_tokens)
                            limiter.announced(*_announced(resp.headers))
                        return result
                    hint = retry_hint_s(resp.headers)
                    if limiter:
                        limiter.settle(estimate, 0)
                        if resp.status == 429:
                            limiter.rate_limited(hint)
                    message = f"{model}: HTTP {resp.status}: {_error_text(raw)}"
                    if resp.status == 429:
                        last = RateLimited(message, retry_after_s=hint, attempts=attempts)
                    else:
                        last = ProviderError(message, status=resp.status, attempts=attempts)
                    if resp.status not in RETRYABLE_STATUS:
                        raise last
            except (asyncio.TimeoutError, aiohttp.ClientError) as exc:
                last = ProviderError(f"{model}: {type(exc).__name__}: {exc}", attempts=attempts)
                if limiter:
                    limiter.settle(estimate, 0)
            if attempt < self.endpoint.retry.max_attempts:
                await asyncio.sleep(self.backoff_s(attempt, hint))
        assert last is not None
        raise last


def _announced(headers: Any) -> tuple[float | None, float | None]:
    """Limits the provider announces in ``x-ratelimit-limit-requests`` / ``-tokens`` (per minute)."""
    out: list[float | None] = []
    for name in ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens"):
        value = headers.get(name)
        try:
            out.append(float(value) if value is not None else None)
        except ValueError:
            out.append(None)
    return out[0], out[1]


def _result(raw: bytes, attempts: int, latency_s: float) -> ChatResult:
    try:
        data = orjson.loads(raw)
        choice = data["choices"][0]
        content = choice["message"].get("content")
        usage = data.get("usage") or {}
        return ChatResult(
            content=content if isinstance(content, str) else None,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                total_tokens=int(usage.get("total_tokens") or 0),
                reasoning_tokens=int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0),
            ),
            attempts=attempts,
            latency_s=latency_s,
        )
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise ProviderError(f"malformed completion body ({type(exc).__name__}): {raw[:200]!r}", attempts=attempts)


def _error_text(raw: bytes) -> str:
    try:
        data = orjson.loads(raw)
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message", ""))[:300]
    except orjson.JSONDecodeError:
        pass
    return raw[:300].decode(errors="replace")
