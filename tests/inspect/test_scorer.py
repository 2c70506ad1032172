"""The council as an inspect scorer: a real eval with inspect's mock model, read back with inspect's log reader,
and ``inspect score`` (the real command) re-grading a log written with another scorer."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import council as council_package
from council.cli import main
from council.core.errors import ConfigError
from council.core.schema import BankItem
from council.protocol.config import CouncilConfig
from council.protocol.prompts import rubric_hash
from council.scoring.scoring import rescore
from council.sim import SimConfig
from council.store.runfolder import RunFolder
from tests.council.test_failures import free_port

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.model import ModelOutput

QUESTIONS = {f"q{i}": (f"What is {i} + {i}?", str(2 * i)) for i in range(1, 5)}


def council(**kwargs):  # noqa: ANN003, ANN201
    """The council scorer, ``council.inspect.council``: imported when a test makes one, as ``council.inspect``
    imports inspect_ai (not at collection)."""
    from council.inspect import council as scorer

    return scorer(**kwargs)


def answer(messages, tools, tool_choice, config) -> ModelOutput:  # noqa: ANN001 - inspect's custom_outputs
    """Right on q1 and q2, wrong elsewhere; usage given, so the mock counts no tokens (no tokenizer download)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    text = messages[-1].text
    right = next((a for q, a in QUESTIONS.values() if q in text and a in ("2", "4")), None)
    out = ModelOutput.from_content(model="mockllm", content=right or "I am not sure, perhaps 7.")
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def samples(questions: dict[str, tuple[str, str]] = QUESTIONS) -> list:
    from inspect_ai.dataset import Sample

    return [Sample(input=q, target=a, id=i) for i, (q, a) in questions.items()]


def task(scorer, dataset=None, **task_args) -> Task:  # noqa: ANN001, ANN003
    """A task of ``dataset`` (default: the samples of QUESTIONS) answered by the model and scored by ``scorer``."""
    from inspect_ai import Task
    from inspect_ai.solver import generate

    return Task(dataset=samples() if dataset is None else dataset, solver=generate(), scorer=scorer, **task_args)


def run_eval(scorer, model: str, log_dir: Path, log_format: str = "eval", *, dataset=None, outputs=answer,  # noqa: ANN001, ANN003, ANN201
             **task_args):
    """The eval of :func:`task` with inspect's mock model answering by ``outputs``, run to success, as its log."""
    from inspect_ai import eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import get_model

    logs = eval(task(scorer, dataset, **task_args), model=get_model(model, custom_outputs=outputs),
                log_dir=str(log_dir), display="none", log_format=log_format)
    assert logs[0].status == "success", logs[0].error
    return read_eval_log(logs[0].location)


def test_every_sample_of_an_eval_has_a_council_score(tmp_path, capsys):
    from council.inspect._session import _sessions

    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs")), "mockllm/model", tmp_path / "logs")
    assert len(log.samples) == len(QUESTIONS)
    runs = set()
    for sample in log.samples:
        score = sample.scores["council"]
        meta = score.metadata
        assert score.value in ("C", "I"), score  # graded: a consensus accuracy() reads
        assert meta["members"] == ["anthropic", "google", "openai", "alibaba", "deepseek"]  # all sat: mockllm is no one's
        assert meta["vendor"] == "mockllm" and meta["excluded"] == [] and meta["actor"] == "mockllm/model"
        assert set(meta["votes_round1"]) == set(meta["members"]) and meta["row_id"] == f"{sample.id}::mockllm/model#e1"
        assert "Round one:" in score.explanation and "- A: " in score.explanation
        runs.add(meta["run_id"])
    assert runs == {f"inspect-{log.eval.eval_id}"}  # one run behind every sample
    folder = tmp_path / "runs" / runs.pop()
    assert len((folder / "rows.jsonl").read_text().splitlines()) == len(QUESTIONS)
    metrics = {m: v.value for s in log.results.scores for m, v in s.metrics.items()}
    assert not math.isnan(metrics["accuracy"]) and set(metrics) >= {"agreement_lift", "deliberation_impact"}
    assert {s.unscored_samples for s in log.results.scores} == {0}
    assert verdicts(folder) == consensus(log)  # written when the task ended, as a run writes them at its end
    assert json.loads((folder / "summary.json").read_text())["complete"]
    assert folder.resolve() not in {path for path, _ in _sessions}  # its judges and provider closed with the task
    capsys.readouterr()
    assert main(["show", "--runs-dir", str(tmp_path / "runs"), folder.name]) == 0  # a council run like any other
    shown = capsys.readouterr().out
    assert f"rows: {len(QUESTIONS)} graded of {len(QUESTIONS)}" in shown and "an inspect scorer handed over" in shown
    before = (folder / "verdicts.jsonl").read_bytes()
    rescore(RunFolder.open(folder))  # the run scored from its archive alone, as ``council rescore`` does
    assert (folder / "verdicts.jsonl").read_bytes() == before


def verdicts(folder: Path) -> dict[str, str | None]:
    return {v["row_id"]: v["consensus"] for v in map(json.loads, (folder / "verdicts.jsonl").read_text().splitlines())}


def consensus(log) -> dict[str, str | None]:  # noqa: ANN001
    return {s.scores["council"].metadata["row_id"]: s.scores["council"].metadata["consensus"] for s in log.samples}


@pytest.mark.report_at_end
def test_the_eval_metrics_are_the_run_summary(tmp_path):
    """The council's inspect metrics, computed by inspect from the scores, equal the figures of the run's own
    ``summary.json`` (written when the task ended): on samples that differ (half answered right, every one
    deliberated), where some member changes its verdict in round two."""
    from tests.inspect.test_interrupt import QUESTIONS as MANY, half_right

    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs"), deliberate="all"), "mockllm/model",
                   tmp_path / "logs", dataset=samples(MANY), outputs=half_right)
    (folder,) = (tmp_path / "runs").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    metrics = {m: v.value for s in log.results.scores for m, v in s.metrics.items()}
    assert summary["deliberation"]["rows_deliberated"] == len(MANY)
    assert summary["deliberation_impact"] > 0 and summary["agreement_lift"] != 0  # figures that could differ
    assert metrics["deliberation_impact"] == pytest.approx(summary["deliberation_impact"], abs=1e-12)
    assert metrics["agreement_lift"] == pytest.approx(summary["agreement_lift"], abs=1e-12)
    assert metrics["accuracy"] == pytest.approx(summary["models"]["mockllm/model"]["score"], abs=1e-12)
    assert (folder / "report.html").stat().st_size > 10_000  # the run's report, drawn when the task ended


def test_each_epoch_is_a_row_of_its_own(tmp_path):
    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs")), "mockllm/model", tmp_path / "logs", epochs=2)
    rows = sorted(s.scores["council"].metadata["row_id"] for s in log.samples)
    assert rows == sorted(f"{i}::mockllm/model#e{e}" for i in QUESTIONS for e in (1, 2))


def test_the_model_own_vendor_never_sits(tmp_path):
    """inspect's mock under another provider's name: ``mockllm/openai/gpt-4o`` is an OpenAI model to the council."""
    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs")), "mockllm/openai/gpt-4o", tmp_path / "logs")
    for sample in log.samples:
        meta = sample.scores["council"].metadata
        assert meta["vendor"] == "openai" and "openai" not in meta["members"], meta
        assert meta["excluded"] == ["openai"] and meta["reserves"] == ["mistral"]  # the reserve fills the seat
        assert "openai/gpt-5" not in meta["graders"]


def test_judges_reserves_and_rubric_from_arguments_as_inspect_parses_them(tmp_path):
    """``-S judges=...,...`` and a rubric with commas, parsed by inspect's own ``-S`` parser: the panel is those
    judges less the model's vendor plus the roster's reserve, and every sample is graded by the rubric given,
    unless its metadata has its own."""
    from inspect_ai._util.config import parse_cli_args
    from inspect_ai.dataset import Sample

    rubric, own = "The answer must be the sum, as a number, and nothing else.", "Only the number counts."
    args = parse_cli_args(["simulate=true", f"runs_dir={tmp_path / 'runs'}", f"rubric={rubric}",
                           "judges=anthropic/claude-sonnet-4.5,openai/gpt-5,google/gemini-2.5-pro"])
    assert isinstance(args["judges"], list) and isinstance(args["rubric"], list)  # cut at the commas
    dataset = [Sample(input=q, target=a, id=i, metadata={"rubric": own} if i == "q1" else {})
               for i, (q, a) in QUESTIONS.items()]
    log = run_eval(council(**args), "mockllm/openai/gpt-4o", tmp_path / "logs", dataset=dataset)
    for sample in log.samples:
        meta = sample.scores["council"].metadata
        assert meta["members"] == ["anthropic", "google", "mistral"] and meta["excluded"] == ["openai"], meta
        assert meta["graders"] == ["anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro", "mistralai/mistral-medium-3.1"]
        assert sample.scores["council"].value in ("C", "I")
    (folder,) = (tmp_path / "runs").iterdir()
    items = {i["id"]: BankItem.model_validate(i) for i in map(json.loads, (folder / "items.jsonl").read_text().splitlines())}
    assert {i: item.rubric for i, item in items.items()} == {i: own if i == "q1" else rubric for i in QUESTIONS}
    records = [json.loads(line) for line in (folder / "round1.jsonl").read_text().splitlines()]
    assert {r["rubric_hash"] for r in records if r["row_id"].startswith("q1::")} == {rubric_hash(items["q1"])}
    assert {r["rubric_hash"] for r in records if r["row_id"].startswith("q2::")} == {rubric_hash(items["q2"])}
    assert rubric_hash(items["q2"]) != rubric_hash(items["q2"].model_copy(update={"rubric": None}))


def test_command_line_forms_of_reserves_and_rubric():
    """As inspect's ``-S`` parser hands them over: no reserves, a quoted rubric, and an unquoted one it read as a
    mapping (refused with how to quote it, never dropped)."""
    from inspect_ai._util.config import parse_cli_args

    from council.inspect._scorer import _roster, _text

    args = parse_cli_args(["reserves=[]", 'quoted="Note: exact numbers only"', "unquoted=Note: exact numbers only"])
    assert [m["reserve"] for m in _roster(None, args["reserves"], CouncilConfig())] == [False] * 5
    assert _text(args["quoted"], "rubric") == "Note: exact numbers only"
    with pytest.raises(ConfigError, match="rubric must be a text, not dict .* quote it as YAML"):
        council(simulate=True, rubric=args["unquoted"])


def test_judges_of_no_known_vendor_are_refused():
    with pytest.raises(ConfigError, match="judges: cannot decide the vendor of model 'my-judge'"):
        council(simulate=True, judges=["openai/gpt-5", "my-judge"])
    with pytest.raises(ConfigError, match="one member per vendor"):
        council(simulate=True, judges="openai/gpt-5,openai/gpt-4o")


def test_a_target_of_several_answers_is_a_reference_listing_them(tmp_path):
    """inspect's ``Target(["4", "four"])``: either answer is right (``match()`` and ``includes()`` read it so), and
    ``Target.text`` would glue them into "4four"."""
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from council.inspect._scorer import reference

    state = TaskState(model=ModelName("mockllm/model"), sample_id="q2", epoch=1, input="What is 2 + 2?",
                      messages=[], target=Target(["4", "four"]), output=ModelOutput.from_content(model="m", content="four"))
    score = asyncio.run(council(simulate=True, runs_dir=str(tmp_path / "runs"))(state, Target(["4", "four"])))
    assert score.value in ("C", "I")
    (folder,) = (tmp_path / "runs").iterdir()
    (item,) = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    assert item["reference"] == "Any one of these answers is correct:\n- 4\n- four"
    assert reference(Target(["4"])) == reference(Target("4")) == "4"


def test_a_model_of_unknown_vendor_is_unscored_not_incorrect(tmp_path):
    """A served model of no known family (``vllm/`` names where it ran, not who made it) is refused, as by
    ``council grade``: unscored, and no run folder is made for it."""
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    state = TaskState(model=ModelName("vllm/my-local-model"), sample_id="q1", epoch=1, input="What is 1 + 1?",
                      messages=[], target=Target("2"), output=ModelOutput.from_content(model="vllm", content="2"))
    score = asyncio.run(council(simulate=True, runs_dir=str(tmp_path / "runs"))(state, Target("2")))
    assert math.isnan(score.value) and score.reason == "scoring_failed"
    assert "cannot decide the vendor of model 'vllm/my-local-model'" in score.explanation
    assert not (tmp_path / "runs").exists()


def inspect_score(log: Path, runs: Path, env: dict[str, str], action: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", str(log), "--scorer", "grading_council/council",
         "-S", "simulate=true", "-S", f"runs_dir={runs}", "--action", action, "--overwrite", "--display", "none"],
        env=env, cwd=log.parent, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "grading-council: the results of run inspect-" in done.stderr  # where the run's results went
    return log


def billed(runs: Path, run: str | None = None) -> int:
    """What the embedded provider of the run ``run`` (None: the only one under ``runs``) billed, as it counted."""
    (folder,) = [runs / run] if run else runs.iterdir()
    stats = json.loads((folder / "provider_stats.json").read_text())
    return sum(v["billed"] for v in stats["vendors"].values())


def served_by_inspect_view(log: Path, env: dict[str, str]) -> dict:
    """The log as ``inspect view`` (the real command, on 127.0.0.1) hands it to its viewer."""
    port = free_port()
    view = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "--host", "127.0.0.1", "--port", str(port),
                             "--log-dir", str(log.parent)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/api/logs/{log}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as reply:
                    return json.loads(reply.read())
            except OSError:
                assert view.poll() is None and time.monotonic() < deadline, view.stderr.read() if view.stderr else ""
                time.sleep(0.1)
    finally:
        view.terminate()
        view.wait(timeout=30)


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_inspect_score_regrades_a_log_and_pays_nothing_the_second_time(tmp_path, log_format):
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import match

    log = run_eval(match(), "mockllm/model", tmp_path / "logs", log_format=log_format)
    assert log.location.endswith(f".{log_format}")
    path = Path(log.location)
    assert "council" not in log.samples[0].scores
    env = {**os.environ, "NO_COLOR": "1", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    runs = tmp_path / "runs"
    inspect_score(path, runs, env, "append")  # beside match()'s scores
    first = read_eval_log(str(path))
    scores = {s.id: s.scores["council"] for s in first.samples}
    assert all(s.value in ("C", "I") for s in scores.values()) and "match" in first.samples[0].scores
    assert billed(runs) > 0
    (folder,) = runs.iterdir()  # its results written as the command exited (``inspect score`` runs no hooks)
    assert verdicts(folder) == consensus(first) and json.loads((folder / "summary.json").read_text())["complete"]
    viewed = served_by_inspect_view(path, env)
    assert {s["id"]: s["scores"]["council"]["value"] for s in viewed["samples"]} == {i: s.value for i, s in scores.items()}
    assert {m["name"] for r in viewed["results"]["scores"] for m in r["metrics"].values()} >= {
        "accuracy", "grading_council/agreement_lift", "grading_council/deliberation_impact"}
    inspect_score(path, runs, env, "overwrite")
    second = read_eval_log(str(path))
    assert billed(runs) == 0  # every vote came from the archive of the same run
    assert {s.id: s.scores["council"].value for s in second.samples} == {i: s.value for i, s in scores.items()}
    assert len(list(runs.iterdir())) == 1


def test_an_interrupted_scoring_scored_again_completes_with_the_same_scores(tmp_path):
    """An eval whose scoring stopped part way (half its votes archived) scored again by ``inspect score``: the
    run it began is found from its samples, only the missing votes are paid for, and the scores are the same."""
    from inspect_ai.log import read_eval_log

    runs = tmp_path / "runs"
    log = run_eval(council(simulate=True, runs_dir=str(runs)), "mockllm/model", tmp_path / "logs")
    whole = billed(runs)
    (folder,) = runs.iterdir()
    for archive in (folder / "round1.jsonl", folder / "round2.jsonl"):  # round two: the disputed rows, if any
        lines = archive.read_text().splitlines(keepends=True) if archive.exists() else []
        archive.write_text("".join(lines[: len(lines) // 2]))  # what a stop midway would have left
    env = {**os.environ, "NO_COLOR": "1", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    inspect_score(Path(log.location), runs, env, "overwrite")
    again = read_eval_log(log.location)
    assert 0 < billed(runs) < whole
    assert {s.id: s.scores["council"].value for s in again.samples} == {
        s.id: s.scores["council"].value for s in log.samples}
    assert [p.name for p in runs.iterdir()] == [folder.name]
    assert json.loads((folder / "state.json").read_text())["state"] == "finished"


def test_without_inspect_the_message_says_what_to_install():
    code = "import sys; sys.modules['inspect_ai'] = None\nimport council.inspect"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "pip install 'grading-council[inspect]'" in done.stderr


def test_samples_past_the_budget_are_unscored_not_incorrect(tmp_path):
    config = tmp_path / "council.toml"
    config.write_text("budget_usd = 0.000001\n")
    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs"), config=str(config)), "mockllm/model",
                   tmp_path / "logs")
    for sample in log.samples:
        score = sample.scores["council"]
        assert math.isnan(score.value) and score.reason == "grader_failed", score
        assert score.metadata["not_graded"] and "budget" in score.metadata["stopped"]
    assert {s.unscored_samples for s in log.results.scores} == {len(QUESTIONS)}  # counted by inspect, as unscored
    (folder,) = (tmp_path / "runs").iterdir()
    assert json.loads((folder / "state.json").read_text())["reason"] == "budget"


def test_inspect_score_finds_the_scorer_of_an_installed_package(tmp_path):
    """Installed in site-packages (not editable), inspect names the scorer after its top module
    (``council/grading_council/council``); ``--scorer grading_council/council`` still finds it."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import match

    installed = tmp_path / "site-packages"
    shutil.copytree(Path(council_package.__file__).parent, installed / "council",
                    ignore=shutil.ignore_patterns("__pycache__"))
    log = run_eval(match(), "mockllm/model", tmp_path / "logs")
    env = {**os.environ, "NO_COLOR": "1",  # bytecode written (tests/conftest.py): the copy's is looked for below
           "INSPECT_LOG_DIR": str(tmp_path / "logs"), "PYTHONPATH": str(installed)}
    inspect_score(Path(log.location), tmp_path / "runs", env, "append")
    scored = read_eval_log(log.location)
    assert all(s.scores["council"].value in ("C", "I") for s in scored.samples)
    assert list((installed / "council" / "inspect" / "__pycache__").glob("_registry.*.pyc"))  # the copy was loaded


def test_a_simulated_run_is_never_scored_again_by_real_judges(tmp_path):
    from inspect_ai import eval
    from inspect_ai.model import get_model

    runs = tmp_path / "runs"
    log = run_eval(council(simulate=True, runs_dir=str(runs), run_id="shared"), "mockllm/model", tmp_path / "logs")
    again = eval(task(council(provider_url="http://127.0.0.1:9/v1", runs_dir=str(runs), run_id="shared")),
                 model=get_model("mockllm/model", custom_outputs=answer), log_dir=str(tmp_path / "logs"), display="none")
    assert again[0].status == "error" and "run shared was graded by the embedded provider" in again[0].error.message
    assert len((runs / "shared" / "rows.jsonl").read_text().splitlines()) == len(log.samples)


def test_the_batch_transport_gives_the_scores_of_the_sync_one_at_batch_prices(tmp_path):
    """``transport = "batch"`` in the council config: every vote goes through the providers' batch APIs (the
    embedded provider's), journalled in the run folder, and the scores are those of chat calls, for less."""
    config = tmp_path / "council.toml"
    config.write_text('transport = "batch"\n[batch]\nflush_s = 0.2\npoll_s = 0.1\n')
    sim = tmp_path / "sim.json"  # the embedded provider's behaviour, its batches done in a tenth of a second
    sim.write_text(json.dumps({**SimConfig.planted(0).model_dump(mode="json"), "batch_completion_s": 0.1}))
    found = {}
    for transport, path in (("sync", None), ("batch", str(config))):
        log = run_eval(council(sim_config=str(sim), runs_dir=str(tmp_path / transport), config=path, deliberate="all"),
                       "mockllm/model", tmp_path / "logs")
        (folder,) = (tmp_path / transport).iterdir()
        records = [json.loads(line) for name in ("round1.jsonl", "round2.jsonl")
                   for line in (folder / name).read_text().splitlines()]
        found[transport] = ({s.id: s.scores["council"].value for s in log.samples},
                            {(r["member"] == "deepseek", r.get("batch_id") is not None) for r in records},
                            json.loads((folder / "summary.json").read_text())["cost_usd"])
    assert found["batch"][0] == found["sync"][0]
    # every vote of a batch, but deepseek's (no batch API: synchronous in a batch run)
    assert found["sync"][1] == {(True, False), (False, False)} and found["batch"][1] == {(True, False), (False, True)}
    assert found["batch"][2] < found["sync"][2]
    (folder,) = (tmp_path / "batch").iterdir()
    assert (folder / "batches.jsonl").stat().st_size > 0
    assert json.loads((folder / "manifest.json").read_text())["sim_config"]["batch_completion_s"] == 0.1


def test_a_bad_sim_config_is_refused_when_the_scorer_is_made(tmp_path):
    bad = tmp_path / "sim.json"
    bad.write_text('{"batch_completion_s": -1}')
    with pytest.raises(ConfigError, match=r"sim.json: bad simulator config: batch_completion_s"):
        council(sim_config=str(bad))


def test_a_chat_input_with_a_system_prompt_and_few_shot_turns_is_graded_on_its_question(tmp_path):
    """Samples whose input is a conversation, read by inspect's own ``json_dataset`` from a JSONL file as
    benchmarks ship them (a system prompt, a worked example, then the question): the judges' question is the
    last user message (inspect's ``input_text``), not the example nor the system prompt."""
    from inspect_ai.dataset import json_dataset

    data = tmp_path / "chat.jsonl"
    with data.open("w") as handle:
        for sample_id, (question, target) in QUESTIONS.items():
            handle.write(json.dumps({"id": sample_id, "target": target, "input": [
                {"role": "system", "content": "Answer with a number only."},
                {"role": "user", "content": "What is 10 + 10?"},
                {"role": "assistant", "content": "20"},
                {"role": "user", "content": question}]}) + "\n")
    log = run_eval(council(simulate=True, runs_dir=str(tmp_path / "runs")), "mockllm/model", tmp_path / "logs",
                   dataset=json_dataset(str(data)))
    assert log.status == "success" and len(log.samples) == len(QUESTIONS)
    assert all(s.scores["council"].value in ("C", "I") for s in log.samples)
    (folder,) = (tmp_path / "runs").iterdir()
    items = {i["id"]: i for i in map(json.loads, (folder / "items.jsonl").read_text().splitlines())}
    assert {i: item["prompt"] for i, item in items.items()} == {i: q for i, (q, _) in QUESTIONS.items()}
    assert {i: item["reference"] for i, item in items.items()} == {i: a for i, (_, a) in QUESTIONS.items()}
