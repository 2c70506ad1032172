"""Which run folder a sample is graded in, when the scorer is not told (``run_id``).

A sample an earlier process graded goes back to that run (its uuid is in the run's ``inspect_samples.jsonl``),
so ``inspect score`` on the same log again, or an interrupted eval scored again, pays only for what the archive
lacks. Any other sample of an eval goes to ``inspect-<eval id>``; outside an eval (``inspect score`` of a log
the council never graded) to one new run per scorer.
"""

from __future__ import annotations

from pathlib import Path

from council.inspect._session import known_samples
from council.run.runner import new_run_id


class RunChooser:
    """The run id of each sample of one scorer (see the module docstring)."""

    def __init__(self, runs_dir: Path, run_id: str | None) -> None:
        self.runs_dir = runs_dir
        self.run_id = run_id
        self._known: dict[str, str] | None = None  # read once, at the first sample
        self._fresh: str | None = None

    def choose(self, sample_uuid: str | None, eval_id: str | None) -> str:
        if self.run_id:
            return self.run_id
        if self._known is None:
            self._known = known_samples(self.runs_dir)
        if sample_uuid and sample_uuid in self._known:
            return self._known[sample_uuid]
        if eval_id:
            return f"inspect-{eval_id}"
        if self._fresh is None:
            self._fresh = f"inspect-{new_run_id()}"
        return self._fresh
