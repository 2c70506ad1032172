"""The README's first command, ``council run`` on the shipped sample, timed end to end against an earlier commit
of this project measured in the same run, on both backends.

The baseline is the project as it was at ``--baseline`` (a commit; by default the last one before the
command was made faster), exported with ``git archive`` into a temporary folder and run from there with the
same interpreter and packages (``PYTHONPATH`` puts the exported tree first). Ours is this checkout. Each
measurement is the wall time of one ``python -m council.cli run --backend B`` process in a new empty folder,
from its start to its exit (imports, Ray, grading, scoring, the report and Ray's shutdown included), with
nothing else of this benchmark running meanwhile. The two sides alternate (baseline, ours, baseline,
ours...) ``--repeats`` times per backend; the medians are compared.

Ours runs with ``--timings``; its phases (the median of each over the repeats) are printed as the breakdown,
and, where psutil is installed, the CPU seconds its processes used, by kind (the command, the embedded
provider, the report's drawing, each kind of Ray actor and daemon: ``bench/support/cpu.py``): a run whose
processes use more seconds of CPU than the machine's cores can give in the target cannot meet it.
Ours is timed as the README's command runs it (the default ``--deliberate disputed``: round two only where round
one is disputed, the target's figure). A baseline that sends round two on every row by default (the default
baseline, from before ``--deliberate`` existed; the benchmark asks the exported tree) is also set against ours
with ``--deliberate all``, timed in the same alternation: the same work on both sides, for the ratio of like with
like. Against a later baseline, ours as the README runs it is the same work already, and that ratio uses it.

With Ray, a third process is timed beside the two (``--floor``, on by default): Ray alone, started and stopped
by the council's own functions as the run does (a private local instance on 127.0.0.1: no dashboard, no log
monitor, no autoscaler monitor), with as many no-op actors as the run creates (one judge per roster vendor; the
command's run starts no quota actor), each called once, then stopped: the wall time no Ray run of this command can
go below before it grades a row. Child processes write their bytecode caches as on a
user's machine (``PYTHONDONTWRITEBYTECODE`` is removed from their environment).

Run it from the repository root::

    python bench/main_command.py                    # both backends, 3 alternations each
    python bench/main_command.py --backends local --repeats 5

The check (exit 1 when it fails): ours doing the baseline's work is not slower than the baseline on any backend
(median ratio baseline / ours >= 1). Reported beside it, the targets: at most 8 s with Ray and 6 s local.

Output: one line per measurement, the breakdown, and as the LAST line one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
try:  # the CPU of a run's process tree; psutil is not among the package's own dependencies
    from support.cpu import TreeCpu
except ImportError:
    TreeCpu = None
BASELINE = "0c63e77"  # the last commit before `council run` was made faster
TARGETS_S = {"ray": 8.0, "local": 6.0}
_PHASE = re.compile(r"^  (\S.*?)\s+([0-9.]+) s\s+([0-9.]+) s$")


def export(commit: str, into: Path) -> Path:
    """The tree of ``commit`` in ``into`` (``git archive``)."""
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), commit], check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


FLOOR = """
import sys
import ray
from council.cluster.raycluster import ensure_ray, shutdown_ray
ensure_ray()

@ray.remote
class Idle:
    def ping(self):
        return 1

actors = [Idle.remote() for _ in range(int(sys.argv[1]))]
ray.get([a.ping.remote() for a in actors])
shutdown_ray()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def ray_floor(actors: int) -> float:
    """Seconds of one process that starts Ray as the run does, starts ``actors`` no-op actors, calls each once
    and stops Ray."""
    with tempfile.TemporaryDirectory(prefix="main-command-floor-") as cwd:
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", FLOOR, str(actors)], cwd=cwd, env=_env(), check=True,
                       capture_output=True, timeout=300)
        return time.perf_counter() - began


def deliberation_of(tree: Path) -> str:
    """Which rows the project at ``tree`` sends to round two by default: ``all`` before ``--deliberate`` existed."""
    probe = "from council.protocol.config import CouncilConfig as C; print(getattr(C(), 'deliberate', 'all'))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tree, env=_env() | {"PYTHONPATH": str(tree)},
                          check=True, capture_output=True, text=True, timeout=120)
    return done.stdout.strip()


def one_run(backend: str, tree: Path | None, extra: tuple[str, ...] = ()) -> tuple[float, dict[str, float], dict]:
    """Seconds of one ``council run`` (the baseline's when ``tree`` is given; ``extra`` options) and, for ours,
    its phases; and the CPU seconds of its processes by kind (empty without psutil)."""
    env = _env()
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    cpu = TreeCpu() if TreeCpu else None  # on every run, so that its polling (a few % of a core) weighs on each side alike
    with tempfile.TemporaryDirectory(prefix="main-command-") as cwd:
        argv = [sys.executable, "-m", "council.cli", "run", "--backend", backend, "--progress-every", "0", *extra]
        if tree is None:
            argv.append("--timings")
        if cpu is not None:
            cpu.start()
        began = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        seconds = time.perf_counter() - began
        used = cpu.stop() if cpu is not None else {}
        used.pop("driver", None)  # this benchmark's own process, idle meanwhile
    if done.returncode != 0:
        raise SystemExit(f"council run --backend {backend} ({'baseline' if tree else 'ours'}) exited "
                         f"{done.returncode}: {done.stderr[-2000:]}")
    phases: dict[str, float] = {}
    if tree is None:
        shown = done.stdout[done.stdout.index("where the time went"):].splitlines()[1:]
        for line in shown:
            match = _PHASE.match(line)
            if match:
                phases[match.group(1)] = phases.get(match.group(1), 0.0) + float(match.group(3))
    return seconds, phases, used


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help="commit to compare with (default: %(default)s)")
    parser.add_argument("--backends", default="ray,local", help="comma-separated (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="alternations per backend (default: %(default)s)")
    parser.add_argument("--no-floor", dest="floor", action="store_false", help="do not time Ray alone")
    args = parser.parse_args()
    from council.protocol.config import CouncilConfig

    actors = len(CouncilConfig().roster_vendors)  # a judge per roster vendor (each keeps its vendor's quota)
    backends = [b for b in args.backends.split(",") if b]
    figures: dict[str, dict] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="main-command-baseline-") as tmp:
        tree = export(args.baseline, Path(tmp))
        # ours doing the baseline's work: with --deliberate all against a baseline that deliberated on every row
        like = ("--deliberate", "all") if deliberation_of(tree) == "all" else ()
        label = "ours --deliberate all" if like else "ours (the baseline's deliberation too)"
        for backend in backends:
            theirs, ours, ours_all, phases, floors, cpus = [], [], [], [], [], []
            timing_floor = args.floor and backend == "ray"
            for k in range(args.repeats):
                base_s, _, base_cpu = one_run(backend, tree)
                our_s, our_phases, our_cpu = one_run(backend, None)
                all_s, _, all_cpu = one_run(backend, None, like) if like else (our_s, None, our_cpu)
                cpus += [(base_cpu, our_cpu, all_cpu)] if our_cpu else []
                theirs.append(base_s)
                ours.append(our_s)
                ours_all.append(all_s)
                phases.append(our_phases)
                floors += [ray_floor(actors)] if timing_floor else []
                floor = f"   Ray alone with {actors} actors {floors[-1]:6.2f} s" if timing_floor else ""
                same = f"   ours --deliberate all {all_s:6.2f} s" if like else ""
                print(f"{backend} #{k + 1}: baseline {base_s:6.2f} s   ours {our_s:6.2f} s{same}{floor}", flush=True)
            base_m, our_m, all_m = statistics.median(theirs), statistics.median(ours), statistics.median(ours_all)
            ratio = base_m / all_m
            breakdown = {name: round(statistics.median(p.get(name, 0.0) for p in phases), 3)
                         for name in dict.fromkeys(n for p in phases for n in p)}
            target = TARGETS_S[backend]
            print(f"{backend}: median baseline {base_m:.2f} s, {label} {all_m:.2f} s: baseline / ours = "
                  f"{ratio:.2f}x (the same work); ours as the README runs it {our_m:.2f} s "
                  f"({base_m / our_m:.2f}x): target <= {target:.0f} s: {'met' if our_m <= target else 'NOT met'}")
            print("  ours, phase by phase (median seconds): "
                  + ", ".join(f"{name} {s:.2f}" for name, s in breakdown.items()))
            if floors:
                print(f"  Ray alone (start, {actors} no-op actors, stop): median {statistics.median(floors):.2f} s")
            cpu = {name: round(statistics.median(c[1].get(name, 0.0) for c in cpus), 2)
                   for name in dict.fromkeys(n for c in cpus for n in c[1])}
            cpu_base, cpu_all = (round(statistics.median(c[i]["total"] for c in cpus), 2) if cpus else None
                                 for i in (0, 2))
            if cpu:
                print(f"  ours, CPU seconds of its processes (median; {os.cpu_count()} cores): "
                      + ", ".join(f"{name} {s:.2f}" for name, s in cpu.items())
                      + f"; in all, baseline {cpu_base:.2f}, {label} {cpu_all:.2f}")
            ok = ok and ratio >= 1.0
            figures[backend] = {"baseline_s": [round(x, 3) for x in theirs], "ours_s": [round(x, 3) for x in ours],
                                "ours_deliberate_all_s": [round(x, 3) for x in ours_all],
                                "baseline_median_s": round(base_m, 3), "ours_median_s": round(our_m, 3),
                                "ours_deliberate_all_median_s": round(all_m, 3),
                                "ratio_baseline_over_ours": round(ratio, 3),
                                "ratio_baseline_over_ours_default": round(base_m / our_m, 3), "target_s": target,
                                "target_met": our_m <= target, "phases_median_s": breakdown,
                                "cpu_median_s": cpu, "baseline_cpu_median_s": cpu_base,
                                "deliberate_all_cpu_median_s": cpu_all}
            if floors:
                figures[backend] |= {"ray_alone_s": [round(x, 3) for x in floors],
                                     "ray_alone_median_s": round(statistics.median(floors), 3), "actors": actors}
    print("OK: ours is not slower than the baseline on any backend" if ok else "FAILED: ours is slower than the baseline")
    print(orjson.dumps({"baseline": args.baseline, "same_work": " ".join(like) or "default", "repeats": args.repeats,
                        "backends": figures, "ok": ok}).decode())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
