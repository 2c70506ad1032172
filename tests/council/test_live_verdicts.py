"""A row's verdict given out as soon as its second round is in (what the service streams) is the record
``verdicts.jsonl`` holds for it once the run is scored, for every row: graded, tied, refused or not graded."""

from __future__ import annotations

import orjson

import bank
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import Rule
from council.run.runner import RunHooks, RunRequest, run_council
from council.core.schema import RowVerdict
from council.scoring.scoring import row_verdict
from council.sim import SimConfig
from tests.council._provider import quiet
from tests.council.test_end_to_end import subset


async def test_live_verdicts_equal_the_scored_ones(tmp_path):
    rows = [orjson.loads(x) for x in subset(tmp_path, 12).read_bytes().splitlines()]
    rows[0]["response"] = "x" * 200  # refused below: over max_response_chars
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    faulty = quiet(SimConfig.planted(seed=3), error_rate=0.2)  # some votes fail: rows not graded
    sim = tmp_path / "sim.json"
    sim.write_bytes(orjson.dumps(faulty.model_dump(mode="json")))
    config = CouncilConfig(max_response_chars=150, quorum=4, retry={"max_attempts": 1})
    live: dict[str, RowVerdict] = {}
    items = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}

    def graded(row, records, refused):
        live[row.row_id] = row_verdict(row, records, config.roster, config.self_exclusion, config.quorum,
                                       deliberation=Rule.of(config),
                                       refused=refused, item=items[row.item_id])

    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp_path / "runs",
                                          run_id="live", backend="local", sim_config=sim, config=config),
                               hooks=RunHooks(on_row_graded=graded))
    scored = [RowVerdict.model_validate_json(x) for x in (result.run_dir / "verdicts.jsonl").read_bytes().splitlines()]
    assert len(live) == len(scored) == len(rows)
    assert all(live[v.row_id] == v for v in scored)
    flags = {f for v in scored for f in v.flags}
    assert {"refused", "not_graded"} <= flags and any(v.graded for v in scored)  # the cases were there
