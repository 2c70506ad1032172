"""The providers' batch formats (council.transport.batch_formats): input lines and bodies checked against the
official SDKs' TypedDicts and against what the synchronous call sends, results read from lines the SDKs' own
pydantic models write, and the splitting of a regrade into batches within the providers' limits."""

from __future__ import annotations

import typing

import orjson
import pytest
from aiohttp import web

from council.core.schema import Usage
from council.protocol.config import Endpoint
from council.protocol.prompts import request_key
from council.transport.batch_formats import (
    ANTHROPIC_CUSTOM_ID, BatchError, BatchRequest, anthropic_batches, anthropic_entry, openai_files, openai_line,
    read_anthropic_results, read_openai_results,
)
from council.transport.client import ChatClient
from council.transport.wire import Reply
from tests.council._loopback import serving
from tests.council.test_wire import FORMAT, MESSAGES, SAMPLING, assert_fits, sdk_message


def requests(n: int, model: str = "gpt-4.1-mini", start: int = 0) -> list[BatchRequest]:
    return [BatchRequest(f"req-{start + i}", model, [*MESSAGES[:1], {"role": "user", "content": "x" * (i % 7 + 1)}],
                         max_tokens=64, response_format=FORMAT) for i in range(n)]


def completion(content: str, prompt_tokens: int) -> dict:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 2, "total_tokens": prompt_tokens + 2}},
    ).model_dump(mode="json")


# -- OpenAI-style -----------------------------------------------------------------------------------------------------


def test_an_openai_line_is_a_post_to_chat_completions_with_an_sdk_shaped_body():
    from openai.types.batch_create_params import BatchCreateParams
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    line = openai_line(requests(1)[0])
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    data = orjson.loads(line)
    assert set(data) == {"custom_id", "method", "url", "body"}
    assert (data["custom_id"], data["method"]) == ("req-0", "POST")
    endpoints = typing.get_args(typing.get_args(typing.get_type_hints(BatchCreateParams, include_extras=True)["endpoint"])[0])
    assert data["url"] in endpoints
    assert_fits(data["body"], CompletionCreateParamsNonStreaming)


@pytest.mark.parametrize("cache_breakpoints", [False, True])
async def test_an_openai_line_carries_the_body_the_synchronous_call_sends(cache_breakpoints):
    sent: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        sent.append(await request.read())
        return web.json_response(completion("ok", 3))

    async with serving("/v1/chat/completions", handler) as url:
        client = ChatClient(Endpoint(base_url=url, api_key_env=None), cache_breakpoints=cache_breakpoints)
        request = BatchRequest("k", "gpt-4.1-mini", MESSAGES, temperature=0.2, max_tokens=99, response_format=FORMAT)
        await client.chat(request.model, request.messages, temperature=0.2, max_tokens=99, response_format=FORMAT)
        await client.close()
    assert sent == [orjson.dumps(orjson.loads(openai_line(request, cache_breakpoints=cache_breakpoints))["body"])]


def test_openai_results_are_matched_by_custom_id_across_output_and_error_files():
    from openai.types import BatchError as OpenAIBatchError

    output = [
        {"id": "batch_req_2", "custom_id": "b", "error": None,
         "response": {"status_code": 200, "request_id": "r2", "body": completion('{"verdict": "incorrect"}', 11)}},
        {"id": "batch_req_1", "custom_id": "a", "error": None,
         "response": {"status_code": 200, "request_id": "r1", "body": completion('{"verdict": "correct"}', 10)}},
    ]
    errors = [
        {"id": "batch_req_3", "custom_id": "c", "response": None,
         "error": OpenAIBatchError(code="batch_expired", message="not run within 24h").model_dump()},
        {"id": "batch_req_4", "custom_id": "d", "error": None,
         "response": {"status_code": 400, "request_id": "r4",
                      "body": {"error": {"message": "max_tokens is too large", "code": "invalid_value"}}}},
    ]
    lines = [orjson.dumps(line) for line in output] + [b""] + [orjson.dumps(line).decode() for line in errors]
    results = read_openai_results(lines)
    assert results["a"] == Reply('{"verdict": "correct"}', "stop", Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12))
    assert results["b"].content == '{"verdict": "incorrect"}'
    assert results["c"] == BatchError("batch_expired", None, "not run within 24h")
    assert results["d"] == BatchError("invalid_value", 400, "max_tokens is too large")
    assert set(results) == {"a", "b", "c", "d"}


def test_openai_results_refuse_a_custom_id_twice_and_a_line_without_one():
    line = orjson.dumps({"custom_id": "a", "error": {"code": "batch_expired", "message": ""}, "response": None})
    with pytest.raises(ValueError, match="'a' has two results"):
        read_openai_results([line, line])
    with pytest.raises(ValueError, match="line 1 has no custom_id"):
        read_openai_results([b'{"response": null}'])


def test_openai_files_hold_one_model_each_and_at_most_max_lines():
    mixed = [*requests(5, "gpt-4.1-mini"), *requests(3, "o3-mini", start=5), *requests(2, "gpt-4.1-mini", start=8)]
    files = openai_files(mixed, max_lines=3)
    assert [(f.model, len(f.custom_ids)) for f in files] == [("gpt-4.1-mini", 3), ("gpt-4.1-mini", 3), ("gpt-4.1-mini", 1),
                                                             ("o3-mini", 3)]
    for f in files:
        lines = f.content.splitlines()
        assert [orjson.loads(line)["body"]["model"] for line in lines] == [f.model] * len(lines)
        assert tuple(orjson.loads(line)["custom_id"] for line in lines) == f.custom_ids
    assert [i for f in files for i in f.custom_ids] == [f"req-{i}" for i in (0, 1, 2, 3, 4, 8, 9, 5, 6, 7)]


def test_openai_files_are_cut_at_max_bytes_counted_exactly():
    batch = requests(6)
    sizes = [len(openai_line(r)) for r in batch]
    assert len(set(sizes)) > 1  # lines of different lengths, so a miscount would show
    exact = sum(sizes[:4])
    files = openai_files(batch, max_bytes=exact)
    assert len(files[0].custom_ids) == 4 and len(files[0].content) == exact
    assert len(openai_files(batch, max_bytes=exact - 1)[0].custom_ids) == 3
    assert b"".join(f.content for f in files) == b"".join(openai_line(r) for r in batch)
    assert all(len(f.content) <= exact for f in files)


def test_openai_files_refuse_a_custom_id_twice_and_a_line_too_large():
    with pytest.raises(ValueError, match="'req-0' appears twice"):
        openai_files([*requests(1), *requests(1)])
    with pytest.raises(ValueError, match="alone is"):
        openai_files(requests(1), max_bytes=10)


# -- Anthropic --------------------------------------------------------------------------------------------------------


def test_an_anthropic_entry_is_the_sdk_s_request_with_a_messages_body():
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.messages.batch_create_params import Request

    entry = anthropic_entry(requests(1, "claude-sonnet-4-5")[0], cache_breakpoints=True)
    assert_fits(entry, Request)
    assert_fits(entry["params"], MessageCreateParamsNonStreaming, extra=SAMPLING)
    assert entry["params"]["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_a_vote_s_request_key_is_a_valid_anthropic_custom_id():
    key = request_key("anthropic/claude-sonnet-4.5", 1, "Question: 2+2?\nResponse: 4", 0.0, 256)
    assert len(key) == 32 and ANTHROPIC_CUSTOM_ID.match(key)
    assert anthropic_entry(BatchRequest(key, "claude-sonnet-4-5", MESSAGES))["custom_id"] == key


@pytest.mark.parametrize("custom_id", ["", "a" * 65, "row/1", "vote 1", "é"])
def test_custom_ids_anthropic_refuses_are_refused(custom_id):
    with pytest.raises(ValueError, match="does not match"):
        anthropic_entry(BatchRequest(custom_id, "claude-sonnet-4-5", MESSAGES))


def test_anthropic_batches_are_cut_at_max_requests_and_max_bytes_counted_exactly():
    batch = requests(7, "claude-sonnet-4-5")
    by_count = anthropic_batches(batch, max_requests=3)
    assert [len(b.custom_ids) for b in by_count] == [3, 3, 1]
    whole = anthropic_batches(batch)
    [body] = [b.body for b in whole]
    assert orjson.loads(body) == {"requests": [anthropic_entry(r) for r in batch]}
    exact = len(anthropic_batches(batch[:4])[0].body)
    cut = anthropic_batches(batch, max_bytes=exact)
    assert len(cut[0].custom_ids) == 4 and len(cut[0].body) == exact
    assert len(anthropic_batches(batch, max_bytes=exact - 1)[0].custom_ids) == 3
    assert all(len(b.body) <= exact for b in cut) and [i for b in cut for i in b.custom_ids] == [r.custom_id for r in batch]


def anthropic_line(custom_id: str, result: dict) -> str:
    from anthropic.types.messages import MessageBatchIndividualResponse

    return MessageBatchIndividualResponse.model_validate({"custom_id": custom_id, "result": result}).model_dump_json()


def test_anthropic_results_read_every_kind():
    message = sdk_message(stop_reason="max_tokens")
    lines = [
        anthropic_line("expired-one", {"type": "expired"}),
        anthropic_line("ok-one", {"type": "succeeded", "message": message.model_dump()}),
        anthropic_line("bad-one", {"type": "errored", "error": {
            "type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}}),
        anthropic_line("cancelled-one", {"type": "canceled"}),
    ]
    results = read_anthropic_results(lines)
    assert results["ok-one"] == Reply('{"verdict": "correct"}', "length",
                                      Usage(prompt_tokens=1000, completion_tokens=12, total_tokens=1012,
                                            cached_tokens=900, cache_write_tokens=60))
    assert results["bad-one"] == BatchError("invalid_request_error", None, "max_tokens: too large")
    assert results["expired-one"].code == "expired" and results["cancelled-one"].code == "canceled"
    assert set(results) == {"ok-one", "bad-one", "expired-one", "cancelled-one"}


def test_an_unreadable_succeeded_message_is_an_error_of_its_own():
    line = orjson.dumps({"custom_id": "x", "result": {"type": "succeeded", "message": {"type": "message"}}})
    [(custom_id, outcome)] = read_anthropic_results([line]).items()
    assert custom_id == "x" and outcome.code == "malformed_result" and "malformed message body" in outcome.message
