"""lm-evaluation-harness ``--log_samples`` output: ``samples_<task>_<date>.jsonl`` (or ``.jsonl.gz``).

Each line is one logged document, as the harness writes it: the ``example`` dict of ``evaluate()`` in
``lm_eval/evaluator.py`` (``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``,
``filter``, ``metrics``, ``doc_hash``, ``prompt_hash``, ``target_hash`` and the metric values), turned into
a line by ``EvaluationTracker.save_results_samples`` in ``lm_eval/loggers/evaluation_tracker.py``:
``arguments`` becomes ``{"gen_args_<i>": {"arg_<j>": ...}}`` (for ``generate_until``, ``arg_0`` is the
prompt sent and ``arg_1`` the generation kwargs), ``resps`` and ``filtered_resps`` have every leaf made a
string (``sanitize_list``), ``target`` is a string, and the line is ``json.dumps`` (so a metric may be
``NaN``, which is read as such).

- ``item_id``: ``doc.item_id``, else ``doc.id``, else ``str(doc_id)`` (the harness's integer position of
  the document in the task's split: it names a bank item only through ``--id-map``, ``--id-field`` or
  ``--match-prompt``, which matches ``arguments.gen_args_0.arg_0``, a chat prompt's user messages when
  ``arg_0`` is a JSON list of messages, or any string field of ``doc``);
- ``response``: the raw generation ``resps[0][0]`` (the model's full text before the task's filters; the
  judges grade the answer as written, not the extracted one). Only ``generate_until`` tasks have text there:
  a log-likelihood task's ``resps`` hold numbers and its lines are reported;
- the harness writes a document once per filter (``filter``: ``strict-match``, ``flexible-extract``, ...;
  older versions write no ``filter``): those repeats carry the same ``resps`` and are folded into the first
  line silently;
- ``model``: the lines do not name it. It comes from the ``model=`` override, else from the results JSON
  the harness writes next to the samples (``results_<date>.json``, the one whose date stamp matches, or the
  only one there): its ``model_name``, else the model named in ``config.model_args`` (``pretrained=``,
  ``model=``, ...; string or dict). ``target`` is not used (the bank holds the reference).

The results file is ``results_<date_id>.json`` in the same folder (``save_results_aggregated``), with the
same ``date_id`` as the samples file; it carries ``model_name`` and ``config.model_args``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from council.core.vendors import model_from_model_args
from council.importers._candidate import Candidate, dig, non_blank, prompt_texts, scalar_id
from council.importers._read import document_issue, jsonl_candidates, read_bytes

ID_SOURCE = "doc.item_id, else doc.id, else doc_id"


def read(name: str, *, model: str | None, problems: list[str]) -> Iterator[Candidate]:
    if not os.path.isfile(name):
        read_bytes(name, problems)  # the usual file-level message
        return
    model_id = model or _model_from_results(name, problems)
    if model_id is None:
        return
    yield from jsonl_candidates(name, problems, lambda loc, obj: _candidate(loc, obj, model_id), lenient=True)


def _candidate(loc: str, obj: dict[str, Any], model_id: str) -> Candidate:
    variant = obj.get("filter") if isinstance(obj.get("filter"), str) else f"line {loc}"
    cand = Candidate(loc, fields={"model": model_id}, variant=variant, record=obj, prompts=_prompts(obj),
                     prompt_field="arguments", id_issue=("doc_id", "missing (no doc.item_id, doc.id or doc_id)"))
    item_id = (non_blank(dig(obj, "doc", "item_id")) or scalar_id(dig(obj, "doc", "id"))
               or scalar_id(obj.get("doc_id")))
    if item_id is not None:
        cand.fields["item_id"] = item_id
    resps = obj.get("resps")
    first = dig(resps, 0)
    text = first if isinstance(first, str) else dig(first, 0)
    if isinstance(text, str) and text.strip():
        cand.fields["response"] = text
    elif isinstance(text, str):
        cand.issue("resps", "empty response text")
    elif isinstance(text, (int, float, list)):
        cand.issue("resps", "holds log-likelihood scores, not generated text (only generate_until tasks can be graded)")
    else:
        cand.issue("resps", "missing response text (expected resps[0][0] to be the generated text)")
    return cand


def _prompts(obj: dict[str, Any]) -> list[str]:
    """The prompt sent (``arguments.gen_args_0.arg_0``; a chat prompt's user messages when it is a JSON list
    of messages), then the string fields of ``doc``."""
    texts: list[str] = []
    sent = dig(obj, "arguments", "gen_args_0", "arg_0")
    if isinstance(sent, str):
        texts.append(sent)
        if sent.lstrip().startswith("["):
            try:
                texts.extend(prompt_texts(orjson.loads(sent)))
            except orjson.JSONDecodeError:
                pass
    doc = obj.get("doc")
    if isinstance(doc, dict):
        texts.extend(v for v in doc.values() if isinstance(v, str))
    return texts


def _model_from_results(name: str, problems: list[str]) -> str | None:
    path = Path(name)
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
    stamp = stem.rsplit("_", 1)[-1] if stem.startswith("samples_") and "_" in stem[len("samples_"):] else None
    results = sorted(path.parent.glob("results_*.json"))
    chosen = next((r for r in results if stamp and r.name == f"results_{stamp}.json"), None)
    if chosen is None and len(results) == 1:
        chosen = results[0]
    if chosen is None:
        why = (f"several results_*.json next to it and none matches its date stamp {stamp!r}" if results
               else "no results_*.json next to it")
        problems.append(f"{name}: cannot tell which model wrote these samples ({why}); pass --model")
        return None
    try:
        summary, error = document_issue(chosen.read_bytes())
    except OSError as exc:
        error = f"cannot read it: {exc.strerror or exc}"
    if error is not None:
        problems.append(f"{name}: cannot read {chosen.name} for the model name ({error}); pass --model")
        return None
    model_id = non_blank(dig(summary, "model_name")) or model_from_model_args(dig(summary, "config", "model_args"))
    if model_id is None:
        problems.append(f"{name}: {chosen.name} names no model (model_name, config.model_args); pass --model")
    return model_id
