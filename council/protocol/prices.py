"""Model prices from a maintained table: Pydantic's ``genai-prices``, never a hand-copied one.

The config may set a price (``model_prices``, or a vendor's ``price_in_per_mtok``/``price_out_per_mtok``);
every other model is looked up in the table. Our ids are OpenRouter style (``anthropic/claude-sonnet-4.5``):
the model is asked first of its maker's own provider in the table (by the name after the organisation,
matched by the table's own rules), then of the table's OpenRouter provider by the whole id, since that is
how the ids are written and how a vendor with no provider of its own (Qwen) is sold. A model neither knows
stays unpriced: nothing is guessed from a similar name.

Prices are the table's rates on the day of the first lookup, at its base tier (the judges' prompts are far
below the 200k-token tiers some models have): its standard rates, or with ``batch`` its batch rates, which the
table holds as a price variant of the model (``{"processing": "batch"}``) over the same provider's standard
price. A model with no such variant has no batch price here, though the table, asked for one, answers with its
standard rates. A run asks once per model and vendor: lookups are cached.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from importlib.metadata import version
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from council.core.vendors import normalize_model_id

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, TieredPrices

TABLE = f"genai-prices {version('genai-prices')}"  # the source named in a table price and in the manifest
CONFIG = "config"

# Canonical vendor (council.core.vendors) -> the table's provider that sells that maker's models directly.
# A vendor missing here (alibaba) is priced through OpenRouter only.
PROVIDERS: dict[str, str] = {
    "openai": "openai", "anthropic": "anthropic", "google": "google", "deepseek": "deepseek",
    "mistral": "mistral", "xai": "x-ai", "moonshot": "moonshotai", "zhipu": "zai", "cohere": "cohere",
    "meta": "meta", "minimax": "minimax",
}
ROUTER = "openrouter"
BATCH = {"processing": "batch"}  # the table's price context of a provider's batch API


class Price(BaseModel):
    """USD per million tokens of one model, and where the figures come from (``config`` or the table with its
    version; ``provider`` is the table's provider that priced it). Cache prices are ``None`` when unknown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_mtok: float
    output_mtok: float
    cache_read_mtok: float | None = None
    cache_write_mtok: float | None = None
    source: str
    provider: str | None = None


@lru_cache(maxsize=1024)
def table_price(model: str, vendor: str, *, batch: bool = False) -> Price | None:
    """The table's price of ``model`` (made by ``vendor``), or ``None`` when the table does not know it; with
    ``batch``, its batch price from the provider that gives the standard one, or ``None`` when that provider lists
    no batch rate for it. genai-prices is imported here, on the first lookup: it takes about 0.2 s, which
    commands that price nothing (``council runs``, ``--help``) need not pay."""
    now = datetime.now(UTC)
    found = _table_model(model, vendor, now)
    if found is None:
        return None
    provider, info = found
    if batch and not _has_variant(info, BATCH, now):
        return None
    rates = info.get_prices(now, BATCH if batch else None)
    return Price(input_mtok=_usd(rates.input_mtok), output_mtok=_usd(rates.output_mtok),
                 cache_read_mtok=_usd(rates.cache_read_mtok, None),
                 cache_write_mtok=_usd(rates.cache_write_mtok, None), source=TABLE, provider=provider)


def _table_model(model: str, vendor: str, now: datetime) -> tuple[str, ModelInfo] | None:
    """The table's provider id and entry of ``model``: the first of its maker's provider and OpenRouter that
    knows it and prices it per token (not per image or second)."""
    from genai_prices import data_snapshot

    normal = normalize_model_id(model)
    snapshot = data_snapshot.get_snapshot()
    asks = [(PROVIDERS[vendor], normal.rsplit("/", 1)[-1])] if vendor in PROVIDERS else []
    if "/" in normal:
        asks.append((ROUTER, normal))
    for provider_id, ref in asks:
        try:
            provider, info = snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
        rates = info.get_prices(now)
        if rates.input_mtok is not None or rates.output_mtok is not None:
            return provider.id, info
    return None


def table_model_id(name: str, vendor: str) -> str | None:
    """The id of the maker's own entry for ``name`` in the table (the provider's API id: ``claude-sonnet-4.5`` is
    ``claude-sonnet-4-5``), or ``None`` when the maker's provider does not list it."""
    from genai_prices import data_snapshot

    if vendor not in PROVIDERS:
        return None
    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(name, None, PROVIDERS[vendor], None)
    except LookupError:
        return None
    return info.id


def _has_variant(info: ModelInfo, context: dict[str, str], now: datetime) -> bool:
    """Whether the table lists per-token rates of ``info`` for ``context`` in force at ``now``: without one,
    ``get_prices`` with that context answers the standard rates, which must not pass for the variant's."""
    return any(all(context.get(key) == value for key, value in variant.when.items())
               and (variant.constraint is None or variant.constraint.active(now))
               and (variant.prices.input_mtok is not None or variant.prices.output_mtok is not None)
               for variant in info.price_variants or ())


def _usd(rate: Decimal | TieredPrices | None, missing: float | None = 0.0) -> float | None:
    """A table rate in USD per million tokens; a tiered rate's base tier."""
    if rate is None:
        return missing
    return float(getattr(rate, "base", rate))
