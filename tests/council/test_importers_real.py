"""Importers on files the real tools write.

inspect_ai installs here (it is in the test extras), so inspect itself writes the logs: its mock model,
``.eval`` and ``.json``, default integer sample ids, ``epochs=2``, an answer made of content parts, an errored
sample and a NaN score (``tests/fixtures/importers/write_inspect_logs.py``, run in its own process so that
inspect's import, which teaches ``zipfile`` zstd, never reaches this one). The logs are then graded end to end.

lm-evaluation-harness and OpenAI evals do not install lightly: their files are written here the way their
sources write them, field for field, as each helper's docstring cites.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import struct
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import orjson
import pytest

import bank
from council.cli import main
from council.core.errors import ConfigError, InputError
from council.core.vendors import normalize_model_id, resolve_vendor
from council.importers import add_arguments, import_responses, load_from_args, load_id_map
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "importers"
WRITER = FIXTURES / "write_inspect_logs.py"
PLAIN_MODEL = "mockllm/openrouter/anthropic/claude-3.5-sonnet"  # inspect writes eval.model as "mockllm/<name>"
TAGGED_MODEL = "mockllm/hf/meta-llama/Llama-3.1-8B"
GRADED = ["cal-001", "cal-002", "fp-001"]  # cal-003 ends in an error in both epochs
ANSWERS = {"cal-001": "52,544", "cal-002": "36 × 18 = 648\n648 bottles.", "fp-001": "It never moved."}
HINT_FLAGS = ("--id-field FIELD", "--id-map FILE", "--match-prompt")


@pytest.fixture(scope="module")
def items():
    return bank.load_bank(bank.SAMPLE_BANK)


def problems_of(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return exc.value.problems


# --- inspect_ai: logs written by inspect itself --------------------------------------------------------


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory) -> dict[str, Any]:
    """inspect_ai's logs: {"inspect_ai": version, "plain-eval": Path, "plain-json": ..., "tagged-...": ...}."""
    out = tmp_path_factory.mktemp("inspect")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_"))}
    env.update(INSPECT_LOG_DIR=str(out), XDG_DATA_HOME=str(out / "data"), XDG_CACHE_HOME=str(out / "cache"),
               XDG_CONFIG_HOME=str(out / "config"), XDG_STATE_HOME=str(out / "state"), NO_COLOR="1")
    done = subprocess.run([sys.executable, str(WRITER), str(out)], cwd=out, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, f"inspect_ai could not write its logs:\n{done.stderr[-3000:]}"
    written = json.loads(done.stdout.strip().splitlines()[-1])
    return {"inspect_ai": written["inspect_ai"], **{k: Path(v) for k, v in written["logs"].items()}}


# Read in a fresh interpreter: another test of this process (the council's inspect scorer) may have imported
# inspect_ai, which teaches zipfile to read Zstandard members and would hide an importer that needs it to.
_WITHOUT_INSPECT = """
import json, sys, zipfile
import bank
from council.importers import import_responses
path = sys.argv[1]
with zipfile.ZipFile(path) as archive:
    member = archive.getinfo("samples/2_epoch_2.json")
    try:
        archive.read(member)
        stdlib = "read"
    except NotImplementedError as exc:
        stdlib = str(exc)
rows = import_responses(path, "inspect", items=bank.load_bank(bank.SAMPLE_BANK), match_prompt=True).rows
print(json.dumps({"compress_type": member.compress_type, "stdlib": stdlib, "rows": [r.row_id for r in rows],
                  "inspect_ai": "inspect_ai" in sys.modules}))
"""


def test_the_logs_are_what_the_tools_write(inspect_logs):
    """What broke the importers: zstd members, NaN, integer ids, two epochs, content parts, an error."""
    done = subprocess.run([sys.executable, "-c", _WITHOUT_INSPECT, str(inspect_logs["plain-eval"])],
                          capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["compress_type"] == 93 and not seen["inspect_ai"]  # Zstandard, read without inspect's zipfile patch
    if not hasattr(zipfile, "ZIP_ZSTANDARD"):  # Python < 3.14 reads no zstd member by itself
        assert "compression method is not supported" in seen["stdlib"]
    assert seen["rows"] == [row for row, _, _ in expected_rows(PLAIN_MODEL)]
    data = inspect_logs["plain-json"].read_bytes()
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    log = json.loads(data)  # Python's json reads NaN
    assert log["eval"]["model"] == PLAIN_MODEL and log["eval"]["config"]["epochs"] == 2
    assert [(s["id"], s["epoch"]) for s in log["samples"]] == [(i, e) for e in (1, 2) for i in (1, 2, 3, 4)]
    assert [p["type"] for p in log["samples"][1]["output"]["choices"][0]["message"]["content"]] == [
        "reasoning", "text", "text"]
    assert "RuntimeError" in log["samples"][2]["error"]["message"]
    assert log["samples"][3]["scores"]["nan_on_chat"]["value"] != log["samples"][3]["scores"]["nan_on_chat"]["value"]


def test_a_damaged_zstd_member_is_reported_and_the_rest_kept(inspect_logs, items, tmp_path):
    path = tmp_path / "damaged.eval"
    shutil.copy(inspect_logs["plain-eval"], path)
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("samples/1_epoch_2.json")
    with path.open("r+b") as handle:
        handle.seek(member.header_offset + 26)
        start = member.header_offset + 30 + sum(struct.unpack("<HH", handle.read(4)))
        handle.seek(start + member.compress_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x5A]))
    result = import_responses(path, "inspect", items=items, match_prompt=True)
    assert len(result.rows) == 5 and "cal-001::" + PLAIN_MODEL + "#e2" not in {r.row_id for r in result.rows}
    assert f"{path}:samples/1_epoch_2.json: -: cannot read the entry (corrupt archive)" in result.problems


def expected_rows(model: str) -> list[tuple[str, str, str]]:
    return [(f"{item}::{model}#e{epoch}", item, ANSWERS[item]) for epoch in (1, 2) for item in GRADED]


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_match_prompt_maps_inspect_integer_ids(inspect_logs, items, fmt):
    path = inspect_logs[f"plain-{fmt}"]
    result = import_responses(path, "inspect", items=items, match_prompt=True)
    assert [(r.row_id, r.item_id, r.response) for r in result.rows] == expected_rows(PLAIN_MODEL)
    assert {(r.model, r.vendor) for r in result.rows} == {(PLAIN_MODEL, "anthropic")}  # routing prefixes resolved
    errored = ["samples/3_epoch_1.json", "samples/3_epoch_2.json"] if fmt == "eval" else ["samples[2]", "samples[6]"]
    assert result.problems == [f"{path}:{loc}: error: the sample ended in an error: RuntimeError('the mock model "
                               f"refuses percentages')" for loc in errored]
    assert result.skipped == 2
    assert result.ids == "prompt text (--match-prompt: 8 of 8 records matched)"


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_id_field_reads_metadata_item_id(inspect_logs, items, fmt):
    path = inspect_logs[f"tagged-{fmt}"]
    result = import_responses(path, "inspect", items=items, id_field="metadata.item_id")
    assert [(r.row_id, r.item_id, r.response) for r in result.rows] == expected_rows(TAGGED_MODEL)
    assert {r.vendor for r in result.rows} == {"meta"}
    assert result.ids == "field metadata.item_id (--id-field)"
    assert import_responses(path, "inspect", items=items).rows == result.rows  # metadata.item_id is the default


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_unmatched_inspect_ids_name_the_three_ways_and_an_id_map_maps_them(inspect_logs, items, tmp_path, fmt):
    path = inspect_logs[f"plain-{fmt}"]
    with pytest.raises(InputError) as err:
        import_responses(path, "inspect", items=items)
    hint = problems_of(err)[-2]
    assert hint.startswith(f"{path}: 6 of 8 records name no bank item (ids such as '1', '2', '4')")
    assert all(flag in hint for flag in HINT_FLAGS), hint
    id_map = tmp_path / "ids.json"
    id_map.write_text(json.dumps({"1": "cal-001", "2": "cal-002", "4": "fp-001"}))
    result = import_responses(path, "inspect", items=items, id_map=id_map)
    assert [(r.row_id, r.item_id, r.response) for r in result.rows] == expected_rows(PLAIN_MODEL)
    assert result.ids == f"the sample's metadata.item_id, else its id, mapped by {id_map} (--id-map: 6 of 8 records)"


def test_grade_an_inspect_eval_log_end_to_end(inspect_logs, tmp_path, capsys, monkeypatch):
    log = inspect_logs["plain-eval"]
    runs = tmp_path / "runs"
    argv = ["grade", "--responses", str(log), "--format", "inspect", "--bank", str(bank.SAMPLE_BANK), "--simulate",
            "--backend", "local", "--runs-dir", str(runs), "--run-id", "inspect", "--match-prompt"]
    assert main(argv) == 2  # errored samples are problems: nothing is graded without --skip-invalid
    assert "the sample ended in an error" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["council", *argv, "--skip-invalid"])  # the manifest records the command line
    assert main([*argv, "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert f"imported 6 rows from {log} (inspect; bank ids: prompt text (--match-prompt" in " ".join(err.split())
    rows = [orjson.loads(line) for line in (runs / "inspect" / "rows.jsonl").read_bytes().splitlines()]
    assert sorted((r["row_id"], r["vendor"]) for r in rows) == sorted(
        (row_id, "anthropic") for row_id, _, _ in expected_rows(PLAIN_MODEL))
    manifest = orjson.loads((runs / "inspect" / "manifest.json").read_bytes())
    assert manifest["rows"] == 6 and "--match-prompt" in manifest["command"]
    assert [s.split(": ", 1)[0] for s in manifest["skipped_inputs"]] == [
        f"{log}:samples/3_epoch_1.json", f"{log}:samples/3_epoch_2.json"]
    summary = orjson.loads((runs / "inspect" / "summary.json").read_bytes())
    assert summary["complete"] and summary["rows"] == 6


async def test_grade_an_inspect_json_log_through_the_python_api(inspect_logs, items, tmp_path):
    result = import_responses(inspect_logs["tagged-json"], "inspect", items=items, id_field="metadata.item_id")
    run = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=inspect_logs["tagged-json"],
                                       runs_dir=tmp_path, run_id="api", backend="local", config=CouncilConfig(),
                                       rows=result.rows, skipped_inputs=result.problems))
    assert run.complete and run.summary["rows"] == 6
    rows = [orjson.loads(line) for line in (run.run_dir / "rows.jsonl").read_bytes().splitlines()]
    assert {(r["item_id"], r["vendor"]) for r in rows} == {(item, "meta") for item in GRADED}
    assert len({r["row_id"] for r in rows}) == 6


# --- routing prefixes: one normalisation for every command ------------------------------------------


@pytest.mark.parametrize(("routed", "plain"), [
    ("openrouter/anthropic/claude-3.5-sonnet", "anthropic/claude-3.5-sonnet"),
    ("hf/meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    ("together/Qwen/Qwen2.5-72B-Instruct-Turbo", "Qwen/Qwen2.5-72B-Instruct-Turbo"),
    ("groq/llama-3.3-70b-versatile", "llama-3.3-70b-versatile"),
    ("bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic.claude-3-5-sonnet-20241022-v2:0"),
    ("vertex/gemini-2.0-flash", "gemini-2.0-flash"),
    ("azure/gpt-4o", "gpt-4o"),
    ("openai/azure/gpt-4o", "openai/gpt-4o"),  # inspect's <provider>/<service>/<model>
    ("anthropic/bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
     "anthropic/anthropic.claude-3-5-haiku-20241022-v1:0"),
    ("google/vertex/gemini-2.0-flash", "google/gemini-2.0-flash"),
    ("openai/meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),  # an OpenAI-compatible server
    (PLAIN_MODEL, "anthropic/claude-3.5-sonnet"),
])
def test_routed_ids_are_the_same_model_and_vendor(routed, plain):
    assert normalize_model_id(routed) == normalize_model_id(plain)
    assert resolve_vendor(routed) == resolve_vendor(plain) is not None


# --- lm-evaluation-harness: samples_<task>_<date_id>.jsonl -------------------------------------------

DATE_ID = "2025-06-01T10-00-00.123456"


def sanitize_list(sub: Any) -> Any:
    """As ``lm_eval.utils.sanitize_list``: every leaf of a nested list made a string."""
    if isinstance(sub, list):
        return [sanitize_list(item) for item in sub]
    if isinstance(sub, tuple):
        return tuple(sanitize_list(item) for item in sub)
    return str(sub)


def lm_eval_line(doc_id: int, doc: dict, target: str, args: list[tuple], resps: list[list], filtered: list,
                 filter_key: str, metrics: dict) -> str:
    """One line of ``samples_<task>_<date_id>.jsonl`` as lm-evaluation-harness writes it.

    The ``example`` dict is built as in ``evaluate()`` of EleutherAI/lm-evaluation-harness
    ``lm_eval/evaluator.py`` (``doc_id``, ``doc``, ``target``, ``arguments``: each request's args,
    ``resps``: each request's responses, ``filtered_resps``, ``filter``, ``metrics``, ``doc_hash``,
    ``prompt_hash``, ``target_hash``, then ``example.update(metrics)``), and turned into a line as in
    ``EvaluationTracker.save_results_samples`` of ``lm_eval/loggers/evaluation_tracker.py`` (``arguments`` as
    ``{"gen_args_<i>": {"arg_<j>": ...}}``, ``sanitize_list`` on ``resps`` and ``filtered_resps``,
    ``str(target)``, ``json.dumps(..., ensure_ascii=False)``). The hashes are placeholders.
    """
    example = {"doc_id": doc_id, "doc": doc, "target": target, "arguments": args, "resps": resps,
               "filtered_resps": filtered, "filter": filter_key, "metrics": list(metrics), "doc_hash": "d" * 64,
               "prompt_hash": "p" * 64, "target_hash": "t" * 64}
    example.update(metrics)
    example["arguments"] = {f"gen_args_{i}": {f"arg_{j}": a for j, a in enumerate(arg)}
                            for i, arg in enumerate(example["arguments"])}
    example["resps"] = sanitize_list(example["resps"])
    example["filtered_resps"] = sanitize_list(example["filtered_resps"])
    example["target"] = str(example["target"])
    return json.dumps(example, ensure_ascii=False) + "\n"


GEN_KWARGS = {"until": ["Question:", "</s>"], "do_sample": False}
LM_DOCS = [  # (bank item, generation); gsm8k-style docs, doc_to_text "Question: {{question}}\nAnswer:"
    ("cal-001", "821 × 64 = 52,544. #### 52544"),
    ("cal-002", "36 × 18 = 648. #### 648"),
    ("cert-001", "391 = 17 × 23. #### 17, 23"),
]


def write_lm_eval(folder: Path, prompts: dict[str, str]) -> Path:
    """An lm-eval output folder: ``results_<date_id>.json`` and ``samples_<task>_<date_id>.jsonl``, each
    document logged once per filter (strict-match, flexible-extract), one metric NaN, and a
    log-likelihood document."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for doc_id, (item, text) in enumerate(LM_DOCS):
        doc = {"question": prompts[item], "answer": f"... #### {item}", "qid": item}
        context = f"Question: {prompts[item]}\nAnswer:"
        for filter_key, picked in (("strict-match", text.rsplit("#### ", 1)[-1]), ("flexible-extract", "0")):
            exact = float("nan") if item == "cert-001" else float(filter_key == "strict-match")
            lines.append(lm_eval_line(doc_id, doc, doc["answer"], [(context, GEN_KWARGS)], [[text]], [picked],
                                      filter_key, {"exact_match": exact}))
    choice_doc = {"question": prompts["fp-001"], "choices": ["Paris", "Lyon"], "qid": "fp-001"}
    lines.append(lm_eval_line(3, choice_doc, "0", [(f"Q: {prompts['fp-001']}\nA:", " Paris"),
                                                  (f"Q: {prompts['fp-001']}\nA:", " Lyon")],
                              [[(-1.25, False)], [(-3.5, False)]], [(-1.25, False), (-3.5, False)], "none",
                              {"acc": 1.0}))
    samples = folder / f"samples_gsm8k_council_{DATE_ID}.jsonl"
    samples.write_text("".join(lines), encoding="utf-8")
    results = {"results": {"gsm8k_council": {"alias": "gsm8k_council", "exact_match,strict-match": 0.667}},
               "config": {"model": "hf", "model_args": "pretrained=Qwen/Qwen2.5-7B-Instruct,dtype=bfloat16",
                          "batch_size": "auto"},
               "model_source": "hf", "model_name": "Qwen/Qwen2.5-7B-Instruct",
               "model_name_sanitized": "Qwen__Qwen2.5-7B-Instruct", "lm_eval_version": "0.4.8"}
    (folder / f"results_{DATE_ID}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return samples


@pytest.fixture()
def lm_eval_samples(tmp_path, items):
    return write_lm_eval(tmp_path / "Qwen__Qwen2.5-7B-Instruct", {i.id: i.prompt for i in items})


def test_lm_eval_doc_ids_hint_then_map(lm_eval_samples, items, tmp_path):
    with pytest.raises(InputError) as err:
        import_responses(lm_eval_samples, "lm_eval", items=items)
    problems = problems_of(err)
    assert problems[:3] == [f"{lm_eval_samples}:{line}: item_id: unknown item '{doc_id}'"
                            for line, doc_id in ((1, 0), (3, 1), (5, 2))]
    assert problems[3] == (f"{lm_eval_samples}:7: resps: holds log-likelihood scores, not generated text (only "
                           "generate_until tasks can be graded)")
    assert problems[4].startswith(f"{lm_eval_samples}: 3 of 4 records name no bank item (ids such as '0', '1', '2')")
    assert all(flag in problems[4] for flag in HINT_FLAGS)
    id_map = tmp_path / "doc_ids.csv"
    with id_map.open("w", newline="") as handle:
        csv.writer(handle).writerows([("doc_id", "item_id"), ("0", "cal-001"), ("1", "cal-002"), ("2", "cert-001")])
    result = import_responses(lm_eval_samples, "lm_eval", items=items, id_map=id_map)
    assert [(r.item_id, r.model, r.vendor) for r in result.rows] == [
        (item, "Qwen/Qwen2.5-7B-Instruct", "alibaba") for item, _ in LM_DOCS]
    assert [r.response for r in result.rows] == [text for _, text in LM_DOCS]  # resps[0][0], not filtered
    assert result.skipped == 1 and len(result.problems) == 1  # the log-likelihood document
    assert result.ids == f"doc.item_id, else doc.id, else doc_id, mapped by {id_map} (--id-map: 3 of 4 records)"


def test_lm_eval_match_prompt_and_id_field(lm_eval_samples, items):
    by_prompt = import_responses(lm_eval_samples, "lm_eval", items=items, match_prompt=True)
    by_field = import_responses(lm_eval_samples, "lm_eval", items=items, id_field="doc.qid")
    assert [r.item_id for r in by_prompt.rows] == [r.item_id for r in by_field.rows] == [i for i, _ in LM_DOCS]
    assert by_prompt.rows == by_field.rows
    assert by_field.ids == "field doc.qid (--id-field)"


def test_lm_eval_chat_template_prompt(tmp_path, items):
    """A chat model's ``arg_0`` is the JSON of its messages (lm-eval's ``JsonChatStr``); ``doc`` has no prompt."""
    prompt = next(i.prompt for i in items if i.id == "cal-003")
    chat = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}])
    line = lm_eval_line(0, {"idx": 17}, "84", [(chat, GEN_KWARGS)], [["84"]], ["84"], "none", {"exact_match": 1.0})
    path = tmp_path / f"samples_chat_{DATE_ID}.jsonl"
    path.write_text(line, encoding="utf-8")
    result = import_responses(path, "lm_eval", items=items, model="openai/gpt-4o-mini", match_prompt=True)
    assert [(r.item_id, r.vendor) for r in result.rows] == [("cal-003", "openai")]


# --- OpenAI evals: the recorder's JSONL --------------------------------------------------------------

RUN_ID = "250601100000ABCDEFGH"


def evals_event(event_id: int, sample_id: str, kind: str, data: dict) -> dict:
    """An ``Event`` of ``evals/record.py`` (openai/evals) as ``LocalRecorder._flush_events_internal`` writes it
    (``jsondumps`` of the dataclass: ``run_id``, ``event_id``, ``sample_id``, ``type``, ``data``,
    ``created_by``, ``created_at`` as ``str(datetime.now(timezone.utc))``)."""
    return {"run_id": RUN_ID, "event_id": event_id, "sample_id": sample_id, "type": kind, "data": data,
            "created_by": "", "created_at": f"2025-06-01 10:00:{event_id:02d}.123456+00:00"}


def write_openai_evals(path: Path, prompts: dict[str, str]) -> Path:
    """A ``capitals``-style Match eval run by ``oaieval gpt-4o-mini capitals``.

    First line ``{"spec": dataclasses.asdict(RunSpec)}`` (``LocalRecorder.__init__``; ``RunSpec`` of
    ``evals/base.py``); per sample, the completion function's ``record_sampling(prompt=..., sampled=[...],
    model=..., usage=...)`` (``evals/completion_fns/openai.py``) and ``record_match`` (``correct``, ``expected``,
    ``picked``, ``sampled``, ``options``; ``record_and_check_match`` in ``evals/api.py``), under the sample ids
    ``<base_eval>.<split>.<index>`` of ``Eval.eval_all_samples`` (``evals/eval.py``), in the order the threads
    finished; ``{"final_report": ...}`` (``record_final_report``) before the last flushed events. A plain
    string prompt reaches a chat model as one system message (``ChatCompletionPrompt`` of
    ``evals/prompt/base.py``).
    """
    spec = {"completion_fns": ["gpt-4o-mini"], "eval_name": "capitals.dev.v0", "base_eval": "capitals",
            "split": "dev", "run_config": {"completion_fns": ["gpt-4o-mini"],
                                           "eval_spec": {"cls": "evals.elsuite.basic.match:Match",
                                                         "args": {"samples_jsonl": "capitals/samples.jsonl"},
                                                         "key": "capitals.dev.v0", "group": "capitals"},
                                           "seed": 20220722, "max_samples": None, "command": "oaieval ...",
                                           "initial_settings": {"visible": True}},
            "created_by": "", "run_id": RUN_ID, "created_at": "2025-06-01 10:00:00.000000"}
    samples = [("cal-001", "52,544", True), ("fp-001", "It never moved.", True), ("ign-001", "Toast?", False)]
    usage = {"completion_tokens": 5, "prompt_tokens": 20, "total_tokens": 25, "completion_tokens_details": None,
             "prompt_tokens_details": None}
    events, n = [], 0
    for idx in (2, 0, 1):  # threads finish out of order
        item, sampled, chat = samples[idx]
        prompt = ([{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": prompts[item]}]
                  if chat else [{"role": "system", "content": prompts[item]}])
        events.append(evals_event(n, f"capitals.dev.{idx}", "sampling", {
            "prompt": prompt, "sampled": [sampled], "model": "gpt-4o-mini-2024-07-18", "usage": usage}))
        events.append(evals_event(n + 1, f"capitals.dev.{idx}", "match", {
            "correct": False, "expected": ["x"], "picked": None, "sampled": sampled, "options": ["x"]}))
        n += 2
    final = {"accuracy": float("nan"), "boostrap_std": float("nan")}
    lines = [{"spec": spec}, *events[:4], {"final_report": final}, *events[4:]]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture()
def evals_log(tmp_path, items):
    return write_openai_evals(tmp_path / "capitals.jsonl", {i.id: i.prompt for i in items})


def test_openai_evals_sample_ids_hint_then_map_or_match(evals_log, items, tmp_path):
    with pytest.raises(InputError) as err:
        import_responses(evals_log, "openai_evals", items=items)
    problems = problems_of(err)
    assert problems[:3] == [f"{evals_log}:{line}: item_id: unknown item 'capitals.dev.{idx}'"
                            for line, idx in ((2, 2), (4, 0), (7, 1))]
    assert problems[3].startswith(f"{evals_log}: 3 of 3 records name no bank item (ids such as 'capitals.dev.2'")
    assert all(flag in problems[3] for flag in HINT_FLAGS)
    assert problems[4] == f"{evals_log}: no usable records (3 skipped)"
    expected = [("ign-001", "Toast?"), ("cal-001", "52,544"), ("fp-001", "It never moved.")]
    matched = import_responses(evals_log, "openai_evals", items=items, match_prompt=True)
    assert [(r.item_id, r.response) for r in matched.rows] == expected
    assert {(r.model, r.vendor) for r in matched.rows} == {("gpt-4o-mini", "openai")}
    id_map = tmp_path / "ids.json"
    id_map.write_text(json.dumps({"capitals.dev.0": "cal-001", "capitals.dev.1": "fp-001",
                                  "capitals.dev.2": "ign-001"}))
    mapped = import_responses(evals_log, "openai_evals", items=items, id_map=id_map)
    assert mapped.rows == matched.rows and mapped.problems == []


# --- overlooked-bench: a published raw record ------------------------------------------------------


def test_overlooked_published_raw_record(tmp_path, items):
    """``data/runs/2026-09-08/raw/claude-haiku-4-5/calibration-general/cal-001.json`` of
    kcelestinomaria/overlooked-bench, field for field (its text shortened), at ``raw_path`` and written as
    ``write_json`` of ``harness/run_eval.py`` does."""
    record = {"attempts": 1, "category": "calibration-general", "completion_tokens": 229, "cost_usd": 0.001244,
              "error": None, "finish_reason": "stop", "harness_version": "0.1.0",
              "item_content_hash": "7241a21ed197ae23", "item_id": "cal-001", "latency_s": 1.789,
              "methodology_version": "m1.0.0", "model_id": "anthropic/claude-haiku-4.5",
              "model_key": "claude-haiku-4-5", "ok": True, "prompt_tokens": 99, "provider": "anthropic",
              "request_fingerprint": "7f33a74a1e28014a",
              "request_params": {"max_tokens": 4000, "model": "anthropic/claude-haiku-4.5", "temperature": 0.0},
              "text": "# Calculating the Tailor's Profit\n\n...\n\nANSWER: 810",
              "timestamp_utc": "2026-09-07T22:28:31Z"}
    path = tmp_path / "run" / "raw" / "claude-haiku-4-5" / "calibration-general" / "cal-001.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    result = import_responses(tmp_path / "run", "overlooked", items=items)
    assert [(r.item_id, r.model, r.vendor, r.response) for r in result.rows] == [
        ("cal-001", "anthropic/claude-haiku-4.5", "anthropic", record["text"])]
    with pytest.raises(InputError) as err:
        import_responses(tmp_path / "run", "overlooked", items=items, match_prompt=True)
    assert problems_of(err)[0] == (f"{tmp_path / 'run'}:raw/claude-haiku-4-5/calibration-general/cal-001.json: "
                                   "prompt: this format's records hold no prompt text to match (--match-prompt)")


# --- the id options themselves ----------------------------------------------------------------------


def test_match_prompt_problems_name_file_and_line(tmp_path):
    bank_path = tmp_path / "bank.jsonl"
    rows = [{"id": f"q-{n}", "probe": "calibration", "prompt": p, "reference": "r", "rationale": "r"}
            for n, p in enumerate(["Same  question?", "Same question?", "Other question?"])]
    bank_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = bank.load_bank(bank_path)
    log = tmp_path / "events.jsonl"
    events = [{"spec": {"completion_fns": ["gpt-4o"]}}] + [
        evals_event(n, f"e.dev.{n}", "sampling", {"prompt": prompt, "sampled": ["a"]})
        for n, prompt in enumerate(["Same question?", " Other\nquestion? ", "Unknown question?"])]
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    result = import_responses(log, "openai_evals", items=items, match_prompt=True)
    assert [r.item_id for r in result.rows] == ["q-2"]
    assert result.problems == [
        f"{log}:2: data.prompt: ambiguous: the input equals the prompt of 2 bank items ('q-0', 'q-1')",
        f"{log}:4: data.prompt: no bank item's prompt equals this input (after whitespace normalisation)",
    ]


def test_id_map_files_and_option_errors(tmp_path, items):
    good = tmp_path / "map.csv"
    good.write_text("capitals.dev.0,cal-001\n\ncapitals.dev.1,fp-001\ncapitals.dev.0,cal-001\n")
    assert load_id_map(good) == {"capitals.dev.0": "cal-001", "capitals.dev.1": "fp-001"}
    bad = tmp_path / "bad.csv"
    bad.write_text("record,item_id\na,cal-001\nb\na,cal-002\n")
    with pytest.raises(ConfigError) as err:
        load_id_map(bad)
    assert str(err.value).splitlines() == [
        f"{bad}:3: expected two non-empty columns, record id and bank id",
        f"{bad}:4: record id 'a' is mapped again (line 2 maps it to 'cal-001')",
    ]
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="one JSON object"):
        load_id_map(tmp_path / "list.json")
    with pytest.raises(ConfigError, match="cannot be combined"):
        import_responses(FIXTURES / "openai_evals.jsonl", "openai_evals", items=items, match_prompt=True,
                         id_map={"a": "b"})
    with pytest.raises(ConfigError, match="needs the bank"):
        import_responses(FIXTURES / "openai_evals.jsonl", "openai_evals", items=None, match_prompt=True)


def test_cli_id_options(tmp_path, items, evals_log):
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=Path)
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--responses", "x", "--match-prompt", "--id-field", "data.item_id"])
    args = parser.parse_args(["--responses", str(evals_log), "--format", "openai_evals", "--match-prompt"])
    assert [r.item_id for r in load_from_args(args, items).rows] == ["ign-001", "cal-001", "fp-001"]
    id_map = tmp_path / "ids.json"
    id_map.write_text(json.dumps({"capitals.dev.0": "cal-001"}))
    args = parser.parse_args(["--responses", str(evals_log), "--format", "openai_evals", "--id-map", str(id_map)])
    result = load_from_args(args, items)
    assert [r.item_id for r in result.rows] == ["cal-001"]
    assert result.problems[0] == f"{evals_log}:2: item_id: unknown item 'capitals.dev.2' (nor in the id map)"


def test_dataclass_layouts_match_the_cited_sources():
    """The field lists copied from the tools, in one place (see the helpers above)."""
    event = evals_event(0, "capitals.dev.0", "sampling", {})
    assert list(event) == ["run_id", "event_id", "sample_id", "type", "data", "created_by", "created_at"]
    line = json.loads(lm_eval_line(0, {}, "t", [("ctx", {})], [["x"]], ["x"], "none", {"exact_match": 1.0}))
    assert list(line) == ["doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                          "doc_hash", "prompt_hash", "target_hash", "exact_match"]
