"""``council run`` and ``council grade``: grade with the council, the shipped sample (or the answers of models
under test) or a responses file of this project's or another benchmark's, and print the results."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape

import bank
from council import importers
from council.cli.check import preflight
from council.cli.config import council_config, models_under_test, provider_url
from council.cli.resume import conflicts
from council.cli.stops import finish, with_signals
from council.console.exits import (EXIT_BUDGET, EXIT_INPUT, EXIT_INTERNAL, EXIT_NOT_GRADED, EXIT_OK, EXIT_PROVIDER,
                                   EXIT_SIGNAL)
from council.console.help import add_command
from council.console.options import council_args, input_args, protocol_args, running_args
from council.console.outcomes import run_outcome
from council.console.output import console, say
from council.console.progress import ProgressDisplay, RunBoard
from council.console.results import print_timings
from council.core.errors import ConfigError, InputError
from council.grading.stop import StopControl, Stopped
from council.report.background import ReportDrawing
from council.run.runner import RunRequest, RunResult, reports_off, resume_council, run_council
from council.store.runfolder import MANIFEST, RunFolder

RUN_EXITS = (EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, *EXIT_SIGNAL.values())


def add_parser(sub: argparse._SubParsersAction) -> None:
    run = add_command(sub, "run", "grade with the council: the shipped sample on the embedded provider unless told "
                      "otherwise",
                      "Grade responses with the council (by default the shipped sample, 160 items x 6 models, "
                      "against the embedded provider: simulated judges), or ask models under test first (--models). "
                      "Prints the leaderboard and the deliberation metrics; the run folder keeps everything.",
                      RUN_EXITS, "done: every row graded", example="council run --backend local")
    what = run.add_argument_group("what is graded")
    input_args(what, responses_required=False)
    what.add_argument("--models", metavar="LIST",
                      help="comma-separated models under test to ask every bank item (predict-then-answer), then "
                           "grade their answers, instead of grading --responses (default: none)")
    _grading_args(run)
    run.add_argument("--resume", metavar="RUN_ID",
                     help="continue this run from its archive after a crash or a stop, with the settings it started "
                          "with (only where and how calls are made may change) (default: none: a new run)")

    grade = add_command(sub, "grade", "grade a responses file: this project's, or another benchmark's (--format)",
                        "Grade a responses file with the council: this project's JSONL, inspect_ai logs, lm-eval "
                        "samples, OpenAI evals records or overlooked-bench raw responses (--format). Real judges "
                        "need --provider-url; --simulate grades with the embedded provider.", RUN_EXITS,
                        "done: every row graded",
                        example="council grade --responses logs/run.eval --format inspect --simulate")
    input_args(grade.add_argument_group("what is graded"), responses_required=True)
    importers.add_arguments(grade.add_argument_group("how --responses is read"))
    _grading_args(grade)


def _grading_args(p: argparse.ArgumentParser) -> None:
    """Who grades, how, and where the run goes: the options run and grade share."""
    council_args(p.add_argument_group("who grades"))
    protocol_args(p.add_argument_group("how (recorded in the manifest, fixed once the run starts)"))
    running_args(p.add_argument_group("where the run goes and where its calls are made"))


def _seats(roster: Sequence[Any]) -> int | None:
    """Regular seats of a roster: the size of every row's panel."""
    seats = sum(1 for m in roster if not (m.get("reserve") if isinstance(m, dict) else m.reserve))
    return seats or None


def _imported(args: argparse.Namespace, vendor_map: dict[str, str]) -> tuple[list, list[str]]:
    """``council grade``: the rows of --responses as --format reads them, and the problems of the records
    skipped (with --skip-invalid; without it, a bad record is an InputError)."""
    result = importers.load_from_args(args, bank.load_bank(args.bank), vendor_map=vendor_map)
    if result.problems and not args.skip_invalid:
        raise InputError([*result.problems, f"nothing was graded; fix the records, or pass --skip-invalid to "
                                            f"grade the {len(result.rows)} valid ones"])
    for problem in result.problems[:20]:
        say(f"[yellow]skipped:[/yellow] {escape(problem)}", to=console)
    if len(result.problems) > 20:
        say(f"[yellow]... and {len(result.problems) - 20} more problems[/yellow]", to=console)
    say(f"imported {len(result.rows)} rows from {escape(str(args.responses))} ({args.format}; bank ids: "
        f"{escape(result.ids)})", to=console)
    return result.rows, result.problems


def grade(args: argparse.Namespace, command_line: str, build_parser: Callable[[], argparse.ArgumentParser]) -> int:
    """``council run`` or ``council grade`` (``command_line`` as the manifest records it; ``build_parser``: the
    whole command line's, to read a resumed run's recorded options)."""
    from council.cluster import raycluster

    resume = getattr(args, "resume", None)
    if resume is not None:
        found = conflicts(args, build_parser)
        if found:
            raise ConfigError(f"--resume continues run {resume} exactly as it was started; {'; '.join(found)} "
                              f"would change it (start a new run to grade with other settings)")
    raycluster.keep_native_notices_off_stderr()  # Ray's C++ notices go to its log folder, not this terminal
    config = council_config(args) if resume is None else None
    url = provider_url(args, config) if resume is None else None
    imported, skipped = None, []
    if args.command == "grade":
        imported, skipped = _imported(args, config.vendor_map)
    if config is not None:
        preflight(args, config, url, imported)
    if resume is None:
        seats = _seats(config.roster)
    else:
        seats = _seats(RunFolder.open_run(args.runs_dir, resume).read_json(MANIFEST).get("roster", []))
    board = RunBoard(seats)
    drawing: list[ReportDrawing] = []
    no_report = args.no_report or reports_off()
    stopping: list[threading.Thread] = []  # Ray's shutdown, under way
    # A Ray that was up before the command (a caller's, in this process) is the caller's: left running.
    ray_was_up = raycluster.is_up()
    with ProgressDisplay(board, args.progress_every):
        hooks = board.hooks()
        hooks.sole_ray_run = not ray_was_up  # a Ray the command starts is its run's alone

        def start(stop: StopControl) -> Awaitable[RunResult]:
            # report.html is drawn by a child process while the results are printed and Ray stops; a run
            # stopped before its end gets none (`council report RUN` draws it). The child imports matplotlib
            # first (about a second): with Ray it starts as the grading ends (Ray's start and actors keep both
            # cores busy before), locally with the run, so that its imports are done by then.
            def graded() -> None:  # Ray stops, and the report's child starts, while the run is scored
                if not ray_was_up and not raycluster.still_starting():
                    stopping.append(raycluster.shutdown_ray_soon(hooks.timings))
                if not stop.requested and not no_report and not drawing:
                    drawing.append(ReportDrawing())

            if args.backend == "local" and not no_report:
                drawing.append(ReportDrawing())
            hooks.on_graded = graded
            hooks.report = lambda run_dir: None if stop.requested else [d.draw(run_dir) for d in drawing]
            if resume is not None:
                return resume_council(
                    args.runs_dir, resume, backend=args.backend, provider_url=args.provider_url,
                    ray_address=args.ray_address, shards=args.shards, budget_usd=args.budget_usd,
                    command=command_line, stop=stop, hooks=hooks)
            if models_under_test(args) and Path(args.responses) != bank.SAMPLE_RESPONSES:
                raise ConfigError("--models asks the models for answers; it cannot be combined with --responses")
            req = RunRequest(
                bank=args.bank, responses=args.responses, runs_dir=args.runs_dir, run_id=args.run_id,
                backend=args.backend, provider_url=url, ray_address=args.ray_address,
                config=config, sim_config=args.sim_config, reuse_from=args.reuse_from, command=command_line,
                models=models_under_test(args), rows=imported, skipped_inputs=skipped, shards=args.shards or 0,
            )
            return run_council(req, stop=stop, hooks=hooks)

        try:
            result = with_signals(start)
        except BaseException as exc:  # no run to draw: a local run's child, started with it, ends here
            for report in drawing:
                report.stop()
            if not isinstance(exc, Stopped):
                raise
            say(f"[yellow]{escape(str(exc))}[/yellow]", to=console)
            return finish(EXIT_SIGNAL["interrupt"])
        board.phase = "report"
    try:
        code = run_outcome(result, args.command)
        timings = hooks.timings
        for thread in stopping:  # a stopped run does not wait for Ray's processes to end: see finish
            thread.join(timeout=None if not result.stop or not result.stop.requested else 0.2)
        for report in drawing:
            if report.path is None:  # never told to draw: the run was stopped
                continue
            with timings.phase("report"):
                problem = report.wait()
            if problem is None:
                say(f"report: {escape(str(report.path))}")
            else:
                say(f"[yellow]report.html not written[/yellow] ({escape(problem)}); `council report "
                    f"{escape(result.run_dir.name)}` draws it", to=console)
        if args.timings:
            print_timings(timings)
    except KeyboardInterrupt:
        say(f"[yellow]interrupted[/yellow]: the run is recorded in its folder; report.html may be missing "
            f"(`council report {escape(result.run_dir.name)}` draws it)", to=console)
        code = EXIT_SIGNAL["interrupt"]
    finally:
        for report in drawing:
            report.stop()
    return finish(code, stopping)
