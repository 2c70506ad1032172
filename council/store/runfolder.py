"""The run folder: ``runs/<run_id>/``, written ahead and never overwritten.

Every judge-call record is appended and flushed the moment it returns, before anything scores it.
JSON documents are written atomically (temporary file, then rename). A folder created with ``compress``
keeps its record archives and ``rows.jsonl`` zstd-compressed (see :mod:`council.store.archive`); every reader
reads both forms.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from council.core.errors import RunFolderError
from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.store import archive
from council.store.lock import LOCK, RunLock, busy_message, writer_of

M = TypeVar("M", bound=BaseModel)

MANIFEST = "manifest.json"
ROWS = "rows.jsonl"
ITEMS = "items.jsonl"
ROUND_FILES = {1: "round1.jsonl", 2: "round2.jsonl"}
SHADOW = "shadow.jsonl"
AUDIT = "audit.jsonl"
REFUSED = "refused.jsonl"  # rows refused before any call (too large for the limits or a judge's context)
STATE = "state.json"  # running (or crashed), finished, or stopped (budget, interrupt, terminate, error)
ELICITED = "elicited.jsonl"
VERDICTS = "verdicts.jsonl"
SUMMARY = "summary.json"
LOG = "log.jsonl"
ARCHIVES = (*ROUND_FILES.values(), SHADOW, AUDIT, ELICITED)  # append-only record files, compressed with the folder


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def dump_line(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


MAX_RUN_ID = 128


def run_path(runs_dir: str | os.PathLike[str], run_id: str) -> Path:
    """``runs_dir / run_id``, or :class:`RunFolderError` when ``run_id`` is not a plain folder name that stays
    inside ``runs_dir``.

    A run id is refused when it is empty, longer than :data:`MAX_RUN_ID` characters, an absolute path, holds
    ``/``, ``\\``, ``..``, NUL or another control character, starts with ``.`` or ``-``, or when the folder it
    names resolves (following symlinks, the runs root's own included) outside the runs root. The path returned
    is not resolved: a run's folder name stays its id.
    """
    problem = run_id_problem(run_id)
    if problem:
        raise RunFolderError(f"invalid run id {_shown(run_id)}: {problem}")
    root = Path(runs_dir)
    path = root / run_id
    try:
        real_root = root.resolve()
        real_path = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise RunFolderError(f"invalid run id {_shown(run_id)}: cannot resolve {path}: {exc}") from exc
    if real_path == real_root or not real_path.is_relative_to(real_root):
        raise RunFolderError(f"invalid run id {_shown(run_id)}: {path} resolves to {real_path}, which is not "
                             f"inside the runs folder {real_root}")
    return path


def _shown(run_id: object) -> str:
    text = repr(run_id)
    return text if len(text) <= 60 else text[:48] + "...' (" + str(len(run_id)) + " chars)"  # type: ignore[arg-type]


def run_id_problem(run_id: object) -> str | None:
    """Why ``run_id`` cannot name a run folder, or None when it can (see :func:`run_path`)."""
    if not isinstance(run_id, str):
        return f"must be a string, not {type(run_id).__name__}"
    if not run_id:
        return "must not be empty"
    if len(run_id) > MAX_RUN_ID:
        return f"longer than {MAX_RUN_ID} characters ({len(run_id)})"
    if len(run_id.encode("utf-8", "surrogatepass")) > 255:
        return "longer than 255 bytes in UTF-8 (the longest folder name a file system takes)"
    if run_id.startswith(("/", "\\")) or (len(run_id) >= 2 and run_id[1] == ":" and run_id[0].isascii()
                                          and run_id[0].isalpha()):
        return "must be a folder name, not an absolute or drive path"
    for char in run_id:
        if char == "\0":
            return "must not contain NUL"
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"must not contain control characters (U+{ord(char):04X})"
    if "/" in run_id or "\\" in run_id:
        return "must be a folder name, without '/' or '\\'"
    if ".." in run_id:
        return "must not contain '..'"
    if run_id.startswith("."):
        return "must not start with '.'"
    if run_id.startswith("-"):
        return "must not start with '-'"
    return None


@dataclass
class _Tail:
    handle: IO[bytes]
    size: int  # bytes in the plain file
    lines: int  # lines in it, for the frame threshold


class RunFolder:
    """A run folder. With ``compress``, the record archives (:data:`ARCHIVES`) keep their history in
    ``NAME.zst`` frames and ``rows.jsonl`` is written as ``rows.jsonl.zst``."""

    def __init__(self, path: Path, *, compress: bool = False) -> None:
        self.path = path
        self.compress = compress
        self.lock: RunLock | None = None  # held while this process writes the run (create, resume)
        self.recovered = False  # made over a half-created folder a killed run left (no manifest: nothing paid)
        self._tails: dict[str, _Tail] = {}
        self._repaired: set[str] = set()  # archives made appendable since opened (see :meth:`drop_torn_tails`)
        self._index: ArchiveIndex | None = None

    @classmethod
    def create(cls, runs_dir: Path, run_id: str, *, compress: bool = False, command: str = "") -> RunFolder:
        """A new, empty run folder ``runs_dir/run_id`` (see :func:`run_path` for the ids allowed), its lock held by
        this process (:mod:`council.store.lock`). A folder of that name that a killed run left half-created (no
        manifest, so no call was made; no live writer) is replaced (``recovered``); any other is never overwritten."""
        path = run_path(runs_dir, run_id)
        recovered = half_created(path)
        if recovered:
            shutil.rmtree(path)
        exists = RunFolderError(f"run folder {path} already exists: a run is never overwritten; re-grading is a new "
                                "run (pass another --run-id)")
        if path.exists() or path.is_symlink():
            raise exists
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
        except FileExistsError:
            raise exists from None
        except OSError as exc:
            raise RunFolderError(f"cannot create run folder {path}: {exc.strerror or exc}") from exc
        folder = cls(path, compress=compress)
        folder.lock, folder.recovered = RunLock.take(path, command), recovered
        return folder

    @classmethod
    def open_to_write(cls, runs_dir: Path, run_id: str, command: str = "") -> RunFolder:
        """The existing run ``run_id``, to be written by this process alone (a resume, a rescore): its lock taken,
        or :class:`RunFolderError` naming the process that writes it."""
        folder = cls.open_run(runs_dir, run_id)
        folder.lock = RunLock.take(folder.path, command)
        return folder

    def release(self) -> None:
        """Give up the folder's lock (another process may write it from now on)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        """The run folder at ``path``, which must hold a manifest; ``compress`` is set when it holds a
        compressed archive. A run named by its id is opened with :meth:`open_run`, which keeps it inside the
        runs root."""
        path = Path(path)
        if not path.is_dir():
            why = "not a folder" if path.exists() else "no such folder"
            raise RunFolderError(f"{path} is not a run folder ({why})")
        if not (path / MANIFEST).is_file():
            writer = writer_of(path)
            if writer is not None:
                raise RunFolderError(f"{busy_message(path, writer)} (it is being created)")
            if half_created(path):
                raise RunFolderError(f"run {path.name} was killed before it began (no {MANIFEST}: no call was made, "
                                     f"nothing was paid): start it again with `council run --run-id {path.name}` and "
                                     f"its options, which replaces the half-made folder")
            raise RunFolderError(f"{path} is not a run folder (no {MANIFEST})")
        return cls(path, compress=any(path.glob("*.jsonl" + archive.ZST)))

    @classmethod
    def open_run(cls, runs_dir: Path, run_id: str) -> RunFolder:
        """The existing run ``run_id`` under ``runs_dir`` (``--resume``, ``--reuse-from``, ``rescore``, ``diff``)."""
        return cls.open(run_path(runs_dir, run_id))

    def write_json(self, name: str, obj: Any) -> None:
        self.write_bytes(name, dump_json(obj))

    def write_bytes(self, name: str, data: bytes) -> None:
        target = self.path / name
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def write_lines(self, name: str, records: Iterable[BaseModel]) -> int:
        """Write ``records`` one line each, streamed to a temporary file that then takes the name; returns how
        many were written. With ``compress``, ``rows.jsonl`` is written as ``rows.jsonl.zst`` instead."""
        target = self.path / name
        packed = self.compress and name == ROWS
        final = archive.zst_path(target) if packed else target
        tmp = final.with_name(final.name + ".tmp")
        lines = (dump_line(record.model_dump(mode="json")) for record in records)
        with open(tmp, "wb") as handle:
            if packed:
                count = archive.write_frames(handle, lines)
            else:
                count = 0
                for line in lines:
                    handle.write(line)
                    count += 1
        os.replace(tmp, final)
        if name == ROWS:  # the other form, from an earlier write, would be read as well
            (target if packed else archive.zst_path(target)).unlink(missing_ok=True)
        return count

    def read_json(self, name: str) -> Any:
        try:
            return orjson.loads((self.path / name).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise RunFolderError(f"{self.path / name}: {exc}") from exc

    def attach(self, index: ArchiveIndex) -> None:
        """Keep ``index`` (built from this folder) current: every record appended from now on is entered in
        it, and entries a compaction moves into a frame are re-pointed."""
        if Path(index.path).resolve() != self.path.resolve():
            raise ValueError(f"the index of {index.path} cannot follow the run folder {self.path}")
        self._index = index

    def append(self, record: JudgeCallRecord | ElicitedRecord) -> None:
        """Append one judge-call record to its round file (shadow and audit votes to their own) and flush it."""
        self.append_many((record,))

    def append_many(self, records: Iterable[JudgeCallRecord | ElicitedRecord]) -> None:
        """Append records as :meth:`append` does, with one write and one flush per archive file."""
        batches: dict[str, list[JudgeCallRecord | ElicitedRecord]] = {}
        for record in records:
            name = (ELICITED if isinstance(record, ElicitedRecord) else SHADOW if record.shadow
                    else AUDIT if record.audit_of else ROUND_FILES[record.round])
            batches.setdefault(name, []).append(record)
        for name, batch in batches.items():
            lines = [dump_line(record.model_dump(mode="json")) for record in batch]
            start = self._write(name, lines)
            if self._index is not None:
                self._index._appended(name, start, batch, lines)
            tail = self._tails[name]
            if self.compress and (tail.lines >= archive.FRAME_LINES or tail.size >= archive.FRAME_BYTES):
                self._compact(name)

    def _write(self, name: str, lines: list[bytes]) -> int:
        """Append ``lines`` to the plain file ``name`` in one write and flush; returns where they start."""
        tail = self._tail(name)
        start = tail.size
        try:
            tail.handle.write(b"".join(lines))
            tail.handle.flush()
        except BaseException:
            self._tails.pop(name).handle.close()
            self._repaired.discard(name)  # a torn line is cut before the next append
            raise
        tail.size += sum(map(len, lines))
        tail.lines += len(lines)
        return start

    def _tail(self, name: str) -> _Tail:
        tail = self._tails.get(name)
        if tail is None:
            path = self.path / name
            if name not in self._repaired:
                self._repair(name)
            handle = open(path, "ab")
            size = handle.seek(0, os.SEEK_END)
            lines = 0
            if self.compress and name in ARCHIVES:
                archive.zst_path(path).touch()  # marks the run as compressed from its first record on
                lines = path.read_bytes().count(b"\n") if 0 < size < archive.FRAME_BYTES else 0
            tail = self._tails[name] = _Tail(handle, size, lines)
        return tail

    def _repair(self, name: str) -> None:
        dropped = archive.repair(self.path / name)
        self._repaired.add(name)
        if dropped is not None and self._index is not None:
            self._index._moved_to_frame(name, *dropped)

    def _compact(self, name: str) -> None:
        tail = self._tails.pop(name)
        try:
            tail.handle.flush()
            os.fsync(tail.handle.fileno())
            done = archive.compact(self.path / name)
        except BaseException:
            self._repaired.discard(name)  # a torn frame is cut before the next append
            raise
        finally:
            tail.handle.close()
        if done is not None and self._index is not None:
            self._index._moved_to_frame(name, *done)

    def close(self) -> None:
        """Close the files; with ``compress``, each archive's tail is first compressed into a frame."""
        try:
            for name in list(self._tails):
                if self.compress and name in ARCHIVES:
                    self._compact(name)
        finally:
            for tail in self._tails.values():
                tail.handle.close()
            self._tails.clear()

    def drop_torn_tails(self) -> None:
        """Cut what a crash mid-write leaves off the archives, so appending can go on: a torn last line, and
        in a compressed archive a torn last frame or a tail that repeats the last frame."""
        for name in (*ARCHIVES, REFUSED):
            tail = self._tails.pop(name, None)
            if tail is not None:
                tail.handle.close()
            self._repair(name)

    def read_records(self, round_: int) -> list[JudgeCallRecord]:
        return read_jsonl(self.path / ROUND_FILES[round_], JudgeCallRecord, missing_ok=True)

    def read_shadow(self) -> list[JudgeCallRecord]:
        return read_jsonl(self.path / SHADOW, JudgeCallRecord, missing_ok=True)

    def refuse(self, row_id: str, reason: str) -> None:
        """Record that a row was refused before any call was made (and why), flushed at once."""
        self._write(REFUSED, [dump_line({"row_id": row_id, "reason": reason})])

    def read_refused(self) -> dict[str, str]:
        """Refused rows: row id -> reason."""
        refused: dict[str, str] = {}
        if not archive.exists(self.path / REFUSED):
            return refused
        for line in archive.iter_lines(self.path / REFUSED):
            if not line.endswith(b"\n"):
                break  # a torn last line (a crash mid-write)
            record = orjson.loads(line) if line.strip() else None
            if record:
                refused[record["row_id"]] = record["reason"]
        return refused

    def write_state(self, state: str, reason: str | None = None, detail: str | None = None, **extra: Any) -> None:
        self.write_json(STATE, {"state": state, "reason": reason, "detail": detail, **extra})

    def read_state(self) -> dict[str, Any]:
        """The run's state; a folder without one is from before states were kept, or never started."""
        if not (self.path / STATE).is_file():
            return {"state": "unknown", "reason": None, "detail": None}
        return self.read_json(STATE)

    def read_audit(self) -> list[JudgeCallRecord]:
        return read_jsonl(self.path / AUDIT, JudgeCallRecord, missing_ok=True)

    def read_elicited(self) -> list[ElicitedRecord]:
        return read_jsonl(self.path / ELICITED, ElicitedRecord, missing_ok=True)


def half_created(path: Path) -> bool:
    """Whether ``path`` is a run folder a killed run left before its manifest was written (so before any call was
    made): a folder, no manifest, nothing but what a run writes first (its lock, its rows), and no live writer."""
    if not path.is_dir() or path.is_symlink() or (path / MANIFEST).exists():
        return False
    early = {LOCK, ROWS, ROWS + archive.ZST, ROWS + ".tmp", ROWS + archive.ZST + ".tmp"}
    return all(p.name in early for p in path.iterdir()) and writer_of(path) is None


def read_jsonl(path: Path, model: type[M], *, missing_ok: bool = False, context: dict | None = None) -> list[M]:
    """Records of a JSONL file (plain or compressed, see :mod:`council.store.archive`). A torn last line (a crash
    mid-write) is ignored; any other bad line is an error. ``context`` is pydantic's validation context (the
    run's vendor map, for response rows)."""
    return list(iter_jsonl(path, model, missing_ok=missing_ok, context=context))


def iter_jsonl(path: Path, model: type[M], *, missing_ok: bool = False, context: dict | None = None) -> Iterator[M]:
    """:func:`read_jsonl` one record at a time, without reading the whole file."""
    for number, obj in iter_json(path, missing_ok=missing_ok):
        try:
            yield model.model_validate(obj, context=context)
        except ValidationError as exc:
            raise RunFolderError(f"{path}:{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc


def iter_json(path: Path, *, missing_ok: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each line of a JSONL file, plain or compressed. A torn last line (a crash
    mid-write) is left out; any other bad line is an error."""
    if not archive.exists(path):
        if missing_ok:
            return
        raise RunFolderError(f"{path}: file not found")
    for number, line in enumerate(archive.iter_lines(path), start=1):
        if not line.strip():
            continue
        try:
            yield number, orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.endswith(b"\n"):  # the torn last line of a crash mid-write
                return
            raise RunFolderError(f"{path}:{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc


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
