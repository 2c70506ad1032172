"""Compressed run archives: zstd frames plus a plain tail, read like plain archives, crash-safe, indexed."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import zstandard

from council.core.errors import RunFolderError
from council.core.schema import JudgeCallRecord, MemberSpec, RequestParams, ResponseRow, Usage
from council.core.vendors import DEFAULT_ROSTER
from council.scoring.arrays import _stream, build
from council.store import archive
from council.store.archive import replace_bytes
from council.store.runfolder import (MANIFEST, ROUND_FILES, ROWS, SHADOW, ArchiveIndex, RunFolder, iter_jsonl,
                                     read_jsonl)

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = list(DEFAULT_ROSTER)
MODELS = ["openai/gpt-4o", "anthropic/claude-3-5-sonnet", "meta-llama/llama-3.1-70b", "mistralai/mistral-large"]
WORDS = ("the response states that answer reference matches correct incorrect because it claims year capital "
         "river population however question asks for specific value which differs from expected result given "
         "model cites source but omits key detail about date of treaty signed in city mentioned by rubric "
         "partial credit not allowed so verdict must be judged against ground truth while wording differs "
         "meaning is same numeric value rounded within tolerance units are given explicitly hedged refuses "
         "to answer gives two conflicting values first one wrong second one right final answer counts only "
         "explanation is long yet conclusion is clear calculation error in step three leads to wrong total "
         "names person instead of place confuses similar events misreads question scope includes extra claims "
         "that are false but core answer is right according to the rubric these do not change grade").split()


def sentence(rng: random.Random, low: int = 20, high: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def record(rng: random.Random, row_id: str, member: str, round_: int, *, status: str = "ok",
           shadow: bool = False) -> JudgeCallRecord:
    """A judge-call record shaped like a real one: free-text reason, raw output, hashes, usage, timings."""
    verdict = None if status in ("error", "unparseable") else rng.choice(["correct", "incorrect"])
    reason = sentence(rng) if verdict else None
    raw = [] if status == "error" else [
        ("Let me compare the response with the reference answer.\n" if rng.random() < 0.3 else "")
        + orjson.dumps({"verdict": verdict, "reason": reason}).decode()]
    prompt, completion = rng.randint(600, 2400), rng.randint(40, 400)
    return JudgeCallRecord(
        row_id=row_id, round=round_, member=member, judge_model=DEFAULT_ROSTER[member], verdict=verdict,
        reason=reason, ok=status == "ok", parse_status=status, raw_outputs=raw,
        finish_reason=None if status == "error" else rng.choice(["stop", "stop", "stop", "length"]),
        usage=Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion),
        cost_usd=0.0 if status == "error" else round(prompt * 3e-6 + completion * 1.5e-5, 8),
        latency_s=rng.uniform(0.3, 12.0), attempts=rng.randint(1, 3),
        error="HTTP 503: upstream overloaded" if status == "error" else None,
        judge_prompt_version="council-judge-v7", judge_prompt_hash=hashlib.sha256(b"prompt").hexdigest(),
        rubric_hash=hashlib.sha256(b"rubric").hexdigest(), methodology_version="m3",
        request=RequestParams(model=DEFAULT_ROSTER[member], temperature=0.0, max_tokens=1024),
        request_key=rng.randbytes(32).hex(), request_id=rng.randbytes(16).hex(),
        peer_letters={m: "ABCDEFGH"[j] for j, m in enumerate(MEMBERS) if m != member} if round_ == 2 else {},
        shadow=shadow)


def votes(rows: int, seed: int = 0) -> list[JudgeCallRecord]:
    """Both rounds of a row's panel (every member but the row's own vendor) for ``rows`` rows, with a few
    errors, re-asked votes, and shadow votes of the own vendor."""
    rng = random.Random(seed)
    out = []
    for round_ in (1, 2):
        for i in range(rows):
            model = MODELS[i % len(MODELS)]
            row_id = f"q{i // len(MODELS):05d}::{model}"
            own = model.split("/")[0]
            for member in MEMBERS:
                if member == own:
                    continue
                status = "error" if rng.random() < 0.02 else "unparseable" if rng.random() < 0.02 else "ok"
                out.append(record(rng, row_id, member, round_, status=status))
                if status == "error" and rng.random() < 0.5:  # asked again, later in the archive
                    out.append(record(rng, row_id, member, round_))
            if round_ == 1 and own in MEMBERS and i % 3 == 0:
                out.append(record(rng, row_id, own, 1, shadow=True))
    return out


def round_one(rows: int, seed: int = 0) -> list[JudgeCallRecord]:
    return [r for r in votes(rows, seed) if r.round == 1 and not r.shadow]


def new_folder(root: Path, name: str, *, compress: bool) -> RunFolder:
    folder = RunFolder.create(root, name, compress=compress)
    folder.write_json(MANIFEST, {})
    return folder


def frames(path: Path) -> list[bytes]:
    """The content of each frame of a zstd file, read as any zstd reader would."""
    data, out = path.read_bytes(), []
    while data:
        reader = zstandard.ZstdDecompressor().decompressobj()
        out.append(reader.decompress(data))
        assert reader.eof
        data = reader.unused_data
    return out


def crash(path: Path, data: bytes) -> None:
    """Stands in for replacing the tail: the writer is killed after the frame was written."""
    raise KeyboardInterrupt("killed between the frame and the tail")


def keys(records: list[JudgeCallRecord]) -> set[tuple[str, str, int]]:
    return {(r.row_id, r.member, r.round) for r in records}


def latest(records: list[JudgeCallRecord]) -> dict[tuple[str, str, int], JudgeCallRecord]:
    """What an index must answer: the last result of each vote (shadow included), errors left out."""
    out = {}
    for r in records:
        if not r.audit_of and r.parse_status != "error":
            out[(r.row_id, r.member, r.round)] = r
    return out


def disk_size(folder: RunFolder) -> int:
    return sum(p.stat().st_size for p in folder.path.iterdir() if ".jsonl" in p.name)


def filled(tmp_path: Path, compress: bool = True) -> tuple[list[JudgeCallRecord], RunFolder, Path]:
    """A run folder whose round-one file holds two frames' worth of records and 300 more (the tail)."""
    records = [record(random.Random(i), f"r{i:05d}::m", MEMBERS[i % len(MEMBERS)], 1)
               for i in range(2 * archive.FRAME_LINES + 300)]
    folder = new_folder(tmp_path, "z", compress=compress)
    for r in records:
        folder.append(r)
    return records, folder, folder.path / ROUND_FILES[1]


def test_round_trip_over_several_frames_and_a_tail(tmp_path):
    records, folder, path = filled(tmp_path)
    assert len(frames(archive.zst_path(path))) == 2  # compacted twice at the threshold
    assert len(path.read_bytes().splitlines()) == 300  # the tail, not compressed yet
    assert folder.read_records(1) == records  # read while the run is live
    folder.close()
    assert path.read_bytes() == b"" and len(frames(archive.zst_path(path))) == 3
    assert b"".join(frames(archive.zst_path(path))) == b"".join(
        orjson.dumps(r.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS) + b"\n" for r in records)
    reopened = RunFolder.open(folder.path)
    assert reopened.compress and reopened.read_records(1) == records
    assert list(_stream(path)) == [r.model_dump(mode="json") for r in records]
    index = ArchiveIndex.build(folder.path)
    assert len(index) == len(records)
    assert all(index.get((r.row_id, r.member, 1)) == r for r in records)
    assert index.cost_usd == pytest.approx(sum(r.cost_usd for r in records))
    index.close()


def test_compressed_and_plain_folders_agree_and_compressed_is_small(tmp_path):
    records = votes(500)
    plain, packed = new_folder(tmp_path, "plain", compress=False), new_folder(tmp_path, "packed", compress=True)
    for folder in (plain, packed):
        folder.append_many(records[:1000])
        for r in records[1000:]:
            folder.append(r)
        folder.close()
    assert not list(plain.path.glob("*.zst"))
    assert len(frames(packed.path / "round1.jsonl.zst")) == 2
    for round_ in (1, 2):
        assert packed.read_records(round_) == plain.read_records(round_)
    assert packed.read_shadow() == plain.read_shadow() and plain.read_shadow()
    a, b = ArchiveIndex.build(plain.path), ArchiveIndex.build(packed.path)
    expected = latest(records)
    assert len(a) == len(b) == len(expected)
    assert a.cost_usd == pytest.approx(b.cost_usd) and b.cost_usd == pytest.approx(sum(r.cost_usd for r in expected.values()))
    for key in keys(records) | {("nope", "openai", 1)}:
        assert a.get(key) == b.get(key) == expected.get(key)
    a.close()
    b.close()
    assert disk_size(plain) / disk_size(packed) > 4


def test_vote_arrays_are_the_same_from_either_form(tmp_path):
    roster = [MemberSpec(vendor=v, judge_model=m) for v, m in DEFAULT_ROSTER.items()]
    rows = [ResponseRow(item_id=f"q{i // len(MODELS):05d}", model=MODELS[i % len(MODELS)], response="Paris.",
                        gold_verdict="correct" if i % 3 else "incorrect") for i in range(120)]
    records = votes(120, seed=3)
    built = []
    for name, compress in (("plain", False), ("packed", True)):
        folder = new_folder(tmp_path, name, compress=compress)
        folder.write_lines(ROWS, rows)
        folder.append_many(records)
        folder.close()
        built.append(build(folder.path, roster, True, {}))
    assert (tmp_path / "packed" / "rows.jsonl.zst").is_file() and not (tmp_path / "packed" / "rows.jsonl").exists()
    a, b = built
    assert a.row_ids == b.row_ids and (a.votes == b.votes).all() and (a.shadow == b.shadow).all()
    assert (a.graded == b.graded).all() and a.counters == b.counters and a.counters.votes == sum(not r.shadow for r in records)


def test_frame_written_but_tail_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 10)
    records = round_one(12)[:35]
    folder = new_folder(tmp_path, "z", compress=True)
    folder.append_many(records[:9])
    monkeypatch.setattr(archive, "replace_bytes", crash)
    with pytest.raises(KeyboardInterrupt):
        folder.append(records[9])  # the tenth line: compacted into a frame, then the crash
    path = folder.path / ROUND_FILES[1]
    [frame] = frames(archive.zst_path(path))
    assert path.read_bytes() == frame and len(frame.splitlines()) == 10  # the same lines twice on disk
    monkeypatch.setattr(archive, "replace_bytes", replace_bytes)
    reopened = RunFolder.open(folder.path)
    assert reopened.compress
    assert reopened.read_records(1) == records[:10]  # each once, before any repair
    assert list(_stream(path)) == [r.model_dump(mode="json") for r in records[:10]]
    index = ArchiveIndex.build(folder.path)
    assert len(index) == len(latest(records[:10]))
    reopened.attach(index)
    reopened.append_many(records[10:15])  # the first append repairs: the repeated tail is dropped
    assert len(path.read_bytes().splitlines()) == 5
    reopened.append_many(records[15:])
    assert reopened.read_records(1) == records
    reopened.close()
    assert path.read_bytes() == b""
    assert read_jsonl(path, JudgeCallRecord) == records
    assert all(index.get(k) == r for k, r in latest(records).items())
    index.close()


def test_a_failed_compaction_is_repaired_by_the_next_append(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 10)
    records = round_one(12)[:30]
    folder = new_folder(tmp_path, "z", compress=True)
    index = ArchiveIndex.build(folder.path)
    folder.attach(index)
    folder.append_many(records[:8])

    def full(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(archive, "replace_bytes", full)
    with pytest.raises(OSError):
        folder.append_many(records[8:13])  # the frame is written, the tail is not replaced
    assert all(index.get(k) == r for k, r in latest(records[:13]).items())
    monkeypatch.setattr(archive, "replace_bytes", replace_bytes)
    folder.append_many(records[13:15])  # repairs first: the repeated lines go, the index follows them
    assert all(index.get(k) == r for k, r in latest(records[:15]).items())
    folder.append_many(records[15:])
    folder.close()
    assert folder.read_records(1) == records
    assert all(index.get(k) == r for k, r in latest(records).items())
    index.close()


def test_a_torn_frame_leaves_its_lines_in_the_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 10)
    records = round_one(12)[:40]
    folder = new_folder(tmp_path, "z", compress=True)
    path = folder.path / ROUND_FILES[1]
    seen = []
    replace = archive.replace_bytes

    def check(target: Path, data: bytes) -> None:  # when the tail is replaced, its lines are in a whole frame
        seen.append(frames(archive.zst_path(target))[-1] == target.read_bytes())
        replace(target, data)

    monkeypatch.setattr(archive, "replace_bytes", check)
    folder.append_many(records[:20])
    assert seen == [True]
    whole = archive.compress
    monkeypatch.setattr(archive, "compress", lambda content: whole(content)[: len(whole(content)) // 2])
    monkeypatch.setattr(archive, "replace_bytes", crash)  # killed once the half frame is written
    with pytest.raises(KeyboardInterrupt):
        folder.append_many(records[20:30])
    monkeypatch.setattr(archive, "compress", whole)
    monkeypatch.setattr(archive, "replace_bytes", replace)
    data = archive.zst_path(path).read_bytes()
    first = zstandard.ZstdDecompressor().decompressobj()
    first.decompress(data)
    cut_short = zstandard.ZstdDecompressor().decompressobj()
    cut_short.decompress(first.unused_data)
    assert first.eof and first.unused_data and not cut_short.eof  # the second frame is cut short
    assert read_jsonl(path, JudgeCallRecord) == records[:30]  # the torn frame's lines, read from the tail
    assert len(path.read_bytes().splitlines()) == 10
    index = ArchiveIndex.build(folder.path)
    assert len(index) == len(latest(records[:30]))
    index.close()
    reopened = RunFolder.open(folder.path)
    reopened.drop_torn_tails()
    assert len(frames(archive.zst_path(path))) == 1  # the torn frame is cut off
    reopened.append_many(records[30:])
    reopened.close()
    assert read_jsonl(path, JudgeCallRecord) == records and len(frames(archive.zst_path(path))) == 2


def test_zero_filled_frame_and_torn_last_line(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 10)
    records = round_one(12)[:25]
    folder = new_folder(tmp_path, "z", compress=True)
    folder.append_many(records)  # one frame of 25 lines
    folder.append(records[0])
    folder.close()
    path = folder.path / ROUND_FILES[1]
    zst = archive.zst_path(path)
    good = zst.stat().st_size
    with open(zst, "ab") as handle:  # space given to a frame whose bytes never reached the disk
        handle.write(bytes(300))
    with open(path, "ab") as handle:
        handle.write(records[1].model_dump_json().encode()[:50])  # a torn last line
    assert read_jsonl(path, JudgeCallRecord) == [*records, records[0]]
    assert list(_stream(path)) == [r.model_dump(mode="json") for r in [*records, records[0]]]
    reopened = RunFolder.open(folder.path)
    reopened.drop_torn_tails()
    assert zst.stat().st_size == good and path.read_bytes() == b""
    assert reopened.read_records(1) == [*records, records[0]]
    with open(zst, "ab") as handle:  # anything else after the frames is damage, and is said to be
        handle.write(b"not a frame")
    with pytest.raises(RunFolderError, match="no zstd frame at byte"):
        reopened.read_records(1)


def test_live_index_across_compactions(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 7)
    records = votes(40, seed=5)
    folder = new_folder(tmp_path, "z", compress=True)
    folder.append_many(records[:27])
    folder.append_many(records[27:30])
    assert (folder.path / ROUND_FILES[1]).read_bytes().count(b"\n") == 3
    del folder  # an earlier session, ended without closing: a frame plus a tail
    folder = RunFolder.open(tmp_path / "z")
    folder.drop_torn_tails()
    index = ArchiveIndex.build(folder.path)
    folder.attach(index)
    for start in range(30, len(records), 5):
        batch = records[start:start + 5]
        folder.append_many(batch)
        for key, r in latest(records[:start + 5]).items():
            assert index.get(key) == r
    result = next(r for r in records if r.parse_status == "ok" and not r.shadow)
    key = (result.row_id, result.member, result.round)
    error = result.model_copy(update={"parse_status": "error", "verdict": None, "ok": False, "cost_usd": 0.0})
    folder.append_many([error])  # an error is not a result
    assert index.get(key) == latest(records)[key]
    again = result.model_copy(update={"reason": "asked again", "cost_usd": 1.25})
    folder.append(again)  # a later result supersedes
    expected = latest([*records, again])
    assert index.get(key) == again and len(index) == len(expected)
    assert index.cost_usd == pytest.approx(sum(r.cost_usd for r in expected.values()))
    folder.close()  # the last compaction re-points the tail entries too
    assert all(index.get(k) == r for k, r in expected.items())
    rebuilt = ArchiveIndex.build(folder.path)
    assert len(rebuilt) == len(index) and rebuilt.cost_usd == pytest.approx(index.cost_usd)
    assert all(rebuilt.get(k) == r for k, r in expected.items())
    assert not any(w >> 2 & 1 == 0 for w in index._where.values())  # every entry now points into a frame
    assert len(index._frames) <= ArchiveIndex.FRAME_CACHE
    rebuilt.close()
    index.close()


def test_an_index_not_attached_keeps_reading_the_tail_it_was_built_from(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_LINES", 7)
    records = votes(10, seed=9)
    folder = new_folder(tmp_path, "z", compress=True)
    folder.append_many(records[:5])  # all in the tail
    index = ArchiveIndex.build(folder.path)
    folder.append_many(records[5:])  # compacted by a folder the index does not follow
    folder.close()
    assert all(index.get(k) == r for k, r in latest(records[:5]).items())
    index.close()


def test_rows_are_written_compressed_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "FRAME_BYTES", 4096)
    rng = random.Random(2)
    rows = [ResponseRow(item_id=f"q{i}", model=MODELS[i % 4], response=sentence(rng), confidence=0.5)
            for i in range(200)]
    runs = tmp_path / "runs"
    folder = RunFolder.create(runs, "rows", compress=True)
    assert folder.write_lines(ROWS, rows) == 200
    assert not (folder.path / ROWS).exists() and not list(folder.path.glob("*.tmp"))
    assert len(frames(folder.path / "rows.jsonl.zst")) > 3  # a stream of frames of about FRAME_BYTES
    assert list(iter_jsonl(folder.path / ROWS, ResponseRow)) == rows
    assert list(_stream(folder.path / "rows.jsonl")) == [r.model_dump(mode="json") for r in rows]
    folder.write_json(MANIFEST, {})
    assert RunFolder.open(folder.path).compress
    folder.compress = False
    folder.write_lines(ROWS, rows[:3])  # written again plain: the compressed form goes
    assert not (folder.path / "rows.jsonl.zst").exists()
    assert list(iter_jsonl(folder.path / ROWS, ResponseRow)) == rows[:3]


def test_plain_runs_keep_their_format(tmp_path):
    folder = new_folder(tmp_path, "p", compress=False)
    records = votes(3)
    folder.append_many(records)
    folder.refuse("q1", "too long")
    folder.close()
    assert sorted(p.name for p in folder.path.iterdir()) == sorted(
        [".lock", "manifest.json", "round1.jsonl", "round2.jsonl", SHADOW, "refused.jsonl"])  # .lock: its writer
    on_disk = (folder.path / "round1.jsonl").read_bytes()
    assert on_disk == b"".join(orjson.dumps(r.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS) + b"\n"
                               for r in records if r.round == 1 and not r.shadow)
    assert not RunFolder.open(folder.path).compress and folder.read_refused() == {"q1": "too long"}


CHILD = """
import sys
from pathlib import Path
from council.store import archive
from council.store.archive import replace_bytes
archive.FRAME_LINES = 5
from council.core.schema import JudgeCallRecord
from council.store.runfolder import RunFolder
folder = RunFolder.open(Path(sys.argv[1]))
folder.compress = True
folder.drop_torn_tails()
i = int(sys.argv[2])
while True:
    folder.append_many([JudgeCallRecord(row_id=f"r{i + k}", round=1, member="openai", judge_model="m",
                        verdict="correct", reason="x" * (i % 97), ok=True, parse_status="ok",
                        judge_prompt_version="v", judge_prompt_hash="h", request_id=str(i + k)) for k in range(3)])
    i += 3
    print(i, flush=True)
"""


def test_killed_writers_lose_nothing_and_repeat_nothing(tmp_path):
    folder = new_folder(tmp_path, "k", compress=True)
    rng = random.Random(4)
    count = 0
    for _ in range(12):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder.path), str(count)], cwd=ROOT,
                                 stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert child.stdout is not None
        returned, deadline = count, time.monotonic() + 30
        while returned < count + rng.randint(30, 300) and time.monotonic() < deadline:
            returned = int(child.stdout.readline())
        time.sleep(rng.uniform(0, 0.002))  # somewhere in a later append, a compaction, or between
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        ids = [r.row_id for r in RunFolder.open(folder.path).read_records(1)]
        assert ids == [f"r{i}" for i in range(len(ids))]  # in order, none twice
        assert len(ids) >= returned > count  # nothing that returned was lost
        count = len(ids)
    index = ArchiveIndex.build(folder.path)
    assert len(index) == count
    index.close()


@pytest.mark.parametrize("compress", [False, True])
def test_lines_are_read_from_a_location_on_over_frames_and_the_tail(tmp_path, compress):
    """A sharded batch run's worker reads its chunk of rows from where the driver says it starts: from any line of
    a frame, across frames into the tail, or from the tail."""
    records, folder, path = filled(tmp_path, compress)
    located = list(archive.iter_located(path))
    lines = [line for _, line in located]
    assert len(lines) == len(records)
    ends = [0, 1, archive.FRAME_LINES - 3, archive.FRAME_LINES, 2 * archive.FRAME_LINES - 1, len(lines) - 5]
    for k in ends:
        assert archive.lines_from(path, located[k][0], 7) == lines[k:k + 7], k
    folder.close()
