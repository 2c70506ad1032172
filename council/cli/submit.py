"""``council submit``: send a rows file to a grading service (``council serve``) through
:class:`council.service.client.Client`, and with --wait follow the job to its end, streaming its verdicts."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from council.console.exits import EXIT_OK, EXIT_SIGNAL
from council.console.help import add_command
from council.console.options import positive
from council.console.outcomes import job_outcome
from council.console.output import console, say
from council.console.progress import job_progress
from council.core.errors import ConfigError

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


def add_parser(sub: argparse._SubParsersAction) -> None:
    submit = add_command(sub, "submit", "submit a rows file to a grading service (council serve)", epilog=SUBMIT_EPILOG,
                         example="council submit rows.jsonl --url http://127.0.0.1:8080 --wait")
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


def submit(args: argparse.Namespace) -> int:
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
