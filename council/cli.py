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
import datetime as dt
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

import bank
from council import importers
from council.core.errors import ConfigError, CouncilError, InputError, ProviderUnavailable, RunFolderError
from council.core.schema import JudgeCallRecord, ResponseRow
from council.grading.stop import StopControl
from council.protocol.config import CouncilConfig, validation_problems
from council.run.runner import BACKENDS, RunHooks, RunRequest, RunResult, provider_endpoint, resume_council, run_council
from council.scoring.scoring import WARN_RATE
from council.store.runfolder import MANIFEST, ROUND_FILES, STATE, SUMMARY, VERDICTS, RunFolder, iter_json, run_path
from council.tools import loadtest

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, EXIT_NOT_COMPARABLE = 0, 1, 2, 3, 4, 5, 6
EXIT_SIGNAL = {"interrupt": 128 + signal.SIGINT, "terminate": 128 + signal.SIGTERM}
EXIT_PIPE = 128 + signal.SIGPIPE  # stdout closed before everything was printed (``| head``)
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done: every row graded (diff: the runs are comparable)"),
    (EXIT_INTERNAL, "internal error (one line; the traceback goes to the log)"),
    (EXIT_INPUT, "bad input or options (the message names the file, line or option)"),
    (EXIT_BUDGET, "stopped by the budget: resumable with a larger --budget-usd"),
    (EXIT_NOT_GRADED, "finished, but some rows not graded (failed calls, refused rows)"),
    (EXIT_PROVIDER, "a provider cannot be used (unreachable, key refused, wrong URL or model)"),
    (EXIT_NOT_COMPARABLE, "diff: the runs are not comparable"),
    (EXIT_SIGNAL["interrupt"], "interrupted (Ctrl-C; a second Ctrl-C stops at once): resumable"),
    (EXIT_PIPE, "stdout was closed before the output ended (e.g. `| head`)"),
    (EXIT_SIGNAL["terminate"], "terminated (SIGTERM): resumable"),
)
# What --resume may change: where and how the calls are made and shown, never what the run is.
RESUME_MAY_SET = frozenset({"command", "resume", "backend", "budget_usd", "ray_address", "provider_url", "runs_dir",
                            "shards", "progress_every"})
PROGRESS_EVERY_S = 10.0
INIT_PATH = Path("council.toml")

DESCRIPTION = """\
Grade model outputs with a council of LLM judges from different vendors: a vendor's judge never grades its
own vendor's models, round one is blind, round two shows each member its peers' votes by letter, and the
consensus is the round-two majority. `council run` grades the shipped sample against the embedded
(simulated) provider; `council COMMAND --help` lists a command's options, each with its default."""


def _exit_codes_epilog(codes: Sequence[int] | None = None, ok: str | None = None) -> str:
    """The exit codes (``codes`` of them, else all), with ``ok`` as what 0 means for one command."""
    shown = [(c, ok if c == EXIT_OK and ok else m) for c, m in EXIT_CODES if codes is None or c in codes]
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in shown)


RUN_EXITS = (EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_BUDGET, EXIT_NOT_GRADED, EXIT_PROVIDER, *EXIT_SIGNAL.values())


# ---- the parser -------------------------------------------------------------------------------------------


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (or says it is required), whether its author wrote one or
    not. In descriptions and epilogs, prose paragraphs are filled to the terminal's width and a block with
    indented lines (a list, such as the exit codes) is kept as written."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("max_help_position", 30)
        super().__init__(prog, **kwargs)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # argparse measures the commands 2 columns short
            self._action_max_length += 2

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            if any(line.startswith(" ") for line in lines):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                            subsequent_indent=indent))
        return "\n\n".join(blocks)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if text == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                                             argparse._SubParsersAction)):
            return action.help
        if type(action).__name__ == "_ChoicesPseudoAction":  # a command's line in the list of commands
            return action.help
        if re.search(r"\(default[ :]", text) or "(required)" in text:
            return text
        if action.required:
            return f"{text} (required)".strip()
        return f"{text} (default: {_shown_default(action.default)})".strip()


def _shown_default(value: Any) -> str:
    if value is None or value == []:
        return "none"
    if value is False:
        return "off"
    if value is True:
        return "on"
    return str(value).replace("%", "%%")


class CouncilParser(argparse.ArgumentParser):
    """The parser of ``council`` and of each of its commands (argparse builds subcommands with the parent's
    class): help with defaults and exit codes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no progress lines) or more, got {text}")
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


class _Console(Console):
    """A console that reports a reader gone from a pipe (``| head``) as BrokenPipeError, which :func:`main`
    turns into exit 141, instead of rich's exit 1 (which here means an internal error)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        if not self.stderr:
            _quiet_stdout()
        raise BrokenPipeError("the reader of the output has gone")


console = _Console(stderr=True)
out = _Console()

SAMPLE_BANK_HELP = f"the shipped sample, bank/samples/{bank.SAMPLE_BANK.name}"
SAMPLE_RESPONSES_HELP = f"the shipped sample, bank/samples/{bank.SAMPLE_RESPONSES.name}"
CONFIG_HELP = ("council config, TOML or JSON (`council init` writes an example): roster, quorum, seed, per-vendor "
               "limits and prices; COUNCIL_<FIELD> environment variables override it and options override both "
               "(default: none: the built-in council)")


def _runs_dir_arg(p: argparse.ArgumentParser, what: str = "where the run folders are") -> None:
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR", help=f"{what} (default: ./runs)")


def _input_args(p: argparse.ArgumentParser, *, responses_required: bool) -> None:
    """What is graded: the bank and the responses."""
    p.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                   help=f"question bank JSONL (default: {SAMPLE_BANK_HELP})")
    if responses_required:
        p.add_argument("--responses", type=Path, required=True, metavar="PATH",
                       help="responses to grade: a file (or a folder, for --format overlooked)")
    else:
        p.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES, metavar="FILE",
                       help=f"responses JSONL to grade (default: {SAMPLE_RESPONSES_HELP})")


def _council_args(p: argparse.ArgumentParser) -> None:
    """Who grades what: the config, the vendors of the models, self-exclusion."""
    p.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--vendor-map", type=Path, metavar="FILE",
                   help="JSON object mapping a model id (or its prefix before '/') to its vendor; wins over the "
                        "built-in rules and the config's vendor_map (needed for ids of no known family) "
                        "(default: none)")
    p.add_argument("--no-self-exclusion", action="store_true",
                   help="audit only: let a vendor's judge grade its own vendor's models (recorded in the manifest) "
                        "(default: off: a vendor never grades its own models)")


def _protocol_args(p: argparse.ArgumentParser) -> None:
    """How the council grades: the settings a run records in its manifest (fixed once it starts)."""
    p.add_argument("--seed", type=int, metavar="N",
                   help="seed of the letter shuffle and of the embedded provider (default: the config's, else 0)")
    p.add_argument("--quorum", type=int, metavar="N",
                   help="valid votes needed for a consensus (default: the config's, else 3)")
    p.add_argument("--no-containment", action="store_true",
                   help="audit only: send responses and peers' reasons unfenced (the judge-v1 layout), to measure "
                        "how far planted injections steer judges without containment (default: off)")
    p.add_argument("--shadow-self", action="store_true",
                   help="self-preference audit: the excluded own-vendor judge also grades round one, never "
                        "counted (default: off)")
    p.add_argument("--batch-audit", type=_fraction, metavar="FRACTION",
                   help="re-ask this seeded share of batched votes alone and report batched-vs-solo agreement "
                        "(default: the config's, else none)")
    p.add_argument("--budget-usd", type=_positive, metavar="USD",
                   help="issue no call that would take projected spend over this; the run stays resumable with a "
                        "larger budget (default: the config's, else no budget)")


def _running_args(p: argparse.ArgumentParser) -> None:
    """Where the run goes and where its calls are made; none of these changes the run's results."""
    _runs_dir_arg(p, "where run folders go")
    p.add_argument("--run-id", metavar="ID",
                   help="name of the new run's folder; an existing run is never overwritten (default: the UTC time "
                        "and a random suffix, e.g. 20261130-210326-ffbe)")
    p.add_argument("--provider-url", metavar="URL",
                   help="send every vendor's calls to this OpenAI-compatible base URL (ending in /v1) (default: "
                        "none: the embedded provider, for the shipped sample or with --simulate)")
    p.add_argument("--simulate", action="store_true",
                   help="grade with the embedded provider's simulated judges: no real model is asked (default: "
                        "off; on for the shipped sample)")
    p.add_argument("--sim-config", type=Path, metavar="FILE",
                   help="JSON behaviour file of the embedded provider (default: its planted behaviour)")
    p.add_argument("--reuse-from", action="append", default=[], metavar="RUN_ID",
                   help="serve votes whose request is archived in this earlier run from its archive; repeatable "
                        "(default: none)")
    p.add_argument("--backend", choices=BACKENDS, default="ray",
                   help="ray: one actor per judge on a local Ray instance (or --ray-address); local: in this "
                        "process, no Ray (default: ray)")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="join this Ray cluster (e.g. auto) (default: none: start a private local instance on "
                        "127.0.0.1)")
    p.add_argument("--shards", type=_count, metavar="N",
                   help="spread the rows over N shard workers (Ray actors placed across the cluster's nodes, one "
                        "CPU each) that share each vendor's one quota; the run folder stays on this node "
                        "(default: none: one coordinator in this process)")
    p.add_argument("--compress-archive", action="store_true",
                   help="write the run's archive and rows as zstd frames, about 7x smaller; every command reads "
                        "them as it reads plain files (default: off)")
    p.add_argument("--progress-every", type=_seconds, default=PROGRESS_EVERY_S, metavar="S",
                   help="when stderr is not a terminal, print one progress line every S seconds; 0: none (default: "
                        "10; on a terminal the progress is a live display)")


def build_parser() -> argparse.ArgumentParser:
    parser = CouncilParser(prog="council", description=DESCRIPTION, epilog=_exit_codes_epilog())
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    def command(name: str, summary: str, description: str = "", exits: Sequence[int] = (), ok: str = "done",
                epilog: str | None = None) -> argparse.ArgumentParser:
        """A command: its one-line summary in `council --help`, its description and its exit codes."""
        return sub.add_parser(name, help=summary, description=description or summary[0].upper() + summary[1:] + ".",
                              epilog=epilog or (_exit_codes_epilog(exits, ok) if exits else None))

    run = command("run", "grade with the council: the shipped sample on the embedded provider unless told otherwise",
                  "Grade responses with the council (by default the shipped sample, 160 items x 6 models, against "
                  "the embedded provider: simulated judges), or ask models under test first (--models). Prints "
                  "the leaderboard and the deliberation metrics; the run folder keeps everything.", RUN_EXITS,
                  "done: every row graded")
    what = run.add_argument_group("what is graded")
    _input_args(what, responses_required=False)
    what.add_argument("--models", metavar="LIST",
                     help="comma-separated models under test to ask every bank item (predict-then-answer), then "
                          "grade their answers, instead of grading --responses (default: none)")
    _council_args(run.add_argument_group("who grades"))
    _protocol_args(run.add_argument_group("how (recorded in the manifest, fixed once the run starts)"))
    _running_args(run.add_argument_group("where the run goes and where its calls are made"))
    run.add_argument("--resume", metavar="RUN_ID",
                     help="continue this run from its archive after a crash or a stop, with the settings it started "
                          "with (only where and how calls are made may change) (default: none: a new run)")

    grade = command("grade", "grade a responses file: this project's, or another benchmark's (--format)",
                    "Grade a responses file with the council: this project's JSONL, inspect_ai logs, lm-eval "
                    "samples, OpenAI evals records or overlooked-bench raw responses (--format). Real judges need "
                    "--provider-url; --simulate grades with the embedded provider.", RUN_EXITS,
                    "done: every row graded")
    _input_args(grade.add_argument_group("what is graded"), responses_required=True)
    importers.add_arguments(grade.add_argument_group("how --responses is read"))
    _council_args(grade.add_argument_group("who grades"))
    _protocol_args(grade.add_argument_group("how (recorded in the manifest, fixed once the run starts)"))
    _running_args(grade.add_argument_group("where the run goes and where its calls are made"))

    est = command("estimate", "requests, tokens, cost and the quota-bound time T* of a run, without a call",
                  "What a run would send, cost and take, per vendor, without making a call: votes, requests at "
                  "the batch size the quotas would choose, tokens, cost at the config's prices, and T*, the "
                  "time the tightest quota needs.", (EXIT_OK, EXIT_INPUT))
    _input_args(est.add_argument_group("what would be graded"), responses_required=False)
    _council_args(est.add_argument_group("who would grade"))
    est.add_argument("--models", metavar="LIST",
                     help="comma-separated models under test: estimate asking them every bank item too, instead of "
                          "grading --responses (default: none)")
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
    _runs_dir_arg(show)

    runs = command("runs", "list the run folders, newest first",
                   "List the run folders under --runs-dir, newest first: state, rows, models, cost, when it was "
                   "created and whether it was simulated.", (EXIT_OK, EXIT_INPUT))
    _runs_dir_arg(runs)

    report = command("report", "write a run's report.html and print its path",
                     "Write report.html (figures and tables, one self-contained page) into the run folder and "
                     "print its path.", (EXIT_OK, EXIT_INPUT))
    report.add_argument("run", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                        "folder's path (required)")
    _runs_dir_arg(report)

    diff = command("diff", "whether two runs are comparable, and their score and verdict changes",
                   "Whether two runs are comparable (same prompts, rules, data and judges, both complete), each "
                   "model's score in both, and the rows whose verdict changed.",
                   (EXIT_OK, EXIT_INPUT, EXIT_NOT_COMPARABLE), "the runs are comparable")
    diff.add_argument("run_a", metavar="RUN_A", help="the earlier run: an id, a unique prefix or a path (required)")
    diff.add_argument("run_b", metavar="RUN_B", help="the later run: an id, a unique prefix or a path (required)")
    _runs_dir_arg(diff)
    diff.add_argument("--json", action="store_true", help="print one JSON object (default: off)")

    rescore = command("rescore", "rebuild a run's verdicts.jsonl and summary.json from its archive",
                      exits=(EXIT_OK, EXIT_INPUT))
    rescore.add_argument("run_id", metavar="RUN", help="a run id under --runs-dir, a unique prefix of one, or a run "
                         "folder's path (required)")
    _runs_dir_arg(rescore)

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
    _runs_dir_arg(cj)
    cj.add_argument("--provider-url", metavar="URL", help="OpenAI-compatible base URL for the judge (default: none; "
                    "needed unless the run was simulated: then the embedded provider plays it)")
    cj.add_argument("--resamples", type=_count, metavar="N", help="bootstrap resamples (default: the run's)")
    cj.add_argument("--json", action="store_true", help="print the report as one JSON object (default: off)")

    init = command("init", "write an example council config (council.toml) to edit",
                   "Write an example council config, every field with its default and a comment, to edit and "
                   "pass as --config. An existing file is never overwritten.", (EXIT_OK, EXIT_INPUT))
    init.add_argument("path", metavar="PATH", nargs="?", type=Path, default=INIT_PATH,
                      help="where to write it (default: council.toml)")

    loadtest.add_parser(sub)

    serve = command("serve", "the grading service: other benchmarks submit jobs over HTTP",
                    "The grading service: tenants submit rows over HTTP (council submit, or the Python client) and "
                    "follow their jobs; each job is a run folder under --runs-dir. SIGTERM drains it.",
                    (EXIT_OK, EXIT_INPUT), "stopped cleanly")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default: 8080)")
    serve.add_argument("--tokens", type=Path, required=True, metavar="FILE",
                       help="JSON mapping each tenant to the SHA-256 of its bearer token (and its limits)")
    _runs_dir_arg(serve, "where the jobs' run folders go")
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
    serve.add_argument("--max-body-mb", type=_positive, default=64.0, metavar="MB",
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
    submit.add_argument("--budget-usd", type=_positive, metavar="USD",
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
    return parser


# ---- the council config -----------------------------------------------------------------------------------


def _config_file(path: Path | None, **overrides: Any) -> CouncilConfig:
    """The council config at ``path`` (TOML or JSON; None: the defaults), the ``COUNCIL_<FIELD>`` environment
    variables on top and ``overrides`` (the options given) on top of both; ConfigError names where a bad value
    came from."""
    from council.protocol.configfile import load_config

    return load_config(path, **overrides)


def council_config(args: argparse.Namespace) -> CouncilConfig:
    """The config file (if any) and the environment, with the command-line options that were given on top."""
    opt = lambda name: getattr(args, name, None)  # noqa: E731 - each command has only the options it reads
    overrides: dict[str, Any] = {k: v for k, v in (("seed", opt("seed")), ("quorum", opt("quorum")),
                                                   ("budget_usd", opt("budget_usd")),
                                                   ("batch_audit", opt("batch_audit"))) if v is not None}
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


# ---- output: drawn tables on a terminal, plain lines when piped ---------------------------------------------


def _drawn(target: Console) -> bool:
    """Whether ``target`` writes to a terminal (its file, not FORCE_COLOR and the like, decides): drawn tables
    and a live display there, plain lines anywhere else."""
    try:
        return bool(target.file.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _say(text: str, *, to: Console | None = None, markup: bool = True) -> None:
    """One line (or paragraph), never cut and never wrapped by us: a terminal wraps it, a pipe gets it whole."""
    (to or out).print(text, highlight=False, soft_wrap=True, markup=markup, emoji=False)


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *, text_columns: int = 1,
           align: str | None = None, to: Console | None = None) -> None:
    """A table whose first ``text_columns`` columns are text (left-aligned) and the rest numbers (or as
    ``align`` says, one ``l`` or ``r`` per column). On a terminal it is drawn and a long cell wraps (fold),
    never ends in an ellipsis; piped, it is plain aligned lines (the title, the header, one line per row)
    with every cell in full."""
    target = to or out
    align = align or "l" * text_columns + "r" * (len(header) - text_columns)
    if _drawn(target):
        table = Table(title=escape(title))
        for col, side in zip(header, align, strict=True):
            table.add_column(escape(col), justify="left" if side == "l" else "right", overflow="fold")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        target.print(table)
        return
    for line in _aligned(title, header, rows, align):
        _say(line, to=target, markup=False)


def _aligned(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if side == "l" else c.rjust(w)
                         for c, w, side in zip(cells, widths, align, strict=True)).rstrip()

    return [title, line(header), *(line(r) for r in rows), ""]


def _pairs(title: str, pairs: Sequence[tuple[str, str]], *, to: Console | None = None) -> None:
    """A key-value table: drawn on a terminal, ``key: value`` lines when piped."""
    target = to or out
    if _drawn(target):
        table = Table(title=escape(title), show_header=False)
        table.add_column(overflow="fold")
        table.add_column(overflow="fold")
        for key, value in pairs:
            table.add_row(escape(key), escape(value))
        target.print(table)
        return
    _say(title, to=target, markup=False)
    for key, value in pairs:
        _say(f"{key}: {value}", to=target, markup=False)
    _say("", to=target, markup=False)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: Any) -> str:
    return "-" if x is None else f"{x:+.4f}" if isinstance(x, float) and x < 0 else f"{x:.4f}" if isinstance(x, float) else str(x)


def _points(x: Any) -> str:
    return "-" if x is None else f"{x:.1f}"


def _usd(x: Any) -> str:
    return "-" if x is None else f"${x:.4f}"


def _clock(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


# ---- progress ----------------------------------------------------------------------------------------------


@dataclass
class VendorProgress:
    votes: int = 0
    requests: int = 0  # from the records: a batched request counts once
    quota_requests: int | None = None  # from the vendor's quota report, when it says
    rate_limited: int = 0
    retries: int = 0
    errors: int = 0
    spend_usd: float = 0.0
    rows_sat: int = 0  # graded rows this vendor sat on (its share of the rows, for its ETA)
    last_request: str = ""


class RunBoard:
    """What a run is doing, fed by the runner's hooks: the phase (validating, grading round 1 / 2, scoring,
    report), rows done, votes per round and, per vendor, requests, 429s, retries (sum of attempts - 1),
    spend and the time it needs for its share of what is left. Read by the live display or the progress
    lines while the hooks write (single writes of plain numbers)."""

    def __init__(self, seats: int | None = None) -> None:
        self.phase = "validating"
        self.started = time.monotonic()
        self.grading_started: float | None = None
        self.rows_total: int | None = None
        self.rows_done = 0
        self.rows_seen = 0  # rows whose votes the hooks reported (on_row_graded)
        self.votes = {1: 0, 2: 0}
        self.seats = seats
        self.vendors: dict[str, VendorProgress] = {}

    def hooks(self) -> RunHooks:
        return RunHooks(on_start=self.on_start, on_progress=self.on_progress, on_record=self.on_record,
                        on_row_graded=self.on_row_graded, on_quota=self.on_quota)

    def vendor(self, name: str) -> VendorProgress:
        return self.vendors.setdefault(name, VendorProgress())

    def on_start(self, total: int) -> None:
        self.rows_total = total
        self.grading_started = time.monotonic()
        self.phase = "grading"

    def on_progress(self, done: int) -> None:
        self.rows_done += done
        if self.rows_total is not None and self.rows_done >= self.rows_total:
            self.phase = "scoring"

    def on_record(self, record: JudgeCallRecord) -> None:
        v = self.vendor(record.member)
        v.votes += 1
        v.retries += max(0, record.attempts - 1)
        v.spend_usd += record.cost_usd or 0.0
        v.errors += record.error is not None
        if record.request_id != v.last_request:  # the votes of one batched request are archived together
            v.requests += 1
            v.last_request = record.request_id
        if not record.shadow and record.audit_of is None:
            self.votes[record.round] = self.votes.get(record.round, 0) + 1

    def on_row_graded(self, row: ResponseRow, records: list[JudgeCallRecord], refused: bool) -> None:
        self.rows_seen += 1
        for member in {r.member for r in records if not r.shadow and r.audit_of is None}:
            self.vendor(member).rows_sat += 1

    def on_quota(self, stats: dict[str, dict]) -> None:
        for name, report in (stats or {}).items():
            if not isinstance(report, dict):
                continue
            v = self.vendor(name)
            requests = report.get("requests", report.get("granted_requests"))
            if isinstance(requests, int):
                v.quota_requests = requests
            limited = report.get("rate_limited")
            if isinstance(limited, int):
                v.rate_limited = limited

    # -- what is shown --

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def phase_label(self) -> str:
        if self.phase != "grading" or not any(self.votes.values()):  # a sharded run reports rows, not votes
            return self.phase
        expected = self.expected_votes()
        if expected and self.votes[1] >= expected:
            return "grading round 2"
        return "grading round 1" if not self.votes[2] else "grading rounds 1 and 2"

    def expected_votes(self) -> int | None:
        """Votes per round a full run needs: rows x seats (every row has the same panel size)."""
        return self.rows_total * self.seats if self.rows_total and self.seats else None

    def eta(self) -> float | None:
        if not self.rows_total or not self.rows_done or self.grading_started is None:
            return None
        rate = self.rows_done / max(1e-6, time.monotonic() - self.grading_started)
        return max(0, self.rows_total - self.rows_done) / rate

    def vendor_eta(self, v: VendorProgress) -> float | None:
        """Its share of the rows (the rows it sat on so far) x 2 rounds, less its votes, at its vote rate."""
        if not self.rows_total or not self.rows_seen or not v.votes or self.grading_started is None:
            return None
        expected = 2 * self.rows_total * v.rows_sat / self.rows_seen
        rate = v.votes / max(1e-6, time.monotonic() - self.grading_started)
        return max(0.0, expected - v.votes) / rate

    def spend(self) -> float:
        return sum(v.spend_usd for v in self.vendors.values())

    def rounds_text(self) -> str:
        if not any(self.votes.values()):
            return ""
        expected = self.expected_votes()
        of = f"/{expected:,}" if expected else ""
        return f"round 1 {self.votes[1]:,}{of}, round 2 {self.votes[2]:,}{of} votes"

    def rows_text(self) -> str:
        if self.rows_total is None:
            return "-"
        share = f" ({100 * self.rows_done / self.rows_total:.0f}%)" if self.rows_total else ""
        return f"{self.rows_done:,}/{self.rows_total:,} rows{share}"

    def vendor_rows(self) -> list[list[str]]:
        return [[name, f"{v.quota_requests if v.quota_requests is not None else v.requests:,}", f"{v.rate_limited:,}",
                 f"{v.retries:,}", f"{v.errors:,}", _usd(v.spend_usd), _clock(self.vendor_eta(v))]
                for name, v in sorted(self.vendors.items())]

    def line(self) -> str:
        """One plain progress line."""
        parts = [f"[{_clock(self.elapsed())}] {self.phase_label()}"]
        if self.rows_total is not None:
            rounds = f"; {self.rounds_text()}" if self.rounds_text() else ""
            parts.append(f"{self.rows_text()}, ETA {_clock(self.eta())}{rounds}; spent {_usd(self.spend())}")
        vendors = "; ".join(f"{name} {req} req, {limited} 429s, {retries} retries, {spend}, ETA {eta}"
                            for name, req, limited, retries, _, spend, eta in self.vendor_rows())
        return ": ".join(parts) + (f" | {vendors}" if vendors else "")

    def render(self) -> Any:
        """The live display: the phase line, then a table of vendors."""
        head = Text(f"{self.phase_label()}  {_clock(self.elapsed())}", style="bold")
        if self.rows_total is not None:
            head.append(f"   {self.rows_text()}   ETA {_clock(self.eta())}   {self.rounds_text()}   "
                        f"spent {_usd(self.spend())}", style="")
        if not self.vendors:
            return head
        table = Table(box=None, padding=(0, 2), show_edge=False)
        for i, col in enumerate(("vendor", "requests", "429s", "retries", "errors", "spend", "ETA")):
            table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
        for row in self.vendor_rows():
            table.add_row(*row)
        return Group(head, table)


class ProgressDisplay:
    """The board on stderr while a run goes on: a live display on a terminal, else one plain line every
    ``every`` seconds (none when ``every`` is 0)."""

    def __init__(self, board: RunBoard, every: float) -> None:
        self.board = board
        self.every = every
        self.live: Live | None = None
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()

    def __enter__(self) -> ProgressDisplay:
        if _drawn(console):
            # Not redirecting stdout / stderr: the driver may repoint stderr (council.cluster.raycluster).
            self.live = Live(console=console, get_renderable=self.board.render, refresh_per_second=4,
                             transient=False, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        elif self.every > 0:
            self.thread = threading.Thread(target=self._lines, name="council-progress", daemon=True)
            self.thread.start()
        return self

    def _lines(self) -> None:
        while not self.stopped.wait(self.every):
            _say(self.board.line(), to=console, markup=False)

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        if self.live is not None:
            self.live.stop()
        if self.thread is not None:
            self.thread.join(timeout=1)


# ---- run and grade -----------------------------------------------------------------------------------------


def _estimate(args: argparse.Namespace) -> int:
    from council.tools.estimate import estimate

    items = bank.load_bank(args.bank)
    models = _models(args)
    config = council_config(args)
    rows = [] if models else bank.load_responses(args.responses, items, vendor_map=config.vendor_map)
    est = estimate(config, {i.id: i for i in items}, rows, models)
    if args.json:
        out.print_json(data=est.as_dict())
        return EXIT_OK
    _table(f"estimate: {est.rows} rows",
           ("vendor", "votes", "batch", "reqs", "tok in", "tok out", "cost $", "max rpm", "min"),
           [(v.vendor, str(v.votes), str(v.batch_size), str(v.requests), str(v.input_tokens), str(v.output_tokens),
             f"{v.cost_usd:.4f}", f"{v.sustainable_rpm:.0f}" if v.sustainable_rpm else "∞", f"{v.minutes:.1f}")
            for v in est.vendors])
    d = est.as_dict()
    bound = f"{est.t_star_s:.1f} s" if est.t_star_s else "none (no vendor has a limit)"
    _say(f"requests {d['requests']}, cost ${d['cost_usd']:.4f}, quota lower bound T* = {bound}")
    if est.unpriced:
        _say(f"[yellow]no price[/yellow] for {escape(', '.join(est.unpriced))}: their cost is counted as $0 and "
             "--budget-usd will refuse to run until they are priced")
    return EXIT_OK


def _resume_conflicts(args: argparse.Namespace) -> list[str]:
    """The options given with --resume that would change what the run is (they were fixed when it started)."""
    defaults = vars(build_parser().parse_args([args.command]))
    return sorted("--" + k.replace("_", "-") for k, v in vars(args).items()
                  if k not in RESUME_MAY_SET and v != defaults.get(k))


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
            raise ConfigError(f"--resume continues run {resume} exactly as it was started; {', '.join(conflicts)} "
                              f"would change it (start a new run to grade with other settings)")
    raycluster.keep_native_notices_off_stderr()  # Ray's C++ notices go to its log folder, not this terminal
    config = council_config(args) if resume is None else None
    url = provider_url(args) if resume is None else None
    if resume is None:
        seats = _seats(config.roster)
    else:
        seats = _seats(RunFolder.open_run(args.runs_dir, resume).read_json(MANIFEST).get("roster", []))
    board = RunBoard(seats)
    with ProgressDisplay(board, args.progress_every):
        imported, skipped = None, []
        if args.command == "grade":
            result = importers.load_from_args(args, bank.load_bank(args.bank), vendor_map=config.vendor_map)
            if result.problems and not args.skip_invalid:
                raise InputError([*result.problems, f"nothing was graded; fix the records, or pass --skip-invalid to "
                                                    f"grade the {len(result.rows)} valid ones"])
            for problem in result.problems[:20]:
                _say(f"[yellow]skipped:[/yellow] {escape(problem)}", to=console)
            if len(result.problems) > 20:
                _say(f"[yellow]... and {len(result.problems) - 20} more problems[/yellow]", to=console)
            _say(f"imported {len(result.rows)} rows from {escape(str(args.responses))} ({args.format}; bank ids: "
                 f"{escape(result.ids)})", to=console)
            imported, skipped = result.rows, result.problems
        hooks = board.hooks()
        if resume is None:
            if _models(args) and Path(args.responses) != bank.SAMPLE_RESPONSES:
                raise ConfigError("--models asks the models for answers; it cannot be combined with --responses")
            req = RunRequest(
                bank=args.bank, responses=args.responses, runs_dir=args.runs_dir, run_id=args.run_id,
                backend=args.backend, provider_url=url, ray_address=args.ray_address,
                config=config, sim_config=args.sim_config, reuse_from=args.reuse_from, command=command_line,
                models=_models(args), rows=imported, skipped_inputs=skipped, shards=args.shards or 0,
            )
            result = _with_signals(lambda stop: run_council(req, stop=stop, hooks=hooks))
        else:
            result = _with_signals(lambda stop: resume_council(
                args.runs_dir, resume, backend=args.backend, provider_url=args.provider_url,
                ray_address=args.ray_address, shards=args.shards, budget_usd=args.budget_usd, command=command_line,
                stop=stop, hooks=hooks))
        board.phase = "report"
    return _outcome(result, args.command)


def _outcome(result: RunResult, command: str = "run") -> int:
    """Print the run's result and say how it ended; the exit code says it too."""
    if result.summary["rows"] or result.error is None:
        print_result(result, command)
    again = f"council run --resume {result.run_dir.name}"
    reason = result.stop.reason if result.stop else None
    if result.error is not None:
        _say(f"[red]stopped: a provider cannot be used:[/red] {escape(str(result.error))}. Everything answered is "
             f"archived; fix the provider settings, then `{again}`", to=console)
        return EXIT_PROVIDER
    if reason in EXIT_SIGNAL:
        _say(f"[yellow]stopped ({reason})[/yellow]: {result.not_graded} rows not graded; every answered call is "
             f"archived. Continue with `{again}`", to=console)
        return EXIT_SIGNAL[reason]
    if result.stopped_by_budget:
        _say(f"[yellow]stopped by the budget[/yellow] (${result.budget.spent_usd:.4f} spent, {result.not_graded} "
             f"rows not graded); everything is archived: continue with `{again} --budget-usd LARGER`", to=console)
        return EXIT_BUDGET
    if result.not_graded:
        _say(f"[red]{result.not_graded} rows not graded[/red] (calls failed after their retries, or rows were "
             f"refused; see diagnostics); they are not scored. Ask failed calls again with `{again}`", to=console)
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
            _say(f"[yellow]stopping[/yellow]: no new calls; calls in flight have {stop.grace_s:.0f} s to finish and "
                 "be archived (press Ctrl-C again to stop at once)", to=console)
            return
        _say("[red]stopped at once[/red]: calls in flight are lost; the archive is intact", to=console)
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


# ---- printing a run's results -------------------------------------------------------------------------------


def print_result(result: RunResult, command: str = "run") -> None:
    """What a run found: the leaderboard (or the graded scales), the grader rules, the models under test,
    deliberation and agreement, warnings and the run folder; titled by the command that ran it."""
    s = result.summary
    if s.get("scales"):
        _print_scales(s)
    label = "  SIMULATED" if s.get("simulated") else ""
    if s.get("scaled_rows", 0) < s["rows_total"]:  # graded items only: the correct / incorrect tables are empty
        _print_leaderboard(s, f"council {command} {s['run_id']}  ({s['rows']} rows, {result.seconds:.1f} s){label}")
    _print_simulated(s)
    _print_partial(s)
    if s.get("scaled_rows", 0) < s["rows_total"]:
        _print_rules(s.get("grader_rules"))
        _print_elicitation(s)
        _print_metrics(s)
    _print_warnings(s)
    _say(f"run folder: {escape(str(result.run_dir))}")


def _print_leaderboard(s: dict[str, Any], title: str) -> None:
    ci = s.get("uncertainty", {}).get("scores", {})
    has_truth = "accuracy_vs_gold" in s
    header = ("model", "rows", "round 1", "council", "95% CI", "ties", *(("truth",) if has_truth else ()))
    ranked = sorted(s.get("models", {}).items(), key=lambda kv: -(kv[1]["score"] or 0.0))
    rows = []
    for model, m in ranked:
        c = ci.get(model, {})
        rows.append((model, str(m["rows"]), _pct(m["score_round1"]), _pct(m["score"]),
                     f"{_pct(c.get('ci_low'))}-{_pct(c.get('ci_high'))}" if c else "-", _pct(m.get("tie_rate")),
                     *((_pct(m.get("true_score")),) if has_truth else ())))
    _table(title, header, rows)


def _print_simulated(s: dict[str, Any]) -> None:
    if s.get("simulated"):
        _say("[bold yellow]SIMULATED[/bold yellow]: graded by the embedded provider's simulated judges; no real "
             "model was asked.")


def _print_metrics(s: dict[str, Any]) -> None:
    pairs: list[tuple[str, str]] = []
    unc = s.get("uncertainty", {})
    for key in ("deliberation_impact", "agreement_lift", "consensus_flip_rate", "unanimity_lift"):
        band = unc.get(key)
        pairs.append((key, _num(s.get(key)) + (f"  [{_num(band['ci_low'])}, {_num(band['ci_high'])}]" if band else "")))
    for round_, a in s.get("agreement", {}).items():
        pairs.append((f"{round_}: Fleiss kappa / Krippendorff alpha",
                      f"{_num(a['fleiss_kappa'])} / {_num(a['krippendorff_alpha'])}"))
    herding = s.get("herding")
    if herding:
        pairs.append(("flips conforming to peers' majority", _pct(herding["conformity_share_overall"])))
        pairs.append(("agreement_lift from weak majorities", _num(herding["agreement_lift_weak"])))
    for key, value in s.get("flags", {}).items():
        pairs.append((f"rows flagged {key}", str(value)))
    if "accuracy_vs_gold" in s:
        acc = s["accuracy_vs_gold"]
        pairs.append(("accuracy vs truth: council", _pct(acc["council"])))
        pairs.append(("accuracy vs truth: round one", _pct(acc["round1"])))
        for member, value in acc["members_round1"].items():
            pairs.append((f"accuracy vs truth: {member} alone", _pct(value)))
        pairs.append(("effective independent judges", _num(s.get("reliability_vs_truth", {}).get("effective_judges"))))
    _pairs("deliberation and agreement", pairs)


def _print_partial(s: dict[str, Any], to: Console | None = None) -> None:
    """A line saying that a run is partial (and why), since its scores cover only the rows it graded."""
    if s.get("complete", True):
        return
    state = s.get("state", {})
    why = state.get("reason") or ("still running, or crashed" if state.get("state") == "running" else "rows not graded")
    _say(f"[bold yellow]PARTIAL[/bold yellow] run ({escape(str(why))}): {s['not_graded_rows']} of {s['rows_total']} "
         "rows not graded; scores cover the graded rows only.", to=to)


def _warnings(summary: dict[str, Any]) -> list[str]:
    diag = summary.get("diagnostics", {})
    lines = []
    for name in diag.get("warnings", []):
        rate = diag.get(f"{name}_rate")
        detail = f" ({100 * rate:.1f}%)" if isinstance(rate, float) else ""
        lines.append(f"{name}{detail} above {100 * WARN_RATE:.0f}%")
    return lines


def _print_warnings(summary: dict[str, Any], to: Console | None = None) -> None:
    for line in _warnings(summary):
        _say(f"[yellow]warning:[/yellow] {escape(line)}", to=to or console)


def _print_scales(s: dict[str, Any]) -> None:
    """Per graded scale: each model's 0-100 score with its interval and per dimension; then reliability and
    deliberation per dimension."""
    for name, sc in s.get("scales", {}).items():
        dims = list(sc["dimensions"])
        ranked = sorted(sc.get("models", {}).items(), key=lambda kv: -(kv[1]["score"] or 0.0))
        _table(f"scale {name} ({sc['rows']} rows; levels 0-{sc['high']}; 0-100 normalised)",
               ("model", "rows", "score", "95% CI", *dims),
               [(model, str(m["rows"]), _points(m["score"]), f"{_points(m['ci_low'])}-{_points(m['ci_high'])}",
                 *(_points(m["by_dimension"][d]["score"]) for d in dims)) for model, m in ranked])
        if "reliability" not in sc:
            continue
        rows = []
        for d in dims:
            r1, r2 = sc["reliability"][d]["round1"], sc["reliability"][d]["round2"]
            rows.append((d, f"{sc['dimensions'][d]:g}", f"{_num(r1['alpha_ordinal'])} / {_num(r2['alpha_ordinal'])}",
                         f"{_num(r1['icc2_1'])} / {_num(r2['icc2_1'])}",
                         _pct(sc["deliberation_impact"]["by_dimension"][d]),
                         _num(sc["agreement_lift"]["by_dimension"][d]),
                         str(sc["flags"]["omitted"][d]), str(sc["flags"]["split"][d])))
        _table(f"scale {name}: agreement and deliberation per dimension",
               ("dimension", "weight", "alpha ordinal r1/r2", "ICC(2,1) r1/r2", "levels moved", "dispersion lift",
                "omitted", "split"), rows)


def _print_elicitation(s: dict[str, Any]) -> None:
    """Per model under test: what was asked and graded, truncation, and calibration against the council."""
    el, cal = s.get("elicitation"), s.get("calibration", {})
    if not el:
        return
    _table("models under test", ("model", "asked", "graded", "truncated", "abstained", "Brier", "ECE", "selective"),
           [(model, str(e["asked"]), str(e["graded"]), str(e["truncated"]), str(e["abstained"]),
             _num(cal.get(model, {}).get("brier")), _num(cal.get(model, {}).get("ece")),
             _num(cal.get(model, {}).get("selective"))) for model, e in el.items()])


def _print_rules(rules: dict[str, Any] | None) -> None:
    """The grader-rule table: how the leaderboard moves under other grading rules."""
    if not rules:
        return
    rows = []
    for rule in rules["rules"]:
        change = rules["max_abs_change_vs_council"].get(rule)
        rows.append((rule, rules["top_model"].get(rule) or "-", _num(rules["kendall_tau_vs_council"].get(rule)),
                     "-" if change is None else f"{100 * change:.1f} pts"))
    _table("grader-rule sensitivity (vs council)", ("rule", "top model", "Kendall tau", "max score change"), rows,
           text_columns=2)


# ---- run folders: finding, listing, showing ----------------------------------------------------------------


def _open_run(runs_dir: Path, run: str) -> RunFolder:
    """A run named by its id under ``runs_dir``, by a unique prefix of one, or by its folder's path."""
    try:
        candidate = run_path(runs_dir, run)
    except RunFolderError:
        candidate = None
    if candidate is not None and candidate.is_dir():
        return RunFolder.open(candidate)
    given = Path(run)
    if (given / MANIFEST).is_file():
        return RunFolder.open(given)
    matches = sorted(p.name for p in _run_dirs(runs_dir) if p.name.startswith(run)) if "/" not in run else []
    if len(matches) == 1:
        return RunFolder.open(runs_dir / matches[0])
    if len(matches) > 1:
        raise ConfigError(f"{run!r} names {len(matches)} runs under {runs_dir} ({', '.join(matches[:5])}"
                          f"{', ...' if len(matches) > 5 else ''}); give more of the id")
    return RunFolder.open_run(runs_dir, run)  # says what is wrong with the name, or that there is no such run


def _run_dirs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        return []
    return [p for p in runs_dir.iterdir() if p.is_dir() and (p / MANIFEST).is_file()]


def _read_json(path: Path) -> Any:
    import orjson

    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _state_text(state: dict[str, Any] | None) -> str:
    if not state:
        return "unknown"
    reason = state.get("reason")
    return f"{state.get('state', 'unknown')}{f' ({reason})' if reason else ''}"


def _runs(args: argparse.Namespace) -> int:
    runs_dir: Path = args.runs_dir
    if runs_dir.exists() and not runs_dir.is_dir():
        raise ConfigError(f"{runs_dir}: not a folder")
    listed = []
    for path in _run_dirs(runs_dir):
        manifest = _read_json(path / MANIFEST) or {}
        summary = _read_json(path / SUMMARY) or {}
        state = _read_json(path / STATE)
        total = summary.get("rows_total", manifest.get("rows"))
        not_graded = summary.get("not_graded_rows", 0) if summary else None
        rows = "-" if total is None else f"{total - not_graded}/{total}" if not_graded else str(total)
        models = summary.get("models") or {}
        listed.append((manifest.get("created_at") or "", [
            path.name, _state_text(state), rows, str(len(models) or len(manifest.get("models", [])) or "-"),
            _usd(summary.get("cost_usd")), _when(manifest.get("created_at")),
            "yes" if manifest.get("simulated") else "no"]))
    if not listed:
        _say(f"no runs under {escape(str(runs_dir))}", to=console)
        return EXIT_OK
    listed.sort(key=lambda entry: (entry[0], entry[1][0]), reverse=True)
    _table(f"runs in {runs_dir} (newest first)", ("run", "state", "rows", "models", "cost", "created", "simulated"),
           [row for _, row in listed], align="llrrrll")
    return EXIT_OK


def _when(iso: str | None) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM`` UTC."""
    if not iso:
        return "-"
    try:
        return dt.datetime.fromisoformat(iso).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return iso


def _show(args: argparse.Namespace) -> int:
    folder = _open_run(args.runs_dir, args.run)
    if args.row is None:
        return _show_run(folder)
    return _show_row(folder, args.row)


def _show_run(folder: RunFolder) -> int:
    manifest = folder.read_json(MANIFEST)
    summary = _read_json(folder.path / SUMMARY)
    state = folder.read_state()
    command = " ".join(str(manifest.get("command", "")).split()[:2]) or "council"
    label = "  SIMULATED" if manifest.get("simulated") else ""
    pairs = [("state", _state_text(state)), ("created", _when(manifest.get("created_at"))), ("command", command)]
    if state.get("detail"):
        pairs.append(("detail", str(state["detail"])))
    roster = manifest.get("roster", [])
    pairs.append(("council", ", ".join(f"{m['vendor']} ({m['judge_model']}{', reserve' if m.get('reserve') else ''})"
                                       for m in roster)))
    pairs.append(("quorum / seed", f"{manifest.get('quorum')} / {manifest.get('seed')}"))
    if summary is None:
        pairs.append(("rows", str(manifest.get("rows", "-"))))
        _pairs(f"run {folder.path.name}{label}", pairs)
        _say(f"no summary yet: the run is {escape(_state_text(state))}; `council rescore {folder.path.name}` scores "
             "what its archive holds")
        return EXIT_OK
    total, not_graded = summary["rows_total"], summary.get("not_graded_rows", 0)
    scaled = f", {summary['scaled_rows']} on a graded scale" if summary.get("scaled_rows") else ""
    pairs.append(("rows", f"{total - not_graded} graded of {total} ({not_graded} not graded, "
                          f"{summary.get('refused_rows', 0)} refused{scaled})"))
    pairs.append(("cost", _usd(summary.get("cost_usd"))))
    pairs.append(("responses", manifest.get("responses_path") or f"asked: {', '.join(manifest.get('models', []))}"))
    _pairs(f"run {folder.path.name}{label}", pairs)
    if summary.get("scaled_rows", 0) < summary["rows_total"] and summary.get("models"):
        _print_leaderboard(summary, "leaderboard (council score, 95% bootstrap interval over items)")
    if summary.get("scales"):
        _print_scales(summary)
    _print_simulated(summary)
    _print_partial(summary)
    for line in _warnings(summary):
        _say(f"[yellow]warning:[/yellow] {escape(line)}")
    return EXIT_OK


def _find_row(folder: RunFolder, row: str) -> dict[str, Any]:
    """The verdict of the row ``row`` names (its id, or a unique prefix of one)."""
    exact, prefixed = None, []
    for _, verdict in iter_json(folder.path / VERDICTS, missing_ok=True):
        row_id = verdict.get("row_id", "")
        if row_id == row:
            exact = verdict
            break
        if row_id.startswith(row):
            prefixed.append(verdict)
    if exact is not None:
        return exact
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        names = ", ".join(v["row_id"] for v in prefixed[:5])
        raise ConfigError(f"{row!r} begins {len(prefixed)} row ids of run {folder.path.name} ({names}"
                          f"{', ...' if len(prefixed) > 5 else ''}); give more of it")
    raise ConfigError(f"run {folder.path.name} has no row {row!r} (nor one beginning with it) in {VERDICTS}")


def _row_records(folder: RunFolder, row_id: str) -> dict[int, dict[str, dict[str, Any]]]:
    """Each round's counted vote of every member on the row (a later record supersedes an earlier one)."""
    votes: dict[int, dict[str, dict[str, Any]]] = {1: {}, 2: {}}
    for round_, name in ROUND_FILES.items():
        for _, record in iter_json(folder.path / name, missing_ok=True):
            if record.get("row_id") == row_id and not record.get("shadow") and record.get("audit_of") is None:
                votes[round_][record["member"]] = record
    return votes


def _vote_text(record: dict[str, Any] | None, verdicts: dict[str, Any], member: str) -> str:
    if record is None:
        return f"{verdicts.get(member) or 'no vote'} (no record)" if member in verdicts else "no vote"
    if record.get("scores"):
        return ", ".join(f"{dim} {level}" for dim, level in record["scores"].items())
    if record.get("verdict"):
        return str(record["verdict"])
    return f"no valid vote ({record.get('error') or record.get('parse_status', 'unparseable')})"


def _show_row(folder: RunFolder, row: str) -> int:
    verdict = _find_row(folder, row)
    row_id = verdict["row_id"]
    records = _row_records(folder, row_id)
    members = list(verdict.get("members", []))
    reserves = set(verdict.get("reserves", []))
    graded_item = bool(verdict.get("scale"))
    probe = f" (probe {verdict['probe']})" if verdict.get("probe") else ""
    pairs = [("item", f"{verdict.get('item_id')}{probe}"),
             ("model", f"{verdict.get('model')} (vendor {verdict.get('vendor')})"),
             ("panel", ", ".join(f"{m}{' (reserve)' if m in reserves else ''}" for m in members) or "-")]
    if graded_item:
        score = verdict.get("score") or {}
        pairs.append(("scale", str(verdict["scale"])))
        pairs.append(("council levels", ", ".join(f"{d} {'-' if v is None else v}" for d, v in score.items()) or "-"))
        pairs.append(("council score", _points(verdict.get("score_normalised"))))
    else:
        pairs.append(("consensus", f"{verdict.get('consensus') or 'none'} (round one: "
                                   f"{verdict.get('consensus_round1') or 'none'})"))
    if verdict.get("gold_verdict"):
        pairs.append(("truth", str(verdict["gold_verdict"])))
    if not verdict.get("graded", True):
        pairs.append(("graded", "no: the panel did not vote in full; not scored"))
    pairs.append(("flags", ", ".join(verdict.get("flags", [])) or "none"))
    _pairs(f"row {row_id}", pairs)

    # letters: viewer -> {letter: vendor}; a member's letters: [(viewer, letter)]
    keys = {viewer: rec.get("peer_letters") or {} for viewer, rec in records[2].items()}
    seen_as: dict[str, list[str]] = {m: [] for m in members}
    for viewer, letters in sorted(keys.items()):
        for letter, vendor in sorted(letters.items()):
            seen_as.setdefault(vendor, []).append(f"{letter} by {viewer}")
    votes = {1: verdict.get("votes_round1", {}), 2: verdict.get("votes_round2", {})}
    for member in dict.fromkeys([*members, *records[1], *records[2]]):
        title = f"{member}{' (reserve)' if member in reserves else ''}"
        letters = seen_as.get(member)
        title += f": seen as {', '.join(letters)}" if letters else ": seen by no peer in round two"
        _say(title, markup=False)
        for round_ in (1, 2):
            record = records[round_].get(member)
            reason = (record or {}).get("reason") or ""
            changed = ""
            if round_ == 2 and record is not None and records[1].get(member) is not None:
                before = _vote_text(records[1][member], votes[1], member)
                changed = " (changed)" if before != _vote_text(record, votes[2], member) else ""
            _say(f"  round {round_}: {_vote_text(record, votes[round_], member)}{changed}"
                 f"{f' - {reason}' if reason else ''}", markup=False)
    _say("", markup=False)
    if keys:
        _say("key: the letter under which each member saw its peers in round two", markup=False)
        for viewer, letters in sorted(keys.items()):
            _say(f"  {viewer} saw: " + ", ".join(f"{letter} = {vendor}" for letter, vendor in sorted(letters.items())),
                 markup=False)
    else:
        _say("key: no round-two record (no letters were shown)", markup=False)
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    try:
        from council.report import write_report
    except ImportError:  # the report package keeps its page in a module of its own
        from council.report.page import write_report

    folder = _open_run(args.runs_dir, args.run)
    path = write_report(folder.path)
    _say(escape(str(path)))
    return EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from council.protocol.configfile import example_toml

    path: Path = args.path
    if path.suffix.lower() != ".toml":
        raise ConfigError(f"{path}: council init writes TOML; give the file a .toml name")
    text = example_toml()
    try:
        with open(path, "x", encoding="utf-8") as handle:  # never over an existing file
            handle.write(text)
    except FileExistsError:
        raise ConfigError(f"{path} already exists; it is never overwritten (remove it, or give another PATH)") from None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    _say(f"wrote {escape(str(path))}: edit it, then pass --config {escape(str(path))}", to=console)
    return EXIT_OK


def _rescore(args: argparse.Namespace) -> int:
    from council.scoring.scoring import rescore

    folder = _open_run(args.runs_dir, args.run_id)
    summary = rescore(folder)
    _say(f"rescored {escape(folder.path.name)}: {summary['rows']} rows, {len(summary['models'])} models")
    _print_partial(summary)
    _print_warnings(summary)
    return EXIT_OK


def _crossjudge(args: argparse.Namespace) -> int:
    from council.tools.crossjudge import crossjudge

    result = asyncio.run(crossjudge(args.runs_dir, args.run_id, args.judge, name=args.name,
                                    provider_url=args.provider_url, resamples=args.resamples))
    report = result.report
    if args.json:
        out.print_json(data=report)
        return EXIT_OK
    _say(f"cross-judge {report['grader']} on {args.run_id}: {report['paired_rows']} of {report['rows']} rows paired "
         f"({result.asked} votes asked, {result.archived} from the report's archive) -> {result.folder}", markup=False)

    def line(label: str, stat: dict | None, value: str = "value") -> None:
        if stat is None:
            _say(f"  {label}: n/a", markup=False)
            return
        low, high = stat.get(f"{value}_low", stat.get("low")), stat.get(f"{value}_high", stat.get("high"))
        extra = f", no-preference up to {stat['null_high']:.2f}" if stat.get("null_high") is not None else ""
        reading = (stat.get("reading") or "n/a").replace("_", " ")
        number = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
        _say(f"  {label}: {number(stat.get(value))} [{number(low)}, {number(high)}]{extra}: {reading}", markup=False)
        _say(f"    {stat.get('rule', '')}", markup=False)

    line("mean_delta", report["mean_delta"])
    line("rank_correlation (Kendall tau-b)", report["rank_correlation"], "kendall")
    line("rank_correlation (Spearman)", report["rank_correlation"], "spearman")
    line("provider_spread", report["provider_spread"])
    line("group_spread", report["group_spread"])
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    """Exit 6 whenever the runs are not comparable, whatever is printed."""
    from council.scoring.diff import diff_runs

    d = diff_runs(_open_run(args.runs_dir, args.run_a), _open_run(args.runs_dir, args.run_b))
    code = EXIT_OK if d["comparable"] else EXIT_NOT_COMPARABLE
    if args.json:
        out.print_json(data=d)
        return code
    if d["comparable"]:
        _say(f"[green]comparable[/green]: same prompts, rules, data and judges ({d['rows_compared']} rows)")
    else:
        _say("[yellow]not comparable[/yellow]: " + escape(", ".join(m.get("why", m["field"]) for m in d["mismatches"])))
    _table("per-model score", ("model", d["a"], d["b"], "change"),
           [(model, _pct(m["a"]), _pct(m["b"]), "-" if m["delta"] is None else f"{100 * m['delta']:+.1f}")
            for model, m in d["models"].items()])
    _say(f"{len(d['changed_rows'])} row verdicts changed")
    for row in d["changed_rows"][:20]:
        _say(f"  {row['row_id']}: {row['a']} -> {row['b']}", markup=False)
    if len(d["changed_rows"]) > 20:
        _say(f"  ... and {len(d['changed_rows']) - 20} more (--json lists them all)", markup=False)
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
        _say(f"[yellow]stopped waiting[/yellow]: {where}", to=console)
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
    _say(f"[{colour}]job {view['id']} {state}[/{colour}]{f' ({reason})' if reason else ''}: "
         f"{counts['graded_rows']} rows graded, {not_graded} not graded, ${view['spend_usd']:.4f}{label}", to=console)
    for error in view.get("errors", [])[:5]:
        _say(f"[red]error:[/red] {escape(error)}", to=console)
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
    return EXIT_OK


# ---- main ----------------------------------------------------------------------------------------------------


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "estimate": _estimate, "loadtest": loadtest.run, "rescore": _rescore, "diff": _diff, "crossjudge": _crossjudge,
    "show": _show, "runs": _runs, "report": _report, "init": _init, "serve": _serve, "submit": _submit, "sim": _sim,
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
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    try:
        if args.command in ("run", "grade"):
            return _grade(args, shlex.join(["council", *argv]))
        return COMMANDS[args.command](args)
    except ProviderUnavailable as exc:
        _say(f"[red]provider unusable:[/red] {escape(str(exc))}", to=console)
        return EXIT_PROVIDER
    except CouncilError as exc:
        _say(f"[red]error:[/red] {escape(str(exc))}", to=console)
        return EXIT_INPUT
    except ValidationError as exc:
        _say(f"[red]error:[/red] {escape(validation_problems(exc))}", to=console)
        return EXIT_INPUT
    except KeyboardInterrupt:
        _say("[yellow]interrupted[/yellow]: records archived so far are in the run folder", to=console)
        return EXIT_SIGNAL["interrupt"]
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE  # the reader has gone (`| head`): nothing left to say, and nobody to say it to
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, the traceback to the log
        from council.core import logs

        logs.get_logger("council.cli").exception("internal_error")
        _say(f"[red]internal error:[/red] {type(exc).__name__}: {escape(str(exc))}", to=console)
        return EXIT_INTERNAL


def _quiet_stdout() -> None:
    """The reader of stdout has gone (``| head``): send what is left to nowhere, so that exiting does not
    report the broken pipe once more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
