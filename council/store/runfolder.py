"""The run folder: ``runs/<run_id>/``, written ahead and never overwritten.

Every judge-call record is appended and flushed the moment it returns, before anything scores it.
JSON documents are written atomically (temporary file, then rename). A folder created with ``compress``
keeps its record archives and ``rows.jsonl`` zstd-compressed (see :mod:`council.store.archive`); every reader
reads both forms. The names of its files: :mod:`council.store.files`; the index of its archived votes, by which a
resumed run finds them: :mod:`council.store.archive_index`.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from council.core.errors import RunFolderError
from council.core.schema import ElicitedRecord, JudgeCallRecord
from council.store import archive
from council.store.archive_index import ArchiveIndex
from council.store.files import (  # noqa: F401 - the names of the folder's files, imported from here by most code
    ARCHIVES, AUDIT, ELICITED, ITEMS, LOG, MANIFEST, REFUSED, ROUND_FILES, ROWS, SHADOW, STATE, SUMMARY, VERDICTS,
)
from council.store.lock import LOCK, RunLock, busy_message, writer_of

M = TypeVar("M", bound=BaseModel)


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
