"""One council run, start to finish, and its resumption after a crash: a sequence of phases, each in its own
module with its inputs and outputs named.

1. **load** (:mod:`council.run.load`): the request checked (:mod:`council.run.checks`), the inputs read and
   validated in one streaming pass, a new run folder made (never an existing one; a resumed run's is reopened,
   locked, and its torn last line dropped) and filled with what scoring and resuming need: the manifest, the
   rows and the bank items they answer. Out: a ``LoadedRun``.
2. **start** (:mod:`council.run.services`): Ray (the ray backend) and the embedded provider (unless a provider
   URL is given), side by side.
3. **grade** (:mod:`council.run.grade`): the coordinator takes every row through round one, round two and the
   deliberation audit, pipelined per row (no barrier across the run), through the chosen backend or shard
   workers across a Ray cluster; every vote is appended to the archive as it returns. A resumed run's archived
   votes are never asked again. Out: an ``Outcome``.
4. **score** (:mod:`council.run.score`): how the run ended recorded in ``state.json`` (finished, or stopped by
   the budget, a signal or an unusable provider), then everything scored from the archive. Out: the summary.
5. **report** (:mod:`council.run.report`): ``report.html``.

What a caller hands a run and gets back: :mod:`council.run.request`.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from council.core import logs
from council.grading.stop import StopControl
from council.run.checks import check_budget, check_request, check_shapes, check_shards, provider_endpoint
from council.run.grade import Outcome, grade
from council.run.load import LoadedRun, RowsInfo, new_run, new_run_id, package_versions, read_inputs, reopen
from council.run.load import reusable_votes, sim_behaviour
from council.run.report import report_at_end, reports_off
from council.run.request import BACKENDS, RunHooks, RunRequest, RunResult
from council.run.score import score
from council.run.services import OWN_PROCESS_ROWS, Services, start_embedded
from council.store.runfolder import LOG, RunFolder

__all__ = [
    "BACKENDS", "OWN_PROCESS_ROWS", "RowsInfo", "RunHooks", "RunRequest", "RunResult", "check_budget", "check_shapes",
    "new_run_id", "package_versions", "provider_endpoint", "report_at_end", "reports_off", "resume_council",
    "reusable_votes", "run_council", "sim_behaviour", "start_embedded",
]


async def run_council(
    req: RunRequest,
    *,
    stop: StopControl | None = None,
    hooks: RunHooks | None = None,
) -> RunResult:
    """A new run of ``req``, start to finish."""
    check_request(req)
    stop = stop or StopControl()
    hooks = hooks or RunHooks()
    began = time.perf_counter()
    inputs = await read_inputs(req, stop)
    folder = RunFolder.create(req.runs_dir, req.run_id or new_run_id(), compress=req.config.compress_archive,
                              command=req.command)
    try:
        run = await new_run(folder, req, inputs, hooks.timings, began)
        return await _drive(run, hooks, stop)
    finally:
        folder.release()


async def resume_council(
    runs_dir: Path,
    run_id: str,
    *,
    backend: str | None = None,
    provider_url: str | None = None,
    ray_address: str | None = None,
    shards: int | None = None,
    budget_usd: float | None = None,
    command: str = "run --resume",
    stop: StopControl | None = None,
    hooks: RunHooks | None = None,
) -> RunResult:
    """Continue ``run_id`` from its archive, with the configuration it was started with; refused at once while
    another process writes it (:mod:`council.store.lock`)."""
    folder = RunFolder.open_to_write(Path(runs_dir), run_id, command)
    try:
        run = reopen(folder, Path(runs_dir), run_id, backend=backend, provider_url=provider_url,
                     ray_address=ray_address, shards=shards, budget_usd=budget_usd, command=command)
        return await _drive(run, hooks or RunHooks(), stop)
    finally:
        folder.release()


async def _drive(run: LoadedRun, hooks: RunHooks, stop: StopControl | None) -> RunResult:
    """The loaded ``run`` started, graded, scored and reported, logged to its folder's ``log.jsonl``."""
    stop = stop or StopControl()
    folder = run.folder
    check_shards(run.shards, run.backend, run.manifest.models, run.manifest.reuse_from, run.config)
    folder.write_state("running")
    with logs.run_log(folder.path / LOG):
        timings = hooks.timings
        log = logs.get_logger("council.run").bind(run_id=folder.path.name)
        embedded = run.provider_url is None
        services = Services.start(run.backend, run.ray_address, run.shards, embedded, run.manifest, run.items,
                                  run.info.read, timings)
        started = None  # when the grading began: the run's seconds are its grading's
        outcome = Outcome.not_graded()
        try:
            provider_url, started = await services.ready(stop, run.provider_url)
            if started is not None:
                outcome = await grade(run, provider_url, embedded, hooks, stop, log)
        finally:
            folder.close()
            if hooks.on_graded is not None:
                hooks.on_graded()
            stats = await services.stop(folder, timings)
        seconds = (dt.datetime.now(dt.UTC) - started).total_seconds() if started is not None else 0.0
        summary = await score(folder, outcome, stop, timings)
        if hooks.report is not None:
            hooks.report(folder.path)
        else:
            with timings.phase("report"):
                report_at_end(folder.path, log)
        log.info("run.done", seconds=round(seconds, 3), rows=outcome.rows or run.info.rows, issued=outcome.issued,
                 served_from_archive=outcome.served_from_archive, spent_usd=round(summary["cost_usd"], 6),
                 state=summary["state"]["state"], reason=stop.reason, abandoned=outcome.abandoned,
                 timings=timings.as_dict())
        return RunResult(run_dir=folder.path, summary=summary, seconds=seconds, provider_stats=stats,
                         issued=outcome.issued, served_from_archive=outcome.served_from_archive,
                         budget=outcome.budget, stop=stop, error=outcome.error, processes=outcome.processes,
                         timings=timings)
