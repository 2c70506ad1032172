"""The run folder: ``runs/<run_id>/``, written ahead and never overwritten.

Every judge-call record is appended and flushed the moment it returns, before anything scores it.
JSON documents are written atomically (temporary file, then rename).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from council.errors import RunFolderError
from council.schema import ElicitedRecord, JudgeCallRecord

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


class RunFolder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._appenders: dict[str, IO[bytes]] = {}

    @classmethod
    def create(cls, runs_dir: Path, run_id: str) -> RunFolder:
        """A new, empty run folder ``runs_dir/run_id`` (see :func:`run_path` for the ids allowed)."""
        path = run_path(runs_dir, run_id)
        if path.exists() or path.is_symlink():
            raise RunFolderError(f"run folder {path} already exists: a run is never overwritten; "
                                 "re-grading is a new run (pass another --run-id)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
        except FileExistsError:
            raise RunFolderError(f"run folder {path} already exists: a run is never overwritten; "
                                 "re-grading is a new run (pass another --run-id)") from None
        except OSError as exc:
            raise RunFolderError(f"cannot create run folder {path}: {exc.strerror or exc}") from exc
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        """The run folder at ``path``, which must hold a manifest. A run named by its id is opened with
        :meth:`open_run`, which keeps it inside the runs root."""
        path = Path(path)
        if not path.is_dir():
            why = "not a folder" if path.exists() else "no such folder"
            raise RunFolderError(f"{path} is not a run folder ({why})")
        if not (path / MANIFEST).is_file():
            raise RunFolderError(f"{path} is not a run folder (no {MANIFEST})")
        return cls(path)

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
        many were written."""
        target = self.path / name
        tmp = target.with_name(target.name + ".tmp")
        count = 0
        with open(tmp, "wb") as handle:
            for record in records:
                handle.write(dump_line(record.model_dump(mode="json")))
                count += 1
        os.replace(tmp, target)
        return count

    def read_json(self, name: str) -> Any:
        try:
            return orjson.loads((self.path / name).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise RunFolderError(f"{self.path / name}: {exc}") from exc

    def append(self, record: JudgeCallRecord | ElicitedRecord) -> None:
        """Append one judge-call record to its round file (shadow and audit votes to their own) and flush it."""
        name = (ELICITED if isinstance(record, ElicitedRecord) else SHADOW if record.shadow
                else AUDIT if record.audit_of else ROUND_FILES[record.round])
        self._append_line(name, record.model_dump(mode="json"))

    def _append_line(self, name: str, obj: Any) -> None:
        handle = self._appenders.get(name)
        if handle is None:
            handle = self._appenders[name] = open(self.path / name, "ab")
        handle.write(dump_line(obj))
        handle.flush()

    def close(self) -> None:
        for handle in self._appenders.values():
            handle.close()
        self._appenders.clear()

    def drop_torn_tails(self) -> None:
        """Cut a torn last line (a crash mid-write) off the round files, so appending can go on."""
        for name in (*ROUND_FILES.values(), SHADOW, AUDIT, ELICITED, REFUSED):
            path = self.path / name
            if not path.is_file():
                continue
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                with open(path, "r+b") as handle:
                    handle.truncate(data.rfind(b"\n") + 1)

    def read_records(self, round_: int) -> list[JudgeCallRecord]:
        return read_jsonl(self.path / ROUND_FILES[round_], JudgeCallRecord, missing_ok=True)

    def read_shadow(self) -> list[JudgeCallRecord]:
        return read_jsonl(self.path / SHADOW, JudgeCallRecord, missing_ok=True)

    def refuse(self, row_id: str, reason: str) -> None:
        """Record that a row was refused before any call was made (and why), flushed at once."""
        self._append_line(REFUSED, {"row_id": row_id, "reason": reason})

    def read_refused(self) -> dict[str, str]:
        """Refused rows: row id -> reason."""
        data = (self.path / REFUSED).read_bytes() if (self.path / REFUSED).is_file() else b""
        if not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]  # a torn last line (a crash mid-write)
        return {r["row_id"]: r["reason"] for r in map(orjson.loads, data.splitlines()) if r}

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


def read_jsonl(path: Path, model: type[M], *, missing_ok: bool = False, context: dict | None = None) -> list[M]:
    """Records of a JSONL file. A torn last line (a crash mid-write) is ignored; any other bad line is an error.
    ``context`` is pydantic's validation context (the run's vendor map, for response rows)."""
    return list(iter_jsonl(path, model, missing_ok=missing_ok, context=context))


def iter_jsonl(path: Path, model: type[M], *, missing_ok: bool = False, context: dict | None = None) -> Iterator[M]:
    """:func:`read_jsonl` one record at a time, without reading the whole file."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        if missing_ok:
            return
        raise RunFolderError(f"{path}: file not found") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield model.model_validate(orjson.loads(line), context=context)
            except (orjson.JSONDecodeError, ValidationError) as exc:
                if not line.endswith(b"\n"):  # the torn last line of a crash mid-write
                    return
                raise RunFolderError(f"{path}:{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc


VoteKey = tuple[str, str, int]  # (row_id, member, round)
_vote_hash = hash  # 64 bits, within one process; a collision is resolved by the full key


class ArchiveIndex:
    """Where the archived result of each vote is, for a resumed run: (row_id, member, round) -> the round file
    (or shadow file) and the offset of its record, which is read back from disk only when the vote comes up.

    As the archive is read, a later record of a vote supersedes an earlier one, and an error is not a result
    (it is left out, so the vote is asked again). Each vote takes one dict entry keyed by a 64-bit hash; two
    votes whose hashes collide are kept apart by their full keys."""

    FILES = (ROUND_FILES[1], ROUND_FILES[2], SHADOW)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._where: dict[int, int] = {}  # hash of the vote -> offset * 4 + file code
        self._overflow: dict[VoteKey, int] = {}  # votes whose hash another vote took first
        self._handles: dict[int, IO[bytes]] = {}
        self.cost_usd = 0.0  # the cost of the records indexed

    @classmethod
    def build(cls, path: Path) -> ArchiveIndex:
        index = cls(path)
        for code, name in enumerate(cls.FILES):
            file = path / name
            if not file.is_file():
                continue
            with open(file, "rb") as handle:
                offset = 0
                for line in handle:
                    start, offset = offset, offset + len(line)
                    if not line.strip():
                        continue
                    try:
                        rec = orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        if not line.endswith(b"\n"):
                            break  # a torn last line
                        raise RunFolderError(f"{file}: bad record at byte {start}: {exc}") from exc
                    if rec.get("parse_status") == "error":
                        continue
                    index._put((rec["row_id"], rec["member"], rec["round"]), start * 4 + code,
                               rec.get("cost_usd") or 0.0)
        return index

    def _put(self, key: VoteKey, where: int, cost: float) -> None:
        h = _vote_hash(key)
        old = self._overflow.get(key)
        if old is None:
            held = self._where.get(h)
            if held is not None:
                record = self._read(held)
                if (record.row_id, record.member, record.round) != key:  # another vote has this hash
                    self._overflow[key] = where
                    self.cost_usd += cost
                    return
                old = held
        if old is not None:
            self.cost_usd -= self._read(old).cost_usd
        if key in self._overflow:
            self._overflow[key] = where
        else:
            self._where[h] = where
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
        offset, code = divmod(where, 4)
        handle = self._handles.get(code)
        if handle is None:
            handle = self._handles[code] = open(self.path / self.FILES[code], "rb")
        handle.seek(offset)
        return JudgeCallRecord.model_validate(orjson.loads(handle.readline()))

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
