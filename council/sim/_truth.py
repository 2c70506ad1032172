"""The ground truth the embedded provider knows: the judges' gold verdicts (never read from the prompt,
only from here) and the bank items by question text, so the simulated models under test can answer them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from council.core.schema import BankItem, ResponseRow, Verdict

_NO_MODELS: frozenset[str] = frozenset()
_UNKNOWN: tuple[Verdict | None, frozenset[str]] = (None, _NO_MODELS)


def truth_key(question: str, response: str) -> str:
    """The key of a (question, response) pair: sha256 of the stripped texts joined by a unit separator."""
    return hashlib.sha256((question.strip() + "\x1f" + response.strip()).encode()).hexdigest()


class TruthTable:
    """``truth_key(question, response)`` -> (gold verdict or None, the model ids that produced that exact
    text), and a registry of bank items by their (stripped) question text.

    Producers are model ids, never vendors: who made a model is the simulated world's business
    (``council.sim._world``), decided when a judge grades the text, not by whoever built the table."""

    __slots__ = ("_table", "_items")

    def __init__(self, entries: dict[str, tuple[Verdict | None, frozenset[str]]] | None = None) -> None:
        self._table: dict[str, tuple[Verdict | None, frozenset[str]]] = dict(entries or {})
        self._items: dict[str, BankItem] = {}

    @classmethod
    def from_items(cls, items: Iterable[BankItem]) -> TruthTable:
        """A table that knows ``items`` (so the models under test can answer them) and no verdicts yet."""
        table = cls()
        table.add_items(items)
        return table

    @classmethod
    def from_rows(cls, items: Iterable[BankItem], rows: Iterable[ResponseRow]) -> TruthTable:
        """Build from bank items (all registered) and response rows; rows whose item is not among ``items``
        are skipped."""
        table = cls()
        by_id = {item.id: item for item in table.add_items(items)}
        for row in rows:
            item = by_id.get(row.item_id)
            if item is not None:
                table.add(item.prompt, row.response, row.gold_verdict, [row.model] if row.model else [])
        return table

    def add_items(self, items: Iterable[BankItem]) -> list[BankItem]:
        """Register items by question text (the first item of a text wins); returns them as a list."""
        got = list(items)
        for item in got:
            self._items.setdefault(item.prompt.strip(), item)
        return got

    def item(self, question: str) -> BankItem | None:
        """The registered item whose prompt is ``question`` (compared stripped), or None."""
        return self._items.get(question.strip())

    def questions(self) -> list[str]:
        """The registered items' question texts."""
        return list(self._items)

    @property
    def n_items(self) -> int:
        return len(self._items)

    def add(self, question: str, response: str, gold: Verdict | None, models: Iterable[str] = ()) -> None:
        """Record a pair and the models that produced it; the same text from several rows unions their models
        and keeps the first known gold."""
        key = truth_key(question, response)
        old_gold, old_models = self._table.get(key, _UNKNOWN)
        self._table[key] = (old_gold if old_gold is not None else gold, old_models | frozenset(models))

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
