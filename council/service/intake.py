"""A submission's rows, checked whole before a job is made: every problem by row index and field, nothing
kept from a submission with any problem.

Rows in this project's format are validated one by one. Records of another benchmark's format (``format``:
one of the importers that read JSON records, one per line) are written to a scratch file and read by that
importer, whose ``file:line`` problems become row indexes.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import orjson
from pydantic import ValidationError

from council.core.errors import ConfigError, CouncilError, InputError
from council.core.schema import BankItem, ResponseRow
from council.importers import FORMATS, import_responses
from council.service.models import JobSubmission, RowProblem

RECORD_FORMATS = tuple(f for f in FORMATS if f != "inspect")  # inspect logs are whole documents, not records
_PROBLEM = re.compile(r"^.*?:(?P<line>\d+): (?P<field>[^:]+): (?P<problem>.*)$", re.S)


class RowsRejected(CouncilError):
    """A submission with bad rows: every problem, by row index (from 0) and field."""

    def __init__(self, problems: list[RowProblem]) -> None:
        super().__init__(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in the submission")
        self.problems = problems


def check_rows(submission: JobSubmission, items: list[BankItem]) -> list[ResponseRow]:
    """The submitted rows as response rows, or :class:`RowsRejected` with every problem."""
    if submission.format == "jsonl":
        indexed, problems = _own(submission)
    else:
        indexed, problems = list(enumerate(_imported(submission, items))), []
    known = {i.id for i in items}
    seen: dict[str, int] = {}
    for k, row in indexed:
        if row.item_id not in known:
            problems.append(RowProblem(index=k, field="item_id", problem=f"no item {row.item_id!r} in the bank"))
        if row.row_id in seen:
            problems.append(RowProblem(index=k, field="row_id", problem=f"{row.row_id!r} is also row {seen[row.row_id]}"))
        seen.setdefault(row.row_id, k)
    if problems:
        raise RowsRejected(sorted(problems, key=lambda p: p.index))
    return [row for _, row in indexed]


def _own(submission: JobSubmission) -> tuple[list[tuple[int, ResponseRow]], list[RowProblem]]:
    """The rows that validate (with their indexes), and the problems of those that do not."""
    context = {"vendor_map": submission.options.vendor_map}
    problems: list[RowProblem] = []
    rows: list[tuple[int, ResponseRow]] = []
    for index, raw in enumerate(submission.rows):
        try:
            rows.append((index, ResponseRow.model_validate(raw, context=context)))
        except ValidationError as exc:
            problems += [RowProblem(index=index, field=".".join(map(str, e["loc"])) or "row", problem=e["msg"])
                         for e in exc.errors()]
    return rows, problems


def _imported(submission: JobSubmission, items: list[BankItem]) -> list[ResponseRow]:
    if submission.format not in RECORD_FORMATS:
        raise RowsRejected([RowProblem(index=-1, field="format", problem=(
            f"{submission.format!r} is not a format of JSON records; choose one of {', '.join(RECORD_FORMATS)} "
            "(an inspect log is converted with `council grade --format inspect` first)"))])
    with tempfile.TemporaryDirectory(prefix="council-intake-") as tmp:
        path = Path(tmp) / "records.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in submission.rows))
        try:
            result = import_responses(path, submission.format, items=items, vendor_map=submission.options.vendor_map,
                                      model=submission.model)
        except InputError as exc:
            raise RowsRejected([_located(p) for p in exc.problems]) from None
        except ConfigError as exc:
            raise RowsRejected([RowProblem(index=-1, field="format", problem=str(exc))]) from None
    if result.problems:
        raise RowsRejected([_located(p) for p in result.problems])
    return result.rows


def _located(text: str) -> RowProblem:
    """An importer's ``file:line: field: problem`` as a row problem (the scratch file's path left out)."""
    match = _PROBLEM.match(text)
    if match is None:
        return RowProblem(index=-1, field="rows", problem=text.split(": ", 1)[-1])
    return RowProblem(index=int(match["line"]) - 1, field=match["field"], problem=match["problem"])
