"""The benchmarks page of the docs site is rendered, when the site is built, from the bench scripts' output files:
a page that is not what the results render to (a figure typed, a committed copy, a results file left out) fails
here."""

from __future__ import annotations

import json

from bench.support import render_docs
from tests.docs._site import DOCS, hook, nav_pages


def test_the_benchmark_page_is_rendered_from_the_bench_results() -> None:
    assert hook().generated_pages()["benchmarks.md"] == render_docs.render()
    assert "benchmarks.md" in nav_pages()
    assert not (DOCS / "benchmarks.md").exists(), "the page is generated at build time: remove the committed copy"


def test_every_results_file_is_on_the_page_with_its_machine_and_date() -> None:
    page = render_docs.render()
    results = sorted(render_docs.RESULTS.glob("*.json"))
    assert results and {p.name for p in results} <= set(render_docs.SECTIONS), "a results file no section renders"
    for path in results:
        machine = json.loads(path.read_text())["machine"]
        assert f"{machine['cpus']} cores, {machine['memory_gb']} GiB" in page and f"run on {machine['date']}" in page


def test_every_figure_of_a_large_regrade_comes_from_its_file() -> None:
    figures = {"rows": 1234, "small_rows": 56,
               "machine": {"cpus": 3, "memory_gb": 7.5, "platform": "p", "python": "3.11", "date": "2000-01-02"},
               "sync": {"small": {"rows": 56, "rows_per_s": 9.5, "peak_rss_mb": 100.25, "judge_cost_usd": 1.5,
                                  "disk_bytes_per_row": 777},
                        "large": {"rows": 1234, "rows_per_s": 19.5, "peak_rss_mb": 111.5, "judge_cost_usd": 33.5,
                                  "disk_bytes_per_row": 888},
                        "rss_bytes_per_extra_row": 321, "throughput_ratio": 2.0},
               "million": {"peak_rss_mb": 4321, "disk_gb": 8.9, "embedded_provider_hours": 7.6, "tier_limits": {}}}
    page = render_docs.large_regrade(figures)
    for shown in ("1,234", "19.5", "111.5", "321", "33.50", "888", "4,321", "8.9 GB", "7.6 h", "2000-01-02"):
        assert shown in page, shown
