"""The embedded provider's automatic prompt caching, read through the official openai SDK as a client: a prompt
of at least 1024 tokens is cached; a later prompt of the same model that begins the same way is served its
shared prefix in whole 128-token blocks (``usage.prompt_tokens_details.cached_tokens``); shorter prompts,
other models and prefixes idle longer than the time to live are not.

A vendor with ``prompt_cache_breakpoints`` caches as Anthropic documents it instead: only where a request marks
a content part ``cache_control``, all of a prefix up to a breakpoint that an earlier request marked too. The
planted world keeps every vendor automatic: the council marks breakpoints only for a vendor whose settings say
``cache_breakpoints``, so a breakpoint-only anthropic would serve a default run nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from tests.sim._clients import openai_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

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
        client = openai_client(server)
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
        client = openai_client(server)
        await _cached(client, MODEL, SHARED, "one")
        for _ in range(3):  # each use keeps it: 200 s apart, but never 300 s idle
            clock.t += 200.0
            assert (await _cached(client, MODEL, SHARED, "two"))[0] >= 1024
        await client.close()
    async with await start_sim(_quiet(prompt_cache_ttl_s=0.0), TruthTable(), clock=clock) as server:
        client = openai_client(server)
        assert [(await _cached(client, MODEL, SHARED, "one"))[0] for _ in range(2)] == [None, None]
        await client.close()


# -- caching at marked breakpoints (Anthropic's way, as OpenRouter passes it on) ---------------------------------------

ROUND_ONE = "Round one's item: the question, the reference and the response. " * 20  # 1,300 characters


def _breakpoints() -> SimConfig:
    """The quiet world, anthropic caching at marked breakpoints only."""
    config = _quiet()
    vendors = {**config.vendors, "anthropic": config.vendors["anthropic"].model_copy(
        update={"prompt_cache_breakpoints": True})}
    return config.model_copy(update={"vendors": vendors})


def _mark(text: str) -> list[dict]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


async def _served(client: AsyncOpenAI, messages: list[dict], model: str = OTHER) -> tuple[int, int]:
    """(cached_tokens, cache_write_tokens) of one request."""
    resp = await client.chat.completions.create(model=model, messages=messages)
    details = resp.usage.prompt_tokens_details
    return details.cached_tokens, getattr(details, "cache_write_tokens", None) or 0


def _tokens(*texts: str) -> int:
    return -(-sum(len(t) for t in texts) // 4)  # as the provider counts


async def test_a_breakpoint_vendor_serves_only_what_a_request_marks_and_only_long_enough() -> None:
    clock = Clock()
    async with await start_sim(_breakpoints(), TruthTable(), clock=clock) as server:
        client = openai_client(server)
        plain = [{"role": "system", "content": SHARED}, {"role": "user", "content": ROUND_ONE}]
        assert [await _served(client, plain) for _ in range(2)] == [(0, 0), (0, 0)]  # nothing marked, nothing cached
        round_one = [{"role": "system", "content": _mark(SHARED)}, {"role": "user", "content": _mark(ROUND_ONE)}]
        assert await _served(client, round_one) == (0, _tokens(SHARED, ROUND_ONE))  # written, up to the last mark
        round_two = [*round_one, {"role": "assistant", "content": '{"verdict": "correct"}'},
                     {"role": "user", "content": "The peers' votes."}]
        # the whole prefix up to round one's breakpoint, to the token (no 128-token blocks)
        assert await _served(client, round_two) == (_tokens(SHARED, ROUND_ONE), 0)
        split = [{"role": "system", "content": SHARED},
                 {"role": "user", "content": [*_mark(ROUND_ONE), {"type": "text", "text": "An unmarked tail."}]}]
        # a breakpoint ends at its part, within the message: the same prefix as round one's (the marks are no text)
        assert await _served(client, split) == (_tokens(SHARED, ROUND_ONE), 0)
        other = [{"role": "system", "content": _mark(SHARED)}, {"role": "user", "content": _mark(ROUND_ONE + "!")}]
        # one character more before the second breakpoint: only the system prompt's prefix is the same
        assert await _served(client, other) == (_tokens(SHARED), _tokens(ROUND_ONE + "!"))
        unmarked_system = [{"role": "system", "content": SHARED}, {"role": "user", "content": "Another item."}]
        assert await _served(client, unmarked_system) == (0, 0)  # cached, but this request marks no breakpoint
        short = [{"role": "system", "content": _mark("A short system prompt.")}, {"role": "user", "content": "q"}]
        assert [await _served(client, short) for _ in range(2)] == [(0, 0), (0, 0)]  # under 1,024 tokens
        clock.t += 200.0
        assert (await _served(client, round_two))[0] == _tokens(SHARED, ROUND_ONE)  # a use refreshes it ...
        clock.t += 200.0
        assert (await _served(client, round_two))[0] == _tokens(SHARED, ROUND_ONE)
        clock.t += 301.0  # ... and 300 s idle drops it
        assert await _served(client, round_two) == (0, _tokens(SHARED, ROUND_ONE))
        stats = await server.stats()
        await client.close()
    assert stats["models"][OTHER]["cached_tokens"] == 4 * _tokens(SHARED, ROUND_ONE) + _tokens(SHARED)


async def test_an_automatic_vendor_reads_marked_parts_as_text_and_caches_as_before() -> None:
    async with await start_sim(_breakpoints(), TruthTable(), clock=Clock()) as server:
        client = openai_client(server)
        await _cached(client, MODEL, SHARED, "Question one: what is 2 + 2?")
        automatic, _ = await _cached(client, MODEL, SHARED, "A different question altogether.")
        marked = [{"role": "system", "content": _mark(SHARED)},
                  {"role": "user", "content": [{"type": "text", "text": "A different "},
                                               {"type": "text", "text": "question altogether."}]}]
        assert (await _served(client, marked, MODEL))[0] == automatic  # the same text, the same 128-token blocks
        await client.close()


async def test_content_parts_that_are_not_text_and_a_fifth_breakpoint_are_refused() -> None:
    from openai import BadRequestError

    async with await start_sim(_breakpoints(), TruthTable(), clock=Clock()) as server:
        client = openai_client(server)
        image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]
        five = [{"role": "user", "content": [_mark(f"part {k}. ")[0] for k in range(5)]}]
        four = [{"role": "user", "content": [_mark(f"part {k}. ")[0] for k in range(4)]}]
        for messages, model, said in [(image, MODEL, "text parts only"), (five, OTHER, "A maximum of 4 blocks"),
                                      ([{"role": "user", "content": [{**_mark("x")[0], "cache_control": {}}]}], MODEL,
                                       "'ephemeral'")]:
            with pytest.raises(BadRequestError, match=said):
                await client.chat.completions.create(model=model, messages=messages)
        assert await _served(client, four) == (0, 0)  # four is the limit, and short
        assert (await _served(client, five, MODEL))[0] == 0  # an automatic vendor has no such limit
        await client.close()


def test_the_cache_settings_are_each_vendor_s() -> None:
    assert VendorBehaviour().prompt_cache_min_tokens == 1024 and VendorBehaviour().prompt_cache_block_tokens == 128
    assert VendorBehaviour().prompt_cache_ttl_s == 300.0 and not VendorBehaviour().prompt_cache_breakpoints
    assert not any(b.prompt_cache_breakpoints for b in SimConfig.planted().vendors.values())  # see the note above
