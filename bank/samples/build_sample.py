"""Build the shipped sample bank and its sample responses, deterministically.

Run ``python -m bank.samples.build_sample [OUT_DIR]`` to (re)write ``neo_sample.jsonl`` and
``neo_sample_responses.jsonl``. Every item comes from the tables of ``bank.samples.items`` and
``bank.samples.certificates``; arithmetic, dates, conversions and number-theory certificates are computed there
and checked before anything is written. The responses (``bank.samples.voices``) are synthetic: six models, each
with its own phrasing, with seeded per-model accuracy so that a leaderboard built on them has something to
show. Running the script twice gives identical bytes.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson

from bank.samples.certificates import _certificates
from bank.samples.items import _calibration, _false_premise, _ignorance
from bank.samples.voices import _responses

BANK_FILE = "neo_sample.jsonl"
RESPONSES_FILE = "neo_sample_responses.jsonl"
SEED = 20250611


def build() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The bank records and response records, in file order."""
    rng = random.Random(SEED)
    items = _calibration(rng) + _ignorance() + _false_premise() + _certificates(rng)
    ids = [item.id for item in items]
    assert len(ids) == len(set(ids))
    for item in items:
        assert item.good != item.bad, item.id
        assert 1 <= len(item.tags) <= 2, item.id
    return [item.record() for item in items], _responses(items, random.Random(SEED + 1))


def _jsonl(records: list[dict[str, object]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def main(out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Write both sample files into ``out_dir`` (default: this package's folder) and return their paths."""
    target = Path(out_dir) if out_dir is not None else Path(__file__).resolve().parent
    target.mkdir(parents=True, exist_ok=True)
    bank, responses = build()
    bank_path, responses_path = target / BANK_FILE, target / RESPONSES_FILE
    bank_path.write_bytes(_jsonl(bank))
    responses_path.write_bytes(_jsonl(responses))
    return bank_path, responses_path


if __name__ == "__main__":
    for path in main(sys.argv[1] if len(sys.argv) > 1 else None):
        print(path)
