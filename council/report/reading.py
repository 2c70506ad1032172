"""What the report reads from a run folder: the JSON documents whole, the record files streaming.

Nothing here holds a record file in memory: calibration keeps one small tuple per row that stated a confidence,
and the rubric scan keeps at most ``MAX_RUBRICS`` distinct hashes from at most ``MAX_RUBRIC_RECORDS`` votes.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

import aggregator as agg
from council.core.errors import RunFolderError
from council.store import archive
from council.store.runfolder import MANIFEST, ROUND_FILES, ROWS, STATE, SUMMARY, VERDICTS, iter_json

QUOTA = "quota_stats.json"
CROSSJUDGE = "crossjudge"
MAX_RUBRIC_RECORDS = 100_000  # votes scanned for rubric hashes; a bigger run says it was sampled
MAX_RUBRIC_BYTES = 256 << 20  # ... and bytes read for them
MAX_RUBRICS = 1_000  # distinct hashes kept; more are counted as "more"
CALIBRATION_BINS = 10  # the summary's ECE bins

_RUBRIC = re.compile(rb'"rubric_hash":\s*"([^"\\]{1,128})"')


@dataclass
class RunData:
    """The run folder's JSON documents, each ``None`` when absent, and what could not be read."""

    folder: Path
    manifest: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    quota: dict[str, Any] | None = None
    crossjudge: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _json(path: Path, problems: list[str]) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        problems.append(f"{path.name}: {type(exc).__name__}: {exc}")
        return None


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def load(folder: Path) -> RunData:
    """Every JSON document of the run folder (the record files are read later, streaming)."""
    data = RunData(folder=folder)
    data.manifest = _dict(_json(folder / MANIFEST, data.problems))
    data.summary = _dict(_json(folder / SUMMARY, data.problems))
    data.state = _dict(_json(folder / STATE, data.problems))
    data.quota = _dict(_json(folder / QUOTA, data.problems))
    root = folder / CROSSJUDGE
    if root.is_dir():
        for sub in sorted(p for p in root.iterdir() if p.is_dir()):
            report = _dict(_json(sub / "report.json", data.problems))
            if report is not None:
                data.crossjudge.append((sub.name, report))
    return data


@dataclass
class Reliability:
    """Per-model reliability diagram bins (``aggregator.reliability_bins``) with the models' names."""

    models: list[str]
    edges: np.ndarray
    n: np.ndarray
    mean_confidence: np.ndarray
    share_correct: np.ndarray


def reliability(folder: Path) -> Reliability | None:
    """Stated confidence (rows.jsonl) against the council's consensus (verdicts.jsonl), binned per model;
    ``None`` when no row stated a confidence or no such row was graded correct / incorrect."""
    stated: dict[str, tuple[int, float, bool]] = {}
    names: dict[str, int] = {}
    for _, row in iter_json(folder / ROWS, missing_ok=True):
        c = row.get("confidence") if isinstance(row, dict) else None
        if c is None or isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 <= c <= 1.0:
            continue
        model = str(row.get("model"))
        stated[str(row.get("row_id"))] = (names.setdefault(model, len(names)), float(c), bool(row.get("abstained")))
    if not stated:
        return None
    model, confidence, correct, abstained = array("q"), array("d"), array("b"), array("b")
    for _, v in iter_json(folder / VERDICTS, missing_ok=True):
        if not isinstance(v, dict) or v.get("consensus") not in ("correct", "incorrect") or v.get("graded") is False:
            continue
        hit = stated.pop(str(v.get("row_id")), None)
        if hit is None:
            continue
        model.append(hit[0])
        confidence.append(hit[1])
        abstained.append(hit[2])
        correct.append(v["consensus"] == "correct")
    if not len(model):
        return None
    bins = agg.reliability_bins(np.frombuffer(confidence, dtype=np.float64), np.frombuffer(correct, dtype=np.int8),
                                np.frombuffer(abstained, dtype=np.int8), np.frombuffer(model, dtype=np.int64),
                                len(names), n_bins=CALIBRATION_BINS)
    order = sorted(names, key=names.get)
    return Reliability(models=order, edges=bins["edges"], n=bins["n"], mean_confidence=bins["mean_confidence"],
                       share_correct=bins["share_correct"])


@dataclass
class Rubrics:
    """Distinct rubric hashes of round one's votes, with how many votes carry each."""

    counts: dict[str, int]
    scanned: int  # votes read
    complete: bool  # every vote was read (else the first MAX_RUBRIC_RECORDS)
    more: int  # votes whose hash was not kept (past MAX_RUBRICS distinct hashes)


def rubric_hashes(folder: Path, max_records: int = MAX_RUBRIC_RECORDS, max_distinct: int = MAX_RUBRICS,
                  max_bytes: int = MAX_RUBRIC_BYTES) -> Rubrics | None:
    """The rubric hashes of round one's votes (plain or compressed), read line by line without parsing whole
    records, up to ``max_records`` votes or ``max_bytes`` bytes."""
    path = folder / ROUND_FILES[1]
    if not archive.exists(path):
        return None
    counts: dict[str, int] = {}
    scanned = more = read = 0
    complete = True
    try:
        for line in archive.iter_lines(path):
            if scanned >= max_records or read >= max_bytes:
                complete = False
                break
            read += len(line)
            found = _RUBRIC.search(line)
            if found is None:
                continue
            scanned += 1
            key = found.group(1).decode("ascii", "replace")
            if key in counts:
                counts[key] += 1
            elif len(counts) < max_distinct:
                counts[key] = 1
            else:
                more += 1
    except (OSError, RunFolderError):
        return None
    return Rubrics(counts=counts, scanned=scanned, complete=complete, more=more)


@dataclass
class Timeline:
    """One vendor's quota use over time: per bucket of ``bucket_s`` seconds starting at ``t``."""

    bucket_s: float
    t: np.ndarray
    requests: np.ndarray
    rate_limited: np.ndarray


def _series(value: Any, length: int) -> np.ndarray | None:
    if not isinstance(value, list) or len(value) != length:
        return None
    try:
        out = np.array([np.nan if x is None else float(x) for x in value], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return out


def timelines(quota: dict[str, Any] | None) -> dict[str, Timeline]:
    """Each vendor's ``timeline`` in quota_stats.json, where it is there and well formed."""
    out: dict[str, Timeline] = {}
    for vendor, stats in sorted((quota or {}).items()):
        tl = stats.get("timeline") if isinstance(stats, dict) else None
        if not isinstance(tl, dict):
            continue
        bucket = tl.get("bucket_s")
        t = tl.get("t")
        if isinstance(bucket, bool) or not isinstance(bucket, (int, float)) or bucket <= 0 or not isinstance(t, list):
            continue
        ts = _series(t, len(t))
        requests = _series(tl.get("requests"), len(t))
        if ts is None or requests is None or not len(ts):
            continue
        limited = _series(tl.get("rate_limited"), len(t))
        out[vendor] = Timeline(bucket_s=float(bucket), t=ts, requests=requests,
                               rate_limited=np.zeros(len(ts)) if limited is None else limited)
    return out
