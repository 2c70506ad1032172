"""Memory that does not grow with rows, on the command line's path: nothing a run grades stays alive after it is
archived, and scoring holds a few compact values per row. Each test measures two sizes of the same bank (the
shipped sample, copied with new row ids) and bounds the growth per extra row, so that a per-row cost that comes
back fails here rather than in a user's million-row regrade."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import orjson
import pytest
import council.run.score as score
from bank import SAMPLE_RESPONSES
from council.cli import main
from council.store import archive
from council.scoring.scoring import rescore
from council.store.runfolder import ROUND_FILES, ROWS, RunFolder

SCORING_BYTES_PER_ROW = 300  # scoring's peak Python heap per extra row (measured: about 80 B; it was 2 KB)
OBJECTS_PER_ROW = 0.1  # objects alive after grading per extra row (measured: about -0.04; a leak of one a row is 1)


def copies(dst: Path, k: int, rows: int = 480) -> Path:
    """The sample's first ``rows`` responses ``k`` times, each copy's rows with new ids."""
    lines = [orjson.loads(line) for line in SAMPLE_RESPONSES.read_bytes().splitlines() if line.strip()][:rows]
    return _write_copies(dst, lines, k)


def _write_copies(dst: Path, records: list[dict], k: int) -> Path:
    """``records`` ``k`` times into ``dst``, copy c's row ids ending ``~c``."""
    with open(dst, "wb") as out:
        for c in range(k):
            for rec in records:
                out.write(orjson.dumps({**rec, "row_id": f"{rec['row_id']}~{c}"}) + b"\n")
    return dst


def _run(tmp: Path, name: str, responses: Path) -> Path:
    assert main(["run", "--backend", "local", "--simulate", "--no-report", "--responses", str(responses),
                 "--runs-dir", str(tmp), "--run-id", name]) == 0
    return tmp / name


def test_a_run_keeps_nothing_per_row_once_its_rows_are_archived(tmp_path, monkeypatch) -> None:
    """Objects alive when scoring begins (everything graded and archived), after runs of 480 and 1,440 rows
    through the command line: the same, bar a few caches."""
    alive: dict[str, int] = {}
    rescore = score.rescore

    def counted(folder):  # noqa: ANN001, ANN202
        gc.collect()
        alive[folder.path.name] = len(gc.get_objects())
        return rescore(folder)

    monkeypatch.setattr(score, "rescore", counted)
    _run(tmp_path, "warm", copies(tmp_path / "warm.jsonl", 1))  # imports and caches, then the two measured runs
    _run(tmp_path, "small", copies(tmp_path / "small.jsonl", 1))
    _run(tmp_path, "large", copies(tmp_path / "large.jsonl", 3))
    per_row = (alive["large"] - alive["small"]) / (2 * 480)
    assert per_row <= OBJECTS_PER_ROW, alive


def _grown(run: Path, dst: Path, k: int) -> Path:
    """``run``'s folder with its rows and votes ``k`` times over, each copy's rows with new ids."""
    dst.mkdir()
    for name in ("manifest.json", "items.jsonl", "state.json"):
        (dst / name).write_bytes((run / name).read_bytes())
    for name in (ROWS, *ROUND_FILES.values()):
        _write_copies(dst / name, [orjson.loads(line) for line in archive.iter_lines(run / name) if line.strip()], k)
    return dst


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """The shipped sample graded once (960 rows), the folder the scoring tests grow."""
    return _run(tmp_path_factory.mktemp("base"), "base", SAMPLE_RESPONSES)


def test_scoring_holds_a_few_compact_values_per_row(tmp_path, base) -> None:
    """The peak of the Python heap (numpy's arrays included) while ``council rescore`` scores 960 and 2,880
    rows: what it holds per row is a row id and a few numbers (Arrow's own memory, the parquet writer's, is
    bounded by a row group: ``council.store.tables.PARQUET_ROWS``)."""
    peaks = {}
    for k in (1, 3):
        folder = RunFolder.open(_grown(base, tmp_path / f"x{k}", k))
        tracemalloc.start()
        try:
            rescore(folder)
            peaks[k] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert orjson.loads((folder.path / "summary.json").read_bytes())["rows_total"] == 960 * k
    per_row = (peaks[3] - peaks[1]) / (2 * 960)
    assert per_row <= SCORING_BYTES_PER_ROW, (per_row, peaks)


def test_peers_shown_are_counted_from_the_latest_record_of_each_vote(tmp_path, base) -> None:
    """Counted as the records stream by, the anonymisation counts still take only a vote's latest round-two
    record: a vote asked again (its earlier record showing other names cut) counts once, as its last."""
    folder = _grown(base, tmp_path / "again", 1)
    records = [orjson.loads(line) for line in (folder / "round2.jsonl").read_bytes().splitlines() if line.strip()]
    earlier = [{**rec, "peers_scrubbed": {letter: 7 for letter in rec.get("peer_letters") or {}},
                "peer_letters": {**(rec.get("peer_letters") or {}), "Z": "nobody"}} for rec in records[::3]]
    with open(folder / "round2.jsonl", "wb") as out:
        for rec in [*earlier, *records]:
            out.write(orjson.dumps(rec) + b"\n")
    expected: dict[str, dict[str, int]] = {}
    for rec in records:  # the latest record of each vote, counted here by hand
        for letter, author in (rec.get("peer_letters") or {}).items():
            counts = expected.setdefault(author, {"reasons_shown": 0, "reasons_scrubbed": 0, "names_scrubbed": 0})
            names = int((rec.get("peers_scrubbed") or {}).get(letter, 0))
            counts["reasons_shown"] += 1
            counts["reasons_scrubbed"] += names > 0
            counts["names_scrubbed"] += names
    assert rescore(RunFolder.open(folder))["anonymisation"] == dict(sorted(expected.items()))
    assert "nobody" not in expected and len(earlier) > 100
