"""A run's grading phase: every row through the council, each vote archived as it returns.

One coordinator (:class:`council.grading.coordinator.Coordinator`) grades the rows from this process, its judges
in this process (the local backend) or in one Ray actor each (the ray backend); or the rows are handed to shard
workers across a Ray cluster (:mod:`council.cluster.driver`), each with a coordinator of its own. The
coordinator pipelines round one, round two and the deliberation audit per row, with no barrier across the run:
a row's round two starts as soon as its own round one is complete, while other rows are still in round one,
and an audit candidate waits only for the rows taken before it (:mod:`council.grading.sequential`). So round
one, round two and the audit are stages of each row, all inside this one phase, not phases of the run.
A run that elicits its rows asks the models under test the bank's items (``elicitor``) and grades each answer
as soon as it arrives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from council.batching.routing import with_batching
from council.core.errors import ProviderUnavailable
from council.core.schema import BankItem, ElicitedRecord, JudgeCallRecord, ResponseRow
from council.grading.budget import Budget
from council.grading.coordinator import Coordinator, VoteKey
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig, Endpoint
from council.run.checks import provider_endpoint
from council.run.load import LoadedRun, RowsInfo
from council.run.request import RunHooks
from council.store.runfolder import ROWS, ArchiveIndex, RunFolder
from elicitor import ElicitTask, elicit_key


@dataclass
class Outcome:
    """How the grading of a run went, however it was spread."""

    issued: int
    served_from_archive: int
    abandoned: int
    rows: int
    error: ProviderUnavailable | None
    budget: Budget | None
    quota_stats: dict[str, dict]
    processes: dict[str, Any] | None = None

    @classmethod
    def not_graded(cls) -> Outcome:
        """The outcome of a run stopped before its grading began."""
        return cls(0, 0, 0, 0, None, None, {})


async def grade(run: LoadedRun, provider_url: str, embedded: bool, hooks: RunHooks, stop: StopControl,
                log: Any) -> Outcome:
    """Grade ``run``'s rows with the judges behind ``provider_url`` (``embedded``: the embedded provider's)."""
    config, manifest, info = run.config, run.manifest, run.info
    provider_endpoint(provider_url, config)  # the run's provider URL, refused here if it carries credentials
    models = manifest.models
    names = sorted(info.names | set(models))
    endpoints = {v: config.endpoint_of(v, provider_url, embedded)
                 for v in [*config.roster_vendors, *(config.vendor_of(m) for m in models)]}
    log.info("run.start", rows=info.rows, backend=run.backend, shards=run.shards,
             provider="embedded" if embedded else provider_url,
             archived_votes=len(run.archived) if run.archived is not None else None, resumed=bool(manifest.resumes))
    if hooks.on_start is not None:
        hooks.on_start(len(run.items) * len(models) if models else info.rows)
    with hooks.timings.phase("grading"):
        if run.shards:
            return await _grade_sharded(run.folder, run.items, info, config, endpoints, names, run.shards,
                                        on_progress=hooks.on_progress, stop=stop, log=log)
        return await _grade_here(run.folder, run.items, info, config, endpoints, names, models, archived=run.archived,
                                 reusable=run.reusable, backend=run.backend, hooks=hooks,
                                 elicited=run.elicited, audited=run.audited, stop=stop, log=log)


async def _grade_sharded(
    folder: RunFolder, items: list[BankItem], info: RowsInfo, config: CouncilConfig, endpoints: dict[str, Endpoint],
    names: list[str], shards: int, *, on_progress: Callable[[int], None] | None, stop: StopControl, log: Any,
) -> Outcome:
    """Grade the run with shard workers across the cluster (:mod:`council.cluster.driver`)."""
    from council.cluster.driver import drive_shards

    done = await drive_shards(folder.path, info.located(), config, items, endpoints, names, shards, stop,
                              rows=info.rows, on_progress=on_progress)
    budget = None
    if config.budget_usd is not None:
        budget = Budget(config.budget_usd, spent_usd=done.spent_usd or done.archived_cost_usd)
        budget.exhausted = stop.reason == "budget"
    processes = {"workers": done.workers, "writer": done.writer, "placement_s": done.placement_s}
    log.info("shards.done", **processes)
    return Outcome(done.issued, done.served_from_archive, done.abandoned, info.rows,
                   ProviderUnavailable(done.error) if done.error else None, budget, done.quota_stats or {}, processes)


async def _grade_here(
    folder: RunFolder, items: list[BankItem], info: RowsInfo, config: CouncilConfig, endpoints: dict[str, Endpoint],
    names: list[str], models: list[str], *, archived: ArchiveIndex | None, reusable: dict[str, tuple[str, JudgeCallRecord]],
    backend: str, hooks: RunHooks, elicited: dict[str, ElicitedRecord],
    audited: set[VoteKey], stop: StopControl, log: Any,
) -> Outcome:
    """Grade the run from this process: one coordinator, the judges in this process or in one actor each."""
    if backend == "ray":
        from council.cluster.raycluster import started_here
        from council.cluster.raypool import RayPool

        began = time.perf_counter()
        pool: Any = RayPool(config, endpoints, models, stop=stop, sole=hooks.sole_ray_run and started_here())
        pool.started.add_done_callback(
            lambda f: f.cancelled() or f.exception() or hooks.timings.add("judges start", began,
                                                                          time.perf_counter() - began))
    else:
        from council.grading.pools import LocalPool

        pool = LocalPool(config, endpoints, models, ledger=hooks.ledger, holder=hooks.holder)
    pool = with_batching(pool, config, endpoints, folder.path)
    stop.on_request(lambda: asyncio.ensure_future(pool.cancel_queued()))  # queued votes are never sent
    tasks = [ElicitTask(row_id=f"{i.id}::{m}", item_id=i.id, model=m, vendor=config.vendor_of(m), prompt=i.prompt,
                        request_key=elicit_key(m, i.prompt, config.elicit_max_tokens))
             for i in items for m in models]
    archived_cost = (archived.cost_usd if archived is not None else 0.0) + sum(r.cost_usd for r in elicited.values())
    budget = Budget(config.budget_usd, spent_usd=archived_cost)
    refused = folder.read_refused()

    def refuse(row: ResponseRow, reason: str) -> None:
        if row.row_id not in refused:
            refused[row.row_id] = reason
            folder.refuse(row.row_id, reason)
            log.warning("row.refused", row_id=row.row_id, reason=reason)

    def archive(record: JudgeCallRecord) -> None:
        folder.append(record)
        if hooks.on_record is not None:
            hooks.on_record(record)

    on_progress = hooks.on_progress
    coordinator = Coordinator(
        config, {i.id: i for i in items}, pool, archive,
        on_row_done=None if on_progress is None else lambda _row: on_progress(1),
        extra_names=names, archived=archived, reusable=reusable, budget=budget, on_elicited=folder.append,
        archived_elicited=elicited, audited=audited, stop=stop, on_refused=refuse, on_row_graded=hooks.on_row_graded,
        scratch_dir=folder.path,
    )
    rows = info.rows
    watch = asyncio.create_task(_watch_quota(pool, hooks)) if hooks.on_quota is not None else None
    try:
        if models:
            rows = folder.write_lines(ROWS, await coordinator.run_elicited(tasks))
        else:
            await coordinator.run(info.read())
    finally:
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        if archived is not None:
            archived.close()
        quota_stats = await pool.quota_stats()
        await pool.close()
    return Outcome(coordinator.issued, coordinator.served_from_archive, coordinator.abandoned, rows, coordinator.error,
                   budget, quota_stats)


async def _watch_quota(pool: Any, hooks: RunHooks) -> None:
    """Hand the caller each vendor's quota report every ``hooks.quota_every_s`` while the run grades."""
    assert hooks.on_quota is not None
    while True:
        await asyncio.sleep(hooks.quota_every_s)
        hooks.on_quota(await pool.quota_stats())
