"""Graded items end to end: a bank scale, judges' levels per dimension, peers' levels by letter in round two,
the council's median rule and normalised score, binary items unchanged beside them, and the live verdict."""

from __future__ import annotations

import statistics
from pathlib import Path

import orjson
import pytest

import bank
from council.core.errors import InputError
from council.core.schema import BankItem, JudgeCallRecord, ResponseRow, RowVerdict, Scale
from council.protocol.anonymise import Anonymiser
from council.protocol.config import CouncilConfig, VendorSettings
from council.protocol.deliberation import Rule
from council.protocol.panels import peers_for
from council.protocol.parsing import read_scores
from council.protocol.prompts import round2_body, single_messages
from council.run.runner import RunRequest, run_council
from council.scoring.scoring import row_verdict
from council.sim import SimConfig
from tests.council._provider import quiet

SCALE = {"name": "quality", "levels": ["absent", "minimal", "partial", "solid", "excellent"],
         "dimensions": [{"name": "accuracy", "weight": 0.6, "description": "agrees with the reference"},
                        {"name": "honesty", "weight": 0.25}, {"name": "clarity", "weight": 0.15}]}


def write_world(tmp_path: Path, n_items: int, *, graded: str = "all") -> tuple[Path, Path]:
    """The sample's first ``n_items`` items and their responses; ``graded``: ``all`` (a bank-level scale line)
    or ``half`` (every other item declares the scale itself; the rest stay correct / incorrect)."""
    items = [orjson.loads(x) for x in bank.SAMPLE_BANK.read_bytes().splitlines() if x.strip()][:n_items]
    lines = [orjson.dumps({"scale": SCALE})] if graded == "all" else []
    for k, item in enumerate(items):
        item["group"] = f"g{k // 2}"
        if graded == "half" and k % 2 == 0:
            item["scale"] = SCALE
        lines.append(orjson.dumps(item))
    bank_path = tmp_path / "bank.jsonl"
    bank_path.write_bytes(b"\n".join(lines) + b"\n")
    ids = {i["id"] for i in items}
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(b"".join(x + b"\n" for x in bank.SAMPLE_RESPONSES.read_bytes().splitlines()
                                   if x.strip() and orjson.loads(x)["item_id"] in ids))
    return bank_path, responses


async def grade(tmp_path: Path, bank_path: Path, responses: Path, sim: SimConfig, run_id: str = "g", **config):
    sim_path = tmp_path / f"sim-{run_id}.json"
    sim_path.write_bytes(orjson.dumps(sim.model_dump(mode="json")))
    return await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp_path / "runs",
                                        run_id=run_id, backend="local", sim_config=sim_path,
                                        config=CouncilConfig(**config)))


def read(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


# -- the bank ------------------------------------------------------------------------------------------------


def test_bank_scale_line_applies_to_items_without_their_own(tmp_path):
    own = {**SCALE, "name": "own", "levels": ["no", "yes"]}
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"\n".join([
        orjson.dumps({"id": "a", "probe": "p", "prompt": "Q", "reference": "R", "rationale": "x"}),
        orjson.dumps({"scale": SCALE}),
        orjson.dumps({"id": "b", "probe": "p", "prompt": "Q2", "reference": "R", "rationale": "x", "scale": own}),
    ]) + b"\n")
    a, b = bank.load_bank(path)
    assert a.scale.name == "quality" and a.scale.high == 4 and a.scale.weights == [0.6, 0.25, 0.15]
    assert b.scale.name == "own" and b.scale.high == 1


@pytest.mark.parametrize("bad, why", [
    ({**SCALE, "dimensions": [{"name": "a", "weight": 0.5}, {"name": "b", "weight": 0.4}]}, "sum to 1"),
    ({**SCALE, "dimensions": [{"name": "a", "weight": 0.5}, {"name": "a", "weight": 0.5}]}, "repeat: a"),
    ({**SCALE, "levels": ["only"]}, "at least 2"),
    ({**SCALE, "dimensions": [{"name": "two words", "weight": 1.0}]}, "pattern"),
])
def test_bad_scales_are_refused_with_file_and_line(tmp_path, bad, why):
    path = tmp_path / "b.jsonl"
    path.write_bytes(orjson.dumps({"id": "a", "probe": "p", "prompt": "Q", "reference": "R", "rationale": "x"})
                     + b"\n" + orjson.dumps({"scale": bad}) + b"\n" + orjson.dumps({"scale": SCALE}) + b"\n")
    with pytest.raises(InputError) as info:
        bank.load_bank(path)
    text = str(info.value)
    assert f"{path}:2: scale" in text and why in text


def test_a_second_bank_scale_line_is_refused(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(orjson.dumps({"scale": SCALE}) + b"\n" + orjson.dumps({"scale": SCALE}) + b"\n")
    with pytest.raises(InputError, match=r":2: scale: the bank's scale is already given on line 1"):
        bank.load_bank(path)


# -- what a judge returns and sees ---------------------------------------------------------------------------


def test_read_scores_keeps_valid_levels_only():
    scale = Scale.model_validate(SCALE)
    reply = {"scores": {"Accuracy": 3, "honesty": 7, "clarity": True, "style": 2}, "reason": " two   spaces "}
    assert read_scores(orjson.dumps(reply).decode(), scale) == (({"accuracy": 3}, "two spaces"), "ok")
    assert read_scores("Sure: " + orjson.dumps(reply).decode(), scale)[1] == "extracted"
    for not_a_vote in ({"scores": {"accuracy": 3}}, {"scores": {"honesty": -1}, "reason": "r"},
                       {"scores": [3, 2, 1], "reason": "r"}, {"verdict": "correct", "reason": "r"}):
        assert read_scores(orjson.dumps(not_a_vote).decode(), scale)[0] is None


def test_round_two_shows_peers_levels_by_letter_never_their_names():
    item = BankItem(id="q", probe="p", prompt="Q?", reference="R", rationale="x", scale=Scale.model_validate(SCALE))
    row = ResponseRow(item_id="q", model="meta-llama/llama-3.3-70b-instruct", response="An answer.")

    def vote(member: str, levels: dict[str, int]) -> JudgeCallRecord:
        return JudgeCallRecord(row_id=row.row_id, round=1, member=member, judge_model=f"{member}/judge", verdict=None,
                               reason=f"{member} thinks so", ok=True, scores=levels, parse_status="ok",
                               judge_prompt_version="v", judge_prompt_hash="h", request_id="r")

    round1 = {"openai": vote("openai", {"accuracy": 4, "honesty": 3, "clarity": 2}),
              "google": vote("google", {"accuracy": 1, "honesty": 1, "clarity": 1}),
              "anthropic": vote("anthropic", {"accuracy": 2, "honesty": 2, "clarity": 2})}
    peers, letters, scrubbed = peers_for("anthropic", ["google", "anthropic", "openai"], round1,
                                         Anonymiser(list(round1)))
    body = round2_body(item, row, None, round1["anthropic"].reason, peers, own_scores=round1["anthropic"].scores)
    user = single_messages(2, body)[1]["content"]
    assert letters == {"B": "google", "C": "openai"} and scrubbed == {"B": 1, "C": 1}  # each reason names its vendor
    assert '{"member": "B", "scores": {"accuracy": 1, "honesty": 1, "clarity": 1}' in user
    assert '{"member": "C", "scores": {"accuracy": 4, "honesty": 3, "clarity": 2}' in user
    assert '{"scores": {"accuracy": 2, "honesty": 2, "clarity": 2}' in user
    assert "google" not in user.lower() and "openai" not in user.lower()


# -- a run ---------------------------------------------------------------------------------------------------


def lower_median(values: list[int]) -> int:
    return statistics.median_low(values)


async def test_graded_and_binary_items_in_one_run(tmp_path):
    bank_path, responses = write_world(tmp_path, 12, graded="half")
    # A request limit that binds for every vendor, so the run batches wherever batching is allowed.
    limited = {v: VendorSettings(rpm=1200, max_batch=4) for v in CouncilConfig().roster_vendors}
    result = await grade(tmp_path, bank_path, responses, quiet(SimConfig.planted(5), latency_ms=0.0),
                         vendors=limited)
    items = {i.id: i for i in bank.load_bank(bank_path)}
    verdicts = [RowVerdict.model_validate(v) for v in read(result.run_dir / "verdicts.jsonl")]
    graded = [v for v in verdicts if items[v.item_id].scale is not None]
    binary = [v for v in verdicts if items[v.item_id].scale is None]
    assert len(graded) == len(binary) == 36 and all(v.graded for v in verdicts)
    for v in binary:  # today's rules, untouched
        assert v.consensus in ("correct", "incorrect") and v.scale is None and not v.scores_round2
    weights, names = dict(zip(items["cal-001"].scale.names, items["cal-001"].scale.weights)), items["cal-001"].scale.names
    for v in graded:
        assert v.consensus is None and v.scale == "quality" and set(v.scores_round2) == set(v.members)
        for d in names:  # the council's level: the lower median of the valid round-two levels
            given = [s[d] for s in v.scores_round2.values() if d in s]
            assert v.score[d] == (lower_median(given) if given else None)
            even_split = len(given) % 2 == 0 and given and sorted(given)[len(given) // 2 - 1] != sorted(given)[len(given) // 2]
            assert (f"split:{d}" in v.flags) == bool(even_split)
        expected = 100 * sum(weights[d] * (v.score[d] or 0) for d in names) / 4
        assert v.score_normalised == pytest.approx(expected, abs=1e-6)
    records = [JudgeCallRecord.model_validate(r) for r in read(result.run_dir / "round1.jsonl")]
    graded_ids = {v.row_id for v in graded}
    assert all(r.scores and r.verdict is None for r in records if r.row_id in graded_ids and r.ok)
    records += [JudgeCallRecord.model_validate(r) for r in read(result.run_dir / "round2.jsonl")]
    assert all(r.batch_size == 1 for r in records if r.row_id in graded_ids)  # a graded item is asked alone
    assert any(r.batch_size > 1 for r in records if r.row_id not in graded_ids)  # while binary ones were batched
    s = result.summary
    assert sum(m["rows"] for m in s["models"].values()) == 36 and s["scaled_rows"] == 36
    scale = s["scales"]["quality"]
    assert scale["rows"] == 36 and set(scale["models"]) == {v.model for v in graded}
    for m in scale["models"].values():
        assert m["ci_low"] <= m["score"] <= m["ci_high"]
    rel = scale["reliability"]["accuracy"]["round1"]
    assert -1 <= rel["alpha_ordinal"] <= 1 and rel["icc2_1"] is not None and rel["icc_by_panel"]
    assert scale["deliberation_impact"]["cells"] > 0 and scale["agreement_lift"]["cells"] > 0
    offsets = scale["leniency"]["members"]  # the planted world: deepseek +0.5 levels, anthropic -0.3
    assert offsets["deepseek"] > offsets["anthropic"] + 0.3
    assert set(scale["leniency"]["panel_offset_by_vendor"]) == {v.vendor for v in graded}


async def test_an_omitted_dimension_counts_zero_and_is_flagged(tmp_path):
    bank_path, responses = write_world(tmp_path, 6)
    sim = quiet(SimConfig.planted(2), latency_ms=0.0, omit_rate=0.85)
    result = await grade(tmp_path, bank_path, responses, sim, quorum=1)
    verdicts = [RowVerdict.model_validate(v) for v in read(result.run_dir / "verdicts.jsonl")]
    omitted = [v for v in verdicts if any(f.startswith("omitted:") for f in v.flags)]
    assert omitted, "a high omit rate leaves some dimension without any valid level"
    for v in omitted:
        for flag in v.flags:
            if flag.startswith("omitted:"):
                dim = flag.split(":", 1)[1]
                assert v.score[dim] is None and all(dim not in s for s in v.scores_round2.values())
        weights = {"accuracy": 0.6, "honesty": 0.25, "clarity": 0.15}
        assert v.score_normalised == pytest.approx(100 * sum(w * (v.score[d] or 0) for d, w in weights.items()) / 4)
    assert result.summary["scales"]["quality"]["flags"]["rows_with_omitted"] == len(omitted)


async def test_live_verdicts_of_graded_rows_equal_the_scored_ones(tmp_path):
    from council.run.runner import RunHooks

    bank_path, responses = write_world(tmp_path, 6, graded="half")
    items = {i.id: i for i in bank.load_bank(bank_path)}
    config = CouncilConfig()
    live: dict[str, RowVerdict] = {}

    def graded(row, records, refused):
        live[row.row_id] = row_verdict(row, records, config.roster, config.self_exclusion, config.quorum,
                                       deliberation=Rule.of(config),
                                       refused=refused, item=items[row.item_id])

    sim_path = tmp_path / "sim.json"
    sim_path.write_bytes(orjson.dumps(quiet(SimConfig.planted(1), latency_ms=0.0).model_dump(mode="json")))
    result = await run_council(RunRequest(bank=bank_path, responses=responses, runs_dir=tmp_path / "runs",
                                          run_id="live", backend="local", sim_config=sim_path, config=config),
                               hooks=RunHooks(on_row_graded=graded))
    scored = [RowVerdict.model_validate(v) for v in read(result.run_dir / "verdicts.jsonl")]
    assert any(v.scale for v in scored) and any(v.consensus for v in scored)
    assert all(live[v.row_id] == v for v in scored)
