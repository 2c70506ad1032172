"""Reasoning spend: how many hidden reasoning tokens a request of a reasoning model costs, and what is left of the
answer once they come out of the output cap.

The spend is drawn per request from its text (seed, model id, messages), like the provider's other draws, so the
same request always spends alike: ``round(mean * (0.5 + u))``, ``u`` uniform in [0, 1), with ``mean`` the vendor's
``VendorBehaviour.reasoning_means`` for the request's effort, thinking budget or dynamic thinking (or, for a model
under test, its ``ModelBehaviour.reasoning_tokens`` when set); a thinking budget caps the spend. The same ``u``
serves every effort, so a request spends more at a higher effort.

Reasoning comes first out of the cap (chat: ``max_completion_tokens``, else ``max_tokens``; Messages:
``max_tokens``): when the cap is below the reasoning plus the answer, the answer is cut (``finish_reason``
"length"), and when the reasoning alone reaches it, nothing of the answer is left.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from council.sim._apis import Plan

_UNIT = 2.0**-53


def _unit(seed: int, model: str, messages: Sequence[tuple[str, str]]) -> float:
    h = hashlib.sha256(f"reasoning\x1e{seed}\x1e{model}".encode())
    for role, content in messages:
        h.update(b"\x1e" + role.encode() + b"\x1f" + content.encode())
    return (int.from_bytes(h.digest()[:8], "big") >> 11) * _UNIT


def spend(plan: Plan, means: Mapping[str, int], seed: int, model: str, messages: Sequence[tuple[str, str]],
          mean: int | None = None) -> int:
    """The reasoning tokens the request spends (0 when its plan does not reason); ``mean`` overrides the vendor's."""
    key = plan.spend_key
    if key is None:
        return 0
    tokens = round((mean if mean else means[key]) * (0.5 + _unit(seed, model, messages)))
    return min(tokens, plan.budget) if plan.budget is not None else tokens


def est_tokens(chars: int) -> int:
    return -(-chars // 4)  # ceil(chars / 4)


def fit(content: str, finish: str, reasoning: int, cap: int | None) -> tuple[str, str, int, int]:
    """The answer as it goes out under ``cap``: ``(content, finish, completion_tokens, reasoning)``, the reasoning
    first out of the cap and billed within ``completion_tokens``."""
    total = reasoning + est_tokens(len(content))
    if cap is None or total <= cap:
        return content, finish, total, reasoning
    reasoning = min(reasoning, cap)
    return content[: (cap - reasoning) * 4], "length", cap, reasoning


_THOUGHTS = (
    "Let me read the request carefully and check what it asks for before answering.",
    "I should weigh the response against the question and settle on a verdict.",
    "First I work out what is being asked, then I check each part of the answer.",
)


def thinking_block(seed: int, model: str, messages: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The ``thinking`` content block Anthropic's Messages API opens a reply with when thinking is on: a summary of
    the thinking and its ``signature`` (opaque)."""
    u = _unit(seed, model, messages)
    text = _THOUGHTS[min(int(u * len(_THOUGHTS)), len(_THOUGHTS) - 1)]
    signature = hashlib.sha256(f"signature\x1e{seed}\x1e{model}\x1e{u}".encode()).hexdigest()
    return {"type": "thinking", "thinking": text, "signature": f"EqQBCkgIBhABGAIiQ{signature}"}
