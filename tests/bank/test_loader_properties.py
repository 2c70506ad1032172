"""Property tests of the bank and responses loaders.

A valid file, however it is written (any Unicode, optional fields present or not, a byte-order mark, CRLF
line ends, blank lines, different JSON encoders), loads to exactly the records written. A file with
corrupted lines loads nothing: the InputError names every corrupted line, by number, and no good line, and
no other exception escapes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bank import load_bank, load_responses
from council.core.errors import InputError
from council.core.schema import BankItem, ResponseRow

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# model id -> the vendor the resolver gives it
MODELS = {
    "openai/gpt-4o": "openai",
    "claude-3-5-sonnet-20241022": "anthropic",
    "qwen/qwen3-max": "alibaba",
    "google/gemini-2.5-flash": "google",
    "deepseek/deepseek-chat-v3.1": "deepseek",
    "meta-llama/llama-3.3-70b-instruct": "meta",
}
OTHER_VENDOR = {"openai": "google", "anthropic": "openai", "alibaba": "meta", "google": "deepseek",
                "deepseek": "anthropic", "meta": "alibaba"}

text = st.text(max_size=40)
non_blank = st.text(min_size=1, max_size=40).filter(lambda s: s.strip())


# ------------------------------------------------------------------------------------------- writing files


def _encode(record: Any, style: int) -> bytes:
    """One JSON line, in one of several legitimate spellings."""
    if style == 0:
        return orjson.dumps(record)
    if style == 1:
        return json.dumps(record, ensure_ascii=True).encode()  # \uXXXX escapes, surrogate pairs
    return json.dumps(record, ensure_ascii=False, indent=None, separators=(" ,  ", " :\t")).encode()


@st.composite
def layouts(draw: st.DrawFn, n: int) -> tuple[bool, list[bytes], list[int]]:
    """(BOM, an end for each line, blank lines to put before each record) for ``n`` records."""
    bom = draw(st.booleans())
    ends = draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=n, max_size=n))
    blanks = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return bom, ends, blanks


def _write(path: Path, lines: list[bytes], bom: bool, last_end: bool = True) -> None:
    data = b"".join(lines)
    if not last_end:
        data = data.rstrip(b"\r\n")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)


@pytest.fixture(scope="module")
def new_file(fresh_dir):
    """A fresh file path per example (hypothesis runs many examples per test function)."""
    return lambda: fresh_dir() / "f.jsonl"


# -------------------------------------------------------------------------------------------- generators


@st.composite
def bank_records(draw: st.DrawFn, min_size: int = 1, max_size: int = 8) -> list[dict[str, Any]]:
    ids = draw(st.lists(non_blank, min_size=min_size, max_size=max_size, unique=True))
    out = []
    for item_id in ids:
        record = {"id": item_id, "probe": draw(non_blank), "prompt": draw(non_blank),
                  "reference": draw(non_blank), "rationale": draw(non_blank)}
        if draw(st.booleans()):
            record["rubric"] = draw(st.none() | text)
        if draw(st.booleans()):
            record["tags"] = draw(st.lists(text, max_size=3))
        out.append(record)
    return out


@st.composite
def response_records(draw: st.DrawFn, bank_ids: list[str], max_size: int = 8) -> list[dict[str, Any]]:
    pairs = draw(st.lists(st.tuples(st.sampled_from(bank_ids), st.sampled_from(sorted(MODELS))),
                          min_size=1, max_size=max_size, unique=True))
    out = []
    for n, (item_id, model) in enumerate(pairs):
        record: dict[str, Any] = {"item_id": item_id, "model": model, "response": draw(text)}
        if draw(st.booleans()):
            record["row_id"] = f"row-{n}"  # never equal to a derived id (those hold '::')
        if draw(st.booleans()):
            record["vendor"] = draw(st.sampled_from([MODELS[model], MODELS[model].upper()]))
        if draw(st.booleans()):
            record["gold_verdict"] = draw(st.sampled_from(["correct", "incorrect", None]))
        if draw(st.booleans()):
            record["confidence"] = draw(st.none() | st.floats(0.0, 1.0, allow_nan=False))
        if draw(st.booleans()):
            record["abstained"] = draw(st.booleans())
        out.append(record)
    return out


def _file_lines(records: list[dict[str, Any]], styles: list[int], layout) -> tuple[list[bytes], list[int]]:
    """The file's lines and the (1-based) line number of each record."""
    _, ends, blanks = layout
    lines, numbers = [], []
    for record, style, end, blank in zip(records, styles, ends, blanks):
        lines.extend([b" \t"[: blank % 2 + 1] + end if blank else end] * blank)
        numbers.append(len(lines) + 1)
        lines.append(_encode(record, style) + end)
    return lines, numbers


# ----------------------------------------------------------------------------------------- round trips


@SETTINGS
@given(data=st.data())
def test_any_valid_bank_loads_exactly(new_file, data):
    records = data.draw(bank_records())
    styles = data.draw(st.lists(st.integers(0, 2), min_size=len(records), max_size=len(records)))
    layout = data.draw(layouts(len(records)))
    lines, _ = _file_lines(records, styles, layout)
    path = new_file()
    _write(path, lines, layout[0], last_end=data.draw(st.booleans()))
    items = load_bank(path)
    defaults = {"rubric": None, "tags": [], "paraphrase_of": None, "difficulty": None, "group": None,
                "scale": None}  # the optional fields
    assert set(defaults) == {n for n, f in BankItem.model_fields.items() if not f.is_required()}
    assert [item.model_dump() for item in items] == [{**defaults, **r} for r in records]
    assert items == [BankItem.model_validate(r) for r in records]


@SETTINGS
@given(data=st.data())
def test_any_valid_responses_load_exactly(new_file, data):
    bank = data.draw(bank_records(max_size=4))
    bank_items = [BankItem.model_validate(r) for r in bank]
    records = data.draw(response_records([r["id"] for r in bank]))
    styles = data.draw(st.lists(st.integers(0, 2), min_size=len(records), max_size=len(records)))
    layout = data.draw(layouts(len(records)))
    lines, _ = _file_lines(records, styles, layout)
    path = new_file()
    _write(path, lines, layout[0], last_end=data.draw(st.booleans()))
    rows = load_responses(path, bank_items)
    assert len(rows) == len(records)
    for row, record in zip(rows, records):
        assert row.item_id == record["item_id"] and row.model == record["model"]
        assert row.response == record["response"]
        assert row.vendor == MODELS[record["model"]]
        assert row.row_id == record.get("row_id", f"{record['item_id']}::{record['model']}")
        assert row.gold_verdict == record.get("gold_verdict")
        assert row.confidence == record.get("confidence")
        assert row.abstained == record.get("abstained", False)
    assert rows == [ResponseRow.model_validate(r) for r in records]


# ----------------------------------------------------------------------------------------- corruptions


@dataclass
class Line:
    data: bytes  # without its line end
    kind: str  # "good", "blank" or the corruption
    exact: str | None = None  # the exact problem this line must get (after "file:line: ")


_GARBAGE = (st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"?"))
            .filter(lambda b: b.strip() and not b.startswith(b"\xef\xbb\xbf")))  # a BOM is no garbage
_BAD_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80", b"\xf8\x88\x80\x80"]
_WRONG = [1, 2.5, True, [], {}, ["x"], {"a": 1}]


def _wrong_value(field: str) -> st.SearchStrategy[Any]:
    if field == "tags":
        return st.sampled_from(["tag", 3, {"a": "b"}, [1], [None]])
    if field == "rubric":
        return st.sampled_from([1, 2.5, True, [], {}])
    if field == "confidence":
        return st.sampled_from(["high", [], {}, 1.5, -0.1])
    if field == "gold_verdict":
        return st.sampled_from(["maybe", "Correct", 1, []])
    if field == "abstained":
        return st.sampled_from(["maybe", 2, [], {}])
    if field == "vendor":
        return st.sampled_from([1, [], {}])
    return st.sampled_from([*_WRONG, None])


@st.composite
def corrupt(draw: st.DrawFn, lines: list[Line], responses: bool) -> Line:
    """A corrupted version of a good line (or new garbage)."""
    good = [line for line in lines if line.kind == "good"]
    base = draw(st.sampled_from(good))
    record = orjson.loads(base.data)
    kinds = ["garbage", "utf8", "truncate", "wrong_type", "missing", "unknown_field", "not_object", "duplicate"]
    if responses:
        kinds += ["unknown_item", "vendor_conflict"]
    kind = draw(st.sampled_from(kinds))
    if kind == "garbage":
        return Line(draw(_GARBAGE), kind)
    if kind == "utf8":
        chars = base.data.decode()
        at = draw(st.integers(1, len(chars)))
        head = chars[:at].encode()
        return Line(head + draw(st.sampled_from(_BAD_UTF8)) + chars[at:].encode(), kind,
                    exact=f"-: invalid UTF-8 at byte {len(head) + 1} of the line")
    if kind == "truncate":
        return Line(base.data[: draw(st.integers(1, len(base.data) - 1))], kind)
    if kind == "wrong_type":
        fields = ["id", "probe", "prompt", "reference", "rationale", "rubric", "tags"] if not responses else [
            "item_id", "model", "response", "row_id", "vendor", "gold_verdict", "confidence", "abstained"]
        field = draw(st.sampled_from(fields))
        if field == "row_id":  # (a falsy row_id - [], {}, 0, false - is replaced by the derived one)
            record[field] = draw(st.sampled_from([1, ["x"], {"a": 1}, True]))
        else:
            record[field] = draw(_wrong_value(field))
        return Line(orjson.dumps(record), kind)
    if kind == "missing":
        required = ["item_id", "model", "response"] if responses else ["id", "probe", "prompt", "reference",
                                                                       "rationale"]
        del record[draw(st.sampled_from(required))]
        return Line(orjson.dumps(record), kind)
    if kind == "unknown_field":
        record["zz_extra"] = draw(text)
        return Line(orjson.dumps(record), kind, exact="zz_extra: unknown field")
    if kind == "not_object":
        value = draw(st.sampled_from([[record], "text", 3, None, True]))
        return Line(orjson.dumps(value), kind)
    if kind == "duplicate":
        return Line(base.data, "good")  # a verbatim copy: the later of the two is the bad one
    if kind == "unknown_item":
        record["item_id"] = "zz-not-in-the-bank"
        record.pop("row_id", None)
        return Line(orjson.dumps(record), kind)
    vendor = MODELS[record["model"]]
    record["vendor"] = OTHER_VENDOR[vendor]
    return Line(orjson.dumps(record), kind)


def _key(raw: bytes, responses: bool) -> str | None:
    """The id a line claims, that a later line must not claim again (the documented duplicate rule: the
    bank's ``id``; a row's ``row_id``, else ``item_id::model``)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    if not responses:
        return obj["id"] if isinstance(obj.get("id"), str) else None
    if isinstance(obj.get("row_id"), str) and obj["row_id"]:
        return obj["row_id"]
    item_id, model = obj.get("item_id"), obj.get("model")
    if isinstance(item_id, str) and isinstance(model, str) and model.strip():
        return f"{item_id}::{model}"
    return None


@st.composite
def corrupted_files(draw: st.DrawFn, responses: bool) -> tuple[list[dict], list[Line], bool, bool]:
    bank = draw(bank_records(min_size=1, max_size=4 if responses else 8))
    records = draw(response_records([r["id"] for r in bank])) if responses else bank
    lines = [Line(orjson.dumps(r), "good") for r in records]
    for _ in range(draw(st.integers(1, 5))):
        bad = draw(corrupt(lines, responses))
        if draw(st.booleans()) and sum(line.kind == "good" for line in lines) > 1:
            # in place of a good line (a duplicate copy is always inserted)
            at = draw(st.sampled_from([i for i, line in enumerate(lines) if line.kind == "good"]))
            if bad.kind != "good":
                lines[at] = bad
                continue
        lines.insert(draw(st.integers(0, len(lines))), bad)
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), Line(draw(st.sampled_from([b"", b"  ", b"\t"])), "blank"))
    return bank, lines, draw(st.booleans()), draw(st.booleans())


def _expected_bad(lines: list[Line], responses: bool) -> dict[int, Line]:
    bad: dict[int, Line] = {}
    first: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if line.kind == "blank":
            continue
        key = _key(line.data, responses)
        if key is not None and key in first:
            bad[number] = Line(line.data, "duplicate", exact=f"{'row_id' if responses else 'id'}: duplicate of line "
                                                             f"{first[key]}")
            continue
        if key is not None:
            first[key] = number
        if line.kind != "good":
            bad[number] = line
    return bad


_PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<rest>.+)$", re.DOTALL)


def _check_corrupted(path: Path, lines: list[Line], responses: bool, load) -> None:
    expected = _expected_bad(lines, responses)
    assert expected  # at least one corruption survives
    with pytest.raises(InputError) as excinfo:
        load(path)
    problems = excinfo.value.problems
    by_line: dict[int, list[str]] = {}
    for problem in problems:
        match = _PROBLEM.match(problem)
        assert match and match["file"] == str(path), problem
        by_line.setdefault(int(match["line"]), []).append(match["rest"])
    assert set(by_line) == set(expected), (problems, {n: line.kind for n, line in expected.items()})
    for number, line in expected.items():
        if line.exact is not None:
            assert line.exact in by_line[number], (number, line, by_line[number])
    for rests in by_line.values():
        for rest in rests:
            assert "Traceback" not in rest and "UnicodeDecodeError" not in rest and "surrogates" not in rest


@SETTINGS
@given(data=st.data())
def test_corrupted_bank_loads_nothing_and_names_every_bad_line(new_file, data):
    _, lines, crlf, bom = data.draw(corrupted_files(responses=False))
    end = b"\r\n" if crlf else b"\n"
    path = new_file()
    _write(path, [line.data + end for line in lines], bom)
    _check_corrupted(path, lines, False, load_bank)


@SETTINGS
@given(data=st.data())
def test_corrupted_responses_load_nothing_and_name_every_bad_line(new_file, data):
    bank, lines, crlf, bom = data.draw(corrupted_files(responses=True))
    items = [BankItem.model_validate(r) for r in bank]
    end = b"\r\n" if crlf else b"\n"
    path = new_file()
    _write(path, [line.data + end for line in lines], bom)
    _check_corrupted(path, lines, True, lambda p: load_responses(p, items))


# ------------------------------------------------------------------------------------------ whole files


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_never_escape_as_another_exception(new_file, data):
    path = new_file()
    path.write_bytes(data)
    for load in (load_bank, load_responses):
        try:
            load(path)
        except InputError as exc:
            assert exc.problems
            for problem in exc.problems:
                assert problem.startswith(f"{path}:") or problem.startswith(f"{path}: "), problem


def test_invalid_utf8_names_line_and_byte(tmp_path):
    path = tmp_path / "bank.jsonl"
    good = [orjson.dumps({"id": f"a{n}", "probe": "p", "prompt": "q", "reference": "r", "rationale": "why"})
            for n in range(6)]
    path.write_bytes(b"\n".join([*good, b'{"id": "caf\xe9", "probe": "p"}', b""]))
    with pytest.raises(InputError) as excinfo:
        load_bank(path)
    assert excinfo.value.problems == [f"{path}:7: -: invalid UTF-8 at byte 12 of the line"]


@pytest.mark.parametrize("content, says", [
    (b"[" + b",\n".join([b'{"id": "a"}', b'{"id": "b"}']) + b"]\n", "one JSON array"),
    (b'[{"id": "a"}, {"id": "b"}]', "one JSON array"),
    (b'{\n  "id": "a",\n  "probe": "p"\n}\n', "one JSON object spread over several lines"),
    (b"\x1f\x8b\x08\x00" + bytes(range(256)), "gzip-compressed data"),
    (b"PK\x03\x04" + bytes(range(256)), "a zip archive"),
    ('{"id": "a"}\n'.encode("utf-16"), "encoded as UTF-16"),
    (bytes(range(256)) * 4, "binary data"),
    (b"\x00\x01\x02\x03garbage\x00", "binary data"),
])
def test_a_file_that_is_not_jsonl_gets_one_message(tmp_path, content, says):
    path = tmp_path / "bank.jsonl"
    path.write_bytes(content)
    for load in (load_bank, load_responses):
        with pytest.raises(InputError) as excinfo:
            load(path)
        (problem,) = excinfo.value.problems
        assert problem.startswith(f"{path}: not JSONL: ") and says in problem, problem
