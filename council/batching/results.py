"""An ended batch's results as the run folder holds them: downloaded beside the journal (``batches/``) and read
back a line at a time, each request's outcome as it comes; whether a lost request may be sent again; and when an
open batch should end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TypeVar

from council.batching.api import Polled
from council.batching.journal import BatchEntry
from council.core.errors import ProviderUnavailable
from council.transport.batch_formats import BatchError, BatchOutcome, iter_results

T = TypeVar("T")

FOLDER = "batches"  # beside the journal: batches being written, and results being read
RESEND = frozenset({"batch_expired", "batch_cancelled", "expired", "canceled", "missing", "api_error",
                    "overloaded_error", "server_error", "rate_limit_error", "malformed_result"})


def outcomes(api: str, vendor: str, entry: BatchEntry, path: Path | None) -> Iterator[tuple[str, BatchOutcome]]:
    """Each request of ``entry`` and its outcome, read from the results at ``path`` (of ``api``'s format) a line at
    a time; a request the results leave out is ``missing``. Results that cannot be read stop the vendor."""
    seen: set[str] = set()
    if path is not None:
        try:
            with open(path, "rb") as lines:
                for cid, outcome in iter_results(api, lines):
                    seen.add(cid)
                    yield cid, outcome
        except ValueError as exc:
            raise ProviderUnavailable(f"{vendor}: results of batch {entry.batch_id}: {exc}") from None
    for cid in entry.keys:
        if cid not in seen:
            yield cid, BatchError("missing", None, f"no result in batch ({entry.status})")


async def breathing(read: Iterator[T], every: int = 64) -> AsyncIterator[T]:
    """``read``, with a pause every ``every`` items for the votes answered so far to be taken in before more are
    made: else the records of a batch's answers are all alive at once (about 250 MB when four vendors' batches of
    28,800 rows end together)."""
    for n, item in enumerate(read, 1):
        yield item
        if not n % every:
            await asyncio.sleep(0)


def resendable(outcome: BatchOutcome) -> bool:
    """Whether a request's outcome says it was lost (expired, cancelled, a server error), not answered."""
    return isinstance(outcome, BatchError) and (outcome.code in RESEND or (outcome.status or 0) >= 500
                                                or outcome.status == 429)


def expected_end(polled: Polled, now: float) -> float | None:
    """When the batch should end, from its progress so far; None before any request is done (then at the latest
    ``expires_at``)."""
    if polled.ended:
        return None
    total = polled.counts.get("total", 0)
    done = polled.counts.get("succeeded", 0) + polled.counts.get("errored", 0)
    if not total or not done or polled.created_at is None or now <= polled.created_at:
        return polled.expires_at
    return polled.created_at + (now - polled.created_at) * total / done
