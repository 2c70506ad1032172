"""The project's own responses JSONL: one ResponseRow per line (see ``council.core.schema.ResponseRow``).

Validation is the bank loader's (``bank._loader``): every field problem is reported with its line number and
field (``file:line: field: problem``), unknown fields included. Unlike ``bank.load_responses``, the good
lines are kept. The vendor is decided as everywhere (``council.core.vendors.row_vendor``: the vendor map first,
then the model id; the row's own ``vendor`` is canonicalised and must agree with the id, and is used alone
only for an id of no known vendor); duplicates are by ``row_id`` (which defaults to ``item_id::model``).
``--id-map`` maps ``item_id``; the rows hold no prompt, so ``--match-prompt`` does not apply.
"""

from __future__ import annotations

from collections.abc import Iterator

from council.importers._candidate import Candidate
from council.importers._read import jsonl_candidates

ID_SOURCE = "item_id"


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    def make(loc: str, obj: dict) -> Candidate:
        hint = obj.get("vendor") if isinstance(obj.get("vendor"), str) else None
        return Candidate(loc, fields=dict(obj), vendor_hint=hint, dup_field="row_id", record=obj)

    yield from jsonl_candidates(name, problems, make)
