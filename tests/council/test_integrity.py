"""The council's guarantees on real-world inputs, checked where they matter: at the provider.

Model ids are written as real tools and people write them (bare, OpenRouter-style, provider-native, odd
case), the embedded provider is told who really made each one (its own world, not the council's vendor
rules), judges name themselves in every reason, and request limits force batching. The provider then
reports what each judge actually received.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

import orjson
import pytest

import bank
from council.cli import main
from council.protocol.config import CouncilConfig, VendorSettings
from council.protocol.prompts import PEER_LINE, SCALE_PEER_LINE, decode_untrusted
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig, TruthTable, start_sim
from council.sim._naming import PRODUCT
from council.sim._world import BRAND, DISPLAY, FAMILY, WORLD
from tests.council.test_end_to_end import lines

# How people write model ids, and who really made each (the provider's world is told this directly).
REAL_WORLD_IDS = {
    "gpt-4o": "openai", "o3-mini": "openai", "OpenAI/GPT-4.1-Mini": "openai",
    "claude-3-5-sonnet-20241022": "anthropic", "anthropic.claude-3-haiku-20240307-v1:0": "anthropic",
    "gemini-1.5-pro": "google", "models/gemini-2.0-flash": "google", "gemma-2-9b-it": "google",
    "Qwen2.5-72B-Instruct": "alibaba", "QwQ-32B": "alibaba",
    "deepseek-chat": "deepseek", "deepseek-ai/DeepSeek-R1": "deepseek",
    "Meta-Llama-3.1-8B-Instruct": "meta",
    "mistral-large-latest": "mistral",
}
# Name stems no peer line of a round-two prompt may carry once scrubbed (an independent, plain check).
STEMS = {"claude", "anthropic", "sonnet", "opus", "haiku", "gpt", "openai", "gemini", "gemma", "google", "qwen",
         "qwq", "alibaba", "deepseek", "llama", "meta", "mistral", "mistralai", "grok", "xai"}
N_ITEMS = 6
_SPLIT = r"[\s_.\-\u2010-\u2015\u2212]?"  # what a name may be split by, between any two of its letters


def _spelled(word: str) -> str:
    return _SPLIT.join(re.escape(c) for c in word)


def _sim_words(vendor: str) -> tuple[set[str], set[str]]:
    """A vendor's names as the simulated world spells them: (brand and family words, matched in any case and
    split anywhere; its models' display names, ids and product words, matched as written)."""
    names = {w for w in re.findall(r"[A-Za-z]{3,}", f"{BRAND.get(vendor, '')} {FAMILY.get(vendor, '')}")
             if w.lower() != "ai"}
    models = [m for m, v in WORLD.items() if v == vendor]
    products = {PRODUCT[m.lower()] for m in models if m.lower() in PRODUCT}
    products |= {DISPLAY[m.lower()] for m in models if m.lower() in DISPLAY}
    products |= {m.rsplit("/", 1)[-1] for m in models}
    return names, products


@lru_cache(maxsize=64)
def _sim_pattern(author: str, others: tuple[str, ...]) -> re.Pattern[str]:
    names, products = _sim_words(author)
    for other in others:
        names |= _sim_words(other)[0]
    alternatives = [_spelled(n) for n in sorted(names, key=len, reverse=True)]
    return re.compile(rf"(?<![A-Za-z])(?i:{'|'.join(alternatives)})(?![a-z])"
                      rf"|(?<![A-Za-z0-9])(?:{'|'.join(map(re.escape, sorted(products, key=len, reverse=True)))})"
                      rf"(?![A-Za-z0-9])")


def sim_names_in(reason: str, author: str, others: Iterable[str]) -> list[str]:
    """The self-identifications in ``reason``, written by a judge of ``author``, that the simulated world knows
    of: the author's names in every form (brand and family in any case and split by a separator anywhere, its
    product words and model names as written), and the brand and family names of ``others``. An independent
    check of the council's anonymiser: it shares nothing with it but the text."""
    return _sim_pattern(author, tuple(sorted(set(others)))).findall(reason)
# A peer's vote, one JSON object per line of the peers block (PEER_LINE, or SCALE_PEER_LINE for a graded
# item); its reason encoded as shown.
PEER_START = PEER_LINE.format(letter="\0", verdict="", reason="").split("\0")[0]
assert PEER_START == SCALE_PEER_LINE.format(letter="\0", scores="", reason="").split("\0")[0]


def peer_lines(body: str) -> list[dict[str, str]]:
    """The peers' votes of a round-two item body: letter, verdict (None for a graded item's levels) and the
    reason as the judge reads it."""
    votes = [json.loads(line) for line in body.splitlines() if line.startswith(PEER_START)]
    return [{"letter": v["member"], "verdict": v.get("verdict"), "reason": decode_untrusted(v["reason"])}
            for v in votes]


def write_inputs(tmp_path: Path, ids: dict[str, str], extra: list[dict] = (), n_items: int = N_ITEMS
                 ) -> tuple[Path, Path]:
    """A small bank and a responses file in which every id answers every item (distinct texts)."""
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines()][:n_items]
    sample = {}
    for raw in bank.SAMPLE_RESPONSES.read_bytes().splitlines():
        row = orjson.loads(raw)
        sample.setdefault(row["item_id"], row)
    bank_path, responses = tmp_path / "bank.jsonl", tmp_path / "responses.jsonl"
    bank_path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
    rows = [{"item_id": i["id"], "model": model, "response": f"{sample[i['id']]['response']} ({k})",
             "gold_verdict": sample[i["id"]]["gold_verdict"]}
            for i in items for k, model in enumerate(ids)]
    responses.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*rows, *extra]))
    return bank_path, responses


@pytest.fixture(scope="module")
async def integrity(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("integrity")
    stated = {"item_id": "cal-001", "model": "gpt-4o-2024-08-06", "vendor": "OpenAI", "response": "52,544 (s)",
              "gold_verdict": "correct"}  # a vendor field as people write it
    bank_path, responses = write_inputs(tmp, REAL_WORLD_IDS, [stated])
    items = bank.load_bank(bank_path)
    rows = bank.load_responses(responses, items)
    base = SimConfig.planted(seed=0)
    loud = {v: b.model_copy(update={"name_drop_rate": 1.0, "rpm": 900}) for v, b in base.vendors.items()}
    world = {**REAL_WORLD_IDS, "gpt-4o-2024-08-06": "openai"}
    sim = await start_sim(base.model_copy(update={"vendors": loud, "world": world}), TruthTable.from_rows(items, rows),
                          record_requests=True)
    limits = {v: VendorSettings(rpm=900, max_batch=6) for v in ("openai", "google", "anthropic")}
    try:
        result = await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp / "runs", run_id="r",
                                              backend="local", provider_url=sim.url,
                                              config=CouncilConfig(vendors=limits, deliberate="all")))  # every row's round two
        yield {"result": result, "requests": sim.requests, "stats": await sim.stats(), "tmp": tmp,
               "bank": bank_path, "responses": responses, "url": sim.url, "rows": rows}
    finally:
        await sim.close()


async def test_no_judge_receives_its_own_vendors_row(integrity):
    assert len(REAL_WORLD_IDS) >= 13 and len(set(REAL_WORLD_IDS.values())) >= 7
    by_model = {r.model: r.vendor for r in integrity["rows"]}
    assert {m: by_model[m] for m in REAL_WORLD_IDS} == REAL_WORLD_IDS  # resolved as the world says
    assert by_model["gpt-4o-2024-08-06"] == "openai"  # a stated "OpenAI" is the same vendor
    vendors = integrity["stats"]["vendors"]
    judged = sum(v["requests"] for v in vendors.values())
    assert judged > 0 and all(v["own_vendor_rows"] == 0 for v in vendors.values()), vendors
    assert all(v["unknown_producers"] == 0 for v in vendors.values())  # the provider knew every producer


async def test_no_batched_request_holds_two_rows_of_one_item(integrity):
    batched = [r for r in integrity["requests"] if r["batch"]]
    assert batched, "request limits formed no batch"
    for request in batched:
        questions = [q for q, _ in request["rows"]]
        assert len(questions) == len(set(questions)), request["rows"]


def user_text(request: dict) -> str:
    """The request's prompt: its last user message that names a round (a repair re-ask appends the reply and a
    repair prompt; a judge-v3 round two follows round one's message, its reply, then the peers)."""
    for message in reversed(request["messages"]):
        role, content = (message["role"], message["content"]) if isinstance(message, dict) else message
        if role == "user" and content.startswith("<round>"):
            return content
    raise AssertionError("no user message")


def round_two_peers(requests: list[dict], rows: list, bank_path: Path, folder: Path
                    ) -> Iterator[tuple[str, str, str, str, bool]]:
    """Every peer line of every round-two prompt the provider received: (row id, viewer, the peer's vendor,
    its reason as shown, whether the prompt was batched). The peer's vendor is the letter's, as archived in
    the viewer's round-two record."""
    letters = {(r["row_id"], r["member"]): r["peer_letters"] for r in lines(folder / "round2.jsonl")}
    prompts = {i.id: i.prompt.strip() for i in bank.load_bank(bank_path)}
    row_of = {(prompts[row.item_id], row.response.strip()): row.row_id for row in rows}
    vendor_of_judge = {m.judge_model: m.vendor for m in CouncilConfig().roster}
    for request in (r for r in requests if r["round"] == 2):
        bodies = user_text(request).split('<item key="')[1:] if request["batch"] else [user_text(request)]
        assert len(bodies) == len(request["rows"])
        viewer = vendor_of_judge[request["model"]]
        for body, row in zip(bodies, request["rows"], strict=True):
            row_id = row_of[tuple(s.strip() for s in row)]
            key = letters[(row_id, viewer)]
            for peer in peer_lines(body):
                yield row_id, viewer, key[peer["letter"]], peer["reason"], bool(request["batch"])


def shown_is_scrubbed_original(shown: str, original: str) -> bool:
    """Whether ``shown`` is ``original`` with some names cut out and nothing else changed."""
    pattern = "(.{1,60}?)".join(map(re.escape, shown.split("[redacted]")))
    return re.fullmatch(pattern, original) is not None


async def test_round_two_prompts_carry_no_names_and_keep_ordinary_words(integrity):
    """Each peer line the provider received is its round-one reason with the names cut out and nothing else:
    no name stem is left, and every other character is the original's, in order."""
    folder = integrity["result"].run_dir
    one_line = {(r["row_id"], r["member"]): " ".join(r["reason"].split())
                for r in lines(folder / "round1.jsonl") if r["reason"]}
    roster = CouncilConfig().roster_vendors
    named = sum(bool(sim_names_in(reason, member, roster)) for (_, member), reason in one_line.items())
    assert named > 0.9 * len(one_line)  # every judge named itself, in its own varied forms
    checked = 0
    batched = 0
    for row_id, _, author, shown, in_batch in round_two_peers(integrity["requests"], integrity["rows"],
                                                              integrity["bank"], folder):
        original = one_line[(row_id, author)]
        assert not set(re.findall(r"[a-z]+", shown.lower())) & STEMS, shown
        assert not sim_names_in(shown, author, roster), (shown, original)
        assert shown_is_scrubbed_original(shown, original), (shown, original)
        checked += 1
        batched += in_batch
    assert checked > 1000 and batched > 0


@pytest.fixture()
def sim_process(tmp_path):
    """``council sim`` in its own process, knowing the real-world ids and their answers."""
    from tests.council._provider import sim_process as serve

    bank_path, responses = write_inputs(tmp_path, REAL_WORLD_IDS)
    config = SimConfig.planted(seed=0).model_copy(update={"world": REAL_WORLD_IDS})
    with serve(config, tmp_path, "--bank", str(bank_path), "--responses", str(responses)) as url:
        yield url, bank_path, responses


def test_run_and_grade_resolve_alike_and_unknown_ids_are_refused(tmp_path, sim_process, capsys):
    url, bank_path, responses = sim_process
    runs = tmp_path / "cli"
    common = ["--backend", "local", "--runs-dir", str(runs), "--bank", str(bank_path), "--provider-url", url]
    assert main(["run", "--run-id", "run", *common, "--responses", str(responses)]) == 0
    assert main(["grade", "--run-id", "grade", "--format", "jsonl", *common, "--responses", str(responses)]) == 0
    vendors = {name: {r["row_id"]: r["vendor"] for r in lines(runs / name / "rows.jsonl")} for name in ("run", "grade")}
    assert vendors["run"] == vendors["grade"] and len(vendors["run"]) == N_ITEMS * len(REAL_WORLD_IDS)
    assert {rid.split("::", 1)[1]: v for rid, v in vendors["run"].items()} == REAL_WORLD_IDS
    stats = orjson.loads((runs / "run" / "manifest.json").read_bytes())
    assert stats["simulated"] is False  # a provider URL was given: the run does not claim to know
    capsys.readouterr()
    # An id of no known family is refused by name and line, by both commands; a vendor map resolves it.
    (tmp_path / "u").mkdir()
    _, unknown = write_inputs(tmp_path / "u", {"frobnicator-7b": "acme", "gpt-4o": "openai"})
    for command in ("run", "grade"):
        assert main([command, "--run-id", f"bad-{command}", *common, "--responses", str(unknown)]) == 2
        err = capsys.readouterr().err
        assert "frobnicator-7b" in err and f"{unknown}:1:" in err and "--vendor-map" in err, err
    assert not (runs / "bad-run").exists() and not (runs / "bad-grade").exists()  # nothing graded
    vmap = tmp_path / "vendors.json"
    vmap.write_text('{"frobnicator-7b": "Acme"}')
    assert main(["run", "--run-id", "mapped", "--backend", "local", "--runs-dir", str(runs), "--bank", str(bank_path),
                 "--responses", str(unknown), "--simulate", "--vendor-map", str(vmap)]) == 0
    mapped = Counter(r["vendor"] for r in lines(runs / "mapped" / "rows.jsonl"))
    assert mapped == {"acme": N_ITEMS, "openai": N_ITEMS}
    # --skip-invalid grades the rest and records what it left out.
    assert main(["grade", "--run-id", "skipping", *common, "--responses", str(unknown), "--skip-invalid"]) == 0
    manifest = orjson.loads((runs / "skipping" / "manifest.json").read_bytes())
    assert len(manifest["skipped_inputs"]) == N_ITEMS and all("frobnicator-7b" in s for s in manifest["skipped_inputs"])


def test_user_files_are_never_simulated_unless_asked(tmp_path, capsys):
    bank_path, responses = write_inputs(tmp_path, {"gpt-4o": "openai", "claude-3-5-sonnet-20241022": "anthropic"})
    args = ["--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--bank", str(bank_path),
            "--responses", str(responses)]
    for command in ("grade", "run"):
        assert main([command, "--run-id", command, *args]) == 2
        assert "--simulate" in capsys.readouterr().err
    assert main(["grade", "--run-id", "sim", *args, "--simulate"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "no real model was asked" in out
    for name in ("manifest.json", "summary.json"):
        assert orjson.loads((tmp_path / "runs" / "sim" / name).read_bytes())["simulated"] is True


@pytest.mark.parametrize(("flags", "message"), [
    (["--no-self-exclusion", "--shadow-self"], "cannot be combined with --no-self-exclusion"),
    (["--provider-url", "http://127.0.0.1:9/v1", "--simulate"], "cannot be combined with --simulate"),
    (["--quorum", "6"], "quorum 6 is larger than the smallest panel"),
    (["--models", "openai/gpt-4o", "--responses", "x.jsonl"], "cannot be combined with --responses"),
])
def test_contradictory_flags_are_refused(tmp_path, capsys, flags, message):
    assert main(["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "pydantic" not in err
    assert not (tmp_path / "runs").exists()


def test_a_budget_stop_leaves_rows_not_graded_never_incorrect(tmp_path, capsys):
    from tests.council.test_end_to_end import subset

    config = tmp_path / "council.json"
    vendors = ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")
    config.write_bytes(orjson.dumps({"vendors": {v: {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0}
                                                 for v in vendors}, "rows_in_flight": 8}))
    args = ["run", "--backend", "local", "--runs-dir", str(tmp_path / "runs"), "--responses", str(subset(tmp_path, 20)),
            "--simulate", "--config", str(config)]
    assert main([*args, "--run-id", "whole"]) == 0
    whole = orjson.loads((tmp_path / "runs" / "whole" / "summary.json").read_bytes())
    capsys.readouterr()
    assert main([*args, "--run-id", "cut", "--budget-usd", str(round(whole["cost_usd"] * 0.3, 6))]) == 3
    out, err = capsys.readouterr()
    summary = orjson.loads((tmp_path / "runs" / "cut" / "summary.json").read_bytes())
    verdicts = lines(tmp_path / "runs" / "cut" / "verdicts.jsonl")
    ungraded = [v for v in verdicts if not v["graded"]]
    assert len(ungraded) == summary["not_graded_rows"] > 0 and "rows not graded" in err + out
    assert all(v["consensus"] is None and "not_graded" in v["flags"] for v in ungraded)
    for model, m in summary["models"].items():
        mine = [v for v in verdicts if v["model"] == model and v["graded"]]
        assert m["rows"] == len(mine) and m["not_graded"] == sum(v["model"] == model for v in ungraded)
        if mine:  # scored on the graded rows only: an ungraded row is not an incorrect one
            assert m["score"] == pytest.approx(sum(v["consensus"] == "correct" for v in mine) / len(mine), abs=1e-6)
