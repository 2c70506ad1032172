"""The embedded provider's automatic prompt caching, read through the official openai SDK as a client: a prompt
of at least 1024 tokens is cached; a later prompt of the same model that begins the same way is served its
shared prefix in whole 128-token blocks (``usage.prompt_tokens_details.cached_tokens``); shorter prompts,
other models and prefixes idle longer than the time to live are not."""

from __future__ import annotations

from openai import AsyncOpenAI

from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim

MODEL, OTHER = "openai/gpt-5", "anthropic/claude-sonnet-4.5"
SHARED = "Grade the answer against the reference. " * 115  # 4,600 characters: 1,150 tokens at four a token


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _quiet(**cache: float) -> SimConfig:
    base = SimConfig.planted()
    return base.model_copy(update={"vendors": {v: b.model_copy(update={"latency_ms": 0.0, "latency_jitter_ms": 0.0,
                                                                          **cache})
                                               for v, b in base.vendors.items()}})


async def _cached(client: AsyncOpenAI, model: str, system: str, user: str) -> tuple[int | None, int]:
    resp = await client.chat.completions.create(model=model, messages=[{"role": "system", "content": system},
                                                                       {"role": "user", "content": user}])
    details = resp.usage.prompt_tokens_details
    return (details.cached_tokens if details is not None else None), resp.usage.prompt_tokens


async def test_a_shared_prefix_is_served_from_the_cache_in_whole_blocks() -> None:
    clock = Clock()
    async with await start_sim(_quiet(), TruthTable(), clock=clock) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
        first, tokens = await _cached(client, MODEL, SHARED, "Question one: what is 2 + 2?")
        assert first == 0 and tokens >= 1024  # cached from now on, nothing served yet
        second, tokens2 = await _cached(client, MODEL, SHARED, "A different question altogether.")
        # The shared text is 1,150 tokens: served in whole 128-token blocks, never more than is shared (the
        # role markers add a few characters) and at least the 1,024-token minimum.
        assert second is not None and second % 128 == 0 and 1024 <= second <= 1280 and second < tokens2
        again, tokens3 = await _cached(client, MODEL, SHARED, "Question one: what is 2 + 2?")
        assert again % 128 == 0 and tokens3 - 128 < again <= tokens3  # the whole prompt, but its last part block
        assert (await _cached(client, OTHER, SHARED, "Question one: what is 2 + 2?"))[0] == 0  # per model
        short = "A short prompt. " * 10
        assert [(await _cached(client, MODEL, short, "q"))[0] for _ in range(2)] == [0, 0]  # under 1,024 tokens
        clock.t += 301.0  # idle longer than the 300 s time to live
        assert (await _cached(client, MODEL, SHARED, "Question one: what is 2 + 2?"))[0] == 0
        assert (await _cached(client, MODEL, SHARED, "Question one: what is 2 + 2?"))[0] == again  # cached anew
        stats = await server.stats()
        await client.close()
    assert stats["models"][MODEL]["cached_tokens"] == second + again + again  # billed tokens served cached


async def test_a_hit_refreshes_the_prefix_and_caching_can_be_off() -> None:
    clock = Clock()
    async with await start_sim(_quiet(), TruthTable(), clock=clock) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
        await _cached(client, MODEL, SHARED, "one")
        for _ in range(3):  # each use keeps it: 200 s apart, but never 300 s idle
            clock.t += 200.0
            assert (await _cached(client, MODEL, SHARED, "two"))[0] >= 1024
        await client.close()
    async with await start_sim(_quiet(prompt_cache_ttl_s=0.0), TruthTable(), clock=clock) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
        assert [(await _cached(client, MODEL, SHARED, "one"))[0] for _ in range(2)] == [None, None]
        await client.close()


def test_the_cache_settings_are_each_vendor_s() -> None:
    assert VendorBehaviour().prompt_cache_min_tokens == 1024 and VendorBehaviour().prompt_cache_block_tokens == 128
    assert VendorBehaviour().prompt_cache_ttl_s == 300.0
