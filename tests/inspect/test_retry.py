"""An eval killed while the council scores it, then ``inspect eval-retry`` (the real commands, in subprocesses):
inspect runs again the samples the killed attempt did not complete and keeps the scores of those it did. The
retry's run folder reuses every vote the killed attempt archived (the mock model answers the same again), pays
for the rest only, and ends holding the whole eval: the scores and votes of an eval never interrupted.

Samples run five at a time (``--max-samples 5``) against judges that answer in about 0.1 s, so the samples end
in waves; the attempt is frozen (SIGSTOP) and killed once an eleventh sample's votes are being archived (a sample
starts when another has ended, so six or more have, each written to the log as it ends: ``--log-buffer 1``),
when the log holds some samples and not others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from council.sim import SimConfig
from tests.council.test_crash_resume import archived_calls
from tests.inspect.test_interrupt import votes
from tests.inspect.test_scorer import billed, verdicts

SAMPLES = 20
TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate
from council.inspect import council


def answer(messages, tools, tool_choice, config):
    n = int(messages[-1].text.split("What is ")[1].split(" ")[0])
    out = ModelOutput.from_content(model="mockllm", content=str(2 * n) if n % 2 else "Perhaps 7.")
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # the mock counts no tokens
    return out


@task
def sums(runs: str = "runs"):
    return Task(dataset=[Sample(input=f"What is {i} + {i}?", target=str(2 * i), id=f"q{i}") for i in range(1, LAST)],
                solver=generate(), scorer=council(sim_config="slow.json", runs_dir=runs),
                model=get_model("mockllm/model", custom_outputs=answer))
'''.replace("LAST", str(SAMPLES + 1))


def inspect(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "inspect_ai", *args, "--log-dir", "logs", "--display", "none"],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]


def rows_voted(runs: Path) -> int:
    return len({json.loads(line)["row_id"] for path in runs.glob("*/round1.jsonl")
                for line in path.read_text().splitlines() if line.endswith("}")})


def test_a_killed_eval_retried_reuses_its_votes_and_ends_with_the_whole_eval(tmp_path, monkeypatch):
    from inspect_ai import eval
    from inspect_ai.log import read_eval_log

    (tmp_path / "task.py").write_text(TASK)
    sim = SimConfig.planted(0).model_dump(mode="json")
    for vendor in sim["vendors"].values():
        vendor["latency_ms"], vendor["latency_jitter_ms"] = 100.0, 10.0
    (tmp_path / "slow.json").write_text(json.dumps(sim))
    env = {**os.environ, "NO_COLOR": "1"}

    attempt = inspect("eval", "task.py", "--max-samples", "5", "--log-buffer", "1", cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 120
        while attempt.poll() is None and time.monotonic() < deadline and rows_voted(tmp_path / "runs") <= 10:
            time.sleep(0.01)
        attempt.send_signal(signal.SIGSTOP)
        assert attempt.poll() is None, "the eval ended before it could be killed"
    finally:
        attempt.kill()
        attempt.wait(timeout=30)
    (log,) = (tmp_path / "logs").glob("*.eval")
    killed = read_eval_log(str(log))
    assert killed.status == "started" and 0 < len(killed.samples or []) < SAMPLES, len(killed.samples or [])
    (first,) = (tmp_path / "runs").iterdir()
    held = archived_calls(first)[0]

    finished(inspect("eval-retry", str(log), cwd=tmp_path, env=env))
    (retried,) = [read_eval_log(str(p)) for p in (tmp_path / "logs").glob("*.eval") if p != log]
    monkeypatch.chdir(tmp_path)  # the same task, never interrupted, run here (its paths are relative)
    (uninterrupted,) = eval("task.py", task_args={"runs": "whole"}, log_dir=str(tmp_path / "whole-logs"),
                            display="none")
    assert uninterrupted.status == "success", uninterrupted.error
    uninterrupted = read_eval_log(uninterrupted.location)
    assert retried.status == "success" and retried.eval.task_id == killed.eval.task_id
    scores = {s.id: s.scores["council"].value for s in retried.samples}
    assert len(scores) == SAMPLES and scores == {s.id: s.scores["council"].value for s in uninterrupted.samples}

    (second,) = [p for p in (tmp_path / "runs").iterdir() if p != first]
    (reference,) = (tmp_path / "whole").iterdir()
    assert votes(second) == votes(reference) and set(votes(second).values()) == {1}  # every vote, each once
    assert verdicts(second) == verdicts(reference)
    summary = json.loads((second / "summary.json").read_text())
    assert summary["rows_total"] == SAMPLES and summary["complete"]
    assert billed(tmp_path / "runs", second.name) == archived_calls(reference)[0] - held  # nothing archived paid again
