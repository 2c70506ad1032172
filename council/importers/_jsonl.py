"""The project's own responses JSONL: one ResponseRow per line (see ``council.schema.ResponseRow``).

Validation is the bank loader's (``bank._loader``): every field problem is reported with its line number and
field (``file:line: field: problem``), unknown fields included. Unlike ``bank.load_responses``, the good
lines are kept. Differences: the vendor is resolved like every importer's (vendor map first, then the
row's own ``vendor``, then the defaults), so a bare model id of no known family is reported instead of
becoming its own vendor; duplicates are by ``row_id`` (which defaults to ``item_id::model``).
"""

from __future__ import annotations

from collections.abc import Iterator

from bank._loader import json_lines
from council.importers._core import Candidate, not_an_object, read_bytes


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    data = read_bytes(name, problems)
    if data is None:
        return
    for lineno, obj, error in json_lines(name, data, problems):
        loc = str(lineno)
        if error is not None:
            yield Candidate(loc).issue("-", error)
        elif not isinstance(obj, dict):
            yield not_an_object(loc, obj)
        else:
            hint = obj.get("vendor") if isinstance(obj.get("vendor"), str) else None
            yield Candidate(loc, fields=dict(obj), vendor_hint=hint, dup_field="row_id")
