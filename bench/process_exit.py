"""How long ``council run``'s processes take to end once their work is done: as shipped (``gc.freeze()`` before
the exit, :mod:`council.core.process_exit`) against the same checkout exiting plainly, measured in the same run.

Each measurement is one ``python -m council.cli run --backend local --timings --progress-every 0`` on the shipped
sample, in a new empty folder. **baseline**: this checkout with ``exit_process`` replaced by a plain
``raise SystemExit(code)`` (a ``sitecustomize`` module on ``PYTHONPATH``, which the processes the command starts
inherit: the report's child and the embedded provider's process). **ours**: this checkout as it is. The two
sides alternate (baseline, ours, ours, baseline, ...) ``--repeats`` times; medians are compared.

Figures per side: the command's wall time (start to exit); its **tail**, from the arrival of the last line it
prints (the ``total`` line of its timings) to its exit, which is the interpreter's own shutdown; and, from its
``--timings``, the ``report`` phase (it ends when the report's child has exited) and the ``provider stop`` phase
(it ends when the provider's process has exited).

Run it from the repository root::

    python bench/process_exit.py                  # 5 alternations, about a minute
    python bench/process_exit.py --repeats 10

The check (exit 1 when it fails): ours' median tail is below the baseline's.

Output: one line per measurement, a summary, and as the LAST line one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
PLAIN_EXIT = '''\
import council.core.process_exit as process_exit


def _plain_exit(code):
    raise SystemExit(code)


process_exit.exit_process = _plain_exit
'''
PHASE = re.compile(r"^\s+(report|provider stop)\s+[\d.]+ s\s+([\d.]+) s\s*$")


def measure(side: str, plain_dir: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    paths = [str(ROOT), *([str(plain_dir)] if side == "baseline" else [])]
    env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "council.cli", "run", "--backend", "local", "--timings", "--progress-every", "0"]
    with tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        last_line_at, phases = start, {}
        for line in proc.stdout:
            last_line_at = time.perf_counter()
            if m := PHASE.match(line):
                phases[m.group(1)] = float(m.group(2))
        code = proc.wait(timeout=600)
        end = time.perf_counter()
    if code != 0 or len(phases) != 2:
        raise SystemExit(f"{side}: the run exited with {code} (phases read: {sorted(phases)})")
    return {"wall_s": end - start, "tail_s": end - last_line_at, "report_s": phases["report"],
            "provider_stop_s": phases["provider stop"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="alternations (default: %(default)s)")
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"baseline": [], "ours": []}
    with tempfile.TemporaryDirectory() as plain_dir:
        Path(plain_dir, "sitecustomize.py").write_text(PLAIN_EXIT, encoding="utf-8")
        for i in range(args.repeats):
            for side in ("baseline", "ours") if i % 2 == 0 else ("ours", "baseline"):
                r = measure(side, Path(plain_dir))
                results[side].append(r)
                print(f"#{i + 1} {side:8}  wall {r['wall_s']:5.2f} s  tail {r['tail_s']:.3f} s  report "
                      f"{r['report_s']:.2f} s  provider stop {r['provider_stop_s']:.2f} s", flush=True)
    figures: dict[str, dict[str, float]] = {
        side: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for side, rs in results.items()}
    b, o = figures["baseline"], figures["ours"]
    faster_tail = sum(rb["tail_s"] > ro["tail_s"] for rb, ro in zip(results["baseline"], results["ours"]))
    for k in b:
        print(f"{k[:-2]:14} median baseline {b[k]:.3f} s  ours {o[k]:.3f} s  saved {b[k] - o[k]:+.3f} s")
    print(f"ours' tail shorter in {faster_tail} of {args.repeats} alternations; wall baseline / ours = "
          f"{b['wall_s'] / o['wall_s']:.3f}x")
    ok = o["tail_s"] < b["tail_s"]
    print("OK" if ok else "FAILED: ours' tail is not shorter than the baseline's")
    print(orjson.dumps({"repeats": args.repeats, "medians": figures, "tail_shorter_in": faster_tail,
                        "ratio_wall": round(b["wall_s"] / o["wall_s"], 3),
                        "ratio_tail": round(b["tail_s"] / o["tail_s"], 3), "ok": ok}).decode())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
