"""Every run ends with its report.html; a report that cannot be written never fails the run."""

from __future__ import annotations

import orjson
import pytest

import bank
from council.run.runner import RunRequest, run_council
from tests.council.test_end_to_end import subset


@pytest.mark.report_at_end
async def test_every_run_ends_with_its_report(tmp_path):
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 4), runs_dir=tmp_path / "runs",
                                          run_id="r", backend="local"))
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="fig-leaderboard"' in page and "SIMULATED" in page


@pytest.mark.report_at_end
async def test_a_report_that_cannot_be_written_is_a_warning(tmp_path, monkeypatch):
    def fail(run_dir):
        raise OSError("disk full")

    monkeypatch.setattr("council.report.page.write_report", fail)
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 4), runs_dir=tmp_path / "runs",
                                          run_id="r", backend="local"))
    assert result.summary["complete"] and not (result.run_dir / "report.html").exists()
    events = [orjson.loads(x) for x in (result.run_dir / "log.jsonl").read_bytes().splitlines()]
    assert any(e.get("event") == "report.failed" and "disk full" in e.get("error", "") for e in events)
