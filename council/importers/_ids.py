"""How a foreign record's bank item is found: its own id, ``--id-field``, ``--id-map`` or ``--match-prompt``.

By default each format takes the id its module documents (an inspect sample's ``metadata.item_id`` or
``id``, an lm-evaluation-harness ``doc_id``, an OpenAI evals ``sample_id``, ...). ``--id-field FIELD``
takes it from a dotted path into the record instead (``metadata.item_id``, ``doc.question_id``,
``data.item_id``; a number step indexes a list). ``--id-map FILE`` then maps the id found to a bank id (a
JSON object, or a CSV of two columns, record id and bank id, with an optional header row whose second cell
is ``item_id`` or ``bank_id``); an id the map does not name is kept. ``--match-prompt`` ignores ids and
takes the bank item whose prompt equals the record's input after whitespace normalisation (runs of
whitespace made one space, ends stripped); no match or several are problems of that record.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from council.core.errors import ConfigError
from council.core.schema import BankItem

if TYPE_CHECKING:
    from council.importers._candidate import Candidate

HINT = ("say where the bank id is: --id-field FIELD (the record field that holds it, e.g. metadata.item_id), "
        "--id-map FILE (JSON or CSV: record id -> bank id) or --match-prompt (match each record to the bank item "
        "whose prompt equals its input)")
_HEADERS = frozenset({"item_id", "bank_id"})


@dataclass(frozen=True)
class IdPolicy:
    """The operator's choice: ``field`` (dotted path), ``id_map`` (record id -> bank id, read from
    ``map_name``) and ``match_prompt``."""

    field: str | None = None
    id_map: Mapping[str, str] | None = None
    map_name: str = "the id map"
    match_prompt: bool = False

    def __post_init__(self) -> None:
        if self.match_prompt and (self.field or self.id_map is not None):
            raise ConfigError("--match-prompt finds items by prompt text; it cannot be combined with --id-field "
                              "or --id-map")
        if self.field is not None and not _steps(self.field):
            raise ConfigError(f"--id-field {self.field!r}: expected a dotted field path such as metadata.item_id")


def normalise(text: str) -> str:
    """``text`` with every run of whitespace made one space and the ends stripped."""
    return " ".join(text.split())


class IdResolver:
    """Applies an :class:`IdPolicy` to candidates (marking ``cand.remapped`` when the map or a prompt gave the
    id)."""

    def __init__(self, policy: IdPolicy, items: list[BankItem] | None) -> None:
        self.policy = policy
        self.prompts: dict[str, list[str]] = {}
        if policy.match_prompt:
            if items is None:
                raise ConfigError("--match-prompt needs the bank whose prompts the records are matched to")
            for item in items:
                self.prompts.setdefault(normalise(item.prompt), []).append(item.id)

    def resolve(self, cand: Candidate) -> list[tuple[str, str]]:
        """Set ``cand.fields["item_id"]`` as the policy says; the problems that prevent it."""
        policy = self.policy
        if policy.match_prompt:
            return self._by_prompt(cand)
        if policy.field:
            value, problem = _lookup(cand.record, policy.field)
            if problem is not None:
                return [(policy.field, problem)]
            cand.fields["item_id"] = value
        elif "item_id" not in cand.fields:
            return [cand.id_issue] if cand.id_issue else []
        key = cand.fields.get("item_id")
        if policy.id_map is not None and isinstance(key, str):
            if key in policy.id_map:
                cand.fields["item_id"] = policy.id_map[key]
                cand.remapped = True
            else:
                cand.unmapped = True
        return []

    def _by_prompt(self, cand: Candidate) -> list[tuple[str, str]]:
        if cand.prompts is None:
            return [(cand.prompt_field, "this format's records hold no prompt text to match (--match-prompt)")]
        texts = {normalise(t) for t in cand.prompts if isinstance(t, str) and t.strip()}
        if not texts:
            return [(cand.prompt_field, "no prompt text to match")]
        found = sorted({item for text in texts for item in self.prompts.get(text, ())})
        if not found:
            return [(cand.prompt_field, "no bank item's prompt equals this input (after whitespace normalisation)")]
        if len(found) > 1:
            listed = ", ".join(map(repr, found[:5])) + (", ..." if len(found) > 5 else "")
            return [(cand.prompt_field, f"ambiguous: the input equals the prompt of {len(found)} bank items "
                                        f"({listed})")]
        cand.fields["item_id"] = found[0]
        cand.remapped = True
        return []

    def describe(self, default: str, records: int, remapped: int) -> str:
        """How the bank ids were found, for the import summary (``remapped`` of ``records`` by the map or
        by prompt)."""
        policy = self.policy
        if policy.match_prompt:
            return f"prompt text (--match-prompt: {remapped} of {records} records matched)"
        text = f"field {policy.field} (--id-field)" if policy.field else default
        if policy.id_map is not None:
            text += f", mapped by {policy.map_name} (--id-map: {remapped} of {records} records)"
        return text


def _steps(path: str) -> list[str]:
    steps = path.strip().split(".")
    return steps if all(s.strip() for s in steps) else []


def _lookup(record: Any, path: str) -> tuple[str | None, str | None]:
    value = record
    for step in _steps(path):
        if isinstance(value, dict):
            value = value.get(step.strip())
        elif isinstance(value, list) and step.strip().isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            value = None
        if value is None:
            return None, "missing (the field --id-field names)"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None, f"not an id (expected a string or an integer, got {type(value).__name__})"
    text = str(value).strip()
    return (text, None) if text else (None, "empty id")


def load_id_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """An id map file: a JSON object, or CSV rows of record id and bank id; raises ConfigError naming the
    file and line of each problem."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read().removeprefix(b"\xef\xbb\xbf")
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the id map: {exc.strerror or exc}") from None
    if name.lower().endswith(".json") or data.lstrip().startswith(b"{"):
        return _json_map(name, data)
    return _csv_map(name, data)


def _json_map(name: str, data: bytes) -> dict[str, str]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{name}: the id map is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                          f"{exc.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: the id map must be one JSON object, record id -> bank id")
    bad = [k for k, v in value.items() if not k.strip() or not isinstance(v, str) or not v.strip()]
    if bad:
        raise ConfigError(f"{name}: id map entries need a non-empty record id and bank id string: "
                          f"{', '.join(map(repr, bad[:5]))}")
    return {k.strip(): v.strip() for k, v in value.items()}


def _csv_map(name: str, data: bytes) -> dict[str, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name}: the id map is not UTF-8 text (byte {exc.start + 1})") from None
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    problems: list[str] = []
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        lineno = reader.line_num
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if not out and not lines and len(cells) == 2 and cells[1].lower() in _HEADERS:
            lines[""] = lineno  # the header row
            continue
        if len(cells) != 2 or not all(cells):
            problems.append(f"{name}:{lineno}: expected two non-empty columns, record id and bank id")
            continue
        key, value = cells
        if key in out and out[key] != value:
            problems.append(f"{name}:{lineno}: record id {key!r} is mapped again (line {lines[key]} maps it to "
                            f"{out[key]!r})")
            continue
        out[key], lines[key] = value, lines.get(key, lineno)
    if problems:
        raise ConfigError("\n".join(problems))
    if not out:
        raise ConfigError(f"{name}: the id map is empty")
    return out
