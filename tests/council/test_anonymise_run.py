"""Anonymisation end to end: a real run whose judges all name themselves in every reason, in every form the
simulated world knows (display names, ids, brands, product words standing alone, names split inside a
word), read back from the prompts the provider received.

The check is independent of the council's anonymiser: the simulated world's own names, matched in any
case and split anywhere (``tests.council.test_integrity.sim_names_in``).
"""

from __future__ import annotations

import re
from collections import Counter

import orjson
import pytest

import bank
from council.cli import main
from council.protocol.anonymise import Anonymiser
from council.protocol.config import CouncilConfig
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig, TruthTable, start_sim
from council.sim._naming import PRODUCT
from council.sim._world import BRAND, FAMILY
from tests.council.test_anonymise import ORDINARY, OWN_COST
from tests.council.test_end_to_end import lines
from tests.council.test_integrity import round_two_peers, shown_is_scrubbed_original, sim_names_in, write_inputs

# The models under test: one per vendor of the roster and its reserve, so every judge is left out of some rows.
MODELS = {"anthropic/claude-haiku-4.5": "anthropic", "google/gemini-2.5-flash": "google",
          "openai/gpt-4.1-mini": "openai", "qwen/qwen-2.5-72b-instruct": "alibaba",
          "deepseek/deepseek-chat": "deepseek", "mistralai/mistral-small": "mistral"}
N_ITEMS = 12
SCALE = {"name": "quality", "levels": ["poor", "fair", "good"],
         "dimensions": [{"name": "accuracy", "weight": 0.7}, {"name": "clarity", "weight": 0.3}]}
SEPARATORS = " -_\u2010"


@pytest.fixture(scope="module")
async def loud_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anonymise")
    bank_path, responses = write_inputs(tmp, MODELS, n_items=N_ITEMS)
    items = [orjson.loads(x) for x in bank_path.read_bytes().splitlines()]
    for k, item in enumerate(items):  # every other item graded on a scale: its peers' levels go the same way
        if k % 2:
            item["scale"] = SCALE
    bank_path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
    items = bank.load_bank(bank_path)
    rows = bank.load_responses(responses, items)
    base = SimConfig.planted(seed=0)
    loud = {v: b.model_copy(update={"name_drop_rate": 1.0, "rpm": 900}) for v, b in base.vendors.items()}
    sim = await start_sim(base.model_copy(update={"vendors": loud}), TruthTable.from_rows(items, rows),
                          record_requests=True)
    try:
        result = await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp / "runs", run_id="loud",
                                              backend="local", provider_url=sim.url,
                                              config=CouncilConfig(deliberate="all")))  # every row's round two
        yield {"folder": result.run_dir, "requests": list(sim.requests), "rows": rows, "bank": bank_path,
               "runs": tmp / "runs"}
    finally:
        await sim.close()


def _split_forms(text: str, vendor: str) -> bool:
    words = {w for w in re.findall(r"[A-Za-z]{4,}", f"{BRAND[vendor]} {FAMILY[vendor]}")}
    return any(w[:i] + sep + w[i:] in text for w in words for i in range(1, len(w)) for sep in SEPARATORS)


async def test_no_round_two_prompt_carries_a_peers_name(loud_run):
    folder = loud_run["folder"]
    roster = CouncilConfig().roster_vendors
    assert set(MODELS.values()) == set(roster)
    one_line = {(r["row_id"], r["member"]): " ".join(r["reason"].split())
                for r in lines(folder / "round1.jsonl") if r["reason"]}
    # The judges named themselves in every reason, in the forms of both classes, every judge in both.
    assert all(sim_names_in(reason, member, roster) for (_, member), reason in one_line.items())
    judge = {m.vendor: m.judge_model for m in CouncilConfig().roster}
    alone = Counter(member for (_, member), reason in one_line.items()
                    if (p := PRODUCT.get(judge[member]))
                    and re.search(rf"(?<![\w.]){re.escape(p)}(?![\w.])", reason))
    split = Counter(member for (_, member), reason in one_line.items() if _split_forms(reason, member))
    assert set(alone) == set(roster) - {"openai"}  # gpt-5 has no product word: its forms use "Open AI"
    assert set(split) == set(roster) and min(split.values()) >= 5 and min(alone.values()) >= 5, (alone, split)
    # Every peer line of every round-two prompt: the peer's names in no form, and nothing but names cut.
    prompts: dict[tuple[str, str], list[str]] = {}
    shown_by: Counter[str] = Counter()
    cut_by: Counter[str] = Counter()
    reasons_cut_by: Counter[str] = Counter()
    seen: set[tuple[str, str, str]] = set()
    graded = {i.id for i in bank.load_bank(loud_run["bank"]) if i.scale is not None}
    for row_id, viewer, author, shown, _ in round_two_peers(loud_run["requests"], loud_run["rows"], loud_run["bank"],
                                                            folder):
        found = sim_names_in(shown, author, roster)
        prompts.setdefault((row_id, viewer), []).extend(found)
        assert shown_is_scrubbed_original(shown, one_line[(row_id, author)]), shown
        if (row_id, viewer, author) not in seen:  # a prompt asked again (a retry) is counted once
            seen.add((row_id, viewer, author))
            shown_by[author] += 1
            cut_by[author] += shown.count("[redacted]")
            reasons_cut_by[author] += "[redacted]" in shown
    leaked = {k: v for k, v in prompts.items() if v}
    assert len(prompts) >= N_ITEMS * len(MODELS) * 4  # every row's prompts to its five judges, bar a few
    assert len({k for k in prompts if k[0].split("::")[0] in graded}) >= len(prompts) // 3  # graded items' too
    assert not leaked, (f"{len(leaked)} of {len(prompts)} round-two prompts carry a peer's name",
                        sorted(leaked.items())[:5])
    # The per-member counts in summary.json are what the provider was shown, and survive a rescore.
    summary = orjson.loads((folder / "summary.json").read_bytes())
    expected = {m: {"reasons_shown": shown_by[m], "reasons_scrubbed": reasons_cut_by[m], "names_scrubbed": cut_by[m]}
                for m in shown_by}
    assert summary["anonymisation"] == expected
    assert all(c["reasons_scrubbed"] == c["reasons_shown"] > 0 for c in expected.values())  # every reason named
    (folder / "summary.json").unlink()
    assert main(["rescore", "loud", "--runs-dir", str(loud_run["runs"])]) == 0
    assert orjson.loads((folder / "summary.json").read_bytes())["anonymisation"] == expected


def test_ordinary_sentences_survive_the_runs_scrub_of_every_other_judge():
    """The survival bank through the scrub round two applies (the run's names, each roster vendor as author):
    unchanged in every judge's reason but its own word's vendor's."""
    config = CouncilConfig()
    anonymiser = Anonymiser([*config.roster_vendors, *(m.judge_model for m in config.roster), *MODELS])
    for text in ORDINARY:
        own = OWN_COST.get(text, (None, ""))[0]
        for vendor in config.roster_vendors:
            if vendor != own:
                assert anonymiser.redact(text, vendor) == (text, 0), (vendor, text)
            else:
                assert anonymiser.scrub(text, vendor) == OWN_COST[text][1]
