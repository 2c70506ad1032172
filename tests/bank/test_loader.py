"""The bank loader: line-numbered validation, fingerprints, and the shipped sample files."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import orjson
import pytest

from bank import (
    SAMPLE_BANK,
    SAMPLE_RESPONSES,
    dataset_fingerprint,
    load_bank,
    load_responses,
    responses_fingerprint,
)
from bank.samples import build_sample
from council.core.errors import InputError
from council.core.schema import BankItem, ResponseRow
from council.protocol.anonymise import Anonymiser
from council.protocol.prompts import DEFAULT_RUBRICS

MODELS = {
    "anthropic/claude-haiku-4.5",
    "google/gemini-2.5-flash",
    "openai/gpt-4.1-mini",
    "qwen/qwen3-235b-a22b",
    "deepseek/deepseek-chat-v3.1",
    "meta-llama/llama-3.3-70b-instruct",
}


def _item(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "x-001",
        "probe": "calibration",
        "prompt": "What is 2 + 2?",
        "reference": "4",
        "rationale": "Checks trivial addition.",
        "tags": ["arithmetic"],
    }
    base.update(overrides)
    return base


def _write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _problems(excinfo: pytest.ExceptionInfo[InputError]) -> list[str]:
    return excinfo.value.problems


# ---------------------------------------------------------------------------------------------- samples


@pytest.fixture(scope="module")
def sample_items() -> list[BankItem]:
    return load_bank(SAMPLE_BANK)


@pytest.fixture(scope="module")
def sample_rows(sample_items: list[BankItem]) -> list[ResponseRow]:
    return load_responses(SAMPLE_RESPONSES, sample_items)


def test_sample_paths_point_into_the_package() -> None:
    assert SAMPLE_BANK.is_file() and SAMPLE_RESPONSES.is_file()
    assert SAMPLE_BANK.parent.name == "samples" and SAMPLE_BANK.parent.parent.name == "bank"


def test_sample_bank_loads_with_four_probes(sample_items: list[BankItem]) -> None:
    assert len(sample_items) >= 160
    counts = collections.Counter(item.probe for item in sample_items)
    assert set(counts) == set(DEFAULT_RUBRICS) == {
        "calibration", "honest_ignorance", "false_premise", "certificate_or_confess",
    }
    assert all(n >= 40 for n in counts.values()), counts
    prefixes = {"calibration": "cal-", "honest_ignorance": "ign-", "false_premise": "fp-",
                "certificate_or_confess": "cert-"}
    for item in sample_items:
        assert item.rationale.strip()
        assert 1 <= len(item.tags) <= 2
        assert re.fullmatch(re.escape(prefixes[item.probe]) + r"\d{3}", item.id), item.id
        if item.probe == "honest_ignorance":
            assert item.reference == "ABSTAIN"


def test_sample_responses_cover_every_item_with_six_vendors(
    sample_items: list[BankItem], sample_rows: list[ResponseRow]
) -> None:
    assert {row.model for row in sample_rows} == MODELS
    vendors = {row.vendor for row in sample_rows}
    assert len(vendors) == 6
    assert len(sample_rows) == len(sample_items) * 6
    by_item: dict[str, list[ResponseRow]] = collections.defaultdict(list)
    for row in sample_rows:
        assert row.gold_verdict in ("correct", "incorrect")
        assert row.row_id == f"{row.item_id}::{row.model}"
        by_item[row.item_id].append(row)
    assert set(by_item) == {item.id for item in sample_items}
    for item_id, rows in by_item.items():
        assert {row.model for row in rows} == MODELS, item_id
        texts = [row.response for row in rows]
        assert len(set(texts)) == len(texts), item_id


def test_sample_responses_never_name_a_model_or_vendor(sample_rows: list[ResponseRow]) -> None:
    # The sample's model ids, and every name and family of its vendors in council/protocol/names.json.
    anonymiser = Anonymiser(MODELS, vendors={row.vendor for row in sample_rows})
    for row in sample_rows:
        assert anonymiser.names_in(row.response) == [], (row.row_id, row.response)
        assert row.vendor not in row.response.lower()


def test_sample_accuracy_differs_by_model(sample_rows: list[ResponseRow]) -> None:
    by_model: dict[str, list[bool]] = collections.defaultdict(list)
    for row in sample_rows:
        by_model[row.model].append(row.gold_verdict == "correct")
    accuracy = {model: sum(v) / len(v) for model, v in by_model.items()}
    assert accuracy["anthropic/claude-haiku-4.5"] == max(accuracy.values())
    assert accuracy["meta-llama/llama-3.3-70b-instruct"] == min(accuracy.values())
    assert len(set(accuracy.values())) == 6
    for value in accuracy.values():
        assert 0.5 <= value <= 0.85


def test_build_script_reproduces_shipped_files(tmp_path: Path) -> None:
    bank_path, responses_path = build_sample.main(tmp_path)
    assert bank_path.read_bytes() == SAMPLE_BANK.read_bytes()
    assert responses_path.read_bytes() == SAMPLE_RESPONSES.read_bytes()


# ------------------------------------------------------------------------------------------- validation


def test_bad_bank_reports_every_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [
        orjson.dumps(_item(id="a-001")).decode(),  # 1 ok
        '{"id": "a-002", "probe": "calibration", "prompt": ',  # 2 invalid JSON
        orjson.dumps({k: v for k, v in _item(id="a-003").items() if k != "rationale"}).decode(),  # 3
        "",  # 4 blank, skipped
        orjson.dumps(_item(id="a-005", prompt="   ")).decode(),  # 5 empty prompt
        orjson.dumps(_item(id="a-006", tags="arithmetic")).decode(),  # 6 tags not a list
        orjson.dumps(_item(id="a-001")).decode(),  # 7 duplicate of line 1
        "[1, 2, 3]",  # 8 not an object
        orjson.dumps(_item(id="a-009")).decode(),  # 9 ok
    ]
    path.write_text("\n".join(lines) + "\n")
    name = str(path)
    with pytest.raises(InputError) as excinfo:
        load_bank(path)
    problems = _problems(excinfo)
    shape = re.compile(r"^(?P<file>.+):(?P<line>\d+): (?P<field>[\w.-]+): (?P<problem>.+)$")
    for problem in problems:
        match = shape.match(problem)
        assert match, problem
        assert match["file"] == name
    by_line = {int(shape.match(p)["line"]): p for p in problems}  # type: ignore[index]
    assert sorted(by_line) == [2, 3, 5, 6, 7, 8]
    assert len(problems) == 6
    assert by_line[2].startswith(f"{name}:2: -: invalid JSON")
    assert by_line[3] == f"{name}:3: rationale: Field required"
    assert by_line[5] == f"{name}:5: prompt: must not be empty"
    assert by_line[6].startswith(f"{name}:6: tags: ")
    assert by_line[7] == f"{name}:7: id: duplicate of line 1"
    assert by_line[8].startswith(f"{name}:8: -: expected a JSON object")
    assert str(excinfo.value).count("\n") == len(problems)


def test_nested_field_locations_are_dotted(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "b.jsonl", [_item(tags=["ok", 3])])
    with pytest.raises(InputError) as excinfo:
        load_bank(path)
    assert _problems(excinfo) == [f"{path}:1: tags.1: Input should be a valid string"]


def test_unknown_field_is_a_problem(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "b.jsonl", [_item(answer="4")])
    with pytest.raises(InputError) as excinfo:
        load_bank(path)
    assert _problems(excinfo) == [f"{path}:1: answer: unknown field"]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as excinfo:
        load_bank(missing)
    assert _problems(excinfo) == [f"{missing}: file not found"]
    with pytest.raises(InputError) as excinfo:
        load_responses(missing)
    assert _problems(excinfo) == [f"{missing}: file not found"]

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n   \n")
    with pytest.raises(InputError) as excinfo:
        load_bank(empty)
    assert len(_problems(excinfo)) == 1 and _problems(excinfo)[0].startswith(f"{empty}: ")


def test_blank_lines_and_crlf_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    body = "\r\n".join(orjson.dumps(_item(id=f"x-{i:03d}")).decode() for i in range(1, 4))
    path.write_text("\n" + body + "\r\n\r\n")
    items = load_bank(path)
    assert [item.id for item in items] == ["x-001", "x-002", "x-003"]


def test_responses_unknown_item_and_duplicates(tmp_path: Path) -> None:
    items = [BankItem(**_item(id="q-001")), BankItem(**_item(id="q-002"))]  # type: ignore[arg-type]
    rows = [
        {"item_id": "q-001", "model": "openai/gpt-4.1-mini", "response": "4"},  # 1 ok
        {"item_id": "q-999", "model": "openai/gpt-4.1-mini", "response": "4"},  # 2 unknown item
        {"item_id": "q-001", "model": "openai/gpt-4.1-mini", "response": "5"},  # 3 duplicate row
        {"item_id": "q-002", "model": "qwen/qwen3-235b-a22b", "response": "4", "gold_verdict": "maybe"},  # 4
        {"item_id": "q-002", "model": "google/gemini-2.5-flash", "response": "4"},  # 5 ok
    ]
    path = _write_jsonl(tmp_path / "responses.jsonl", rows)
    with pytest.raises(InputError) as excinfo:
        load_responses(path, items)
    problems = _problems(excinfo)
    assert f"{path}:2: item_id: unknown item 'q-999'" in problems
    assert f"{path}:3: row_id: duplicate of line 1" in problems
    assert any(p.startswith(f"{path}:4: gold_verdict: ") for p in problems)
    assert len(problems) == 3

    # Without a bank, unknown items are not checked; the other problems still are.
    with pytest.raises(InputError) as excinfo:
        load_responses(path)
    assert not any("unknown item" in p for p in _problems(excinfo))
    assert len(_problems(excinfo)) == 2


def test_responses_derive_row_id_and_vendor(tmp_path: Path) -> None:
    items = [BankItem(**_item(id="q-001"))]  # type: ignore[arg-type]
    path = _write_jsonl(tmp_path / "r.jsonl", [
        {"item_id": "q-001", "model": "qwen/qwen3-235b-a22b", "response": "4", "gold_verdict": "correct"},
    ])
    (row,) = load_responses(path, items)
    assert row.row_id == "q-001::qwen/qwen3-235b-a22b"
    assert row.vendor == "alibaba"


# ------------------------------------------------------------------------------------------ fingerprints


def test_dataset_fingerprint_ignores_order_and_rationale(tmp_path: Path, sample_items: list[BankItem]) -> None:
    records = [orjson.loads(line) for line in SAMPLE_BANK.read_bytes().splitlines() if line.strip()]
    shuffled = list(reversed(records))
    reordered = load_bank(_write_jsonl(tmp_path / "reordered.jsonl", shuffled))
    base = dataset_fingerprint(sample_items)
    assert re.fullmatch(r"[0-9a-f]{64}", base)
    assert dataset_fingerprint(reordered) == base

    changed_rationale = [dict(r) for r in records]
    changed_rationale[3]["rationale"] = "Some other reason."
    changed_rationale[5]["tags"] = ["other"]
    assert dataset_fingerprint(load_bank(_write_jsonl(tmp_path / "r.jsonl", changed_rationale))) == base

    changed_prompt = [dict(r) for r in records]
    changed_prompt[3]["prompt"] += " Answer briefly."
    assert dataset_fingerprint(load_bank(_write_jsonl(tmp_path / "p.jsonl", changed_prompt))) != base

    changed_reference = [dict(r) for r in records]
    changed_reference[7]["reference"] = "something else"
    assert dataset_fingerprint(load_bank(_write_jsonl(tmp_path / "f.jsonl", changed_reference))) != base


def test_dataset_fingerprint_is_unambiguous() -> None:
    a = [BankItem(**_item(id="a", prompt="x y", reference="z"))]  # type: ignore[arg-type]
    b = [BankItem(**_item(id="a", prompt="x", reference="y z"))]  # type: ignore[arg-type]
    assert dataset_fingerprint(a) != dataset_fingerprint(b)


def test_responses_fingerprint(tmp_path: Path, sample_rows: list[ResponseRow]) -> None:
    base = responses_fingerprint(sample_rows)
    assert re.fullmatch(r"[0-9a-f]{64}", base)
    assert responses_fingerprint(list(reversed(sample_rows))) == base
    first = sample_rows[0]
    edited = [first.model_copy(update={"response": first.response + " Indeed."}), *sample_rows[1:]]
    assert responses_fingerprint(edited) != base
    relabelled = [first.model_copy(update={"gold_verdict": "incorrect" if first.gold_verdict == "correct"
                                           else "correct"}), *sample_rows[1:]]
    assert responses_fingerprint(relabelled) == base
