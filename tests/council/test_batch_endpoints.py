"""A vendor batches only through an endpoint that has a batch API the council speaks, as the providers' pages say
(council/protocol/batch_pages.json), and the embedded provider plays the same rules as black box: DeepSeek has no
batch API (its models refused by either batch API, whoever forwards them), Gemini's and DashScope's OpenAI-
compatible endpoints take OpenAI's files and batches (DashScope's international one for four models only).
A run at each vendor's own API (``council init --layout native``) with ``--transport batch`` batches where the
vendor's own API can, stays synchronous where it cannot, and gives the synchronous run's verdicts."""

from __future__ import annotations

import asyncio

import orjson
from openai import AsyncOpenAI

import bank
from council.protocol.config import CouncilConfig
from council.protocol.configfile import native_layout
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig, VendorBehaviour, start_sim
from tests.council.test_end_to_end import lines, subset
from tests.sim.test_sim_batches import QUIET, table

CHAT = {"max_tokens": 64, "messages": [{"role": "user", "content": "<round>1</round> hello"}]}


async def batch_of(client: AsyncOpenAI, model: str) -> tuple[str, list[str]]:
    """A batch of two requests for ``model``: its status once validated, and its errors' codes."""
    lines_ = b"".join(orjson.dumps({"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions",
                                    "body": {**CHAT, "model": model}}) + b"\n" for i in range(2))
    file = await client.files.create(file=("in.jsonl", lines_), purpose="batch")
    batch = await client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                        completion_window="24h")
    await asyncio.sleep(0.05)
    batch = await client.batches.retrieve(batch.id)
    return batch.status, [e.code for e in (batch.errors.data if batch.errors else [])]


async def test_the_embedded_provider_s_batch_apis_play_who_has_one() -> None:
    async with await start_sim(SimConfig(seed=1, batch_completion_s=0.01, default=VendorBehaviour(**QUIET)),
                               table(2)[0]) as server:
        gateway = AsyncOpenAI(base_url=server.url, api_key="test")
        status, codes = await batch_of(gateway, "deepseek/deepseek-v3.2")  # a gateway forwarding to DeepSeek
        assert status == "failed" and codes == ["model_not_supported"] * 2
        assert (await batch_of(gateway, "openai/gpt-5"))[0] != "failed"
        root = server.url.removesuffix("/v1")
        gemini = AsyncOpenAI(base_url=f"{root}/generativelanguage.googleapis.com/v1beta/openai", api_key="test")
        assert (await batch_of(gemini, "gemini-2.5-pro"))[0] != "failed"  # Gemini's OpenAI-compatible batches
        dashscope = AsyncOpenAI(base_url=f"{root}/dashscope-intl.aliyuncs.com/compatible-mode/v1", api_key="test")
        status, codes = await batch_of(dashscope, "qwen3-max")  # the international batch API's four models only
        assert status == "failed" and set(codes) == {"model_not_supported"}
        deepseek = AsyncOpenAI(base_url=f"{root}/api.deepseek.com", api_key="test")
        try:
            await deepseek.files.create(file=("in.jsonl", b"{}\n"), purpose="batch")
            raise AssertionError("DeepSeek's host has no files endpoint")
        except Exception as exc:  # noqa: BLE001 - the SDK's NotFoundError
            assert "404" in str(exc) or "Not Found" in str(exc)
        for client in (gateway, gemini, dashscope, deepseek):
            await client.close()


async def test_a_batch_run_at_each_vendor_s_own_api_batches_where_it_can(tmp_path) -> None:
    sim = tmp_path / "sim.json"
    sim.write_bytes(orjson.dumps({**SimConfig.planted(seed=0).model_dump(mode="json"), "batch_completion_s": 0.3}))
    native = native_layout(CouncilConfig())
    runs = {}
    for transport in ("sync", "batch"):
        config = native.model_copy(update={"transport": transport, "batch": native.batch.model_copy(
            update={"flush_s": 0.05, "poll_s": 0.2})})
        result = await run_council(RunRequest(bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 6),
                                              runs_dir=tmp_path / "runs", run_id=transport, backend="local",
                                              config=config, sim_config=sim))
        assert result.complete
        runs[transport] = result.run_dir
    assert lines(runs["batch"] / "verdicts.jsonl") == lines(runs["sync"] / "verdicts.jsonl")
    records = [r for name in ("round1.jsonl", "round2.jsonl") for r in lines(runs["batch"] / name)]
    batched = {r["member"] for r in records if r["batch_id"] is not None}
    # OpenAI's, Anthropic's and Gemini's own APIs take batches; DeepSeek has none, Mistral's batch jobs are not a
    # format the council speaks, and DashScope's international batch API does not take qwen3-max.
    assert batched == {"openai", "anthropic", "google"}
    manifest = orjson.loads((runs["batch"] / "manifest.json").read_bytes())
    assert set(manifest["batch_prices"]) == {m.judge_model for m in native.roster
                                             if m.vendor in ("openai", "anthropic", "google")}
