"""The council's configuration from a TOML or JSON file with ``COUNCIL_*`` environment variables on top, the
commented example TOML, and the embedded provider's generated configuration reference."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import orjson
import pytest

from council.core.errors import ConfigError
from council.core.schema import MemberSpec
from council.protocol.config import BatchSettings, CouncilConfig, HonestyWeights, JudgeParams, RetryPolicy, Timeouts, VendorSettings
from council.protocol.configfile import COMMENTS, example_toml, load_config
from council.sim import ModelBehaviour, ProbeProfile, SimConfig, VendorBehaviour
from council.sim._doc import MODELS, field_docs, sim_config_doc, sim_config_schema, sim_config_schema_json

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_JSON = REPO / "deploy" / "council.example.json"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- files -----------------------------------------------------------------------------------------------------------


def test_toml_and_json_files_give_the_same_config(tmp_path):
    data = orjson.loads(EXAMPLE_JSON.read_bytes())
    lines = [f"quorum = {data['quorum']}"]
    for vendor, settings in data["vendors"].items():
        lines.append(f"[vendors.{vendor}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    for member in data["roster"]:
        lines.append("[[roster]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in member.items()]
    toml = write(tmp_path / "council.toml", "\n".join(lines) + "\n")
    from_toml = load_config(toml, environ={})
    assert from_toml == load_config(EXAMPLE_JSON, environ={}) == CouncilConfig.from_file(EXAMPLE_JSON)
    assert from_toml.settings("alibaba").rpm == 600 and from_toml.roster[-1].reserve


def test_no_file_is_the_defaults_and_options_go_on_top(tmp_path):
    assert load_config(None, environ={}) == CouncilConfig()
    toml = write(tmp_path / "c.toml", "quorum = 2\nseed = 5\n")
    config = load_config(toml, environ={"COUNCIL_SEED": "7", "COUNCIL_QUORUM": "4"}, quorum=1)
    assert (config.quorum, config.seed) == (1, 7)  # options over variables over the file


@pytest.mark.parametrize("name, text, message", [
    ("missing.toml", None, "{path}: council config not found"),
    ("bad.toml", "quorum = = 3\n", "{path}: council config is not valid TOML (Invalid value (at line 1, column 10))"),
    ("bad.json", "{quorum: 3}", "{path}: council config is not valid JSON"),
    ("list.json", "[1, 2]", "{path}: council config must be one JSON object, got list"),
    ("bad-field.toml", "quorum = 0\nseed = 'x'\n",
     "{path}: bad council config: quorum: Input should be greater than or equal to 1; seed: Input should be a valid "
     "integer, unable to parse string as an integer"),
    ("extra.toml", "[judge]\ntemprature = 0.1\n", "{path}: bad council config: judge.temprature: Extra inputs are not "
                                                   "permitted"),
    ("not-utf8.toml", b"seed = 1 # \xff\n", "{path}: council config is not UTF-8 text"),
])
def test_file_problems_name_the_file(tmp_path, name, text, message):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(message.format(path=path)), str(info.value)


def test_json_file_problems_read_as_before(tmp_path):
    """``--config`` with a JSON file says what ``CouncilConfig.from_file`` always said."""
    path = write(tmp_path / "c.json", '{"quorum": 0, "bogus": 1}')
    with pytest.raises(ConfigError) as new:
        load_config(path, environ={})
    with pytest.raises(ConfigError) as old:
        CouncilConfig.from_file(path)
    assert str(new.value) == str(old.value) and str(new.value).startswith(f"{path}: bad council config: ")


# -- the environment -------------------------------------------------------------------------------------------------


def test_environment_overrides_fields_and_nested_keys(tmp_path):
    toml = write(tmp_path / "c.toml", "quorum = 2\n[judge]\nmax_tokens = 300\n[vendors.openai]\nrpm = 100\ntpm = 5000\n")
    env = {
        "COUNCIL_QUORUM": "4",
        "COUNCIL_JUDGE__TEMPERATURE": "0.2",
        "COUNCIL_VENDORS__OPENAI__RPM": "600",
        "COUNCIL_VENDORS__GOOGLE__PRICE_IN_PER_MTOK": "1.25",
        "COUNCIL_SELF_EXCLUSION": "true",
        "COUNCIL_BUDGET_USD": "12.5",
        "COUNCIL_VENDOR_MAP__ACME": "meta",  # not JSON: a string
        "COUNCIL_MODEL_PRICES": '{"openai/gpt-4.1-mini": [0.4, 1.6]}',  # keys only JSON can spell
        "COUNCIL_API_KEY": "sk-not-configuration",  # not a field: left alone
        "COUNCIL_SERVICE_TOKEN": "t",
        "OTHER": "1",
    }
    config = load_config(toml, environ=env)
    assert config.quorum == 4 and config.self_exclusion is True and config.budget_usd == 12.5
    assert config.judge == JudgeParams(temperature=0.2, max_tokens=300)  # merged into the file's table
    assert config.settings("openai") == VendorSettings(rpm=600, tpm=5000)
    assert config.settings("google").price_in_per_mtok == 1.25
    assert config.vendor_map == {"acme": "meta"} and config.model_prices == {"openai/gpt-4.1-mini": (0.4, 1.6)}


def test_a_variable_for_a_table_comes_before_its_keys():
    env = {"COUNCIL_JUDGE__MAX_TOKENS": "512", "COUNCIL_JUDGE": '{"temperature": 0.5, "max_tokens": 64}'}
    assert load_config(None, environ=env).judge == JudgeParams(temperature=0.5, max_tokens=512)


def test_a_string_that_looks_like_json_can_be_quoted():
    assert load_config(None, environ={"COUNCIL_VENDOR_MAP": '{"acme/7": "meta"}'}).vendor_map == {"acme/7": "meta"}
    assert load_config(None, environ={"COUNCIL_VENDOR_MAP__ACME": '"meta"'}).vendor_map == {"acme": "meta"}


@pytest.mark.parametrize("env, message", [
    ({"COUNCIL_QUORUM": "0"}, "environment variable COUNCIL_QUORUM: bad council config: quorum: Input should be greater "
                              "than or equal to 1"),
    ({"COUNCIL_JUDGE__TEMPRATURE": "0.2"}, "environment variable COUNCIL_JUDGE__TEMPRATURE: bad council config: "
                                           "judge.temprature: Extra inputs are not permitted"),
    ({"COUNCIL_VENDORS__OPENAI__RPM": "fast"}, "environment variable COUNCIL_VENDORS__OPENAI__RPM: bad council config: "
                                               "vendors.openai.rpm: Input should be a valid number"),
    ({"COUNCIL_HONESTY__WRONG_PENALTY": "5"}, "environment variable COUNCIL_HONESTY__WRONG_PENALTY: bad council "
                                              "config: honesty: confident_wrong_penalty must be at least wrong_penalty"),
    ({"COUNCIL_QUORUM__X": "1"}, "environment variable COUNCIL_QUORUM__X: quorum is a number, not a table"),
    ({"COUNCIL_JUDGE____X": "1"}, "environment variable COUNCIL_JUDGE____X: an empty name"),
])
def test_environment_problems_name_the_variable_and_the_field(tmp_path, env, message):
    toml = write(tmp_path / "c.toml", "quorum = 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(toml, environ=env)
    assert str(info.value).startswith(message), str(info.value)


def test_problems_from_the_file_and_a_variable_are_told_apart(tmp_path):
    toml = write(tmp_path / "c.toml", "seed = 'x'\n")
    with pytest.raises(ConfigError) as info:
        load_config(toml, environ={"COUNCIL_QUORUM": "0"})
    text = str(info.value)
    assert f"{toml}: bad council config: seed: " in text
    assert "environment variable COUNCIL_QUORUM: bad council config: quorum: " in text


def test_a_whole_config_problem_names_the_file_and_the_variables(tmp_path):
    toml = write(tmp_path / "c.toml", "seed = 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(toml, environ={"COUNCIL_QUORUM": "6"})
    assert str(info.value).startswith(f"{toml} with COUNCIL_QUORUM: bad council config: <root>: quorum 6 is larger "
                                      "than the smallest panel"), str(info.value)
    with pytest.raises(ConfigError, match=r"^bad options: <root>: quorum 6"):
        load_config(None, environ={}, quorum=6)


# -- the example -----------------------------------------------------------------------------------------------------


def test_the_example_toml_loads_back_to_the_defaults(tmp_path):
    text = example_toml()
    assert CouncilConfig.model_validate(tomllib.loads(text)) == CouncilConfig()
    assert load_config(write(tmp_path / "council.toml", text), environ={}) == CouncilConfig()


def test_the_example_shows_every_field_with_a_comment():
    text = example_toml()

    def shown(field: str, key: str) -> bool:
        """``field = value  # comment`` (commented out where the default is unset or the table empty)."""
        return re.search(rf"^(# )?{field} = .+  # {re.escape(COMMENTS[key])}$", text, re.M) is not None

    tables = {"judge": JudgeParams, "timeouts": Timeouts, "retry": RetryPolicy, "honesty": HonestyWeights,
              "vendors": VendorSettings, "roster": MemberSpec, "batch": BatchSettings}
    for name, field in CouncilConfig.model_fields.items():
        if name in tables or isinstance(field.default_factory and field.default_factory(), dict):
            assert f"\n[{name}]\n" in text or f"\n[[{name}]]\n" in text, name
            assert f"# {' '.join(COMMENTS[name].split()[:6])}" in text, name
        else:
            assert shown(name, name), name
    for table, model in tables.items():
        for field in model.model_fields:
            assert shown(field, f"{table}.{field}"), (table, field)
    assert "# [vendors.openai]" in text and '# "openai/gpt-4.1-mini" = [0.4, 1.6]' in text


def test_the_example_s_commented_vendor_and_budget_load_when_uncommented(tmp_path):
    lines = example_toml().splitlines()
    start = lines.index("# [vendors.openai]")
    end = next(k for k in range(start, len(lines)) if not lines[k].startswith("# "))
    shown = [line[2:] for line in lines[start:end]]
    budget = [line[2:] for line in lines if line.startswith("# budget_usd = ")]
    text = "\n".join([*budget, *lines[:start], *shown, *lines[end:]])
    config = CouncilConfig.model_validate(tomllib.loads(text))
    assert config.settings("openai") == VendorSettings(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY",
                                                       model_ids="native", rpm=5000, tpm=2_000_000, concurrency=64, max_batch=8,
                                                       price_in_per_mtok=1.25, price_out_per_mtok=10.0, transport="sync")
    assert config.budget_usd == 25.0 and config.roster == CouncilConfig().roster


# -- the embedded provider's configuration reference ----------------------------------------------------------------


def test_sim_config_docs_are_what_the_models_generate():
    """The docs site's reference of the embedded provider's configuration and its JSON Schema are generated from
    the models when the site is built (``docs/hooks/build.py``), never committed."""
    from tests.docs._site import hook

    pages = hook().generated_pages()
    assert pages["reference/sim-config.md"] == sim_config_doc()
    assert pages["reference/sim-config.schema.json"] == sim_config_schema_json()
    assert not (REPO / "docs" / "reference" / "sim-config.md").exists()
    assert json.loads(sim_config_schema_json()) == SimConfig.model_json_schema() == sim_config_schema()


def test_every_sim_field_is_documented_with_its_type_and_default():
    doc = sim_config_doc()
    assert MODELS == (SimConfig, VendorBehaviour, ProbeProfile, ModelBehaviour)
    for model in MODELS:
        docs = field_docs(model)
        assert set(docs) == set(model.model_fields), model.__name__
        assert f"## {model.__name__}" in doc
        for name, (annotation, text) in docs.items():
            assert text, f"{model.__name__}.{name} has no docstring"
            assert f"| `{name}` | `{annotation}` | " in doc, (model.__name__, name)
    assert "| `accuracy` | `float` | `0.82` | >= 0.0, <= 1.0 | P(round-one verdict == truth)" in doc
    assert "| `bad_body` | `Literal['any', 'invalid', 'cut']` | `\"any\"` |" in doc
    assert "| `default` | `VendorBehaviour` | `VendorBehaviour()` (its defaults) |" in doc


def test_the_docs_point_to_the_sim_config_reference():
    from tests.docs._site import nav_pages

    assert "reference/sim-config.md" in nav_pages()
    guide = (REPO / "docs" / "embedded-provider.md").read_text(encoding="utf-8")
    assert "(reference/sim-config.md)" in guide and "(reference/sim-config.schema.json)" in guide


def test_a_near_miss_of_a_field_name_is_warned_about_and_other_variables_are_not():
    from council.protocol.configfile import mistyped_variables

    environ = {"COUNCIL_QUORAM": "4", "COUNCIL_JUDG__TEMPERATURE": "0.2", "COUNCIL_API_KEY": "k",
               "COUNCIL_SERVICE_TOKEN": "t", "COUNCIL_QUORUM": "3", "HOME": "/root"}
    warnings = mistyped_variables(environ)
    assert warnings == [
        "environment variable COUNCIL_JUDG__TEMPERATURE is not configuration and is ignored: did you mean "
        "COUNCIL_JUDGE__TEMPERATURE?",
        "environment variable COUNCIL_QUORAM is not configuration and is ignored: did you mean COUNCIL_QUORUM?",
    ]
    assert load_config(None, environ).quorum == 3  # the near miss changes nothing


def test_the_command_line_says_when_a_variable_is_a_near_miss(tmp_path, monkeypatch, capsys):
    from council.cli import main

    monkeypatch.setenv("COUNCIL_QUORAM", "4")
    code = main(["estimate", "--json"])
    err = capsys.readouterr().err
    assert code == 0 and "did you mean COUNCIL_QUORUM?" in err
