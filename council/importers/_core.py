"""What every importer shares: turning candidates into rows, and reporting the rest.

A format module reads its file and yields ``Candidate`` records (``council.importers._candidate``), each with
its location in the file (a line number, or a JSON path such as ``samples[3]``) and the ResponseRow fields it
could find, plus the problems it already saw. :func:`collect` then finds the bank id (``council.importers._ids``), applies the
``model`` override, resolves the vendor, validates the row against the wire schema, checks the item against
the bank and drops duplicates. Every record that does not become a row is reported as
``"{file}:{location}: {field}: {problem}"`` and counted in ``skipped``; the good ones are kept. When most
records name no bank item, one more ``"{file}: ..."`` problem says how to map them. Reading files is
``council.importers._read``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from bank._loader import _loc, _message
from council.core.errors import VendorConflictError
from council.core.schema import BankItem, ResponseRow
from council.core.vendors import row_vendor
from council.importers._candidate import Candidate, non_blank
from council.importers._ids import HINT, IdPolicy, IdResolver


@dataclass(frozen=True)
class ImportResult:
    """The rows that could be imported, one problem string per reported issue, and how many records were
    skipped because of them."""

    rows: list[ResponseRow]
    problems: list[str]
    skipped: int
    ids: str = ""  # how the bank ids were found (the format's own id, --id-field, --id-map or --match-prompt)


def problem(name: str, loc: str, field_name: str, message: str) -> str:
    return f"{name}:{loc}: {field_name}: {message}"


def where(loc: str) -> str:
    """How a location reads inside a sentence: ``line 3`` or ``samples[3]``."""
    return f"line {loc}" if loc.isdigit() else loc



def collect(
    name: str,
    candidates: Iterable[Candidate],
    *,
    items: list[BankItem] | None,
    vendor_map: Mapping[str, str] | None,
    model: str | None,
    problems: list[str],
    ids: IdPolicy | None = None,
    default_ids: str = "the record's own id",
) -> ImportResult:
    """Rows from ``candidates``; every other record reported in ``problems`` and counted as skipped."""
    known = None if items is None else {item.id for item in items}
    resolver = IdResolver(ids or IdPolicy(), items)
    rows: list[ResponseRow] = []
    first: dict[str, str] = {}  # row id -> location of its row
    answered: dict[str, tuple[str | None, str]] = {}  # row id -> (variant, response) first seen
    skipped = 0
    unknown: list[str] = []
    remapped = 0
    for cand in candidates:
        issues = [*resolver.resolve(cand), *cand.issues]
        row: ResponseRow | None = None
        if not issues:
            row, issues = _validate(cand, vendor_map, model)
        if row is not None:
            prior = answered.setdefault(row.row_id, (cand.variant, row.response))
            if cand.variant is not None and cand.variant != prior[0] and row.response == prior[1]:
                continue  # the same answer logged again under another filter
        remapped += cand.remapped
        if row is not None and known is not None and row.item_id not in known:
            either = " (nor in the id map)" if cand.unmapped else ""
            issues.append(("item_id", f"unknown item {row.item_id!r}{either}"))
            unknown.append(row.item_id)
        if issues or row is None:
            problems.extend(problem(name, cand.loc, f, m) for f, m in issues)
            skipped += 1
            continue
        seen = first.get(row.row_id)
        if seen is not None:
            same = (f"same item {row.item_id!r} and model {row.model!r}" if cand.epoch is None
                    else f"same item {row.item_id!r}, model {row.model!r} and epoch {cand.epoch}")
            problems.append(problem(name, cand.loc, cand.dup_field, f"duplicate of {where(seen)} ({same})"))
            skipped += 1
            continue
        first[row.row_id] = cand.loc
        rows.append(row)
    records = len(rows) + skipped
    if unknown and 2 * len(unknown) > records:
        examples = ", ".join(map(repr, list(dict.fromkeys(unknown))[:3]))
        problems.append(f"{name}: {len(unknown)} of {records} records name no bank item (ids such as {examples}); "
                        + HINT)
    ids_used = resolver.describe(default_ids, records, remapped)
    return ImportResult(rows=rows, problems=problems, skipped=skipped, ids=ids_used)


def _validate(
    cand: Candidate, vendor_map: Mapping[str, str] | None, model: str | None
) -> tuple[ResponseRow | None, list[tuple[str, str]]]:
    data = dict(cand.fields)
    if model:
        data["model"] = model
    model_id = data.get("model")
    if isinstance(model_id, str) and model_id.strip():
        data["model"] = model_id = model_id.strip()
        if cand.epoch is not None and isinstance(data.get("item_id"), str) and not data.get("row_id"):
            data["row_id"] = f"{data['item_id']}::{model_id}#e{cand.epoch}"
        try:
            data["vendor"] = row_vendor(model_id, non_blank(cand.vendor_hint), vendor_map)
        except ValueError as exc:
            return None, [("vendor" if isinstance(exc, VendorConflictError) else "model", str(exc))]
    try:
        row = ResponseRow.model_validate(data, context={"vendor_map": vendor_map})
    except ValidationError as exc:
        return None, [(_loc(e["loc"]), _message(e)) for e in exc.errors(include_url=False)]
    return row, []
