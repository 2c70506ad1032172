"""Rows, fingerprints and archived votes without holding every row or record in memory."""

import hashlib

import orjson
import pytest

import bank
from bank import _loader
from council.core.errors import InputError
from council.core.schema import JudgeCallRecord
from council.store import archive_index
from council.store.runfolder import ArchiveIndex, RunFolder


def _record(row_id, member, round_, verdict, *, status="ok", cost=0.5, key="k"):
    return JudgeCallRecord(row_id=row_id, round=round_, member=member, judge_model="m", verdict=verdict,
                           reason="r", ok=status == "ok", parse_status=status, raw_outputs=["x"],
                           judge_prompt_version="v", judge_prompt_hash="h", request_id="q", cost_usd=cost,
                           request_key=key)


def test_fingerprint_is_the_sorted_definition():
    items = bank.load_bank(bank.SAMPLE_BANK)
    rows = bank.load_responses(bank.SAMPLE_RESPONSES, items)
    quads = sorted([r.row_id, r.item_id, r.model, r.response] for r in rows)
    expected = hashlib.sha256(orjson.dumps(["responses", 1, quads])).hexdigest()
    assert bank.responses_fingerprint(iter(rows)) == expected
    repeated = sorted(quads + [[r.row_id, r.item_id, r.model, r.response] for r in rows[:2]])
    assert bank.responses_fingerprint(rows[::-1] + rows[:2]) == hashlib.sha256(
        orjson.dumps(["responses", 1, repeated])).hexdigest()
    assert bank.responses_fingerprint([]) == hashlib.sha256(orjson.dumps(["responses", 1, []])).hexdigest()


def test_check_responses_keeps_no_rows_and_reports_duplicates(tmp_path, monkeypatch):
    items = bank.load_bank(bank.SAMPLE_BANK)
    lines = bank.SAMPLE_RESPONSES.read_bytes().splitlines()
    scan = bank.check_responses(bank.SAMPLE_RESPONSES, items)
    assert scan.rows == len(lines) and len(scan.models) == 6
    assert [r.row_id for r in bank.iter_responses(bank.SAMPLE_RESPONSES)] == [orjson.loads(x)["row_id"] for x in lines]
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b"\n".join([*lines[:3], lines[1]]) + b"\n")
    with pytest.raises(InputError) as err:
        bank.check_responses(path, items)
    assert err.value.problems == [f"{path}:4: row_id: duplicate of line 2"]
    # a digest collision alone is no duplicate: the exact check finds none
    monkeypatch.setattr(_loader, "_key_digest", lambda key: 7)
    assert bank.check_responses(bank.SAMPLE_RESPONSES, items).rows == len(lines)


def test_archive_index_reads_records_back_by_offset(tmp_path):
    folder = RunFolder(tmp_path)
    folder.append(_record("a", "openai", 1, "correct", cost=1.0, key="old"))
    folder.append(_record("a", "openai", 1, "incorrect", cost=2.0, key="new"))  # supersedes the first
    folder.append(_record("a", "openai", 1, None, status="error", cost=0.0))  # an error is not a result
    folder.append(_record("a", "openai", 2, "correct", cost=4.0))
    folder.append(_record("b", "google", 1, None, status="error"))
    folder.close()
    with open(tmp_path / "round2.jsonl", "ab") as handle:
        handle.write(b'{"row_id": "torn')
    index = ArchiveIndex.build(tmp_path)
    assert len(index) == 2 and index.cost_usd == pytest.approx(6.0)
    got = index.get(("a", "openai", 1))
    assert (got.verdict, got.request_key) == ("incorrect", "new")
    assert index.get(("a", "openai", 2)).round == 2
    assert index.get(("b", "google", 1)) is None and index.get(("a", "google", 1)) is None
    index.close()


def test_archive_index_keeps_colliding_votes_apart(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path)
    for row in "abc":
        folder.append(_record(row, "openai", 1, "correct", key=row))
    folder.close()
    monkeypatch.setattr(archive_index, "_vote_hash", lambda key: 1)  # every vote collides
    index = ArchiveIndex.build(tmp_path)
    assert len(index) == 3
    assert [index.get((row, "openai", 1)).request_key for row in "abc"] == ["a", "b", "c"]
    assert index.get(("d", "openai", 1)) is None
    index.close()
