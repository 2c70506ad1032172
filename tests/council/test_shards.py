"""Shard workers without Ray: the plain classes a sharded run's actors wrap.

Two shard workers share each vendor's one quota ledger and one writer; between them they must archive the
same votes a single coordinator does, and a chunk graded again must pay only for what the archive lacks.
"""

from __future__ import annotations

import asyncio
import shutil

import bank
from council.cluster.driver import chunks
from council.cluster.shard import RecordLink, ShardWorker
from council.cluster.writer import RunWriter
from council.core.schema import BankItem, ResponseRow
from council.grading.pools import LocalPool
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, provider_endpoint, run_council
from council.sim import SimConfig, TruthTable, start_sim
from council.store.runfolder import ITEMS, MANIFEST, ROWS, RunFolder, read_jsonl
from council.transport.limiter import LocalLedger
from council.transport.quota import QuotaLedger
from tests.council.test_end_to_end import subset


def votes(folder) -> dict:
    out = {}
    for round_ in (1, 2):
        for r in RunFolder.open(folder).read_records(round_):
            out[(r.row_id, r.member, r.round)] = (r.verdict, r.reason, r.request_key)
    return out


async def test_two_shard_workers_archive_what_one_coordinator_does(tmp_path):
    config = CouncilConfig()
    reference = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 10),
                                             runs_dir=tmp_path / "runs", run_id="one", backend="local", config=config))
    sharded = tmp_path / "runs" / "sharded"
    sharded.mkdir()
    for name in (MANIFEST, ROWS, ITEMS):
        shutil.copy(reference.run_dir / name, sharded / name)
    items = read_jsonl(sharded / ITEMS, BankItem)
    rows = read_jsonl(sharded / ROWS, ResponseRow)
    sim = await start_sim(SimConfig.planted(config.seed), TruthTable.from_rows(items, rows))
    writer = RunWriter(sharded, config.roster_vendors)
    ledgers = {v: QuotaLedger(config.settings(v).limits) for v in config.roster_vendors}
    endpoints = {v: provider_endpoint(sim.url, config) for v in config.roster_vendors}
    batches: list[int] = []

    def worker(index: int) -> ShardWorker:
        async def send(records, refusals):
            batches.append(len(records))
            writer.write(records, refusals)

        async def fetch(row_ids):
            return writer.fetch(row_ids)

        pool = LocalPool(config, endpoints, ledger=lambda v: LocalLedger(ledgers[v]), holder=f"shard{index}")
        return ShardWorker(config, items, pool, RecordLink(send), fetch, sorted({r.model for r in rows}))

    try:
        workers = [worker(0), worker(1)]
        lines = (sharded / ROWS).read_bytes().splitlines(keepends=True)
        parts = [part for _, part in chunks(enumerate(lines), 12)]
        assert len(parts) > 4
        results = await asyncio.gather(*(workers[k % 2].grade(list(part)) for k, part in enumerate(parts)))
        assert sum(r["rows"] for r in results) == len(rows) and not any(r["stopped"] for r in results)
        issued = sum(w.totals()["issued"] for w in workers)
        assert issued == reference.issued
        assert max(batches) > 1  # records travel in batches

        # The same chunks again, to a fresh worker: everything is served from the archive, nothing is paid.
        again = worker(2)
        for part in parts[:3]:
            await again.grade(list(part))
        assert again.totals()["issued"] == 0
        assert again.totals()["served_from_archive"] > 0
        for w in [*workers, again]:
            await w.close()
    finally:
        writer.close()
        stats = await sim.stats()
        await sim.close()
    assert votes(sharded) == votes(reference.run_dir)
    def paid(provider_stats):
        return sum(v["billed"] for v in provider_stats["vendors"].values())

    assert paid(stats) == paid(reference.provider_stats)  # each call paid once, as in the single coordinator


async def test_record_link_sends_batches_and_flush_waits():
    sent: list[list] = []

    async def send(records, refusals):
        await asyncio.sleep(0.01)
        sent.append(list(records) + [f"refused:{r}" for r, _ in refusals])

    link = RecordLink(send, max_batch=100, linger_s=0.05)
    for k in range(250):
        link.put(k)  # type: ignore[arg-type] - the link does not look inside a record
    link.refuse("row-x", "too long")
    await link.flush()
    assert [len(b) for b in sent] == [100, 100, 51]
    assert sorted(x for b in sent for x in b if isinstance(x, int)) == list(range(250))
    link.put(250)  # type: ignore[arg-type]
    await asyncio.sleep(0.2)  # the linger sends a lone record without a flush
    assert sent[-1] == [250] and link.sent == 251


async def test_the_chunk_of_a_lost_worker_goes_to_another_read_again_from_its_place():
    """The driver keeps where a chunk in progress is, not its rows: a chunk whose worker is lost for good is handed
    to another worker by its place (its lines are read again: ``None`` here), and every row is done once."""
    from council.cluster.driver import _dispatch
    from council.core import logs

    class Lost(Exception):
        pass

    calls = []

    async def grade(worker: int, chunk, lines):  # noqa: ANN001
        calls.append((worker, chunk, lines))
        await asyncio.sleep(0)
        if worker == 0:
            raise Lost("worker 0 is gone")
        return {"rows": chunk.count, "stopped": None, "detail": None}

    located = [(10 * k, b'{"row": %d}\n' % k) for k in range(10)]
    outcome = await _dispatch([0, 1], chunks(located, 3), 2, StopControl(), None, logs.get_logger("test"), Lost,
                              grade)
    assert outcome.rows_done == 10
    lost = [chunk for worker, chunk, _ in calls if worker == 0]
    again = [(chunk, lines) for worker, chunk, lines in calls if worker == 1 and chunk in lost]
    assert lost and sorted(c.first for c, _ in again) == sorted(c.first for c in lost)
    assert all(lines is None for _, lines in again)
    done = [(c.first, c.count) for worker, c, _ in calls if worker == 1]
    assert sorted(done) == [(0, 3), (30, 3), (60, 3), (90, 1)]
