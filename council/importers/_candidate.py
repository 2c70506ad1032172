"""A foreign record on its way to a row (:class:`Candidate`), and what the format modules share to read one: its
input texts, its id, a response's text, a path into the record. :func:`council.importers._core.collect` turns
candidates into rows; the bank id is found by ``council.importers._ids``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bank._loader import _json_type


@dataclass
class Candidate:
    """One record of a foreign file, on its way to becoming a ResponseRow.

    ``fields`` uses ResponseRow's names. ``vendor_hint`` is a vendor the record itself states (the
    ``stated`` vendor of :func:`council.core.vendors.row_vendor`: used when the model id resolves to no vendor,
    an error when it contradicts the model's vendor). ``variant`` marks a record that legitimately repeats
    another one (lm-evaluation-harness writes a sample once per filter): a repeat with a different variant
    and the same response is folded into the first silently instead of being reported as a duplicate.

    For finding the bank id (``council.importers._ids``): the reader puts the record's own id in
    ``fields["item_id"]`` (or leaves it out and says why in ``id_issue``), the raw ``record`` for
    ``--id-field``, and the record's input texts in ``prompts`` for ``--match-prompt`` (None: the format holds
    no prompt; ``prompt_field`` names where they came from). ``epoch`` (one of several epochs) makes the row id
    ``{item_id}::{model}#e{epoch}``.
    """

    loc: str
    fields: dict[str, Any] = field(default_factory=dict)
    issues: list[tuple[str, str]] = field(default_factory=list)
    vendor_hint: str | None = None
    variant: str | None = None
    dup_field: str = "item_id"
    record: Any = None
    prompts: list[str] | None = None
    prompt_field: str = "input"
    id_issue: tuple[str, str] | None = None
    epoch: int | None = None
    unmapped: bool = False  # an id map is in use and does not name this record's id
    remapped: bool = False  # the id map or the prompt gave this record's bank id

    def issue(self, field_name: str, message: str) -> Candidate:
        self.issues.append((field_name, message))
        return self


def not_an_object(loc: str, value: Any) -> Candidate:
    return Candidate(loc).issue("-", f"expected a JSON object, got {_json_type(value)}")


def text_of(value: Any) -> str | None:
    """A response text: a string, or the text parts of a list of content parts joined by newlines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [
            part["text"] if isinstance(part, dict) else part
            for part in value
            if (isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str))
            or isinstance(part, str)
        ]
        return "\n".join(texts) if texts else None
    return None


def prompt_texts(value: Any) -> list[str]:
    """The texts a record's input may be matched by: a string itself; for a list of chat messages, its user
    messages' texts joined by newlines, and the last one alone (a list of no user message, such as the single
    system message OpenAI evals makes of a plain prompt: all its messages' texts)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    messages = [m for m in value if isinstance(m, dict)]
    users = [text_of(m.get("content")) for m in messages if m.get("role", "user") == "user"]
    texts = [t for t in users if t] or [t for t in (text_of(m.get("content")) for m in messages) if t]
    return list(dict.fromkeys(["\n".join(texts), texts[-1]])) if texts else []


def scalar_id(value: Any) -> str | None:
    """A record id as a string: a non-blank string or an integer (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value).strip() or None


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[p0][p1]...`` or None as soon as a step is missing or of the wrong kind."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or not -len(obj) <= step < len(obj):
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj


def non_blank(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
