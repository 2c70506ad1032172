"""Secrets stay secret: the API key comes only from the environment and is found nowhere it was not put.

The embedded provider runs as its own ``council sim`` process on 127.0.0.1; ``council run`` and ``council
grade`` (through ``council.cli.main``) send it real requests with a canary key, succeed, fail in several
ways, and are rescored. Then every byte written under the test's folder, everything printed (by the CLI and
by the provider process) and the structured logs are searched for the canary and for ``Bearer``.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from council.cli import main
from council.core import logs
from tests.council.test_end_to_end import subset

CANARY = "sk-canary-7f3b" + secrets.token_hex(12)
PLAIN_CANARY = "plain-canary-" + secrets.token_hex(12)  # a key of no well-known shape


def hits(data: bytes) -> list[str]:
    found = []
    for needle in (CANARY, CANARY[-16:], PLAIN_CANARY, "Bearer"):
        if needle.encode() in data:
            found.append(needle)
    return found


def leaks_under(root: Path) -> dict[str, list[str]]:
    """Every file under ``root`` (recursively, as bytes) that holds the canary or ``Bearer``."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found = hits(path.read_bytes())
            if found:
                out[str(path.relative_to(root))] = found
    return out


class SimProcess:
    """``council sim`` in its own process on 127.0.0.1, with the canary key in its environment too."""

    def __init__(self) -> None:
        env = {**os.environ, "COUNCIL_API_KEY": CANARY, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "council.cli", "sim", "--host", "127.0.0.1", "--port",
                                      "0", "--seed", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.stdout = self.proc.stdout.readline()
        self.stderr = b""
        self.url = self.stdout.decode().strip().rsplit(" ", 1)[-1]

    def stop(self) -> None:
        if self.proc.returncode is not None:
            return
        self.proc.terminate()
        try:
            rest, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest, err = self.proc.communicate()
        self.stdout += rest
        self.stderr += err


@pytest.fixture
def sim_process(monkeypatch):
    monkeypatch.setenv("COUNCIL_API_KEY", CANARY)
    sim = SimProcess()
    try:
        assert sim.url.startswith("http://127.0.0.1:") and sim.url.endswith("/v1"), (sim.stdout, sim.stderr)
        yield sim
    finally:
        sim.stop()


def test_the_key_is_found_nowhere(tmp_path, sim_process, capsys, monkeypatch):
    url = sim_process.url
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    responses = subset(tmp_path, 2)
    printed: list[str] = []
    common = ["--backend", "local", "--runs-dir", str(runs)]

    def cli(*argv: str) -> int:
        code = main(list(argv))
        captured = capsys.readouterr()
        printed.extend([captured.out, captured.err])
        return code

    # a run and a grade that succeed against the provider process
    assert cli("run", *common, "--run-id", "ok-run", "--responses", str(responses), "--provider-url", url) == 0
    assert cli("grade", *common, "--run-id", "ok-grade", "--responses", str(responses), "--provider-url", url) == 0
    for run_id in ("ok-run", "ok-grade"):
        log = runs / run_id / "log.jsonl"
        assert log.is_file() and log.stat().st_size > 0
        assert all(orjson.loads(line) for line in log.read_bytes().splitlines())
        record = orjson.loads((runs / run_id / "round1.jsonl").read_bytes().splitlines()[0])
        assert record["parse_status"] != "error"  # the provider process really answered
    assert cli("rescore", "ok-grade", "--runs-dir", str(runs)) == 0

    # an unknown judge model in the roster: refused before any call
    config = tmp_path / "bad-roster.json"
    config.write_bytes(orjson.dumps({"roster": [
        {"vendor": "openai", "judge_model": "no-such-model-xyz"},
        {"vendor": "google", "judge_model": "google/gemini-2.5-flash"},
        {"vendor": "anthropic", "judge_model": "anthropic/claude-haiku-4.5"},
    ]}))
    assert cli("grade", *common, "--run-id", "bad-roster", "--responses", str(responses), "--provider-url", url,
               "--config", str(config)) != 0

    # a provider URL with a wrong path: every call is answered 404 (council check says so, and without the check the
    # run meets it and writes its log)
    for check in ((), ("--no-check",)):
        assert cli("grade", *common, *check, "--run-id", "wrong-path", "--responses", str(responses),
                   "--provider-url", url.removesuffix("/v1") + "/wrong/v1") != 0
    # a provider that is not there at all
    for check in ((), ("--no-check",)):
        assert cli("grade", *common, *check, "--run-id", "no-provider", "--responses", str(responses),
                   "--provider-url", "http://127.0.0.1:9/v1") != 0

    assert any((runs / r / "log.jsonl").is_file() for r in ("wrong-path", "no-provider"))
    assert leaks_under(tmp_path) == {}
    assert [hits(text.encode()) for text in printed if hits(text.encode())] == []
    sim_process.stop()
    assert sim_process.stdout.startswith(b"embedded provider listening on ")
    assert hits(sim_process.stdout) == [] and hits(sim_process.stderr) == []


class EchoProvider:
    """A provider on 127.0.0.1 that answers every call with an error quoting the request's key: 401 with the
    key (as some real providers do), or 400 with the whole Authorization header."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.port: int | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self) -> None:
        from aiohttp import web

        async def answer(request: web.Request) -> web.Response:
            auth = request.headers.get("Authorization", "")
            if self.status == 401:
                message = f"Incorrect API key provided: {auth.removeprefix('Bearer ')}"
            else:
                message = f"bad request; headers were: Authorization: {auth}"
            return web.json_response({"error": {"message": message, "type": "invalid_request_error"}},
                                     status=self.status)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture(params=[401, 400])
def echo_provider(request, monkeypatch):
    monkeypatch.setenv("COUNCIL_API_KEY", CANARY)
    provider = EchoProvider(request.param)
    yield provider
    provider.close()


def _grade_against(tmp_path: Path, url: str, capsys) -> str:
    responses = subset(tmp_path, 1)
    code = main(["grade", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "echo",
                 "--responses", str(responses), "--provider-url", url])
    captured = capsys.readouterr()
    assert code != 0
    return captured.out + captured.err


def test_a_provider_quoting_the_key_back_does_not_get_it_archived(tmp_path, echo_provider, capsys):
    printed = _grade_against(tmp_path, echo_provider.url, capsys)
    needles = (CANARY, CANARY[-16:])
    assert not any(n in printed for n in needles)
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            assert not any(n.encode() in path.read_bytes() for n in needles), path


def test_a_provider_quoting_the_header_back_leaves_no_bearer(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COUNCIL_API_KEY", CANARY)
    provider = EchoProvider(400)
    try:
        printed = _grade_against(tmp_path, provider.url, capsys)
    finally:
        provider.close()
    assert "Bearer" not in printed
    assert leaks_under(tmp_path) == {}


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_a_key_inside_the_provider_url_is_refused_and_not_archived(tmp_path, sim_process, capsys, form):
    url = sim_process.url
    url = url.replace("http://", f"http://user:{CANARY}@") if form == "userinfo" else url + f"?key={CANARY}"
    assert main(["grade", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", "in-url",
                 "--responses", str(subset(tmp_path, 1)), "--provider-url", url]) == 2
    captured = capsys.readouterr()
    assert "never in the URL" in captured.err and not (tmp_path / "runs" / "in-url").exists()
    assert hits((captured.out + captured.err).encode()) == []
    assert leaks_under(tmp_path / "runs" / "in-url") == {}


# ------------------------------------------------------------------------------------------ log redaction


@pytest.fixture
def log_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COUNCIL_API_KEY", CANARY)
    monkeypatch.setenv("OTHER_PROVIDER_API_KEY", PLAIN_CANARY)
    path = tmp_path / "log.jsonl"
    logs.configure(path)
    yield path
    logs.configure(None)


def test_log_redacts_secret_values_wherever_they_are(log_file):
    log = logs.get_logger("test")
    log.info("call.failed", message=f"401: Incorrect API key provided: {CANARY}",
             detail={"request": {"Authorization": f"Bearer {CANARY}", "x": [f"key={PLAIN_CANARY}"]}},
             url=f"https://user:{PLAIN_CANARY}@example.invalid/v1?api_key={CANARY}&model=m",
             note=f"header was 'Authorization: Bearer {PLAIN_CANARY}'", api_key=CANARY, my_api_key="abc")
    try:
        raise RuntimeError(f"request failed with headers {{'Authorization': 'Bearer {CANARY}'}}")
    except RuntimeError:
        log.exception("crash", other=PLAIN_CANARY)
    logs.configure(None)
    data = log_file.read_bytes()
    assert hits(data) == []
    lines = [orjson.loads(line) for line in data.splitlines()]
    assert [line["event"] for line in lines] == ["call.failed", "crash"]
    first = lines[0]
    assert first["api_key"] == first["my_api_key"] == logs.REDACTED
    assert first["message"] == f"401: Incorrect API key provided: {logs.REDACTED}"
    assert first["detail"]["request"]["Authorization"] == logs.REDACTED
    assert first["url"].startswith("https://user:[redacted]@example.invalid/v1?api_key=[redacted]&model=m")
    assert "RuntimeError" in lines[1]["exception"] and lines[1]["other"] == logs.REDACTED


def test_log_keeps_ordinary_values(log_file):
    log = logs.get_logger("test")
    log.info("run.done", rows=12, request_key="a" * 64, prompt_tokens=120, provider="http://127.0.0.1:8000/v1",
             reason="the bearer of bad news", seconds=1.5)
    logs.configure(None)
    (line,) = [orjson.loads(x) for x in log_file.read_bytes().splitlines()]
    assert line["rows"] == 12 and line["request_key"] == "a" * 64 and line["prompt_tokens"] == 120
    assert line["provider"] == "http://127.0.0.1:8000/v1" and line["seconds"] == 1.5
    assert line["reason"] == "the bearer of bad news"


def test_logging_before_configure_prints_nothing():
    """structlog's own default would print every event, unredacted, to stdout."""
    code = ("from council.core import logs\n"
            "logs.get_logger('x').error('boom', key='sk-canary-in-a-fresh-process', api_key='x' * 20)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                          env={**os.environ, "COUNCIL_API_KEY": CANARY})
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"" and done.stderr == b""
