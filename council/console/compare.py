"""Two gradings of the same rows side by side, as the command line prints them: ``council diff`` of two runs and
``council crossjudge`` of a run and another grader."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape

from council.console.output import pct, say, table

if TYPE_CHECKING:
    from council.tools.crossjudge import CrossJudgeResult


def print_diff(d: dict[str, Any]) -> None:
    """Whether the runs are comparable (or why not), each model's score in both, and the rows whose verdict
    changed (the first 20)."""
    if d["comparable"]:
        say(f"[green]comparable[/green]: same prompts, rules, data and judges ({d['rows_compared']} rows)")
    else:
        say("[yellow]not comparable[/yellow]: " + escape(", ".join(m.get("why", m["field"]) for m in d["mismatches"])))
    table("per-model score", ("model", d["a"], d["b"], "change"),
          [(model, pct(m["a"]), pct(m["b"]), "-" if m["delta"] is None else f"{100 * m['delta']:+.1f}")
           for model, m in d["models"].items()])
    if d.get("responses_changed"):
        say(f"[yellow]responses differ[/yellow]: the runs graded other answers; {d['responses_changed_rows']} of "
            f"the changed verdicts below are on a row whose response changed (marked *)")
    say(f"{len(d['changed_rows'])} row verdicts changed")
    for row in d["changed_rows"][:20]:
        mark = " *" if row.get("response_changed") else ""
        say(f"  {row['row_id']}: {row['a']} -> {row['b']}{mark}", markup=False)
    if len(d["changed_rows"]) > 20:
        say(f"  ... and {len(d['changed_rows']) - 20} more (--json lists them all)", markup=False)


def print_crossjudge(result: CrossJudgeResult, run_id: str) -> None:
    """The rows paired and where the report went; then each statistic with its interval and its reading."""
    report = result.report
    say(f"cross-judge {report['grader']} on {run_id}: {report['paired_rows']} of {report['rows']} rows paired "
        f"({result.asked} votes asked, {result.archived} from the report's archive) -> {result.folder}", markup=False)

    def line(label: str, stat: dict | None, value: str = "value") -> None:
        if stat is None:
            say(f"  {label}: n/a", markup=False)
            return
        low, high = stat.get(f"{value}_low", stat.get("low")), stat.get(f"{value}_high", stat.get("high"))
        extra = f", no-preference up to {stat['null_high']:.2f}" if stat.get("null_high") is not None else ""
        reading = (stat.get("reading") or "n/a").replace("_", " ")
        number = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        say(f"  {label}: {number(stat.get(value))} [{number(low)}, {number(high)}]{extra}: {reading}", markup=False)
        say(f"    {stat.get('rule', '')}", markup=False)

    line("mean_delta", report["mean_delta"])
    line("rank_correlation (Kendall tau-b)", report["rank_correlation"], "kendall")
    line("rank_correlation (Spearman)", report["rank_correlation"], "spearman")
    line("provider_spread", report["provider_spread"])
    line("group_spread", report["group_spread"])
