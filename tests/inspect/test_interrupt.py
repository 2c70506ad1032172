"""A real interruption of ``inspect score``: the process is SIGKILLed while the council's votes are being
archived (some in, not all), the same command is run again, and it completes with the scores of a scoring never
interrupted, paying only for the votes the archive lacks.

The embedded provider answers in about 5 ms and nothing an ``inspect score`` command line sets slows it down
(``-S config=`` is a council config, and the simulated behaviour a new run folder records is always the planted
one), so the whole scoring of the log's votes takes about a tenth of a second. The test therefore watches the
run folder every 5 ms and stops the process (SIGSTOP, so that no vote lands between the look and the kill) as soon
as a first vote is archived, kills it, and checks that the archive it left is part way: some votes, not all."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from tests.council.test_crash_resume import archived_calls
from tests.inspect.test_scorer import billed, inspect_score, run_eval, samples, verdicts

if TYPE_CHECKING:
    from inspect_ai.model import ModelOutput

SAMPLES = 20  # 100 round-one votes of the five default judges, and round two of the disputed samples
QUESTIONS = {f"s{i}": (f"What is {i} times 3?", str(3 * i)) for i in range(1, SAMPLES + 1)}


def half_right(messages, tools, tool_choice, config) -> ModelOutput:  # noqa: ANN001 - inspect's custom_outputs
    """Right on the odd numbers, wrong on the even ones, so that the council's scores differ between samples."""
    from inspect_ai.model import ModelOutput, ModelUsage

    number = int(messages[-1].text.split("What is ")[1].split(" ")[0])
    out = ModelOutput.from_content(model="mockllm", content=str(3 * number) if number % 2 else "Perhaps 7.")
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # the mock counts no tokens
    return out


def scored_log(log_dir: Path) -> Path:
    """A log of an eval scored by ``match()``, which the council then scores with ``inspect score``."""
    from inspect_ai.scorer import match

    return Path(run_eval(match(), "mockllm/model", log_dir, dataset=samples(QUESTIONS), outputs=half_right).location)


def kill_mid_scoring(log: Path, runs: Path, env: dict[str, str]) -> Path:
    """Start the command ``inspect_score(log, runs, env, "append")`` runs, SIGKILL it once a vote is archived,
    and return its run folder."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspect_ai", "score", str(log), "--scorer", "grading_council/council",
         "-S", "simulate=true", "-S", f"runs_dir={runs}", "--action", "append", "--overwrite", "--display", "none"],
        env=env, cwd=log.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and not first_vote(runs):
            time.sleep(0.005)
        proc.send_signal(signal.SIGSTOP)  # frozen: nothing more is archived before the kill
        assert proc.poll() is None, "the scoring ended before a vote was seen archived"
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (folder,) = runs.iterdir()
    return folder


def first_vote(runs: Path) -> bool:
    return any(p.stat().st_size for p in runs.glob("*/round1.jsonl"))


def votes(folder: Path) -> Counter:
    """How often each (row, member, round) is in the run's archive."""
    found: Counter = Counter()
    for name in ("round1.jsonl", "round2.jsonl"):
        for line in (folder / name).read_bytes().splitlines() if (folder / name).exists() else []:
            record = orjson.loads(line)
            found[(record["row_id"], record["member"], record["round"])] += 1
    return found


def council_scores(log: Path) -> dict:
    from inspect_ai.log import read_eval_log

    return {s.id: s.scores["council"].value for s in read_eval_log(str(log)).samples}


def test_a_killed_inspect_score_run_again_completes_with_the_same_scores(tmp_path):
    log = scored_log(tmp_path / "logs")
    whole_log = Path(shutil.copy(log, tmp_path / "whole.eval"))  # the same samples (same uuids), scored uninterrupted
    env = {**os.environ, "NO_COLOR": "1", "INSPECT_LOG_DIR": str(tmp_path / "logs")}

    runs = tmp_path / "runs"
    folder = kill_mid_scoring(log, runs, env)
    held, round1, round2 = archived_calls(folder)  # what survived the kill (a torn last line is not archived)
    inspect_score(log, runs, env, "append")
    inspect_score(whole_log, tmp_path / "whole", env, "append")
    (whole,) = (tmp_path / "whole").iterdir()

    assert 0 < round1 + round2 < sum(votes(whole).values()), (round1, round2)  # killed part way through
    assert council_scores(log) == council_scores(whole_log)
    assert set(council_scores(log).values()) == {"C", "I"}  # scores that differ between samples are compared
    assert [p.name for p in runs.iterdir()] == [folder.name]  # the second command went back to the killed run
    assert votes(folder) == votes(whole) and set(votes(folder).values()) == {1}  # every vote, each once
    # The embedded provider's billed count (provider_stats.json) is that of the process that wrote it: here the
    # second command alone, as the killed one's provider died with it. The uninterrupted run was billed for every
    # call its archive holds; the second command for exactly those the killed run's archive lacked, so it paid for
    # nothing the archive held (and re-asked the calls that were in flight, billed but unarchived, at the kill).
    assert billed(tmp_path / "whole") == archived_calls(whole)[0]
    assert billed(runs) == archived_calls(whole)[0] - held
    assert verdicts(folder) == verdicts(whole)  # the results, written as the second command exited
