"""``docs/benchmarks.md`` is the page rendered from the bench scripts' output files: a figure typed on it, or a
result file a bench rewrote without the page, fails here."""

from __future__ import annotations

from bench.support import render_docs


def test_the_benchmark_page_is_rendered_from_the_bench_results() -> None:
    assert render_docs.PAGE.read_text() == render_docs.render(), "run python bench/support/render_docs.py"


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
