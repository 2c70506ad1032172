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
        parts = list(chunks(lines, 12))
        assert len(parts) > 4
        results = await asyncio.gather(*(workers[k % 2].grade(part) for k, part in enumerate(parts)))
        assert sum(r["rows"] for r in results) == len(rows) and not any(r["stopped"] for r in results)
        issued = sum(w.totals()["issued"] for w in workers)
        assert issued == reference.issued
        assert max(batches) > 1  # records travel in batches

        # The same chunks again, to a fresh worker: everything is served from the archive, nothing is paid.
        again = worker(2)
        for part in parts[:3]:
            await again.grade(part)
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
