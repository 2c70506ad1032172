"""One council run, start to finish, and its resumption after a crash.

A new run validates its inputs (in one streaming pass), opens a new run folder (never an existing one) and
copies into it what scoring and resuming need: the manifest, the rows and the bank items they answer. It
then starts the embedded provider unless a provider URL is given, drives the coordinator through the chosen
backend (or hands the rows to shard workers across a Ray cluster: :mod:`council.cluster.driver`) while every
vote is appended to the archive as it returns, records how the run ended in
``state.json`` (finished, or stopped by the budget, a signal or an unusable provider), and finally scores
from the archive.

A resumed run reopens the folder, drops a torn last line (a crash mid-write), and drives the coordinator
again with an index of the archived votes: a vote whose result is archived is never asked again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bank import ResponsesFingerprint, check_responses, dataset_fingerprint, iter_responses, load_bank
from council.core import logs
from council.core.errors import ConfigError, InputError, ProviderUnavailable, RunFolderError
from council.core.schema import BankItem, ElicitedRecord, JudgeCallRecord, ResponseRow, ResumeEntry, RunManifest
from council.batching.routing import with_batching
from council.grading.budget import Budget
from council.grading.coordinator import Coordinator, VoteKey
from council.grading.stop import StopControl, Stopped
from council.protocol.config import CouncilConfig, Endpoint, validation_problems
from council.protocol.panels import METHODOLOGY_VERSION
from council.protocol.prices import TABLE as PRICE_TABLE
from council.protocol.prompts import prompt_hashes
from council.scoring.scoring import rescore
from council.store import archive
from council.run.timings import Timings
from council.store.runfolder import ITEMS, LOG, MANIFEST, ROWS, ArchiveIndex, RunFolder, dump_json, iter_jsonl, read_jsonl
from council.transport.limiter import LedgerHandle
from elicitor import ElicitTask, elicit_key
from elicitor.prompts import ELICIT_HASH, ELICIT_VERSION

if TYPE_CHECKING:
    from council.sim import SimProcess, SimServer

BACKENDS = ("ray", "local")
OWN_PROCESS_ROWS = 200  # the embedded provider has a process of its own for runs of at least this many rows


@dataclass
class RunRequest:
    bank: Path
    responses: Path
    runs_dir: Path = Path("runs")
    run_id: str | None = None
    backend: str = "ray"
    provider_url: str | None = None
    ray_address: str | None = None
    config: CouncilConfig = field(default_factory=CouncilConfig)
    sim_config: Path | None = None
    reuse_from: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)  # ask these models the bank's items (elicitation)
    rows: list[ResponseRow] | None = None  # already imported (another benchmark's format); else read responses
    skipped_inputs: list[str] = field(default_factory=list)  # records left out on purpose (--skip-invalid)
    command: str = "run"
    shards: int = 0  # spread the rows over this many shard workers (Ray actors across the cluster); 0: none


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any]
    seconds: float
    provider_stats: dict[str, Any] | None
    issued: int = 0
    served_from_archive: int = 0
    budget: Budget | None = None
    stop: StopControl | None = None
    error: ProviderUnavailable | None = None  # the vendor that could not be used, when that stopped the run
    processes: dict[str, Any] | None = None  # a sharded run: each worker's node, votes and CPU; the writer's
    timings: Timings | None = None

    @property
    def stopped_by_budget(self) -> bool:
        return bool(self.budget and self.budget.exhausted)

    @property
    def complete(self) -> bool:
        """Every row graded: the run finished and no row lacks a panel's votes."""
        return bool(self.summary["complete"])

    @property
    def not_graded(self) -> int:
        """Rows left without a full panel's votes (budget, interrupt, provider failure): never scored."""
        return int(self.summary.get("not_graded_rows", 0))


@dataclass
class RunHooks:
    """What a caller (the command line, the service) is told while a run goes on, and the quota it lends: the
    service's jobs draw on one ledger per vendor (``ledger``), each job as its own ``holder``."""

    on_start: Callable[[int], None] | None = None  # how many rows (or answers to elicit) there are
    on_progress: Callable[[int], None] | None = None  # rows newly done
    on_row_graded: Callable[[ResponseRow, list[JudgeCallRecord], bool], None] | None = None  # row, records, refused
    on_record: Callable[[JudgeCallRecord], None] | None = None  # each record archived by this run (not earlier ones)
    ledger: Callable[[str], LedgerHandle] | None = None  # vendor -> the ledger to lease from (else this run's own)
    holder: str = "local"
    on_quota: Callable[[dict[str, dict]], None] | None = None  # each vendor's quota report, every ``quota_every_s``
    quota_every_s: float = 2.0
    timings: Timings = field(default_factory=Timings)  # where the run's time goes, phase by phase
    on_graded: Callable[[], None] | None = None  # the grading is over (what follows: scoring, the report)
    report: Callable[[Path], None] | None = None  # draws report.html at the end (None: here, before returning)
    # The only run of its process (the command line's): on a Ray instance the process started, nothing else draws
    # on the vendors' quotas, and a vendor with one actor keeps its ledger there (no quota actor to start).
    sole_ray_run: bool = False


def new_run_id() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def package_versions() -> dict[str, str]:
    """Python's and the main packages' versions, as a manifest records them."""
    out = {"python": sys.version.split()[0]}
    for dist in ("grading-council", "aiohttp", "ray", "pydantic", "numpy", "orjson", "structlog"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


async def run_council(
    req: RunRequest,
    *,
    stop: StopControl | None = None,
    hooks: RunHooks | None = None,
) -> RunResult:
    if req.backend not in BACKENDS:
        raise ConfigError(f"unknown backend {req.backend!r}; choose one of {', '.join(BACKENDS)}")
    check_budget(req.config, req.models)
    check_shapes(req.config)
    _check_shards(req.shards, req.backend, req.models, req.reuse_from, req.config)
    if req.provider_url is not None:
        provider_endpoint(req.provider_url)  # a bad URL is refused before anything is written
    stop = stop or StopControl()
    hooks = hooks or RunHooks()
    began = time.perf_counter()
    items = load_bank(req.bank)
    scan = None
    if not req.models and req.rows is None:  # validated in one streaming pass; the rows are read again below
        # In a thread, so that a Ctrl-C is answered while a large file is read: it ends the pass (Stopped).
        scan = await asyncio.to_thread(check_responses, req.responses, items, vendor_map=req.config.vendor_map,
                                       on_row=lambda _row: _unless_stopped(stop))
    _unless_stopped(stop)
    reusable = reusable_votes(req.runs_dir, req.reuse_from)
    sim_config = sim_behaviour(req.sim_config, req.config.seed) if req.provider_url is None else None
    folder = RunFolder.create(req.runs_dir, req.run_id or new_run_id(), compress=req.config.compress_archive,
                              command=req.command)
    try:
        return await _start(folder, req, items, scan, reusable, sim_config, stop, hooks, began)
    finally:
        folder.release()


async def _start(folder: RunFolder, req: RunRequest, items: list[BankItem], scan: Any, reusable: dict,
                 sim_config: dict | None, stop: StopControl, hooks: RunHooks, began: float) -> RunResult:
    """A new run in its just-made ``folder``: its rows, its manifest (before any call), then the grading."""
    if folder.recovered:
        logs.get_logger("council.run").warning(
            "run.recovered", run_id=folder.path.name,
            detail="a half-made folder of this id, left by a run killed before its manifest (nothing paid), replaced")
    if req.models:
        info = RowsInfo()
        used = {i.id for i in items}
    else:
        source = req.rows if req.rows is not None else iter_responses(req.responses, vendor_map=req.config.vendor_map)
        info = RowsInfo(folder.path, req.config.vendor_map)
        # rows.jsonl and the fingerprint, in one streaming pass (not stopped midway: the folder must be whole)
        await asyncio.to_thread(folder.write_lines, ROWS, info.tap(source))
        if scan is not None and info.rows != scan.rows:
            raise InputError([f"{req.responses}: changed while it was being read ({scan.rows} rows, then {info.rows})"])
        used = info.item_ids
    manifest = RunManifest(
        run_id=folder.path.name, created_at=_now(), command=req.command, roster=req.config.roster,
        simulated=req.provider_url is None, self_exclusion=req.config.self_exclusion, quorum=req.config.quorum,
        seed=req.config.seed,
        backend=req.backend, provider_url=req.provider_url, judge_prompt_version=req.config.judge.prompt_version,
        prompt_hashes=prompt_hashes(req.config.judge.prompt_version), methodology_version=METHODOLOGY_VERSION, bank_path=str(req.bank),
        responses_path="" if req.models else str(req.responses), dataset_fingerprint=dataset_fingerprint(items),
        responses_fingerprint="" if req.models else info.fingerprint, rows=info.rows,
        versions=package_versions(), config=req.config.model_dump(mode="json"), sim_config=sim_config,
        reuse_from=list(req.reuse_from), models=list(req.models), skipped_inputs=list(req.skipped_inputs),
        shards=req.shards, elicit_prompt_version=ELICIT_VERSION if req.models else None, elicit_prompt_hash=ELICIT_HASH if req.models else None,
        price_table=PRICE_TABLE, prices={m: _dumped(p) for m, p in req.config.prices(req.models).items()},
        batch_prices={m.judge_model: _dumped(req.config.batch_price(m.judge_model, m.vendor))
                      for m in req.config.roster if m.vendor in req.config.batching},
    )
    folder.write_json(MANIFEST, manifest.model_dump(mode="json"))
    folder.write_lines(ITEMS, [i for i in items if i.id in used])
    hooks.timings.add("validate", began, time.perf_counter() - began)
    return await _drive(folder, manifest, items, info, req.config, archived=None, reusable=reusable,
                        backend=req.backend, provider_url=req.provider_url, ray_address=req.ray_address,
                        hooks=hooks, shards=req.shards, elicited={}, audited=set(), stop=stop)


def _dumped(price: Any) -> dict[str, Any] | None:
    return price.model_dump() if price is not None else None


def _unless_stopped(stop: StopControl) -> None:
    """Stopped when a stop was asked before the run folder was made (nothing has been written)."""
    if stop.requested:
        raise Stopped(f"stopped ({stop.reason}) before the run began: no run folder was made")


class RowsInfo:
    """What a run needs to know of its rows without holding them: how many, their fingerprint, the item ids
    they answer and the model and vendor names in them (which the anonymiser scrubs). The rows themselves
    are read from the run folder's ``rows.jsonl`` when needed, a chunk at a time."""

    def __init__(self, path: Path | None = None, vendor_map: dict | None = None) -> None:
        self.path = path
        self.vendor_map = vendor_map
        self.rows = 0
        self.item_ids: set[str] = set()
        self.names: set[str] = set()
        self.fingerprint = ""

    def tap(self, rows: Iterable[ResponseRow]) -> Iterator[ResponseRow]:
        """``rows`` passed through, counted and fingerprinted on the way."""
        builder = ResponsesFingerprint()
        for row in rows:
            self.rows += 1
            self.item_ids.add(row.item_id)
            self.names.update((row.model, row.vendor))
            builder.add(row)
            yield row
        self.fingerprint = builder.hexdigest()

    def lines(self) -> Iterator[bytes]:
        """The rows of the run folder as raw JSON lines (a sharded run hands them out unparsed)."""
        if self.path is None:
            return iter(())
        return archive.iter_lines(self.path / ROWS)

    def read(self) -> Iterator[ResponseRow]:
        """The rows of the run folder, one at a time (none for a run that elicits its rows)."""
        if self.path is None:
            return iter(())
        return iter_jsonl(self.path / ROWS, ResponseRow, context={"vendor_map": self.vendor_map})


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
        return await _resume(folder, Path(runs_dir), run_id, backend=backend, provider_url=provider_url,
                             ray_address=ray_address, shards=shards, budget_usd=budget_usd, command=command, stop=stop,
                             hooks=hooks)
    finally:
        folder.release()


async def _resume(folder: RunFolder, runs_dir: Path, run_id: str, *, backend: str | None, provider_url: str | None,
                  ray_address: str | None, shards: int | None, budget_usd: float | None, command: str,
                  stop: StopControl | None, hooks: RunHooks | None) -> RunResult:
    manifest = RunManifest.model_validate(folder.read_json(MANIFEST))
    items = read_jsonl(folder.path / ITEMS, BankItem)
    folder.drop_torn_tails()
    if manifest.models:  # rows come from the elicitation archive
        info = RowsInfo()
        elicited = {r.row_id: r for r in folder.read_elicited()}
    else:
        info = RowsInfo(folder.path, manifest.config.get("vendor_map"))
        for _ in info.tap(info.read()):  # counted and fingerprinted in one streaming pass
            pass
        elicited = {}
        if info.fingerprint != manifest.responses_fingerprint:
            raise RunFolderError(f"{folder.path / ROWS} does not match the fingerprint in its manifest")
    # An error is not a result: such votes are asked again, and the new record supersedes the old one. The
    # index holds where each result is; the record is read back from disk when its vote comes up. A sharded run's
    # index is built by its writer, on this node, and only there.
    shards = manifest.shards if shards is None else shards
    archived = None if shards else ArchiveIndex.build(folder.path)
    config = CouncilConfig.recorded(manifest.config, manifest.judge_prompt_version)
    if budget_usd is not None:
        config = config.model_copy(update={"budget_usd": budget_usd})
        check_budget(config, manifest.models)
    backend = backend or manifest.backend
    if provider_url and manifest.simulated:
        raise ConfigError(f"run {run_id} was graded by the embedded provider (simulated); resume it without "
                          "--provider-url, or grade the rows again as a new run")
    provider_url = provider_url or manifest.provider_url
    manifest = manifest.model_copy(update={"resumes": [
        *manifest.resumes, ResumeEntry(at=_now(), command=command,
                                       archived_votes=len(archived) if archived is not None else None)]})
    folder.write_json(MANIFEST, manifest.model_dump(mode="json"))
    reusable = reusable_votes(Path(runs_dir), manifest.reuse_from)
    audited = set() if shards else {(r.row_id, r.member, r.round) for r in folder.read_audit()}
    return await _drive(folder, manifest, items, info, config, archived=archived, reusable=reusable,
                        backend=backend, provider_url=provider_url, ray_address=ray_address,
                        hooks=hooks or RunHooks(), shards=shards, elicited=elicited, audited=audited, stop=stop)


async def _drive(
    folder: RunFolder, manifest: RunManifest, items: list[BankItem], info: RowsInfo, config: CouncilConfig,
    *, archived: ArchiveIndex | None, reusable: dict[str, tuple[str, JudgeCallRecord]], backend: str,
    provider_url: str | None, ray_address: str | None, hooks: RunHooks, shards: int,
    elicited: dict[str, ElicitedRecord], audited: set[VoteKey], stop: StopControl | None,
) -> RunResult:
    stop = stop or StopControl()
    _check_shards(shards, backend, manifest.models, manifest.reuse_from, config)
    folder.write_state("running")
    with logs.run_log(folder.path / LOG):
        return await _drive_logged(folder, manifest, items, info, config, archived=archived, reusable=reusable,
                                   backend=backend, provider_url=provider_url, ray_address=ray_address, hooks=hooks,
                                   shards=shards, elicited=elicited, audited=audited, stop=stop)


async def _drive_logged(
    folder: RunFolder, manifest: RunManifest, items: list[BankItem], info: RowsInfo, config: CouncilConfig,
    *, archived: ArchiveIndex | None, reusable: dict[str, tuple[str, JudgeCallRecord]], backend: str,
    provider_url: str | None, ray_address: str | None, hooks: RunHooks, shards: int,
    elicited: dict[str, ElicitedRecord], audited: set[VoteKey], stop: StopControl,
) -> RunResult:
    timings = hooks.timings
    log = logs.get_logger("council.run").bind(run_id=folder.path.name)
    names = sorted(info.names | set(manifest.models))
    # Ray and the embedded provider start side by side; a stop asked meanwhile is answered at once (nothing was
    # sent yet).
    ray_up = _start_ray(ray_address, shards, timings) if backend == "ray" else None
    provider = (asyncio.ensure_future(timings.timed("provider start", start_embedded(manifest, items, info.read())))
                if provider_url is None else None)
    started = None  # when the grading began: the run's seconds are its grading's
    outcome = Outcome(0, 0, 0, 0, None, None, {})
    try:
        await _first_of([f for f in (ray_up, provider) if f is not None], stop)
        if not stop.requested:
            if ray_up is not None:
                from council.cluster.raycluster import node_count

                if provider_url is None and node_count() > 1:
                    raise ConfigError("the embedded provider listens on this machine's loopback, which the other "
                                      "nodes of the cluster cannot reach: serve it where they can (`council sim "
                                      "--host ADDRESS` on a node) and pass --provider-url, or use --backend local")
            if provider is not None:
                provider_url = provider.result().url
            started = dt.datetime.now(dt.UTC)
            outcome = await _grade(folder, manifest, items, info, config, provider_url, names, provider is not None,
                                   archived=archived, reusable=reusable, backend=backend, hooks=hooks, shards=shards,
                                   elicited=elicited, audited=audited, stop=stop, log=log)
    finally:
        folder.close()
        if hooks.on_graded is not None:
            hooks.on_graded()
        stats = await _stop_provider(provider, folder, timings)
    folder.write_bytes("quota_stats.json", dump_json(outcome.quota_stats))
    seconds = (dt.datetime.now(dt.UTC) - started).total_seconds() if started is not None else 0.0
    if stop.requested:
        folder.write_state("stopped", stop.reason, stop.detail, abandoned=outcome.abandoned)
    else:  # every row was taken through; some may still lack votes (failed calls, refused rows)
        folder.write_state("finished")
    with timings.phase("scoring"):  # in a thread, so that a Ctrl-C meanwhile is answered (no report drawn)
        summary = await asyncio.to_thread(rescore, folder)
    if hooks.report is not None:
        hooks.report(folder.path)
    else:
        with timings.phase("report"):
            report_at_end(folder.path, log)
    log.info("run.done", seconds=round(seconds, 3), rows=outcome.rows or info.rows, issued=outcome.issued,
             served_from_archive=outcome.served_from_archive, spent_usd=round(summary["cost_usd"], 6),
             state=summary["state"]["state"], reason=stop.reason, abandoned=outcome.abandoned,
             timings=timings.as_dict())
    return RunResult(run_dir=folder.path, summary=summary, seconds=seconds, provider_stats=stats,
                     issued=outcome.issued, served_from_archive=outcome.served_from_archive, budget=outcome.budget,
                     stop=stop, error=outcome.error, processes=outcome.processes, timings=timings)


async def _grade(
    folder: RunFolder, manifest: RunManifest, items: list[BankItem], info: RowsInfo, config: CouncilConfig,
    provider_url: str, names: list[str], embedded: bool, *, archived: ArchiveIndex | None,
    reusable: dict[str, tuple[str, JudgeCallRecord]], backend: str, hooks: RunHooks, shards: int,
    elicited: dict[str, ElicitedRecord], audited: set[VoteKey], stop: StopControl, log: Any,
) -> Outcome:
    provider_endpoint(provider_url, config)  # the run's provider URL, refused here if it carries credentials
    models = manifest.models
    endpoints = {v: config.endpoint_of(v, provider_url, embedded)
                 for v in [*config.roster_vendors, *(config.vendor_of(m) for m in models)]}
    log.info("run.start", rows=info.rows, backend=backend, shards=shards,
             provider="embedded" if embedded else provider_url,
             archived_votes=len(archived) if archived is not None else None, resumed=bool(manifest.resumes))
    if hooks.on_start is not None:
        hooks.on_start(len(items) * len(models) if models else info.rows)
    with hooks.timings.phase("grading"):
        if shards:
            return await _grade_sharded(folder, items, info, config, endpoints, names, shards,
                                        on_progress=hooks.on_progress, stop=stop, log=log)
        return await _grade_here(folder, items, info, config, endpoints, names, models, archived=archived,
                                 reusable=reusable, backend=backend, hooks=hooks,
                                 elicited=elicited, audited=audited, stop=stop, log=log)


def _start_ray(address: str | None, shards: int, timings: Timings) -> asyncio.Future[None]:
    from council.cluster.raycluster import ensure_ray_soon

    # A local instance gets a logical CPU per shard worker, so every worker is placed on this machine.
    num_cpus = max(os.cpu_count() or 1, shards) if shards and not address else None
    return asyncio.ensure_future(timings.timed("ray start", ensure_ray_soon(address, num_cpus=num_cpus)))


async def _first_of(work: list[asyncio.Future[Any]], stop: StopControl) -> None:
    """Wait for all of ``work``, or for a stop, whichever comes first (a failure of ``work`` is raised)."""
    if not work:
        return
    everything = asyncio.gather(*work)
    if await stop.first(everything):
        everything.result()
    else:  # stopped first: what is still starting is left to end with the process (or is stopped below)
        everything.add_done_callback(lambda f: f.cancelled() or f.exception())


async def _stop_provider(provider: asyncio.Future[Any] | None, folder: RunFolder, timings: Timings) -> dict | None:
    """The embedded provider's counters, written to the run folder, and the provider stopped (one still
    starting is cancelled)."""
    if provider is None:
        return None
    if not provider.done():
        provider.cancel()
        await asyncio.gather(provider, return_exceptions=True)
        return None
    if provider.exception() is not None:
        return None
    sim = provider.result()
    with timings.phase("provider stop"):
        try:
            stats = await sim.stats()
            folder.write_bytes("provider_stats.json", dump_json(stats))
        finally:
            await sim.close()
    return stats


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


def _check_shards(shards: int, backend: str, models: list[str], reuse_from: list[str], config: CouncilConfig) -> None:
    """What a sharded run cannot do (yet), refused before anything starts."""
    if not shards:
        return
    problems = []
    if backend != "ray":
        problems.append("--shards needs the ray backend")
    if models:
        problems.append("elicitation (--models) runs on one node")
    if reuse_from:
        problems.append("--reuse-from is served by a single-node run")
    if problems:
        raise ConfigError(f"--shards {shards}: {'; '.join(problems)}; leave out --shards for this run")


async def _grade_sharded(
    folder: RunFolder, items: list[BankItem], info: RowsInfo, config: CouncilConfig, endpoints: dict[str, Endpoint],
    names: list[str], shards: int, *, on_progress: Callable[[int], None] | None, stop: StopControl, log: Any,
) -> Outcome:
    """Grade the run with shard workers across the cluster (:mod:`council.cluster.driver`)."""
    from council.cluster.driver import drive_shards

    done = await drive_shards(folder.path, info.lines(), config, items, endpoints, names, shards, stop,
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


def reports_off() -> bool:
    """Whether ``COUNCIL_NO_REPORT`` (set, and not ``0``) leaves ``report.html`` out of the runs' ends."""
    return os.environ.get("COUNCIL_NO_REPORT", "") not in ("", "0")


def report_at_end(run_dir: Path, log: Any) -> None:
    """``report.html`` at the end of every run; a report that cannot be written is a warning, never a failed run
    (the results are already in the folder, and ``council report RUN`` writes it again). None when
    :func:`reports_off`."""
    if reports_off():
        return
    from council.report.page import write_report

    try:
        write_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - the run's results stand without their page
        log.warning("report.failed", error=f"{type(exc).__name__}: {exc}")


async def _watch_quota(pool: Any, hooks: RunHooks) -> None:
    """Hand the caller each vendor's quota report every ``hooks.quota_every_s`` while the run grades."""
    assert hooks.on_quota is not None
    while True:
        await asyncio.sleep(hooks.quota_every_s)
        hooks.on_quota(await pool.quota_stats())


def provider_endpoint(url: str, config: CouncilConfig | None = None) -> Endpoint:
    """The endpoint of ``--provider-url`` with the run's timeouts and retry policy, or ConfigError (a URL
    carrying credentials is refused)."""
    config = config or CouncilConfig()
    try:
        return Endpoint(base_url=url, timeouts=config.timeouts, retry=config.retry)
    except ValidationError as exc:
        raise ConfigError(f"--provider-url {validation_problems(exc)}") from None


def check_shapes(config: CouncilConfig) -> None:
    """A seat whose requests its provider would refuse whatever the prompt (a thinking budget outside the model's
    range: :func:`council.transport.shape.shape_for`) is refused before anything is written or sent."""
    from council.transport.shape import seat_shape

    problems = [f"seat {m.vendor}: {p}" for m in config.roster for p in seat_shape(
        m.judge_model, m.vendor, config.judge, Endpoint(base_url="http://127.0.0.1/v1")).problems]
    if problems:
        raise ConfigError(f"{'; '.join(problems)} (`council check` shows every seat)")


def check_budget(config: CouncilConfig, models: list[str]) -> None:
    """A budget is only a bound if every call has a price: refuse one with unpriced judges or models."""
    if config.budget_usd is None:
        return
    unpriced = config.unpriced(models)
    if unpriced:
        raise ConfigError(f"--budget-usd needs a price for every judge and model under test; no price for: "
                          f"{', '.join(unpriced)} (set vendors.<vendor>.price_in_per_mtok / price_out_per_mtok or "
                          f"model_prices in --config)")


async def start_embedded(manifest: RunManifest, items: Iterable[BankItem], rows: Iterable[ResponseRow], *,
                         on_this_loop: bool = False) -> SimProcess | SimServer:
    """The embedded provider of a simulated run, started with the run's own behaviour (the planted one at the
    run's seed when it recorded none) and told the truth of ``rows``, and primed with the truth of every answer
    the run's models under test give. Answers are a pure function of the request, so a provider started for
    the same run later (to resume it, or to ask another judge: ``council crossjudge``) knows the truth of the
    answers given earlier, and its judges grade them against it rather than guess. For a run of at least
    ``OWN_PROCESS_ROWS`` rows it runs in a process of its own (:mod:`council.sim._process`), so that it and the
    council's client do not take turns on one event loop; a smaller run is served on this process's own loop,
    as starting a process (about half a second of a core) would cost more than it saves, and so is one whose
    truth grows as it runs (``on_this_loop``: ``SimServer.truth`` is told of each new row)."""
    from council.sim import SimConfig, TruthTable, prime, start_sim, start_sim_process

    sim_config = (SimConfig.model_validate(manifest.sim_config) if manifest.sim_config
                  else SimConfig.planted(manifest.seed))
    truth = TruthTable.from_rows(items, rows)
    prime(sim_config, truth, manifest.models)
    rows = manifest.rows or len(truth.questions()) * len(manifest.models)
    own_process = rows >= OWN_PROCESS_ROWS and not on_this_loop
    return await (start_sim_process if own_process else start_sim)(sim_config, truth)


def sim_behaviour(path: Path | None, seed: int) -> dict[str, Any]:
    """The embedded provider's behaviour a new run records: ``path``'s (a JSON file), else the planted one."""
    from council.sim import SimConfig

    return (SimConfig.from_file(path) if path else SimConfig.planted(seed=seed)).model_dump(mode="json")


def reusable_votes(runs_dir: Path, run_ids: list[str]) -> dict[str, tuple[str, JudgeCallRecord]]:
    """Archived votes of other runs by request key (errors are not results and are not re-used)."""
    out: dict[str, tuple[str, JudgeCallRecord]] = {}
    for run_id in run_ids:
        folder = RunFolder.open_run(Path(runs_dir), run_id)
        for record in folder.read_records(1) + folder.read_records(2):
            if record.parse_status != "error" and record.request_key:
                out.setdefault(record.request_key, (run_id, record))
    return out
