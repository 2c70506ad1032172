"""The wire formats (council.transport.wire) against the official SDKs: the providers' answers are built with the
SDKs' own pydantic models, our request bodies are checked against the SDKs' TypedDicts, and ChatClient speaks
Anthropic's Messages API to a server that records what it received."""

from __future__ import annotations

import contextlib
import typing

import orjson
import pytest
from aiohttp import web

from council.core.errors import ProviderError, ProviderUnavailable
from council.core.schema import Usage
from council.protocol.config import Endpoint, RetryPolicy, Timeouts
from council.transport.client import ChatClient
from council.transport.wire import AnthropicWire, MalformedReply, OpenAIWire, wire_for
from tests.council._loopback import serving

if typing.TYPE_CHECKING:
    from anthropic.types import Message

MESSAGES = [{"role": "system", "content": "You grade answers."}, {"role": "user", "content": "Round one."},
            {"role": "assistant", "content": '{"verdict": "correct"}'}, {"role": "user", "content": "Round two."}]
FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}}
EPHEMERAL = {"type": "ephemeral"}
KEY = "sk-ant-api03-wire-test-secret-0123456789"
# The Anthropic SDK 2.x has no sampling parameters (API version 2026-10-21 refuses them); under the
# anthropic-version the council sends, 2023-06-01, `temperature` is still a field of the Messages API.
SAMPLING = {"temperature"}


def declared(typed_dict: type) -> set[str]:
    return set(typing.get_type_hints(typed_dict))


def required(typed_dict: type) -> set[str]:
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    return {name for name, hint in hints.items() if typing.get_origin(hint) is typing.Required}


def assert_fits(value: dict, typed_dict: type, extra: set[str] = frozenset()) -> None:
    assert required(typed_dict) <= set(value) <= declared(typed_dict) | extra, (typed_dict.__name__, sorted(value))


def anthropic_body(**kw) -> dict:
    return AnthropicWire().body("claude-sonnet-4-5", MESSAGES, {"temperature": 0.0, "max_tokens": 300},
                                response_format=FORMAT, **kw)


def sdk_message(**kw) -> Message:
    from anthropic.types import Message

    fields = dict(id="msg_01", type="message", role="assistant", model="claude-sonnet-4-5",
                  content=[{"type": "text", "text": '{"verdict": '}, {"type": "text", "text": '"correct"}'}],
                  stop_reason="end_turn", stop_sequence=None,
                  usage={"input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 900,
                         "cache_creation_input_tokens": 60})
    return Message.model_validate({**fields, **kw})


# -- request bodies ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cache_breakpoints", [False, True])
def test_the_openai_body_has_only_fields_the_sdk_declares(cache_breakpoints):
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    body = OpenAIWire().body("gpt-4.1-mini", MESSAGES, {"temperature": 0.0, "max_tokens": 300}, response_format=FORMAT,
                             cache_breakpoints=cache_breakpoints)
    assert_fits(body, CompletionCreateParamsNonStreaming)
    assert body["response_format"] == FORMAT and body["messages"][0]["role"] == "system"


def test_the_openai_body_is_the_one_the_client_always_sent():
    plain = OpenAIWire().body("m", MESSAGES, {"max_tokens": 9, "temperature": 0.5})
    assert plain == {"model": "m", "messages": MESSAGES, "temperature": 0.5, "max_tokens": 9}
    assert list(OpenAIWire().body("m", MESSAGES, {"temperature": 0.5, "max_tokens": 9}, response_format=FORMAT)) == [
        "model", "messages", "temperature", "max_tokens", "response_format"]


@pytest.mark.parametrize("cache_breakpoints", [False, True])
def test_the_anthropic_body_has_only_fields_the_sdk_declares(cache_breakpoints):
    from anthropic.types import CacheControlEphemeralParam, TextBlockParam
    from anthropic.types.assistant_message_param import AssistantMessageParam
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.user_message_param import UserMessageParam

    body = anthropic_body(cache_breakpoints=cache_breakpoints)
    assert_fits(body, MessageCreateParamsNonStreaming, extra=SAMPLING)
    for block in body["system"]:
        assert_fits(block, TextBlockParam)
    for turn in body["messages"]:
        assert_fits(turn, UserMessageParam if turn["role"] == "user" else AssistantMessageParam)
        for block in turn["content"]:
            assert_fits(block, TextBlockParam)
            if "cache_control" in block:
                assert_fits(block["cache_control"], CacheControlEphemeralParam)


def test_the_anthropic_body_lifts_the_system_prompt_and_marks_what_marked_marks():
    body = anthropic_body(cache_breakpoints=True)
    assert body["system"] == [{"type": "text", "text": "You grade answers.", "cache_control": EPHEMERAL}]
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"type": "text", "text": "Round one.", "cache_control": EPHEMERAL}]
    assert body["messages"][1]["content"] == [{"type": "text", "text": '{"verdict": "correct"}'}]
    assert body["messages"][2]["content"] == [{"type": "text", "text": "Round two."}]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-sonnet-4-5", 300, 0.0)
    assert "response_format" not in body
    plain = anthropic_body()
    assert "cache_control" not in orjson.dumps(plain).decode()
    assert plain["system"] == [{"type": "text", "text": "You grade answers."}]


def test_a_conversation_without_a_system_message_sends_no_system_field():
    body = AnthropicWire().body("claude-sonnet-4-5", MESSAGES[1:2], {"temperature": 0.0, "max_tokens": 16})
    assert "system" not in body and body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Round one."}]}]


def test_an_unknown_api_is_refused():
    with pytest.raises(ValueError, match="unknown API 'gemini'"):
        wire_for("gemini")


# -- replies ----------------------------------------------------------------------------------------------------------


def test_an_anthropic_message_reads_as_the_council_s_reply():
    reply = AnthropicWire().reply(sdk_message().model_dump_json().encode())
    assert reply.content == '{"verdict": "correct"}' and reply.finish_reason == "stop"
    assert reply.usage == Usage(prompt_tokens=1000, completion_tokens=12, total_tokens=1012, cached_tokens=900,
                                cache_write_tokens=60)


@pytest.mark.parametrize(("stop", "finish"), [("max_tokens", "length"), ("stop_sequence", "stop"),
                                              ("refusal", "content_filter"), ("pause_turn", "pause_turn")])
def test_anthropic_stop_reasons_map_to_finish_reasons(stop, finish):
    assert AnthropicWire().reply(sdk_message(stop_reason=stop).model_dump_json().encode()).finish_reason == finish


def test_an_anthropic_message_reads_only_its_text_blocks_and_counts_thinking():
    message = sdk_message(content=[{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                                   {"type": "text", "text": "ok"}],
                          usage={"input_tokens": 5, "output_tokens": 30, "output_tokens_details": {"thinking_tokens": 20}})
    reply = AnthropicWire().reply(message.model_dump_json().encode())
    assert reply.content == "ok"
    assert reply.usage == Usage(prompt_tokens=5, completion_tokens=30, total_tokens=35, reasoning_tokens=20)
    thinking_only = sdk_message(content=[{"type": "thinking", "thinking": "hmm", "signature": "sig"}],
                                stop_reason="max_tokens")
    assert AnthropicWire().reply(thinking_only.model_dump_json().encode()).content is None


def test_an_openai_completion_reads_as_before():
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57,
                  "prompt_tokens_details": {"cached_tokens": 32},
                  "completion_tokens_details": {"reasoning_tokens": 3}}})
    reply = OpenAIWire().reply(completion.model_dump_json().encode())
    assert (reply.content, reply.finish_reason) == ("hi", "length")
    assert reply.usage == Usage(prompt_tokens=50, completion_tokens=7, total_tokens=57, reasoning_tokens=3,
                                cached_tokens=32)


@pytest.mark.parametrize("wire", [OpenAIWire(), AnthropicWire()], ids=["openai", "anthropic"])
def test_a_body_that_is_not_a_reply_is_malformed(wire):
    with pytest.raises(MalformedReply, match=rf"malformed {wire.noun} body \(KeyError\)"):
        wire.reply(b'{"id": "x"}')


# -- error bodies -----------------------------------------------------------------------------------------------------


def anthropic_error(kind: str, message: str) -> bytes:
    from anthropic.types.shared import ErrorResponse

    return ErrorResponse.model_validate({"type": "error", "error": {"type": kind, "message": message},
                                         "request_id": "req_1"}).model_dump_json().encode()


def test_anthropic_error_bodies():
    wire = AnthropicWire()
    missing = wire.error(404, anthropic_error("not_found_error", "model: claude-frobnicator-9"))
    assert (missing.code, missing.text, missing.unknown_model) == ("not_found_error", "model: claude-frobnicator-9", True)
    assert not wire.error(404, anthropic_error("not_found_error", "Not Found")).unknown_model
    overloaded = wire.error(529, anthropic_error("overloaded_error", "Overloaded"))
    assert overloaded.code == "overloaded_error" and not overloaded.unknown_model and not overloaded.no_quota
    assert wire.error(400, anthropic_error("billing_error", "Your credit balance is too low")).no_quota
    assert wire.error(502, b"<html>bad gateway</html>").text == "<html>bad gateway</html>"


# -- ChatClient on the Messages API -----------------------------------------------------------------------------------


class Recorder:
    """A tiny Messages API on 127.0.0.1: answers from a script of (status, body) steps and records every request."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.requests: list[tuple[str, dict, dict]] = []

    async def handler(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.headers), orjson.loads(await request.read())))
        status, body = self.steps.pop(0)
        return web.Response(status=status, body=body, content_type="application/json")


@pytest.fixture
async def messages_api():
    async with contextlib.AsyncExitStack() as servers:

        async def start(recorder: Recorder) -> str:
            return await servers.enter_async_context(serving("/v1/messages", recorder.handler))

        yield start


def client(url: str, attempts: int = 3) -> ChatClient:
    endpoint = Endpoint(base_url=url, api_key_env="COUNCIL_TEST_ANTHROPIC_KEY", timeouts=Timeouts(read_s=5, total_s=6),
                        retry=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=0.05))
    return ChatClient(endpoint, vendor="anthropic", api="anthropic", cache_breakpoints=True)


async def test_chat_client_speaks_the_messages_api(messages_api, monkeypatch):
    monkeypatch.setenv("COUNCIL_TEST_ANTHROPIC_KEY", KEY)
    recorder = Recorder([(200, sdk_message().model_dump_json().encode())])
    chat = client(await messages_api(recorder))
    result = await chat.chat("claude-sonnet-4-5", MESSAGES, max_tokens=300, response_format=FORMAT)
    await chat.close()
    [(path, headers, body)] = recorder.requests
    assert path == "/v1/messages"
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers
    assert body == anthropic_body(cache_breakpoints=True)
    assert result.content == '{"verdict": "correct"}' and result.finish_reason == "stop" and result.attempts == 1
    assert result.usage == Usage(prompt_tokens=1000, completion_tokens=12, total_tokens=1012, cached_tokens=900,
                                 cache_write_tokens=60)


async def test_an_unknown_anthropic_model_stops_at_once(messages_api, monkeypatch):
    monkeypatch.setenv("COUNCIL_TEST_ANTHROPIC_KEY", KEY)
    recorder = Recorder([(404, anthropic_error("not_found_error", f"model: claude-frobnicator-9 (key {KEY})"))])
    url = await messages_api(recorder)
    chat = client(url)
    with pytest.raises(ProviderUnavailable) as info:
        await chat.chat("claude-frobnicator-9", MESSAGES)
    await chat.close()
    message = str(info.value)
    assert message.startswith(f"anthropic: {url}: HTTP 404: unknown model 'claude-frobnicator-9': model: ")
    assert KEY not in message and len(recorder.requests) == 1


async def test_an_overloaded_anthropic_api_is_retried(messages_api, monkeypatch):
    monkeypatch.setenv("COUNCIL_TEST_ANTHROPIC_KEY", KEY)
    recorder = Recorder([(529, anthropic_error("overloaded_error", "Overloaded")),
                         (200, sdk_message().model_dump_json().encode())])
    chat = client(await messages_api(recorder))
    result = await chat.chat("claude-sonnet-4-5", MESSAGES)
    await chat.close()
    assert result.attempts == 2 and len(recorder.requests) == 2


async def test_a_malformed_anthropic_reply_is_a_provider_error(messages_api, monkeypatch):
    monkeypatch.setenv("COUNCIL_TEST_ANTHROPIC_KEY", KEY)
    recorder = Recorder([(200, b'{"type": "message"}')])
    url = await messages_api(recorder)
    chat = client(url, attempts=1)
    with pytest.raises(ProviderError) as info:
        await chat.chat("claude-sonnet-4-5", MESSAGES)
    await chat.close()
    assert not isinstance(info.value, ProviderUnavailable)
    assert str(info.value).startswith(f"anthropic: {url}: claude-sonnet-4-5: malformed message body (KeyError)")


async def test_an_anthropic_account_without_credit_stops_at_once(messages_api, monkeypatch):
    monkeypatch.setenv("COUNCIL_TEST_ANTHROPIC_KEY", KEY)
    recorder = Recorder([(400, anthropic_error("billing_error", "Your credit balance is too low"))])
    url = await messages_api(recorder)
    chat = client(url)
    with pytest.raises(ProviderUnavailable) as info:
        await chat.chat("claude-sonnet-4-5", MESSAGES)
    await chat.close()
    assert str(info.value).startswith(f"anthropic: {url}: HTTP 400: the account has no quota left: Your credit")
    assert len(recorder.requests) == 1 and chat.breaker.state == "open"
