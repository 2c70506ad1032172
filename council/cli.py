"""The ``council`` command: ``run`` (the shipped sample by default), ``grade`` (any responses file) and
``sim`` (the embedded provider as a standalone server), with ``estimate``, ``loadtest``, ``rescore`` and
``diff``; ``serve`` (the grading service) and ``submit`` (a rows file to it: with ``--wait``, the exit code
says how the job ended, as below).

Exit codes (every failure is one short message on stderr, never a traceback):

==== =====================================================================================
0    done: every row graded (``diff``: the runs are comparable)
1    an unexpected internal error (its traceback goes to the run's log, not the screen)
2    bad input or options
3    stopped by the budget (resumable with a larger ``--budget-usd``)
4    finished, but some rows are not graded (calls failed after their retries, or refused)
5    a provider could not be used (unreachable, refused the key, wrong URL or model)
6    ``diff``: the runs are not comparable
130  interrupted (Ctrl-C; a second Ctrl-C stops at once) - resumable
143  terminated (SIGTERM) - resumable
==== =====================================================================================
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

import bank
from council import importers
from council.core.errors import ConfigError, CouncilError, InputError, ProviderUnavailable
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig, validation_problems
from council.run.runner import BACKENDS, RunHooks, RunRequest, RunResult, provider_endpoint, resume_council, run_council
from council.scoring.scoring import WARN_RATE
from council.tools import loadtest

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, EXIT_NOT_COMPARABLE = 0, 1, 2, 3, 4, 5, 6
EXIT_SIGNAL = {"interrupt": 128 + signal.SIGINT, "terminate": 128 + signal.SIGTERM}
# What --resume may change: where and how the calls are made, never what the run is.
RESUME_MAY_SET = frozenset({"command", "resume", "backend", "budget_usd", "ray_address", "provider_url", "runs_dir",
                            "shards"})


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _fraction(text: str) -> float:
    value = _positive(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value

console = Console(stderr=True)
out = Console()


def _grading_args(p: argparse.ArgumentParser, *, responses_required: bool) -> None:
    p.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, help="question bank JSONL (default: shipped sample)")
    if responses_required:
        p.add_argument("--responses", type=Path, required=True, help="responses JSONL to grade")
    else:
        p.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES,
                       help="responses JSONL (default: shipped sample responses)")
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run folders go (default: ./runs)")
    p.add_argument("--run-id", help="run folder name (default: a timestamp); an existing run is never overwritten")
    p.add_argument("--config", type=Path, help="council config JSON: roster, quorum, per-vendor limits and prices")
    p.add_argument("--vendor-map", type=Path, metavar="FILE",
                   help="JSON object mapping a model id (or its prefix before '/') to its vendor; wins over the "
                        "built-in rules and the config's vendor_map (needed for ids of no known family)")
    p.add_argument("--seed", type=int, help="seed for the letter shuffle and the embedded provider (default 0)")
    p.add_argument("--backend", choices=BACKENDS, default="ray", help="ray (default) or local (in-process, no Ray)")
    p.add_argument("--quorum", type=int, help="valid votes needed for a consensus (default 3)")
    p.add_argument("--no-self-exclusion", action="store_true",
                   help="let a vendor's judge grade its own vendor's models (audits only; recorded in the manifest)")
    p.add_argument("--no-containment", action="store_true",
                   help="audit only: send responses and peers' reasons unfenced (the judge-v1 layout), to measure "
                        "how far planted injections steer judges without containment (recorded in the manifest)")
    p.add_argument("--shadow-self", action="store_true",
                   help="self-preference audit: the excluded own-vendor judge also grades round one (never counted)")
    p.add_argument("--provider-url", help="send every vendor's calls to this OpenAI-compatible base URL (ending in /v1) "
                   "instead of starting the embedded provider")
    p.add_argument("--simulate", action="store_true",
                   help="grade with the embedded provider (simulated judges, no real model is asked); the default "
                        "only for the shipped sample")
    p.add_argument("--batch-audit", type=_fraction, metavar="FRACTION",
                   help="re-ask this seeded share of batched votes alone and report batched-vs-solo agreement")
    p.add_argument("--ray-address", help="join this Ray cluster instead of starting a local instance")
    p.add_argument("--sim-config", type=Path, help="JSON behaviour file for the embedded provider")
    p.add_argument("--budget-usd", type=_positive, help="stop issuing calls before projected spend would exceed this; "
                   "the run stays resumable with a larger budget")
    p.add_argument("--reuse-from", action="append", default=[], metavar="RUN_ID",
                   help="serve votes whose request is archived in this earlier run from its archive (repeatable)")


def _scale_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--compress-archive", action="store_true",
                   help="write the run's archive and rows as zstd frames (about 7x smaller; every command reads "
                        "them as it reads plain files; resuming keeps compressing)")
    p.add_argument("--shards", type=_count, metavar="N", help="spread the rows over N shard workers (Ray actors placed "
                   "across the cluster's nodes, one CPU each) that share each vendor's one quota; the run folder "
                   "stays on this node (default: one coordinator in this process)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="council", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="grade a benchmark run with the council (default: the shipped sample)")
    _grading_args(run, responses_required=False)
    _scale_args(run)
    run.add_argument("--resume", metavar="RUN_ID", help="continue this run from its archive (after a crash or a stop)")
    run.add_argument("--models", help="comma-separated models under test to ask every bank item (predict-then-answer) "
                     "instead of grading a responses file")
    grade = sub.add_parser("grade", help="grade any responses file, ours or another benchmark's")
    _grading_args(grade, responses_required=True)
    _scale_args(grade)
    importers.add_arguments(grade)
    est = sub.add_parser("estimate", help="requests, tokens, cost and the quota-bound time T* of a run, no calls made")
    _grading_args(est, responses_required=False)
    est.add_argument("--models", help="comma-separated models under test (estimate elicitation too)")
    est.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    loadtest.add_parser(sub)
    rescore = sub.add_parser("rescore", help="rebuild verdicts.jsonl and summary.json from a run's archive")
    rescore.add_argument("run_id")
    rescore.add_argument("--runs-dir", type=Path, default=Path("runs"))
    diff = sub.add_parser("diff", help="whether two runs are comparable, and their score and verdict changes")
    diff.add_argument("run_a")
    diff.add_argument("run_b")
    diff.add_argument("--runs-dir", type=Path, default=Path("runs"))
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    cj = sub.add_parser("crossjudge", help="re-score a run with another grader and report whether its scores survive "
                        "(mean delta, rank correlation, family and target preference)")
    cj.add_argument("run_id", help="the run to re-score (its folder under --runs-dir); its results are never changed")
    cj.add_argument("--judge", required=True, metavar="MODEL|single:VENDOR",
                    help="a judge model that grades every row blind (asked through the run's provider), or "
                         "single:<vendor>: that council member's round-one votes alone (no calls)")
    cj.add_argument("--name", help="the report's folder under <run>/crossjudge/ (default: from --judge)")
    cj.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run folders are (default: ./runs)")
    cj.add_argument("--provider-url", help="OpenAI-compatible base URL for the judge (needed unless the run was "
                    "simulated: then the embedded provider plays it)")
    cj.add_argument("--resamples", type=_count, help="bootstrap resamples (default: the run's)")
    cj.add_argument("--json", action="store_true", help="print the report as one JSON object")
    serve = sub.add_parser("serve", help="the grading service: other benchmarks submit jobs over HTTP")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    serve.add_argument("--tokens", type=Path, required=True, metavar="FILE",
                       help="JSON mapping each tenant to the SHA-256 of its bearer token (and its limits)")
    serve.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where the jobs' run folders go")
    serve.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, help="bank for jobs that bring none")
    serve.add_argument("--config", type=Path, help="council config JSON: roster, per-vendor limits and prices")
    serve.add_argument("--provider-url", help="OpenAI-compatible base URL every job's judges are asked at")
    serve.add_argument("--simulate", action="store_true", help="grade with the embedded provider (simulated)")
    serve.add_argument("--sim-config", type=Path, help="JSON behaviour file for the embedded provider")
    serve.add_argument("--max-body-mb", type=_positive, default=64.0, help="largest submission accepted (default 64)")
    submit = sub.add_parser("submit", help="submit a rows file to a grading service (council serve)",
                            formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SUBMIT_EPILOG)
    submit.add_argument("file", type=Path, help="rows JSONL (sent as NDJSON, streamed from disk)")
    submit.add_argument("--url", required=True, help="the service's base URL, e.g. http://127.0.0.1:8080")
    submit.add_argument("--token-env", default="COUNCIL_SERVICE_TOKEN", metavar="VAR",
                        help="environment variable holding the tenant's bearer token (default COUNCIL_SERVICE_TOKEN)")
    submit.add_argument("--wait", action="store_true", help="follow the job to its end: stream its verdicts as they "
                        "are decided, progress on stderr, and exit with how it ended")
    submit.add_argument("--verdicts", type=Path, metavar="OUT", help="write the streamed verdicts here as NDJSON "
                        "(implies --wait; default: stdout)")
    submit.add_argument("--idempotency-key", metavar="KEY", help="submitting again with the same key gives the same job")
    submit.add_argument("--budget-usd", type=_positive, help="the job stops before its spend would exceed this")
    submit.add_argument("--format", default="jsonl", help="the rows' format (default jsonl: this project's rows)")
    submit.add_argument("--bank", type=Path, help="bank JSONL sent with the job (default: the service's bank)")
    submit.add_argument("--callback-url", metavar="URL", help="the service POSTs the job's summary here when it ends")
    sim = sub.add_parser("sim", help="serve the embedded OpenAI-compatible provider")
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=8000)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--config", type=Path, help="JSON behaviour file (vendors, quotas, faults)")
    sim.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, help="bank whose responses' truth it knows")
    sim.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES, help="responses with gold verdicts")
    return parser


def council_config(args: argparse.Namespace) -> CouncilConfig:
    """The config file (if any) with the command-line flags that were given on top."""
    overrides: dict[str, Any] = {k: v for k, v in (("seed", args.seed), ("quorum", args.quorum),
                                                   ("budget_usd", args.budget_usd),
                                                   ("batch_audit", getattr(args, "batch_audit", None))) if v is not None}
    if args.vendor_map:
        overrides["vendor_map"] = importers.load_vendor_map(args.vendor_map)
    if args.no_self_exclusion:
        overrides["self_exclusion"] = False
    if args.shadow_self:
        overrides["shadow_self"] = True
    if getattr(args, "compress_archive", False):
        overrides["compress_archive"] = True
    if args.config:
        config = CouncilConfig.from_file(args.config, **overrides)
    else:
        try:
            config = CouncilConfig(**overrides)
        except ValidationError as exc:
            raise ConfigError(f"bad options: {validation_problems(exc)}") from exc
    if args.no_containment:
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"containment": False})})
    return config


def provider_url(args: argparse.Namespace) -> str | None:
    """Where the judges are asked: ``--provider-url``, or the embedded provider (None) with ``--simulate``
    or for the shipped sample. A user's own files are never graded by the simulator unless asked."""
    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if args.provider_url or args.simulate:
        return args.provider_url
    shipped = Path(args.bank) == bank.SAMPLE_BANK and (Path(args.responses) == bank.SAMPLE_RESPONSES or _models(args))
    if not shipped and getattr(args, "resume", None) is None:
        raise ConfigError("no provider: pass --provider-url URL to grade with real judges, or --simulate to grade "
                          "with the embedded provider's simulated judges (no real model is asked)")
    return None


def _models(args: argparse.Namespace) -> list[str]:
    return [m.strip() for m in (getattr(args, "models", None) or "").split(",") if m.strip()]


def _estimate(args: argparse.Namespace) -> int:
    from council.tools.estimate import estimate

    items = bank.load_bank(args.bank)
    models = _models(args)
    config = council_config(args)
    rows = [] if models else bank.load_responses(args.responses, items, vendor_map=config.vendor_map)
    est = estimate(config, {i.id: i for i in items}, rows, models)
    if args.json:
        out.print_json(data=est.as_dict())
        return 0
    table = Table(title=f"estimate: {est.rows} rows")
    for col in ("vendor", "votes", "batch", "reqs", "tok in", "tok out", "cost $", "max rpm", "min"):
        table.add_column(col, justify="left" if col == "vendor" else "right", no_wrap=True)
    for v in est.vendors:
        table.add_row(v.vendor, str(v.votes), str(v.batch_size), str(v.requests), str(v.input_tokens),
                      str(v.output_tokens), f"{v.cost_usd:.4f}", f"{v.sustainable_rpm:.0f}" if v.sustainable_rpm else "∞",
                      f"{v.minutes:.1f}")
    out.print(table)
    d = est.as_dict()
    bound = f"{est.t_star_s:.1f} s" if est.t_star_s else "none (no vendor has a limit)"
    out.print(f"requests {d['requests']}, cost ${d['cost_usd']:.4f}, quota lower bound T* = {bound}")
    if est.unpriced:
        out.print(f"[yellow]no price[/yellow] for {', '.join(est.unpriced)}: their cost is counted as $0 and "
                  "--budget-usd will refuse to run until they are priced", highlight=False, soft_wrap=True)
    return 0


def _resume_conflicts(args: argparse.Namespace) -> list[str]:
    """The options given with --resume that would change what the run is (they were fixed when it started)."""
    defaults = vars(build_parser().parse_args([args.command]))
    return sorted("--" + k.replace("_", "-") for k, v in vars(args).items()
                  if k not in RESUME_MAY_SET and v != defaults.get(k))


def _grade(args: argparse.Namespace) -> int:
    command = " ".join(["council", *sys.argv[1:]])
    resume = getattr(args, "resume", None)
    if resume is not None:
        conflicts = _resume_conflicts(args)
        if conflicts:
            raise ConfigError(f"--resume continues run {resume} exactly as it was started; {', '.join(conflicts)} "
                              f"would change it (start a new run to grade with other settings)")
    imported, skipped = None, []
    config = council_config(args) if resume is None else None
    url = provider_url(args) if resume is None else None
    if args.command == "grade":
        result = importers.load_from_args(args, bank.load_bank(args.bank), vendor_map=config.vendor_map)
        if result.problems and not args.skip_invalid:
            raise InputError([*result.problems, f"nothing was graded; fix the records, or pass --skip-invalid to "
                                                f"grade the {len(result.rows)} valid ones"])
        for problem in result.problems[:20]:
            console.print(f"[yellow]skipped:[/yellow] {escape(problem)}", highlight=False, soft_wrap=True)
        if len(result.problems) > 20:
            console.print(f"[yellow]... and {len(result.problems) - 20} more problems[/yellow]")
        console.print(f"imported {len(result.rows)} rows from {escape(str(args.responses))} ({args.format}; bank ids: "
                      f"{escape(result.ids)})", highlight=False, soft_wrap=True)
        imported, skipped = result.rows, result.problems
    if resume is None:
        if _models(args) and Path(args.responses) != bank.SAMPLE_RESPONSES:
            raise ConfigError("--models asks the models for answers; it cannot be combined with --responses")
        req = RunRequest(
            bank=args.bank, responses=args.responses, runs_dir=args.runs_dir, run_id=args.run_id,
            backend=args.backend, provider_url=url, ray_address=args.ray_address,
            config=config, sim_config=args.sim_config, reuse_from=args.reuse_from, command=command,
            models=_models(args), rows=imported, skipped_inputs=skipped, shards=args.shards or 0,
        )
    with Progress(
        TextColumn("[bold]grading"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"), TimeElapsedColumn(),
        TimeRemainingColumn(), console=console, transient=False, disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("rows", total=None)
        hooks = RunHooks(on_start=lambda n: progress.update(task, total=n), on_progress=lambda n: progress.advance(task, n))
        if resume is None:
            result = _with_signals(lambda stop: run_council(req, stop=stop, hooks=hooks))
        else:
            result = _with_signals(lambda stop: resume_council(
                args.runs_dir, resume, backend=args.backend, provider_url=args.provider_url,
                ray_address=args.ray_address, shards=args.shards, budget_usd=args.budget_usd, command=command,
                stop=stop, hooks=hooks))
    return _outcome(result)


def _outcome(result: RunResult) -> int:
    """Print the run's result and say how it ended; the exit code says it too."""
    if result.summary["rows"] or result.error is None:
        print_result(result)
    again = f"council run --resume {result.run_dir.name}"
    reason = result.stop.reason if result.stop else None
    if result.error is not None:
        console.print(f"[red]stopped: a provider cannot be used:[/red] {escape(str(result.error))}. Everything "
                      f"answered is archived; fix the provider settings, then `{again}`", highlight=False,
                      soft_wrap=True)
        return EXIT_PROVIDER
    if reason in EXIT_SIGNAL:
        console.print(f"[yellow]stopped ({reason})[/yellow]: {result.not_graded} rows not graded; every answered call "
                      f"is archived. Continue with `{again}`", highlight=False, soft_wrap=True)
        return EXIT_SIGNAL[reason]
    if result.stopped_by_budget:
        console.print(f"[yellow]stopped by the budget[/yellow] (${result.budget.spent_usd:.4f} spent, {result.not_graded} "
                      f"rows not graded); everything is archived: continue with `{again} --budget-usd LARGER`",
                      highlight=False, soft_wrap=True)
        return EXIT_BUDGET
    if result.not_graded:
        console.print(f"[red]{result.not_graded} rows not graded[/red] (calls failed after their retries, or rows were "
                      f"refused; see diagnostics); they are not scored. Ask failed calls again with `{again}`",
                      highlight=False, soft_wrap=True)
        return EXIT_NOT_GRADED
    return EXIT_OK


def _with_signals(start: Callable[[StopControl], Awaitable[RunResult]]) -> RunResult:
    """Run to the end, or to a clean stop: the first Ctrl-C or SIGTERM issues nothing new and lets calls in
    flight finish (up to the grace period) and be archived; a second one exits at once."""
    stop = StopControl()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            stop.request("interrupt" if signum == signal.SIGINT else "terminate")
            console.print(f"[yellow]stopping[/yellow]: no new calls; calls in flight have {stop.grace_s:.0f} s to "
                          "finish and be archived (press Ctrl-C again to stop at once)", highlight=False)
            return
        console.print("[red]stopped at once[/red]: calls in flight are lost; the archive is intact", highlight=False)
        sys.stderr.flush()
        os._exit(EXIT_SIGNAL["interrupt" if signum == signal.SIGINT else "terminate"])

    async def main() -> RunResult:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await start(stop)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    return asyncio.run(main())


def _rescore(args: argparse.Namespace) -> int:
    from council.scoring.scoring import rescore
    from council.store.runfolder import RunFolder

    summary = rescore(RunFolder.open_run(args.runs_dir, args.run_id))
    out.print(f"rescored {args.run_id}: {summary['rows']} rows, {len(summary['models'])} models")
    _print_partial(summary)
    _print_warnings(summary)
    return 0


def _crossjudge(args: argparse.Namespace) -> int:
    from council.tools.crossjudge import crossjudge

    result = asyncio.run(crossjudge(args.runs_dir, args.run_id, args.judge, name=args.name,
                                    provider_url=args.provider_url, resamples=args.resamples))
    report = result.report
    if args.json:
        out.print_json(data=report)
        return 0
    out.print(f"cross-judge {report['grader']} on {args.run_id}: {report['paired_rows']} of {report['rows']} rows paired "
              f"({result.asked} votes asked, {result.archived} from the report's archive) -> {result.folder}",
              highlight=False, soft_wrap=True)

    def line(label: str, stat: dict | None, value: str = "value") -> None:
        if stat is None:
            out.print(f"  {label}: n/a", highlight=False)
            return
        low, high = stat.get(f"{value}_low", stat.get("low")), stat.get(f"{value}_high", stat.get("high"))
        extra = f", no-preference up to {stat['null_high']:.2f}" if stat.get("null_high") is not None else ""
        reading = (stat.get("reading") or "n/a").replace("_", " ")
        number = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        out.print(f"  {label}: {number(stat.get(value))} [{number(low)}, {number(high)}]{extra}: {reading}",
                  highlight=False, soft_wrap=True)
        out.print(f"    {stat.get('rule', '')}", highlight=False, soft_wrap=True)

    line("mean_delta", report["mean_delta"])
    line("rank_correlation (Kendall tau-b)", report["rank_correlation"], "kendall")
    line("rank_correlation (Spearman)", report["rank_correlation"], "spearman")
    line("provider_spread", report["provider_spread"])
    line("group_spread", report["group_spread"])
    return 0


def _diff(args: argparse.Namespace) -> int:
    from council.scoring.diff import diff_runs
    from council.store.runfolder import RunFolder

    d = diff_runs(RunFolder.open_run(args.runs_dir, args.run_a), RunFolder.open_run(args.runs_dir, args.run_b))
    if args.json:
        out.print_json(data=d)
        return EXIT_OK if d["comparable"] else EXIT_NOT_COMPARABLE
    if d["comparable"]:
        out.print(f"[green]comparable[/green]: same prompts, rules, data and judges ({d['rows_compared']} rows)")
    else:
        out.print("[yellow]not comparable[/yellow]: " + ", ".join(m.get("why", m["field"]) for m in d["mismatches"]),
                  highlight=False, soft_wrap=True)
    table = Table(title="per-model score")
    for col in ("model", d["a"], d["b"], "change"):
        table.add_column(col, justify="left" if col == "model" else "right", no_wrap=True)
    for model, m in d["models"].items():
        table.add_row(model, _pct(m["a"]), _pct(m["b"]), "-" if m["delta"] is None else f"{100 * m['delta']:+.1f}")
    out.print(table)
    out.print(f"{len(d['changed_rows'])} row verdicts changed")
    for row in d["changed_rows"][:20]:
        out.print(f"  {row['row_id']}: {row['a']} -> {row['b']}", highlight=False)
    return EXIT_OK if d["comparable"] else EXIT_NOT_COMPARABLE


def _print_partial(s: dict[str, Any]) -> None:
    """A line saying that a run is partial (and why), since its scores cover only the rows it graded."""
    if s.get("complete", True):
        return
    state = s.get("state", {})
    why = state.get("reason") or ("still running, or crashed" if state.get("state") == "running" else "rows not graded")
    out.print(f"[bold yellow]PARTIAL[/bold yellow] run ({why}): {s['not_graded_rows']} of {s['rows_total']} rows not "
              "graded; scores cover the graded rows only.", highlight=False, soft_wrap=True)


def _print_warnings(summary: dict[str, Any]) -> None:
    diag = summary.get("diagnostics", {})
    for name in diag.get("warnings", []):
        rate = diag.get(f"{name}_rate")
        detail = f" ({100 * rate:.1f}%)" if isinstance(rate, float) else ""
        console.print(f"[yellow]warning:[/yellow] {name}{detail} above {100 * WARN_RATE:.0f}%", highlight=False)


def _print_scales(s: dict[str, Any]) -> None:
    """Per graded scale: each model's 0-100 score with its interval and per dimension; then reliability and
    deliberation per dimension."""
    for name, sc in s.get("scales", {}).items():
        dims = list(sc["dimensions"])
        table = Table(title=f"scale {name} ({sc['rows']} rows; levels 0-{sc['high']}; 0-100 normalised)")
        for col in ("model", "rows", "score", "95% CI", *dims):
            table.add_column(col, justify="left" if col == "model" else "right", no_wrap=col != "model")
        ranked = sorted(sc.get("models", {}).items(), key=lambda kv: -(kv[1]["score"] or 0.0))
        for model, m in ranked:
            table.add_row(model, str(m["rows"]), _points(m["score"]), f"{_points(m['ci_low'])}-{_points(m['ci_high'])}",
                          *(_points(m["by_dimension"][d]["score"]) for d in dims))
        out.print(table)
        if "reliability" not in sc:
            continue
        rel = Table(title=f"scale {name}: agreement and deliberation per dimension")
        for col in ("dimension", "weight", "alpha ordinal r1/r2", "ICC(2,1) r1/r2", "levels moved", "dispersion lift",
                    "omitted", "split"):
            rel.add_column(col, justify="left" if col == "dimension" else "right", no_wrap=True)
        for d in dims:
            r1, r2 = sc["reliability"][d]["round1"], sc["reliability"][d]["round2"]
            rel.add_row(d, f"{sc['dimensions'][d]:g}", f"{_num(r1['alpha_ordinal'])} / {_num(r2['alpha_ordinal'])}",
                        f"{_num(r1['icc2_1'])} / {_num(r2['icc2_1'])}",
                        _pct(sc["deliberation_impact"]["by_dimension"][d]), _num(sc["agreement_lift"]["by_dimension"][d]),
                        str(sc["flags"]["omitted"][d]), str(sc["flags"]["split"][d]))
        out.print(rel)


def _points(x: Any) -> str:
    return "-" if x is None else f"{x:.1f}"


def print_result(result: RunResult) -> None:
    s = result.summary
    if s.get("scales"):
        _print_scales(s)
    if s.get("scaled_rows", 0) >= s["rows_total"]:  # graded items only: the correct / incorrect tables are empty
        if s.get("simulated"):
            out.print("[bold yellow]SIMULATED[/bold yellow]: graded by the embedded provider's simulated judges; "
                      "no real model was asked.", highlight=False, soft_wrap=True)
        _print_partial(s)
        _print_warnings(s)
        out.print(f"run folder: {result.run_dir}")
        return
    ci = s.get("uncertainty", {}).get("scores", {})
    label = "  SIMULATED" if s.get("simulated") else ""
    table = Table(title=f"council run {s['run_id']}  ({s['rows']} rows, {result.seconds:.1f} s){label}")
    has_truth = "accuracy_vs_gold" in s
    for col in ("model", "rows", "round 1", "council", "95% CI", "ties", *(("truth",) if has_truth else ())):
        table.add_column(col, justify="left" if col == "model" else "right", no_wrap=col != "model")
    ranked = sorted(s["models"].items(), key=lambda kv: -(kv[1]["score"] or 0.0))
    for model, m in ranked:
        c = ci.get(model, {})
        table.add_row(model, str(m["rows"]), _pct(m["score_round1"]), _pct(m["score"]),
                      f"{_pct(c.get('ci_low'))}-{_pct(c.get('ci_high'))}" if c else "-", _pct(m.get("tie_rate")),
                      *((_pct(m.get("true_score")),) if has_truth else ()))
    out.print(table)
    if s.get("simulated"):
        out.print("[bold yellow]SIMULATED[/bold yellow]: graded by the embedded provider's simulated judges; "
                  "no real model was asked.", highlight=False, soft_wrap=True)
    _print_partial(s)
    _print_rules(s.get("grader_rules"))
    _print_elicitation(s)
    metrics = Table(title="deliberation and agreement", show_header=False)
    unc = s.get("uncertainty", {})
    for key in ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift"):
        band = unc.get(key)
        metrics.add_row(key, _num(s.get(key)) + (f"  [{_num(band['ci_low'])}, {_num(band['ci_high'])}]" if band else ""))
    for round_, a in s.get("agreement", {}).items():
        metrics.add_row(f"{round_}: Fleiss kappa / Krippendorff alpha",
                        f"{_num(a['fleiss_kappa'])} / {_num(a['krippendorff_alpha'])}")
    herding = s.get("herding")
    if herding:
        metrics.add_row("flips conforming to peers' majority", _pct(herding["conformity_share_overall"]))
        metrics.add_row("agreement_lift from weak majorities", _num(herding["agreement_lift_weak"]))
    for key, value in s["flags"].items():
        metrics.add_row(f"rows flagged {key}", str(value))
    if has_truth:
        acc = s["accuracy_vs_gold"]
        metrics.add_row("accuracy vs truth: council", _pct(acc["council"]))
        metrics.add_row("accuracy vs truth: round one", _pct(acc["round1"]))
        for member, value in acc["members_round1"].items():
            metrics.add_row(f"accuracy vs truth: {member} alone", _pct(value))
        eff = s.get("reliability_vs_truth", {}).get("effective_judges")
        metrics.add_row("effective independent judges", _num(eff))
    out.print(metrics)
    _print_warnings(s)
    out.print(f"run folder: {result.run_dir}")


def _print_elicitation(s: dict[str, Any]) -> None:
    """Per model under test: what was asked and graded, truncation, and calibration against the council."""
    el, cal = s.get("elicitation"), s.get("calibration", {})
    if not el:
        return
    table = Table(title="models under test")
    for col in ("model", "asked", "graded", "truncated", "abstained", "Brier", "ECE", "selective"):
        table.add_column(col, justify="left" if col == "model" else "right", no_wrap=col != "model")
    for model, e in el.items():
        c = cal.get(model, {})
        table.add_row(model, str(e["asked"]), str(e["graded"]), str(e["truncated"]), str(e["abstained"]),
                      _num(c.get("brier")), _num(c.get("ece")), _num(c.get("selective")))
    out.print(table)


def _print_rules(rules: dict[str, Any] | None) -> None:
    """The grader-rule table: how the leaderboard moves under other grading rules."""
    if not rules:
        return
    table = Table(title="grader-rule sensitivity (vs council)")
    for col in ("rule", "top model", "Kendall tau", "max score change"):
        table.add_column(col, justify="left" if col in ("rule", "top model") else "right", no_wrap=col == "rule")
    for rule in rules["rules"]:
        change = rules["max_abs_change_vs_council"].get(rule)
        table.add_row(rule, rules["top_model"].get(rule) or "-", _num(rules["kendall_tau_vs_council"].get(rule)),
                      "-" if change is None else f"{100 * change:.1f} pts")
    out.print(table)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:+.4f}" if isinstance(x, float) and x < 0 else f"{x:.4f}" if isinstance(x, float) else str(x)


def _serve(args: argparse.Namespace) -> int:
    from council.service.serve import serve

    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if not args.provider_url and not args.simulate:
        raise ConfigError("council serve needs --provider-url (real judges) or --simulate (the embedded provider)")
    if args.provider_url:
        provider_endpoint(args.provider_url)
    config = CouncilConfig.from_file(args.config) if args.config else CouncilConfig()
    asyncio.run(serve(host=args.host, port=args.port, tokens=args.tokens, runs_dir=args.runs_dir,
                      bank_items=bank.load_bank(args.bank), provider_url=args.provider_url, sim_config=args.sim_config,
                      config=config, max_body=int(args.max_body_mb * 2**20)))
    return 0


SUBMIT_EPILOG = """\
Without --wait it prints the job id and exits 0 once the job is accepted. With --wait (or --verdicts) the
verdicts are written as they come (the job id goes to stdout, or to stderr when stdout carries the verdicts).
The token is read from the environment (--token-env), never from the command line.

exit codes:
  0    accepted (no --wait), or the job finished with every row graded
  1    the job failed
  2    bad options, or the service refused the request (401 token, 422 rows, 429 limit) or cannot be reached
  3    the job stopped at its budget
  4    the job finished, but some rows are not graded
  5    the job stopped: a provider could not be used
  130  the job was cancelled, or you stopped waiting with Ctrl-C (the job goes on in the service)
  143  the job was stopped by SIGTERM
"""


def _submit(args: argparse.Namespace) -> int:
    token = os.environ.get(args.token_env, "").strip()
    if not token:
        raise ConfigError(f"set {args.token_env} to your tenant's token (it is read from the environment only)")
    if not args.file.is_file():
        raise ConfigError(f"{args.file}: no such file")
    submitted: list[str] = []
    try:
        return asyncio.run(_submit_job(args, token, submitted))
    except KeyboardInterrupt:
        where = f"job {submitted[0]} goes on in the service" if submitted else "the job may have been submitted"
        console.print(f"[yellow]stopped waiting[/yellow]: {where}", highlight=False)
        return EXIT_SIGNAL["interrupt"]


async def _submit_job(args: argparse.Namespace, token: str, submitted: list[str]) -> int:
    from council.core.errors import ServiceError
    from council.service.client import Client

    async with Client(args.url, token) as client:
        try:
            job = await client.submit(args.file, bank=args.bank, budget_usd=args.budget_usd, format=args.format,
                                      callback_url=args.callback_url, idempotency_key=args.idempotency_key)
        except ServiceError as exc:
            if exc.status == 401:
                raise ServiceError(f"the service refused the token in ${args.token_env} (401 unauthorized)",
                                   status=401, problem=exc.problem) from None
            raise
        submitted.append(job["id"])
        to_stdout = args.verdicts is None
        if not (args.wait or args.verdicts):
            print(job["id"], flush=True)
            return EXIT_OK
        if to_stdout:
            console.print(job["id"], highlight=False)
        else:
            print(job["id"], flush=True)
        sink = sys.stdout.buffer if to_stdout else open(args.verdicts, "wb")  # noqa: SIM115 - closed below
        try:
            with Progress(TextColumn(f"[bold]{job['id']}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                          TimeElapsedColumn(), console=console,
                          disable=not console.is_terminal or (to_stdout and sys.stdout.isatty())) as progress:
                task = progress.add_task("rows", total=job["progress"]["rows_total"])
                async for line in client.verdict_lines(job["id"]):
                    sink.write(line)
                    sink.flush()
                    progress.advance(task)
        finally:
            if not to_stdout:
                sink.close()
        view = await client.wait(job["id"], poll_s=0.5)
    return _job_outcome(view)


def _job_outcome(view: dict[str, Any]) -> int:
    """Say how a service job ended; the exit code says it too."""
    state, reason, counts = view["state"], view.get("reason"), view["counts"]
    not_graded = counts["not_graded_rows"]
    label = "  SIMULATED" if view.get("simulated") else ""
    colour = "green" if state == "finished" and not not_graded else "yellow"
    console.print(f"[{colour}]job {view['id']} {state}[/{colour}]{f' ({reason})' if reason else ''}: "
                  f"{counts['graded_rows']} rows graded, {not_graded} not graded, ${view['spend_usd']:.4f}{label}",
                  highlight=False, soft_wrap=True)
    for error in view.get("errors", [])[:5]:
        console.print(f"[red]error:[/red] {escape(error)}", highlight=False, soft_wrap=True)
    if state == "finished":
        return EXIT_NOT_GRADED if not_graded else EXIT_OK
    if state == "failed":
        return EXIT_INTERNAL
    if reason == "budget":
        return EXIT_BUDGET
    if reason == "error":
        return EXIT_PROVIDER
    return EXIT_SIGNAL.get(reason or "", EXIT_SIGNAL["interrupt"])


def _sim(args: argparse.Namespace) -> int:
    from council.sim import SimConfig, TruthTable, serve

    items = bank.load_bank(args.bank)
    rows = bank.load_responses(args.responses, items)
    config = SimConfig.from_file(args.config) if args.config else SimConfig.planted(seed=args.seed)
    serve(config, TruthTable.from_rows(items, rows), args.host, args.port)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in ("run", "grade"):
            return _grade(args)
        if args.command == "estimate":
            return _estimate(args)
        if args.command == "loadtest":
            return loadtest.run(args)
        if args.command == "rescore":
            return _rescore(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "crossjudge":
            return _crossjudge(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "submit":
            return _submit(args)
        return _sim(args)
    except ProviderUnavailable as exc:
        console.print(f"[red]provider unusable:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_PROVIDER
    except CouncilError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_INPUT
    except ValidationError as exc:
        console.print(f"[red]error:[/red] {escape(validation_problems(exc))}", highlight=False, soft_wrap=True)
        return EXIT_INPUT
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: records archived so far are in the run folder")
        return EXIT_SIGNAL["interrupt"]
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, the traceback to the log
        from council.core import logs

        logs.get_logger("council.cli").exception("internal_error")
        console.print(f"[red]internal error:[/red] {type(exc).__name__}: {escape(str(exc))}", highlight=False,
                      soft_wrap=True)
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
