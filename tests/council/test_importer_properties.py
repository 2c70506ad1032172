"""Property tests of the importers (``council.importers``), one set per format of ``FORMATS``.

Well-formed records of any content round-trip to exactly the rows expected, with no problem reported; and
a file damaged at arbitrary bytes never raises anything but InputError or ConfigError, and never yields a
row that the damaged file does not hold (every returned row's item is in the bank, its model and its text
are strings written in the file, and no row is returned twice).
"""

from __future__ import annotations

import gzip
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bank
from council.core.errors import ConfigError, InputError
from council.importers import FORMATS, import_responses

ROUND_TRIP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DAMAGE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MODELS = {  # model id -> the vendor the resolver gives it
    "openai/gpt-4o": "openai",
    "claude-3-5-sonnet-20241022": "anthropic",
    "qwen/qwen3-max": "alibaba",
    "google/gemini-2.5-flash": "google",
    "deepseek/deepseek-chat-v3.1": "deepseek",
    "meta-llama/llama-3.3-70b-instruct": "meta",
}
ITEMS = bank.load_bank(bank.SAMPLE_BANK)[:40]
ITEM_IDS = [item.id for item in ITEMS]

answer = st.text(min_size=1, max_size=60).filter(lambda s: s.strip())


@dataclass
class Written:
    """A file (or folder) in one format, the rows it must import to, and the ``model=`` to pass."""

    path: Path
    expected: list[tuple[str, str, str, str]]  # (item_id, model, vendor, response)
    model: str | None = None
    damageable: list[Path] = field(default_factory=list)  # the files whose bytes may be damaged
    extra: dict[str, Any] = field(default_factory=dict)


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


# ----------------------------------------------------------------------------------------------- formats


@st.composite
def pairs(draw: st.DrawFn, one_model: bool) -> list[tuple[str, str, str]]:
    """Distinct (item, model) pairs with a response each; one model for the whole file if ``one_model``."""
    if one_model:
        model = draw(st.sampled_from(sorted(MODELS)))
        items = draw(st.lists(st.sampled_from(ITEM_IDS), min_size=1, max_size=6, unique=True))
        keys = [(item, model) for item in items]
    else:
        keys = draw(st.lists(st.tuples(st.sampled_from(ITEM_IDS), st.sampled_from(sorted(MODELS))), min_size=1,
                             max_size=6, unique=True))
    return [(item, model, draw(answer)) for item, model in keys]


@st.composite
def jsonl_files(draw: st.DrawFn, where: Path) -> Written:
    records = []
    for item, model, text in draw(pairs(one_model=False)):
        record: dict[str, Any] = {"item_id": item, "model": model, "response": text}
        if draw(st.booleans()):
            record["vendor"] = MODELS[model]
        if draw(st.booleans()):
            record["gold_verdict"] = draw(st.sampled_from(["correct", "incorrect"]))
        if draw(st.booleans()):
            record["confidence"] = draw(st.floats(0.0, 1.0))
        records.append(record)
    data = _jsonl(records)
    compressed = draw(st.booleans())
    path = where / ("responses.jsonl.gz" if compressed else "responses.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    expected = [(r["item_id"], r["model"], MODELS[r["model"]], r["response"]) for r in records]
    return Written(path, expected, damageable=[path])


@st.composite
def inspect_files(draw: st.DrawFn, where: Path) -> Written:
    rows = draw(pairs(one_model=True))
    model = rows[0][1]
    samples, expected = [], []
    for n, (item, _, text) in enumerate(rows):
        style = draw(st.sampled_from(["string", "parts", "completion", "metadata_id"]))
        sample: dict[str, Any] = {"id": item, "epoch": 1, "input": "(prompt)", "target": "(reference)",
                                  "messages": [], "scores": {}, "metadata": {}}
        content: Any = text
        if style == "parts":
            extra = draw(answer)
            content = [{"type": "reasoning", "reasoning": "hidden"}, {"type": "text", "text": text},
                       {"type": "text", "text": extra}]
            text = text + "\n" + extra
        if style == "metadata_id":
            sample["id"] = n + 1000
            sample["metadata"] = {"item_id": item}
        if style == "completion":
            sample["output"] = {"model": "m", "choices": [], "completion": text}
        else:
            sample["output"] = {"model": "m", "choices": [{"message": {"role": "assistant", "content": content}}]}
        samples.append(sample)
        expected.append((item, model, MODELS[model], text))
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": model}, "results": {}}
    if draw(st.booleans()):
        path = where / "log.json"
        path.write_bytes(orjson.dumps({**header, "samples": samples}, option=orjson.OPT_INDENT_2))
    else:
        path = where / "log.eval"
        with zipfile.ZipFile(path, "w", compression=draw(st.sampled_from([zipfile.ZIP_STORED,
                                                                           zipfile.ZIP_DEFLATED]))) as archive:
            archive.writestr("header.json", orjson.dumps(header))
            for n, sample in enumerate(samples):
                archive.writestr(f"samples/{n}_epoch_1.json", orjson.dumps(sample))
    return Written(path, expected, damageable=[path])


@st.composite
def lm_eval_files(draw: st.DrawFn, where: Path) -> Written:
    rows = draw(pairs(one_model=True))
    model = rows[0][1]
    lines, expected = [], []
    for n, (item, _, text) in enumerate(rows):
        doc = {"doc_id": n, "doc": {"item_id": item, "prompt": "(prompt)"}, "target": "x",
               "arguments": {"gen_args_0": {"arg_0": "(prompt)"}}, "resps": [[text]], "filtered_resps": [text],
               "metrics": ["exact_match"], "exact_match": 1.0}
        filters = draw(st.lists(st.sampled_from(["strict-match", "flexible-extract", "none"]), min_size=1,
                                max_size=3, unique=True))
        lines.extend({**doc, "filter": f} for f in filters)  # the same document once per filter: folded
        expected.append((item, model, MODELS[model], text))
    stamp = "2025-06-01T10-00-00.123456"
    compressed = draw(st.booleans())
    path = where / (f"samples_task_{stamp}.jsonl" + (".gz" if compressed else ""))
    data = _jsonl(lines)
    path.write_bytes(gzip.compress(data) if compressed else data)
    override = None
    results = where / f"results_{stamp}.json"
    if draw(st.booleans()):
        results.write_bytes(orjson.dumps({"results": {}, "config": {"model": "hf", "model_args": f"pretrained={model}"},
                                          "model_name": model}))
    else:
        override = model
    return Written(path, expected, model=override, damageable=[path], extra={"results": results})


@st.composite
def openai_evals_files(draw: st.DrawFn, where: Path) -> Written:
    rows = draw(pairs(one_model=True))
    model = rows[0][1]
    lines: list[Any] = [{"spec": {"completion_fns": [model], "eval_name": "e.dev.v0", "run_id": "r"}}]
    expected = []
    for n, (item, _, text) in enumerate(rows):
        sampled = text if draw(st.booleans()) else [text]
        lines.append({"run_id": "r", "event_id": 2 * n, "sample_id": f"e.dev.{n}", "type": "sampling",
                      "data": {"prompt": [{"role": "user", "content": "(prompt)"}], "sampled": sampled,
                               "item_id": item}, "created_by": "", "created_at": "2025-06-01 10:00:00"})
        if draw(st.booleans()):
            lines.append({"run_id": "r", "event_id": 2 * n + 1, "sample_id": f"e.dev.{n}", "type": "match",
                          "data": {"correct": True, "expected": "x", "picked": text}})
        expected.append((item, model, MODELS[model], text))
    lines.append({"final_report": {"accuracy": 1.0}})
    path = where / "events.jsonl"
    path.write_bytes(_jsonl(lines))
    return Written(path, expected, damageable=[path])


@st.composite
def overlooked_files(draw: st.DrawFn, where: Path) -> Written:
    records, expected = [], []
    for item, model, text in draw(pairs(one_model=False)):
        record: dict[str, Any] = {"item_id": item, "category": "calibration", "model_id": model,
                                  "model_key": re.sub(r"[^a-z0-9]+", "-", model), "text": text, "ok": True,
                                  "error": None, "finish_reason": "stop"}
        if draw(st.booleans()):
            record["provider"] = MODELS[model]
        records.append(record)
        expected.append((item, model, MODELS[model], text))
    layout = draw(st.sampled_from(["jsonl", "json", "folder"]))
    if layout == "jsonl":
        path = where / "raw.jsonl"
        path.write_bytes(_jsonl(records))
        return Written(path, expected, damageable=[path])
    if layout == "json":
        path = where / "raw.json"
        path.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
        return Written(path, expected, damageable=[path])
    path = where / "run"
    files = []
    for record in records:
        file = path / "raw" / record["model_key"] / record["category"] / f"{record['item_id']}.json"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
        files.append(file)
    return Written(path, expected, damageable=files)


WRITERS: dict[str, Callable[[Path], st.SearchStrategy[Written]]] = {
    "jsonl": jsonl_files,
    "inspect": inspect_files,
    "lm_eval": lm_eval_files,
    "openai_evals": openai_evals_files,
    "overlooked": overlooked_files,
}


def test_every_format_has_a_writer():
    assert set(WRITERS) == set(FORMATS)


# ------------------------------------------------------------------------------------------- round trip


@ROUND_TRIP
@given(data=st.data())
@pytest.mark.parametrize("fmt", FORMATS)
def test_well_formed_records_round_trip(fresh_dir, fmt, data):
    written = data.draw(WRITERS[fmt](fresh_dir()))
    result = import_responses(written.path, fmt, items=ITEMS, model=written.model)
    assert result.problems == [] and result.skipped == 0
    got = [(r.item_id, r.model, r.vendor, r.response) for r in result.rows]
    assert sorted(got) == sorted(written.expected)
    assert len({r.row_id for r in result.rows}) == len(result.rows)


# ------------------------------------------------------------------------------------------------ damage


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == "flip" and out:
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and out:
            out[at] = draw(st.sampled_from([0x00, 0x0A, 0x22, 0x5C, 0x7B, 0x7D, 0x80, 0xC3, 0xFF]))
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del out[at: at + draw(st.integers(1, 16))]
        else:
            del out[at:]
    return bytes(out)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _strings(data: bytes) -> set[str]:
    """Every JSON string a parser could read anywhere in ``data`` (tried from every quote)."""
    out = set()
    for start in [m.start() for m in re.finditer(rb'"', data)]:
        match = _STRING.match(data, start)
        if match is None:
            continue
        try:
            value = orjson.loads(match.group())
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, str):
            out.add(value)
    return out


def _contents(path: Path) -> bytes:
    """The bytes an importer can read from ``path``: a gzip file decompressed, a zip's entries inflated."""
    data = path.read_bytes()
    if data.startswith(b"\x1f\x8b"):
        try:
            return gzip.decompress(data)
        except Exception:  # noqa: BLE001 - a damaged archive holds what can be read of it, or nothing
            return b""
    if zipfile.is_zipfile(path):
        chunks = []
        try:
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    try:
                        chunks.append(archive.read(name))
                    except Exception:  # noqa: BLE001
                        pass
        except Exception:  # noqa: BLE001
            pass
        return b"\n".join(chunks)
    return data


@DAMAGE
@given(data=st.data())
@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_files_fail_cleanly_and_invent_nothing(fresh_dir, fmt, data):
    written = data.draw(WRITERS[fmt](fresh_dir()))
    target = data.draw(st.sampled_from(written.damageable))
    if target.suffix == ".gz" and data.draw(st.booleans()):  # damage the text inside the container
        target.write_bytes(gzip.compress(data.draw(damaged(gzip.decompress(target.read_bytes())))))
    elif target.suffix == ".eval" and data.draw(st.booleans()):
        with zipfile.ZipFile(target) as archive:
            entries = {name: archive.read(name) for name in archive.namelist()}
        name = data.draw(st.sampled_from(sorted(entries)))
        entries[name] = data.draw(damaged(entries[name]))
        with zipfile.ZipFile(target, "w") as archive:
            for entry, content in entries.items():
                archive.writestr(entry, content)
    else:
        target.write_bytes(data.draw(damaged(target.read_bytes())))
    try:
        result = import_responses(written.path, fmt, items=ITEMS, model=written.model)
    except (InputError, ConfigError) as exc:
        problems = getattr(exc, "problems", [str(exc)])
        assert problems and all(isinstance(p, str) and p for p in problems)
        return
    readable = b"\n".join(_contents(p) for p in written.damageable if p.exists())
    results = written.extra.get("results")
    if results is not None and results.exists():
        readable += b"\n" + results.read_bytes()
    strings = _strings(readable)
    stripped = {s.strip() for s in strings}
    assert len({r.row_id for r in result.rows}) == len(result.rows)
    for row in result.rows:
        assert row.item_id in ITEM_IDS
        assert row.model == written.model or row.model in stripped, row.model
        pieces = row.response.split("\n")
        assert row.response in strings or all(any(p in s for s in strings) for p in pieces), row.response
