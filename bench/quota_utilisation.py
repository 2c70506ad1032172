"""How close a council run comes to the lower bound its quotas allow, against a common baseline.

Five vendors on the embedded provider, each with its own request and token limits (two token-bound,
two request-bound, one that binds on both), grade the shipped sample three times over (2,880 rows,
both rounds). For each run we print

    T* / T   where T* = max over vendors of max(requests / rpm, tokens / tpm), from what the provider billed
             (less the provider's one-second burst allowance)
    429s     as a share of all requests the provider saw

for this project (quota ledger, leases, adaptive rate, rate-limit-aware batching) and for a baseline in
the same process and run: fixed concurrency per vendor (8) with exponential backoff on 429 and no
batching, as common evaluation tools do. T* is each run's own bound (the baseline sends one row per
request, so its bound is higher); ``speedup`` is the baseline's wall time over ours.

Run from the repository root:  python bench/quota_utilisation.py   (about four minutes; --copies 1 for a
shorter run). Target: T*/T >= 0.95 and 429s <= 1% for this project. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import orjson

import bank
from council.core.schema import JudgeCallRecord, MemberSpec, ResponseRow
from council.grading.coordinator import Coordinator
from council.protocol.config import CouncilConfig, VendorSettings
from council.protocol.parsing import parse_verdict
from council.protocol.prompts import PROMPT_HASHES, PROMPT_VERSION, single_messages
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from council.transport.judge import RESPONSE_FORMAT, JudgeTask

# vendor: (rpm, tpm). anthropic and openai bind on requests (batching helps), google and deepseek on
# tokens, alibaba on requests at one row per request and on tokens from three rows per request.
QUOTAS = {
    "anthropic": (2400, 20_000_000),
    "openai": (2400, 20_000_000),
    "google": (9000, 1_800_000),
    "deepseek": (8000, 1_600_000),
    "alibaba": (2400, 2_400_000),
}
BASELINE_CONCURRENCY = 8


def make_rows(copies: int) -> tuple[list, list[ResponseRow]]:
    items = bank.load_bank(bank.SAMPLE_BANK)
    rows = bank.load_responses(bank.SAMPLE_RESPONSES, items)
    out = [r.model_copy(update={"row_id": f"{r.row_id}@{c}"}) for c in range(copies) for r in rows]
    return items, out


def sim_config(seed: int = 0) -> SimConfig:
    vendors = {
        v: VendorBehaviour(rpm=rpm, tpm=tpm, latency_ms=20, latency_jitter_ms=20, malformed_rate=0.0)
        for v, (rpm, tpm) in QUOTAS.items()
    }
    return SimConfig(seed=seed, vendors=vendors, burst_s=1.0)


def council_config() -> CouncilConfig:
    return CouncilConfig(vendors={v: VendorSettings(rpm=rpm, tpm=tpm, concurrency=64, max_batch=8)
                                  for v, (rpm, tpm) in QUOTAS.items()})


def bound_s(stats: dict, burst_s: float = 1.0) -> tuple[float, dict[str, float]]:
    """T* from what the provider billed: per vendor max(requests / rpm, tokens / tpm), in seconds, less
    the provider's burst allowance (its buckets start full with ``burst_s`` seconds of quota)."""
    per = {}
    for vendor, (rpm, tpm) in QUOTAS.items():
        s = stats["vendors"][vendor]
        tokens = s["prompt_tokens"] + s["completion_tokens"]
        per[vendor] = max(0.0, 60.0 * max(s["billed"] / rpm, tokens / tpm) - burst_s)
    return max(per.values()), per


def share_429(stats: dict) -> float:
    requests = sum(s["requests"] for s in stats["vendors"].values())
    return sum(s["rate_limited"] for s in stats["vendors"].values()) / max(1, requests)


class BaselinePool:
    """Fixed concurrency per vendor, one row per request, exponential backoff with jitter on 429 (the
    provider's retry-after is not consulted), as common evaluation tools do."""

    def __init__(self, roster: list[MemberSpec], url: str) -> None:
        self.url = url + "/chat/completions"
        self.models = {m.vendor: m.judge_model for m in roster}
        self.slots = {m.vendor: asyncio.Semaphore(BASELINE_CONCURRENCY) for m in roster}
        self.session: aiohttp.ClientSession | None = None
        self.rng = random.Random(0)

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        if self.session is None:
            self.session = aiohttp.ClientSession(headers={"Authorization": "Bearer baseline"})
        return asyncio.ensure_future(self._one(vendor, task))

    async def _one(self, vendor: str, task: JudgeTask) -> JudgeCallRecord:
        body = orjson.dumps({"model": self.models[vendor], "messages": single_messages(task.round, task.body),
                             "temperature": 0, "max_tokens": 256, "response_format": RESPONSE_FORMAT})
        attempt = 0
        async with self.slots[vendor]:
            while True:
                attempt += 1
                async with self.session.post(self.url, data=body,
                                             headers={"Content-Type": "application/json"}) as resp:
                    raw = await resp.read()
                if resp.status == 200:
                    content = orjson.loads(raw)["choices"][0]["message"]["content"]
                    break
                await asyncio.sleep(min(30.0, 0.5 * 2 ** min(attempt - 1, 6)) * self.rng.uniform(0.5, 1.5))
        vote = parse_verdict(content)
        return JudgeCallRecord(
            row_id=task.row_id, round=task.round, member=vendor, judge_model=self.models[vendor],
            verdict=vote[0] if vote else None, reason=vote[1] if vote else None, ok=vote is not None,
            parse_status="ok" if vote else "unparseable", raw_outputs=[content], attempts=attempt,
            judge_prompt_version=PROMPT_VERSION, judge_prompt_hash=PROMPT_HASHES[f"round{task.round}"],
            request_id=uuid.uuid4().hex, peer_letters=task.peer_letters,
        )

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


async def run_ours(items, rows, tmp: Path) -> dict:
    responses = tmp / "responses.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(r.model_dump(mode="json")) + b"\n" for r in rows))
    sim_file = tmp / "sim.json"
    sim_file.write_bytes(orjson.dumps(sim_config().model_dump(mode="json")))
    result = await run_council(RunRequest(
        bank=bank.SAMPLE_BANK, responses=responses, runs_dir=tmp / "runs", run_id="ours", backend="local",
        sim_config=sim_file, config=council_config()))
    t_star, per = bound_s(result.provider_stats)
    return {"T_s": result.seconds, "T_star_s": t_star, "per_vendor_bound_s": per,
            "share_429": share_429(result.provider_stats),
            "requests": sum(s["requests"] for s in result.provider_stats["vendors"].values())}


async def run_baseline(items, rows) -> dict:
    sim = await start_sim(sim_config(), TruthTable.from_rows(items, rows))
    config = CouncilConfig()
    pool = BaselinePool(config.roster, sim.url)
    coordinator = Coordinator(config, {i.id: i for i in items}, pool, lambda _r: None)
    start = time.perf_counter()
    try:
        await coordinator.run(rows)
    finally:
        seconds = time.perf_counter() - start
        await pool.close()
        stats = await sim.stats()
        await sim.close()
    t_star, per = bound_s(stats)
    return {"T_s": seconds, "T_star_s": t_star, "per_vendor_bound_s": per, "share_429": share_429(stats),
            "requests": sum(s["requests"] for s in stats["vendors"].values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=3, help="copies of the 960-row sample (default 3)")
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    items, rows = make_rows(args.copies)
    print(f"{len(rows)} rows, quotas (rpm, tpm): {QUOTAS}")
    with tempfile.TemporaryDirectory() as tmp:
        ours = asyncio.run(run_ours(items, rows, Path(tmp)))
    print(f"ours:     T = {ours['T_s']:.1f} s, T* = {ours['T_star_s']:.1f} s, T*/T = {ours['T_star_s'] / ours['T_s']:.3f}, "
          f"429s = {100 * ours['share_429']:.2f}% of {ours['requests']} requests")
    figures = {"rows": len(rows), "ours_T_s": round(ours["T_s"], 2), "ours_T_star_s": round(ours["T_star_s"], 2),
               "ours_utilisation": round(ours["T_star_s"] / ours["T_s"], 4), "ours_share_429": round(ours["share_429"], 5),
               "ours_requests": ours["requests"]}
    if not args.skip_baseline:
        base = asyncio.run(run_baseline(items, rows))
        print(f"baseline: T = {base['T_s']:.1f} s, T* = {base['T_star_s']:.1f} s, T*/T = {base['T_star_s'] / base['T_s']:.3f}, "
              f"429s = {100 * base['share_429']:.2f}% of {base['requests']} requests")
        print(f"speedup (baseline T / ours T): {base['T_s'] / ours['T_s']:.2f}x")
        figures.update({"baseline_T_s": round(base["T_s"], 2), "baseline_T_star_s": round(base["T_star_s"], 2),
                        "baseline_utilisation": round(base["T_star_s"] / base["T_s"], 4),
                        "baseline_share_429": round(base["share_429"], 5), "baseline_requests": base["requests"],
                        "speedup": round(base["T_s"] / ours["T_s"], 3)})
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
