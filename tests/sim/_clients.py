"""The official SDKs as clients of a running embedded provider, imported when a test makes one (not when the suite
collects its modules: each of its workers collects them all)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic
    from openai import AsyncOpenAI


def openai_client(server: Any) -> AsyncOpenAI:
    """The openai SDK on ``server`` (``/v1``), never retrying: each answer is the provider's first."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)


def anthropic_client(server: Any, **kw: Any) -> anthropic.AsyncAnthropic:
    """The anthropic SDK on ``server`` (it adds ``/v1`` itself), never retrying."""
    import anthropic

    return anthropic.AsyncAnthropic(base_url=server.url.removesuffix("/v1"), api_key="test", max_retries=0, **kw)
