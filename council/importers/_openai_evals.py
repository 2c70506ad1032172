"""OpenAI evals (``oaieval``) local recorder logs: JSONL written by ``evals.record.LocalRecorder``.

The first line is ``{"spec": RunSpec}`` (``LocalRecorder.__init__``); then one line per ``Event``
(``LocalRecorder._flush_events_internal``) with ``run_id``, ``event_id``, ``sample_id``, ``type``, ``data``,
``created_by``, ``created_at``; ``{"final_report": ...}`` (``record_final_report``) may come before the
last events, which are flushed in batches. Lines are ``evals.data.jsondumps`` (``json.dumps``), so a
metric may be ``NaN``, which is read as such.

- only ``type == "sampling"`` events are read (``data.prompt``, ``data.sampled``); ``match``, ``metrics``
  and the other event types are ignored;
- ``response``: ``data.sampled``, a string or a list of strings (the first one is taken);
- ``item_id``: ``data.item_id`` (extra fields given to ``record_sampling`` land in ``data``), else
  ``data.id``, else ``sample_id``. The recorder's own sample ids are ``<base_eval>.<split>.<index>``
  (``Eval.eval_all_samples`` in ``evals/eval.py``, e.g. ``capitals.dev.0``), so a bank item is found only
  when the eval recorded its id or used bank ids as sample ids, or through ``--id-map``, ``--id-field``
  or ``--match-prompt`` (matched against ``data.prompt``: a string, or the user messages of a chat prompt);
- ``model``: the ``model=`` override, else ``spec.completion_fns[0]`` (older logs: ``spec.model_name`` or
  ``spec.model_names.completions[0]``). Every completion call is recorded as a sampling event, so a
  model-graded eval also logs its grader's calls under the same sample id: the first sampling event of a
  sample is kept and later ones are reported as duplicates.

Field names were checked against ``evals/record.py`` (``Event``, ``record_sampling``, ``LocalRecorder``)
and ``evals/base.py`` (``RunSpec``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from council.importers._candidate import Candidate, dig, non_blank, not_an_object, prompt_texts, scalar_id
from council.importers._read import lenient_lines, read_bytes

ID_SOURCE = "data.item_id, else data.id, else sample_id"


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    data = read_bytes(name, problems)
    if data is None:
        return
    lines = list(lenient_lines(name, data, problems))
    spec = next((obj["spec"] for _, obj, _ in lines if isinstance(obj, dict) and isinstance(obj.get("spec"), dict)),
                None)
    model_id = model or _model(spec)
    if model_id is None:
        problems.append(f"{name}: no spec line naming completion_fns; pass --model")
        return
    for lineno, obj, error in lines:
        loc = str(lineno)
        if error is not None:
            yield Candidate(loc).issue("-", error)
        elif not isinstance(obj, dict):
            yield not_an_object(loc, obj)
        elif obj.get("type") == "sampling":
            yield _candidate(loc, obj, model_id)


def _model(spec: dict[str, Any] | None) -> str | None:
    if spec is None:
        return None
    return (
        non_blank(dig(spec, "completion_fns", 0))
        or non_blank(spec.get("model_name"))
        or non_blank(dig(spec, "model_names", "completions", 0))
    )


def _candidate(loc: str, event: dict[str, Any], model_id: str) -> Candidate:
    cand = Candidate(loc, fields={"model": model_id}, record=event, prompt_field="data.prompt")
    data = event.get("data")
    if not isinstance(data, dict):
        return cand.issue("data", "missing (a sampling event needs data.sampled)")
    cand.id_issue = ("sample_id", "missing (and data carries no item_id)")
    cand.prompts = prompt_texts(data.get("prompt"))
    item_id = non_blank(data.get("item_id")) or non_blank(data.get("id")) or scalar_id(event.get("sample_id"))
    if item_id:
        cand.fields["item_id"] = item_id
    sampled = data.get("sampled")
    text = sampled if isinstance(sampled, str) else dig(sampled, 0)
    if isinstance(text, str) and text.strip():
        cand.fields["response"] = text
    else:
        cand.issue("data.sampled", "empty response text" if isinstance(text, str) else "missing response text")
    return cand
