"""The honesty figures in summary.json: hand-made rows and votes scored from a run folder, and an elicitation
run against the embedded provider (weights recorded from the config, rescore byte for byte)."""

from __future__ import annotations

import orjson
import pytest

import bank
from council.cli import main
from council.core.schema import ElicitedRecord, RequestParams, ResponseRow, Usage
from council.protocol.config import CouncilConfig, HonestyWeights
from council.run.runner import RunRequest, run_council
from council.scoring.arrays import build
from council.scoring.scoring import score
from council.store.runfolder import RunFolder
from tests.council.test_scoring import ROSTER, rec

MODEL_A, MODEL_B = "meta-llama/l", "mistralai/m"


def run_folder(tmp_path, verdicts, *, abstained=(), confidence=None, elicited=None):
    """Rows for ``verdicts`` ({(item, model): consensus}), every panel member voting the consensus."""
    rows = [ResponseRow(item_id=i, model=m, response="...", abstained=(i, m) in abstained,
                        confidence=(confidence or {}).get((i, m))) for i, m in verdicts]
    folder = RunFolder(tmp_path)
    folder.write_lines("rows.jsonl", rows)
    for row in rows:
        for member in ("anthropic", "google", "openai", "alibaba", "deepseek"):
            for k in (1, 2):
                folder.append(rec(row.row_id, member, k, verdicts[(row.item_id, row.model)]))
    for row_id, (reasoning, speed, cost) in (elicited or {}).items():
        item, model = row_id.split("::")
        folder.append(ElicitedRecord(
            row_id=row_id, item_id=item, model=model, vendor="meta", text="x", answer="x", abstained=False,
            confidence=None, confidence_status="missing", truncated=False, empty=False,
            usage=Usage(completion_tokens=reasoning + 10, reasoning_tokens=reasoning), cost_usd=cost,
            tokens_per_s=speed, elicit_prompt_version="v", elicit_prompt_hash="h",
            request=RequestParams(model=model, temperature=0.0, max_tokens=512), request_key="k"))
    folder.close()
    return tmp_path


def test_honesty_from_hand_made_rows(tmp_path):
    c, w = "correct", "incorrect"
    verdicts = {("p1", MODEL_A): c, ("p2", MODEL_A): c, ("q1", MODEL_A): c, ("q2", MODEL_A): w,
                ("s", MODEL_A): w, ("p1", MODEL_B): w, ("p2", MODEL_B): w, ("q1", MODEL_B): w}
    path = run_folder(tmp_path, verdicts, abstained={("q2", MODEL_A)}, confidence={("s", MODEL_A): 0.9})
    # p1/p2 paraphrase each other (p1 the marked original), q2 paraphrases an unmarked q1; s stands alone
    arrays = build(path, ROSTER, True, {}, paraphrase_of={"p1": "p1", "p2": "p1", "q2": "q1"})
    _, summary = score(arrays, 3, "t", resamples=200)
    h = summary["honesty"]
    assert h["weights"] == HonestyWeights().model_dump()
    a, b = h["composite"]["models"][MODEL_A], h["composite"]["models"][MODEL_B]
    # model A: +1 +1 +1, abstained 0, wrong at 0.9 -2 -> 1/5; model B: three plain wrong answers -> -1
    assert (a["score"], b["score"]) == (0.2, -1.0)
    assert (a["correct"], a["abstained"], a["wrong"], a["confident_wrong"], a["rows"]) == (3, 1, 0, 1, 5)
    assert a["ci_low"] <= a["score"] <= a["ci_high"]
    assert h["composite"]["overall"] == round((3 - 2 - 3) / 8, 6) and h["composite"]["rows"] == 8
    # A: {p1, p2} agree, {q1, q2} do not; B: {p1, p2} agree, one row of {q1, q2} only: not counted
    assert h["paraphrase_consistency"] == {MODEL_A: {"consistency": 0.5, "groups": 2},
                                           MODEL_B: {"consistency": 1.0, "groups": 1}}
    assert h["compute_signature"] is None  # nothing was elicited


def test_nothing_to_compute_is_null(tmp_path):
    arrays = build(run_folder(tmp_path, {("x", MODEL_A): "correct"}), ROSTER, True, {})
    _, summary = score(arrays, 3, "t", resamples=50)
    assert summary["honesty"]["paraphrase_consistency"] is None and summary["honesty"]["compute_signature"] is None
    assert summary["honesty"]["composite"]["models"][MODEL_A]["score"] == 1.0


def test_compute_signature_from_the_elicitation_archive(tmp_path):
    items = ["i1", "i2", "i3", "i4"]
    # item difficulty from the council (A right on i1..i3, B only on i1): i1 0, i2 and i3 0.5, i4 1; the bank
    # overrides i4 with 0.2
    verdicts = {(i, MODEL_A): "correct" if i != "i4" else "incorrect" for i in items}
    verdicts |= {(i, MODEL_B): "correct" if i == "i1" else "incorrect" for i in items}
    spend = {f"{i}::{MODEL_A}": (r, None, cost) for i, r, cost in
             zip(items, (10, 20, 30, 5), (0.1, 0.1, 0.1, 0.1), strict=True)}
    spend |= {f"i1::{MODEL_B}": (1, 50.0, 0.2), f"i2::{MODEL_B}": (2, 40.0, 0.3)}
    path = run_folder(tmp_path, verdicts, elicited=spend)
    arrays = build(path, ROSTER, True, {}, difficulty={"i4": 0.2})
    _, summary = score(arrays, 3, "t", resamples=50)
    sig = summary["honesty"]["compute_signature"]
    assert sig["difficulty_items"] == {"bank": 1, "consensus": 3}
    a = sig["models"][MODEL_A]
    # difficulty (0, .5, .5, .2) against reasoning (10, 20, 30, 5): ranks (1, 3.5, 3.5, 2) and (2, 3, 4, 1),
    # less their mean 2.5: (-1.5, 1, 1, -.5) and (-.5, .5, 1.5, -1.5); rho = 3.5 / sqrt(4.5 * 5)
    assert a["reasoning_tokens"] == {"rho": round(3.5 / (4.5 * 5) ** 0.5, 6), "items": 4}
    assert a["tokens_per_s"] is None  # never known
    assert a["cost_usd"] == {"rho": None, "items": 4}  # constant spend: no ranking
    assert sig["models"][MODEL_B] == {"reasoning_tokens": None, "tokens_per_s": None, "cost_usd": None}


@pytest.fixture
def paraphrase_bank(tmp_path):
    items = [orjson.loads(line) for line in bank.SAMPLE_BANK.read_bytes().splitlines() if line.strip()][:8]
    items[1]["paraphrase_of"] = items[0]["id"]
    items[2]["paraphrase_of"] = items[0]["id"]
    items[4]["paraphrase_of"] = items[3]["id"]
    items[3]["paraphrase_of"] = items[3]["id"]
    items[5]["difficulty"] = 0.9
    path = tmp_path / "bank.jsonl"
    path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items))
    return path


async def test_elicitation_run_reports_honesty_and_rescores_byte_for_byte(tmp_path, paraphrase_bank):
    models = ["anthropic/claude-haiku-4.5", "openai/gpt-4.1-mini", "meta-llama/llama-3.3-70b-instruct"]
    weights = HonestyWeights(abstain_credit=0.1, confident_wrong_penalty=3.0)
    config = CouncilConfig(model_prices={m: (1.0, 4.0) for m in models}, honesty=weights)
    result = await run_council(RunRequest(bank=paraphrase_bank, responses=bank.SAMPLE_RESPONSES,
                                          runs_dir=tmp_path / "runs", run_id="h", backend="local", models=models,
                                          config=config))
    folder = result.run_dir
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert manifest["config"]["honesty"] == weights.model_dump()
    h = result.summary["honesty"]
    assert h["weights"] == weights.model_dump()
    assert set(h["composite"]["models"]) == set(models)
    for m in models:
        entry = h["composite"]["models"][m]
        assert entry["ci_low"] <= entry["score"] <= entry["ci_high"]
        assert h["paraphrase_consistency"][m]["groups"] <= 2
    assert set(h["compute_signature"]["models"]) == set(models)
    summary = (folder / "summary.json").read_bytes()
    (folder / "summary.json").unlink()
    assert main(["rescore", "h", "--runs-dir", str(folder.parent)]) == 0
    assert (folder / "summary.json").read_bytes() == summary
