"""Runs on the batch transport against the embedded provider's batch APIs: the same verdicts as a synchronous run,
at the batch price, archived as any run is; faults of a real batch API (expiry part done, per-request errors, a
full queue) cost only the votes they lost; a vendor that stays synchronous does so in the same run."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

import bank
from council.batching.journal import JOURNAL
from council.protocol.config import CouncilConfig
from council.grading.stop import StopControl
from council.run.runner import RunRequest, resume_council, run_council
from council.scoring.diff import diff_runs
from council.scoring.scoring import rescore
from council.sim import SimConfig
from council.store.runfolder import RunFolder
from tests.council._provider import sim_process
from tests.council.test_end_to_end import lines, subset

ITEMS = 16  # of the sample's 160: 96 rows
FAST = {"flush_s": 0.05, "poll_s": 0.2}
# The default roster's judges by their batch rate: the price table's batch variants and, for alibaba, its page's
# share (council/protocol/batch_pages.json); mistral's batch API has no rate on its page (the standard one is
# counted, an upper bound); deepseek has no batch API and stays synchronous in a batch run.
HALF_PRICED = ("anthropic", "google", "openai", "alibaba")
SYNC = ("deepseek",)


def sim_file(tmp_path: Path, name: str, **behaviour: float) -> Path:
    """The planted world at seed 0, its batches ending after 0.3 s, every vendor with ``behaviour`` on top."""
    config = SimConfig.planted(seed=0).model_copy(update={"batch_completion_s": 0.3})
    config = config.model_copy(update={"vendors": {v: b.model_copy(update=behaviour)
                                                   for v, b in config.vendors.items()}})
    path = tmp_path / name
    path.write_bytes(orjson.dumps(config.model_dump(mode="json")))
    return path


async def run(tmp_path: Path, run_id: str, sim: Path, **config) -> Path:
    req = RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, ITEMS), runs_dir=tmp_path / "runs",
                     run_id=run_id, backend="local", config=CouncilConfig(**config), sim_config=sim)
    result = await run_council(req)
    assert result.complete, result.summary["state"]
    return result.run_dir


def votes(run_dir: Path) -> dict[tuple[str, str, int], dict]:
    return {(r["row_id"], r["member"], r["round"]): r
            for name in ("round1.jsonl", "round2.jsonl") for r in lines(run_dir / name)}


def journal(run_dir: Path) -> list[dict]:
    return lines(run_dir / JOURNAL)


def cost_by_member(records: dict) -> Counter:
    out: Counter = Counter()
    for r in records.values():
        out[r["member"]] += r["cost_usd"]
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A synchronous run and a batch run of the same rows, seed and world."""
    tmp = tmp_path_factory.mktemp("pair")
    sim = sim_file(tmp, "sim.json")
    sync = asyncio.run(run(tmp, "sync", sim))
    batch = asyncio.run(run(tmp, "batch", sim, transport="batch", batch=FAST))
    return sync, batch


def test_a_batch_run_gives_the_synchronous_run_s_verdicts_at_under_half_its_cost(pair):
    sync, batch = pair
    assert (batch / "verdicts.jsonl").read_bytes() == (sync / "verdicts.jsonl").read_bytes()
    vs, vb = votes(sync), votes(batch)
    # The synchronous run asks an audit row's members until its change is decided, cheapest first; a batch run
    # asks the whole panel (each wave would wait for a batch): the same audit rows, more of their votes.
    audit = {v["row_id"] for v in lines(sync / "verdicts.jsonl") if v["deliberation_audit"]}
    assert audit and vs.keys() <= vb.keys() and all(k[0] in audit and k[2] == 2 for k in vb.keys() - vs.keys())
    for key, record in vs.items():  # the provider draws a row's verdict alike alone or packed
        assert (record["verdict"], record["request_key"]) == (vb[key]["verdict"], vb[key]["request_key"]), key
    # The batch requests pack rows as the synchronous judge's do when a request limit binds (the synchronous run
    # here had none binding: one row a request); each vote records its request's rows.
    batched = [r for r in vb.values() if r["member"] not in SYNC]
    assert sum(r["batch_size"] > 1 for r in batched) > 0.8 * len(batched)
    assert all(r["batch_size"] == len(r["batch_rows"]) and r["row_id"] in r["batch_rows"]
               for r in batched if r["batch_size"] > 1)
    assert max(r["batch_size"] for r in batched) == 8  # VendorSettings.max_batch
    assert all(r["batch_id"] is None and r["batch_size"] == 1 for r in vb.values() if r["member"] in SYNC)
    cs, cb = cost_by_member(vs), cost_by_member({k: vb[k] for k in vs})  # the same votes
    for member in cs:
        if member in SYNC:
            assert cb[member] == pytest.approx(cs[member], rel=1e-9), member
        else:  # packed, and at half price where the rate is known
            assert cb[member] < (0.5 if member in HALF_PRICED else 1.0) * cs[member], member
    assert sum(cb.values()) <= 0.55 * sum(cs.values())
    assert sum(cost_by_member(vb).values()) <= 0.55 * sum(cs.values())  # the batch run's whole cost too
    manifest = orjson.loads((batch / "manifest.json").read_bytes())
    for member in manifest["roster"]:  # the rates each judge's votes were charged at are on record
        model, vendor = member["judge_model"], member["vendor"]
        if vendor in SYNC:
            assert model not in manifest["batch_prices"]
            continue
        price, standard = manifest["batch_prices"][model], manifest["prices"][model]
        if vendor in HALF_PRICED:
            assert price["input_mtok"] == standard["input_mtok"] / 2
            assert price["source"] == standard["source"] or price["source"].startswith("https://www.alibabacloud.com/")
        else:
            assert price is None
    assert orjson.loads((sync / "manifest.json").read_bytes())["batch_prices"] == {}


def test_every_batch_vote_names_the_batch_that_carried_it_and_the_journal_holds_it(pair):
    _, batch = pair
    events = journal(batch)
    submitted = {e["batch_id"]: e["local"] for e in events if e["event"] == "submitted"}
    asked = {e["local"]: {k for members in e["packs"].values() for k, _ in members}
             for e in events if e["event"] == "intent"}
    ended = {e["local"]: e["status"] for e in events if e["event"] == "ended"}
    records = [r for r in votes(batch).values() if r["member"] not in SYNC]
    assert all(r["batch_id"] in submitted for r in records)
    for record in records:
        assert record["request_key"] in asked[submitted[record["batch_id"]]]
    assert set(ended) == set(submitted.values()) and set(ended.values()) == {"completed"}
    # Round one went out before round two: no batch mixes the rounds' votes.
    rounds = {local: {r["round"] for r in records if submitted[r["batch_id"]] == local} for local in asked}
    assert all(len(r) <= 1 for r in rounds.values()), rounds
    stats = orjson.loads((batch / "provider_stats.json").read_bytes())["models"]
    assert all(m["batch_billed_twice"] == 0 for m in stats.values())
    chat = {k: m["requests"] - m["batch_requests"] for k, m in stats.items()}
    assert {k for k, n in chat.items() if n} == {"deepseek/deepseek-v3.2"}  # its chat calls only


def test_rescore_and_diff_treat_a_batch_run_like_any_other(pair):
    sync, batch = pair
    before = (batch / "summary.json").read_bytes()
    rescore(RunFolder.open(batch))
    assert orjson.loads((batch / "summary.json").read_bytes()) == orjson.loads(before)
    diff = diff_runs(RunFolder.open(sync), RunFolder.open(batch))
    assert diff["comparable"] and diff["changed_rows"] == [] and diff["rows_compared"] == 6 * ITEMS


async def test_expiry_part_done_and_request_errors_ask_again_only_the_missing_votes(tmp_path, pair):
    sync, _ = pair
    sim = sim_file(tmp_path, "faulty.json", batch_expire_rate=0.6, batch_expire_done=0.5, batch_error_rate=0.1)
    run_dir = await run(tmp_path, "faulty", sim, transport="batch", batch={**FAST, "sync_below": 0})
    assert (run_dir / "verdicts.jsonl").read_bytes() == (sync / "verdicts.jsonl").read_bytes()
    events = journal(run_dir)
    intents = {e["local"]: e for e in events if e["event"] == "intent"}
    ended = [e for e in events if e["event"] == "ended"]
    assert Counter(e["status"] for e in ended)["expired"] >= 2  # the fault did happen
    sent = sum(len(e["keys"]) for e in intents.values())
    distinct = {k for e in intents.values() for k in e["keys"]}
    # Every request sent more than once was lost the time before: never answered before its batch expired, or
    # answered with an error. The provider's own counts of each ended batch say how many those were.
    # A lost request (never answered before its batch expired, or answered with an error: the provider's own
    # counts of each ended batch say how many) went again in a later batch, or, lost twice, as a chat call.
    stats = {k: m for k, m in orjson.loads((run_dir / "provider_stats.json").read_bytes())["models"].items()
             if not k.startswith("deepseek/")}  # synchronous in a batch run: no batch API
    chat = sum(m["requests"] - m["batch_requests"] for m in stats.values())
    lost = sum(e["counts"]["total"] - e["counts"]["succeeded"] for e in ended)
    assert sent - len(distinct) + chat == lost and sent > len(distinct)
    # Nothing was paid twice: the provider billed each request once, through a batch or as a chat call.
    assert sum(m["batch_billed_twice"] for m in stats.values()) == 0
    assert sum(m["billed"] for m in stats.values()) == len(distinct)


async def test_a_vendor_on_anthropic_s_batches_and_one_that_stays_synchronous_share_a_run(tmp_path, pair):
    sync, _ = pair
    vendors = {"anthropic": {"api": "anthropic"}, "openai": {"transport": "sync"}}
    run_dir = await run(tmp_path, "mixed", sim_file(tmp_path, "sim.json"), transport="batch", batch=FAST,
                        vendors=vendors)
    assert (run_dir / "verdicts.jsonl").read_bytes() == (sync / "verdicts.jsonl").read_bytes()
    records = votes(run_dir)
    by_member = {m: [r for r in records.values() if r["member"] == m] for m in {r["member"] for r in records.values()}}
    assert all(r["batch_id"] is None for r in by_member["openai"])
    assert all(r["batch_id"].startswith("msgbatch_") for r in by_member["anthropic"])
    assert all(r["batch_id"].startswith("batch_") for r in by_member["google"])
    apis = {e["vendor"]: e["api"] for e in journal(run_dir) if e["event"] == "intent"}
    assert apis.get("anthropic") == "anthropic" and "openai" not in apis and apis["google"] == "openai"
    stats = orjson.loads((run_dir / "provider_stats.json").read_bytes())["models"]
    openai = next(v for k, v in stats.items() if k.startswith("openai/"))
    assert openai["batch_requests"] == 0 and openai["requests"] == len(by_member["openai"]) + sum(
        r["parse_status"] == "repaired" for r in by_member["openai"])


async def test_queue_limits_split_the_work_into_batches_that_fit(tmp_path, pair):
    sync, _ = pair
    # The config's limit: at most 40 requests enqueued per vendor at once. The provider's: at most 6,000 prompt
    # tokens enqueued per vendor (about 17 requests), said only by refusing a batch that would overflow it.
    sim = sim_file(tmp_path, "queued.json", batch_queue_tokens=6000)
    vendors = {"google": {"batch_queue_requests": 40}, "anthropic": {"api": "anthropic"}}
    run_dir = await run(tmp_path, "queued", sim, transport="batch", batch=FAST, vendors=vendors)
    assert (run_dir / "verdicts.jsonl").read_bytes() == (sync / "verdicts.jsonl").read_bytes()
    events = journal(run_dir)
    intents = [e for e in events if e["event"] == "intent"]
    google = [e for e in intents if e["vendor"] == "google"]
    assert len(google) > 3 and max(len(e["keys"]) for e in google) <= 40
    gone = {e["local"] for e in events if e["event"] == "gone"}
    failed = {e["local"] for e in events if e["event"] == "ended" and e["status"] == "failed"}
    assert failed and gone  # the provider's queue did refuse some batch, of each API...
    stats = orjson.loads((run_dir / "provider_stats.json").read_bytes())["models"]
    assert sum(m["batch_billed_twice"] for m in stats.values()) == 0  # ...which cost nothing


async def test_a_stop_while_batches_wait_ends_at_once_and_the_resume_polls_them(tmp_path, pair):
    sync, _ = pair
    config = SimConfig.planted(seed=0).model_copy(update={"batch_completion_s": 2.0})
    runs = tmp_path / "runs"
    with sim_process(config, tmp_path) as url:
        stop = StopControl()
        req = RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, ITEMS), runs_dir=runs, run_id="stopped",
                         backend="local", provider_url=url, config=CouncilConfig(transport="batch", batch=FAST))
        running = asyncio.ensure_future(run_council(req, stop=stop))
        while not (runs / "stopped" / JOURNAL).exists() or not any(
                e["event"] == "submitted" for e in journal(runs / "stopped")):
            await asyncio.sleep(0.01)  # bounded by the test's timeout
        asked = time.monotonic()
        stop.request("interrupt")
        result = await running
        assert time.monotonic() - asked < 3.0
        assert result.summary["state"]["state"] == "stopped" and result.summary["state"]["abandoned"] == 0
        held = {e["local"] for e in journal(runs / "stopped") if e["event"] == "submitted"}
        assert held and not any(e["event"] == "ended" for e in journal(runs / "stopped"))
        resumed = await resume_council(runs, "stopped", provider_url=url)
    assert resumed.complete
    assert (runs / "stopped" / "verdicts.jsonl").read_bytes() == (sync / "verdicts.jsonl").read_bytes()
    ended = {e["local"] for e in journal(runs / "stopped") if e["event"] == "ended"}
    assert held <= ended  # the batches the stopped run left were polled to their end, not sent again
