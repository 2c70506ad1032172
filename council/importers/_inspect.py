"""inspect_ai evaluation logs: the JSON log format (``--log-format json``) and the zipped ``.eval`` format.

Read by inspect_ai's own format rules, without needing inspect_ai installed: a ``.eval`` log is a zip whose
members inspect_ai compresses with Zstandard (read through ``council.importers._zip``), holding
``header.json`` (or, for a log still being written, ``_journal/start.json``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch, whose name is the location reported; a JSON log is one
object with ``eval`` and ``samples`` (location ``samples[<index>]``). Both may hold ``NaN`` and
``Infinity`` (inspect_ai writes non-finite scores and metrics so), which are read as such.

Fields read, as ``inspect_ai.log.EvalLog`` and ``EvalSample`` write them (log format version 2):

- ``eval.model``: the model under test, with inspect's provider prefix (``openai/gpt-4o``,
  ``openrouter/anthropic/claude-3.5-sonnet``, ``mockllm/model``); it names every row (see
  ``council.core.vendors`` for how routed ids resolve);
- ``samples[i].metadata.item_id`` when it is a non-empty string, else ``samples[i].id`` (inspect numbers
  samples 1, 2, ... when the dataset gives no ids) -> ``item_id``; ``--id-field``, ``--id-map`` and
  ``--match-prompt`` (matched against ``input``: a string, or the user messages of a list of chat
  messages) say otherwise (``council.importers._ids``);
- ``samples[i].epoch``: when the log ran more than one epoch (``eval.config.epochs`` > 1, or a sample of
  epoch > 1), each epoch of a sample is its own row, with row id ``{item_id}::{model}#e{epoch}``;
- ``samples[i].output.choices[0].message.content`` -> ``response``: a string, or a list of content parts
  of which the ``type: "text"`` parts are joined with newlines (``reasoning`` and other parts are left
  out); ``output.completion`` is the fallback when there are no choices. A text that is an
  ``attachment://<hash>`` reference is looked up in the sample's ``attachments``;
- ``samples[i].error``: a sample that ended in an error is reported, not graded.

Not used: ``target`` (the bank holds the reference) and ``scores`` (inspect's own scorer is not a gold
verdict).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import Any

from council.importers._candidate import Candidate, dig, non_blank, not_an_object, prompt_texts, scalar_id, text_of
from council.importers._read import NOTHING, document_issue, json_document, read_bytes
from council.importers._zip import ERRORS, read_member

ID_SOURCE = "the sample's metadata.item_id, else its id"
_HEADERS = ("header.json", "_journal/start.json")
_EPOCH = re.compile(r"_epoch_(\d+)\.json$")
_ATTACHMENT = "attachment://"


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    if zipfile.is_zipfile(name):
        yield from _read_archive(name, model, problems)
        return
    data = read_bytes(name, problems)
    if data is None:
        return
    log = json_document(name, data, problems)
    if log is NOTHING:
        return
    if not isinstance(log, dict):
        problems.append(f"{name}: not an inspect_ai log (expected a JSON object with 'eval' and 'samples')")
        return
    model_id = model or _model(name, log, problems)
    samples = log.get("samples")
    if not isinstance(samples, list):
        problems.append(f"{name}: samples: missing (was the log written with samples?)")
        return
    if model_id is None:
        return
    several = _epochs(log) > 1 or any(_epoch(s) > 1 for s in samples)
    for index, sample in enumerate(samples):
        yield _candidate(f"samples[{index}]", sample, model_id, several)


def _read_archive(name: str, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    try:
        archive = zipfile.ZipFile(name)
        infos = archive.infolist()
    except ERRORS:
        problems.append(f"{name}: not a readable .eval archive (corrupt or truncated zip)")
        return
    with archive:
        by_name = {info.filename: info for info in infos}
        header = next((by_name[h] for h in _HEADERS if h in by_name), None)
        log = _load(name, archive, header) if header is not None else None
        model_id = model
        if model_id is None:
            if not isinstance(log, dict):
                problems.append(f"{name}: no readable header.json in the .eval archive; pass --model")
                return
            model_id = _model(name, log, problems)
            if model_id is None:
                return
        entries = [i for i in infos if i.filename.startswith("samples/") and i.filename.endswith(".json")]
        if not entries:
            problems.append(f"{name}: no samples in the .eval archive")
            return
        hints = [_name_epoch(i.filename) for i in entries]
        several = _epochs(log) > 1 or any(e > 1 for e in hints)
        for info, hint in zip(entries, hints, strict=True):
            try:
                data = read_member(name, archive, info)
            except ERRORS:
                yield Candidate(info.filename).issue("-", "cannot read the entry (corrupt archive)")
                continue
            sample, error = document_issue(data, line=False)
            if error is not None:
                yield Candidate(info.filename).issue("-", error)
            else:
                yield _candidate(info.filename, sample, model_id, several, hint)


def _load(name: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    try:
        data = read_member(name, archive, info)
    except ERRORS:
        return None
    value, error = document_issue(data)
    return None if error is not None else value


def _model(name: str, log: dict[str, Any], problems: list[str]) -> str | None:
    model_id = non_blank(dig(log, "eval", "model"))
    if model_id is None:
        problems.append(f"{name}: eval.model: missing; pass --model")
    return model_id


def _epochs(log: Any) -> int:
    value = dig(log, "eval", "config", "epochs")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _epoch(sample: Any) -> int:
    value = sample.get("epoch") if isinstance(sample, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _name_epoch(entry: str) -> int:
    match = _EPOCH.search(entry)
    return int(match.group(1)) if match else 0


def _attached(value: Any, attachments: Any) -> Any:
    """A string that is an ``attachment://`` reference replaced by the attachment it names."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT) and isinstance(attachments, dict):
        found = attachments.get(value[len(_ATTACHMENT):])
        return found if isinstance(found, str) else value
    return value


def _input(value: Any, attachments: Any) -> list[str]:
    if isinstance(value, list):
        value = [{**m, "content": _attached(m.get("content"), attachments)} if isinstance(m, dict) else m
                 for m in value]
    return prompt_texts(_attached(value, attachments))


def _candidate(loc: str, sample: Any, model_id: str, several: bool, epoch_hint: int = 0) -> Candidate:
    if not isinstance(sample, dict):
        return not_an_object(loc, sample)
    attachments = sample.get("attachments")
    cand = Candidate(loc, fields={"model": model_id}, record=sample, id_issue=("id", "missing sample id"),
                     prompts=_input(sample.get("input"), attachments))
    item_id = non_blank(dig(sample, "metadata", "item_id")) or scalar_id(sample.get("id"))
    if item_id is not None:
        cand.fields["item_id"] = item_id
    if several:
        cand.epoch = _epoch(sample) or epoch_hint or 1
    error = sample.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return cand.issue("error", f"the sample ended in an error: {str(message)[:200]}")
    output = sample.get("output")
    text = text_of(_attached(dig(output, "choices", 0, "message", "content"), attachments))
    if not (text and text.strip()):
        completion = _attached(dig(output, "completion"), attachments)
        text = completion if non_blank(completion) else None
    if not (isinstance(text, str) and text.strip()):
        cand.issue("output", "no response text in output.choices[0].message.content or output.completion")
    else:
        cand.fields["response"] = text
    return cand
