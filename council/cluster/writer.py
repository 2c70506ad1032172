"""The run's writer: the one process that appends to a sharded run's archive, on the node that holds the
run folder. Shard workers anywhere in the cluster send it their records in batches and ask it, chunk by
chunk, which votes are already archived (read back through the archive index, never held in memory).

Plain Python; the Ray actor in :mod:`council.cluster.actors` is a shell over it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from council.core.schema import JudgeCallRecord
from council.grading.coordinator import VoteKey
from council.store.runfolder import ArchiveIndex, RunFolder


class RunWriter:
    def __init__(self, path: str | Path, members: list[str]) -> None:
        self.folder = RunFolder.open(Path(path))
        self.folder.drop_torn_tails()
        self.index = ArchiveIndex.build(self.folder.path)
        self.folder.attach(self.index)  # every record appended from now on is found by the index too
        self._members = list(members)
        self._refused = set(self.folder.read_refused())
        self._audited: dict[str, list[VoteKey]] = defaultdict(list)  # row -> votes whose batch audit is archived
        for record in self.folder.read_audit():
            self._audited[record.row_id].append((record.row_id, record.member, record.round))
        self.written = 0

    def write(self, records: list[JudgeCallRecord], refusals: list[tuple[str, str]]) -> int:
        """Append a batch of records (and rows refused before any call); returns the records written so far."""
        self.folder.append_many(records)
        for record in records:
            if record.audit_of:
                self._audited[record.row_id].append((record.row_id, record.member, record.round))
        for row_id, reason in refusals:
            if row_id not in self._refused:
                self._refused.add(row_id)
                self.folder.refuse(row_id, reason)
        self.written += len(records)
        return self.written

    def archived(self) -> dict[str, float]:
        """What the archive holds now: results indexed and their cost."""
        return {"votes": len(self.index), "cost_usd": self.index.cost_usd}

    def fetch(self, row_ids: list[str]) -> tuple[list[JudgeCallRecord], list[VoteKey]]:
        """The archived results of every vote of these rows (both rounds and shadow votes; an error is not a
        result), and the votes among them whose batch audit is archived."""
        found = []
        for row_id in row_ids:
            for member in self._members:
                for round_ in (1, 2):
                    record = self.index.get((row_id, member, round_))
                    if record is not None:
                        found.append(record)
        audited = [key for row_id in row_ids for key in self._audited.get(row_id, ())]
        return found, audited

    def close(self) -> None:
        self.index.close()
        self.folder.close()
