"""Immutable run configuration: the roster, the protocol knobs, per-phase timeouts and retry policy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from council.core.errors import ConfigError
from council.core.files import error_line as error_line  # re-exported: the loader lives in council.core.files
from council.core.files import model_from_file as model_from_file
from council.core.files import read_json_object as read_json_object
from council.core.files import validation_problems as validation_problems
from council.core.schema import MemberSpec
from council.core.vendors import DEFAULT_RESERVES, DEFAULT_ROSTER, KNOWN_VENDORS, canonical_vendor, resolve_vendor, vendor_of
from council.protocol.panels import panel
from council.protocol.prices import CONFIG, Price, batch_refusal, table_price

EMBEDDED_API_KEY = "embedded-provider"  # the embedded provider accepts any bearer token


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Timeouts(_Frozen):
    """Per-phase HTTP timeouts in seconds."""

    connect_s: float = 5.0
    read_s: float = 60.0
    total_s: float = 120.0


class RetryPolicy(_Frozen):
    """Retries of transient faults, and the vendor's circuit breaker (see :mod:`council.transport.breaker`): it opens
    after transient failures with no success for ``breaker_window_s`` seconds and at least
    ``breaker_min_failures`` failed attempts in a row (or at once on a permanent failure), and lets one
    probe through ``breaker_cooldown_s`` seconds after opening."""

    max_attempts: int = Field(default=6, ge=1)
    base_delay_s: float = Field(default=0.25, gt=0)
    max_delay_s: float = Field(default=30.0, gt=0)
    breaker_window_s: float = Field(default=60.0, ge=0)
    breaker_min_failures: int = Field(default=10, ge=1)
    breaker_cooldown_s: float = Field(default=30.0, ge=0)


def plain_url(value: str) -> str:
    """A base URL as given, without a trailing slash; ValueError for one that is not http(s) or carries credentials,
    a query or a fragment."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    parts = urlparse(value)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("must be a plain base URL: API keys go in the environment variable named by "
                         "api_key_env (COUNCIL_API_KEY), never in the URL")
    return value.rstrip("/")


class Endpoint(_Frozen):
    """Where a vendor's calls go. The API key is read from the environment variable ``api_key_env`` in
    the process that makes the call; the key itself never enters a config object, a log or a record."""

    base_url: str
    api_key_env: str | None = "COUNCIL_API_KEY"
    timeouts: Timeouts = Field(default_factory=Timeouts)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    # gateway: seats' ids are sent as written (OpenRouter style); native: as the provider's own API wants them
    ids: Literal["gateway", "native"] = "gateway"
    # the provider's real host when base_url is the embedded provider's stand-in for it (its native routes)
    real_host: str | None = None

    @property
    def host(self) -> str:
        """The host the endpoint speaks for: the real provider's, the embedded provider standing in for one included."""
        return self.real_host or urlparse(self.base_url).hostname or ""

    _url = field_validator("base_url")(lambda value: plain_url(value))

    def api_key(self) -> str:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if not key and (self.api_key_env is None or urlparse(self.base_url).hostname in ("127.0.0.1", "localhost", "::1")):
            return EMBEDDED_API_KEY  # a local server (the embedded provider) takes any bearer token
        if not key:
            raise ConfigError(f"environment variable {self.api_key_env} is not set (API key for {self.base_url})")
        return key


class Limits(BaseModel):
    """A vendor account's limits. Zero means unlimited (or unknown)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rpm: float = Field(default=0.0, ge=0.0)
    tpm: float = Field(default=0.0, ge=0.0)
    concurrency: int = Field(default=32, ge=1)


class VendorSettings(_Frozen):
    """A vendor account: its limits (0 = unlimited or unknown), batching ceiling and prices, and, where the vendor is
    asked at its own API rather than through the run's gateway (``--provider-url``), its endpoint."""

    # the vendor's own API (https://api.openai.com/v1, https://api.anthropic.com/v1, ...): unset, the run's provider
    base_url: str | None = None
    api_key_env: str | None = None  # the variable holding that API's key (unset: COUNCIL_API_KEY)
    # how seats' ids are sent: gateway = as written (OpenRouter style), native = as the provider's own API wants them
    # (claude-sonnet-4-5); unset: native at the vendor's own base_url, gateway through the run's provider
    model_ids: Literal["gateway", "native"] | None = None

    rpm: float = Field(default=0.0, ge=0.0)
    tpm: float = Field(default=0.0, ge=0.0)
    concurrency: int = Field(default=32, ge=1)
    max_batch: int = Field(default=8, ge=1)
    price_in_per_mtok: float = Field(default=0.0, ge=0.0)
    price_out_per_mtok: float = Field(default=0.0, ge=0.0)
    context_tokens: int = Field(default=128_000, ge=1024)  # the judge's context window: longer prompts are refused
    # mark cache breakpoints, for providers that cache only where a request marks it: Anthropic models, directly or
    # through OpenRouter (council.transport.client.marked)
    cache_breakpoints: bool = False
    # the wire format of the vendor's calls, synchronous and batched: OpenAI-compatible chat completions, or
    # Anthropic's native Messages API (council.transport.wire)
    api: Literal["openai", "anthropic"] = "openai"
    # sync: every vote a chat call; batch: votes go through the provider's batch API (council.batching); unset: the
    # run's own transport (CouncilConfig.transport), so a vendor without a batch API says sync here
    transport: Literal["sync", "batch"] | None = None
    batch_max_requests: int = Field(default=0, ge=0)  # most requests in one batch (0: the API's own, 50,000 / 100,000)
    batch_queue_requests: int = Field(default=0, ge=0)  # most requests enqueued at once over open batches (0: unlimited)
    batch_queue_tokens: int = Field(default=0, ge=0)  # most prompt tokens enqueued at once (0: unlimited)
    batch_price_in_per_mtok: float = Field(default=0.0, ge=0.0)  # batch rates (0 for both: the table's batch price)
    batch_price_out_per_mtok: float = Field(default=0.0, ge=0.0)

    @property
    def limits(self) -> Limits:
        return Limits(rpm=self.rpm, tpm=self.tpm, concurrency=self.concurrency)

    _url = field_validator("base_url")(lambda value: None if value is None else plain_url(value))


class JudgeParams(_Frozen):
    temperature: float = 0.0  # sent only to a model that takes it (not to a reasoning model that refuses it)
    max_tokens: int = Field(default=256, ge=16)  # the answer's budget; a reasoning model gets thinking_budget on top
    # reasoning: auto = as the model does by default; on = also where it is optional (Claude's extended thinking);
    # off = not where it can be turned off (council.transport.shape)
    reasoning: Literal["auto", "on", "off"] = "auto"
    reasoning_effort: Literal["minimal", "low", "medium", "high"] = "low"  # for models that take an effort
    thinking_budget: int = Field(default=1024, ge=0)  # reasoning tokens allowed per request on top of the answer
    containment: bool = True  # audit only (like --no-self-exclusion): False sends the unfenced judge-v1 layout
    # judge-v4: round two as the next turn of round one's conversation where a provider's prompt cache serves round
    # one's part of it, else as one new message (council.protocol.deliberation.round_two_layout); judge-v3: always
    # the next turn; judge-v2: always one new message (both kept for comparability with older runs)
    prompt_version: Literal["judge-v2", "judge-v3", "judge-v4"] = "judge-v4"


class HonestyWeights(_Frozen):
    """The abstention-aware composite's weights (``aggregator.honesty_row_scores``): +1 correct,
    ``abstain_credit`` abstained, -``wrong_penalty`` wrong, -``confident_wrong_penalty`` wrong with stated
    confidence >= ``confident_at``."""

    abstain_credit: float = 0.0
    wrong_penalty: float = Field(default=1.0, ge=0.0)
    confident_wrong_penalty: float = Field(default=2.0, ge=0.0)
    confident_at: float = Field(default=0.8, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> HonestyWeights:
        if self.confident_wrong_penalty < self.wrong_penalty:
            raise ValueError("confident_wrong_penalty must be at least wrong_penalty")
        if not -self.wrong_penalty <= self.abstain_credit <= 1.0:
            raise ValueError("abstain_credit must lie in [-wrong_penalty, 1]")
        return self


class BatchSettings(_Frozen):
    """How the vendors on the batch transport send their votes (:mod:`council.batching`)."""

    flush_s: float = Field(default=2.0, gt=0)  # a batch is cut when no vote has come for this long, or when it is full
    poll_s: float = Field(default=30.0, gt=0)  # the longest wait between two polls of an open batch
    sync_below: int = Field(default=20, ge=0)  # votes to send again (expired, errored): synchronously when fewer
    rows_in_flight: int = Field(default=50_000, ge=1)  # rows in progress at once when some vendor batches


def default_roster() -> list[MemberSpec]:
    """The default council: one regular seat per vendor of ``DEFAULT_ROSTER``, then the reserves."""
    return [*(MemberSpec(vendor=v, judge_model=m) for v, m in DEFAULT_ROSTER.items()),
            *(MemberSpec(vendor=v, judge_model=m, reserve=True) for v, m in DEFAULT_RESERVES.items())]


class CouncilConfig(_Frozen):
    roster: list[MemberSpec] = Field(default_factory=default_roster)  # regular seats and reserves
    quorum: int = Field(default=3, ge=1)
    self_exclusion: bool = True
    shadow_self: bool = False  # the excluded own-vendor member also grades round one: recorded, never counted
    vendor_map: dict[str, str] = Field(default_factory=dict)  # model id (or org prefix) -> vendor, wins over rules
    batch_audit: float = Field(default=0.0, ge=0.0, le=1.0)  # share of batched votes re-asked alone
    deliberate: Literal["all", "disputed"] = "disputed"  # round two only where round one is disputed, or on every row
    deliberation_audit: float = Field(default=0.1, ge=0.0, le=1.0)  # share of skipped rows deliberated, uncounted
    # the audit stops once the 95% Wilson upper bound of its flip rate is at or under this, and an audited row once
    # its change is decided (0: audit the whole share, each row's whole panel)
    deliberation_audit_stop: float = Field(default=0.2, ge=0.0, lt=1.0)
    seed: int = 0
    judge: JudgeParams = Field(default_factory=JudgeParams)
    timeouts: Timeouts = Field(default_factory=Timeouts)  # every provider call's per-phase HTTP timeouts
    retry: RetryPolicy = Field(default_factory=RetryPolicy)  # retries, backoff and the circuit breaker
    rows_in_flight: int = Field(default=1024, ge=1)
    compress_archive: bool = False  # the run folder's archive and rows as zstd frames (read transparently)
    model_prices: dict[str, tuple[float, float]] = Field(default_factory=dict)  # model -> USD per M tokens in/out
    elicit_max_tokens: int = Field(default=512, ge=16)
    budget_usd: float | None = Field(default=None, gt=0)
    max_response_chars: int = Field(default=100_000, ge=1)  # a longer response is refused, never sent
    bootstrap_resamples: int = Field(default=1000, ge=10)
    selective_penalty: float = Field(default=1.0, ge=0.0)  # a wrong answer's cost in the selective score
    honesty: HonestyWeights = Field(default_factory=HonestyWeights)  # the abstention-aware composite's weights
    vendors: dict[str, VendorSettings] = Field(default_factory=dict)
    transport: Literal["sync", "batch"] = "sync"  # each vendor's, unless its settings say otherwise
    batch: BatchSettings = Field(default_factory=BatchSettings)

    def settings(self, vendor: str) -> VendorSettings:
        return self.vendors.get(vendor) or VendorSettings()

    def endpoint_of(self, vendor: str, provider_url: str, embedded: bool = False) -> Endpoint:
        """Where ``vendor``'s calls go: its own API (``vendors.<v>.base_url``) with its key variable and native ids,
        else ``provider_url`` (the run's gateway) with the seats' ids as written; with the run's timeouts and retry
        policy. On the ``embedded`` provider a vendor's own API is the embedded provider's stand-in for that host
        (``<provider>/<host>/<path>``: ``http://127.0.0.1:8000/api.openai.com/v1``), which plays its rules."""
        s = self.settings(vendor)
        common = {"timeouts": self.timeouts, "retry": self.retry}
        if s.base_url is None:
            return Endpoint(base_url=provider_url, ids=s.model_ids or "gateway", **common)
        ids = s.model_ids or "native"
        if embedded:
            own = urlparse(s.base_url)
            root = provider_url.removesuffix("/v1")
            return Endpoint(base_url=f"{root}/{own.hostname}{own.path}".rstrip("/"), api_key_env=None, ids=ids,
                            real_host=own.hostname, **common)
        return Endpoint(base_url=s.base_url, api_key_env=s.api_key_env or "COUNCIL_API_KEY", ids=ids, **common)

    def transport_of(self, vendor: str) -> Literal["sync", "batch"]:
        """How ``vendor``'s votes are sent: its own setting, else the run's; synchronous where they cannot go through
        a batch API (:meth:`batch_refusal`)."""
        chosen = self.settings(vendor).transport or self.transport
        return "sync" if chosen == "batch" and self.batch_refusal(vendor) else chosen

    def batch_refusal(self, vendor: str) -> str | None:
        """Why ``vendor``'s votes cannot go through a batch API (:func:`council.protocol.prices.batch_refusal`)."""
        seat = next((m.judge_model for m in self.roster if m.vendor == vendor), None)
        return batch_refusal(vendor, self.settings(vendor).base_url, seat)

    @property
    def batching(self) -> list[str]:
        """The roster's vendors whose votes go through a batch API."""
        return [v for v in self.roster_vendors if self.transport_of(v) == "batch"]

    @property
    def in_flight(self) -> int:
        """Rows in progress at once: ``rows_in_flight``, or more when some vendor batches (a batch holds many)."""
        return max(self.rows_in_flight, self.batch.rows_in_flight) if self.batching else self.rows_in_flight

    def price(self, model: str, vendor: str) -> Price | None:
        """The price of ``model``: the config's price for the model, else its vendor's (when set, i.e. not
        zero), else the price table's (:mod:`council.protocol.prices`); ``None`` when none of them has one."""
        if model in self.model_prices:
            return Price(input_mtok=self.model_prices[model][0], output_mtok=self.model_prices[model][1], source=CONFIG)
        s = self.settings(vendor)
        if s.price_in_per_mtok or s.price_out_per_mtok:
            return Price(input_mtok=s.price_in_per_mtok, output_mtok=s.price_out_per_mtok, source=CONFIG)
        return table_price(model, vendor)

    def price_for(self, model: str, vendor: str) -> tuple[float, float]:
        """USD per million input and output tokens (of :meth:`rates_for`); (0, 0) for an unpriced model."""
        price_in, price_out, *_ = self.rates_for(model, vendor)
        return price_in, price_out

    def rates_for(self, model: str, vendor: str) -> tuple[float, float, float, float]:
        """USD per million input, output, cache-read and cache-write input tokens (:meth:`price`; a cache rate
        the price lacks is the input rate, as for a price the config sets); zeros for an unpriced model."""
        price = self.price(model, vendor)
        return (0.0, 0.0, 0.0, 0.0) if price is None else self._rates(price)

    def batch_price(self, model: str, vendor: str) -> Price | None:
        """The price of ``model`` on ``vendor``'s batch API: the vendor's batch price (when set, i.e. not zero),
        else the price table's batch rates; ``None`` when neither has one (the table may know the model's
        standard price and no batch rate: ``None`` then too, never the standard price)."""
        s = self.settings(vendor)
        if s.batch_price_in_per_mtok or s.batch_price_out_per_mtok:
            return Price(input_mtok=s.batch_price_in_per_mtok, output_mtok=s.batch_price_out_per_mtok, source=CONFIG)
        return table_price(model, vendor, batch=True)

    def batch_rates_for(self, model: str, vendor: str) -> tuple[float, float, float, float]:
        """:meth:`rates_for` at the batch price (:meth:`batch_price`). A model with no batch price falls back to
        the standard rates: a run then counts its batched votes at the standard price, an upper bound where the
        batch API charges less; :meth:`batch_unpriced` names those models."""
        price = self.batch_price(model, vendor)
        return self.rates_for(model, vendor) if price is None else self._rates(price)

    @staticmethod
    def _rates(price: Price) -> tuple[float, float, float, float]:
        """``price`` per million input, output, cache-read and cache-write tokens; a cache rate it lacks is the
        input rate."""
        read = price.input_mtok if price.cache_read_mtok is None else price.cache_read_mtok
        write = price.input_mtok if price.cache_write_mtok is None else price.cache_write_mtok
        return price.input_mtok, price.output_mtok, read, write

    def vote_rates(self, model: str, vendor: str) -> tuple[float, float, float, float]:
        """The rates a judge vote of ``model`` is charged at: the batch rates when ``vendor``'s votes go through
        the batch API (:meth:`transport_of`), else the standard ones: the one place that says which."""
        if self.transport_of(vendor) == "batch":
            return self.batch_rates_for(model, vendor)
        return self.rates_for(model, vendor)

    def batch_unpriced(self) -> list[str]:
        """Judge models whose votes go through a batch API and whose batch price is unknown: their votes are
        counted at the standard price (:meth:`batch_rates_for`)."""
        return [m.judge_model for m in self.roster
                if self.transport_of(m.vendor) == "batch" and self.batch_price(m.judge_model, m.vendor) is None]

    def prices(self, models: list[str] = ()) -> dict[str, Price | None]:
        """The price of every judge model and model under test (``None``: unpriced), by model id."""
        seats = [(m.judge_model, m.vendor) for m in self.roster]
        return {model: self.price(model, vendor) for model, vendor in [*seats, *((m, self.vendor_of(m)) for m in models)]}

    @classmethod
    def recorded(cls, config: dict, judge_prompt_version: str) -> CouncilConfig:
        """A run's config as its manifest holds it. A run recorded before a setting existed keeps what it was
        run with, not today's default: ``judge.prompt_version`` the version its manifest names (judge-v2), round
        two on every row (``deliberate`` all, no audit), and an audit of the whole share (``deliberation_audit_stop``
        0). Its resume sends the same requests, or it would pay for its round two again, or skip the round two its
        other rows had."""
        judge = config.get("judge") or {}
        if "prompt_version" not in judge:
            config = {**config, "judge": {**judge, "prompt_version": judge_prompt_version}}
        if "deliberate" not in config:
            config = {**config, "deliberate": "all", "deliberation_audit": 0.0}
        if "deliberation_audit_stop" not in config:
            config = {**config, "deliberation_audit_stop": 0.0}
        return cls.model_validate(config)

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> CouncilConfig:
        """A JSON config file (the fields of this class), with command-line ``overrides`` on top."""
        return model_from_file(cls, path, "council config", **overrides)

    @field_validator("roster")
    @classmethod
    def _one_seat_per_vendor(cls, roster: list[MemberSpec]) -> list[MemberSpec]:
        vendors = [m.vendor for m in roster]
        if len(set(vendors)) != len(vendors):
            raise ValueError("the roster must have one member per vendor")
        if not any(not m.reserve for m in roster):
            raise ValueError("the roster has no regular member")
        return roster

    @field_validator("vendor_map")
    @classmethod
    def _canonical_map(cls, vendor_map: dict[str, str]) -> dict[str, str]:
        return {k.strip(): canonical_vendor(v) for k, v in vendor_map.items()}

    @model_validator(mode="after")
    def _consistent(self) -> CouncilConfig:
        problems = []
        for m in self.roster:  # a seat speaks for its vendor: its judge model must be that vendor's
            made_by = resolve_vendor(m.judge_model, self.vendor_map)
            if made_by != m.vendor:
                problems.append(f"seat {m.vendor!r} has judge model {m.judge_model!r}, which is "
                                + (f"made by {made_by}" if made_by else "of no known vendor (map it with --vendor-map)"))
        known = {*KNOWN_VENDORS, *self.roster_vendors, *self.vendor_map.values()}
        for vendor in sorted(set(self.vendors) - known):
            problems.append(f"vendors: unknown vendor {vendor!r} (vendors are named like {', '.join(self.roster_vendors)})")
        if self.shadow_self and not self.self_exclusion:
            problems.append("--shadow-self audits self-exclusion and cannot be combined with --no-self-exclusion "
                            "(own-vendor votes would be paid twice)")
        smallest = min(len(panel(v, self.roster, self.self_exclusion)) for v in ("", *self.roster_vendors))
        if self.quorum > smallest:
            problems.append(f"quorum {self.quorum} is larger than the smallest panel ({smallest} members)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def roster_vendors(self) -> list[str]:
        """Every seat's vendor, reserves included."""
        return [m.vendor for m in self.roster]

    def unpriced(self, models: list[str] = ()) -> list[str]:
        """Judge models and models under test with no price: none in the config, and none in the table."""
        return [model for model, price in self.prices(models).items() if price is None]

    def vendor_of(self, model: str) -> str:
        """The vendor of a model under this run's vendor map (see :func:`council.core.vendors.vendor_of`)."""
        return vendor_of(model, self.vendor_map)
