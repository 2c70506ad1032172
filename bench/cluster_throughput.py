"""A sharded run on a multi-node Ray cluster on this machine: throughput, how the work divides between
processes, and quota utilisation with three shard workers.

Cluster: ``ray.cluster_utils.Cluster`` with a head node of 0 CPUs (it holds this driver, the run's writer
and the vendors' quota actors) and three worker nodes of 1 logical CPU each; every socket on 127.0.0.1.

Throughput part. Rows: the shipped sample copied to ``--rows`` rows (default 4,800) as in
``bench/run_scale.py``. Provider: the embedded provider as its own ``council sim`` process (its CPU is not
this driver's), with no latency, no faults and no quotas, started afresh for each run. Three runs of the same
rows: ``driver`` (``--backend local``: this process does every vote: the baseline), ``shards=1`` and
``shards=3``. For each: wall time, votes/s, and CPU seconds per 10,000 votes counted over every process of
the run (``bench/support/cpu.py``: this driver, the provider's process, Ray's head and worker nodes, the shard
workers, the writer and the quota actors), by process, so the work sharding moves out of the driver is
counted where it goes. The driver's own CPU per 10,000 votes is shown beside it.

Quota part. ``shards=3`` against the quota world of ``bench/quota_utilisation.py`` (five vendors with
binding request and token limits, 20 ms latency; ``--quota-copies`` copies of the sample, default 3):
T*/T with T* from what the provider billed, as in that benchmark. T is counted from when the three workers
were up (their placement time, process start-up, is printed separately).

On a machine of two cores the absolute throughput cannot grow with nodes: the three workers, the writer,
the provider and the driver share the same two cores. What this shows instead is what sharding costs in CPU
per vote over the whole run (Ray's own processes included), how small the driver's share becomes (so more
nodes add capacity) and that the votes divide evenly among the workers. The check: every run grades every
row, and the driver's own CPU per vote sharded is at most a fifth of the driver doing everything; the bench
exits 1 when it fails. Run from the repository root (about four minutes):

    python bench/cluster_throughput.py
    python bench/cluster_throughput.py --rows 1920 --quota-copies 1   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.cpu import TreeCpu  # noqa: E402
from quota_utilisation import bound_s, council_config, make_rows, share_429  # noqa: E402
from quota_utilisation import sim_config as quota_world  # noqa: E402
from run_scale import SAMPLE_BANK, make_responses, sim_config, start_sim, stop_sim  # noqa: E402


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def per_10k(seconds: float, votes: int) -> float:
    return round(seconds / max(1, votes) * 10_000, 4)


def one_run(responses: Path, sim_file: Path, runs: Path, run_id: str, *, shards: int, address: str | None,
            config=None) -> dict:  # noqa: ANN001 - a CouncilConfig
    from council.protocol.config import CouncilConfig
    from council.run.runner import RunRequest, run_council

    proc, url = start_sim(responses, sim_file)
    try:
        req = RunRequest(bank=SAMPLE_BANK, responses=responses, runs_dir=runs, run_id=run_id,
                         backend="ray" if shards else "local", provider_url=url, ray_address=address, shards=shards,
                         config=config or CouncilConfig())
        tree = TreeCpu().start()
        cpu, wall = cpu_s(), time.perf_counter()
        result = asyncio.run(run_council(req))
        cpu, wall = cpu_s() - cpu, time.perf_counter() - wall
        every = tree.stop()
        stats = _provider_stats(url)
    finally:
        stop_sim(proc)
    votes = result.issued
    out = {"run": run_id, "shards": shards, "rows": result.summary["rows_total"], "votes": votes,
           "not_graded": result.not_graded, "seconds": round(wall, 3), "votes_per_s": round(votes / wall, 1),
           "driver_cpu_s": round(cpu, 3), "driver_cpu_s_per_10k_votes": per_10k(cpu, votes),
           "all_cpu_s": every, "all_cpu_s_per_10k_votes": per_10k(every["total"], votes), "provider": stats,
           "run_seconds": result.seconds}
    if result.processes:
        workers = result.processes["workers"]
        out["placement_s"] = round(result.processes["placement_s"], 3)
        out["workers"] = [{"node": w["node"][:8], "votes": w["issued"], "cpu_s": round(w["cpu_s"], 3),
                           "cpu_s_per_10k_own_votes": per_10k(w["cpu_s"], w["issued"])} for w in workers]
        writer = result.processes["writer"]
        out["writer"] = {"records": writer["written"], "cpu_s": round(writer["cpu_s"], 3),
                         "cpu_s_per_10k_votes": per_10k(writer["cpu_s"], votes)}
    return out


def _provider_stats(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/v1/sim/stats", timeout=30) as resp:  # noqa: S310 - loopback
        return json.loads(resp.read())


def cluster():  # noqa: ANN201 - a ray.cluster_utils.Cluster
    import os

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray.cluster_utils import Cluster

    from council.cluster.raycluster import LOOPBACK, ensure_ray

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "node_ip_address": LOOPBACK,
                                                      "include_dashboard": False})
    for _ in range(3):
        c.add_node(num_cpus=1, node_ip_address=LOOPBACK)
    c.wait_for_nodes()
    ensure_ray(c.address)
    return c


def show(f: dict) -> None:
    parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in list(f["all_cpu_s"].items())[1:7])
    line = (f"{f['run']:>9}: {f['votes']:,} votes in {f['seconds']:.1f} s ({f['votes_per_s']:,.0f} votes/s); CPU of "
            f"every process {f['all_cpu_s']['total']:.1f} s = {f['all_cpu_s_per_10k_votes']:.2f} s per 10k votes "
            f"({parts}); driver alone {f['driver_cpu_s']:.2f} s = {f['driver_cpu_s_per_10k_votes']:.3f} s per 10k")
    if "workers" in f:
        shares = ", ".join(f"{w['votes']:,} votes / {w['cpu_s']:.1f} s CPU" for w in f["workers"])
        line += (f"; workers: {shares}; writer {f['writer']['cpu_s']:.2f} s CPU "
                 f"({f['writer']['cpu_s_per_10k_votes']:.3f} s per 10k votes); placement {f['placement_s']:.1f} s")
    print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_800)
    ap.add_argument("--quota-copies", type=int, default=3)
    args = ap.parse_args()
    from council.cluster.raycluster import shutdown_ray

    figures: dict = {"bench": "cluster_throughput", "rows": args.rows, "cores": __import__("os").cpu_count()}
    with tempfile.TemporaryDirectory(prefix="cluster-throughput-") as tmp:
        work = Path(tmp)
        responses, sim_file = work / "responses.jsonl", work / "sim.json"
        make_responses(args.rows, responses)
        sim_config(sim_file)
        driver = one_run(responses, sim_file, work / "runs", "driver", shards=0, address=None)
        show(driver)
        c = cluster()
        try:
            one = one_run(responses, sim_file, work / "runs", "shards=1", shards=1, address=c.address)
            show(one)
            three = one_run(responses, sim_file, work / "runs", "shards=3", shards=3, address=c.address)
            show(three)
            _, rows = make_rows(args.quota_copies)
            quota_responses, quota_file = work / "quota-responses.jsonl", work / "quota-sim.json"
            quota_responses.write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
            quota_file.write_text(quota_world().model_dump_json(), encoding="utf-8")
            quota = one_run(quota_responses, quota_file, work / "runs", "quota", shards=3, address=c.address,
                            config=council_config())
        finally:
            shutdown_ray()
            c.shutdown()
    t_star, per_vendor = bound_s(quota["provider"])
    t = quota["run_seconds"] - quota["placement_s"]
    utilisation = t_star / t
    print(f"    quota: shards=3, {quota['rows']:,} rows, T = {t:.1f} s after placement ({quota['placement_s']:.1f} s), "
          f"T* = {t_star:.1f} s, T*/T = {utilisation:.3f}, 429s {100 * share_429(quota['provider']):.2f}%")
    ratio = driver["driver_cpu_s_per_10k_votes"] / max(1e-9, three["driver_cpu_s_per_10k_votes"])
    cost = {f["run"]: f["all_cpu_s_per_10k_votes"] / max(1e-9, driver["all_cpu_s_per_10k_votes"]) for f in (one, three)}
    print(f"CPU per 10k votes over every process, sharded / driver doing everything: shards=1 {cost['shards=1']:.2f}x, "
          f"shards=3 {cost['shards=3']:.2f}x; votes/s 3 workers / 1 worker: "
          f"{three['votes_per_s'] / one['votes_per_s']:.2f} on {figures['cores']} cores")
    problems = [f"{f['run']}: {f['not_graded']} rows not graded"
                for f in (driver, one, three, quota) if f["not_graded"]]
    if ratio < 5:
        problems.append(f"the driver's own CPU per vote fell only {ratio:.1f}x when sharded (check: >= 5x)")
    print(f"driver's own CPU per 10k votes, doing everything / sharded (3 workers): {ratio:.1f}x (check >= 5x)")
    print("OK: every row graded, the driver's own share >= 5x smaller sharded" if not problems else
          "FAILED: " + "; ".join(problems))
    for f in (driver, one, three, quota):
        f.pop("provider")
    figures.update({
        "driver": driver, "shards_1": one, "shards_3": three,
        "quota": {**quota, "T_s": round(t, 3), "T_star_s": round(t_star, 3), "utilisation": round(utilisation, 4),
                  "per_vendor_bound_s": {k: round(v, 3) for k, v in per_vendor.items()}},
        "driver_cpu_ratio": round(ratio, 2), "votes_per_s_3_over_1": round(three["votes_per_s"] / one["votes_per_s"], 3),
        "all_cpu_per_vote_over_driver": {k: round(v, 3) for k, v in cost.items()}, "ok": not problems,
    })
    print(json.dumps(figures))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
