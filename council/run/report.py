"""A run's last phase: ``report.html`` drawn in its folder (:mod:`council.report.page`), unless reports are off."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def reports_off() -> bool:
    """Whether ``COUNCIL_NO_REPORT`` (set, and not ``0``) leaves ``report.html`` out of the runs' ends."""
    return os.environ.get("COUNCIL_NO_REPORT", "") not in ("", "0")


def report_at_end(run_dir: Path, log: Any) -> None:
    """``report.html`` at the end of every run; a report that cannot be written is a warning, never a failed run
    (the results are already in the folder, and ``council report RUN`` writes it again). None when
    :func:`reports_off`."""
    if reports_off():
        return
    from council.report.page import write_report

    try:
        write_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - the run's results stand without their page
        log.warning("report.failed", error=f"{type(exc).__name__}: {exc}")
