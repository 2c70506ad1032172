"""Cache breakpoints for a vendor that caches only where a request marks it (``VendorSettings.cache_breakpoints``:
Anthropic's models, directly or through OpenRouter): the client marks the system prompt and round one's prompt
with ``cache_control``, so a judge-v3 round two, which begins with round one's request, is served round one's
prompt from the cache; without the setting the request goes out as plain strings and such a vendor serves nothing."""

from __future__ import annotations

import contextlib
import json

import orjson
import pytest
from aiohttp import web

import bank
from council.cli import main
from council.protocol.config import CouncilConfig, Endpoint
from council.protocol.prompts import (
    CONVERSATION_VERSION, Peer, repair_messages, round1_messages, round2_body, single_messages,
)
from council.sim import SimConfig
from council.transport.client import ChatClient
from tests.council.test_end_to_end import lines, subset
from tests.council.test_followup_layout import item, row
from tests.council._loopback import serving
from tests.council.test_prices import genai_usd

ANTHROPIC = "anthropic"
OK_BODY = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


@contextlib.asynccontextmanager
async def captured():
    """The base URL of a server on 127.0.0.1 that answers every chat request alike, and the bodies it received."""
    bodies: list[dict] = []

    async def handler(request: web.Request) -> web.Response:
        bodies.append(orjson.loads(await request.read()))
        return web.json_response(OK_BODY)

    async with serving("/v1/chat/completions", handler) as url:
        yield url, bodies


def _marked(text: str) -> list[dict]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


async def test_the_client_marks_the_system_prompt_and_round_one_s_prompt():
    round_one = round1_messages(item(), row())
    round_two = single_messages(2, round2_body(item(), row(), "correct", "Mine.", [Peer("B", "incorrect", "No.")],
                                               version=CONVERSATION_VERSION))
    repair = repair_messages(round_two, "not JSON")
    (system, first), (own, peers) = [m["content"] for m in round_one], [m["content"] for m in round_two[2:]]
    async with captured() as (url, bodies):
        for on in (True, False):
            client = ChatClient(Endpoint(base_url=url, api_key_env=None), cache_breakpoints=on)
            for messages in (round_one, round_two, repair):
                await client.chat("anthropic/claude-sonnet-4.5", messages)
            await client.close()
    sent = [b["messages"] for b in bodies]
    marked_prefix = [{"role": "system", "content": _marked(system)}, {"role": "user", "content": _marked(first)}]
    assert sent[0] == marked_prefix  # round one: the system message and the (only) user message, as written
    assert sent[1] == [*marked_prefix, {"role": "assistant", "content": own}, {"role": "user", "content": peers}]
    assert sent[2] == [*marked_prefix, *round_two[2:], *repair[4:]]  # a repair keeps round one's breakpoint
    first_bytes = orjson.dumps(sent[0])[:-1]  # round one's messages, without the closing bracket
    assert orjson.dumps(sent[1]).startswith(first_bytes) and orjson.dumps(sent[2]).startswith(first_bytes)
    assert sent[3:] == [round_one, round_two, repair]  # off: every content a plain string, as before
    assert all(b["model"] == "anthropic/claude-sonnet-4.5" and b["max_tokens"] == 256 for b in bodies)


def _long_bank(tmp_path):
    """The shipped bank with a long reference on every item, so round one's prompt is over 1,024 tokens."""
    long_reference = " Worked answer, step by step:" + " each step is shown and checked." * 160
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines() if x.strip()]
    path = tmp_path / "bank.jsonl"
    path.write_bytes(b"".join(orjson.dumps({**i, "reference": i["reference"] + long_reference}) + b"\n" for i in items))
    return path


def test_a_judge_v3_run_serves_anthropic_s_round_two_from_the_cache_only_with_breakpoints(tmp_path):
    """The embedded provider's anthropic caches at breakpoints only. With ``cache_breakpoints`` on for anthropic,
    each of its round-two votes sent alone after its round one sent alone is served all of round one's prompt
    from the cache (and round two costs less); with it off, anthropic is served nothing, while every other vendor
    is served from its automatic cache in both runs, and the verdicts are the same."""
    planted = SimConfig.planted(seed=CouncilConfig().seed)
    vendors = {**planted.vendors, ANTHROPIC: planted.vendors[ANTHROPIC].model_copy(
        update={"prompt_cache_breakpoints": True})}
    sim_config = tmp_path / "sim.json"
    sim_config.write_text(planted.model_copy(update={"vendors": vendors}).model_dump_json())
    bank_path, responses = _long_bank(tmp_path), subset(tmp_path, 3)
    runs = {}
    for on in (True, False):
        config = tmp_path / f"council-{on}.json"
        config.write_text(json.dumps({"vendors": {ANTHROPIC: {"cache_breakpoints": on}}}))
        run_id = f"breakpoints-{on}"
        assert main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id,
                     "--bank", str(bank_path), "--responses", str(responses), "--simulate", "--sim-config",
                     str(sim_config), "--no-report", "--config", str(config), "--deliberate", "all"]) == 0
        folder = tmp_path / "runs" / run_id
        runs[on] = {r: [x for x in lines(folder / f"round{r}.jsonl") if not x.get("audit_of")] for r in (1, 2)}
    verdicts = {on: {r["row_id"]: r["consensus"] for r in lines(tmp_path / "runs" / f"breakpoints-{on}" /
                                                                  "verdicts.jsonl")} for on in runs}
    assert verdicts[True] == verdicts[False] and len(verdicts[True]) == 18

    def anthropic(on: bool, round_: int) -> list[dict]:
        return [r for r in runs[on][round_] if r["member"] == ANTHROPIC]

    first = {r["row_id"]: r for r in anthropic(True, 1)}
    alone = [r for r in anthropic(True, 2) if r["batch_size"] == 1 and first[r["row_id"]]["batch_size"] == 1
             and len(first[r["row_id"]]["raw_outputs"]) == 1 and len(r["raw_outputs"]) == 1]
    assert len(alone) > len(anthropic(True, 2)) / 2
    for r in alone:  # the prefix up to round one's breakpoint is round one's whole prompt, to the token
        assert r["usage"]["cached_tokens"] == first[r["row_id"]]["usage"]["prompt_tokens"] >= 1024
    assert all(r["usage"]["cached_tokens"] == 0 for k in (1, 2) for r in anthropic(False, k))
    for on in runs:  # the automatic vendors are served as before
        others = [r for r in runs[on][2] if r["member"] != ANTHROPIC]
        assert others and sum(r["usage"]["cached_tokens"] > 0 for r in others) > len(others) / 2
    cost = {on: sum(r["cost_usd"] for r in anthropic(on, 2)) for on in runs}
    assert cost[True] < cost[False]
    # What the provider wrote to its cache is reported (OpenRouter's cache_write_tokens) and paid at the
    # table's cache-write rate: each of anthropic's votes costs what genai-prices says for its usage.
    written = [r for k in (1, 2) for r in anthropic(True, k) if r["usage"]["cache_write_tokens"]]
    assert written and all(r["usage"]["cache_write_tokens"] >= 1024 for r in written)
    assert not any(r["usage"]["cache_write_tokens"] for k in (1, 2) for r in anthropic(False, k))
    for r in (r for k in (1, 2) for r in anthropic(True, k)):
        u = r["usage"]
        assert r["cost_usd"] == pytest.approx(genai_usd(
            r["judge_model"].split("/", 1)[1], "anthropic", input_tokens=u["prompt_tokens"],
            output_tokens=u["completion_tokens"], cache_read_tokens=u["cached_tokens"],
            cache_write_tokens=u["cache_write_tokens"]), rel=1e-6, abs=1e-9)
