"""Who makes which model: the one place that decides the vendor of a model id, and the default roster.

Every part of the project asks this module (``council run``, ``council grade``'s importers, the bank loader
and the wire schema), so vendor self-exclusion sees one answer per model id.

Order of resolution (:func:`resolve_vendor`):

1. the operator's vendor map (``--vendor-map``): the exact id as written, then case-insensitively, then
   after the normalisation below; then the organisation prefix before the first ``/``;
2. the organisation of an OpenRouter-style ``org/model`` id (``qwen/...`` is ``alibaba``, ``meta-llama/...``
   is ``meta``; an unknown organisation is its own vendor), after the routing prefixes of the tools are
   stripped;
3. the family of a bare model name (``gpt-4o``, ``o3-mini`` -> openai; ``claude-*`` -> anthropic;
   ``Qwen2.5-72B-Instruct`` -> alibaba; ...), case- and separator-insensitive; provider-native ids such as
   Bedrock's ``anthropic.claude-3-5-sonnet-20241022-v2:0`` or Google's ``models/gemini-1.5-pro`` too.

A bare name of no known family resolves to ``None`` (and :func:`vendor_of` raises): the caller reports it
rather than guessing, because self-exclusion needs the vendor.

Normalisation (:func:`normalize_model_id`) strips what the tools put around a model id without naming its
maker, so a routed id is the same model as the id without its route: hosting and routing prefixes
(``openrouter/``, ``together/``, ``hf/``, ``groq/``, ``vllm/``, ``ollama/``, ``bedrock/``, ``azure/``,
``vertex/``, ...; ``openrouter/anthropic/claude-3.5-sonnet`` is ``anthropic/claude-3.5-sonnet``), the service
in inspect_ai's ``<provider>/<service>/<model>`` ids (``openai/azure/gpt-4o`` is ``openai/gpt-4o``,
``anthropic/bedrock/...`` and ``google/vertex/...`` keep their provider), any third path level (the
``openai/`` in ``openai/meta-llama/llama-3.1-8b``, the ``cf/`` in ``cf/meta/llama-3.1-8b``),
Fireworks' ``accounts/<account>/models/`` and Google's ``models/`` and ``publishers/<org>/models/``
paths, lm-evaluation-harness ``model_args`` strings (``pretrained=org/name,dtype=bfloat16``), local
checkpoint paths (only the last path part is kept), OpenAI fine-tune ids (``ft:gpt-4o-mini:org::id``) and
``provider:model`` spellings.

Vendor names are canonical lower-case ids (``openai``, ``anthropic``, ``google``, ``alibaba``, ``meta``,
``mistral``, ``xai``, ``deepseek``, ``moonshot``, ``zhipu``, ``cohere``, ``microsoft``, ``amazon``, ...):
:func:`canonical_vendor` turns a stated vendor or organisation name (``"OpenAI"``, ``"Mistral AI"``,
``"Alibaba Cloud"``, ``"moonshotai"``) into one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from council.core.errors import UnknownVendorError, VendorConflictError

# Default council: one judge model per vendor.
DEFAULT_ROSTER: dict[str, str] = {
    "anthropic": "anthropic/claude-sonnet-4.5",
    "google": "google/gemini-2.5-pro",
    "openai": "openai/gpt-5",
    "alibaba": "qwen/qwen3-max",
    "deepseek": "deepseek/deepseek-v3.2",
}
# Default reserve: a sixth vendor's judge that sits in only where self-exclusion empties a seat.
DEFAULT_RESERVES: dict[str, str] = {"mistral": "mistralai/mistral-medium-3.1"}

# Path prefixes that say where a model was served, not who made it.
ROUTING_PREFIXES: frozenset[str] = frozenset({
    "openrouter", "together", "together_ai", "togetherai", "hf", "huggingface", "hf-inference-providers", "vllm",
    "hosted_vllm", "sglang", "ollama", "ollama_chat", "groq", "fireworks", "fireworks_ai", "fireworksai", "bedrock",
    "azure", "azure_ai", "azureai", "vertex", "vertex_ai", "vertexai", "litellm", "openai-api", "cf", "cloudflare",
    "deepinfra", "llama-cpp-python", "transformer_lens", "replicate", "cerebras", "sambanova", "novita", "nebius",
    "hyperbolic", "anyscale", "octoai", "lambda", "featherless", "friendli", "baseten", "modal", "perplexity",
})

# Organisation, provider and stated vendor names -> canonical vendor id. Keys are lower-case with every
# character that is not a letter or digit removed ("Mistral AI", "mistral-ai" and "mistralai" are one key).
_ALIASES: dict[str, str] = {
    "openai": "openai", "openaicommunity": "openai",
    "anthropic": "anthropic", "anthropicpbc": "anthropic",
    "google": "google", "googledeepmind": "google", "deepmind": "google", "googleai": "google", "gemini": "google",
    "alibaba": "alibaba", "alibabacloud": "alibaba", "alibabagroup": "alibaba", "alibabanlp": "alibaba",
    "qwen": "alibaba", "qwenteam": "alibaba", "qwenlm": "alibaba", "tongyi": "alibaba",
    "meta": "meta", "metallama": "meta", "facebook": "meta", "metaplatforms": "meta",
    "mistral": "mistral", "mistralcommunity": "mistral",
    "xai": "xai", "grok": "xai",
    "deepseek": "deepseek",
    "moonshot": "moonshot", "kimi": "moonshot",
    "zhipu": "zhipu", "zai": "zhipu", "zaiorg": "zhipu", "thudm": "zhipu",
    "cohere": "cohere", "cohereforai": "cohere", "coherelabs": "cohere",
    "microsoft": "microsoft", "msft": "microsoft",
    "amazon": "amazon", "aws": "amazon", "amazonwebservices": "amazon",
    "nvidia": "nvidia", "ai21": "ai21", "ai21labs": "ai21",
    "baidu": "baidu", "tencent": "tencent", "bytedance": "bytedance", "minimax": "minimax",
}

# Canonical vendor ids (recognised as the first dotted part of a Bedrock-style id: "anthropic.claude-v2").
KNOWN_VENDORS: frozenset[str] = frozenset(_ALIASES.values())

# Families of bare model names, matched at the start of the folded name (lower case, "_", ".", ":" and
# spaces turned into "-").
BARE_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), vendor)
    for pattern, vendor in (
        (r"^(gpt(?!-?neo|-?j(-|$)|4all|-?sw3)|chatgpt|o[1-9](-|$)|text-(davinci|curie|babbage|ada)|davinci|babbage"
         r"|codex-mini|whisper)", "openai"),
        (r"^claude", "anthropic"),
        (r"^(gemini|(code|pali|recurrent|med|shield|data)?gemma|palm|learnlm|(text|chat|code)-bison)", "google"),
        (r"^(qwen|qwq|qvq)", "alibaba"),
        (r"^deepseek", "deepseek"),
        (r"^(meta-?llama|llama|codellama|muse-spark)", "meta"),
        (r"^grok", "xai"),
        (r"^(open-)?(mistral|mixtral|codestral|ministral|magistral|pixtral|devstral|mathstral)", "mistral"),
        (r"^(c4ai-)?command(-|$)|^aya(-|$)", "cohere"),
        (r"^phi-?\d", "microsoft"),
        (r"^(nova|titan)-", "amazon"),
        (r"^(kimi|moonshot)", "moonshot"),
        (r"^(chat)?glm|^codegeex", "zhipu"),
        (r"^jamba", "ai21"),
        (r"^nemotron", "nvidia"),
    )
)

# model_args keys that name the model, in the order lm-evaluation-harness backends use them.
MODEL_ARG_KEYS: tuple[str, ...] = ("pretrained", "model", "model_name", "model_id", "path", "engine")

_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_FOLD = re.compile(r"[\s_.:]+")


# ---- the API -------------------------------------------------------------------------------------------


def resolve_vendor(model_id: str, vendor_map: Mapping[str, str] | None = None) -> str | None:
    """The vendor of ``model_id``, or None when neither the map nor the built-in rules know it."""
    if not isinstance(model_id, str) or not model_id.strip():
        return None
    return mapped_vendor(model_id, vendor_map) or _default(model_id.strip())


def vendor_of(model_id: str, vendor_map: Mapping[str, str] | None = None) -> str:
    """The vendor of ``model_id``; raises :class:`UnknownVendorError` when it cannot be decided."""
    vendor = resolve_vendor(model_id, vendor_map)
    if vendor is None:
        raise UnknownVendorError(_unknown_message(model_id))
    return vendor


def canonical_vendor(name: str) -> str:
    """A stated vendor or organisation name as a canonical vendor id (``"Mistral AI"`` -> ``"mistral"``).

    A name this module does not know is kept, lower-cased, with spaces turned into ``-``.
    """
    text = name.strip().lower()
    key = _NOT_ALNUM.sub("", text)
    found = _ALIASES.get(key)
    if found is None:
        for suffix in ("ai", "inc"):  # "Deepseek AI", "Moonshot AI", "Cohere Inc"
            if key.endswith(suffix) and _ALIASES.get(key[: -len(suffix)]):
                found = _ALIASES[key[: -len(suffix)]]
                break
    return found or re.sub(r"\s+", "-", text)


def row_vendor(model: str, stated: str | None = None, vendor_map: Mapping[str, str] | None = None) -> str:
    """The vendor of a response row written by ``model`` whose file states ``stated`` (if anything).

    The vendor map wins over everything; else the vendor the id resolves to, and a stated vendor that
    disagrees with it is an error (:class:`VendorConflictError`); when the id resolves to nothing, the
    stated vendor (canonicalised); neither is an error (:class:`UnknownVendorError`). Both errors are
    ValueErrors naming the model and suggesting ``--vendor-map``.
    """
    if not isinstance(model, str) or not model.strip():
        raise UnknownVendorError("cannot decide the vendor of a row without a model")
    mapped = mapped_vendor(model, vendor_map)
    if mapped:
        return mapped
    resolved = _default(model.strip())
    claim = canonical_vendor(stated) if isinstance(stated, str) and stated.strip() else None
    if resolved is not None:
        if claim is not None and _key(claim) != _key(resolved):
            raise VendorConflictError(
                f"stated vendor {stated!r} contradicts {resolved!r}, the vendor of model {model!r}; "
                f"fix the vendor or map the model with --vendor-map"
            )
        return resolved
    if claim:
        return claim
    raise UnknownVendorError(_unknown_message(model))


def mapped_vendor(model_id: str, vendor_map: Mapping[str, str] | None) -> str | None:
    """The vendor the operator's map gives ``model_id`` (canonicalised), or None when the map does not name it."""
    if not vendor_map or not isinstance(model_id, str) or not model_id.strip():
        return None
    raw = model_id.strip()
    value = _lookup(vendor_map, raw, normalize_model_id(raw))
    return canonical_vendor(value) if value else None


def org_vendor(name: str) -> str:
    """The vendor an organisation or provider name stands for (``moonshotai`` -> ``moonshot``)."""
    return canonical_vendor(name)


def model_from_model_args(model_args: Any) -> str | None:
    """The model named by an lm-evaluation-harness ``model_args`` (string ``k=v,...`` or dict), if any."""
    if isinstance(model_args, Mapping):
        pairs = {str(k).strip(): v for k, v in model_args.items()}
    elif isinstance(model_args, str):
        pairs = {}
        for part in model_args.split(","):
            key, sep, value = part.partition("=")
            if sep:
                pairs[key.strip()] = value.strip().strip("'\"")
    else:
        return None
    for key in MODEL_ARG_KEYS:
        value = pairs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


@lru_cache(maxsize=8192)
def normalize_model_id(model_id: str) -> str:
    """Lower-cased ``org/name`` or ``name``, with routing prefixes, model_args and paths taken off."""
    text = model_id.strip()
    if "=" in text:
        text = model_from_model_args(text) or text
    if text.startswith(("/", "./", "../", "~")) or "\\" in text:
        text = re.split(r"[\\/]", text.rstrip("/\\"))[-1]
    text = text.lower()
    if text.startswith("ft:"):  # OpenAI fine-tune: ft:<base model>:<org>:<suffix>:<id>
        text = text[3:].split(":", 1)[0]
    head, sep, rest = text.partition(":")
    if sep and "/" not in head and (head in ROUTING_PREFIXES or head in KNOWN_VENDORS or head in _ALIASES):
        text = f"{head}/{rest}"
    parts = [p for p in text.split("/") if p]
    if "publishers" in parts[:-2]:  # Vertex: projects/p/locations/l/publishers/<org>/models/<model>
        at = parts.index("publishers")
        parts = [parts[at + 1], parts[-1]]
    elif (lead := _routes(parts)) < len(parts) - 3 and parts[lead] == "accounts" and parts[lead + 2] == "models":
        parts = parts[lead + 3:]  # Fireworks: accounts/<account>/models/<model>, routed or not
    while len(parts) > 1 and (parts[0] in ROUTING_PREFIXES or parts[0] == "models"):
        parts = parts[1:]
    if len(parts) > 2 and parts[1] in ROUTING_PREFIXES and _NOT_ALNUM.sub("", parts[0]) in _ALIASES:
        del parts[1]  # inspect's <provider>/<service>/<model>: "openai/azure/gpt-4o", "google/vertex/..."
    while len(parts) > 2:  # a third level is a route in front of org/model
        parts = parts[1:]
    if len(parts) == 2 and parts[0] in ROUTING_PREFIXES:  # what it left may be a route too: mockllm/vllm/x
        parts = parts[1:]
    return "/".join(parts)


def _routes(parts: list[str]) -> int:
    """How many of the leading path parts are routing prefixes (``fireworks/``, ``openai-api/``...)."""
    lead = 0
    while lead < len(parts) - 1 and parts[lead] in ROUTING_PREFIXES:
        lead += 1
    return lead


def default_vendor(normal: str) -> str | None:
    """The built-in answer for a normalised id (see :func:`normalize_model_id`)."""
    if not normal:
        return None
    if "/" in normal:
        return canonical_vendor(normal.split("/", 1)[0])  # OpenRouter convention: the org is the vendor
    return _family(normal)


# ---- internals -----------------------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _default(model_id: str) -> str | None:
    return default_vendor(normalize_model_id(model_id))


def _family(name: str) -> str | None:
    folded = _FOLD.sub("-", name).strip("-")
    for pattern, vendor in BARE_FAMILIES:
        if pattern.search(folded):
            return vendor
    segments = name.split(".")
    if len(segments) > 1:
        for segment in segments[:2]:  # Bedrock ids: "anthropic.claude-...", "us.meta.llama3-..."
            key = _NOT_ALNUM.sub("", segment)
            if key in _ALIASES:
                return _ALIASES[key]
    return None


def _key(vendor: str) -> str:
    return _NOT_ALNUM.sub("", vendor.lower())


def _unknown_message(model_id: object) -> str:
    return f"cannot decide the vendor of model {model_id!r}; map it with --vendor-map"


def _lookup(vendor_map: Mapping[str, str], raw: str, normal: str) -> str | None:
    value = vendor_map.get(raw)
    if value:
        return value
    folded: dict[str, str] = {}
    for key, val in vendor_map.items():
        text = str(key).strip()
        folded.setdefault(text.lower(), val)
    for key, val in vendor_map.items():
        folded.setdefault(normalize_model_id(str(key)), val)
    for key in (raw.lower(), normal):
        value = folded.get(key)
        if value:
            return value
    for key in (raw, normal):
        if "/" in key:
            prefix = key.split("/", 1)[0].strip().lower()
            value = folded.get(prefix)
            if value:
                return value
    return None
