"""The run folder: ``runs/<run_id>/``, written ahead and never overwritten.

Every judge-call record is appended and flushed the moment it returns, before anything scores it.
JSON documents are written atomically (temporary file, then rename).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
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

    def write_lines(self, name: str, records: Iterable[BaseModel]) -> None:
        self.write_bytes(name, b"".join(dump_line(r.model_dump(mode="json")) for r in records))

    def read_json(self, name: str) -> Any:
        try:
            return orjson.loads((self.path / name).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise RunFolderError(f"{self.path / name}: {exc}") from exc

    def append(self, record: JudgeCallRecord | ElicitedRecord) -> None:
        """Append one judge-call record to its round file (shadow and audit votes to their own) and flush it."""
        name = (ELICITED if isinstance(record, ElicitedRecord) else SHADOW if record.shadow
                else AUDIT if record.audit_of else ROUND_FILES[record.round])
        handle = self._appenders.get(name)
        if handle is None:
            handle = self._appenders[name] = open(self.path / name, "ab")
        handle.write(dump_line(record.model_dump(mode="json")))
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
        handle = self._appenders.get(REFUSED)
        if handle is None:
            handle = self._appenders[REFUSED] = open(self.path / REFUSED, "ab")
        handle.write(dump_line({"row_id": row_id, "reason": reason}))
        handle.flush()

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
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return []
        raise RunFolderError(f"{path}: file not found") from None
    lines = data.split(b"\n")
    torn_tail = not data.endswith(b"\n")
    out: list[M] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate(orjson.loads(line), context=context))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if torn_tail and number == len(lines):
                break
            raise RunFolderError(f"{path}:{number}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    return out
