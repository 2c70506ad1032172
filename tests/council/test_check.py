"""``council check``: one tiny real request per seat, ok or the provider's exact refusal with its fix, the reasoning
each judge spent, and what that does to the run's cost; and ``council run`` checking first against any provider but
the embedded one. Refusals come from the embedded provider's realistic world and from real error bodies recorded by
another project (tests/fixtures/recorded), replayed by a server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

import bank

from council.cli import EXIT_INPUT, EXIT_OK, main

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
SEATS = {"anthropic", "google", "openai", "alibaba", "deepseek", "mistral"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def check_json(*argv: str) -> tuple[int, dict]:
    code, out, err = run("check", "--json", *argv)
    return code, json.loads(out)


@contextlib.contextmanager
def answering(status: int, body: bytes) -> Iterator[tuple[str, list[dict]]]:
    """A provider on 127.0.0.1 that answers every chat request ``status`` with ``body`` (in a thread of its own, so
    that the command's own event loop runs as it does for a user); yields its base URL and the requests it got."""
    got: list[dict] = []
    ready = threading.Event()
    state: dict = {}

    async def handler(request: web.Request) -> web.Response:
        got.append(await request.json())
        return web.Response(status=status, body=body, content_type="application/json")

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        state["url"] = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        state["stop"] = asyncio.Event()
        ready.set()
        await state["stop"].wait()
        await runner.cleanup()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield state["url"], got
    finally:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(10)


def recorded_error(provider: str, name: str) -> tuple[int, bytes]:
    response = json.loads((RECORDED / f"{provider}.json").read_text())["interactions"][name]["response"]
    return response["status"], orjson.dumps(response["body"])


def config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "council.toml"
    path.write_text(text)
    return str(path)


def test_every_default_seat_works_on_the_embedded_provider_and_reasoning_is_counted():
    code, report = check_json()
    assert code == EXIT_OK and report["ok"]
    seats = {s["vendor"]: s for s in report["seats"]}
    assert set(seats) == SEATS and all(s["status"] == "ok" and s["verdict"] for s in seats.values())
    for vendor in ("openai", "google"):  # the reasoning judges spent reasoning, inside their output, and it is priced
        s = seats[vendor]
        assert 0 < s["reasoning_tokens"] < s["completion_tokens"] and s["run_reasoning_usd"] > 0
        assert s["run_cost_usd"] == pytest.approx(s["run_votes"] * s["cost_usd"], abs=1e-6)
    assert seats["anthropic"]["reasoning_tokens"] == 0 and seats["mistral"]["reserve"]


def test_a_thinking_budget_below_the_model_s_minimum_fails_at_check_with_the_seat_named(tmp_path):
    config = config_file(tmp_path, "[judge]\nthinking_budget = 64\n")
    code, report = check_json("--config", config)
    assert code == EXIT_INPUT and not report["ok"]
    google = next(s for s in report["seats"] if s["vendor"] == "google")
    assert google["status"] == "refused" and "gemini-2.5-pro" in google["detail"] and "128..32768" in google["detail"]
    assert google["prompt_tokens"] == 0  # found before any request
    assert "thinking_budget" in google["fix"]
    # the run with that config stops before any row is sent, naming the seat
    code, _, err = run("run", "--backend", "local", "--config", config, "--runs-dir", str(tmp_path / "runs"))
    assert code == EXIT_INPUT and "seat google" in err and not (tmp_path / "runs").exists()


def test_an_unknown_model_is_named_with_the_fix(tmp_path):
    config = config_file(tmp_path, 'quorum = 2\n[[roster]]\nvendor = "openai"\njudge_model = "openai/gpt-9"\n'
                                   '[[roster]]\nvendor = "google"\njudge_model = "google/gemini-2.5-pro"\n'
                                   '[[roster]]\nvendor = "alibaba"\njudge_model = "qwen/qwen3-max"\n')
    code, report = check_json("--config", config)
    assert code == EXIT_INPUT
    openai = next(s for s in report["seats"] if s["vendor"] == "openai")
    assert openai["status"] == "unusable" and "unknown model 'openai/gpt-9'" in openai["detail"]
    assert "model_ids" in openai["fix"] and openai["warnings"]  # not in the capability table either
    assert all(s["ok"] for s in report["seats"] if s["vendor"] != "openai")


def test_a_bad_key_is_named_with_the_variable_to_set(monkeypatch):
    body = orjson.dumps({"error": {"message": "Incorrect API key provided: sk-abc***xyz.", "type": "invalid_request_error",
                                   "param": None, "code": "invalid_api_key"}})
    monkeypatch.setenv("COUNCIL_API_KEY", "sk-abc-not-a-key-xyz")
    with answering(401, body) as (url, got):
        code, out, err = run("check", "--provider-url", url)
    assert code == EXIT_INPUT and len(got) == len(SEATS)  # one request a seat, none retried
    assert "API key rejected" in out and "Incorrect API key provided" in out
    assert "fix: set COUNCIL_API_KEY to a valid API key" in out
    assert "sk-abc-not-a-key-xyz" not in out + err


def test_a_refused_parameter_gives_the_provider_s_exact_words_and_stops_at_one_request():
    status, body = recorded_error("openai", "error_unsupported_value")
    text = json.loads(body)["error"]["message"]
    with answering(status, body) as (url, got):
        code, report = check_json("--provider-url", url)
    assert code == EXIT_INPUT and len(got) == len(SEATS)  # permanent: not retried, not asked again
    for seat in report["seats"]:
        assert seat["status"] == "unusable" and text[:60] in seat["detail"]
        assert seat["fix"].startswith("the model refuses")


def test_a_run_against_a_real_provider_checks_first_and_sends_no_row_when_a_seat_fails(tmp_path):
    status, body = recorded_error("openai", "error_unsupported_value")
    runs = tmp_path / "runs"
    with answering(status, body) as (url, got):
        code, _, err = run("run", "--backend", "local", "--provider-url", url, "--runs-dir", str(runs))
        assert code == 5 and "council check" in err and "--no-check" in err  # the provider refuses: exit 5
        assert len(got) == len(SEATS) and not runs.exists()
        code, _, err = run("run", "--backend", "local", "--provider-url", url, "--runs-dir", str(runs), "--no-check")
    assert code == 5 and runs.exists()  # unchecked, the run meets the refusal itself and stops at once


def test_a_seat_on_the_batch_transport_is_checked_with_a_batch_of_one_too():
    code, report = check_json("--transport", "batch", "--batch-wait", "60")
    # deepseek has no batch API: it stays synchronous in a batch run, and its seat is checked as such
    assert code == EXIT_OK and all(s["batch"] == ("ok" if s["vendor"] != "deepseek" else None) for s in report["seats"])


def test_grading_another_benchmark_s_outputs_checks_first_too(tmp_path, monkeypatch):
    body = orjson.dumps({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}})
    monkeypatch.setenv("COUNCIL_API_KEY", "not-a-key")
    runs = tmp_path / "runs"
    with answering(401, body) as (url, got):
        code, _, err = run("grade", "--responses", str(bank.SAMPLE_RESPONSES), "--provider-url", url, "--backend",
                           "local", "--runs-dir", str(runs))
    assert code == 5 and "council check: 6 seat(s) cannot grade" in err and len(got) == len(SEATS)
    assert not runs.exists()
