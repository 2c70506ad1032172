"""The docs site's benchmarks page, rendered from the bench scripts' output files (``bench/results/*.json``) when
the site is built (``docs/hooks/build.py``), never typed or committed: a figure on the page is the one the bench
wrote, with the machine and the date it ran. ``tests/test_benchmark_page.py`` checks it.

    python bench/support/render_docs.py          # print the page
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"

HEAD = """# Benchmarks

Every figure on this page is rendered, when the site is built, from a bench script's output file under
`bench/results/`; none is typed by hand. Each section names the command that wrote it,
and the machine and date it ran on. Rerun the command to measure your own machine.
"""


def _machine(m: dict) -> str:
    return (f"{m['cpus']} cores, {m['memory_gb']} GiB, {m['platform']}, Python {m['python']}, run on {m['date']}")


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def large_regrade(f: dict) -> str:
    lines = ["## A large regrade", "",
             f"`python bench/large_regrade.py --rows {f['rows']}`: the shipped sample copied to {_n(f['rows'])} rows, "
             "graded by `council run --backend local --simulate` (the embedded provider in its own process), "
             f"synchronous and batch, each beside a {_n(f['small_rows'])}-row run measured in the same bench.", "",
             f"Machine: {_machine(f['machine'])}.", "",
             "| transport | rows | rows/s | peak RSS of the command (MB) | RSS per extra row (B) | judge cost (USD) "
             "| disk per row (B) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for transport in ("sync", "batch"):
        t = f.get(transport)
        if not t:
            continue
        for size in ("small", "large"):
            r = t[size]
            per_row = _n(t["rss_bytes_per_extra_row"]) if size == "large" else ""
            lines.append(f"| {transport} | {_n(r['rows'])} | {_n(r['rows_per_s'], 1)} | {_n(r['peak_rss_mb'], 1)} "
                         f"| {per_row} | {_n(r['judge_cost_usd'], 2)} | {_n(r['disk_bytes_per_row'])} |")
    if "batch_cost_ratio" in f:
        lines += ["", f"Batch judge cost is {f['batch_cost_ratio']:.3f} of synchronous on the same rows."]
    m = f.get("million")
    if m:
        lines += ["", "### What 1,000,000 rows need", "",
                  f"- **Memory:** about {_n(m['peak_rss_mb'])} MB of peak RSS for the command (its peak at "
                  f"{_n(f['rows'])} rows plus the measured growth per row).",
                  f"- **Disk:** about {m['disk_gb']:.1f} GB for the run folder (its bytes per row at {_n(f['rows'])} "
                  "rows, plain archive; `--compress-archive` keeps it as zstd frames).",
                  f"- **Time on the embedded provider here:** about {m['embedded_provider_hours']:.1f} h (the "
                  "machine's own speed: no provider limit binds)."]
        t = m.get("tier_limits") or {}
        if t:
            by = ", ".join(f"{v} {h:,.1f} h" for v, h in sorted(t["by_vendor_hours"].items(), key=lambda kv: -kv[1]))
            lines.append(f"- **Time at the providers' first paid tiers:** at least {t['hours']:,.1f} h, bound by "
                         f"{t['limiting_vendor']} (`council estimate`'s lower bound for round two on "
                         f"{t['round_two_share']:.1%} of the rows, at the limits in `bench/support/tier_limits.json`, "
                         f"read {t['limits_read']}, each with its page). Per vendor: {by}"
                         + (f"; no figure on the page of {', '.join(t['no_figure'])} (their consoles show it), so "
                            "they are counted as unlimited" if t.get("no_figure") else "")
                         + ". Higher tiers, or the batch transport (whose queue is not the per-minute quota), "
                         "shorten it.")
    return "\n".join(lines) + "\n"


def batch_cost(f: dict) -> str:
    modes = f["modes"]
    lines = ["## Batch against synchronous, on the sample", "",
             "`python bench/batch_cost.py --save`: the shipped sample graded three ways by the embedded provider: "
             "synchronous (one row a request: no limit binds), synchronous with every request limit binding (rows "
             "packed as a batch request packs them), and `--transport batch`.", "",
             f"Machine: {_machine(f['machine'])}.", "",
             "| mode | judge cost (USD) | batch / this | consensus rows that differ from batch |",
             "|---|---:|---:|---:|"]
    for mode, r in modes.items():
        ratio = f["ratios"].get(f"batch/{mode}")
        differ = (f["agreement"].get(mode) or {}).get("rows_changed")
        lines.append(f"| {mode} | {_n(r['judge_cost_usd'], 4)} | {'' if ratio is None else f'{ratio:.3f}'} "
                     f"| {'' if differ is None else _n(differ)} |")
    return "\n".join(lines) + "\n"


def deliberation_cost(f: dict) -> str:
    lines = ["## What deliberation costs", "",
             "`python bench/deliberation_cost.py --save`: the shipped sample at each seed, judge cost over its own "
             "round one's (the same run), and verdicts against `--deliberate all`'s. `before` is `--deliberate "
             "disputed` as it was (judge-v3, the whole audit share); `disputed` is the default (judge-v4, the "
             "sequential audit, an audited row asking its cheapest members until its change is decided).", "",
             f"Machine: {_machine(f['machine'])}.", "",
             "| world | seed | all | before | disputed | disputed: same verdicts as all | audited rows (changed) "
             "| audit's 95% bound | round-two prompt tokens a deliberated row / round one's |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for world, seeds in f["worlds"].items():
        for seed, g in seeds.items():
            d, audit = g["disputed"], g["disputed"]["audit"]
            lines.append(
                f"| {world} | {seed} | {g['all']['ratio_to_round1']:.3f}x | {g['before']['ratio_to_round1']:.3f}x "
                f"| {d['ratio_to_round1']:.3f}x | {d['agreement_with_all']['share']:.2%} | {audit['rows']} "
                f"({audit['changed']}) | {audit['ci_high']} | {d['prompt_tokens']['per_row']['ratio']:.2f}x |")
    return "\n".join(lines) + "\n"


def batch_in_flight(f: dict) -> str:
    small, large = f["sizes"]
    lines = ["## Rows waiting on the batch APIs", "",
             f"`python bench/batch_in_flight.py --rows {large['rows']} --small {small['rows']}`: `council run "
             "--transport batch` on the shipped sample copied to each size, against the embedded provider in its own "
             "process, whose batches stay open: every row taken in waits, up to `batch.rows_in_flight`. The command's "
             "resident memory is read once its round-one batches are all submitted.", "",
             f"Machine: {_machine(f['machine'])}.", "",
             "| rows | rows in flight | votes waiting in batches | RSS of the command (MB) |",
             "|---:|---:|---:|---:|"]
    for s in (small, large):
        lines.append(f"| {_n(s['rows'])} | {_n(s['rows_in_flight'])} | {_n(s['votes'])} | {_n(s['rss_mb'], 1)} |")
    lines += ["", f"A row in flight costs {_n(f['bytes_per_row_in_flight'])} B of memory ({_n(f['bytes_per_vote'])} B "
                  f"a waiting vote), against a bound of {_n(f['max_bytes_per_row_in_flight'])} B: its prompts, its "
                  "votes' tasks and its records wait on disk."]
    return "\n".join(lines) + "\n"


SECTIONS = {"large_regrade.json": large_regrade, "batch_cost.json": batch_cost,
            "batch_in_flight.json": batch_in_flight, "deliberation_cost.json": deliberation_cost}


def render() -> str:
    parts = [HEAD]
    for name, section in SECTIONS.items():
        path = RESULTS / name
        if path.exists():
            parts.append(section(json.loads(path.read_text())))
    return "\n".join(parts)


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
