"""Reading the council's configuration: a TOML or JSON file, environment variables on top, options on top of both.

:func:`load_config` reads ``path`` (``.toml`` with :mod:`tomllib`; any other name as JSON, as ``--config``
always has), then applies every environment variable ``COUNCIL_<FIELD>`` (a field of
:class:`~council.protocol.config.CouncilConfig`: ``COUNCIL_QUORUM=4``) and ``COUNCIL_<FIELD>__<KEY>[__<KEY>...]``
(a key inside a table: ``COUNCIL_JUDGE__TEMPERATURE=0.2``, ``COUNCIL_VENDORS__OPENAI__RPM=600``), then the
command line's ``overrides``. Names are matched case-insensitively (``__`` separates levels); a value is read as
JSON when it parses (``4``, ``0.2``, ``false``, ``null``, ``[2.5, 10]``, ``{"temperature": 0.2}``) and as a
string otherwise (``COUNCIL_VENDOR_MAP__ACME=openai``). A variable whose first part names no field
(``COUNCIL_API_KEY``, ``COUNCIL_SERVICE_TOKEN``) is not configuration and is left alone. A variable for a whole
table is applied before variables for keys inside it. Keys that only JSON can spell (model ids with ``/`` in
``model_prices`` or ``vendor_map``) go in a variable for the whole table, as a JSON object, or in the file.

Every problem is one :class:`~council.core.errors.ConfigError` naming where the bad value came from: the file
(``council.toml: bad council config: quorum: ...``), the variable (``environment variable COUNCIL_QUORUM: bad
council config: quorum: ...``), or the options when there is no file (``bad options: ...``).

:func:`example_toml` is a complete commented configuration: every field with its default and what it does.
"""

from __future__ import annotations

import difflib
import json
import os
import textwrap
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from council.core.errors import ConfigError
from council.protocol.config import CouncilConfig, VendorSettings, error_line, read_json_object

ENV_PREFIX = "COUNCIL_"
ENV_NESTING = "__"
WHAT = "council config"


def load_config(path: Path | None, environ: Mapping[str, str] = os.environ, **overrides: Any) -> CouncilConfig:
    """The configuration of ``path`` (TOML or JSON; None: defaults), with the ``COUNCIL_*`` variables of
    ``environ`` on top and ``overrides`` (the command line's options) on top of both."""
    data = read_config_file(path) if path is not None else {}
    sources = apply_environment(data, environ)
    data.update(overrides)
    for keys in [k for k in sources if k[0] in overrides]:  # an option replaced what the variable set
        del sources[keys]
    try:
        return CouncilConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path, sources)) from exc


def read_config_file(path: Path) -> dict[str, Any]:
    """The table of a TOML file (``.toml``) or the object of a JSON file (any other name)."""
    if Path(path).suffix.lower() != ".toml":
        return read_json_object(path, WHAT)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: {WHAT} not found") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {WHAT}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: {WHAT} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {WHAT} is not valid TOML ({exc})") from exc


def environment(environ: Mapping[str, str]) -> list[tuple[str, tuple[str, ...], Any]]:
    """(variable, keys, value) of every configuration variable in ``environ``, a whole table's before its keys'."""
    fields = CouncilConfig.model_fields
    found = []
    for name, raw in environ.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        keys = tuple(part.lower() for part in name[len(ENV_PREFIX):].split(ENV_NESTING))
        if keys[0] not in fields:
            continue  # not configuration (COUNCIL_API_KEY, COUNCIL_SERVICE_TOKEN, ...)
        if not all(keys):
            raise ConfigError(f"environment variable {name}: an empty name between {ENV_NESTING!r} separators")
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = raw
        found.append((name, keys, value))
    return sorted(found, key=lambda f: (len(f[1]), f[1], f[0]))


def mistyped_variables(environ: Mapping[str, str]) -> list[str]:
    """A warning for each ``COUNCIL_*`` variable whose first part names no field but is close to one
    (``COUNCIL_QUORAM``: did you mean ``COUNCIL_QUORUM``?). Such a variable is ignored, like every variable that is
    not configuration (``COUNCIL_API_KEY``); only a near miss of a field's name is worth a word."""
    fields = list(CouncilConfig.model_fields)
    out = []
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        first, _, rest = name[len(ENV_PREFIX):].partition(ENV_NESTING)
        if first.lower() in fields:
            continue
        near = difflib.get_close_matches(first.lower(), fields, n=1, cutoff=0.8)
        if near:
            meant = ENV_PREFIX + near[0].upper() + (ENV_NESTING + rest if rest else "")
            out.append(f"environment variable {name} is not configuration and is ignored: did you mean {meant}?")
    return out


def apply_environment(data: dict[str, Any], environ: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Set the ``COUNCIL_*`` variables' values in ``data`` (in place); returns keys -> the variable that set them."""
    sources: dict[tuple[str, ...], str] = {}
    for name, keys, value in environment(environ):
        node = data
        for depth, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = {}
            elif not isinstance(child, dict):
                where = ".".join(keys[: depth + 1])
                raise ConfigError(f"environment variable {name}: {where} is a {_kind(child)}, not a table: give its "
                                  f"whole value as JSON in {ENV_PREFIX}{ENV_NESTING.join(keys[: depth + 1]).upper()}")
            node[key] = child = dict(child)
            node = child
        node[keys[-1]] = value
        sources[keys] = name
    return sources


def _kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "value")


def _describe(exc: ValidationError, path: Path | None, sources: dict[tuple[str, ...], str]) -> str:
    """Every problem, grouped by where its value came from: a variable, else the file (or the options)."""
    base = f"{path}: bad {WHAT}" if path is not None else "bad options"
    groups: dict[str, list[str]] = {}
    for error in exc.errors():
        loc = tuple(str(x) for x in error["loc"])
        matches = [keys for keys in sources if loc and (loc[: len(keys)] == keys or keys[: len(loc)] == loc)]
        if matches:
            label = f"environment variable {sources[max(matches, key=len)]}: bad {WHAT}"
        elif not loc and sources:  # the whole configuration: the file and the variables together
            where = f"{path} with " if path is not None else ""
            label = f"{where}{', '.join(sorted(set(sources.values())))}: bad {WHAT}"
        else:
            label = base
        groups.setdefault(label, []).append(error_line(error))
    return "; ".join(f"{label}: {'; '.join(problems)}" for label, problems in groups.items())


# -- the example ------------------------------------------------------------------------------------------------

COMMENTS: dict[str, str] = {
    "roster": "the council's seats, one per vendor: a regular seat sits on every row not of its own vendor's "
              "models; a reserve only where self-exclusion emptied a seat",
    "roster.vendor": "the vendor the seat speaks for",
    "roster.judge_model": "the judge model asked for the seat (it must be the vendor's own)",
    "roster.reserve": "a reserve seat",
    "quorum": "fewest valid round-two votes a row needs; with fewer it is incorrect and flagged no_quorum",
    "self_exclusion": "a vendor's judge never grades its own vendor's models (false only as an audit)",
    "shadow_self": "the excluded own-vendor judge also votes in round one: shadow.jsonl, never counted",
    "vendor_map": "model id (or org prefix) -> vendor, wins over the built-in rules",
    "batch_audit": "share of batched votes re-asked alone (audit.jsonl, never counted), 0 to 1",
    "deliberate": "all: round two on every row; disputed: only where round one is not unanimous (a graded "
                  "item: some dimension's levels spread by more than one), the others keep round one's verdict",
    "deliberation_audit": "with deliberate = disputed, share of the skipped rows (seeded) that still get round "
                          "two, never counted: the summary says how many verdicts it would have changed, 0 to 1",
    "deliberation_audit_stop": "the audit goes on, slice by slice, only while the upper end of the 95% Wilson "
                               "interval of its flip rate is above this, and asks an audited row's members only "
                               "until its change is decided; 0: audit the whole share, each row's whole panel",
    "seed": "seeds peer letters, the batch audit's sample, the bootstrap and the embedded provider's world",
    "judge": "every judge call",
    "judge.temperature": "sampling temperature",
    "judge.max_tokens": "output bound of a one-row answer (a reasoning model gets thinking_budget on top)",
    "judge.reasoning": "\"auto\": as the model does by default (gpt-5, o-series and Gemini 2.5 Pro reason, Claude "
                       "does not); \"on\": also where it is optional (Claude's extended thinking); \"off\": not "
                       "where it can be turned off",
    "judge.reasoning_effort": "reasoning_effort for models that take one (minimal, low, medium, high; the nearest "
                              "the model accepts)",
    "judge.thinking_budget": "reasoning tokens a request may spend on top of its answer: Gemini's thinking budget, "
                             "Claude's budget_tokens, room in the bound of an effort model",
    "judge.containment": "fence the graded text as data (false only as an audit: the unfenced judge-v1 layout)",
    "judge.prompt_version": "judge-v4: round two continues round one's conversation where a provider's prompt "
                            "cache serves round one's part, else is one new message; judge-v3: always continues "
                            "it; judge-v2: always one new message (older runs)",
    "timeouts": "every provider call's HTTP timeouts, in seconds",
    "timeouts.connect_s": "to connect",
    "timeouts.read_s": "between two reads of the answer",
    "timeouts.total_s": "for the whole call",
    "retry": "retries of transient faults (429, 5xx, timeouts, resets) and each vendor's circuit breaker",
    "retry.max_attempts": "attempts per call, the first included",
    "retry.base_delay_s": "first backoff without a provider hint (doubling, full jitter)",
    "retry.max_delay_s": "longest wait between attempts",
    "retry.breaker_window_s": "the breaker opens after failing this long with no success...",
    "retry.breaker_min_failures": "...and at least this many failed attempts in a row",
    "retry.breaker_cooldown_s": "an open breaker lets one probe through after this long",
    "rows_in_flight": "rows in progress at once",
    "compress_archive": "keep the archive and rows.jsonl as zstd frames (every command reads both)",
    "model_prices": "model id -> [USD per million input tokens, USD per million output tokens]; wins over the "
                    "vendor's prices and over the genai-prices table, which prices every other model it knows",
    "elicit_max_tokens": "output bound of each question put to a model under test (--models)",
    "budget_usd": "spend at most this many USD (no call starts that would go over); unset: no budget",
    "max_response_chars": "a longer response is refused before any call (refused.jsonl)",
    "bootstrap_resamples": "resamples of every bootstrap interval",
    "selective_penalty": "a wrong answer's cost in the selective score (calibration)",
    "honesty": "the abstention-aware composite (summary.json: honesty): each graded row scores +1 correct, "
               "abstain_credit abstained, -wrong_penalty wrong, -confident_wrong_penalty confidently wrong",
    "honesty.abstain_credit": "score of an abstention",
    "honesty.wrong_penalty": "cost of a wrong answer",
    "honesty.confident_wrong_penalty": "cost of a wrong answer stated with confidence >= confident_at",
    "honesty.confident_at": "stated confidence from which a wrong answer is confident",
    "vendors": "per vendor account (a vendor not listed has the defaults shown): limits, batching, prices",
    "vendors.base_url": "the vendor's own API (unset: the run's --provider-url, a gateway)",
    "vendors.api_key_env": "the environment variable holding that API's key (unset: COUNCIL_API_KEY)",
    "vendors.model_ids": "\"native\": seats' ids sent as the provider's API names them (claude-sonnet-4-5); "
                         "\"gateway\": as written (anthropic/claude-sonnet-4.5); unset: native at base_url",
    "vendors.rpm": "requests per minute (0: unlimited)",
    "vendors.tpm": "tokens per minute (0: unlimited)",
    "vendors.concurrency": "requests in flight at once (shared by every process drawing on the vendor's quota)",
    "vendors.max_batch": "most rows of one round in one request, when the request limit binds",
    "vendors.price_in_per_mtok": "USD per million input tokens of every model of the vendor (0: unset, the "
                                 "genai-prices table's price)",
    "vendors.price_out_per_mtok": "USD per million output tokens (0 for both: unset, the table's price)",
    "vendors.context_tokens": "the judge's context window: a longer prompt is refused before any call",
    "vendors.cache_breakpoints": "mark cache breakpoints (the system prompt, round one's prompt), for providers "
                                 "that cache only where a request marks it: Anthropic models, directly or through "
                                 "OpenRouter",
    "vendors.api": "the wire format of the vendor's calls: \"openai\" (chat completions, OpenAI-compatible) or "
                   "\"anthropic\" (Anthropic's Messages API, x-api-key auth)",
    "vendors.transport": "\"sync\": every vote a chat call; \"batch\": through the provider's batch API, at its "
                         "batch price (unset: the run's transport)",
    "vendors.batch_max_requests": "most requests in one batch (0: the API's own limit, 50,000 or 100,000)",
    "vendors.batch_queue_requests": "most requests enqueued at once over the vendor's open batches (0: unlimited)",
    "vendors.batch_queue_tokens": "most prompt tokens enqueued at once over its open batches (0: unlimited)",
    "vendors.batch_price_in_per_mtok": "USD per million input tokens through the batch API (0: unset, the table's "
                                       "batch price)",
    "vendors.batch_price_out_per_mtok": "USD per million output tokens through the batch API (0 for both: unset)",
    "transport": "how votes are sent, unless a vendor says otherwise: \"sync\" (chat calls) or \"batch\" (the "
                 "providers' batch APIs: half the price, results within 24 hours)",
    "batch": "the batch transport",
    "batch.flush_s": "a batch is sent when no vote has come for this long (or when it is full)",
    "batch.poll_s": "longest wait between two polls of an open batch",
    "batch.sync_below": "votes to ask again (expired, errored) go as chat calls when fewer than this remain",
    "batch.rows_in_flight": "rows in progress at once when some vendor batches",
}
"""One line per field (``table.field`` inside a table), for :func:`example_toml`."""

# Shown commented out in the example, since the defaults leave them empty or unset.
_EXAMPLE_VALUES: dict[str, Any] = {
    "budget_usd": 25.0,
    "vendor_map": {"acme/our-model-7b": "meta"},
    "model_prices": {"openai/gpt-4.1-mini": (0.4, 1.6)},
}
_EXAMPLE_VENDOR = ("openai", VendorSettings(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY",
                                            model_ids="native", rpm=5000, tpm=2_000_000, concurrency=64, max_batch=8, price_in_per_mtok=1.25,
                                            price_out_per_mtok=10.0, transport="sync"))


def toml_value(value: Any) -> str:
    """``value`` (a bool, number, string, or a list of them) as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text if any(c in text for c in ".eni") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_key(key: str) -> str:
    """A bare key when it can be one, else a quoted key."""
    return key if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii() else json.dumps(key)


def _comment(key: str) -> str:
    if key not in COMMENTS:
        raise KeyError(f"example_toml: no comment for {key!r}: add one to council.protocol.configfile.COMMENTS")
    return COMMENTS[key]


def _scalars(model: BaseModel, prefix: str, commented: bool = False) -> list[str]:
    mark = "# " if commented else ""
    return [f"{mark}{name} = {toml_value(getattr(model, name))}  # {_comment(prefix + name)}"
            for name in type(model).model_fields]


def example_toml(layout: str = "gateway") -> str:
    """A complete configuration in TOML, every field at its default with a comment saying what it does; it loads
    back to exactly ``CouncilConfig()``. Tables the defaults leave empty (``vendors``, ``model_prices``,
    ``vendor_map``) show an example, commented out. With ``layout="native"`` each seat's vendor is asked at its
    own API (``vendors.<v>.base_url``, its key variable, its wire format; :data:`~council.protocol.capabilities.OWN_APIS`)
    with its native ids, instead of every vendor through one gateway (``--provider-url``)."""
    config = CouncilConfig() if layout == "gateway" else native_layout(CouncilConfig())
    head = [
        "# grading-council configuration (TOML). Every value below is the default: keep only what you change.",
        "# Use it with --config FILE. Environment variables override it: COUNCIL_<FIELD> (COUNCIL_QUORUM=4) and",
        "# COUNCIL_<TABLE>__<KEY> (COUNCIL_JUDGE__TEMPERATURE=0.2, COUNCIL_VENDORS__OPENAI__RPM=600), values read",
        "# as JSON when they parse; command-line options override both.",
        "",
    ]
    scalars: list[str] = []
    tables: list[str] = []
    for name in CouncilConfig.model_fields:
        value = getattr(config, name)
        if name == "roster":
            continue  # an array of tables: last
        if isinstance(value, BaseModel):
            tables += ["", *_wrapped(_comment(name)), f"[{name}]", *_scalars(value, f"{name}.")]
        elif isinstance(value, dict):
            tables += ["", *_wrapped(_comment(name)), f"[{name}]"]
            if name == "vendors" and value:
                tables.pop()
                tables += _vendor_tables(config)
                continue
            if name == "vendors":
                vendor, settings = _EXAMPLE_VENDOR
                tables += [f"# [vendors.{vendor}]", *_scalars(settings, "vendors.", commented=True)]
            else:
                tables += [f"# {toml_key(k)} = {toml_value(v)}" for k, v in _EXAMPLE_VALUES[name].items()]
            tables += [f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()]  # none by default
        elif value is None:
            scalars.append(f"# {name} = {toml_value(_EXAMPLE_VALUES[name])}  # {_comment(name)}")
        else:
            scalars.append(f"{name} = {toml_value(value)}  # {_comment(name)}")
    roster = ["", *_wrapped(_comment("roster"))]
    for k, member in enumerate(config.roster):  # the fields' comments once, on the first seat
        lines = _scalars(member, "roster.")
        roster += ["[[roster]]", *(lines if k == 0 else [line.partition("  # ")[0] for line in lines]), ""]
    return "\n".join([*head, *scalars, *tables, *roster]).rstrip("\n") + "\n"


def native_layout(config: CouncilConfig) -> CouncilConfig:
    """``config`` with every seat's vendor asked at its own API (:data:`OWN_APIS`), native ids."""
    from council.protocol.capabilities import OWN_APIS

    vendors = dict(config.vendors)
    for m in config.roster:
        if m.vendor in OWN_APIS:
            url, key, api, _ = OWN_APIS[m.vendor]
            vendors[m.vendor] = config.settings(m.vendor).model_copy(
                update={"base_url": url, "api_key_env": key, "api": api, "cache_breakpoints": api == "anthropic"})
    return config.model_copy(update={"vendors": vendors})


def _vendor_tables(config: CouncilConfig) -> list[str]:
    """The vendors of a native layout: each its endpoint, key variable and wire format, and the id it is sent."""
    from council.protocol.capabilities import OWN_APIS, native_id

    seats = {m.vendor: m.judge_model for m in config.roster}
    lines = []
    for vendor, s in config.vendors.items():
        page = OWN_APIS[vendor][3] if vendor in OWN_APIS else ""
        lines += ["", f"# {seats.get(vendor, vendor)} is sent as {native_id(seats.get(vendor, vendor), vendor)!r}"
                      f" ({page})", f"[vendors.{vendor}]",
                  *(f"{name} = {toml_value(getattr(s, name))}  # {_comment('vendors.' + name)}"
                    for name in ("base_url", "api_key_env", "api", "cache_breakpoints"))]
    return lines


def _wrapped(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text, 110)]
