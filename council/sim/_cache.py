"""Automatic prompt caching, as OpenAI's API documents it for chat completions: a prompt of at least
``prompt_cache_min_tokens`` (1024) tokens is cached; a later prompt of the same model that begins with the
same tokens is served that prefix from the cache, counted in ``usage.prompt_tokens_details.cached_tokens``
in whole blocks of ``prompt_cache_block_tokens`` (128), the first hit being at least the minimum; a cached
prefix stays for ``prompt_cache_ttl_s`` (300 s) after its last use ("5 to 10 minutes of inactivity").

The provider reckons four characters to a token, so a block is that many characters of the prompt as the
model reads it: each message's role and content, in order. Which prefixes are cached is all it keeps: a
digest per block boundary, per model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

CHARS_PER_TOKEN = 4  # as the provider counts tokens (council.sim._server._est_tokens)
_SWEEP_EVERY = 4096  # insertions between two sweeps of expired prefixes


class PrefixCache:
    """The prefixes a provider has cached, per model; :meth:`serve` reads and refreshes them."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._seen: dict[bytes, float] = {}  # digest of (model, prefix) -> when it was last used
        self._inserts = 0

    def serve(self, model: str, messages: Sequence[tuple[str, str]], prompt_tokens: int, *, min_tokens: int,
              block_tokens: int, ttl_s: float) -> int:
        """The tokens of this prompt served from the cache (0 without caching: ``ttl_s`` 0, or a prompt
        shorter than ``min_tokens``); the prompt's prefixes are cached (or kept) from now on."""
        if ttl_s <= 0 or prompt_tokens < min_tokens or block_tokens < 1:
            return 0
        now = self._clock()
        digests = _block_digests(model, messages, block_tokens * CHARS_PER_TOKEN)
        hit = 0
        for k in range(len(digests), 0, -1):  # the longest cached prefix: its shorter prefixes were cached with it
            seen = self._seen.get(digests[k - 1])
            if seen is not None and now - seen <= ttl_s:
                hit = k
                break
        for digest in digests:
            self._seen[digest] = now
        self._inserts += len(digests)
        if self._inserts >= _SWEEP_EVERY:
            self._inserts = 0
            self._seen = {d: t for d, t in self._seen.items() if now - t <= ttl_s}
        cached = min(hit * block_tokens, prompt_tokens)
        return cached if cached >= min_tokens else 0


def _block_digests(model: str, messages: Sequence[tuple[str, str]], block_chars: int) -> list[bytes]:
    """A digest of the prompt's text up to each whole block, in order (the text after the last whole block is
    never cached)."""
    text = "".join(f"\x1e{role}\x1f{content}" for role, content in messages)
    running = hashlib.blake2b(model.encode(), digest_size=16)
    out = []
    for start in range(0, len(text) - block_chars + 1, block_chars):
        running.update(text[start:start + block_chars].encode())
        out.append(running.copy().digest())
    return out
