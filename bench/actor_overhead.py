"""What a vote costs through a Ray judge actor, against the same judge in one process.

``--backend ray`` grades with one :class:`~council.cluster.actors.JudgeActor` per vendor: the driver sends
batches of votes to the actor, whose :class:`~council.transport.judge.Judge` asks the provider. This bench
counts the CPU of a vote on three paths, all against a provider that costs almost nothing
(``bench/support/canned.py``, in its own process, its CPU share printed):

- **plain**: the judge of ``--backend local`` (``LocalPool``'s, its quota an in-process ledger) on this process's
  event loop; the votes go in batches to ``Judge.grade_batch``.
- **thread**: the same ``Judge`` on an event loop in a second thread, each batch handed to it with
  ``asyncio.run_coroutine_threadsafe`` from a pool of threads that wait for it, blocking: the shape a Ray actor's
  threads show when sampled (a task thread hands each call to the actor's event-loop thread and waits for its
  result), without Ray.
- **actor**: a ``JudgeActor`` in a Ray instance on 127.0.0.1, built as ``RayPool`` builds it (the same judge
  settings and prices, its quota in the quota actor); CPU is the actor's process, the quota actor's and this
  process's (the driver's side of the calls). The actor's CPU is also split by thread (Linux ``/proc``, named
  by the actor's Python threads where it has one: its event loop is ``AsyncIO Thread: default``).

The same votes each time: round-one bodies of the shipped sample's rows (``round1_body``), one judge (openai),
in batches of ``--batch`` with ``--inflight`` batches in flight (the Ray pool sends up to 64 a call after 50 ms;
on the sample, about 32). Each path is warmed up, then the three alternate for ``--rounds``; the best of each is
reported, with the spread.

Run from the repository root (the project installed)::

    python bench/actor_overhead.py                     # 3,000 votes, 3 rounds: under a minute
    python bench/actor_overhead.py --votes 10000 --rounds 5

The check (the bench exits 1 when it fails): the provider stays below 80% of a core in every measurement, else
it, not the path measured, sets the pace.

Output: one line per measurement, a summary, and as the LAST line one JSON object
``{"plain_us_per_vote": ..., "thread_us_per_vote": ..., "actor_us_per_vote": ..., "actor_ratio": ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (str(ROOT), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

from client_overhead import Cpu, start_provider, stop_provider  # noqa: E402
from support.cpu import process_cpu  # noqa: E402

import bank  # noqa: E402
from council.core.schema import MemberSpec  # noqa: E402
from council.grading.pools import LocalPool, _judge_prices  # noqa: E402
from council.protocol.config import CouncilConfig, Endpoint  # noqa: E402
from council.protocol.prompts import round1_body  # noqa: E402
from council.transport.judge import Judge, JudgeTask  # noqa: E402

VENDOR = "openai"
PROVIDER_MAX_CORE = 0.8


def votes(n: int) -> list[JudgeTask]:
    """``n`` round-one votes on the sample's rows (past its end, the rows again under new row ids)."""
    items = {i.id: i for i in bank.load_bank(bank.SAMPLE_BANK)}
    rows = list(bank.iter_responses(bank.SAMPLE_RESPONSES))
    out = []
    for k in range(n):
        row = rows[k % len(rows)]
        out.append(JudgeTask(row_id=f"{row.row_id}#{k}", round=1, body=round1_body(items[row.item_id], row),
                             item_id=row.item_id))
    return out


def batches(tasks: list[JudgeTask], size: int) -> list[list[JudgeTask]]:
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


def _thread_ticks(pid: int, names: dict[int, str]) -> dict[str, int]:
    """CPU ticks (hundredths of a second, as a rule) of each thread of ``pid`` (Linux), by its Python name in
    ``names`` (by native id) or else its native name, summed over threads of one name."""
    out: dict[str, int] = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{pid}/task/{tid}/comm") as handle:
                name = names.get(int(tid)) or f"native {handle.read().strip()}"
            out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    except OSError:
        pass
    return out


def _counted(records: list) -> int:
    """How many votes came back; RuntimeError if one failed (a failed vote costs less than a graded one)."""
    bad = [r for r in records if isinstance(r, BaseException) or not r.ok]
    if bad:
        raise RuntimeError(f"a vote failed: {bad[0]!r}")
    return len(records)


def _timed(grade: Callable[[], int]) -> dict[str, Any]:
    """``grade()`` (the votes it graded), with this process's CPU and the wall time it took."""
    cpu0, t0 = time.process_time(), time.perf_counter()
    n = grade()
    return {"votes": n, "cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - t0}


async def _drive(send, work: list[list[JudgeTask]], inflight: int) -> int:  # noqa: ANN001 - a batch's coroutine
    gate = asyncio.Semaphore(inflight)

    async def one(batch: list[JudgeTask]) -> int:
        async with gate:
            return _counted(await send(batch))

    return sum(await asyncio.gather(*(one(b) for b in work)))


class Plain:
    name = "plain"

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def run(self, work: list[list[JudgeTask]], inflight: int) -> dict[str, Any]:
        return _timed(lambda: self.loop.run_until_complete(_drive(self.judge.grade_batch, work, inflight)))

    def __enter__(self) -> Plain:
        self.loop = asyncio.new_event_loop()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.run_until_complete(self.judge.close())
        self.loop.close()


class Threaded:
    """The judge on an event loop in its own thread, handed each batch by a pool of ``inflight`` threads that
    block for the result (see the module's docstring)."""

    name = "thread"

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def __enter__(self) -> Threaded:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="judge-loop", daemon=True)
        self.thread.start()
        return self

    def run(self, work: list[list[JudgeTask]], inflight: int) -> dict[str, Any]:
        def call(batch: list[JudgeTask]) -> int:
            return _counted(asyncio.run_coroutine_threadsafe(self.judge.grade_batch(batch), self.loop).result())

        def grade() -> int:
            with concurrent.futures.ThreadPoolExecutor(inflight) as pool:
                return sum(pool.map(call, work))

        return _timed(grade)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.judge.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class Actor:
    name = "actor"

    def __init__(self, member: MemberSpec, endpoint: Endpoint, config: CouncilConfig) -> None:
        self.args = (member, endpoint, config)

    def __enter__(self) -> Actor:
        import ray

        from council.cluster.actors import JudgeActor
        from council.cluster.quotas import quota_actor
        from council.cluster.raycluster import ensure_ray

        ensure_ray()
        member, endpoint, config = self.args
        settings = config.settings(member.vendor)
        self.quotas = quota_actor({member.vendor: settings.limits})
        self.actor = JudgeActor.options(max_concurrency=4096, num_cpus=0).remote(
            member, endpoint, config.judge, settings, config.seed, _judge_prices(config, member.vendor))
        self.pid, quota_pid = ray.get([self.actor.__ray_call__.remote(lambda _: os.getpid()),
                                       self.quotas.__ray_call__.remote(lambda _: os.getpid())])
        self.names = ray.get(self.actor.__ray_call__.remote(
            lambda _: {t.native_id: t.name for t in threading.enumerate()}))
        self.procs = [psutil.Process(self.pid), psutil.Process(quota_pid)]
        self.loop = asyncio.new_event_loop()
        return self

    def run(self, work: list[list[JudgeTask]], inflight: int) -> dict[str, Any]:
        before = [process_cpu(p) for p in self.procs]
        ticks = _thread_ticks(self.pid, self.names)
        res = _timed(lambda: self.loop.run_until_complete(
            _drive(lambda b: self.actor.grade_batch.remote(b), work, inflight)))
        actor, quota = (process_cpu(p) - b for p, b in zip(self.procs, before, strict=True))
        after = _thread_ticks(self.pid, self.names)
        threads = {name: after[name] - ticks.get(name, 0) for name in after}
        return {**res, "cpu_s": actor + quota + res["cpu_s"], "actor_s": actor, "quota_s": quota,
                "driver_s": res["cpu_s"],
                "threads": {k: v for k, v in sorted(threads.items(), key=lambda x: -x[1]) if v}}

    def __exit__(self, *exc: object) -> None:
        from council.cluster.raycluster import shutdown_ray

        self.loop.close()
        shutdown_ray()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--votes", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--inflight", type=int, default=8)
    args = parser.parse_args()

    provider, url = start_provider(pin=False)
    config = CouncilConfig()
    member = next(m for m in config.roster if m.vendor == VENDOR)
    endpoint = Endpoint(base_url=url)
    work = batches(votes(args.votes), args.batch)
    warm = work[:10]

    def judge() -> Judge:  # the local backend's judge, each time in a pool of its own
        return LocalPool(config, dict.fromkeys(config.roster_vendors, endpoint)).judges[VENDOR]

    results: dict[str, list[dict[str, Any]]] = {"plain": [], "thread": [], "actor": []}
    try:
        with Plain(judge()) as plain, Threaded(judge()) as threaded, Actor(member, endpoint, config) as actor:
            for path in (plain, threaded, actor):
                path.run(warm, args.inflight)
            for r in range(args.rounds):
                for path in (plain, threaded, actor):
                    with Cpu(provider.pid) as cpu:
                        res = path.run(work, args.inflight)
                    res["provider_core"] = cpu.share
                    res["us_per_vote"] = 1e6 * res["cpu_s"] / res["votes"]
                    results[path.name].append(res)
                    extra = ""
                    if path.name == "actor":
                        extra = (f"  (actor {res['actor_s']:.2f} s, quota {res['quota_s']:.2f} s, driver "
                                 f"{res['driver_s']:.2f} s; actor's threads in ticks {res['threads']})")
                    print(f"round {r + 1} {path.name:6s} {res['votes']} votes  cpu {res['cpu_s']:.2f} s  "
                          f"{res['us_per_vote']:.0f} us/vote  wall {res['wall_s']:.2f} s  provider "
                          f"{res['provider_core']:.0%} of a core{extra}", flush=True)
    finally:
        stop_provider(provider)

    best = {name: min(r["us_per_vote"] for r in runs) for name, runs in results.items()}
    spread = {name: [round(r["us_per_vote"]) for r in runs] for name, runs in results.items()}
    provider_max = max(r["provider_core"] for runs in results.values() for r in runs)
    print(f"\nCPU per vote (best of {args.rounds}): plain {best['plain']:.0f} us, thread {best['thread']:.0f} us, "
          f"actor {best['actor']:.0f} us; actor / plain {best['actor'] / best['plain']:.2f}x, thread / plain "
          f"{best['thread'] / best['plain']:.2f}x; the provider at most {provider_max:.0%} of a core")
    print(orjson.dumps({
        "votes": args.votes, "rounds": args.rounds, "batch": args.batch, "inflight": args.inflight,
        "plain_us_per_vote": round(best["plain"], 1), "thread_us_per_vote": round(best["thread"], 1),
        "actor_us_per_vote": round(best["actor"], 1), "actor_ratio": round(best["actor"] / best["plain"], 3),
        "thread_ratio": round(best["thread"] / best["plain"], 3), "spread_us_per_vote": spread,
        "provider_max_core": round(provider_max, 3), "ok": provider_max < PROVIDER_MAX_CORE,
    }).decode())
    return 0 if provider_max < PROVIDER_MAX_CORE else 1


if __name__ == "__main__":
    sys.exit(main())
