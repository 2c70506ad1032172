"""Where a bench leaves its figures for the docs: ``bench/results/<name>.json``, the figures it printed as its last
line with the machine and the date it ran (the docs site's benchmarks page is rendered from these files
when the site is built: ``bench/support/render_docs.py``)."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"


def machine() -> dict:
    """The machine a figure was measured on, and the day."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "date": datetime.now(UTC).strftime("%Y-%m-%d")}


def save(name: str, figures: dict, out: Path | None = None) -> Path:
    """Write ``figures`` (with ``machine``) to ``out`` or ``bench/results/<name>.json``; returns the path."""
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine(), **figures}, indent=1) + "\n")
    return path
