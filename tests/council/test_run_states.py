"""Incomplete is visible, options are checked before anything is paid, and money is bounded."""

from __future__ import annotations

import orjson
import pytest

import bank
from council.cli import main
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from tests.council._roster import SMALL_ROSTER
from tests.council.test_end_to_end import lines, subset

PRICED = {v: {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0}
          for v in ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")}


def priced_config(tmp_path, **extra) -> str:
    path = tmp_path / "council.json"
    path.write_bytes(orjson.dumps({"vendors": PRICED, **extra}))
    return str(path)


def test_partial_runs_are_marked_and_never_comparable(tmp_path, capsys):
    runs = str(tmp_path / "runs")
    args = ["run", "--backend", "local", "--runs-dir", runs, "--responses", str(subset(tmp_path, 10)), "--simulate",
            "--config", priced_config(tmp_path, rows_in_flight=4)]
    assert main([*args, "--run-id", "full"]) == 0
    cost = orjson.loads((tmp_path / "runs" / "full" / "summary.json").read_bytes())["cost_usd"]
    assert main([*args, "--run-id", "part", "--budget-usd", str(round(cost / 3, 6))]) == 3
    part = orjson.loads((tmp_path / "runs" / "part" / "summary.json").read_bytes())
    assert part["complete"] is False and part["state"]["state"] == "stopped" and part["state"]["reason"] == "budget"
    assert orjson.loads((tmp_path / "runs" / "full" / "summary.json").read_bytes())["complete"] is True
    assert main(["rescore", "part", "--runs-dir", runs]) == 0
    assert "PARTIAL run (budget)" in capsys.readouterr().out  # rescore says so too
    assert orjson.loads((tmp_path / "runs" / "part" / "summary.json").read_bytes())["complete"] is False
    assert main(["diff", "full", "part", "--runs-dir", runs]) == 6
    out = capsys.readouterr().out
    assert "not comparable" in out and "run b is partial (stopped, budget" in out


def test_resume_refuses_flags_that_would_change_the_run(tmp_path, capsys):
    runs = str(tmp_path / "runs")
    base = ["run", "--backend", "local", "--runs-dir", runs]
    assert main([*base, "--run-id", "r", "--responses", str(subset(tmp_path, 2)), "--simulate"]) == 0
    capsys.readouterr()
    for flags in (["--seed", "3"], ["--quorum", "2"], ["--no-self-exclusion"], ["--batch-audit", "0.5"]):
        assert main([*base, "--resume", "r", *flags]) == 2
        err = capsys.readouterr().err
        assert flags[0] in err and "start a new run" in err and "Traceback" not in err
    assert main([*base, "--resume", "r"]) == 0  # nothing to do, nothing paid
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--budget-usd", "-1"], "must be greater than 0"),
    (["--batch-audit", "2"], "fraction"),
])
def test_option_values_are_checked_by_argparse(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), *argv])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_config_values_are_checked_with_plain_messages(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"vendors": {"opnai": {"rpm": 10}}, "quorum": 7}')
    assert main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "unknown vendor 'opnai'" in err and "quorum 7 is larger than the smallest panel" in err
    assert "pydantic" not in err and "Traceback" not in err and not (tmp_path / "runs").exists()


def test_a_budget_needs_every_price(tmp_path, capsys):
    unknown = "mistralai/no-such-model-9"  # a judge no price table knows
    roster = [{**m.model_dump(), **({"judge_model": unknown} if m.vendor == "mistral" else {})}
              for m in CouncilConfig().roster]
    config = tmp_path / "unknown.json"
    config.write_bytes(orjson.dumps({"roster": roster}))
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--budget-usd", "1", "--config", str(config)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no price for" in err and unknown in err and not (tmp_path / "runs").exists()
    assert main(["estimate", "--config", str(config), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["unpriced"] == [unknown]
    assert main(["estimate", "--json"]) == 0  # the table prices the default council
    assert orjson.loads(capsys.readouterr().out)["unpriced"] == []


async def test_oversized_rows_are_refused_and_never_sent(tmp_path):
    rows = [orjson.loads(x) for x in subset(tmp_path, 3).read_bytes().splitlines()]
    rows[0]["response"] = "The answer is 52,544. " * 10_000  # ~220,000 characters
    rows[5]["response"] = "x" * 90_000  # under max_response_chars, but over a 16k-token context
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    config = CouncilConfig(vendors={"google": {"context_tokens": 16_000}})
    result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=path, runs_dir=tmp_path / "runs",
                                          run_id="big", backend="local", config=config))
    refused = {r["row_id"]: r["reason"] for r in lines(result.run_dir / "refused.jsonl")}
    big, wide = rows[0]["row_id"], rows[5]["row_id"]
    assert "max_response_chars" in refused[big] and "google's context of 16,000 tokens" in refused[wide]
    sent = {r["row_id"] for name in ("round1.jsonl", "round2.jsonl") for r in lines(result.run_dir / name)}
    assert not sent & set(refused) and sent  # never sent; the other rows were graded
    assert result.not_graded == len(refused) == result.summary["refused_rows"] == 2
    verdicts = {v["row_id"]: v for v in lines(result.run_dir / "verdicts.jsonl")}
    assert all({"not_graded", "refused"} <= set(verdicts[r]["flags"]) for r in refused)
    stats = result.provider_stats["vendors"]
    assert max(v["prompt_tokens"] / max(1, v["billed"]) for v in stats.values()) < 5_000


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_an_unreachable_provider_ends_the_run_at_once(tmp_path, backend):
    """Nothing listening: one line naming the vendor, the URL and the cause, exit 5, in seconds, no scores."""
    import subprocess
    import sys
    import time

    url = f"http://127.0.0.1:{_free_port()}/v1"
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"roster": SMALL_ROSTER}))  # fewer judges' actors to start with Ray
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "council.cli", "run", "--backend", backend, "--runs-dir",
                           str(tmp_path / "runs"), "--run-id", "x", "--provider-url", url, "--config", str(config),
                           "--no-check"],  # the run's own stop, not council check's
                          capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 5, done.stderr
    assert f"{url}: cannot connect (connection refused)" in done.stderr and "Traceback" not in done.stderr
    assert "council run --resume x" in done.stderr.replace("\n", " ")
    assert "0.0%" not in done.stdout  # no leaderboard of zeros
    state = orjson.loads((tmp_path / "runs" / "x" / "state.json").read_bytes())
    assert state["state"] == "stopped" and state["reason"] == "error" and url in state["detail"]
    done_event = next(e for e in lines(tmp_path / "runs" / "x" / "log.jsonl") if e["event"] == "run.done")
    phases = {p["phase"]: p["at_s"] + p["seconds"] for p in done_event["timings"]["phases"]}  # when each ended
    grading = next(p for p in done_event["timings"]["phases"] if p["phase"] == "grading")
    after = phases["grading"] - max(phases.get("judges start", 0.0), grading["at_s"])
    print(f"\n{backend}: unreachable provider -> exit {done.returncode} after {took:.1f} s "
          f"(grading stopped {after:.2f} s after the judges were up)")
    # At once: the first refused calls stop the run, never after retries and backoff. Every attempt passes its
    # vendor's limiter, so each vendor's count of requests shows it: the calls in flight when the first refusal
    # came (at most its concurrency), each tried once, none again. (In seconds that is 0.02-0.4 s after the
    # judges are up when the machine is quiet, and 5.5 s was seen under the suite's load: counted, not timed.)
    quota = orjson.loads((tmp_path / "runs" / "x" / "quota_stats.json").read_bytes())
    assert sum(q["requests"] for q in quota.values()) > 0
    assert all(q["requests"] <= q["limits"]["concurrency"] for q in quota.values()), quota
    assert took < 60  # the whole command, with Ray's start and the judges' actors, which a loaded machine stretches


def test_a_base_url_without_v1_ends_the_run_at_once(tmp_path, capsys):
    """A real server at the wrong path (404): the message says what is probably wrong."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "council.cli", "sim", "--port", "0"], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip().rsplit(" ", 1)[-1].removesuffix("/v1")
        code = main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "w",
                     "--provider-url", url])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    err = capsys.readouterr().err
    assert code == 5 and "HTTP 404" in err and "missing /v1" in err and "Traceback" not in err


@pytest.mark.report_at_end
@pytest.mark.parametrize("failure", ["provider", "options"])
def test_a_local_run_that_fails_leaves_no_report_child(tmp_path, failure):
    """A local run starts its report's child with it (so that matplotlib is imported by the end of the grading);
    a run that ends in error, with no report to draw, ends that child too: a provider that cannot be reached
    (the run ends, stopped), or options refused once the run has begun (an error out of it)."""
    import psutil

    url = f"http://127.0.0.1:{_free_port()}/v1"
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "x", "--provider-url", url]
    if failure == "options":
        responses = tmp_path / "responses.jsonl"
        responses.write_text("")
        args += ["--models", "openai/gpt-4o", "--responses", str(responses)]
    code = main(args)
    assert code == (5 if failure == "provider" else 2)
    left = [c.cmdline() for c in psutil.Process().children(recursive=True) if c.is_running()]
    assert not [c for c in left if "council.report" in c], left
    assert not (tmp_path / "runs" / "x" / "report.html").exists()
