"""A run's first phase, load: everything the grading starts from, read and checked, in its run folder.

A new run (``read_inputs`` then ``new_run``) validates its inputs in one streaming pass before any folder is
made, then copies into its just-made folder what scoring and resuming need: the rows (``rows.jsonl``,
fingerprinted on the way), the manifest (before any call) and the bank items the rows answer. A resumed run
(``reopen``) reopens its folder (locked by ``council.store.runfolder.RunFolder.open_to_write``), drops a torn
last line (a crash mid-write), checks its rows against the manifest's fingerprint, indexes the archived votes
(a vote whose result is archived is never asked again) and records the resumption in the manifest.
Both end in a ``LoadedRun``, the input of the grading.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from bank import ResponsesFingerprint, check_responses, dataset_fingerprint, iter_responses, load_bank
from council.core import logs
from council.core.errors import ConfigError, InputError, RunFolderError
from council.core.schema import BankItem, ElicitedRecord, JudgeCallRecord, ResponseRow, ResumeEntry, RunManifest
from council.grading.coordinator import VoteKey
from council.grading.stop import StopControl, Stopped
from council.protocol.config import CouncilConfig
from council.protocol.panels import METHODOLOGY_VERSION
from council.protocol.prices import TABLE as PRICE_TABLE
from council.protocol.prompts import prompt_hashes
from council.run.checks import check_budget
from council.run.request import RunRequest
from council.run.timings import Timings
from council.store import archive
from council.store.runfolder import ITEMS, MANIFEST, ROWS, ArchiveIndex, RunFolder, iter_jsonl, read_jsonl
from elicitor.prompts import ELICIT_HASH, ELICIT_VERSION


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

    def located(self) -> Iterator[tuple[int, bytes]]:
        """The rows of the run folder as raw JSON lines, each with its location in ``rows.jsonl``
        (:func:`council.store.archive.iter_located`; a sharded run hands them out unparsed, or by location)."""
        if self.path is None:
            return iter(())
        return archive.iter_located(self.path / ROWS)

    def read(self) -> Iterator[ResponseRow]:
        """The rows of the run folder, one at a time (none for a run that elicits its rows)."""
        if self.path is None:
            return iter(())
        return iter_jsonl(self.path / ROWS, ResponseRow, context={"vendor_map": self.vendor_map})


@dataclass
class LoadedRun:
    """A run ready to grade, new or resumed: its folder (written: rows, items, manifest), what it grades and with
    which configuration, where its judges are (``backend``, ``provider_url``: None for the embedded provider,
    ``ray_address``, ``shards``), and what earlier work is not asked again: the archived votes (``archived``,
    None for a new or a sharded run), other runs' votes (``reusable``, by request key), the archived answers of
    the models under test (``elicited``, by row id) and the deliberation audit's votes already taken
    (``audited``)."""

    folder: RunFolder
    manifest: RunManifest
    items: list[BankItem]
    info: RowsInfo
    config: CouncilConfig
    backend: str
    provider_url: str | None
    ray_address: str | None
    shards: int
    archived: ArchiveIndex | None
    reusable: dict[str, tuple[str, JudgeCallRecord]]
    elicited: dict[str, ElicitedRecord]
    audited: set[VoteKey]


class Inputs(NamedTuple):
    """A new run's inputs, read and checked before its folder is made: the bank's items, the responses' first
    streaming pass (None when the rows are elicited or already imported), other runs' votes it may re-use, and
    the embedded provider's behaviour it records (None with a provider URL)."""

    items: list[BankItem]
    scan: Any
    reusable: dict[str, tuple[str, JudgeCallRecord]]
    sim_config: dict[str, Any] | None


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


async def read_inputs(req: RunRequest, stop: StopControl) -> Inputs:
    """The bank, the responses validated in one streaming pass (the rows are read again by ``new_run``), other
    runs' votes and the embedded provider's behaviour; Stopped when a stop comes first (nothing written)."""
    items = load_bank(req.bank)
    scan = None
    if not req.models and req.rows is None:  # validated in one streaming pass; the rows are read again below
        # In a thread, so that a Ctrl-C is answered while a large file is read: it ends the pass (Stopped).
        scan = await asyncio.to_thread(check_responses, req.responses, items, vendor_map=req.config.vendor_map,
                                       on_row=lambda _row: _unless_stopped(stop))
    _unless_stopped(stop)
    reusable = reusable_votes(req.runs_dir, req.reuse_from)
    sim_config = sim_behaviour(req.sim_config, req.config.seed) if req.provider_url is None else None
    return Inputs(items, scan, reusable, sim_config)


async def new_run(folder: RunFolder, req: RunRequest, inputs: Inputs, timings: Timings, began: float) -> LoadedRun:
    """A new run in its just-made ``folder``: its rows, its manifest (before any call) and its items written."""
    items, scan = inputs.items, inputs.scan
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
        versions=package_versions(), config=req.config.model_dump(mode="json"), sim_config=inputs.sim_config,
        reuse_from=list(req.reuse_from), models=list(req.models), skipped_inputs=list(req.skipped_inputs),
        shards=req.shards, elicit_prompt_version=ELICIT_VERSION if req.models else None, elicit_prompt_hash=ELICIT_HASH if req.models else None,
        price_table=PRICE_TABLE, prices={m: _dumped(p) for m, p in req.config.prices(req.models).items()},
        batch_prices={m.judge_model: _dumped(req.config.batch_price(m.judge_model, m.vendor))
                      for m in req.config.roster if m.vendor in req.config.batching},
    )
    folder.write_json(MANIFEST, manifest.model_dump(mode="json"))
    folder.write_lines(ITEMS, [i for i in items if i.id in used])
    timings.add("validate", began, time.perf_counter() - began)
    return LoadedRun(folder, manifest, items, info, req.config, req.backend, req.provider_url, req.ray_address,
                     req.shards, archived=None, reusable=inputs.reusable, elicited={}, audited=set())


def _dumped(price: Any) -> dict[str, Any] | None:
    return price.model_dump() if price is not None else None


def _unless_stopped(stop: StopControl) -> None:
    """Stopped when a stop was asked before the run folder was made (nothing has been written)."""
    if stop.requested:
        raise Stopped(f"stopped ({stop.reason}) before the run began: no run folder was made")


def reopen(folder: RunFolder, runs_dir: Path, run_id: str, *, backend: str | None, provider_url: str | None,
           ray_address: str | None, shards: int | None, budget_usd: float | None, command: str) -> LoadedRun:
    """A run to resume from its reopened ``folder``, with the configuration it was started with (``backend``,
    ``provider_url``, ``ray_address``, ``shards`` and ``budget_usd`` override it when given)."""
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
    return LoadedRun(folder, manifest, items, info, config, backend, provider_url, ray_address, shards,
                     archived=archived, reusable=reusable, elicited=elicited, audited=audited)


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
