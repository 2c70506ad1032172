"""judge-v4: round two repeats round one only where a provider's prompt cache serves the repeat (round one's whole
request, over the cache minimum), else it is judge-v2's one message; round two packs its rows as round one
does; the rule reads round one's archived record alone, so request keys and resumes stay exact."""

from __future__ import annotations

from collections import Counter, deque

import orjson

import bank
from council.core.schema import JudgeCallRecord, Usage
from council.protocol.config import CouncilConfig, VendorSettings
from council.protocol.deliberation import CACHE_MIN_TOKENS, round_one_tokens, round_two_layout
from council.protocol.prompts import (
    CACHED_HASHES, CACHED_VERSION, CONVERSATION_VERSION, PROMPT_VERSION, prompt_hash, prompt_hashes, round1_body,
    round2_body,
)
from council.run.runner import RunRequest, resume_council, run_council
from council.sim import SimConfig, TruthTable, start_sim
from council.transport.judge import JudgeTask, take_batch
from council.transport.shape import vote_key
from tests.council.test_end_to_end import lines, subset
from tests.council.test_followup_layout import PEERS, item, row


def first(prompt_tokens: int, rows: int = 0, raws: int = 1) -> JudgeCallRecord:
    """A member's round-one record: its share of a request of ``rows`` rows (0: alone) of ``prompt_tokens``."""
    batch = [f"r{k}" for k in range(rows)]
    return JudgeCallRecord(row_id="r0", round=1, member="openai", judge_model="openai/gpt-5", verdict="correct",
                           reason="r", ok=True, parse_status="ok", raw_outputs=["x"] * raws,
                           usage=Usage(prompt_tokens=prompt_tokens), judge_prompt_version=CACHED_VERSION,
                           judge_prompt_hash="h", request_id="q", batch_size=max(1, rows), batch_rows=batch)


# -- the rule -------------------------------------------------------------------------------------------------


def test_the_layout_follows_round_one_only_where_a_cache_would_serve_it():
    v4 = CACHED_VERSION
    assert round_two_layout(v4, first(CACHE_MIN_TOKENS), mode="disputed") == CONVERSATION_VERSION  # alone, long
    assert round_two_layout(v4, first(CACHE_MIN_TOKENS - 1), mode="disputed") == PROMPT_VERSION  # under the minimum
    # a disputed subset of a request of several rows is never that request again, however long
    assert round_two_layout(v4, first(600, rows=4), mode="disputed") == PROMPT_VERSION
    assert round_two_layout(v4, first(600, rows=4), mode="all") == CONVERSATION_VERSION  # every row of it deliberates
    assert round_two_layout(v4, first(200, rows=4), mode="all") == PROMPT_VERSION  # 800 tokens: under it
    assert round_one_tokens(first(1200, raws=2)) == 600  # a repaired vote's usage holds two prompts
    assert round_two_layout(v4, first(1200, raws=2), mode="disputed") == PROMPT_VERSION
    assert round_two_layout(v4, first(5000), mode="disputed", contain=False) == PROMPT_VERSION  # judge-v1: no follow-up
    for version in (PROMPT_VERSION, CONVERSATION_VERSION):  # older runs keep their own layout, as they were run
        assert round_two_layout(version, first(10), mode="disputed") == version
        assert round_two_layout(version, first(5000, rows=3), mode="disputed") == version


def test_a_judge_v4_body_is_keyed_as_the_layout_it_sends_and_hashed_as_its_run():
    i, r = item(), row()
    short = round2_body(i, r, "correct", "Mine.", PEERS, version=PROMPT_VERSION)
    follow = round2_body(i, r, "correct", "Mine.", PEERS, version=CONVERSATION_VERSION)
    assert round2_body(i, r, "correct", "Mine.", PEERS, version=CACHED_VERSION) == follow
    params = CouncilConfig().judge
    assert params.prompt_version == CACHED_VERSION
    # the key hashes the body: the same request whichever run sends it, so a resume finds what it paid for
    v2_params = params.model_copy(update={"prompt_version": PROMPT_VERSION})
    assert vote_key("openai/gpt-5", "openai", 2, short, params) == vote_key("openai/gpt-5", "openai", 2, short, v2_params)
    assert vote_key("openai/gpt-5", "openai", 2, short, params) != vote_key("openai/gpt-5", "openai", 2, follow, params)
    # a judge-v4 record's hash is its run's (both layouts' templates), as the manifest lists it
    assert prompt_hash(2, short, CACHED_VERSION) == prompt_hash(2, follow, CACHED_VERSION) == CACHED_HASHES["round2"]
    assert prompt_hashes(CACHED_VERSION)["round1"] == prompt_hashes(PROMPT_VERSION)["round1"] == prompt_hash(
        1, round1_body(i, r), CACHED_VERSION)
    assert CACHED_HASHES["round2"] not in (prompt_hash(2, short), prompt_hash(2, follow))


def test_a_batch_never_mixes_a_follow_up_with_a_one_message_body():
    i = {n: item(n) for n in range(1, 6)}
    v2 = {n: round2_body(i[n], row(n), "correct", "Mine.", PEERS) for n in i}
    v3 = {n: round2_body(i[n], row(n), "correct", "Mine.", PEERS, version=CONVERSATION_VERSION) for n in i}

    def task(n: int, body: str, after: tuple[str, ...] = ()) -> tuple[JudgeTask, object]:
        return JudgeTask(f"r{n}", 2, body, item_id=f"q{n}", after=after), object()

    q = deque([task(1, v3[1], ("r1", "r9")), task(2, v2[2]), task(3, v3[3], ("r3", "r8")), task(4, v2[4])])
    assert [t.row_id for t, _ in take_batch(q, 4)] == ["r1", "r3"]  # its round one's rows are not all queued
    assert [t.row_id for t, _ in take_batch(q, 4)] == ["r2", "r4"]


# -- simulated runs -------------------------------------------------------------------------------------------


def roles(request: dict) -> list[str]:
    return [m["role"] for m in request["messages"]]


async def graded(tmp_path, responses, *, bank_path=bank.SAMPLE_BANK, run_id="r", **config):
    """A run against an embedded provider that keeps every judge request it receives."""
    items = bank.load_bank(bank_path)
    truth = TruthTable.from_rows(items, bank.load_responses(responses, items))
    sim = await start_sim(SimConfig.planted(seed=3), truth, record_requests=True)
    try:
        result = await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp_path / "runs",
                                              run_id=run_id, backend="local", provider_url=sim.url,
                                              config=CouncilConfig(seed=3, **config)))
        return result, list(sim.requests)
    finally:
        await sim.close()


PACKED = {v: VendorSettings(rpm=900, max_batch=6) for v in CouncilConfig().roster_vendors}  # the request limit binds


async def test_short_prompts_go_out_as_one_message_and_disputed_rows_are_packed(tmp_path):
    """The sample's prompts are under the cache minimum: no round two repeats round one. When round one packs rows
    into requests (the request limit binds), round two packs the disputed rows too: fewer requests than votes."""
    responses = subset(tmp_path, 12)
    alone, requests = await graded(tmp_path, responses, run_id="alone")
    second = [r for r in requests if r["round"] == 2]
    assert second and all(roles(r) == ["system", "user"] and "<your_round_one nonce=" in r["messages"][1]["content"]
                          for r in second)
    packed, requests = await graded(tmp_path, responses, run_id="packed", vendors=PACKED)
    first = [r for r in lines(packed.run_dir / "round1.jsonl")]
    votes = [r for r in lines(packed.run_dir / "round2.jsonl")]
    assert max(r["batch_size"] for r in first) > 1  # round one packs ...
    assert votes and len({r["request_id"] for r in votes}) < len(votes) / 2  # ... and so does round two
    assert Counter(r["batch_size"] for r in votes).most_common(1)[0][0] > 1
    second = [r for r in requests if r["round"] == 2]
    assert any(r["batch"] for r in second)
    assert all(roles(r) == ["system", "user"] for r in second)  # a disputed subset: never round one again
    for run in (alone, packed):
        verdicts = {v["row_id"]: v for v in lines(run.run_dir / "verdicts.jsonl")}
        manifest = orjson.loads((run.run_dir / "manifest.json").read_bytes())
        assert manifest["judge_prompt_version"] == CACHED_VERSION
        assert all(r["judge_prompt_hash"] == manifest["prompt_hashes"]["round2"] for r in votes)
        assert {r["row_id"] for r in lines(run.run_dir / "round2.jsonl")} == {
            r for r, v in verdicts.items() if v["deliberated"] or v["deliberation_audit"]}


def long_bank(tmp_path):
    """The shipped bank with a long reference on every item: round one's prompt is over 1,024 tokens."""
    long_reference = " Worked answer, step by step:" + " each step is shown and checked." * 160
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines() if x.strip()]
    path = tmp_path / "bank.jsonl"
    path.write_bytes(b"".join(orjson.dumps({**i, "reference": i["reference"] + long_reference}) + b"\n" for i in items))
    return path


async def test_long_prompts_follow_round_one_alone_and_are_served_from_the_cache(tmp_path):
    """Over the cache minimum, a round two whose round one went alone continues its conversation, alone, and the
    cache serves round one's part of it; the resume of a run cut short asks only the votes it lost."""
    bank_path, responses = long_bank(tmp_path), subset(tmp_path, 3)
    every = {"deliberation_audit": 1.0, "deliberation_audit_stop": 0.0}  # the unanimous rows audited too: many votes
    result, requests = await graded(tmp_path, responses, bank_path=bank_path, run_id="long", **every)
    second = [r for r in requests if r["round"] == 2]
    assert second and all(roles(r) == ["system", "user", "assistant", "user"] and not r["batch"] for r in second)
    first = {(r["row_id"], r["member"]): r for r in lines(result.run_dir / "round1.jsonl")}
    votes = lines(result.run_dir / "round2.jsonl")
    answered_at_once = [r for r in votes if len(first[r["row_id"], r["member"]]["raw_outputs"]) == 1]
    assert len(answered_at_once) > len(votes) / 2
    for r in answered_at_once:  # round one's prompt, in whole 128-token blocks, read from the cache
        assert r["batch_size"] == 1
        assert r["usage"]["cached_tokens"] >= first[r["row_id"], r["member"]]["usage"]["prompt_tokens"] - 2 * 128
    cut = await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp_path / "runs",
                                       run_id="cut", backend="local", config=CouncilConfig(seed=3, **every)))
    path = cut.run_dir / "round2.jsonl"
    votes = lines(path)
    kept = votes[: len(votes) // 2]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    resumed = await resume_council(tmp_path / "runs", "cut", backend="local")
    assert resumed.issued == len(votes) - len(kept)  # the same bodies, hence the same keys: nothing paid twice
    assert (resumed.run_dir / "summary.json").read_bytes() == (cut.run_dir / "summary.json").read_bytes()


async def test_long_prompts_packed_go_out_as_round_one_s_request_again_under_deliberate_all(tmp_path):
    """Under --deliberate all every row of a packed round-one request deliberates: round two goes out as that
    request's messages again, then the replies and the peers, when all its rows are queued."""
    bank_path, responses = long_bank(tmp_path), subset(tmp_path, 3)
    _, requests = await graded(tmp_path, responses, bank_path=bank_path, run_id="all", deliberate="all",
                               vendors=PACKED)
    def rows(r: dict) -> tuple:
        return r["model"], tuple(map(tuple, r["rows"]))

    first = {rows(r): r["messages"][:2] for r in requests if r["round"] == 1 and r["batch"]}  # (a repair: more)
    again = [r for r in requests if r["round"] == 2 and r["batch"] and rows(r) in first]
    assert first and again  # round one's request's rows, together again (when they were all queued) ...
    for r in again:  # ... as round one's messages byte for byte, then the replies and the peers
        assert r["messages"][:2] == first[rows(r)] and roles(r)[2:4] == ["assistant", "user"]
