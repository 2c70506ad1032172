"""A run's scoring phase: how the run ended recorded in its folder (``quota_stats.json``, ``state.json``:
finished, or stopped by the budget, a signal or an unusable provider), then everything scored from the archive
(:func:`council.scoring.scoring.rescore`: the verdicts, scores and ``summary.json``)."""

from __future__ import annotations

import asyncio
from typing import Any

from council.grading.stop import StopControl
from council.run.grade import Outcome
from council.run.timings import Timings
from council.scoring.scoring import rescore
from council.store.runfolder import RunFolder, dump_json


async def score(folder: RunFolder, outcome: Outcome, stop: StopControl, timings: Timings) -> dict[str, Any]:
    """Record how the grading ended and score the run: its summary (``summary.json``'s content)."""
    folder.write_bytes("quota_stats.json", dump_json(outcome.quota_stats))
    if stop.requested:
        folder.write_state("stopped", stop.reason, stop.detail, abandoned=outcome.abandoned)
    else:  # every row was taken through; some may still lack votes (failed calls, refused rows)
        folder.write_state("finished")
    with timings.phase("scoring"):  # in a thread, so that a Ctrl-C meanwhile is answered (no report drawn)
        return await asyncio.to_thread(rescore, folder)
