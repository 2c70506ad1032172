"""The ``council`` command line: help that documents every option with its default and the exit codes, commands
that take only the options they read, output that never cuts a name when piped, progress, ``show``, ``runs``,
``init``, ``diff``'s exit code, and no Ray notices on the user's screen."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from rich.console import Console

import bank
from council import cli
from council.cli import EXIT_CODES, build_parser, main
from council.console.output import table
from council.core.schema import JudgeCallRecord

REPO = Path(__file__).resolve().parents[2]


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The shipped sample, graded in-process on the local backend, its output captured as a pipe would get it
    (stdout and stderr are not terminals), with a progress line every half second."""
    runs = tmp_path_factory.mktemp("runs")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--backend", "local", "--runs-dir", str(runs), "--run-id", "sample",
                     "--progress-every", "0.5"])
    return code, out.getvalue(), err.getvalue(), runs


# ---- help -------------------------------------------------------------------------------------------------------


def test_the_top_level_help_lists_every_command_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    listed = text.split("commands:", 1)[1].split("exit codes:", 1)[0]
    for name, parser in commands().items():
        assert re.search(rf"^\s+{name}\s+\S", listed, re.M) or re.search(rf"^\s+{name}\n\s+\S", listed, re.M), name
    for expected in ("run", "grade", "estimate", "show", "runs", "report", "diff", "rescore", "crossjudge", "init",
                     "loadtest", "serve", "submit", "sim"):
        assert expected in commands()
    codes = text.split("exit codes:", 1)[1]
    for code, _ in EXIT_CODES:
        assert re.search(rf"^\s+{code}\s+\w", codes, re.M), code
    for code in (0, 1, 2, 3, 4, 5, 6, 130, 143):
        assert code in dict(EXIT_CODES)


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_of_every_command_is_documented_with_its_default(name):
    parser = commands()[name]
    assert parser.description and parser.format_help()
    formatter = parser._get_formatter()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        shown = formatter._expand_help(action)
        words = re.sub(r"\(default[^)]*\)|\(required\)", "", shown).strip()
        assert words, f"{name} {action.dest}: no help text"
        assert "(default" in shown or "(required)" in shown, f"{name} {action.dest}: {shown!r}"


def test_a_positional_argument_shows_its_default():
    assert "(default: council.toml)" in commands()["init"].format_help()
    assert "(default: ./runs)" in commands()["show"].format_help()


# ---- each command takes only what it reads -------------------------------------------------------------------


def test_estimate_takes_only_the_options_it_reads(capsys):
    assert options(commands()["estimate"]) == {"--bank", "--responses", "--config", "--vendor-map",
                                               "--no-self-exclusion", "--models", "--json", "--unanimity",
                                               "--pilot", "--deliberation-audit", "--runs-dir", "--provider-url",
                                               "--simulate", "--sim-config"}
    with pytest.raises(SystemExit) as done:
        main(["estimate", "--seed", "3"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "council estimate: error: unrecognized arguments: --seed 3" in err
    assert "--seed is an option of run, grade" in err


def test_grading_options_are_where_they_are_read():
    run, grade = options(commands()["run"]), options(commands()["grade"])
    assert {"--resume", "--models"} <= run and not {"--resume", "--models"} & grade and "--format" not in run
    assert {"--format", "--skip-invalid", "--match-prompt"} <= grade
    assert {"--progress-every", "--shards", "--budget-usd"} <= run & grade
    assert options(commands()["runs"]) == {"--runs-dir"}
    assert options(commands()["report"]) == {"--runs-dir"}


# ---- piped output ------------------------------------------------------------------------------------------


def test_piped_output_has_every_model_id_in_full_and_no_ellipsis(sample):
    code, out, err, _ = sample
    assert code == 0, err
    models = {orjson.loads(line)["model"] for line in bank.SAMPLE_RESPONSES.read_bytes().splitlines() if line.strip()}
    assert len(models) == 6
    for model in models:
        assert re.search(rf"^{re.escape(model)}\s+160\s", out, re.M), model
    assert "…" not in out and "…" not in err
    assert out.splitlines()[0].startswith("council run sample  (960 rows")


def test_progress_is_a_plain_line_every_few_seconds_when_stderr_is_not_a_terminal(sample):
    _, _, err, _ = sample
    lines = [line for line in err.splitlines() if re.match(r"\[\d+:\d\d\] ", line)]
    assert lines, err
    assert any("grading" in line and "/960 rows" in line for line in lines)
    assert any(re.search(r"anthropic [\d,]+ req, \d+ 429s, \d+ retries, \$\d", line) for line in lines)


def test_a_drawn_table_folds_long_names_instead_of_cutting_them():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    target = Console(file=screen, width=40, force_terminal=True, color_system=None)
    name = "meta-llama/llama-3.3-70b-instruct-with-a-long-suffix"
    table("scores", ("model", "rows", "council", "95% CI"), [(name, "160", "56.2%", "48.8%-64.4%")], to=target)
    drawn = screen.getvalue()
    assert "…" not in drawn and "scores" in drawn
    first_column = "".join(line.split("│")[1].strip() for line in drawn.splitlines() if line.startswith("│"))
    assert first_column == name  # folded over several lines, every character kept


def test_the_board_counts_retries_429s_and_spend_per_vendor():
    board = cli.RunBoard(seats=5)
    board.on_start(10)

    def record(member: str, attempts: int, cost: float, request: str, round_: int = 1) -> JudgeCallRecord:
        return JudgeCallRecord(row_id="r", round=round_, member=member, judge_model="m", verdict="correct", reason="",
                               ok=True, parse_status="ok", attempts=attempts, cost_usd=cost, judge_prompt_version="v",
                               judge_prompt_hash="h", request_id=request)

    board.on_record(record("openai", 3, 0.5, "a"))
    board.on_record(record("openai", 1, 0.25, "a"))  # the same batched request
    board.on_record(record("google", 2, 0.0, "b", round_=2))
    board.on_quota({"openai": {"requests": 7, "rate_limited": 4}, "google": {"granted_requests": 2}})
    board.on_progress(5)
    line = board.line()
    assert "5/10 rows (50%)" in line and "round 1 2/50, round 2 1/50 votes" in line and "spent $0.7500" in line
    assert "openai 7 req, 4 429s, 2 retries, $0.7500" in line and "google 2 req, 0 429s, 1 retries" in line
    assert board.vendors["openai"].requests == 1


def test_the_progress_shows_each_open_batch_with_its_counts_age_and_expected_end():
    board = cli.RunBoard(seats=5)
    board.on_start(10)
    now = time.time()
    batch = {"vendor": "google", "local": "cb-1", "batch_id": "batch_abc", "status": "in_progress", "keys": 400,
             "counts": {"total": 400, "succeeded": 100, "errored": 2}, "intent_at": now - 125,
             "created_at": now - 120, "expected_end": now + 360, "ended_at": None, "gone": False}
    board.on_quota({"google": {"requests": 0, "open_batches": [batch]}})
    line = board.line()
    assert "batches: google batch_abc in_progress 102/400, age 2:00, ends in 6:00" in line, line
    board.on_quota({"google": {"requests": 0, "open_batches": []}})
    assert "batches:" not in board.line()


# ---- the grade command ------------------------------------------------------------------------------------------


def test_grade_is_titled_by_its_command(tmp_path, capsys):
    responses = tmp_path / "some.jsonl"
    responses.write_bytes(b"".join(bank.SAMPLE_RESPONSES.read_bytes().splitlines(keepends=True)[:12]))
    code = main(["grade", "--responses", str(responses), "--simulate", "--backend", "local", "--runs-dir",
                 str(tmp_path / "runs"), "--run-id", "g", "--progress-every", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith("council grade g  (12 rows") and "council run" not in out


# ---- show, runs, init, diff ----------------------------------------------------------------------------------


def test_show_a_run(sample, capsys):
    _, _, _, runs = sample
    assert main(["show", "sample", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "state: finished" in out and "rows: 960 graded of 960" in out and "cost: $" in out
    assert "anthropic/claude-haiku-4.5" in out and "95% CI" in out and "SIMULATED" in out
    assert main(["show", str(runs / "sample")]) == 0  # a folder's path works too
    assert "state: finished" in capsys.readouterr().out


def test_show_a_row_by_prefix(sample, capsys):
    _, _, _, runs = sample
    verdicts = [orjson.loads(line) for line in (runs / "sample" / "verdicts.jsonl").read_bytes().splitlines()]
    skipped = next(v["row_id"] for v in verdicts if not v["deliberated"] and not v["deliberation_audit"])
    assert main(["show", "sample", skipped, "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "round two: not sent: round one was not disputed" in out and "round 2: not sent" in out
    assert not re.search(r"^  round 2: (correct|incorrect)", out, re.M)
    row_id = next(v["row_id"] for v in verdicts if v["deliberated"] and not v["scale"])
    prefix = row_id[: row_id.index("::") + 4]  # its item and the start of its model: one row
    assert main(["show", "sample", prefix, "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"row {row_id}")
    assert "consensus: " in out and "panel: " in out and "flags: " in out and "round two:" not in out
    records = [orjson.loads(line) for line in (runs / "sample" / "round2.jsonl").read_bytes().splitlines()]
    viewer = next(r for r in records if r["row_id"] == row_id)
    letter, peer = sorted(viewer["peer_letters"].items())[0]
    assert f"{viewer['member']} saw: " in out and f"{letter} = {peer}" in out  # the key, per viewer
    assert re.search(rf"^{peer}.*: seen as .*\b{letter} by {viewer['member']}\b", out, re.M)
    assert re.search(r"^  round 1: (correct|incorrect)", out, re.M) and re.search(r"^  round 2: ", out, re.M)
    assert main(["show", "sample", "cal-00", "--runs-dir", str(runs)]) == 2  # names several rows
    assert "give more of it" in capsys.readouterr().err


def test_runs_lists_the_run_folders_newest_first(sample, tmp_path, capsys):
    _, _, _, runs = sample
    copy = tmp_path / "runs"
    shutil.copytree(runs / "sample", copy / "sample")
    shutil.copytree(runs / "sample", copy / "later")
    manifest = orjson.loads((copy / "later" / "manifest.json").read_bytes())
    (copy / "later" / "manifest.json").write_bytes(orjson.dumps({**manifest, "created_at": "2099-01-01T00:00:00+00:00"}))
    assert main(["runs", "--runs-dir", str(copy)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["run", "state", "rows", "models", "cost", "created", "simulated"]
    assert [line.split()[0] for line in lines[2:4]] == ["later", "sample"]
    cost = orjson.loads((copy / "sample" / "summary.json").read_bytes())["cost_usd"]  # at the table's prices
    assert lines[3].split()[1:5] == ["finished", "960", "6", f"${cost:.4f}"] and cost > 0 and lines[3].split()[-1] == "yes"


def test_report_writes_the_page_and_prints_its_path(sample, capsys):
    _, _, _, runs = sample
    assert main(["report", "sampl", "--runs-dir", str(runs)]) == 0  # a unique prefix of the run id
    printed = capsys.readouterr().out.strip()
    assert printed == str(runs / "sample" / "report.html") and Path(printed).is_file()


def test_init_writes_an_example_config_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    written = (tmp_path / "council.toml").read_text(encoding="utf-8")
    assert "quorum" in written
    assert main(["init"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "council.toml").read_text(encoding="utf-8") == written
    assert main(["estimate", "--config", "council.toml", "--json"]) == 0  # what init writes is a config
    assert orjson.loads(capsys.readouterr().out)["rows"] == 960


def test_diff_exits_6_when_not_comparable_in_every_mode(sample, tmp_path, capsys):
    _, _, _, runs = sample
    copy = tmp_path / "runs"
    shutil.copytree(runs / "sample", copy / "a")
    shutil.copytree(runs / "sample", copy / "b")
    assert main(["diff", "a", "b", "--runs-dir", str(copy)]) == 0
    assert main(["diff", "a", "b", "--runs-dir", str(copy), "--json"]) == 0
    capsys.readouterr()
    manifest = orjson.loads((copy / "b" / "manifest.json").read_bytes())
    (copy / "b" / "manifest.json").write_bytes(orjson.dumps({**manifest, "quorum": 4}))
    assert main(["diff", "a", "b", "--runs-dir", str(copy)]) == 6
    assert "not comparable" in capsys.readouterr().out
    assert main(["diff", "a", "b", "--runs-dir", str(copy), "--json"]) == 6
    assert orjson.loads(capsys.readouterr().out)["comparable"] is False


# ---- Ray's notices ---------------------------------------------------------------------------------------------


def test_ray_notices_stay_off_the_screen(tmp_path):
    """A sharded run on Ray: neither Ray's token-authentication notice nor its warning about a restartable
    actor's constructor arguments in the object store reaches stdout or stderr; the run's log keeps Ray's
    Python notices and says where the C++ ones went."""
    responses = tmp_path / "six.jsonl"
    responses.write_bytes(b"".join(bank.SAMPLE_RESPONSES.read_bytes().splitlines(keepends=True)[:6]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "council.cli", "run", "--backend", "ray", "--shards", "2",
                           "--responses", str(responses), "--simulate", "--runs-dir", str(tmp_path / "runs"),
                           "--run-id", "ray"], capture_output=True, text=True, timeout=180, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = done.stdout + done.stderr
    assert "council run ray  (6 rows" in done.stdout
    for notice in ("Token authentication", "token-auth", "constructor arguments", "object store", "max_restarts",
                   "core_worker"):
        assert notice not in shown, (notice, shown[-3000:])
    log = (tmp_path / "runs" / "ray" / "log.jsonl").read_text(encoding="utf-8")
    assert '"ray.native_stderr"' in log


def test_resume_accepts_the_runs_own_options_and_names_one_that_differs(tmp_path, capsys):
    """The same command line with --resume added (the natural habit) continues the run: every option it gives
    equals the run's own, as the manifest records it. An option with another value is refused, naming the
    option, the value given and the run's."""
    from tests.council.test_end_to_end import subset

    runs = tmp_path / "runs"
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"rows_in_flight": 4}))
    line = ["run", "--backend", "local", "--runs-dir", str(runs), "--run-id", "r", "--responses",
            str(subset(tmp_path, 3)), "--simulate", "--seed", "3", "--quorum", "3", "--config", str(config),
            "--deliberate", "all"]  # round two on every row: a crash loses some of it
    assert main(line) == 0
    folder = runs / "r"
    verdicts = (folder / "verdicts.jsonl").read_bytes()
    round2 = (folder / "round2.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "round2.jsonl").write_bytes(b"".join(round2[: len(round2) // 2]))  # a crash lost the rest
    (folder / "verdicts.jsonl").unlink()
    capsys.readouterr()
    assert main([*line, "--resume", "r"]) == 0, capsys.readouterr().err
    assert len((folder / "round2.jsonl").read_bytes().splitlines()) == len(round2)  # the lost votes asked again
    assert (folder / "verdicts.jsonl").read_bytes() == verdicts
    assert orjson.loads((folder / "summary.json").read_bytes())["complete"] is True
    changed = [*line, "--resume", "r"]
    changed[changed.index("--seed") + 1] = "4"
    assert main(changed) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--seed 4 (the run's: 3) would change it" in err and "--quorum" not in err and "--config" not in err
