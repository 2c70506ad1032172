"""Which pool a run's votes go through: the batching vendors' through their batch APIs, the rest as they were.
Kept apart from :mod:`council.batching.pool` so that a run with no batching vendor imports none of the batch
modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def with_batching(pool: Any, config: Any, endpoints: dict[str, Any], folder: Path) -> Any:
    """``pool``, its batching vendors' votes routed through their batch APIs (:class:`BatchingPool`, journalled in
    ``folder``); ``pool`` itself when no vendor batches (the batch modules then stay unimported). A local pool's
    synchronous judges send the few requests that go again as chat calls; a Ray pool has none here."""
    if not config.batching:
        return pool
    from council.batching.pool import BatchingPool

    return BatchingPool(pool, config, endpoints, folder, getattr(pool, "judges", None))
