"""The ``council`` command line.

Every command says what it does in ``council --help`` and takes only the options it reads (``council COMMAND
--help`` lists them, each with its default). Results go to stdout, everything else (progress, warnings,
errors) to stderr. On a terminal, tables are drawn and wrap long names; piped or redirected, each table is
plain aligned lines with every name in full, and progress is one plain line every ``--progress-every``
seconds. Every failure is one short message on stderr, never a traceback, and the exit code says how the
command ended (:data:`EXIT_CODES`, printed at the end of ``council --help``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import shlex
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError
from rich.markup import escape

import bank
from council import importers
from council.console.compare import print_crossjudge, print_diff
from council.console.estimate import print_estimate
from council.console.exits import (EXIT_BUDGET, EXIT_CODES, EXIT_INPUT, EXIT_INTERNAL, EXIT_NOT_COMPARABLE,
                                   EXIT_NOT_GRADED, EXIT_OK, EXIT_PIPE, EXIT_PROVIDER, EXIT_SIGNAL)
from council.console.help import CouncilParser, exit_codes_epilog
from council.console.options import (CONFIG_HELP, SAMPLE_BANK_HELP, SAMPLE_RESPONSES_HELP, council_args, count,
                                     input_args, positive, protocol_args, provider_args, running_args, runs_dir_arg,
                                     share)
from council.console.outcomes import job_outcome, run_outcome
from council.console.output import console, out, quiet_stdout, say
from council.console.progress import ProgressDisplay, RunBoard, job_progress
from council.console.results import print_partial, print_result, print_timings, print_warnings
from council.console.runs import list_runs, open_run, show_row, show_run
from council.core.errors import ConfigError, CouncilError, InputError, ProviderUnavailable
from council.core.memory import settle_allocator
from council.core.process_exit import exit_process
from council.grading.stop import StopControl, Stopped
from council.protocol.config import CouncilConfig, validation_problems
from council.report.background import ReportDrawing
from council.run.runner import RunRequest, RunResult, provider_endpoint, reports_off, resume_council, run_council
from council.store.lock import RunLock
from council.store.runfolder import MANIFEST, RunFolder
from council.tools import loadtest

__all__ = ["EXIT_BUDGET", "EXIT_CODES", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_NOT_COMPARABLE", "EXIT_NOT_GRADED",
           "EXIT_OK", "EXIT_PIPE", "EXIT_PROVIDER", "EXIT_SIGNAL", "RunBoard", "build_parser", "council_config", "main",
           "print_result", "provider_url"]

# What --resume may change: where and how the calls are made and shown, never what the run is.
RESUME_MAY_SET = frozenset({"command", "resume", "backend", "budget_usd", "ray_address", "provider_url", "runs_dir",
                            "shards", "progress_every", "no_check"})
INIT_PATH = Path("council.toml")

DESCRIPTION = """\
Grade model outputs with a council of LLM judges from different vendors: a vendor's judge never grades its
own vendor's models, round one is blind, round two shows each member its peers' votes by letter, and the
consensus is the round-two majority. `council run` grades the shipped sample against the embedded
(simulated) provider; `council COMMAND --help` lists a command's options, each with its default."""

RUN_EXITS = (EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, *EXIT_SIGNAL.values())


# ---- the parser -------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = CouncilParser(prog="council", description=DESCRIPTION, epilog=exit_codes_epilog())
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    def command(name: str, summary: str, description: str = "", exits: Sequence[int] = (), ok: str = "done",
                epilog: str | None = None) -> argparse.ArgumentParser:
        """A command: its one-line summary in `council --help`, its description and its exit codes."""
        return sub.add_parser(name, help=summary, description=description or summary[0].upper() + summary[1:] + ".",
                              epilog=epilog or (exit_codes_epilog(exits, ok) if exits else None))

    run = command("run", "grade with the council: the shipped sample on the embedded provider unless told otherwise",
                  "Grade responses with the council (by default the shipped sample, 160 items x 6 models, against "
                  "the embedded provider: simulated judges), or ask models under test first (--models). Prints "
                  "the leaderboard and the deliberation metrics; the run folder keeps everything.", RUN_EXITS,
                  "done: every row graded")
    what = run.add_argument_group("what is graded")
    input_args(what, responses_required=False)
    what.add_argument("--models", metavar="LIST",
                     help="comma-separated models under test to ask every bank item (predict-then-answer), then "
                          "grade their answers, instead of grading --responses (default: none)")
    council_args(run.add_argument_group("who grades"))
    protocol_args(run.add_argument_group("how (recorded in the manifest, fixed once the run starts)"))
    running_args(run.add_argument_group("where the run goes and where its calls are made"))
    run.add_argument("--resume", metavar="RUN_ID",
                     help="continue this run from its archive after a crash or a stop, with the settings it started "
                          "with (only where and how calls are made may change) (default: none: a new run)")

    grade = command("grade", "grade a responses file: this project's, or another benchmark's (--format)",
                    "Grade a responses file with the council: this project's JSONL, inspect_ai logs, lm-eval "
                    "samples, OpenAI evals records or overlooked-bench raw responses (--format). Real judges need "
                    "--provider-url; --simulate grades with the embedded provider.", RUN_EXITS,
                    "done: every row graded")
    input_args(grade.add_argument_group("what is graded"), responses_required=True)
    importers.add_arguments(grade.add_argument_group("how --responses is read"))
    council_args(grade.add_argument_group("who grades"))
    protocol_args(grade.add_argument_group("how (recorded in the manifest, fixed once the run starts)"))
    running_args(grade.add_argument_group("where the run goes and where its calls are made"))

    est = command("estimate", "cost and quota-bound time T* of a run, --deliberate all vs disputed, without a call",
                  "What a run would send, cost and take, per vendor, without making a call (--pilot excepted): "
                  "votes, requests at the batch size the quotas would choose, tokens, cost at the config's prices "
                  "(else the price table's), without and with a prompt cache, at the chat rates and at the batch rates "
                  "(`this run`: each vendor at its own transport's), and T*, the time the tightest chat quota "
                  "needs; for --deliberate all and, given the share of rows whose round one is unanimous "
                  "(--unanimity, or measured by --pilot), for --deliberate disputed. Without either, only `all` is "
                  "estimated: the unanimity rate depends on the bank, the responses and the judges, and a guessed "
                  "default would print a saving nobody measured.", (EXIT_OK, EXIT_INPUT, EXIT_PROVIDER))
    input_args(est.add_argument_group("what would be graded"), responses_required=False)
    council_args(est.add_argument_group("who would grade"))
    est.add_argument("--models", metavar="LIST",
                     help="comma-separated models under test: estimate asking them every bank item too, instead of "
                          "grading --responses (default: none)")
    how = est.add_argument_group("the disputed strategy")
    rate = how.add_mutually_exclusive_group()
    rate.add_argument("--unanimity", type=share, metavar="P",
                      help="share of rows whose round one is unanimous, as you expect it (default: none)")
    rate.add_argument("--pilot", type=count, metavar="N",
                      help="measure it: grade N rows, drawn with the config's seed, for real under --deliberate "
                           "disputed as a run of its own under --runs-dir (its id is printed; its calls are paid "
                           "and archived), then extrapolate at its rate and its 95%% interval's ends (default: none)")
    how.add_argument("--deliberation-audit", type=share, metavar="SHARE",
                     help="the audit share of the skipped rows that still get round two (default: the config's, "
                          "else 0.1)")
    pilot = est.add_argument_group("where the pilot runs (only with --pilot)")
    runs_dir_arg(pilot, "where the pilot's run folder goes")
    provider_args(pilot, "the pilot's calls")
    est.add_argument("--json", action="store_true", help="print one JSON object instead of a table (default: off)")

    show = command("show", "a run's headline, or one row's two rounds",
                   "Without ROW: the run's headline (state, rows, cost, leaderboard with intervals, graded "
                   "scales, warnings). With ROW: that row's two rounds, member by member (verdict or levels and "
                   "reason, and the letter each peer saw it under), the consensus, the flags and the key from "
                   "letters to vendors.", (EXIT_OK, EXIT_INPUT))
    show.add_argument("run", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                      "folder's path (required)")
    show.add_argument("row", metavar="ROW", nargs="?",
                      help="a row id, or a unique prefix of one (default: none: the run's headline)")
    runs_dir_arg(show)

    runs = command("runs", "list the run folders, newest first",
                   "List the run folders under --runs-dir, newest first: state, rows, models, cost, when it was "
                   "created and whether it was simulated.", (EXIT_OK, EXIT_INPUT))
    runs_dir_arg(runs)

    report = command("report", "write a run's report.html and print its path",
                     "Write report.html (figures and tables, one self-contained page) into the run folder and "
                     "print its path.", (EXIT_OK, EXIT_INPUT))
    report.add_argument("run", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                        "folder's path (required)")
    runs_dir_arg(report)

    diff = command("diff", "whether two runs are comparable, and their score and verdict changes",
                   "Whether two runs are comparable (same prompts, rules, data and judges, both complete), each "
                   "model's score in both, and the rows whose verdict changed. Runs graded on other responses stay "
                   "comparable; the verdicts on rows whose response changed are marked.",
                   (EXIT_OK, EXIT_INPUT, EXIT_NOT_COMPARABLE), "the runs are comparable")
    diff.add_argument("run_a", metavar="RUN_A", help="the earlier run: an id, a unique prefix or a path (required)")
    diff.add_argument("run_b", metavar="RUN_B", help="the later run: an id, a unique prefix or a path (required)")
    runs_dir_arg(diff)
    diff.add_argument("--json", action="store_true", help="print one JSON object (default: off)")

    rescore = command("rescore", "rebuild a run's verdicts.jsonl and summary.json from its archive",
                      exits=(EXIT_OK, EXIT_INPUT))
    rescore.add_argument("run_id", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                         "folder's path (required)")
    runs_dir_arg(rescore)

    cj = command("crossjudge", "re-score a run with another grader: do its scores survive?",
                 "Re-score an archived run with another grader into <run>/crossjudge/<name>/ and report whether "
                 "its scores survive: mean delta, rank correlation, family and target preference.",
                 (EXIT_OK, EXIT_INPUT, EXIT_PROVIDER))
    cj.add_argument("run_id", metavar="RUN", help="the run to re-score (its folder under --runs-dir); its results are "
                    "never changed (required)")
    cj.add_argument("--judge", required=True, metavar="MODEL|single:VENDOR",
                    help="a judge model that grades every row blind (asked through the run's provider), or "
                         "single:<vendor>: that council member's round-one votes alone, no calls")
    cj.add_argument("--name", help="the report's folder under <run>/crossjudge/ (default: from --judge)")
    runs_dir_arg(cj)
    cj.add_argument("--provider-url", metavar="URL", help="OpenAI-compatible base URL for the judge (default: none; "
                    "needed unless the run was simulated: then the embedded provider plays it)")
    cj.add_argument("--resamples", type=count, metavar="N", help="bootstrap resamples (default: the run's)")
    cj.add_argument("--json", action="store_true", help="print the report as one JSON object (default: off)")

    check = command("check", "one tiny real request per seat: does each judge work, and what does it spend?",
                    "Before a large run: one tiny real request per seat and reserve, as the run would send it (its "
                    "endpoint, model id, output bound, sampling and reasoning fields), on a row of the responses the "
                    "seat would grade, and for a seat on the batch transport a batch of one. Prints per seat ok or "
                    "the provider's exact refusal with the fix, the reasoning tokens the judge spent, and what the "
                    "seat would cost the run at that rate. `council run` runs it first against any provider but the "
                    "embedded one (--no-check skips it).", (EXIT_OK, EXIT_INPUT), "every seat works")
    input_args(check.add_argument_group("the rows a seat is checked on"), responses_required=False)
    council_args(check.add_argument_group("who grades"))
    provider_args(check.add_argument_group("where the calls go"), "the checks")
    check.add_argument("--transport", choices=("sync", "batch"),
                       help="check the batch API too for every vendor (batch), as a run with --transport batch would "
                            "use it (default: the config's, else sync)")
    check.add_argument("--batch-wait", type=positive, default=120.0, metavar="S",
                       help="how long a batch of one may take before it is reported as still running (default: 120)")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of a table (default: off)")

    init = command("init", "write an example council config (council.toml) to edit",
                   "Write an example council config, every field with its default and a comment, to edit and "
                   "pass as --config. An existing file is never overwritten.", (EXIT_OK, EXIT_INPUT))
    init.add_argument("path", metavar="PATH", nargs="?", type=Path, default=INIT_PATH,
                      help="where to write it (default: council.toml)")
    init.add_argument("--layout", choices=("gateway", "native"), default="gateway",
                      help="gateway: every vendor through one OpenAI-compatible gateway (--provider-url, COUNCIL_API_KEY, "
                           "OpenRouter-style ids); native: each vendor at its own API with its own key variable and "
                           "native ids (default: gateway)")

    loadtest.add_parser(sub)

    serve = command("serve", "the grading service: other benchmarks submit jobs over HTTP",
                    "The grading service: tenants submit rows over HTTP (council submit, or the Python client) and "
                    "follow their jobs; each job is a run folder under --runs-dir. SIGTERM drains it.",
                    (EXIT_OK, EXIT_INPUT), "stopped cleanly")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default: 8080)")
    serve.add_argument("--tokens", type=Path, required=True, metavar="FILE",
                       help="JSON mapping each tenant to the SHA-256 of its bearer token (and its limits)")
    runs_dir_arg(serve, "where the jobs' run folders go")
    serve.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                       help=f"bank for jobs that bring none (default: {SAMPLE_BANK_HELP})")
    serve.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    serve.add_argument("--provider-url", metavar="URL",
                       help="OpenAI-compatible base URL every job's judges are asked at (default: none; this or "
                            "--simulate is needed)")
    serve.add_argument("--simulate", action="store_true",
                       help="grade with the embedded provider's simulated judges (default: off)")
    serve.add_argument("--sim-config", type=Path, metavar="FILE",
                       help="JSON behaviour file of the embedded provider (default: its planted behaviour)")
    serve.add_argument("--max-body-mb", type=positive, default=64.0, metavar="MB",
                       help="largest submission accepted (default: 64)")

    submit = command("submit", "submit a rows file to a grading service (council serve)", epilog=SUBMIT_EPILOG)
    submit.add_argument("file", type=Path, metavar="FILE",
                        help="rows JSONL, sent as NDJSON streamed from disk (required)")
    submit.add_argument("--url", required=True, help="the service's base URL, e.g. http://127.0.0.1:8080")
    submit.add_argument("--token-env", default="COUNCIL_SERVICE_TOKEN", metavar="VAR",
                        help="environment variable holding the tenant's bearer token (default: COUNCIL_SERVICE_TOKEN)")
    submit.add_argument("--wait", action="store_true", help="follow the job to its end: stream its verdicts as they "
                        "are decided, progress on stderr, and exit with how it ended (default: off)")
    submit.add_argument("--verdicts", type=Path, metavar="OUT", help="write the streamed verdicts here as NDJSON; "
                        "implies --wait (default: stdout)")
    submit.add_argument("--idempotency-key", metavar="KEY",
                        help="submitting again with the same key gives the same job (default: none)")
    submit.add_argument("--budget-usd", type=positive, metavar="USD",
                        help="the job stops before its spend would exceed this (default: the service's limits)")
    submit.add_argument("--format", default="jsonl", help="the rows' format (default: jsonl: this project's rows)")
    submit.add_argument("--bank", type=Path, metavar="FILE",
                        help="bank JSONL sent with the job (default: the service's bank)")
    submit.add_argument("--callback-url", metavar="URL",
                        help="the service POSTs the job's summary here when it ends (default: none)")

    sim = command("sim", "serve the embedded OpenAI-compatible provider on its own",
                  "Serve the embedded provider (every vendor's simulated judge and the models of the sample) as an "
                  "OpenAI-compatible server, for --provider-url of another command.", (EXIT_OK, EXIT_INPUT),
                  "stopped cleanly")
    sim.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    sim.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    sim.add_argument("--seed", type=int, default=0, help="seed of its planted behaviour (default: 0)")
    sim.add_argument("--config", type=Path, metavar="FILE",
                     help="JSON behaviour file: vendors, quotas, faults (default: the planted behaviour)")
    sim.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                     help=f"bank whose responses' truth it knows (default: {SAMPLE_BANK_HELP})")
    sim.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES, metavar="FILE",
                     help=f"responses with gold verdicts (default: {SAMPLE_RESPONSES_HELP})")
    sim.add_argument("--batch-completion-s", type=positive, metavar="S",
                     help="seconds a batch (either batch API) takes from creation to its end (default: the "
                     "config's batch_completion_s, 3)")
    return parser


# ---- the council config -----------------------------------------------------------------------------------


def _config_file(path: Path | None, **overrides: Any) -> CouncilConfig:
    """The council config at ``path`` (TOML or JSON; None: the defaults), the ``COUNCIL_<FIELD>`` environment
    variables on top and ``overrides`` (the options given) on top of both; ConfigError names where a bad value
    came from."""
    from council.protocol.configfile import load_config, mistyped_variables

    for warning in mistyped_variables(os.environ):
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, soft_wrap=True)
    return load_config(path, **overrides)


def council_config(args: argparse.Namespace) -> CouncilConfig:
    """The config file (if any) and the environment, with the command-line options that were given on top."""
    opt = lambda name: getattr(args, name, None)  # noqa: E731 - each command has only the options it reads
    overrides: dict[str, Any] = {k: v for k, v in (("seed", opt("seed")), ("quorum", opt("quorum")),
                                                   ("budget_usd", opt("budget_usd")),
                                                   ("batch_audit", opt("batch_audit")),
                                                   ("deliberate", opt("deliberate")),
                                                   ("transport", opt("transport")),
                                                   ("deliberation_audit", opt("deliberation_audit"))) if v is not None}
    if opt("vendor_map"):
        overrides["vendor_map"] = importers.load_vendor_map(args.vendor_map)
    if opt("no_self_exclusion"):
        overrides["self_exclusion"] = False
    if opt("shadow_self"):
        overrides["shadow_self"] = True
    if opt("compress_archive"):
        overrides["compress_archive"] = True
    config = _config_file(opt("config"), **overrides)
    if opt("no_containment"):
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"containment": False})})
    return config


def provider_url(args: argparse.Namespace, config: CouncilConfig | None = None) -> str | None:
    """Where the judges are asked: ``--provider-url``, or the embedded provider (None) with ``--simulate``
    or for the shipped sample. A user's own files are never graded by the simulator unless asked. A config that gives
    every seat its vendor's own API (``vendors.<v>.base_url``: `council init --layout native`) needs no
    --provider-url: its first such URL stands for the run's provider (each vendor's calls go to its own)."""
    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if args.provider_url or args.simulate:
        return args.provider_url
    own = [config.settings(v).base_url for v in config.roster_vendors] if config is not None else []
    if own and all(own) and not args.sim_config:
        return own[0]
    shipped = Path(args.bank) == bank.SAMPLE_BANK and (Path(args.responses) == bank.SAMPLE_RESPONSES or _models(args))
    if not shipped and getattr(args, "resume", None) is None:
        raise ConfigError("no provider: pass --provider-url URL to grade with real judges, or --simulate to grade "
                          "with the embedded provider's simulated judges (no real model is asked)")
    return None


def _models(args: argparse.Namespace) -> list[str]:
    return [m.strip() for m in (getattr(args, "models", None) or "").split(",") if m.strip()]


# ---- run and grade -----------------------------------------------------------------------------------------


def _estimate(args: argparse.Namespace) -> int:
    """With --pilot, the pilot run first (its progress and id on stderr), then the estimate at its rate."""
    from council.tools.estimate import Unanimity, estimate, run_pilot

    items = bank.load_bank(args.bank)
    models = _models(args)
    config = council_config(args)
    if models and args.pilot:
        raise ConfigError("--pilot grades responses, and with --models there are none yet: state --unanimity P")
    if not args.pilot and (args.provider_url or args.simulate or args.sim_config):
        raise ConfigError("--provider-url, --simulate and --sim-config say where the pilot runs: give --pilot N")
    rows = [] if models else bank.load_responses(args.responses, items, vendor_map=config.vendor_map)
    unanimity = None if args.unanimity is None else Unanimity.stated(args.unanimity)
    if args.pilot:
        url = provider_url(args, config)
        say(f"pilot: grading {min(args.pilot, len(rows))} of {len(rows)} rows (seed {config.seed}) under "
            f"--deliberate disputed, {'at ' + escape(url) if url else 'on the embedded provider'}", to=console)
        unanimity = asyncio.run(run_pilot(config, args.bank, args.responses, rows, args.pilot,
                                          runs_dir=args.runs_dir, provider_url=url, sim_config=args.sim_config,
                                          command=_estimate_command(args)))
        say(f"pilot run {escape(unanimity.pilot['run_id'])} under {escape(str(args.runs_dir))}", to=console)
    est = estimate(config, {i.id: i for i in items}, rows, models, unanimity=unanimity,
                   audit_share=args.deliberation_audit)
    if args.json:
        out.print_json(data=est.as_dict())
        return EXIT_OK
    print_estimate(est)
    return EXIT_OK


def _estimate_command(args: argparse.Namespace) -> str:
    """The estimate's command line as its pilot run's manifest records it: the options that differ from their
    defaults."""
    defaults = vars(build_parser().parse_args(["estimate"]))
    words = ["council", "estimate"]
    for name, value in vars(args).items():
        if value != defaults.get(name) and value is not False:
            words += [f"--{name.replace('_', '-')}", *([] if value is True else [str(value)])]
    return shlex.join(words)


def _resume_conflicts(args: argparse.Namespace) -> list[str]:
    """The options given with --resume that would change what the run is (they were fixed when it started),
    each with the value given and the run's own: an option given with the value the run already has (the same
    command line repeated with --resume added) changes nothing and is accepted."""
    defaults = vars(build_parser().parse_args([args.command]))
    given = {k: v for k, v in vars(args).items() if k not in RESUME_MAY_SET and v != defaults.get(k)}
    if not given:
        return []
    own = _run_options(RunFolder.open_run(args.runs_dir, args.resume).read_json(MANIFEST))
    return [f"--{k.replace('_', '-')} {_shown(v)} (the run's: {_shown(own[k]) if k in own else 'not recorded'})"
            for k, v in sorted(given.items()) if k not in own or _comparable(k, v) != _comparable(k, own[k])]


def _run_options(manifest: dict[str, Any]) -> dict[str, Any]:
    """A run's own value of each option, in the parser's terms: the setting as its manifest records it (seed,
    quorum, self-exclusion, containment, audits, inputs, models), else as its recorded command line gave it
    (the config and behaviour files, the vendor map)."""
    words = shlex.split(manifest.get("command", ""))
    own: dict[str, Any] = {}
    if words[:1] == ["council"]:
        with contextlib.suppress(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            own = vars(build_parser().parse_args(words[1:]))
    config = manifest.get("config", {})
    own.update(
        seed=manifest["seed"], quorum=manifest["quorum"], no_self_exclusion=not manifest["self_exclusion"],
        no_containment=not config.get("judge", {}).get("containment", True),
        shadow_self=bool(config.get("shadow_self")), batch_audit=config.get("batch_audit"),
        deliberate=config.get("deliberate", "all"), transport=config.get("transport", "sync"), deliberation_audit=config.get("deliberation_audit", 0.0),
        compress_archive=bool(config.get("compress_archive")), simulate=bool(manifest.get("simulated")),
        run_id=manifest["run_id"], reuse_from=list(manifest.get("reuse_from", [])),
        models=",".join(manifest.get("models", [])) or None, bank=Path(manifest["bank_path"]),
        **({"responses": Path(manifest["responses_path"])} if manifest.get("responses_path") else {}))
    return own


def _comparable(option: str, value: Any) -> Any:
    """An option's value as compared with the run's own: paths resolved, the models as a list."""
    if isinstance(value, Path):
        return value.resolve()
    if option == "models":
        return _models(argparse.Namespace(models=value))
    return value


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


def _seats(roster: Sequence[Any]) -> int | None:
    """Regular seats of a roster: the size of every row's panel."""
    seats = sum(1 for m in roster if not (m.get("reserve") if isinstance(m, dict) else m.reserve))
    return seats or None


def _grade(args: argparse.Namespace, command_line: str) -> int:
    from council.cluster import raycluster

    resume = getattr(args, "resume", None)
    if resume is not None:
        conflicts = _resume_conflicts(args)
        if conflicts:
            raise ConfigError(f"--resume continues run {resume} exactly as it was started; {'; '.join(conflicts)} "
                              f"would change it (start a new run to grade with other settings)")
    raycluster.keep_native_notices_off_stderr()  # Ray's C++ notices go to its log folder, not this terminal
    config = council_config(args) if resume is None else None
    url = provider_url(args, config) if resume is None else None
    imported, skipped = None, []
    if args.command == "grade":
        result = importers.load_from_args(args, bank.load_bank(args.bank), vendor_map=config.vendor_map)
        if result.problems and not args.skip_invalid:
            raise InputError([*result.problems, f"nothing was graded; fix the records, or pass --skip-invalid to "
                                                f"grade the {len(result.rows)} valid ones"])
        for problem in result.problems[:20]:
            say(f"[yellow]skipped:[/yellow] {escape(problem)}", to=console)
        if len(result.problems) > 20:
            say(f"[yellow]... and {len(result.problems) - 20} more problems[/yellow]", to=console)
        say(f"imported {len(result.rows)} rows from {escape(str(args.responses))} ({args.format}; bank ids: "
            f"{escape(result.ids)})", to=console)
        imported, skipped = result.rows, result.problems
    if config is not None:
        _preflight(args, config, url, imported)
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
            if _models(args) and Path(args.responses) != bank.SAMPLE_RESPONSES:
                raise ConfigError("--models asks the models for answers; it cannot be combined with --responses")
            req = RunRequest(
                bank=args.bank, responses=args.responses, runs_dir=args.runs_dir, run_id=args.run_id,
                backend=args.backend, provider_url=url, ray_address=args.ray_address,
                config=config, sim_config=args.sim_config, reuse_from=args.reuse_from, command=command_line,
                models=_models(args), rows=imported, skipped_inputs=skipped, shards=args.shards or 0,
            )
            return run_council(req, stop=stop, hooks=hooks)

        try:
            result = _with_signals(start)
        except BaseException as exc:  # no run to draw: a local run's child, started with it, ends here
            for report in drawing:
                report.stop()
            if not isinstance(exc, Stopped):
                raise
            say(f"[yellow]{escape(str(exc))}[/yellow]", to=console)
            return _exit(EXIT_SIGNAL["interrupt"])
        board.phase = "report"
    try:
        code = run_outcome(result, args.command)
        timings = hooks.timings
        for thread in stopping:  # a stopped run does not wait for Ray's processes to end: see _exit
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
    return _exit(code, stopping)


def _exit(code: int, stopping: Sequence[threading.Thread] = ()) -> int:
    """``code``, to return from main. A Ray still starting in its thread (the run stopped meanwhile), or still
    stopping, would hold the interpreter's exit until it is done; then the process ends here, its output
    flushed, and Ray's local processes end with it (they die with the thread that started them)."""
    from council.cluster import raycluster

    if raycluster.still_starting() or any(t.is_alive() for t in stopping):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _with_signals(start: Callable[[StopControl], Awaitable[RunResult]]) -> RunResult:
    """Run to the end, or to a clean stop: the first Ctrl-C or SIGTERM issues nothing new and lets calls in
    flight finish (up to the grace period) and be archived; a second one exits at once."""
    stop = StopControl()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:
            stop.request("interrupt" if signum == signal.SIGINT else "terminate")
            say(f"[yellow]stopping[/yellow]: no new calls; calls in flight have {stop.grace_s:.0f} s to finish and "
                "be archived (press Ctrl-C again to stop at once)", to=console)
            return
        say("[red]stopped at once[/red]: calls in flight are lost; the archive is intact", to=console)
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


# ---- check -------------------------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    config = council_config(args)
    checks = _checks(args, config, provider_url(args, config))
    from council.console.check import print_checks

    print_checks(checks, as_json=args.json)
    return EXIT_OK if all(c.ok for c in checks) else EXIT_INPUT


def _checks(args: argparse.Namespace, config: CouncilConfig, url: str | None, rows: list | None = None) -> list:
    """Every seat checked (:mod:`council.tools.check`) against ``url``, or against the embedded provider (None)
    started for the check with the run's behaviour, on ``rows`` (default: --responses)."""
    from council.tools.check import check_council
    from council.tools.estimate import estimate

    items = {i.id: i for i in bank.load_bank(args.bank)}
    if rows is None:
        rows = bank.load_responses(args.responses, list(items.values()), vendor_map=config.vendor_map)
    votes = {v.vendor: v.votes for v in estimate(config, items, rows).vendors}

    async def main() -> list:
        if url is not None:
            return await check_council(config, items, rows, url, batch_wait_s=getattr(args, "batch_wait", 120.0),
                                       run_votes=votes)
        from council.sim import SimConfig, TruthTable, start_sim

        behaviour = SimConfig.from_file(args.sim_config) if args.sim_config else SimConfig.planted(config.seed)
        async with await start_sim(behaviour, TruthTable.from_rows(items.values(), rows)) as sim:
            return await check_council(config, items, rows, sim.url, embedded=True,
                                       batch_wait_s=getattr(args, "batch_wait", 120.0), run_votes=votes)

    return asyncio.run(main())


def _preflight(args: argparse.Namespace, config: CouncilConfig, url: str | None, rows: list | None = None) -> None:
    """`council check` before a run against a real provider (``url``, or a vendor's own API), on the run's ``rows``
    (default: --responses); ConfigError naming every seat that failed (ProviderUnavailable where none can be used)."""
    if url is None or args.no_check or (not rows and args.command == "grade"):  # the embedded provider; nothing to grade
        return
    from council.console.check import print_checks

    checks = _checks(args, config, url, rows)
    print_checks(checks, to_stderr=True)
    failed = [c for c in checks if not c.ok]
    if failed:
        message = (f"council check: {len(failed)} seat(s) cannot grade ({', '.join(c.vendor for c in failed)}); "
                   f"fix them and run again, or pass --no-check to start anyway")
        # a provider that cannot be used at all is the run's exit 5, as if the run had met it; else bad options
        raise (ProviderUnavailable if all(c.status == "unusable" for c in failed) else ConfigError)(message)


# ---- run folders: finding, listing, showing ----------------------------------------------------------------


def _runs(args: argparse.Namespace) -> int:
    return list_runs(args.runs_dir)


def _show(args: argparse.Namespace) -> int:
    folder = open_run(args.runs_dir, args.run)
    if args.row is None:
        return show_run(folder)
    return show_row(folder, args.row)


def _report(args: argparse.Namespace) -> int:
    try:
        from council.report import write_report
    except ImportError:  # the report package keeps its page in a module of its own
        from council.report.page import write_report

    folder = open_run(args.runs_dir, args.run)
    path = write_report(folder.path)
    say(escape(str(path)))
    return EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from council.protocol.configfile import example_toml

    path: Path = args.path
    if path.suffix.lower() != ".toml":
        raise ConfigError(f"{path}: council init writes TOML; give the file a .toml name")
    text = example_toml(args.layout)
    try:
        with open(path, "x", encoding="utf-8") as handle:  # never over an existing file
            handle.write(text)
    except FileExistsError:
        raise ConfigError(f"{path} already exists; it is never overwritten (remove it, or give another PATH)") from None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    say(f"wrote {escape(str(path))}: edit it, then pass --config {escape(str(path))}", to=console)
    first = (f"set each vendor's key variable (vendors.<v>.api_key_env) and run `council check --config {path}`"
             if args.layout == "native" else
             f"set COUNCIL_API_KEY and run `council check --config {path} --provider-url URL` (the gateway's base URL)")
    say(f"then {escape(first)} before a large run", to=console)
    return EXIT_OK


def _rescore(args: argparse.Namespace) -> int:
    from council.scoring.scoring import rescore

    folder = open_run(args.runs_dir, args.run_id)
    folder.lock = RunLock.take(folder.path, "council rescore")  # not while a run writes it
    try:
        summary = rescore(folder)
    finally:
        folder.release()
    say(f"rescored {escape(folder.path.name)}: {summary['rows']} rows, {len(summary['models'])} models")
    print_partial(summary)
    print_warnings(summary)
    return EXIT_OK


def _crossjudge(args: argparse.Namespace) -> int:
    from council.tools.crossjudge import crossjudge

    result = asyncio.run(crossjudge(args.runs_dir, args.run_id, args.judge, name=args.name,
                                    provider_url=args.provider_url, resamples=args.resamples))
    if args.json:
        out.print_json(data=result.report)
        return EXIT_OK
    print_crossjudge(result, args.run_id)
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    """Exit 6 whenever the runs are not comparable, whatever is printed."""
    from council.scoring.diff import diff_runs

    d = diff_runs(open_run(args.runs_dir, args.run_a), open_run(args.runs_dir, args.run_b))
    code = EXIT_OK if d["comparable"] else EXIT_NOT_COMPARABLE
    if args.json:
        out.print_json(data=d)
        return code
    print_diff(d)
    return code


# ---- the service ---------------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from council.service.serve import serve

    if args.provider_url and (args.simulate or args.sim_config):
        raise ConfigError("--provider-url asks a real provider; it cannot be combined with --simulate or --sim-config")
    if not args.provider_url and not args.simulate:
        raise ConfigError("council serve needs --provider-url (real judges) or --simulate (the embedded provider)")
    if args.provider_url:
        provider_endpoint(args.provider_url)
    config = _config_file(args.config)
    asyncio.run(serve(host=args.host, port=args.port, tokens=args.tokens, runs_dir=args.runs_dir,
                      bank_items=bank.load_bank(args.bank), provider_url=args.provider_url, sim_config=args.sim_config,
                      config=config, max_body=int(args.max_body_mb * 2**20)))
    return EXIT_OK


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
        say(f"[yellow]stopped waiting[/yellow]: {where}", to=console)
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
            hidden = not console.is_terminal or (to_stdout and sys.stdout.isatty())
            with job_progress(job["id"], disable=hidden) as progress:
                task = progress.add_task("rows", total=job["progress"]["rows_total"])
                async for line in client.verdict_lines(job["id"]):
                    sink.write(line)
                    sink.flush()
                    progress.advance(task)
        finally:
            if not to_stdout:
                sink.close()
        view = await client.wait(job["id"], poll_s=0.5)
    return job_outcome(view)


def _sim(args: argparse.Namespace) -> int:
    from council.sim import SimConfig, TruthTable, serve

    items = bank.load_bank(args.bank)
    rows = bank.load_responses(args.responses, items)
    config = SimConfig.from_file(args.config) if args.config else SimConfig.planted(seed=args.seed)
    if args.batch_completion_s is not None:
        config = config.model_copy(update={"batch_completion_s": args.batch_completion_s})
    serve(config, TruthTable.from_rows(items, rows), args.host, args.port)
    return EXIT_OK


# ---- main ----------------------------------------------------------------------------------------------------


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "estimate": _estimate, "loadtest": loadtest.run, "rescore": _rescore, "diff": _diff, "crossjudge": _crossjudge,
    "show": _show, "runs": _runs, "report": _report, "init": _init, "serve": _serve, "submit": _submit, "sim": _sim,
    "check": _check,
}


def _parse(argv: list[str]) -> argparse.Namespace:
    """The options of ``argv``; one that its command does not take is an error of that command (exit 2), which
    says which commands take it."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        elsewhere = []
        for flag in dict.fromkeys(x.split("=", 1)[0] for x in extra if x.startswith("--")):
            takers = [name for name, p in commands.items() if flag in p._option_string_actions]
            if takers:
                elsewhere.append(f"{flag} is an option of {', '.join(takers)}")
        hint = f" ({'; '.join(elsewhere)})" if elsewhere else ""
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: list[str] | None = None) -> int:
    settle_allocator()  # a long run's freed memory goes back to the system (council.core.memory)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    try:
        if args.command in ("run", "grade"):
            return _grade(args, shlex.join(["council", *argv]))
        return COMMANDS[args.command](args)
    except ProviderUnavailable as exc:
        say(f"[red]provider unusable:[/red] {escape(str(exc))}", to=console)
        return EXIT_PROVIDER
    except CouncilError as exc:
        say(f"[red]error:[/red] {escape(str(exc))}", to=console)
        return EXIT_INPUT
    except ValidationError as exc:
        say(f"[red]error:[/red] {escape(validation_problems(exc))}", to=console)
        return EXIT_INPUT
    except KeyboardInterrupt:
        say("[yellow]interrupted[/yellow]: records archived so far are in the run folder", to=console)
        return EXIT_SIGNAL["interrupt"]
    except BrokenPipeError:
        quiet_stdout()
        return EXIT_PIPE  # the reader has gone (`| head`): nothing left to say, and nobody to say it to
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, the traceback to the log
        from council.core import logs

        logs.get_logger("council.cli").exception("internal_error")
        say(f"[red]internal error:[/red] {type(exc).__name__}: {escape(str(exc))}", to=console)
        return EXIT_INTERNAL


def entry() -> NoReturn:
    """The ``council`` command: :func:`main`, then the process ends at once (:mod:`council.core.process_exit`)."""
    exit_process(main())


if __name__ == "__main__":
    entry()
