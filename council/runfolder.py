"""The run folder: ``runs/<run_id>/``, written ahead and never overwritten.

Every judge-call record is appended and flushed the moment it returns, before anything scores it.
JSON documents are written atomically (temporary file, then rename).
"""

from __future__ import annotations

import os
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
ELICITED = "elicited.jsonl"
VERDICTS = "verdicts.jsonl"
SUMMARY = "summary.json"
LOG = "log.jsonl"


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def dump_line(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


class RunFolder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._appenders: dict[str, IO[bytes]] = {}

    @classmethod
    def create(cls, runs_dir: Path, run_id: str) -> RunFolder:
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise RunFolderError(f"invalid run id {run_id!r}")
        path = Path(runs_dir) / run_id
        if path.exists():
            raise RunFolderError(f"run folder {path} already exists: a run is never overwritten; "
                                 "re-grading is a new run (pass another --run-id)")
        path.mkdir(parents=True)
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        if not (Path(path) / MANIFEST).is_file():
            raise RunFolderError(f"{path} is not a run folder (no {MANIFEST})")
        return cls(Path(path))

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
        for name in (*ROUND_FILES.values(), SHADOW, AUDIT, ELICITED):
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
