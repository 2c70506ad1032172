"""The embedded provider's state behind every route (``council.sim._server``): per model id its vendor, that
vendor's behaviour and its counters (the keys of ``GET /v1/sim/stats``), the quota book and prompt caches, the
seeded fault stream, the requests and answers recorded; and ``Work``, a received request's answer before billing.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from council.sim._apis import Plan
from council.sim._cache import Breakpoint, BreakpointCache, PrefixCache
from council.sim._config import ModelBehaviour, SimConfig, VendorBehaviour
from council.sim._eliciting import Elicitation
from council.sim._quota import Clock, QuotaBook
from council.sim._reading import Message
from council.sim._truth import TruthTable
from council.sim._world import JUDGES

_STAT_KEYS = (
    "requests", "rate_limited", "billed", "errors", "prompt_tokens", "completion_tokens", "batched_items",
    "elicitations", "reasoning_tokens", "own_vendor_rows", "unknown_producers", "prose_json", "fenced",
    "stalls", "resets", "bad_bodies", "slow_answers", "storm_429s", "cached_tokens",
    "batch_requests", "batch_billed", "batch_billed_twice", "refused", "overloaded",
)


class _ModelStats:
    __slots__ = _STAT_KEYS

    def __init__(self) -> None:
        self.zero()

    def zero(self) -> None:
        for key in _STAT_KEYS:
            setattr(self, key, 0)

    def as_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in _STAT_KEYS}


@dataclass(slots=True)
class _Model:
    """What the server keeps per model id: its vendor, that vendor's (judge and account) behaviour, how
    it answers as a model under test, and the counters."""

    vendor: str
    behaviour: VendorBehaviour
    stats: _ModelStats
    under_test: ModelBehaviour


class _State:
    def __init__(self, config: SimConfig, truth: TruthTable, clock: Clock, record_requests: bool = False) -> None:
        self.config = config
        self.truth = truth
        self.world = config.catalogue
        self.quota = QuotaBook(config, clock)
        self.prompt_cache = PrefixCache(clock)
        self.breakpoint_cache = BreakpointCache(clock)
        self.clock = clock
        self.first_seen: dict[str, float] = {}  # vendor -> time of its first chat request (429 storms)
        self.models: dict[str, _Model] = {}
        self.faults = random.Random(f"sim-faults:{config.seed}")
        self.ids = itertools.count(1)
        self.requests: list[dict[str, Any]] | None = [] if record_requests else None
        self.answers: list[dict[str, Any]] | None = [] if record_requests else None
        self.batch_billed_ids: set[tuple[str, str]] = set()  # (model, custom_id) of every batch request billed
        self.before_stats: list[Callable[[], None]] = []  # brings the batches up to now before a count is read
        for model in JUDGES.values():
            self.model(model)

    def model(self, model_id: str) -> _Model | None:
        """The model's entry (created on first use), or None when the world does not know it."""
        got = self.models.get(model_id)
        if got is None:
            vendor = self.world.vendor(model_id)
            if vendor is None:
                return None
            got = self.models[model_id] = _Model(
                vendor, self.config.behaviour(vendor), _ModelStats(), self.config.model_behaviour(model_id)
            )
        return got

    def stats(self) -> dict[str, Any]:
        for catch_up in self.before_stats:
            catch_up()
        models = {mid: m.stats.as_dict() for mid, m in self.models.items()}
        vendors: dict[str, dict[str, int]] = {}
        for m in self.models.values():
            acc = vendors.setdefault(m.vendor, dict.fromkeys(_STAT_KEYS, 0))
            for key in _STAT_KEYS:
                acc[key] += getattr(m.stats, key)
        return {"models": models, "vendors": vendors}

    def reset(self, quotas: bool = False) -> None:
        for m in self.models.values():
            m.stats.zero()
        if self.requests is not None:
            self.requests.clear()
        if self.answers is not None:
            self.answers.clear()
        self.batch_billed_ids.clear()
        if quotas:
            self.quota.reset()


@dataclass(slots=True)
class Work:
    """A received request's answer before billing: what the model wrote, how it ended, what it costs (the
    reasoning spent is part of ``completion_tokens``), and how its maker's rules answer it (``plan``)."""

    model_id: str
    model: _Model
    messages: list[Message]
    breakpoints: list[Breakpoint]
    content: str
    finish: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int
    reasoning: int
    elicited: Elicitation | None
    latency_ms: float
    jitter_ms: float
    plan: Plan
