"""The ground truth the embedded provider's judges know: never read from the prompt, only from here."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from council.schema import BankItem, ResponseRow, Verdict

_NO_VENDORS: frozenset[str] = frozenset()
_UNKNOWN: tuple[Verdict | None, frozenset[str]] = (None, _NO_VENDORS)


def truth_key(question: str, response: str) -> str:
    """The key of a (question, response) pair: sha256 of the stripped texts joined by a unit separator."""
    return hashlib.sha256((question.strip() + "\x1f" + response.strip()).encode()).hexdigest()


class TruthTable:
    """``truth_key(question, response)`` -> (gold verdict or None, vendors that produced that exact text)."""

    __slots__ = ("_table",)

    def __init__(self, entries: dict[str, tuple[Verdict | None, frozenset[str]]] | None = None) -> None:
        self._table: dict[str, tuple[Verdict | None, frozenset[str]]] = dict(entries or {})

    @classmethod
    def from_rows(cls, items: Iterable[BankItem], rows: Iterable[ResponseRow]) -> TruthTable:
        """Build from bank items and response rows; rows whose item is not among ``items`` are skipped."""
        by_id = {item.id: item for item in items}
        table = cls()
        for row in rows:
            item = by_id.get(row.item_id)
            if item is not None:
                table.add(item.prompt, row.response, row.gold_verdict, [row.vendor] if row.vendor else [])
        return table

    def add(self, question: str, response: str, gold: Verdict | None, vendors: Iterable[str] = ()) -> None:
        """Record a pair; the same text from several rows unions their vendors and keeps the first known gold."""
        key = truth_key(question, response)
        old_gold, old_vendors = self._table.get(key, _UNKNOWN)
        self._table[key] = (old_gold if old_gold is not None else gold, old_vendors | frozenset(vendors))

    def get(self, key: str) -> tuple[Verdict | None, frozenset[str]]:
        """Lookup by key; an unknown key gives ``(None, frozenset())``."""
        return self._table.get(key, _UNKNOWN)

    def lookup(self, question: str, response: str) -> tuple[Verdict | None, frozenset[str]]:
        return self._table.get(truth_key(question, response), _UNKNOWN)

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: object) -> bool:
        return key in self._table


def heuristic_verdict(reference: str, response: str) -> Verdict:
    """The judges' guess when the truth is unknown: correct iff the response contains the reference
    (case-insensitive, whitespace normalised)."""
    ref = " ".join(reference.split()).lower()
    return "correct" if ref and ref in " ".join(response.split()).lower() else "incorrect"
