"""The options several commands share, each with the help ``--help`` shows (its default included), and the checks
of their values: a bad value is an error of the command that names the option."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bank
from council.run.runner import BACKENDS

PROGRESS_EVERY_S = 10.0
SAMPLE_BANK_HELP = f"the shipped sample, bank/samples/{bank.SAMPLE_BANK.name}"
SAMPLE_RESPONSES_HELP = f"the shipped sample, bank/samples/{bank.SAMPLE_RESPONSES.name}"
CONFIG_HELP = ("council config, TOML or JSON (`council init` writes an example): roster, quorum, seed, per-vendor "
               "limits and prices; COUNCIL_<FIELD> environment variables override it and options override both "
               "(default: none: the built-in council)")


def _number(text: str, kind: type, ok: Callable[[float], bool], must: str) -> Any:
    """``text`` as a ``kind`` (float or int) for which ``ok`` holds, else an argparse error saying what it must be."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a {'number' if kind is float else 'whole number'}: {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {must}, got {text}")
    return value


def positive(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "greater than 0")


def seconds(text: str) -> float:
    return _number(text, float, lambda v: v >= 0, "0 (no progress lines) or more")


def count(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "at least 1")


def fraction(text: str) -> float:
    value = positive(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value


def share(text: str) -> float:
    """A share in [0, 1] (0: none)."""
    return _number(text, float, lambda v: 0.0 <= v <= 1.0, "a share in [0, 1]")


def host_arg(p: argparse.ArgumentParser) -> None:
    """The address a server (the service, the embedded provider) listens on."""
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")


def runs_dir_arg(p: argparse.ArgumentParser, what: str = "where the run folders are") -> None:
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR", help=f"{what} (default: ./runs)")


def input_args(p: argparse.ArgumentParser, *, responses_required: bool) -> None:
    """What is graded: the bank and the responses."""
    p.add_argument("--bank", type=Path, default=bank.SAMPLE_BANK, metavar="FILE",
                   help=f"question bank JSONL (default: {SAMPLE_BANK_HELP})")
    if responses_required:
        p.add_argument("--responses", type=Path, required=True, metavar="PATH",
                       help="responses to grade: a file (or a folder, for --format overlooked)")
    else:
        p.add_argument("--responses", type=Path, default=bank.SAMPLE_RESPONSES, metavar="FILE",
                       help=f"responses JSONL to grade (default: {SAMPLE_RESPONSES_HELP})")


def council_args(p: argparse.ArgumentParser) -> None:
    """Who grades what: the config, the vendors of the models, self-exclusion."""
    p.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--vendor-map", type=Path, metavar="FILE",
                   help="JSON object mapping a model id (or its prefix before '/') to its vendor; wins over the "
                        "built-in rules and the config's vendor_map (needed for ids of no known family) "
                        "(default: none)")
    p.add_argument("--no-self-exclusion", action="store_true",
                   help="audit only: let a vendor's judge grade its own vendor's models (recorded in the manifest) "
                        "(default: off: a vendor never grades its own models)")


def protocol_args(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--batch-audit", type=fraction, metavar="FRACTION",
                   help="re-ask this seeded share of batched votes alone and report batched-vs-solo agreement "
                        "(default: the config's, else none)")
    p.add_argument("--deliberate", choices=("all", "disputed"),
                   help="all: round two on every row; disputed: only on rows whose round one is not unanimous (a "
                        "graded item: some dimension's levels spread by more than one), the others keep their "
                        "round-one verdict (default: the config's, else disputed)")
    p.add_argument("--deliberation-audit", type=share, metavar="SHARE",
                   help="with --deliberate disputed: this seeded share of the skipped rows still gets round two, "
                        "never counted; the summary says how many verdicts it would have changed (default: the "
                        "config's, else 0.1)")
    p.add_argument("--budget-usd", type=positive, metavar="USD",
                   help="issue no call that would take projected spend over this; the run stays resumable with a "
                        "larger budget (default: the config's, else no budget)")


def provider_args(p: argparse._ActionsContainer, whose: str = "every vendor's calls") -> None:
    """Where ``whose`` calls go: a real provider's base URL, or the embedded provider and its behaviour file."""
    p.add_argument("--provider-url", metavar="URL",
                   help=f"send {whose} to this OpenAI-compatible base URL (ending in /v1) (default: none: the "
                        "embedded provider, for the shipped sample or with --simulate)")
    p.add_argument("--simulate", action="store_true",
                   help="grade with the embedded provider's simulated judges: no real model is asked (default: "
                        "off; on for the shipped sample)")
    p.add_argument("--sim-config", type=Path, metavar="FILE",
                   help="JSON behaviour file of the embedded provider (default: its planted behaviour)")


def running_args(p: argparse.ArgumentParser) -> None:
    """Where the run goes and where its calls are made; none of these changes the run's results."""
    runs_dir_arg(p, "where run folders go")
    p.add_argument("--run-id", metavar="ID",
                   help="name of the new run's folder; an existing run is never overwritten (default: the UTC time "
                        "and a random suffix, e.g. 20261130-210326-ffbe)")
    provider_args(p)
    p.add_argument("--no-check", action="store_true",
                   help="start without `council check` (one request per seat), which a run against any provider but "
                        "the embedded one runs first (default: checked)")
    p.add_argument("--reuse-from", action="append", default=[], metavar="RUN_ID",
                   help="serve votes whose request is archived in this earlier run from its archive; repeatable "
                        "(default: none)")
    p.add_argument("--backend", choices=BACKENDS, default="ray",
                   help="ray: one actor per judge on a local Ray instance (or --ray-address); local: in this "
                        "process, no Ray (default: ray)")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="join this Ray cluster (e.g. auto) (default: none: start a private local instance on "
                        "127.0.0.1)")
    p.add_argument("--transport", choices=("sync", "batch"),
                   help="sync: every vote a chat call; batch: through the providers' batch APIs, at their batch "
                        "price (about half), results within 24 hours; a vendor whose config says transport = "
                        "\"sync\" stays synchronous (default: the config's, else sync)")
    p.add_argument("--shards", type=count, metavar="N",
                   help="spread the rows over N shard workers (Ray actors placed across the cluster's nodes, one "
                        "CPU each) that share each vendor's one quota; the run folder stays on this node "
                        "(default: none: one coordinator in this process)")
    p.add_argument("--compress-archive", action="store_true",
                   help="write the run's archive and rows as zstd frames, about 7x smaller; every command reads "
                        "them as it reads plain files (default: off)")
    p.add_argument("--no-report", action="store_true",
                   help="draw no report.html at the run's end (`council report RUN` draws it later); "
                        "COUNCIL_NO_REPORT=1 in the environment does the same (default: drawn)")
    p.add_argument("--timings", action="store_true",
                   help="print where the run's wall time went, phase by phase, after its results (also logged: "
                        "log.jsonl, event run.done) (default: off)")
    p.add_argument("--progress-every", type=seconds, default=PROGRESS_EVERY_S, metavar="S",
                   help="when stderr is not a terminal, print one progress line every S seconds; 0: none (default: "
                        "10; on a terminal the progress is a live display)")
