"""The run folder's record of its batches (``batches.jsonl``), written before the run moves on.

One JSON line per event, appended and flushed to disk (``fsync``) before the step that depends on it:

- ``intent``: a batch about to be created: our id for it (``local``), the vendor, API and model, the custom ids of
  its requests (``keys``) and, for each request, the votes it asks for in key order (``packs``: custom id ->
  ``[[request key, row id], ...]``; a request packs several rows as a synchronous request does). Written before the
  upload, so a run killed between the provider's answer and the next line still knows which votes may be in a
  batch it never heard back about. (A journal written before requests were packed has no ``packs``: each custom id
  is then the request key of its one vote.)
- ``submitted``: the provider's batch id and input file id (OpenAI) for a ``local`` batch.
- ``ended``: how the batch ended (the provider's status), its result files (OpenAI) and counts.
- ``gone``: an intent whose batch the provider does not have (never created), or a batch it no longer knows
  (404, as after a restart of the embedded provider): its keys may be sent again.

A sharded run (``--shards``) journals each shard worker's batches in a folder of its own (``shards/<i>/``, see
:func:`council.cluster.shard.batching_pool`); a journal opened with ``siblings`` reads the run's other journals
too (never writing to them), so a chunk of rows resumed on another worker, or without shards, finds the batches
that hold its votes.

A torn last line (a crash mid-write) is dropped when the journal is read. :class:`Journal` replays the lines
into one :class:`BatchEntry` per local batch, and the votes of the journal it found into :attr:`Journal.votes`
(where a resumed run finds each vote's request); the packs of the batches it writes stay on disk only.
:func:`write_status` keeps a snapshot of every batch's last poll (``batches.json``) that ``council show`` reads
without a call.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from council.store.archive import cut_torn_line

JOURNAL = "batches.jsonl"
STATUS = "batches.json"
SHARDS = "shards"  # a sharded run's folder of the shard workers' journals, one folder each


@dataclass(slots=True)
class BatchEntry:
    """What the run folder knows of one batch."""

    local: str
    vendor: str
    api: str
    model: str
    keys: list[str]
    intent_at: float
    tokens: int = 0  # prompt tokens enqueued (estimated), for the vendor's queue limit
    batch_id: str | None = None
    input_file_id: str | None = None
    submitted_at: float | None = None
    status: str | None = None  # the provider's status at the last poll
    ended_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    gone: bool = False
    created_at: float | None = None  # the provider's creation time (Unix)
    expected_end: float | None = None  # when it should end, from its progress (Unix)
    errors: list[str] = field(default_factory=list)

    @property
    def open(self) -> bool:
        """Submitted and neither ended nor gone: its keys may still succeed."""
        return self.batch_id is not None and self.ended_at is None and not self.gone

    @property
    def unconfirmed(self) -> bool:
        """An intent with no batch id on record: the provider may or may not have created it."""
        return self.batch_id is None and not self.gone


class Journal:
    """``batches.jsonl`` of one run folder: read once when opened, appended to as batches move on."""

    def __init__(self, folder: Path, *, readonly: bool = False, siblings: list[Path] = ()) -> None:
        self.path = Path(folder) / JOURNAL
        self.status_path = Path(folder) / STATUS
        self.entries: dict[str, BatchEntry] = {}
        self.readonly = readonly
        # the votes of the batches an earlier process announced: request key -> (custom id, position); and each
        # packed custom id's rows, in key order
        self.votes: dict[str, tuple[str, int]] = {}
        self.rows: dict[str, list[str]] = {}
        for sibling in siblings:  # the run's other journals first: this one's events may follow theirs
            if (Path(sibling) / JOURNAL).is_file():
                self._replay((Path(sibling) / JOURNAL).read_bytes(), None)
        if self.path.is_file():
            self._replay(self.path.read_bytes(), None if readonly else self.path)
        self._handle = None

    def _replay(self, data: bytes, own: Path | None) -> None:
        lines = data.split(b"\n")
        if data and not data.endswith(b"\n"):
            lines = lines[:-1]  # a torn last line: its step never happened as far as the run knows
            if own is not None:
                cut_torn_line(own)
        for line in lines:
            if line.strip():
                self._apply(orjson.loads(line), index=True)

    def _apply(self, event: dict[str, Any], *, index: bool = False) -> None:
        kind = event.pop("event")
        if kind == "intent":
            packs = event.pop("packs", None) or {}
            self.entries[event["local"]] = BatchEntry(**event)
            for cid, members in packs.items() if index else ():
                self.rows[cid] = [row for _, row in members] if len(members) > 1 else []
                for position, (key, _) in enumerate(members):
                    self.votes[key] = (cid, position)
            return
        entry = self.entries.get(event.pop("local"))
        if entry is None:  # a sibling's batch this journal's reader was not given
            return
        if kind == "gone":
            entry.gone = True
            return
        for name, value in event.items():
            setattr(entry, name, value)

    def _write(self, event: dict[str, Any]) -> None:
        if self._handle is None:
            self._handle = open(self.path, "ab")
        self._handle.write(orjson.dumps(event) + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._apply(dict(event))

    def intend(self, local: str, vendor: str, api: str, model: str, keys: list[str], tokens: int,
               packs: dict[str, list[tuple[str, str]]] | None = None) -> BatchEntry:
        event = {"event": "intent", "local": local, "vendor": vendor, "api": api, "model": model, "keys": keys,
                 "intent_at": time.time(), "tokens": tokens}
        self._write(event | ({"packs": packs} if packs else {}))
        return self.entries[local]

    def held(self, key: str) -> tuple[str, int, list[str]] | None:
        """The request of an earlier process that asked for the vote ``key``: its custom id, the vote's position in
        it and its rows in key order ([]: the vote alone); None when no batch of the journal holds the vote."""
        found = self.votes.get(key)
        return None if found is None else (found[0], found[1], self.rows.get(found[0], []))

    def submitted(self, local: str, batch_id: str, input_file_id: str | None, created_at: float | None) -> None:
        self._write({"event": "submitted", "local": local, "batch_id": batch_id, "input_file_id": input_file_id,
                     "submitted_at": time.time(), "created_at": created_at})

    def ended(self, local: str, status: str, counts: dict[str, int], output_file_id: str | None,
              error_file_id: str | None, errors: list[str]) -> None:
        self._write({"event": "ended", "local": local, "status": status, "ended_at": time.time(), "counts": counts,
                     "output_file_id": output_file_id, "error_file_id": error_file_id, "errors": errors})

    def gone(self, local: str) -> None:
        self._write({"event": "gone", "local": local})

    def of(self, vendor: str) -> list[BatchEntry]:
        return [e for e in self.entries.values() if e.vendor == vendor]

    def write_status(self) -> None:
        """Every batch as of its last poll (``batches.json``), replaced whole."""
        data = orjson.dumps({"at": time.time(), "batches": [asdict(e) | {"keys": len(e.keys)}
                                                             for e in self.entries.values()]})
        tmp = self.status_path.with_name(self.status_path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.status_path)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def run_journals(folder: Path) -> list[Path]:
    """The folders of a run's journals: the run folder's own, then each shard worker's (``shards/<i>/``)."""
    shards = Path(folder) / SHARDS
    workers = sorted((p for p in shards.iterdir() if p.is_dir()), key=lambda p: (len(p.name), p.name)) \
        if shards.is_dir() else []
    return [Path(folder), *workers]


def siblings_of(folder: Path) -> list[Path]:
    """The other journal folders of the run whose journal folder is ``folder`` (a run folder, or a shard's)."""
    run = folder.parent.parent if folder.parent.name == SHARDS else folder
    return [p for p in run_journals(run) if p.resolve() != Path(folder).resolve()]


def read_status(folder: Path) -> dict[str, Any] | None:
    """Where a run's batches stand without a call: the journals' batches (the truth of what was created and what
    ended: the run folder's and its shards'), with what the last poll saw of each (``batches.json``: status,
    counts, expected end) and when that poll was (``at``: the latest; None when no poll was recorded). None for a
    run that sent no batch."""
    folders = run_journals(folder)
    journal = Journal(folder, readonly=True, siblings=folders[1:])
    if not journal.entries:
        return None
    snapshot: dict[str, Any] = {"at": None, "batches": []}
    for where in folders:
        path = where / STATUS
        if path.is_file():
            one = orjson.loads(path.read_bytes())
            snapshot["batches"] += one["batches"]
            snapshot["at"] = max(filter(None, (snapshot["at"], one["at"])), default=None)
    polled = {b["local"]: b for b in snapshot["batches"]}
    batches = []
    for entry in journal.entries.values():
        seen = polled.get(entry.local, {})
        row = asdict(entry) | {"keys": len(entry.keys)}
        if entry.ended_at is None:  # the journal says nothing of an open batch's progress: the last poll does
            row |= {k: seen[k] for k in ("status", "counts", "expected_end", "created_at") if seen.get(k) is not None}
        batches.append(row)
    return {"at": snapshot["at"], "batches": batches}
