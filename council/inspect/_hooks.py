"""inspect's hooks: at an eval's task start, which task it is (an eval retried keeps its task's id:
:mod:`council.inspect._attempts`); when the task ends, the council's run folders it graded into get their results
(``verdicts.jsonl``, ``summary.json``, the tables and ``report.html``), as ``council run`` writes them at its end.

Registered by the first ``council()`` scorer a process makes, not on import: inspect loads every extension's
entry point at the start of each eval, and lists every hook registered by then, so a process that never grades
with the council neither runs nor lists it."""

from __future__ import annotations

from functools import cache

from inspect_ai.hooks import Hooks, TaskEnd, TaskStart, hooks

from council.inspect._session import end_of_eval, task_started


class RunResults(Hooks):
    async def on_task_start(self, data: TaskStart) -> None:
        task_started(data.eval_id, data.spec.task_id)

    async def on_task_end(self, data: TaskEnd) -> None:
        await end_of_eval(data.eval_id)


@cache
def register() -> None:
    hooks(name="grading_council", description="Writes the council's run results when an eval's task ends")(RunResults)
