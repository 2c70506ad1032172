"""Importers of other benchmarks' outputs: good records kept, every bad one reported at its location."""

from __future__ import annotations

import argparse
import json
import shutil
import zipfile
from pathlib import Path

import pytest

import bank
from council.core.errors import ConfigError, InputError
from council.importers import (
    FORMATS,
    add_arguments,
    import_responses,
    load_from_args,
    load_vendor_map,
    resolve_vendor,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "importers"
JSONL = FIXTURES / "responses.jsonl"
INSPECT = FIXTURES / "inspect_log.json"
LM_EVAL = FIXTURES / "lm_eval" / "samples_council_gen_2025-06-01T10-00-00.123456.jsonl"
OPENAI_EVALS = FIXTURES / "openai_evals.jsonl"
OVERLOOKED_RUN = FIXTURES / "overlooked_run"
OVERLOOKED_JSONL = FIXTURES / "overlooked.jsonl"


@pytest.fixture(scope="module")
def items():
    return bank.load_bank(bank.SAMPLE_BANK)


def triples(result):
    return [(r.item_id, r.model, r.vendor) for r in result.rows]


def at(path: Path, loc: str, rest: str) -> str:
    return f"{path}:{loc}: {rest}"


# --- vendor resolution ---------------------------------------------------------------------------

@pytest.mark.parametrize("model_id, vendor", [
    ("gpt-4o", "openai"), ("o3", "openai"), ("o4-mini", "openai"), ("gpt-4.1-mini", "openai"),
    ("claude-3-5-sonnet-latest", "anthropic"), ("gemini-2.5-pro", "google"), ("gemma-2-9b-it", "google"),
    ("qwen2.5-72b-instruct", "alibaba"), ("deepseek-r1", "deepseek"), ("llama-3.1-8b", "meta"),
    ("meta-llama-3-70b", "meta"), ("grok-3", "xai"), ("mistral-large-latest", "mistral"), ("mixtral-8x7b", "mistral"),
    ("qwen/qwen3-max", "alibaba"), ("x-ai/grok-4", "xai"), ("moonshotai/kimi-k2", "moonshot"),
    ("nousresearch/hermes-3", "nousresearch"),  # OpenRouter convention: the org is the vendor
    ("openai/gpt-4o", "openai"), ("anthropic/claude-3-5-sonnet-latest", "anthropic"),
    ("openrouter/meta-llama/llama-3.1-70b", "meta"), ("together/Qwen/Qwen2.5-72B-Instruct", "alibaba"),
    ("hf/meta-llama/Llama-3.1-8B-Instruct", "meta"), ("grok/grok-3-beta", "xai"), ("vertex/gemini-1.5-pro", "google"),
    ("ollama/llama3.1:8b", "meta"), ("bedrock/anthropic.claude-3-5-sonnet", "anthropic"),
    ("pretrained=meta-llama/Llama-3.1-8B-Instruct,dtype=bfloat16", "meta"),
    ("model=gpt-4o,base_url=http://localhost:8000/v1", "openai"),
])
def test_default_vendors(model_id, vendor):
    assert resolve_vendor(model_id) == vendor


@pytest.mark.parametrize("model_id", ["local-finetune-7", "gpt-neox-20b", "", "   "])
def test_unknown_bare_ids_resolve_to_none(model_id):
    assert resolve_vendor(model_id) is None


def test_vendor_map_wins_exact_then_prefix():
    vmap = {"local-finetune-7": "meta", "acme": "openai", "qwen/qwen3-max": "qwen-labs"}
    assert resolve_vendor("local-finetune-7", vmap) == "meta"
    assert resolve_vendor("acme/thing-1", vmap) == "openai"
    assert resolve_vendor("openrouter/acme/thing-1", vmap) == "openai"  # prefix after the routing prefix
    assert resolve_vendor("qwen/qwen3-max", vmap) == "qwen-labs"  # beats the built-in alibaba
    assert resolve_vendor("qwen/qwen3-coder", vmap) == "alibaba"  # not in the map: defaults


# --- jsonl (the project's schema) --------------------------------------------------------------------

def test_jsonl_keeps_good_rows_and_reports_each_bad_line(items):
    result = import_responses(JSONL, "jsonl", items=items)
    assert triples(result) == [
        ("cal-001", "anthropic/claude-haiku-4.5", "anthropic"),
        ("ign-001", "gpt-4o", "openai"),
        ("fp-001", "qwen/qwen3-max", "alibaba"),
        ("cert-001", "deepseek/deepseek-v3.2", "deepseek"),
    ]
    first = result.rows[0]
    assert first.response == "The answer is 52,544." and first.gold_verdict == "correct"
    assert first.row_id == "cal-001::anthropic/claude-haiku-4.5"
    assert result.rows[1].abstained is True and result.rows[1].confidence == 0.9
    assert result.problems == [
        at(JSONL, "3", "-: invalid JSON (unexpected end of data at column 66)"),
        at(JSONL, "4", "response: Field required"),
        at(JSONL, "5", "item_id: unknown item 'zzz-999'"),
        at(JSONL, "6", "model: cannot decide the vendor of model 'local-finetune-7'; map it with --vendor-map"),
        at(JSONL, "9", "row_id: duplicate of line 1 (same item 'cal-001' and model 'anthropic/claude-haiku-4.5')"),
        at(JSONL, "10", "confidence: Input should be less than or equal to 1"),
    ]
    assert result.skipped == 6


def test_jsonl_vendor_map_maps_and_overrides(items):
    vmap = {"local-finetune-7": "meta", "qwen": "qwen-labs"}
    result = import_responses(JSONL, "jsonl", items=items, vendor_map=vmap)
    vendors = {(r.item_id, r.model): r.vendor for r in result.rows}
    assert vendors[("cal-003", "local-finetune-7")] == "meta"
    assert vendors[("fp-001", "qwen/qwen3-max")] == "qwen-labs"
    assert not any(":6:" in p for p in result.problems)
    assert result.skipped == 5


def test_jsonl_agrees_with_the_bank_loader_on_the_shipped_sample(items):
    result = import_responses(bank.SAMPLE_RESPONSES, "jsonl", items=items)
    assert result.problems == [] and result.skipped == 0
    assert result.rows == bank.load_responses(bank.SAMPLE_RESPONSES, items)


def test_without_items_unknown_ids_pass():
    result = import_responses(JSONL, "jsonl", items=None)
    assert ("zzz-999", "qwen/qwen3-max", "alibaba") in triples(result)
    assert result.skipped == 5


# --- inspect_ai ------------------------------------------------------------------------------------

def test_inspect_json_log(items):
    result = import_responses(INSPECT, "inspect", items=items)
    model = "anthropic/claude-3-5-sonnet-latest"
    assert triples(result) == [("cal-001", model, "anthropic"), ("cal-002", model, "anthropic"),
                               ("fp-001", model, "anthropic")]
    assert [r.response for r in result.rows] == [
        "821 × 64 = 52,544.",
        "36 × 18 = 648\nSo 648 bottles.",  # text parts joined, the reasoning part left out
        "It never moved; it is in Paris.",  # output.completion when there are no choices
    ]
    assert result.problems == [
        at(INSPECT, "samples[3]", "-: expected a JSON object, got a string"),
        at(INSPECT, "samples[4]", "output: no response text in output.choices[0].message.content or output.completion"),
        at(INSPECT, "samples[5]", "item_id: unknown item 'zzz-404'"),
        at(INSPECT, "samples[6]", "error: the sample ended in an error: RuntimeError: sandbox died"),
        at(INSPECT, "samples[7]", f"item_id: duplicate of samples[0] (same item 'cal-001' and model '{model}')"),
    ]
    assert result.skipped == 5


def test_inspect_eval_archive(items, tmp_path):
    log = json.loads(INSPECT.read_text(encoding="utf-8"))
    header = {k: v for k, v in log.items() if k != "samples"}
    header["eval"]["model"] = "openrouter/meta-llama/llama-3.1-70b"
    path = tmp_path / "2025-06-01T10-00-00_council-sample_abc.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": header["eval"]}))
        archive.writestr("samples/cal-001_epoch_1.json", json.dumps(log["samples"][0]))
        archive.writestr("samples/7_epoch_1.json", json.dumps(log["samples"][1]))
        archive.writestr("samples/zzz-404_epoch_1.json", "{\"id\": \"zzz-404\", ")
        archive.writestr("header.json", json.dumps(header))
    result = import_responses(path, "inspect", items=items)
    model = "openrouter/meta-llama/llama-3.1-70b"
    assert triples(result) == [("cal-001", model, "meta"), ("cal-002", model, "meta")]
    assert result.problems == [
        at(path, "samples/zzz-404_epoch_1.json", "-: invalid JSON (unexpected end of data at column 19)")
    ]


def test_inspect_model_override_and_unmappable_model(items):
    result = import_responses(INSPECT, "inspect", items=items, model="google/gemini-2.5-pro")
    assert {r.vendor for r in result.rows} == {"google"}
    with pytest.raises(InputError) as err:
        import_responses(INSPECT, "inspect", items=items, model="local-finetune-7")
    unmappable = [p for p in err.value.problems if "cannot decide the vendor of model 'local-finetune-7'" in p]
    assert [p.split(":")[1] for p in unmappable] == ["samples[0]", "samples[1]", "samples[2]", "samples[5]",
                                                     "samples[7]"]
    assert err.value.problems[-1] == f"{INSPECT}: no usable records (8 skipped)"


# --- lm-evaluation-harness -------------------------------------------------------------------------

def test_lm_eval_samples_with_the_neighbouring_results(items):
    result = import_responses(LM_EVAL, "lm_eval", items=items)
    model = "meta-llama/Llama-3.1-8B-Instruct"  # from results_<same stamp>.json, not the older Qwen one
    assert triples(result) == [("cal-001", model, "meta"), ("cal-002", model, "meta"), ("cert-001", model, "meta")]
    assert [r.response for r in result.rows] == ["821 × 64 = 52,544", "That is 648 bottles.", "391 = 17 × 23"]
    assert result.problems == [
        at(LM_EVAL, "4", "-: invalid JSON (unexpected end of data at column 57)"),
        at(LM_EVAL, "5", "resps: missing response text (expected resps[0][0] to be the generated text)"),
        at(LM_EVAL, "6", "item_id: unknown item 'zzz-001'"),
        at(LM_EVAL, "8", "resps: holds log-likelihood scores, not generated text "
                         "(only generate_until tasks can be graded)"),
    ]
    assert result.skipped == 4  # line 2 repeats line 1 under another filter: folded, not reported


def test_lm_eval_without_results_needs_a_model(items, tmp_path):
    lone = tmp_path / LM_EVAL.name
    shutil.copy(LM_EVAL, lone)
    with pytest.raises(InputError) as err:
        import_responses(lone, "lm_eval", items=items)
    assert err.value.problems[0] == (f"{lone}: cannot tell which model wrote these samples "
                                     "(no results_*.json next to it); pass --model")
    result = import_responses(lone, "lm_eval", items=items, model="openai/gpt-4o-mini")
    assert {(r.model, r.vendor) for r in result.rows} == {("openai/gpt-4o-mini", "openai")}


def test_lm_eval_model_args_when_results_has_no_model_name(items, tmp_path):
    lone = tmp_path / LM_EVAL.name
    shutil.copy(LM_EVAL, lone)
    (tmp_path / "results_2025-06-01T10-00-00.123456.json").write_text(json.dumps(
        {"config": {"model": "hf", "model_args": "pretrained=Qwen/Qwen2.5-7B-Instruct,dtype=bfloat16"}}))
    result = import_responses(lone, "lm_eval", items=items)
    assert {(r.model, r.vendor) for r in result.rows} == {("Qwen/Qwen2.5-7B-Instruct", "alibaba")}


# --- OpenAI evals ----------------------------------------------------------------------------------

def test_openai_evals_sampling_events(items):
    result = import_responses(OPENAI_EVALS, "openai_evals", items=items)
    assert triples(result) == [("cal-001", "gpt-4o", "openai"), ("cal-002", "gpt-4o", "openai"),
                               ("fp-001", "gpt-4o", "openai")]
    assert [r.response for r in result.rows] == ["52,544", "648 bottles", "It never moved; it stands in Paris."]
    assert result.problems == [
        at(OPENAI_EVALS, "5", "-: invalid JSON (unexpected end of data at column 80)"),
        at(OPENAI_EVALS, "6", "data.sampled: missing response text"),
        at(OPENAI_EVALS, "7", "item_id: unknown item 'nope-1'"),
        at(OPENAI_EVALS, "8", "item_id: duplicate of line 2 (same item 'cal-001' and model 'gpt-4o')"),
    ]
    assert result.skipped == 4


def test_openai_evals_vendor_map_for_a_custom_completion_fn(items, tmp_path):
    path = tmp_path / "events.jsonl"
    lines = OPENAI_EVALS.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"completion_fns": ["gpt-4o"]', '"completion_fns": ["my-agent-v2"]', 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError):
        import_responses(path, "openai_evals", items=items)
    result = import_responses(path, "openai_evals", items=items, vendor_map={"my-agent-v2": "anthropic"})
    assert {(r.model, r.vendor) for r in result.rows} == {("my-agent-v2", "anthropic")}


# --- overlooked-bench ------------------------------------------------------------------------------

def test_overlooked_run_folder(items):
    result = import_responses(OVERLOOKED_RUN, "overlooked", items=items)
    assert triples(result) == [
        ("cal-001", "anthropic/claude-haiku-4.5", "anthropic"),
        ("cal-001", "moonshotai/kimi-k2.5", "moonshot"),
        ("ign-001", "meta/llama-3.3-70b", "meta"),
    ]
    assert result.rows[0].response == "821 × 64 = 52,544\n\nANSWER: 52544"
    raw = "raw/{}/{}.json".format
    assert result.problems == [
        at(OVERLOOKED_RUN, raw("claude-haiku-4-5/calibration", "cal-002"),
           "ok: the model call failed: RateLimitError: 429 Too Many Requests"),
        at(OVERLOOKED_RUN, raw("claude-haiku-4-5/calibration", "cal-003"),
           "text: empty response text (finish_reason 'length')"),
        at(OVERLOOKED_RUN, raw("kimi-k2-5/calibration", "zzz-001"), "item_id: unknown item 'zzz-001'"),
        at(OVERLOOKED_RUN, raw("llama-3-3-70b/ignorance", "ign-002"),
           "-: invalid JSON (unexpected control character in string at line 1, column 80)"),
        at(OVERLOOKED_RUN, raw("local-7b/calibration", "cal-001"),
           "model: cannot decide the vendor of model 'local-7b'; map it with --vendor-map"),
    ]
    assert result.skipped == 5


def test_overlooked_single_record_file(items):
    path = OVERLOOKED_RUN / "raw" / "kimi-k2-5" / "calibration" / "cal-001.json"
    result = import_responses(path, "overlooked", items=items)
    assert triples(result) == [("cal-001", "moonshotai/kimi-k2.5", "moonshot")]


def test_overlooked_jsonl_records(items):
    result = import_responses(OVERLOOKED_JSONL, "overlooked", items=items, vendor_map={"my-lab-model": "mistral"})
    assert triples(result) == [
        ("cal-001", "openai/gpt-5", "openai"),
        ("ign-001", "google/gemini-2.5-flash", "google"),
        ("cal-002", "deepseek/deepseek-v3.2", "deepseek"),
        ("fp-001", "my-lab-model", "mistral"),
    ]
    assert [r.response for r in result.rows] == ["52,544", "I can't know what you ate.", "648", "It never moved."]
    assert (result.rows[0].confidence, result.rows[1].confidence, result.rows[1].abstained) == (0.95, 0.8, True)
    assert result.problems == [
        at(OVERLOOKED_JSONL, "4", "-: invalid JSON (unexpected end of data at column 66)"),
        at(OVERLOOKED_JSONL, "5", "text: missing response text"),
        at(OVERLOOKED_JSONL, "6", "item_id: unknown item 'nope'"),
    ]


# --- whole-file failures and the command line ----------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_file_raises(fmt, tmp_path, items):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as err:
        import_responses(missing, fmt, items=items, model="openai/gpt-4o")
    assert err.value.problems[0] == f"{missing}: file not found"


def test_nothing_usable_raises_with_every_problem(items, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"item_id": "cal-001"\n'
                    '{"item_id": "zzz-1", "model": "openai/gpt-4o", "response": "x"}\n'
                    '{"item_id": "cal-002", "model": "local-finetune-7", "response": "648"}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_responses(path, "jsonl", items=items)
    assert err.value.problems == [
        at(path, "1", "-: invalid JSON (unexpected end of data at column 22)"),
        at(path, "2", "item_id: unknown item 'zzz-1'"),
        at(path, "3", "model: cannot decide the vendor of model 'local-finetune-7'; map it with --vendor-map"),
        f"{path}: no usable records (3 skipped)",
    ]


def test_unknown_format_is_a_config_error(items):
    with pytest.raises(ConfigError):
        import_responses(JSONL, "csv", items=items)


def test_cli_arguments_and_vendor_map_file(items, tmp_path):
    vmap = tmp_path / "vendors.json"
    vmap.write_text(json.dumps({"local-7b": "Meta"}))
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=Path)
    add_arguments(parser)
    defaults = parser.parse_args(["--responses", str(JSONL)])
    assert (defaults.format, defaults.model) == ("jsonl", None)
    args = parser.parse_args(["--responses", str(OVERLOOKED_RUN), "--format", "overlooked"])
    result = load_from_args(args, items, vendor_map=load_vendor_map(vmap))
    assert ("cal-001", "local-7b", "meta") in triples(result)
    with pytest.raises(SystemExit):
        parser.parse_args(["--responses", str(JSONL), "--format", "csv"])


@pytest.mark.parametrize("content", ['["not", "an", "object"]', '{"gpt-4o": 3}', "{not json"])
def test_bad_vendor_map_file(tmp_path, content):
    path = tmp_path / "vendors.json"
    path.write_text(content)
    with pytest.raises(ConfigError):
        load_vendor_map(path)
