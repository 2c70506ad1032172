"""overlooked-bench raw responses: the records its harness archives before anything scores them.

overlooked-bench writes one JSON object per (model, item) to
``runs/<run_id>/raw/<model_key>/<category>/<item_id>.json``, with the fields of its ``Completion`` plus the
item's: ``item_id``, ``category``, ``model_id`` (a gateway id such as ``anthropic/claude-haiku-4.5``),
``model_key``, ``provider`` (the owning lab), ``text`` (the response), ``ok``, ``error``,
``finish_reason``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``, ``latency_s``, ``attempts``,
``request_params``, ``request_fingerprint``, ``timestamp_utc``, ``item_content_hash``, ``harness_version``,
``methodology_version``. This shape was taken from the project's published run folders
(``data/runs/<date>/raw/...``) and harness (``raw_path``, ``write_json`` and ``usable_raw`` in
``harness/run_eval.py``: ``json.dump`` with ``indent=2``, ``sort_keys``, so ``NaN`` is read as such).

Accepted inputs: a run folder (its ``raw/`` tree is read) or any folder of such ``.json`` files, reported by
their path relative to the folder; one ``.json`` file (an object, location ``$``, or an array, location
``[i]``); or JSONL with one record per line (location: the line number). A record is mapped as:

- ``item_id`` -> ``item_id`` (``--id-field`` and ``--id-map`` apply; the records hold no prompt, so
  ``--match-prompt`` reads a ``prompt`` field only when one is there); ``model_id`` (else ``model``) ->
  ``model``; ``provider`` is the record's stated vendor (``moonshotai`` -> ``moonshot`` as in
  ``council.core.vendors``): it must agree with the model id's vendor and decides alone only for an id of no
  known vendor (the vendor map wins over both);
- ``text`` (else ``response``, ``raw_response`` or an OpenAI-style ``choices[0].message.content``) ->
  ``response``;
- ``stated_confidence`` (else ``confidence``) -> ``confidence`` and ``abstained`` -> ``abstained``, when
  present (the published raw records carry neither);
- like the harness's own ``usable_raw``, a record with ``ok: false`` or no visible text is reported, not
  graded (its ``error`` or ``finish_reason`` is quoted).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from council.importers._candidate import Candidate, dig, non_blank, not_an_object, prompt_texts, text_of
from council.importers._read import NOTHING, document_issue, json_document, lenient_lines, read_bytes

ID_SOURCE = "item_id"

_TEXT_KEYS = ("text", "response", "raw_response")
_BOM = b"\xef\xbb\xbf"


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    if os.path.isdir(name):
        yield from _read_folder(name, problems)
        return
    data = read_bytes(name, problems)
    if data is None:
        return
    if name.endswith(".json"):
        doc = json_document(name, data, problems)
        if doc is NOTHING:
            return
        if isinstance(doc, list):
            for index, record in enumerate(doc):
                yield _candidate(f"[{index}]", record)
        else:
            yield _candidate("$", doc)
        return
    for lineno, obj, error in lenient_lines(name, data, problems):
        yield Candidate(str(lineno)).issue("-", error) if error is not None else _candidate(str(lineno), obj)


def _read_folder(name: str, problems: list[str]) -> Iterator[Candidate]:
    root = Path(name)
    top = root / "raw" if (root / "raw").is_dir() else root
    try:
        files = sorted(p for p in top.rglob("*.json") if p.is_file())
    except OSError as exc:
        problems.append(f"{name}: cannot list the folder: {exc.strerror or exc}")
        return
    if not files:
        problems.append(f"{name}: no raw response .json files in the folder")
        return
    for path in files:
        loc = path.relative_to(root).as_posix()
        try:
            data = path.read_bytes()
        except OSError as exc:
            yield Candidate(loc).issue("-", f"cannot read file: {exc.strerror or exc}")
            continue
        record, error = document_issue(data.removeprefix(_BOM))
        yield Candidate(loc).issue("-", error) if error is not None else _candidate(loc, record)


def _candidate(loc: str, record: Any) -> Candidate:
    if not isinstance(record, dict):
        return not_an_object(loc, record)
    fields: dict[str, Any] = {}
    for target, keys in (("item_id", ("item_id",)), ("model", ("model_id", "model")),
                         ("confidence", ("stated_confidence", "confidence")), ("abstained", ("abstained",))):
        key = next((k for k in keys if record.get(k) is not None), None)
        if key is not None:
            fields[target] = record[key]
    hint = record.get("provider") if isinstance(record.get("provider"), str) else None
    prompts = prompt_texts(record["prompt"]) if "prompt" in record else None
    cand = Candidate(loc, fields=fields, vendor_hint=hint, record=record, prompts=prompts, prompt_field="prompt")
    if record.get("ok") is False:
        error = non_blank(record.get("error")) or "no error recorded"
        return cand.issue("ok", f"the model call failed: {error[:200]}")
    key = next((k for k in _TEXT_KEYS if k in record), None)
    text = text_of(record.get(key)) if key else text_of(dig(record, "choices", 0, "message", "content"))
    field_name = key or ("choices" if "choices" in record else "text")
    if isinstance(text, str) and text.strip():
        fields["response"] = text
    elif isinstance(text, str):
        reason = non_blank(record.get("finish_reason")) or non_blank(dig(record, "choices", 0, "finish_reason"))
        cand.issue(field_name, "empty response text" + (f" (finish_reason {reason!r})" if reason else ""))
    else:
        cand.issue(field_name, "missing response text")
    return cand
