import asyncio
import contextlib
import time

import orjson
import pytest
from aiohttp import web

from council.core.errors import ProviderError, RateLimited
from council.protocol.config import Endpoint, RetryPolicy, Timeouts
from council.transport.client import ChatClient, _duration_s, retry_hint_s
from tests.council._loopback import serving

OK_BODY = {
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


class Script:
    """A tiny OpenAI-shaped server that answers from a script of (status, headers, delay) steps."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.calls: list[tuple[float, dict]] = []

    async def handler(self, request: web.Request) -> web.Response:
        self.calls.append((time.monotonic(), dict(request.headers)))
        status, headers, delay = self.steps.pop(0) if self.steps else (200, {}, 0)
        if delay:
            await asyncio.sleep(delay)
        body = OK_BODY if status == 200 else {"error": {"message": f"status {status}"}}
        return web.Response(status=status, body=orjson.dumps(body), headers=headers, content_type="application/json")


@pytest.fixture
async def serve():
    async with contextlib.AsyncExitStack() as servers:

        async def start(script):
            return await servers.enter_async_context(serving("/v1/chat/completions", script.handler))

        yield start


def endpoint(url, attempts=4, read_s=5.0):
    return Endpoint(base_url=url, api_key_env=None, timeouts=Timeouts(read_s=read_s, total_s=read_s + 1),
                    retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=2))


async def test_retries_429_honouring_retry_after_ms(serve):
    script = Script([(429, {"retry-after-ms": "300"}, 0), (200, {}, 0)])
    client = ChatClient(endpoint(await serve(script)))
    result = await client.chat("m", [{"role": "user", "content": "x"}])
    await client.close()
    assert result.content == "hi" and result.attempts == 2 and result.usage.total_tokens == 4
    waited = script.calls[1][0] - script.calls[0][0]
    assert 0.3 <= waited < 1.0
    assert script.calls[0][1]["Authorization"].startswith("Bearer ")


async def test_retries_5xx_and_gives_up_with_provider_error(serve):
    script = Script([(500, {}, 0)] * 3)
    client = ChatClient(endpoint(await serve(script), attempts=3))
    with pytest.raises(ProviderError) as info:
        await client.chat("m", [{"role": "user", "content": "x"}])
    await client.close()
    assert info.value.status == 500 and info.value.attempts == 3 and len(script.calls) == 3


async def test_client_error_is_not_retried(serve):
    script = Script([(400, {}, 0)])
    client = ChatClient(endpoint(await serve(script)))
    with pytest.raises(ProviderError) as info:
        await client.chat("m", [{"role": "user", "content": "x"}])
    await client.close()
    assert info.value.status == 400 and len(script.calls) == 1


async def test_read_timeout_is_retried(serve):
    script = Script([(200, {}, 1.0), (200, {}, 0)])
    client = ChatClient(endpoint(await serve(script), read_s=0.2))
    result = await client.chat("m", [{"role": "user", "content": "x"}])
    await client.close()
    assert result.attempts == 2


async def test_persistent_429_raises_rate_limited(serve):
    script = Script([(429, {"retry-after": "0"}, 0)] * 2)
    client = ChatClient(endpoint(await serve(script), attempts=2))
    with pytest.raises(RateLimited):
        await client.chat("m", [{"role": "user", "content": "x"}])
    await client.close()


def test_retry_hints():
    assert retry_hint_s({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_hint_s({"retry-after": "2"}) == 2.0
    assert retry_hint_s({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "20ms"}) == 90.0
    assert retry_hint_s({}) is None
    assert _duration_s("0.35s") == pytest.approx(0.35) and _duration_s("250ms") == pytest.approx(0.25)
    assert _duration_s("garbage") is None


def test_jitter_spreads_retries():
    client = ChatClient(endpoint("http://127.0.0.1:9/v1"), seed=1)
    waits = [client.backoff_s(3, 1.0) for _ in range(200)]
    assert min(waits) >= 1.0 and max(waits) > min(waits) + 0.1  # never all at the same instant
    assert len(set(waits)) > 150
