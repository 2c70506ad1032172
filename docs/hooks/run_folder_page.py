"""The run folder's reference: each file, and each top-level field of ``summary.json``, from
``council.store.run_fields``."""

from __future__ import annotations

from markdown_text import cell

from council.store.run_fields import FILES, SUMMARY, Described


def _table(head: str, entries: dict[str, Described]) -> list[str]:
    out = [f"| {head} | what it holds | when it is there |", "| --- | --- | --- |"]
    out += [f"| `{name}` | {cell(what)} | {cell(when or 'every run')} |"
            for name, (what, when) in entries.items()]
    return out


def run_folder_page() -> str:
    out = ["# The run folder and summary.json", "",
           "<!-- Generated at build time from council/store/run_fields.py: do not edit by hand. -->", "",
           "Each run writes `runs/<run_id>/` (`--runs-dir` moves the root) and never overwrites one. Records are "
           "appended and flushed as each call returns; the summary is computed by re-reading the archive, so "
           "`council rescore RUN` rebuilds `verdicts.jsonl`, `summary.json` and the tables from the archive alone.",
           "", "## Files", "", *_table("file", FILES), "",
           "The columns of `scores.csv` and `leaderboard.csv`: [tables for data tools]"
           "(../statistics.md#tables-for-data-tools).", "",
           "## summary.json", "",
           "Every top-level field, under stable names. [Statistics](../statistics.md) explains how the figures "
           "are computed and read.", "", *_table("field", SUMMARY)]
    return "\n".join(out) + "\n"
