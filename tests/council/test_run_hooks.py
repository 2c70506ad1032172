"""What a caller is told while a run grades: rows as they finish and each vendor's quota report as it goes."""

from __future__ import annotations

import bank
from council.protocol.config import CouncilConfig
from council.run.runner import RunHooks, RunRequest, run_council
from tests.council.test_end_to_end import subset


async def test_quota_reports_arrive_while_the_run_grades(tmp_path):
    reports: list[dict[str, dict]] = []
    rows: list[int] = []
    hooks = RunHooks(on_progress=rows.append, on_quota=reports.append, quota_every_s=0.02)
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 8), runs_dir=tmp_path / "runs",
                                          run_id="hooks", backend="local", config=CouncilConfig()), hooks=hooks)
    assert sum(rows) == result.summary["rows_total"] == 48
    assert reports, "no quota report while grading"
    vendors = {m.vendor for m in CouncilConfig().roster}
    assert all(set(r) == vendors for r in reports)
