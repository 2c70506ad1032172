"""What a run is doing, while it runs: the board the runner's hooks feed, and its display on stderr (live on a
terminal, a plain line every few seconds when piped); and the bar of a service job's verdicts as they come."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from council.console.batches import HEADER, batch_rows
from council.console.output import clock, console, drawn, say, usd
from council.core.schema import JudgeCallRecord, ResponseRow
from council.run.runner import RunHooks


@dataclass
class VendorProgress:
    votes: int = 0
    requests: int = 0  # from the records: a batched request counts once
    quota_requests: int | None = None  # from the vendor's quota report, when it says
    rate_limited: int = 0
    retries: int = 0
    errors: int = 0
    spend_usd: float = 0.0
    rows_sat: int = 0  # graded rows this vendor sat on (its share of the rows, for its ETA)
    last_request: str = ""


class RunBoard:
    """What a run is doing, fed by the runner's hooks: the phase (validating, grading round 1 / 2, scoring,
    report), rows done, votes per round and, per vendor, requests, 429s, retries (sum of attempts - 1),
    spend and the time it needs for its share of what is left. Read by the live display or the progress
    lines while the hooks write (single writes of plain numbers)."""

    def __init__(self, seats: int | None = None) -> None:
        self.phase = "validating"
        self.started = time.monotonic()
        self.grading_started: float | None = None
        self.rows_total: int | None = None
        self.rows_done = 0
        self.rows_seen = 0  # rows whose votes the hooks reported (on_row_graded)
        self.votes = {1: 0, 2: 0}
        self.seats = seats
        self.vendors: dict[str, VendorProgress] = {}
        self.batches: dict[str, list[dict[str, Any]]] = {}  # vendor -> its open batches (the batch transport)

    def hooks(self) -> RunHooks:
        return RunHooks(on_start=self.on_start, on_progress=self.on_progress, on_record=self.on_record,
                        on_row_graded=self.on_row_graded, on_quota=self.on_quota)

    def vendor(self, name: str) -> VendorProgress:
        return self.vendors.setdefault(name, VendorProgress())

    def on_start(self, total: int) -> None:
        self.rows_total = total
        self.grading_started = time.monotonic()
        self.phase = "grading"

    def on_progress(self, done: int) -> None:
        self.rows_done += done
        if self.rows_total is not None and self.rows_done >= self.rows_total:
            self.phase = "scoring"

    def on_record(self, record: JudgeCallRecord) -> None:
        v = self.vendor(record.member)
        v.votes += 1
        v.retries += max(0, record.attempts - 1)
        v.spend_usd += record.cost_usd or 0.0
        v.errors += record.error is not None
        if record.request_id != v.last_request:  # the votes of one batched request are archived together
            v.requests += 1
            v.last_request = record.request_id
        if not record.shadow and record.audit_of is None:
            self.votes[record.round] = self.votes.get(record.round, 0) + 1

    def on_row_graded(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        self.rows_seen += 1
        for member in {r.member for r in records if not r.shadow and r.audit_of is None}:
            self.vendor(member).rows_sat += 1

    def on_quota(self, stats: dict[str, dict]) -> None:
        for name, report in (stats or {}).items():
            if not isinstance(report, dict):
                continue
            v = self.vendor(name)
            requests = report.get("requests", report.get("granted_requests"))
            if isinstance(requests, int):
                v.quota_requests = requests
            limited = report.get("rate_limited")
            if isinstance(limited, int):
                v.rate_limited = limited
            if isinstance(report.get("open_batches"), list):
                self.batches[name] = report["open_batches"]

    # -- what is shown --

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def phase_label(self) -> str:
        if self.phase != "grading" or not any(self.votes.values()):  # a sharded run reports rows, not votes
            return self.phase
        expected = self.expected_votes()
        if expected and self.votes[1] >= expected:
            return "grading round 2"
        return "grading round 1" if not self.votes[2] else "grading rounds 1 and 2"

    def expected_votes(self) -> int | None:
        """Votes per round a full run needs: rows x seats (every row has the same panel size)."""
        return self.rows_total * self.seats if self.rows_total and self.seats else None

    def eta(self) -> float | None:
        if not self.rows_total or not self.rows_done or self.grading_started is None:
            return None
        rate = self.rows_done / max(1e-6, time.monotonic() - self.grading_started)
        return max(0, self.rows_total - self.rows_done) / rate

    def vendor_eta(self, v: VendorProgress) -> float | None:
        """Its share of the rows (the rows it sat on so far) x 2 rounds, less its votes, at its vote rate."""
        if not self.rows_total or not self.rows_seen or not v.votes or self.grading_started is None:
            return None
        expected = 2 * self.rows_total * v.rows_sat / self.rows_seen
        rate = v.votes / max(1e-6, time.monotonic() - self.grading_started)
        return max(0.0, expected - v.votes) / rate

    def spend(self) -> float:
        return sum(v.spend_usd for v in self.vendors.values())

    def rounds_text(self) -> str:
        if not any(self.votes.values()):
            return ""
        expected = self.expected_votes()
        of = f"/{expected:,}" if expected else ""
        return f"round 1 {self.votes[1]:,}{of}, round 2 {self.votes[2]:,}{of} votes"

    def rows_text(self) -> str:
        if self.rows_total is None:
            return "-"
        share = f" ({100 * self.rows_done / self.rows_total:.0f}%)" if self.rows_total else ""
        return f"{self.rows_done:,}/{self.rows_total:,} rows{share}"

    def vendor_rows(self) -> list[list[str]]:
        return [[name, f"{v.quota_requests if v.quota_requests is not None else v.requests:,}", f"{v.rate_limited:,}",
                 f"{v.retries:,}", f"{v.errors:,}", usd(v.spend_usd), clock(self.vendor_eta(v))]
                for name, v in sorted(self.vendors.items())]

    def line(self) -> str:
        """One plain progress line."""
        parts = [f"[{clock(self.elapsed())}] {self.phase_label()}"]
        if self.rows_total is not None:
            rounds = f"; {self.rounds_text()}" if self.rounds_text() else ""
            parts.append(f"{self.rows_text()}, ETA {clock(self.eta())}{rounds}; spent {usd(self.spend())}")
        vendors = "; ".join(f"{name} {req} req, {limited} 429s, {retries} retries, {spend}, ETA {eta}"
                            for name, req, limited, retries, _, spend, eta in self.vendor_rows())
        batches = "; ".join(f"{vendor} {batch} {status} {done}, age {age}, ends in {ends}"
                            for vendor, batch, status, done, age, ends in self.batch_rows())
        return ": ".join(parts) + (f" | {vendors}" if vendors else "") + (f" | batches: {batches}" if batches else "")

    def batch_rows(self) -> list[list[str]]:
        return batch_rows([b for open_ in self.batches.values() for b in open_])

    def render(self) -> Any:
        """The live display: the phase line, then a table of vendors."""
        head = Text(f"{self.phase_label()}  {clock(self.elapsed())}", style="bold")
        if self.rows_total is not None:
            head.append(f"   {self.rows_text()}   ETA {clock(self.eta())}   {self.rounds_text()}   "
                        f"spent {usd(self.spend())}", style="")
        if not self.vendors:
            return head
        table = Table(box=None, padding=(0, 2), show_edge=False)
        for i, col in enumerate(("vendor", "requests", "429s", "retries", "errors", "spend", "ETA")):
            table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
        for row in self.vendor_rows():
            table.add_row(*row)
        rows = self.batch_rows()
        if not rows:
            return Group(head, table)
        waiting = Table(box=None, padding=(0, 2), show_edge=False, title="batches", title_justify="left")
        for i, col in enumerate(HEADER):
            waiting.add_column(col, justify="left" if i < 3 else "right", overflow="fold")
        for row in rows:
            waiting.add_row(*row)
        return Group(head, table, waiting)


class ProgressDisplay:
    """The board on stderr while a run goes on: a live display on a terminal, else one plain line every
    ``every`` seconds (none when ``every`` is 0)."""

    def __init__(self, board: RunBoard, every: float) -> None:
        self.board = board
        self.every = every
        self.live: Live | None = None
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()

    def __enter__(self) -> ProgressDisplay:
        if drawn(console):
            # Not redirecting stdout / stderr: the driver may repoint stderr (council.cluster.raycluster).
            self.live = Live(console=console, get_renderable=self.board.render, refresh_per_second=4,
                             transient=False, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        elif self.every > 0:
            self.thread = threading.Thread(target=self._lines, name="council-progress", daemon=True)
            self.thread.start()
        return self

    def _lines(self) -> None:
        while not self.stopped.wait(self.every):
            say(self.board.line(), to=console, markup=False)

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        if self.live is not None:
            self.live.stop()
        if self.thread is not None:
            self.thread.join(timeout=1)


def job_progress(job_id: str, *, disable: bool) -> Progress:
    """The bar on stderr of a service job's verdicts as they come: rows received of the job's rows, time taken."""
    return Progress(TextColumn(f"[bold]{job_id}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                    TimeElapsedColumn(), console=console, disable=disable)
