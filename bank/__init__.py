"""Question banks: loading with line-numbered validation errors, fingerprints, and the shipped samples."""

from __future__ import annotations

from pathlib import Path

from bank._loader import (
    ResponsesFingerprint,
    ResponsesScan,
    check_responses,
    dataset_fingerprint,
    iter_responses,
    load_bank,
    load_responses,
    responses_fingerprint,
)

_SAMPLES = Path(__file__).resolve().parent / "samples"

SAMPLE_BANK: Path = _SAMPLES / "neo_sample.jsonl"
SAMPLE_RESPONSES: Path = _SAMPLES / "neo_sample_responses.jsonl"

__all__ = [
    "SAMPLE_BANK",
    "SAMPLE_RESPONSES",
    "ResponsesFingerprint",
    "ResponsesScan",
    "check_responses",
    "dataset_fingerprint",
    "iter_responses",
    "load_bank",
    "load_responses",
    "responses_fingerprint",
]
