"""One council run behind every sample an inspect process scores: a run folder, one pool of judges (one quota
ledger per vendor), one budget and one coordinator per model under test, shared by all the scorer's calls.

inspect calls a scorer once per sample, concurrently, on one event loop. Each call hands its sample here as a
bank item and a response row; the row is appended to the run folder's ``rows.jsonl`` (its item to
``items.jsonl``), graded through both rounds by :meth:`Coordinator.grade_row`, each vote archived as it
returns, and its verdict made by :func:`council.scoring.scoring.row_verdict`, the rule ``verdicts.jsonl``
uses. A run folder that already exists is reopened with an index of its archived votes, so a sample graded
by an earlier process (an interrupted eval, ``inspect score`` on the same log again) pays for nothing the
archive holds; it is graded by the configuration its manifest recorded.

A session belongs to the event loop it was opened on (its HTTP sessions and the embedded provider live
there); another loop (a second ``eval()`` in the same process) opens its own on the same folder. A row stopped
by the budget or by a provider that cannot be used marks the run ``stopped`` (``state.json``), as ``council
run`` does.

When an eval's task ends (inspect's ``on_task_end`` hook, :mod:`council.inspect._hooks`), the run folders its
samples went to get what every run ends with: ``verdicts.jsonl``, ``summary.json`` (agreement,
deliberation_impact, bootstrap intervals), the score tables and ``report.html``; a session no running eval uses
any more is then closed. ``inspect score`` runs no hooks and tells a scorer nothing when the last sample is
scored, so the sessions still holding rows without results get theirs when the process exits. A new folder of
an eval inspect runs again (``inspect eval-retry``) is another attempt of its task (:mod:`council.inspect._attempts`).
"""

from __future__ import annotations

import asyncio
import atexit
import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from council.batching.routing import with_batching
from council.core import logs
from council.core.errors import ConfigError, ProviderUnavailable
from council.core.schema import BankItem, JudgeCallRecord, ResponseRow, RowVerdict, RunManifest
from council.grading.budget import Budget, BudgetExhausted
from council.grading.coordinator import Coordinator
from council.grading.pools import LocalPool
from council.grading.stop import StopControl
from council.inspect._attempts import SAMPLES, append, earlier_attempts, merge_earlier, record_task
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Rule
from council.protocol.panels import METHODOLOGY_VERSION
from council.protocol.prompts import prompt_hashes
from council.run.runner import (package_versions, provider_endpoint, report_at_end, reusable_votes,
                                sim_behaviour, start_embedded)
from council.scoring.scoring import rescore, row_verdict
from council.store.runfolder import (ITEMS, MANIFEST, ROWS, ArchiveIndex, RunFolder, dump_json, iter_json,
                                    iter_jsonl, run_path)

if TYPE_CHECKING:
    from council.batching.pool import BatchingPool


class SampleConflict(Exception):
    """A sample whose row or item id the run already holds with other content."""


@dataclass(frozen=True)
class Graded:
    """What the council made of one row: its verdict (both rounds), the votes behind it, and why it was refused
    (None: not refused)."""

    verdict: RowVerdict
    records: list[JudgeCallRecord]
    refused: str | None
    run_id: str
    stopped: str | None = None  # why the row's votes are not all in: the budget, a stop, a provider that failed


class Session:
    """The run behind one scorer in one process (see the module docstring); use :func:`session`."""

    def __init__(self, folder: RunFolder, config: CouncilConfig, manifest: RunManifest, simulate: bool,
                 provider_url: str | None) -> None:
        self.folder = folder
        self.config = config
        self.manifest = manifest
        self.simulate = simulate
        self._provider_url = provider_url
        self._sim = None
        self._pool: LocalPool | BatchingPool | None = None
        self._coordinators: dict[str, Coordinator] = {}
        self._reusable: dict[str, tuple[str, JudgeCallRecord]] = {}  # votes of the task's earlier attempts
        self._index = ArchiveIndex.build(folder.path)
        folder.attach(self._index)
        self.budget = Budget(config.budget_usd, spent_usd=self._index.cost_usd)
        self.stop = StopControl()
        self.rows = {r.row_id: r for r in iter_jsonl(folder.path / ROWS, ResponseRow, missing_ok=True,
                                                          context={"vendor_map": config.vendor_map})}
        self.items = {i.id: i for i in iter_jsonl(folder.path / ITEMS, BankItem, missing_ok=True)}
        self._graded: dict[str, tuple[list[JudgeCallRecord], bool]] = {}
        self._started = asyncio.Lock()
        self._stopped: tuple[str, str] | None = None  # why this session's rows stopped being graded (the first)
        self.evals: set[str] = set()  # the evals whose samples this session grades, until each task ends
        self.unsummarised = False  # rows graded since the run's results were last written
        self._state: tuple[str, ...] | None = None  # what this session last wrote to state.json

    @property
    def run_id(self) -> str:
        return self.folder.path.name

    async def grade(self, item: BankItem, row: ResponseRow, sample_uuid: str | None, eval_id: str | None = None
                    ) -> Graded:
        """Grade ``row`` (an answer to ``item``, a sample of eval ``eval_id``) through both rounds; a row already
        graded in this folder is served from its archive."""
        if eval_id:
            self.evals.add(eval_id)
        self._admit(item, row, sample_uuid)
        self.unsummarised = True
        coordinator = await self._coordinator(row)
        if self._sim is not None:  # the embedded provider's judges grade against what it is told of the row
            self._sim.truth.add_items([item])
            self._sim.truth.add(item.prompt, row.response, None, [row.model])
        stopped = None
        try:
            await coordinator.grade_row(row)
            records, refused = self._graded.pop(row.row_id)
        except (BudgetExhausted, ProviderUnavailable) as exc:  # the votes that did return are archived
            stopped, records, refused = str(exc), [], False
            self._stopped = self._stopped or ("budget" if isinstance(exc, BudgetExhausted) else "error", stopped)
            self._write_state("stopped", *self._stopped)
        reason = self.folder.read_refused().get(row.row_id) if refused else None
        verdict = row_verdict(row, records, self.config.roster, self.config.self_exclusion, self.config.quorum,
                              deliberation=Rule.of(self.config), refused=refused, item=item)
        if self._stopped is None:
            self._write_state("finished")  # every row handed to the run so far is through (rescore reads it)
        if self._sim is not None:
            self.folder.write_bytes("provider_stats.json", dump_json(await self._sim.stats()))
        return Graded(verdict, records, reason, self.run_id, stopped)

    def _write_state(self, *state: str) -> None:
        """``state.json``, written when it changes (not again for every row that leaves it as it was)."""
        if state != self._state:
            self.folder.write_state(*state)
            self._state = state

    def write_results(self) -> None:
        """What ``council run`` writes at its end, from the folder alone (with the samples earlier attempts of the
        task completed copied in first): verdicts, summary, tables, report."""
        self.unsummarised = False
        if self.manifest.reuse_from:
            merge_earlier(self.folder, self.folder.path.parent, self.manifest.reuse_from, self.config.vendor_map)
        summary = rescore(self.folder)
        report_at_end(self.folder.path, _log)
        _log.info("inspect.results", run_id=self.run_id, rows=summary["rows_total"], state=summary["state"]["state"])

    async def close(self) -> None:
        """Close the judges' HTTP sessions and stop the embedded provider (a later sample opens a new session)."""
        if self._pool is not None:
            await self._pool.close()
        if self._sim is not None:
            await self._sim.close()
        self.folder.close()
        self.folder.release()

    def _admit(self, item: BankItem, row: ResponseRow, sample_uuid: str | None) -> None:
        """Enter the row (and its item) in the run folder, unless it is there already with the same content."""
        known = self.items.get(item.id)
        if known is not None and (known.prompt, known.reference) != (item.prompt, item.reference):
            raise SampleConflict(f"item {item.id!r} is already in run {self.run_id} with another input or target; "
                                 "score with another run_id")
        prior = self.rows.get(row.row_id)
        if prior is not None and prior.response != row.response:
            raise SampleConflict(f"row {row.row_id!r} is already in run {self.run_id} with another response; "
                                 "score with another run_id")
        if known is None:
            self.items[item.id] = item
            append(self.folder.path / ITEMS, [item.model_dump(mode="json")])
        if prior is None:
            self.rows[row.row_id] = row
            append(self.folder.path / ROWS, [row.model_dump(mode="json")])
            if sample_uuid:
                append(self.folder.path / SAMPLES, [{"uuid": sample_uuid, "row_id": row.row_id}])

    async def _coordinator(self, row: ResponseRow) -> Coordinator:
        """The coordinator of ``row``'s model (its anonymiser scrubs that model's and vendor's names from the
        reasons peers see), all of them on one pool and budget."""
        async with self._started:
            if self._pool is None:
                self._reusable = reusable_votes(self.folder.path.parent, self.manifest.reuse_from)
                url = self._provider_url
                if self.simulate:
                    self._sim = await start_embedded(self.manifest, self.items.values(), self.rows.values(),
                                                     on_this_loop=True)
                    url = self._sim.url
                assert url is not None
                provider_endpoint(url, self.config)  # refused here if it carries credentials
                endpoints = {v: self.config.endpoint_of(v, url, self.simulate) for v in self.config.roster_vendors}
                self._pool = with_batching(LocalPool(self.config, endpoints), self.config, endpoints, self.folder.path)
            found = self._coordinators.get(row.model)
            if found is None:
                found = self._coordinators[row.model] = Coordinator(
                    self.config, self.items, self._pool, self.folder.append, extra_names=[row.model, row.vendor],
                    archived=self._index, budget=self.budget, stop=self.stop, on_refused=self._refuse,
                    on_row_graded=self._done, reusable=self._reusable)
            return found

    def _refuse(self, row: ResponseRow, reason: str) -> None:
        if row.row_id not in self.folder.read_refused():
            self.folder.refuse(row.row_id, reason)

    def _done(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        self._graded[row.row_id] = (records, refused)


_sessions: dict[tuple[Path, int], Session] = {}  # (run folder, event loop) -> its session
_locks: dict[int, asyncio.Lock] = {}  # one per event loop: a lock belongs to the loop it first waits on
_log = logs.get_logger("council.inspect")
_tasks: dict[str, str] = {}  # eval id -> its task's id (kept by an eval's retries), as inspect says at task start


def task_started(eval_id: str, task_id: str) -> None:
    _tasks[eval_id] = task_id


async def end_of_eval(eval_id: str) -> None:
    """The results of every run folder eval ``eval_id`` graded into; then the sessions no other eval of this loop
    still uses are closed."""
    loop = id(asyncio.get_running_loop())
    for key, found in list(_sessions.items()):
        if key[1] != loop or eval_id not in found.evals:
            continue
        found.evals.discard(eval_id)
        try:
            await asyncio.to_thread(found.write_results)
        finally:
            if not found.evals:
                del _sessions[key]
                await found.close()


@atexit.register
def _at_exit() -> None:
    """``inspect score`` (no hooks, no end of scoring said): the results of the runs that still lack them."""
    for found in list(_sessions.values()):
        if found.unsummarised:
            try:
                found.write_results()
                written = [n for n in ("summary.json", "verdicts.jsonl", "report.html") if (found.folder.path / n).exists()]
                print(f"grading-council: the results of run {found.run_id} are in {found.folder.path} "
                      f"({', '.join(written)})", file=sys.stderr)
            except Exception as exc:  # noqa: BLE001 - the votes are archived; ``council rescore RUN`` writes them
                _log.warning("inspect.results_failed", run_id=found.run_id, error=f"{type(exc).__name__}: {exc}")
                print(f"grading-council: the results of run {found.run_id} could not be written ({exc}); "
                      f"`council rescore --runs-dir {found.folder.path.parent} {found.run_id}` writes them",
                      file=sys.stderr)


async def session(runs_dir: Path, run_id: str, config: CouncilConfig, *, simulate: bool,
                  provider_url: str | None, sim_config: Path | None = None, eval_id: str | None = None) -> Session:
    """The session of ``runs_dir/run_id`` on the running loop: opened (or the folder made) by the first call,
    shared by the rest. An existing folder is graded by its own recorded configuration (and embedded provider);
    a new simulated one by ``sim_config``'s behaviour (None: the planted one). A new folder of an eval whose task
    inspect named (``on_task_start``) is an attempt of that task (:mod:`council.inspect._attempts`)."""
    loop = id(asyncio.get_running_loop())
    path = run_path(runs_dir, run_id).resolve()
    lock = _locks.setdefault(loop, asyncio.Lock())
    async with lock:
        found = _sessions.get((path, loop))
        if found is None:
            task = (_tasks[eval_id], eval_id) if eval_id in _tasks else None
            found = _sessions[(path, loop)] = _open(Path(runs_dir), run_id, config, simulate, provider_url,
                                                           sim_config, task)
        return found


def _open(runs_dir: Path, run_id: str, config: CouncilConfig, simulate: bool, provider_url: str | None,
          sim_config: Path | None, task: tuple[str, str] | None) -> Session:
    if (run_path(runs_dir, run_id) / MANIFEST).is_file():
        folder = RunFolder.open_run(runs_dir, run_id)
        folder.drop_torn_tails()
        manifest = RunManifest.model_validate(folder.read_json(MANIFEST))
        if manifest.simulated != simulate:  # never real vendors for a simulated run, nor the reverse
            how = "simulate=true" if manifest.simulated else "provider_url (its manifest records one)"
            graded_by = "by the embedded provider" if manifest.simulated else "by real judges"
            raise ConfigError(f"run {run_id} was graded {graded_by}; score it again with {how}, or pass another run_id")
        config = CouncilConfig.recorded(manifest.config, manifest.judge_prompt_version)
        return Session(folder, config, manifest, manifest.simulated, provider_url or manifest.provider_url)
    if provider_url is not None:
        provider_endpoint(provider_url)  # a bad URL is refused before a folder is made
    folder = RunFolder.create(runs_dir, run_id)
    created = dt.datetime.now(dt.UTC).isoformat()
    if task is not None:
        record_task(folder.path, *task, created_at=created)
    manifest = RunManifest(
        run_id=run_id, created_at=created, command="inspect", roster=config.roster,
        simulated=simulate, self_exclusion=config.self_exclusion, quorum=config.quorum, seed=config.seed,
        backend="local", provider_url=provider_url, judge_prompt_version=config.judge.prompt_version,
        prompt_hashes=prompt_hashes(config.judge.prompt_version), methodology_version=METHODOLOGY_VERSION,
        bank_path="", responses_path="", dataset_fingerprint="", responses_fingerprint="", rows=0,
        versions=package_versions(), config=config.model_dump(mode="json"),
        sim_config=sim_behaviour(sim_config, config.seed) if simulate else None,
        reuse_from=earlier_attempts(runs_dir, task[0], run_id) if task is not None else [],
    )
    folder.write_json(MANIFEST, manifest.model_dump(mode="json"))
    folder.write_state("running")
    return Session(folder, config, manifest, simulate, provider_url)


def known_samples(runs_dir: Path) -> dict[str, str]:
    """Sample uuid -> the run under ``runs_dir`` that graded it (the latest written, when a retried eval's last
    attempt copied it from an earlier one): how ``inspect score`` on a log finds the run its samples were graded
    in before."""
    out: dict[str, str] = {}
    for path in sorted(Path(runs_dir).glob(f"*/{SAMPLES}"), key=lambda p: (p.stat().st_mtime_ns, p.parent.name)):
        for _, entry in iter_json(path):
            out[entry["uuid"]] = path.parent.name
    return out
