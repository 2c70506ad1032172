"""What a caller hands a council run (``RunRequest``, and ``RunHooks`` to be told how it goes) and what it gets
back (``RunResult``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from council.core.errors import ProviderUnavailable
from council.core.schema import JudgeCallRecord, ResponseRow
from council.grading.budget import Budget
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig
from council.run.timings import Timings
from council.transport.limiter import LedgerHandle

BACKENDS = ("ray", "local")


@dataclass
class RunRequest:
    """A new run: the bank and the responses to grade (or ``rows`` already imported, or ``models`` to ask the
    bank's items), where its folder goes, the judges' backend and provider (None: the embedded provider, with
    ``sim_config``'s behaviour), the council's configuration, and other runs whose votes it may re-use."""

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
    """A run's end: its folder, its summary (``summary.json``), the seconds its grading took, the embedded
    provider's counters, the votes asked and those served from the archive, the budget and the stop switch, the
    vendor that could not be used (when that stopped the run), a sharded run's processes, and where the time
    went."""

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
