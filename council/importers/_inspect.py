"""inspect_ai evaluation logs: the JSON log format (``--log-format json``) and the zipped ``.eval`` format.

Fields read, as written by ``inspect_ai.log.EvalLog`` (log format version 2):

- ``eval.model``: the model under test, with inspect's provider prefix (``openai/gpt-4o``,
  ``anthropic/claude-3-5-sonnet-latest``, ``openrouter/meta-llama/llama-3.1-70b``); it names every row;
- ``samples[i].id`` (int or str) -> ``item_id``, unless ``samples[i].metadata.item_id`` is a non-empty
  string, which wins;
- ``samples[i].output.choices[0].message.content`` -> ``response``: a string, or a list of content parts
  of which the ``type: "text"`` parts are joined with newlines (``reasoning`` and other parts are left
  out); ``output.completion`` is the fallback when there are no choices;
- ``samples[i].error``: a sample that ended in an error is reported, not graded.

Not used: ``input`` and ``target`` (the bank holds the prompt and reference), ``scores`` (inspect's own
scorer is not a gold verdict), ``epoch`` (with several epochs the first sample of an item is kept and the
others are reported as duplicates). In a ``.eval`` archive the header is ``header.json`` (or, for a log
still being written, ``_journal/start.json``) and each sample is a ``samples/<id>_epoch_<n>.json`` entry,
whose name is the location reported; in a JSON log the location is ``samples[<index>]``. Field names were
checked against ``EvalLog``/``EvalSample``/``ModelOutput``/``ContentText`` of the inspect_ai sources; the
``.eval`` entry names follow its documented archive layout and are the least certain part.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from council.importers._core import (
    NOTHING, Candidate, dig, document_issue, json_document, non_blank, not_an_object, read_bytes, text_of,
)

_HEADERS = ("header.json", "_journal/start.json")
# what a damaged archive can raise while it is opened or an entry is read
_ZIP_ERRORS = (OSError, EOFError, ValueError, RuntimeError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile,
               zlib.error)


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
    for index, sample in enumerate(samples):
        yield _candidate(f"samples[{index}]", sample, model_id)


def _read_archive(name: str, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    try:
        archive = zipfile.ZipFile(name)
        names = archive.namelist()
    except _ZIP_ERRORS:
        problems.append(f"{name}: not a readable .eval archive (corrupt or truncated zip)")
        return
    with archive:
        model_id = model
        if model_id is None:
            header = next((h for h in _HEADERS if h in names), None)
            log = _load(archive, header) if header else None
            if not isinstance(log, dict):
                problems.append(f"{name}: no readable header.json in the .eval archive; pass --model")
                return
            model_id = _model(name, log, problems)
            if model_id is None:
                return
        entries = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
        if not entries:
            problems.append(f"{name}: no samples in the .eval archive")
            return
        for entry in entries:
            try:
                data = archive.read(entry)
            except _ZIP_ERRORS:
                yield Candidate(entry).issue("-", "cannot read the entry (corrupt archive)")
                continue
            sample, error = document_issue(data, line=False)
            yield Candidate(entry).issue("-", error) if error is not None else _candidate(entry, sample, model_id)


def _load(archive: zipfile.ZipFile, entry: str) -> Any:
    try:
        data = archive.read(entry)
    except _ZIP_ERRORS:
        return None
    value, error = document_issue(data)
    return None if error is not None else value


def _model(name: str, log: dict[str, Any], problems: list[str]) -> str | None:
    model_id = non_blank(dig(log, "eval", "model"))
    if model_id is None:
        problems.append(f"{name}: eval.model: missing; pass --model")
    return model_id


def _candidate(loc: str, sample: Any, model_id: str) -> Candidate:
    if not isinstance(sample, dict):
        return not_an_object(loc, sample)
    cand = Candidate(loc, fields={"model": model_id})
    item_id = non_blank(dig(sample, "metadata", "item_id"))
    raw_id = sample.get("id")
    if item_id is None and isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) and str(raw_id).strip():
        item_id = str(raw_id).strip()
    if item_id is None:
        cand.issue("id", "missing sample id")
    else:
        cand.fields["item_id"] = item_id
    error = sample.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        cand.issue("error", f"the sample ended in an error: {str(message)[:200]}")
        return cand
    output = sample.get("output")
    text = text_of(dig(output, "choices", 0, "message", "content"))
    if not (text and text.strip()):
        text = non_blank(dig(output, "completion")) and dig(output, "completion")
    if not (isinstance(text, str) and text.strip()):
        cand.issue("output", "no response text in output.choices[0].message.content or output.completion")
    else:
        cand.fields["response"] = text
    return cand
