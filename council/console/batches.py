"""Where a run's batches stand, as ``council show`` and the progress display print it: per batch its vendor,
id, status, requests done of its total, age and expected end (or when it ended), from the run folder's
snapshot of the last poll (:mod:`council.batching.journal`) or the batch judges' report while the run goes on."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from council.console.output import clock

HEADER = ("vendor", "batch", "status", "done", "age", "ends in")


def batch_row(batch: dict[str, Any], now: float) -> list[str]:
    """One batch's cells (``batch``: a journal entry as the snapshot holds it)."""
    counts = batch.get("counts") or {}
    total = counts.get("total") or batch.get("keys") or 0
    done = (counts.get("succeeded") or 0) + (counts.get("errored") or 0)
    born = batch.get("created_at") or batch.get("submitted_at") or batch.get("intent_at")
    ended = batch.get("ended_at")
    if batch.get("gone"):
        status, ends = "gone", "-"
    elif batch.get("batch_id") is None:
        status, ends = "being created", "-"
    elif ended is not None:
        status, ends = batch.get("status") or "ended", "ended"
    else:
        expected = batch.get("expected_end")
        status, ends = batch.get("status") or "submitted", clock(expected - now) if expected else "unknown"
    age = clock((ended or now) - born) if born else "-"
    return [batch.get("vendor", "?"), batch.get("batch_id") or batch.get("local", "?"), status,
            f"{done:,}/{total:,}", age, ends]


def batch_rows(batches: Iterable[dict[str, Any]], now: float | None = None) -> list[list[str]]:
    """Open batches first (oldest first), then the ended ones; gone ones (never created) left out."""
    now = time.time() if now is None else now
    kept = [b for b in batches if not b.get("gone")]
    kept.sort(key=lambda b: (b.get("ended_at") is not None, b.get("intent_at") or 0))
    return [batch_row(b, now) for b in kept]


def waiting_text(batches: Iterable[dict[str, Any]]) -> str:
    """``N batches open, M requests waiting``, or '' when none is open."""
    open_ = [b for b in batches if b.get("batch_id") and b.get("ended_at") is None and not b.get("gone")]
    if not open_:
        return ""
    waiting = sum((b.get("counts") or {}).get("total") or b.get("keys") or 0 for b in open_)
    return f"{len(open_)} batch{'es' if len(open_) != 1 else ''} open, {waiting:,} requests"
