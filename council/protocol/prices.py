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

Batch APIs the table has no rate for are in ``batch_pages.json`` beside this module, read from the vendors' own
pages (each entry names its page and the day it was read): whether a vendor sells through a batch API at all,
its batch rate as the share of the standard rate its page states (then the table's standard rate at that share,
the source naming the page), and which hosts serve a batch API in a format the council speaks. A vendor whose
page states no rate keeps none here: nothing is guessed. :func:`batch_refusal` says why a vendor's votes cannot go
through a batch API (the vendor has none, or its own endpoint serves none the council speaks), which makes
:meth:`council.protocol.config.CouncilConfig.transport_of` keep it synchronous in a batch run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import cache, lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import orjson

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
PAGES_PATH = Path(__file__).with_name("batch_pages.json")


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
        return page_batch_price(model, vendor, table_price(model, vendor))
    rates = info.get_prices(now, BATCH if batch else None)
    return Price(input_mtok=_usd(rates.input_mtok), output_mtok=_usd(rates.output_mtok),
                 cache_read_mtok=_usd(rates.cache_read_mtok, None),
                 cache_write_mtok=_usd(rates.cache_write_mtok, None), source=TABLE, provider=provider)


@cache
def batch_pages() -> dict[str, Any]:
    """``batch_pages.json``: the vendors' batch APIs and the hosts that serve one, as their pages state them."""
    return orjson.loads(PAGES_PATH.read_bytes())


def page_batch_price(model: str, vendor: str, standard: Price | None) -> Price | None:
    """The batch price of ``model`` from its vendor's page (:func:`batch_pages`): ``standard`` at the share of it the
    page states, with no cache discount where the page says batches get none; ``None`` when the page states no rate
    for the model (or there is no standard price to take the share of)."""
    entry = batch_pages()["vendors"].get(vendor) or {}
    share = entry.get("share_of_standard")
    if standard is None or share is None or normalize_model_id(model) not in entry.get("models", ()):
        return None
    cached = entry.get("cache_discount", True)
    scaled = lambda rate: None if rate is None or not cached else rate * share  # noqa: E731
    return Price(input_mtok=standard.input_mtok * share, output_mtok=standard.output_mtok * share,
                 cache_read_mtok=scaled(standard.cache_read_mtok), cache_write_mtok=scaled(standard.cache_write_mtok),
                 source=f"{entry['page']} (read {batch_pages()['read']}): {share:g} of {standard.source}",
                 provider=vendor)


def batch_refusal(vendor: str, base_url: str | None = None, model: str | None = None) -> str | None:
    """Why ``vendor``'s votes cannot go through a batch API, or ``None`` when they can: its vendor has none, or its
    own API (``base_url``; unset: the run's gateway, taken as it is given) serves none in a format the council speaks,
    or not for ``model``. Each reason names the page it comes from."""
    pages = batch_pages()
    entry = pages["vendors"].get(vendor) or {}
    if entry.get("batch_api") is False:
        return f"{vendor} has no batch API ({entry['page']})"
    host = urlparse(base_url).hostname if base_url else None
    known = pages["hosts"].get(host or "")
    if known is None:
        return None
    if known.get("speaks") is None:
        return f"{host}: {known['says']} ({known['page']})"
    name = normalize_model_id(model or "").rsplit("/", 1)[-1]
    if model and "models" in known and name not in known["models"]:
        return f"{host}: its batch API takes {', '.join(known['models'])}, not {name} ({known['page']})"
    return None


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
