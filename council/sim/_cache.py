"""Prompt caching, the two ways the public APIs document it.

Automatic (:class:`PrefixCache`), as OpenAI's API documents it for chat completions: a prompt of at least
``prompt_cache_min_tokens`` (1024) tokens is cached; a later prompt of the same model that begins with the
same tokens is served that prefix from the cache, counted in ``usage.prompt_tokens_details.cached_tokens``
in whole blocks of ``prompt_cache_block_tokens`` (128), the first hit being at least the minimum; a cached
prefix stays for ``prompt_cache_ttl_s`` (300 s) after its last use ("5 to 10 minutes of inactivity").

At marked breakpoints only (:class:`BreakpointCache`, a vendor with ``prompt_cache_breakpoints``), as Anthropic
documents it for its models and OpenRouter passes it on: a request marks a content block with ``cache_control:
{"type": "ephemeral"}`` (at most four). The prefix that ends at a marked block (every message before it, then
the block's message up to and including the block) is cached when it is at least the minimum (1,024 tokens for
most Claude models); a later request of the same model is served the longest cached prefix that ends at one of
*its* breakpoints and is identical up to there, all of it (not in blocks), and a request that marks nothing is
served nothing. The time to live is the same 5 minutes, refreshed on each use. OpenRouter reports the read in
``prompt_tokens_details.cached_tokens`` and what this request wrote to the cache in ``cache_write_tokens``.
The lookback Anthropic also does (a breakpoint finds an entry written at an earlier block boundary, up to 20
blocks back) is not played: a hit here needs the earlier request to have marked the same place.

The provider reckons four characters to a token, so a block is that many characters of the prompt as the
model reads it: each message's role and content, in order. Which prefixes are cached is all it keeps: a
digest per cached prefix, per model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

CHARS_PER_TOKEN = 4  # as the provider counts tokens (council.sim._wire._est_tokens)
_SWEEP_EVERY = 4096  # insertions between two sweeps of expired prefixes

Breakpoint = tuple[int, int]  # (message index, characters of that message's content up to the marked block's end)


class _Seen:
    """When each cached prefix (by digest) was last used; expired ones are dropped now and then."""

    def __init__(self) -> None:
        self._at: dict[bytes, float] = {}
        self._inserts = 0

    def fresh(self, digest: bytes, now: float, ttl_s: float) -> bool:
        seen = self._at.get(digest)
        return seen is not None and now - seen <= ttl_s

    def keep(self, digests: Sequence[bytes], now: float, ttl_s: float) -> None:
        """Cache these prefixes, or keep them ``ttl_s`` longer from ``now``."""
        for digest in digests:
            self._at[digest] = now
        self._inserts += len(digests)
        if self._inserts >= _SWEEP_EVERY:
            self._inserts = 0
            self._at = {d: t for d, t in self._at.items() if now - t <= ttl_s}


class PrefixCache:
    """The prefixes a provider has cached automatically, per model; :meth:`serve` reads and refreshes them."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._seen = _Seen()

    def serve(self, model: str, messages: Sequence[tuple[str, str]], prompt_tokens: int, *, min_tokens: int,
              block_tokens: int, ttl_s: float) -> int:
        """The tokens of this prompt served from the cache (0 without caching: ``ttl_s`` 0, or a prompt
        shorter than ``min_tokens``); the prompt's prefixes are cached (or kept) from now on."""
        if ttl_s <= 0 or prompt_tokens < min_tokens or block_tokens < 1:
            return 0
        now = self._clock()
        digests = _block_digests(model, messages, block_tokens * CHARS_PER_TOKEN)
        # the longest cached prefix: its shorter prefixes were cached with it
        hit = next((k for k in range(len(digests), 0, -1) if self._seen.fresh(digests[k - 1], now, ttl_s)), 0)
        self._seen.keep(digests, now, ttl_s)
        cached = min(hit * block_tokens, prompt_tokens)
        return cached if cached >= min_tokens else 0


class BreakpointCache:
    """The prefixes a provider has cached at requests' marked breakpoints, per model; :meth:`serve` reads and
    refreshes them."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._seen = _Seen()

    def serve(self, model: str, messages: Sequence[tuple[str, str]], breakpoints: Sequence[Breakpoint], *,
              min_tokens: int, ttl_s: float) -> tuple[int, int]:
        """(tokens of this prompt read from the cache, tokens it wrote to the cache): the read is the longest
        cached prefix ending at one of ``breakpoints``; every prefix ending at one of them and of at least
        ``min_tokens`` is cached (or kept) from now on, and what it holds beyond the read was written."""
        if ttl_s <= 0:
            return 0, 0
        now = self._clock()
        cacheable = [(tokens, digest) for tokens, digest in _breakpoint_prefixes(model, messages, breakpoints)
                     if tokens >= min_tokens]
        read = max((tokens for tokens, digest in cacheable if self._seen.fresh(digest, now, ttl_s)), default=0)
        self._seen.keep([digest for _, digest in cacheable], now, ttl_s)
        return read, max((tokens for tokens, _ in cacheable), default=0) - read


def _prompt_text(messages: Sequence[tuple[str, str]]) -> str:
    return "".join(f"\x1e{role}\x1f{content}" for role, content in messages)


def _block_digests(model: str, messages: Sequence[tuple[str, str]], block_chars: int) -> list[bytes]:
    """A digest of the prompt's text up to each whole block, in order (the text after the last whole block is
    never cached)."""
    text = _prompt_text(messages)
    running = hashlib.blake2b(model.encode(), digest_size=16)
    out = []
    for start in range(0, len(text) - block_chars + 1, block_chars):
        running.update(text[start:start + block_chars].encode())
        out.append(running.copy().digest())
    return out


def _breakpoint_prefixes(model: str, messages: Sequence[tuple[str, str]],
                         breakpoints: Sequence[Breakpoint]) -> list[tuple[int, bytes]]:
    """(tokens, digest) of the prompt up to each breakpoint: the tokens of the contents before it, as the
    provider counts a prompt's tokens, and a digest of the text (roles included) up to it."""
    out = []
    for index, chars in breakpoints:
        role, content = messages[index]
        before = messages[:index]
        text = _prompt_text(before) + f"\x1e{role}\x1f{content[:chars]}"
        tokens = -(-(sum(len(c) for _, c in before) + chars) // CHARS_PER_TOKEN)
        out.append((tokens, hashlib.blake2b(model.encode() + b"\x00" + text.encode(), digest_size=16).digest()))
    return out
