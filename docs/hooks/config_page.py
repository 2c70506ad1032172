"""The configuration file's reference, from its pydantic model's JSON Schema
(``council.protocol.config.CouncilConfig``, read by ``council.protocol.configfile.load_config``) and the one-line
comment of each field that ``council init`` writes (``council.protocol.configfile.COMMENTS``)."""

from __future__ import annotations

import json
from typing import Any

from markdown_text import cell

from council.protocol.config import CouncilConfig, VendorSettings
from council.protocol.configfile import COMMENTS, example_toml

BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return f"[{prop['$ref'].split('/')[-1]}](#{prop['$ref'].split('/')[-1].lower()})"
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    if "enum" in prop:
        return " or ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        if "prefixItems" in prop:
            return "[" + ", ".join(_type(p) for p in prop["prefixItems"]) + "]"
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"table of {_type(prop['additionalProperties'])}"
    return kind


def _bounds(prop: dict[str, Any]) -> str:
    parts = [f"{sign} {prop[key]}" for key, sign in BOUNDS if key in prop]
    for inner in prop.get("anyOf", []):
        parts += [f"{sign} {inner[key]}" for key, sign in BOUNDS if key in inner]
    return ", ".join(parts)


def _default(value: Any) -> str:
    if isinstance(value, dict) and not value:
        return "`{}` (none)"
    text = json.dumps(value)
    return f"`{text}`" if len(text) <= 40 else "see `council init`"


def _table(schema: dict[str, Any], defaults: dict[str, Any], prefix: str) -> list[str]:
    out = ["| field | type | default | bounds | what it does |", "| --- | --- | --- | --- | --- |"]
    required = set(schema.get("required", ()))
    for name, prop in schema["properties"].items():
        if "$ref" in prop:
            default = "its table's defaults"
        elif name == "roster":
            default = "[the default roster](#the-default-roster)"
        elif name in required:
            default = "required"
        else:
            default = _default(defaults.get(name))
        out.append(f"| `{name}` | {_type(prop)} | {default} | {_bounds(prop)} | "
                   f"{cell(COMMENTS.get(prefix + name, ''))} |")
    return out


def _ref(prop: dict[str, Any]) -> str | None:
    for inner in (prop, prop.get("items"), prop.get("additionalProperties")):
        if isinstance(inner, dict) and "$ref" in inner:
            return inner["$ref"].split("/")[-1]
    return None


def _prefixes(schema: dict[str, Any]) -> dict[str, str]:
    """Each model of ``$defs`` -> the top-level field that holds it (``JudgeParams`` -> ``judge``)."""
    return {ref: name for name, prop in schema["properties"].items() if (ref := _ref(prop))}


def config_page() -> str:
    schema = CouncilConfig.model_json_schema()
    defaults = CouncilConfig().model_dump(mode="json")
    out = ["# Configuration file", "",
           "<!-- Generated at build time from CouncilConfig's JSON Schema: do not edit by hand. -->", "",
           "`--config FILE` takes TOML (`.toml`) or JSON (any other name). `council init` writes every field at its "
           "default with the comment shown here. Environment variables `COUNCIL_<FIELD>` (and "
           "`COUNCIL_<FIELD>__<KEY>` for a key inside a table: `COUNCIL_JUDGE__TEMPERATURE=0.2`) override the file, "
           "and command-line options override both. An unknown field is an error. The JSON Schema of the same object: "
           "[`config.schema.json`](config.schema.json).", "",
           "## CouncilConfig", "", "The whole file.", "", *_table(schema, defaults, ""), "",
           "### The default roster", "", "| vendor | judge model | reserve |", "| --- | --- | --- |",
           *[f"| `{m['vendor']}` | `{m['judge_model']}` | {'yes' if m['reserve'] else ''} |" for m in defaults["roster"]]]
    prefixes = _prefixes(schema)
    for name, sub in schema["$defs"].items():
        field = prefixes.get(name, "")
        holder = defaults.get(field)
        sub_defaults = holder if isinstance(holder, dict) and field != "vendors" else {}
        if field == "vendors":  # a vendor not listed has these
            sub_defaults = VendorSettings().model_dump(mode="json")
        out += ["", f"## {name}", "", f"The `{field}` table." if field else "",
                cell(sub.get("description", "")), "", *_table(sub, sub_defaults, f"{field}.")]
    out += ["", "## The example `council init` writes", "", "```toml", example_toml().rstrip(), "```"]
    return "\n".join(out) + "\n"


def config_schema_json() -> str:
    return json.dumps(CouncilConfig.model_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
