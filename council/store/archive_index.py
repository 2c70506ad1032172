"""The index of a run folder's archived votes (:class:`ArchiveIndex`), by which a resumed run finds each vote's
archived result without holding the records: read back from disk only when the vote comes up."""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any

import orjson

from council.core.errors import RunFolderError
from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.store import archive
from council.store.files import ROUND_FILES, SHADOW


VoteKey = tuple[str, str, int]  # (row_id, member, round)
_vote_hash = hash  # 64 bits, within one process; a collision is resolved by the full key


def _line_at(handle: IO[bytes], offset: int) -> bytes:
    """The line at byte ``offset``, read without moving the handle (a build may be reading through it)."""
    chunks = []
    while True:
        block = os.pread(handle.fileno(), 1 << 16, offset)
        newline = block.find(b"\n")
        if newline >= 0 or not block:
            chunks.append(block[: newline + 1] if newline >= 0 else block)
            return b"".join(chunks)
        chunks.append(block)
        offset += len(block)


class ArchiveIndex:
    """Where the archived result of each vote is, for a resumed run: (row_id, member, round) -> the round file
    (or shadow file) and the location of its record (a line of a frame of its ``.zst``, or a byte offset in
    its plain tail), which is read back from disk only when the vote comes up.

    As the archive is read, a later record of a vote supersedes an earlier one, and an error is not a result
    (it is left out, so the vote is asked again). Each vote takes one dict entry keyed by a 64-bit hash; two
    votes whose hashes collide are kept apart by their full keys. The plain tails are read through the
    handles opened when the index was built, so a compaction by another folder object does not move them;
    a folder the index is attached to (:meth:`RunFolder.attach`) keeps it current as it appends."""

    FILES = (ROUND_FILES[1], ROUND_FILES[2], SHADOW)
    FRAME_CACHE = 4  # decompressed frames kept for reading records back

    def __init__(self, path: Path) -> None:
        self.path = path
        self._where: dict[int, int] = {}  # hash of the vote -> location << 2 | file code
        self._overflow: dict[VoteKey, int] = {}  # votes whose hash another vote took first
        self._in_tail: dict[int, array[int]] = {}  # file code -> hashes of votes entered with a tail location
        self._tails: dict[int, IO[bytes]] = {}
        self._zsts: dict[int, IO[bytes]] = {}
        self._frames: OrderedDict[tuple[int, int], list[bytes]] = OrderedDict()
        self.cost_usd = 0.0  # the cost of the records indexed

    @classmethod
    def build(cls, path: Path) -> ArchiveIndex:
        index = cls(path)
        for code, name in enumerate(cls.FILES):
            file = path / name
            if not archive.exists(file):
                continue
            tail = None
            if file.is_file():
                tail = index._tails[code] = open(file, "rb")
            for loc, line in archive.iter_located(file, tail):
                if not line.strip():
                    continue
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    if not line.endswith(b"\n"):
                        break  # a torn last line
                    raise RunFolderError(f"{file}: bad record at {archive.describe(loc)}: {exc}") from exc
                if rec.get("parse_status") == "error":
                    continue
                index._put((rec["row_id"], rec["member"], rec["round"]), loc << 2 | code, rec.get("cost_usd") or 0.0)
        return index

    def _put(self, key: VoteKey, where: int, cost: float) -> None:
        h = _vote_hash(key)
        if not (where >> 2) & 1:
            self._in_tail.setdefault(where & 3, array("q")).append(h)
        old = self._overflow.get(key)
        if old is None:
            held = self._where.get(h)
            if held is not None:
                record = self._read(held)
                if (record.row_id, record.member, record.round) != key:  # another vote has this hash
                    self._overflow[key] = where
                    self.cost_usd += cost
                    return
                self.cost_usd -= record.cost_usd
            self._where[h] = where
        else:
            self.cost_usd -= self._read(old).cost_usd
            self._overflow[key] = where
        self.cost_usd += cost

    def get(self, key: VoteKey) -> JudgeCallRecord | None:
        where = self._overflow.get(key) if self._overflow else None
        if where is None:
            where = self._where.get(_vote_hash(key))
            if where is None:
                return None
        record = self._read(where)
        return record if (record.row_id, record.member, record.round) == key else None

    def __len__(self) -> int:
        return len(self._where) + len(self._overflow)

    def _read(self, where: int) -> JudgeCallRecord:
        code = where & 3
        frame, at = archive.split_location(where >> 2)
        if frame is None:
            handle = self._tails.get(code)
            if handle is None:
                handle = self._tails[code] = open(self.path / self.FILES[code], "rb")
            line = _line_at(handle, at)
        else:
            line = self._frame(code, frame)[at]
        return JudgeCallRecord.model_validate(orjson.loads(line))

    def _frame(self, code: int, offset: int) -> list[bytes]:
        lines = self._frames.get((code, offset))
        if lines is not None:
            self._frames.move_to_end((code, offset))
            return lines
        handle = self._zsts.get(code)
        if handle is None:
            handle = self._zsts[code] = open(archive.zst_path(self.path / self.FILES[code]), "rb")
        lines = archive.read_frame(handle, offset).splitlines(keepends=True)
        self._keep(code, offset, lines)
        return lines

    def _keep(self, code: int, offset: int, lines: list[bytes]) -> None:
        self._frames[(code, offset)] = lines
        while len(self._frames) > self.FRAME_CACHE:
            self._frames.popitem(last=False)

    # Kept current by an attached RunFolder.

    def _appended(self, name: str, start: int, records: list[JudgeCallRecord | ElicitedRecord],
                  lines: list[bytes]) -> None:
        """``records`` were appended to the tail of ``name`` at byte ``start``, one line each."""
        if name not in self.FILES:
            return
        code = self.FILES.index(name)
        for record, line in zip(records, lines, strict=True):
            if isinstance(record, JudgeCallRecord) and record.parse_status != "error":
                self._put((record.row_id, record.member, record.round),
                          archive.tail_location(start) << 2 | code, record.cost_usd)
            start += len(line)

    def _moved_to_frame(self, name: str, frame_offset: int, content: bytes) -> None:
        """The first ``len(content)`` bytes of the tail of ``name`` are the frame at ``frame_offset`` now, and
        the tail is a new file holding the rest (a compaction, or a repair after one that was cut short)."""
        if name not in self.FILES:
            return
        code = self.FILES.index(name)
        lines = content.splitlines(keepends=True)
        number, pos = {}, 0
        for n, line in enumerate(lines):
            number[pos] = n
            pos += len(line)

        def moved(at: int) -> int:
            if at >= len(content):
                return archive.tail_location(at - len(content))
            if at not in number:
                raise RunFolderError(f"{self.path / name}: the index points at byte {at} of a tail that has no "
                                     "line there (built before the archive was repaired?)")
            return archive.frame_location(frame_offset, number[at])

        self._move(code, moved)
        self._drop_tail(code)
        self._keep(code, frame_offset, lines)

    def _move(self, code: int, moved: Any) -> None:
        """Re-point every entry at a tail location of file ``code`` to ``moved(byte offset)``."""
        def update(where: int) -> int:
            frame, at = archive.split_location(where >> 2)
            return where if where & 3 != code or frame is not None else moved(at) << 2 | code

        hashes, still = set(self._in_tail.pop(code, ())), array("q")
        for h in hashes:
            where = self._where.get(h)
            if where is not None:
                self._where[h] = where = update(where)
                if where & 3 == code and not (where >> 2) & 1:
                    still.append(h)
        for key, where in self._overflow.items():
            self._overflow[key] = update(where)
        if still:
            self._in_tail[code] = still

    def _drop_tail(self, code: int) -> None:
        handle = self._tails.pop(code, None)
        if handle is not None:
            handle.close()

    def close(self) -> None:
        for handle in (*self._tails.values(), *self._zsts.values()):
            handle.close()
        self._tails.clear()
        self._zsts.clear()
        self._frames.clear()
