"""How close a council run comes to the lower bound its quotas allow, against a common baseline.

Five vendors on the embedded provider, each with its own request and token limits (two token-bound,
two request-bound, one that binds on both), grade the shipped sample three times over (2,880 rows,
both rounds). For each run we print

    T* / T   where T* = max over vendors of max(requests / rpm, tokens / tpm), from what the provider billed
             (less the provider's one-second burst allowance)
    429s     as a share of all requests the provider saw

for this project (quota ledger, leases, adaptive rate, rate-limit-aware batching) and for a baseline in
the same process and run: a careful hand-written client with the same concurrency per vendor as ours (64),
one row per request (no batching, as common evaluation tools do), that honours every hint the provider
gives: after a 429 it waits the ``retry-after-ms`` / ``retry-after`` it was told (exponential backoff only
when there is no hint), and when the ``x-ratelimit-remaining-requests`` or ``-tokens`` header says the
window is spent (no request left, or fewer tokens than its last request used), every request of that
vendor waits for the matching ``x-ratelimit-reset-*``. T* is each run's own bound (the baseline sends one
row per request, so its bound is higher); ``speedup`` is the baseline's wall time over ours.

Run from the repository root:  python bench/quota_utilisation.py   (about four minutes; --copies 1 for a
shorter run). The check: T*/T >= 0.95 and 429s <= 1% for this project; the bench exits 1 when it fails.
The last line is one JSON object.
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
BASELINE_CONCURRENCY = 64  # ours: council_config()'s concurrency
TARGET_UTILISATION = 0.95
TARGET_SHARE_429 = 0.01


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


def reset_s(text: str | None) -> float | None:
    """An ``x-ratelimit-reset-*`` duration (``"0.35s"``, ``"120ms"``, ``"1m30s"``) in seconds."""
    if not text:
        return None
    total, number = 0.0, ""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else ch
        if unit not in units or not number:
            return None
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    return total + (float(number) if number else 0.0)


class BaselinePool:
    """A careful hand-written client: the same concurrency per vendor as ours, one row per request, and every
    hint of the provider honoured (``retry-after`` after a 429, ``x-ratelimit-*`` before the window runs out)."""

    def __init__(self, roster: list[MemberSpec], url: str) -> None:
        self.url = url + "/chat/completions"
        self.models = {m.vendor: m.judge_model for m in roster}
        self.slots = {m.vendor: asyncio.Semaphore(BASELINE_CONCURRENCY) for m in roster}
        self.paused_until = {m.vendor: 0.0 for m in roster}  # the vendor's window is spent until then
        self.last_tokens = {m.vendor: 0 for m in roster}
        self.session: aiohttp.ClientSession | None = None
        self.rng = random.Random(0)

    def submit(self, vendor: str, task: JudgeTask) -> asyncio.Future[JudgeCallRecord]:
        if self.session is None:
            self.session = aiohttp.ClientSession(headers={"Authorization": "Bearer baseline"})
        return asyncio.ensure_future(self._one(vendor, task))

    def _heed(self, vendor: str, headers) -> None:  # noqa: ANN001 - aiohttp's headers
        """Pause the vendor until its window resets when the headers say it is spent."""
        now = time.monotonic()
        for kind, need in (("requests", 1), ("tokens", self.last_tokens[vendor])):
            remaining = headers.get(f"x-ratelimit-remaining-{kind}")
            reset = reset_s(headers.get(f"x-ratelimit-reset-{kind}"))
            if remaining is not None and reset is not None and int(remaining) < max(1, need):
                self.paused_until[vendor] = max(self.paused_until[vendor], now + reset)

    async def _one(self, vendor: str, task: JudgeTask) -> JudgeCallRecord:
        body = orjson.dumps({"model": self.models[vendor], "messages": single_messages(task.round, task.body),
                             "temperature": 0, "max_tokens": 256, "response_format": RESPONSE_FORMAT})
        attempt = 0
        async with self.slots[vendor]:
            while True:
                while (wait := self.paused_until[vendor] - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                attempt += 1
                async with self.session.post(self.url, data=body,
                                             headers={"Content-Type": "application/json"}) as resp:
                    raw = await resp.read()
                    headers = resp.headers
                if resp.status == 200:
                    answer = orjson.loads(raw)
                    content = answer["choices"][0]["message"]["content"]
                    self.last_tokens[vendor] = int(answer.get("usage", {}).get("total_tokens") or 0)
                    self._heed(vendor, headers)
                    break
                self._heed(vendor, headers)
                ms, s = headers.get("retry-after-ms"), headers.get("retry-after")
                hint = float(ms) / 1000.0 if ms else float(s) if s else None
                if hint is None:
                    hint = min(30.0, 0.5 * 2 ** min(attempt - 1, 6)) * self.rng.uniform(0.5, 1.5)
                self.paused_until[vendor] = max(self.paused_until[vendor], time.monotonic() + hint)
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


def main() -> int:
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
    ok = ours["T_star_s"] / ours["T_s"] >= TARGET_UTILISATION and ours["share_429"] <= TARGET_SHARE_429
    print(f"{'OK' if ok else 'FAILED'}: ours T*/T >= {TARGET_UTILISATION} and 429s <= {100 * TARGET_SHARE_429:g}%")
    figures["ok"] = ok
    print(orjson.dumps(figures).decode())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
