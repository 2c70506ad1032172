"""What a Ray actor's process pays to import the judges' module, against the same import with rich loaded.

Every ``--backend ray`` run starts one Ray worker process per vendor judge and one for the quota actor, and
each imports :mod:`council.cluster.actors` when its actor is created. :mod:`council.core.logs` imports structlog
without rich (``structlog.dev`` would import rich and pygments for console tracebacks that the council's JSON
lines never render). This bench measures that import's CPU in fresh Ray workers, two ways, alternated:

- **ours**: ``import council.cluster.actors``, as an actor's process does.
- **baseline**: ``import rich.console, rich.traceback`` first (what ``structlog.dev`` imported), then the same
  module: the cost before structlog was imported without rich.

Each measurement is one new actor in a private Ray instance on 127.0.0.1 (its process had imported nothing of
the council), killed after it answered; CPU is the worker's own (``time.process_time``).

Run from the repository root (the project installed)::

    python bench/actor_imports.py                 # 8 alternations: about half a minute
    python bench/actor_imports.py --repeats 16

Output: one line per alternation, the medians, and as the LAST line one JSON object
``{"baseline_ms": ..., "ours_ms": ..., "ratio_baseline_over_ours": ..., ...}``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import orjson


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8, help="alternations (default: %(default)s)")
    args = parser.parse_args()

    import ray

    from council.cluster.raycluster import ensure_ray, shutdown_ray

    @ray.remote(num_cpus=0)
    class Importer:
        def load(self, with_rich: bool) -> tuple[float, bool]:
            began = time.process_time()
            if with_rich:
                import rich.console  # noqa: F401
                import rich.traceback  # noqa: F401
            import council.cluster.actors  # noqa: F401

            return time.process_time() - began, "rich" in sys.modules

    ensure_ray(num_cpus=2)
    try:
        times: dict[str, list[float]] = {"baseline": [], "ours": []}
        rich_in_ours = False  # the baseline loads rich itself; ours should never
        for i in range(args.repeats):
            for side in ("baseline", "ours"):
                actor = Importer.remote()
                seconds, loaded = ray.get(actor.load.remote(side == "baseline"))
                ray.kill(actor)
                times[side].append(seconds)
                rich_in_ours |= side == "ours" and loaded
            print(f"#{i + 1}: baseline {times['baseline'][-1] * 1000:6.1f} ms   ours {times['ours'][-1] * 1000:6.1f} ms")
    finally:
        shutdown_ray()
    medians = {side: statistics.median(v) * 1000 for side, v in times.items()}
    ratio = medians["baseline"] / medians["ours"]
    print(f"median CPU to import the judges' module in a fresh Ray worker: baseline {medians['baseline']:.1f} ms, "
          f"ours {medians['ours']:.1f} ms: baseline / ours = {ratio:.2f}x; rich loaded in ours: "
          f"{rich_in_ours}")
    print(orjson.dumps({
        "repeats": args.repeats, "baseline_ms": round(medians["baseline"], 1), "ours_ms": round(medians["ours"], 1),
        "ratio_baseline_over_ours": round(ratio, 3), "rich_loaded_in_ours": rich_in_ours,
        "baseline_all_ms": [round(t * 1000, 1) for t in times["baseline"]],
        "ours_all_ms": [round(t * 1000, 1) for t in times["ours"]],
    }).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
