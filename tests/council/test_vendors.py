"""One vendor resolver: the same answer for a model id wherever the project asks (bank loader, importers,
schema), unknown ids refused by name, the operator's vendor map first, stated vendors checked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

import council.importers
import council.core.vendors
from bank import load_responses
from council.core.errors import ConfigError, InputError, UnknownVendorError
from council.core.schema import ResponseRow
from council.core.vendors import canonical_vendor, resolve_vendor, row_vendor, vendor_of
from council.protocol.config import CouncilConfig
from council.importers import import_responses

# Real-world spellings of model ids: bare, OpenRouter-style, provider-native, odd case, underscores,
# Bedrock, routing prefixes.
REAL_IDS: list[tuple[str, str]] = [
    ("gpt-4o", "openai"),
    ("GPT_4o", "openai"),
    ("o3-mini", "openai"),
    ("openai/gpt-4.1-mini", "openai"),
    ("azure/gpt-4o", "openai"),
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "openai"),
    ("Claude 3.5 Sonnet", "anthropic"),
    ("claude-3-5-sonnet-20241022", "anthropic"),
    ("anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic"),
    ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
    ("models/gemini-1.5-pro", "google"),
    ("gemini_pro", "google"),
    ("vertex_ai/gemini-2.5-flash", "google"),
    ("gemma-2-9b-it", "google"),
    ("Qwen2.5-72B-Instruct", "alibaba"),
    ("qwen/qwen3-235b-a22b", "alibaba"),
    ("openrouter/qwen/qwq-32b", "alibaba"),
    ("Meta-Llama-3.1-8B-Instruct", "meta"),
    ("accounts/fireworks/models/llama-v3p1-70b-instruct", "meta"),
    ("fireworks/accounts/fireworks/models/deepseek-r1", "deepseek"),  # inspect_ai's own Fireworks spelling
    ("openai-api/fireworks/accounts/fireworks/models/qwen3-235b-a22b", "alibaba"),
    ("mockllm/vllm/Qwen3-8B", "alibaba"),  # a route left in front once the third level went
    ("us.meta.llama3-1-70b-instruct-v1:0", "meta"),
    ("together/meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta"),
    ("deepseek-chat", "deepseek"),
    ("deepseek-ai/DeepSeek-R1", "deepseek"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral"),
    ("codestral-2501", "mistral"),
    ("x-ai/grok-4", "xai"),
    ("grok-3-mini", "xai"),
    ("moonshotai/kimi-k2", "moonshot"),
    ("kimi-k2-0905-preview", "moonshot"),
    ("z-ai/glm-4.5", "zhipu"),
    ("chatglm3-6b", "zhipu"),
    ("cohere.command-r-plus-v1:0", "cohere"),
    ("c4ai-command-r-plus", "cohere"),
    ("Phi-3.5-mini-instruct", "microsoft"),
    ("hf/microsoft/phi-4", "microsoft"),
    ("amazon.nova-pro-v1:0", "amazon"),
]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _row(model: str, i: int = 0, **extra: object) -> dict:
    return {"item_id": f"q-{i:03d}", "model": model, "response": "42", **extra}


@pytest.mark.parametrize("model_id, vendor", REAL_IDS)
def test_real_world_ids_resolve(model_id, vendor):
    assert resolve_vendor(model_id) == vendor
    assert vendor_of(model_id) == vendor
    assert ResponseRow(item_id="q", model=model_id, response="x").vendor == vendor


# The makers named in inspect_ai's model database (its ``organization``), as the vendors the council knows.
# Hosts that serve other makers' models (Fireworks AI, Together AI, nim...) are left out: they make none.
INSPECT_MAKERS = {"OpenAI": "openai", "openai": "openai", "Anthropic": "anthropic", "Google": "google",
                  "Qwen": "alibaba", "Meta": "meta", "Meta-Llama": "meta", "DeepSeek": "deepseek", "xAI": "xai",
                  "Mistral": "mistral", "Mistral AI": "mistral", "Moonshot AI": "moonshot", "moonshotai": "moonshot",
                  "Z.ai": "zhipu", "zai-org": "zhipu"}


def inspect_ids() -> dict[str, str]:
    """Every model id in inspect_ai's model database whose maker is known, in the ``org/model`` form inspect
    keys it by and as the bare model name, each with the vendor its database says made it. Read in a child
    process: importing inspect_ai patches zipfile, and a test of the importers that shares this process checks
    that they read logs without that patch."""
    import subprocess
    import sys

    script = ("import orjson, sys; from inspect_ai.model._model_data.model_data import read_model_info; "
              "sys.stdout.buffer.write(orjson.dumps({k: i.organization for k, i in read_model_info().items()}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True, timeout=120)
    ids: dict[str, str] = {}
    for key, organization in orjson.loads(done.stdout).items():
        vendor = INSPECT_MAKERS.get(organization or "")
        model = key.rsplit("/", 1)[-1]
        if vendor is None or model == "latest":  # "latest": the database's name for a newest snapshot, not an id
            continue
        ids[key] = ids[model] = vendor
    return ids


def test_ids_listed_by_the_installed_tools_resolve_to_their_makers():
    from typing import get_args

    from openai.types.chat_model import ChatModel

    listed = {model: "openai" for model in get_args(ChatModel)} | inspect_ids()
    wrong = {m: (v, resolve_vendor(m)) for m, v in listed.items() if resolve_vendor(m) != v}
    assert wrong == {}
    assert set(CouncilConfig().roster_vendors) <= set(listed.values())  # every seat's vendor is in the lists
    assert all(ResponseRow(item_id="q", model=m, response="x").vendor == v for m, v in listed.items())


def test_loader_importer_and_schema_agree_on_every_id(tmp_path):
    path = _write(tmp_path / "responses.jsonl", [_row(m, i) for i, (m, _) in enumerate(REAL_IDS)])
    loaded = {r.model: r.vendor for r in load_responses(path)}
    imported = import_responses(path, "jsonl", items=None)
    assert imported.problems == []
    assert {r.model: r.vendor for r in imported.rows} == loaded == dict(REAL_IDS)


@pytest.mark.parametrize("model_id", ["local-finetune-7", "gpt-neox-20b", "gpt-j-6b", "my_model", "hermes-3"])
def test_unknown_bare_ids_are_never_guessed(model_id):
    assert resolve_vendor(model_id) is None
    with pytest.raises(UnknownVendorError) as err:
        vendor_of(model_id)
    assert isinstance(err.value, ConfigError)
    assert repr(model_id) in str(err.value) and "--vendor-map" in str(err.value)


def test_unknown_ids_are_refused_by_name_with_their_line(tmp_path):
    path = _write(tmp_path / "responses.jsonl", [
        _row("openai/gpt-4o", 1), _row("local-finetune-7", 2), _row("gpt-4o", 3), _row("my-lab-model", 4),
    ])
    with pytest.raises(InputError) as err:
        load_responses(path)
    expected = [
        f"{path}:2: model: cannot decide the vendor of model 'local-finetune-7'; map it with --vendor-map",
        f"{path}:4: model: cannot decide the vendor of model 'my-lab-model'; map it with --vendor-map",
    ]
    assert err.value.problems == expected
    result = import_responses(path, "jsonl", items=None)
    assert result.problems == expected
    assert [(r.model, r.vendor) for r in result.rows] == [("openai/gpt-4o", "openai"), ("gpt-4o", "openai")]


def test_a_vendor_map_resolves_unknown_ids_and_wins_over_the_defaults(tmp_path):
    path = _write(tmp_path / "responses.jsonl", [
        _row("local-finetune-7", 1), _row("acme/thing-1", 2), _row("qwen/qwen3-max", 3), _row("gpt-4o", 4),
    ])
    vmap = {"local-finetune-7": "Meta", "acme": "Mistral AI", "qwen": "qwen-labs"}
    expected = {"local-finetune-7": "meta", "acme/thing-1": "mistral", "qwen/qwen3-max": "qwen-labs", "gpt-4o": "openai"}
    assert {r.model: r.vendor for r in load_responses(path, vendor_map=vmap)} == expected
    assert {r.model: r.vendor for r in import_responses(path, "jsonl", items=None, vendor_map=vmap).rows} == expected
    assert vendor_of("local-finetune-7", vmap) == "meta"
    assert resolve_vendor("OpenRouter/ACME/thing-1", vmap) == "mistral"  # normalised, then the org prefix


def test_a_stated_vendor_is_canonicalised(tmp_path):
    path = _write(tmp_path / "responses.jsonl", [
        _row("openai/gpt-4o", 1, vendor="OpenAI"),
        _row("qwen/qwen3-max", 2, vendor="Alibaba Cloud"),
        _row("local-finetune-7", 3, vendor="Mistral AI"),  # the id resolves to nothing: the stated vendor
    ])
    expected = {"openai/gpt-4o": "openai", "qwen/qwen3-max": "alibaba", "local-finetune-7": "mistral"}
    assert {r.model: r.vendor for r in load_responses(path)} == expected
    assert {r.model: r.vendor for r in import_responses(path, "jsonl", items=None).rows} == expected
    assert ResponseRow(item_id="q", model="gpt-4o", vendor="OpenAI", response="x").vendor == "openai"


def test_a_contradictory_stated_vendor_is_refused(tmp_path):
    path = _write(tmp_path / "responses.jsonl", [_row("gpt-4o", 1, vendor="Anthropic"), _row("claude-3-opus", 2)])
    message = ("vendor: stated vendor 'Anthropic' contradicts 'openai', the vendor of model 'gpt-4o'; "
               "fix the vendor or map the model with --vendor-map")
    with pytest.raises(InputError) as err:
        load_responses(path)
    assert err.value.problems == [f"{path}:1: {message}"]
    result = import_responses(path, "jsonl", items=None)
    assert result.problems == [f"{path}:1: {message}"]
    assert [r.vendor for r in result.rows] == ["anthropic"]
    with pytest.raises(ValidationError) as exc:
        ResponseRow(item_id="q", model="gpt-4o", vendor="Anthropic", response="x")
    assert [e["loc"] for e in exc.value.errors()] == [("vendor",)]
    # The operator's map wins over both.
    assert row_vendor("gpt-4o", "Anthropic", {"gpt-4o": "anthropic"}) == "anthropic"
    assert {r.vendor for r in load_responses(path, vendor_map={"gpt-4o": "anthropic"})} == {"anthropic"}


def test_row_vendor_rules():
    assert row_vendor("openai/gpt-4o") == "openai"
    assert row_vendor("openai/gpt-4o", "OpenAI") == "openai"
    assert row_vendor("nousresearch/hermes-3", "Nous Research") == "nousresearch"  # same name, other spelling
    assert row_vendor("my-model", "Moonshot AI") == "moonshot"
    with pytest.raises(ValueError, match="contradicts"):
        row_vendor("qwen/qwen3-max", "deepseek")
    with pytest.raises(ValueError) as err:
        row_vendor("my-model")
    assert str(err.value) == "cannot decide the vendor of model 'my-model'; map it with --vendor-map"


@pytest.mark.parametrize("stated, vendor", [
    ("OpenAI", "openai"), ("Anthropic", "anthropic"), ("Google", "google"), ("Google DeepMind", "google"),
    ("Alibaba", "alibaba"), ("Alibaba Cloud", "alibaba"), ("Qwen", "alibaba"), ("Meta", "meta"),
    ("meta-llama", "meta"), ("Mistral AI", "mistral"), ("mistralai", "mistral"), ("xAI", "xai"), ("x-ai", "xai"),
    ("DeepSeek", "deepseek"), ("deepseek-ai", "deepseek"), ("Moonshot AI", "moonshot"), ("moonshotai", "moonshot"),
    ("Zhipu AI", "zhipu"), ("CohereForAI", "cohere"), ("Microsoft", "microsoft"), ("AWS", "amazon"),
    ("Nous Research", "nous-research"),
])
def test_canonical_vendor(stated, vendor):
    assert canonical_vendor(stated) == vendor


def test_one_resolver_everywhere():
    assert importlib.util.find_spec("council.importers._vendor") is None
    for name in ("resolve_vendor", "mapped_vendor", "normalize_model_id", "model_from_model_args"):
        assert getattr(council.importers, name) is getattr(council.core.vendors, name)
    assert not hasattr(council.core.vendors, "BRAND_NAMES")
    assert council.importers.normalize_model_id("openrouter/Qwen/Qwen3-Max") == "qwen/qwen3-max"
    assert council.importers.model_from_model_args("pretrained=meta-llama/Llama-3.1-8B,dtype=bf16") == (
        "meta-llama/Llama-3.1-8B")
