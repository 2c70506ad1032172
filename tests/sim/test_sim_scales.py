"""The simulated judges on graded items (a bank ``scale``): levels per dimension with a known truth, a
per-vendor leniency, a planted family preference, round-two moves towards the median, omitted dimensions."""

from __future__ import annotations

import statistics

from council.core.schema import BankItem, Dimension, ResponseRow, Scale
from council.core.vendors import DEFAULT_ROSTER
from council.protocol.parsing import read_scores
from council.protocol.prompts import (
    SCALE_REPAIR_PROMPT,
    SCALE_SYSTEM_PROMPT,
    Peer,
    round1_body,
    round1_messages,
    round2_body,
    single_messages,
)
from council.sim import SimConfig, TruthTable, VendorBehaviour, start_sim
from council.sim._grading import QUALITY_CORRECT, QUALITY_INCORRECT, parse_graded, true_levels
from council.sim._judging import decide
from tests.sim._clients import openai_client

QUIET = {"latency_ms": 0.0, "latency_jitter_ms": 0.0, "malformed_rate": 0.0, "name_drop_rate": 0.0,
         "prose_json_rate": 0.0, "fenced_rate": 0.0}
LLAMA = "meta-llama/llama-3.3-70b-instruct"  # no judge vendor made it
GPT = "openai/gpt-5"
CLAUDE = "anthropic/claude-sonnet-4.5"
OWN = "openai/gpt-4o-mini"  # an OpenAI model: the OpenAI judge's own family
DIMS = [Dimension(name="accuracy", weight=0.5, description="Is the content right?"),
        Dimension(name="clarity", weight=0.3), Dimension(name="depth", weight=0.2)]
SCALE4 = Scale(name="essay", levels=["absent", "weak", "fair", "good", "excellent <b>"], dimensions=DIMS)
SCALE10 = Scale(name="fine", levels=[f"level {k}" for k in range(11)], dimensions=DIMS)


def bank(n: int, scale: Scale, producer=lambda i: LLAMA, gold=lambda i: "correct" if i % 2 == 0 else "incorrect",
         tag: str = "g") -> tuple[list[BankItem], list[ResponseRow]]:
    items = [BankItem(id=f"{tag}{i}", probe="essay", prompt=f"Explain topic {i} ({tag}).",
                      reference=f"Topic {i} concerns item {i * 3}.", rationale="graded", scale=scale)
             for i in range(n)]
    rows = [ResponseRow(item_id=it.id, model=producer(i), response=f"Topic {i} is roughly about {i * 7 % 13}.",
                        gold_verdict=gold(i)) for i, it in enumerate(items)]
    return items, rows


def config(seed: int = 3, **vendors: dict) -> SimConfig:
    return SimConfig(seed=seed, vendors={v: VendorBehaviour(**{**QUIET, **kw}) for v, kw in vendors.items()},
                     default=VendorBehaviour(**QUIET))


def msgs(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


def r1(item, row) -> list[tuple[str, str]]:
    return msgs(round1_messages(item, row))


def r2(item, row, own: dict[str, int] | None, reason: str | None, peers: list[Peer]) -> list[tuple[str, str]]:
    return msgs(single_messages(2, round2_body(item, row, None, reason, peers, own_scores=own)))


def levels_of(content: str, scale: Scale) -> dict[str, int] | None:
    got, _ = read_scores(content, scale)
    return None if got is None else got[0]


# ---- the prompt is read, the reply is readable -------------------------------------------------------------


def test_parse_graded_prompts() -> None:
    items, rows = bank(1, SCALE4)
    row = rows[0].model_copy(update={"response": "A tricky </response> <peers> & &lt;your_round_one> text"})
    p1 = parse_graded(r1(items[0], row)[1][1])
    assert p1 is not None and p1.round == 1 and p1.response == row.response and p1.scale == SCALE4
    assert p1.question == items[0].prompt and p1.reference == items[0].reference
    peers = [Peer("B", None, "Peer <reason> B.", {"accuracy": 1, "clarity": 2}), Peer("C", None, "C.", {"depth": 4})]
    p2 = parse_graded(r2(items[0], row, {"accuracy": 3, "depth": 0}, "Mine </peers>.", peers)[1][1])
    assert p2 is not None and p2.round == 2 and p2.response == row.response and p2.first_stream == p1.stream
    assert p2.own_scores == {"accuracy": 3, "depth": 0} and p2.own_reason == "Mine </peers>."
    assert [(q.letter, q.scores, q.reason) for q in p2.peers] == [
        ("B", {"accuracy": 1, "clarity": 2}, "Peer <reason> B."), ("C", {"depth": 4}, "C.")]
    none = parse_graded(r2(items[0], row, None, None, [])[1][1])
    assert none is not None and none.own_scores == {} and none.peers == ()
    # A correct / incorrect prompt is not a graded one, and still gets a verdict.
    plain = items[0].model_copy(update={"scale": None})
    assert parse_graded(msgs(round1_messages(plain, row))[1][1]) is None
    d = decide(config(), TruthTable.from_rows([plain], [row]), GPT, msgs(round1_messages(plain, row)))
    assert d.levels is None and d.verdict in {"correct", "incorrect"}


def test_same_request_same_reply_levels_in_range_and_readable() -> None:
    items, rows = bank(120, SCALE4, producer=lambda i: OWN if i % 3 == 0 else LLAMA)
    truth = TruthTable.from_rows(items, rows)
    cfg = config(openai={"prose_json_rate": 0.2, "fenced_rate": 0.2, "name_drop_rate": 0.3})
    other = cfg.model_copy(update={"seed": 4})
    differs = 0
    for item, row in zip(items, rows):
        m = r1(item, row)
        d = decide(cfg, truth, GPT, m)
        assert d == decide(cfg, truth, GPT, m) and d.round == 1 and not d.malformed and not d.batch
        assert d.rows == ((item.prompt, row.response),) and d.own_vendor_rows == (row.model == OWN)
        assert d.unknown_producers == 0 and set(d.levels) == set(SCALE4.names)
        assert all(0 <= v <= SCALE4.high for v in d.levels.values())
        got, how = read_scores(d.content, SCALE4)
        assert got is not None and got[0] == d.levels and got[1] == d.reason
        assert how == ("ok" if d.wrapping == "" else "extracted")
        assert all(f"{k} {v} of 4" in d.reason for k, v in d.levels.items())
        differs += decide(other, truth, GPT, m).levels != d.levels
        # Round two, and its repair request: recognised, answered alike, readable.
        m2 = r2(item, row, d.levels, d.reason, [Peer("B", None, "B's view.", {"accuracy": 2, "clarity": 2})])
        d2 = decide(cfg, truth, GPT, m2)
        assert d2.round == 2 and levels_of(d2.content, SCALE4) == d2.levels
        fix = decide(cfg, truth, GPT, [*m2, ("assistant", "oops"), ("user", SCALE_REPAIR_PROMPT)])
        assert fix.repair and fix.levels == d2.levels and fix.reason == d2.reason
    assert differs > 20  # another seed, another world


def test_malformed_rate() -> None:
    items, rows = bank(300, SCALE4)
    truth = TruthTable.from_rows(items, rows)
    for rate, lo, hi in ((0.0, 0, 0), (0.3, 60, 120), (1.0, 300, 300)):
        cfg = config(openai={"malformed_rate": rate, "prose_json_rate": 0.1, "fenced_rate": 0.1})
        bad = 0
        for item, row in zip(items, rows):
            d = decide(cfg, truth, GPT, r1(item, row))
            got = levels_of(d.content, SCALE4)
            assert (got is None) == d.malformed and (got is None or got == d.levels)
            bad += d.malformed
        assert lo <= bad <= hi, (rate, bad)


# ---- truth, leniency, family preference --------------------------------------------------------------------


def test_true_levels() -> None:
    items, rows = bank(400, SCALE10)
    cfg, truth = config(), TruthTable.from_rows(items, rows)
    means = {"correct": [], "incorrect": []}
    for item, row in zip(items, rows):
        t = true_levels(cfg, truth, item.prompt, row.response, SCALE10)
        assert t == true_levels(cfg, truth, item.prompt, row.response, SCALE10) and set(t) == set(SCALE10.names)
        means[row.gold_verdict].extend(t.values())
    assert abs(statistics.fmean(means["correct"]) - QUALITY_CORRECT * 10) < 0.15
    assert abs(statistics.fmean(means["incorrect"]) - QUALITY_INCORRECT * 10) < 0.15
    sd = statistics.pstdev(means["correct"])
    assert 0.35 < sd < 0.75  # the shared spread, about 0.5 levels (plus rounding)
    # A pair the table does not know: the reference-containment heuristic decides.
    item = items[0]
    hit = true_levels(cfg, TruthTable(), item.prompt, f"So: {item.reference}", SCALE10, reference=item.reference)
    miss = true_levels(cfg, TruthTable(), item.prompt, "Something else.", SCALE10, reference=item.reference)
    assert statistics.fmean(hit.values()) > statistics.fmean(miss.values()) + 2


def test_leniency_shifts_levels_and_an_unbiased_judge_tracks_the_truth() -> None:
    items, rows = bank(300, SCALE10)
    truth = TruthTable.from_rows(items, rows)
    cfg = config(openai={"leniency": 1.0}, anthropic={"leniency": 0.0})
    lenient, fair, err, bias = [], [], [], []
    for item, row in zip(items, rows):
        t = true_levels(cfg, truth, item.prompt, row.response, SCALE10)
        a, b = decide(cfg, truth, GPT, r1(item, row)).levels, decide(cfg, truth, CLAUDE, r1(item, row)).levels
        lenient.extend(a.values())
        fair.extend(b.values())
        err.extend(abs(b[d] - t[d]) for d in t)
        bias.extend(b[d] - t[d] for d in t)
    shift = statistics.fmean(lenient) - statistics.fmean(fair)
    assert 0.85 < shift < 1.15, shift
    assert statistics.fmean(err) < 0.65, statistics.fmean(err)  # noise 0.6: E|N| ~ 0.48, plus rounding
    assert abs(statistics.fmean(bias)) < 0.1
    # A harsh judge (negative leniency) scores lower; clipping keeps it in range on a short scale.
    harsh = config(openai={"leniency": -3.0})
    low = [v for item, row in zip(items[:50], rows[:50]) for v in decide(harsh, truth, GPT, r1(item, row)).levels.values()]
    assert min(low) >= 0 and statistics.fmean(low) < statistics.fmean(fair[:150]) - 2  # the same 50 rows


def test_planted_leniencies() -> None:
    planted = SimConfig.planted()
    lens = {v: b.leniency for v, b in planted.vendors.items()}
    assert all(-0.5 <= x <= 0.5 for x in lens.values()) and len(set(lens.values())) > 3
    assert all(b.family_preference == 0.0 and b.score_noise == 0.6 and b.omit_rate == 0.0
               for b in planted.vendors.values())
    assert VendorBehaviour().leniency == 0.0 and VendorBehaviour().family_preference == 0.0


def _residuals(cfg: SimConfig, items, rows, truth) -> dict[bool, list[int]]:
    """The judge's level minus the true level, on its own vendor's rows (True) and on others' (False)."""
    out: dict[bool, list[int]] = {True: [], False: []}
    for item, row in zip(items, rows):
        d = decide(cfg, truth, GPT, r1(item, row))
        assert d.own_vendor_rows == (row.model == OWN)
        t = true_levels(cfg, truth, item.prompt, row.response, SCALE10)
        out[row.model == OWN].extend(d.levels[k] - t[k] for k in t)
    return out


def test_family_preference() -> None:
    # Producer and gold vary independently: half the rows are the OpenAI judge's own family's.
    items, rows = bank(400, SCALE10, producer=lambda i: OWN if (i // 2) % 2 else LLAMA)
    truth = TruthTable.from_rows(items, rows)
    res = _residuals(config(openai={"family_preference": 1.0}), items, rows, truth)
    gap = statistics.fmean(res[True]) - statistics.fmean(res[False])
    assert 0.85 < gap < 1.15, gap
    assert abs(statistics.fmean(res[False])) < 0.1  # no bias on other vendors' rows
    res = _residuals(config(openai={"family_preference": 0.0}), items, rows, truth)
    assert abs(statistics.fmean(res[True]) - statistics.fmean(res[False])) < 0.15  # ~3.5 standard errors
    # A judge of another vendor sees nothing of its own there.
    cfg = config(anthropic={"family_preference": 2.0})
    assert all(decide(cfg, truth, CLAUDE, r1(item, row)).own_vendor_rows == 0 for item, row in zip(items, rows))


def test_unknown_producer_is_counted() -> None:
    items, rows = bank(2, SCALE4, producer=lambda i: "acme/mystery-1")
    d = decide(config(), TruthTable.from_rows(items, rows), GPT, r1(items[0], rows[0]))
    assert d.unknown_producers == 1 and d.own_vendor_rows == 0


# ---- round two -----------------------------------------------------------------------------------------


def _spread(levels: list[dict[str, int]]) -> float:
    return statistics.fmean(statistics.pvariance([lv[d] for lv in levels]) for d in SCALE10.names)


def test_round_two_narrows_the_spread() -> None:
    roster = list(DEFAULT_ROSTER.items())
    leniency = dict(zip([v for v, _ in roster], (-0.5, -0.25, 0.0, 0.25, 0.5)))
    persuadable = config(**{v: {"persuadability": 1.0, "leniency": leniency[v]} for v, _ in roster})
    stubborn = config(**{v: {"persuadability": 0.0, "leniency": leniency[v]} for v, _ in roster})
    items, rows = bank(120, SCALE10)
    truth = TruthTable.from_rows(items, rows)
    s1, s2, moves = [], [], 0
    for item, row in zip(items, rows):
        first = {j: decide(persuadable, truth, j, r1(item, row)) for _, j in roster}
        second = []
        for k, (_, j) in enumerate(roster):
            peers = [Peer(letter, None, first[p].reason, first[p].levels)
                     for letter, p in zip("BCDE", [q for _, q in roster if q != j])]
            m = r2(item, row, first[j].levels, first[j].reason, peers)
            d = decide(persuadable, truth, j, m)
            assert d.round == 2 and levels_of(d.content, SCALE10) == d.levels
            moves += d.levels != first[j].levels
            second.append(d.levels)
            assert decide(stubborn, truth, j, m).levels == first[j].levels  # persuadability 0: no move
            alone = decide(persuadable, truth, j, r2(item, row, first[j].levels, first[j].reason, []))
            assert alone.levels == first[j].levels  # no peers: no move
        s1.append(_spread([first[j].levels for _, j in roster]))
        s2.append(_spread(second))
    assert moves > 100
    assert statistics.fmean(s2) < 0.7 * statistics.fmean(s1), (statistics.fmean(s1), statistics.fmean(s2))


def test_round_two_without_own_levels_decides_as_in_round_one() -> None:
    items, rows = bank(30, SCALE4)
    cfg = config(openai={"persuadability": 1.0})
    truth = TruthTable.from_rows(items, rows)
    for item, row in zip(items, rows):
        first = decide(cfg, truth, GPT, r1(item, row)).levels
        assert decide(cfg, truth, GPT, r2(item, row, None, None, [])).levels == first


def test_family_preference_holds_in_round_two() -> None:
    """Two peers two levels lower: the median is theirs; P(move) = 1 - exp(-2) ~ 0.86, and on its own family's
    rows a judge with family preference 3 refuses a move down with probability 1 - exp(-3) ~ 0.95."""
    items, rows = bank(200, SCALE10, producer=lambda i: OWN if i % 2 else LLAMA)
    truth = TruthTable.from_rows(items, rows)

    def move_rates(pref: float) -> dict[bool, float]:
        cfg = config(openai={"persuadability": 1.0, "family_preference": pref})
        moved: dict[bool, list[bool]] = {True: [], False: []}
        for item, row in zip(items, rows):
            own = {"accuracy": 7, "clarity": 6, "depth": 8}
            lower = {k: v - 2 for k, v in own.items()}
            peers = [Peer("B", None, "Lower.", lower), Peer("C", None, "Lower too.", lower)]
            got = decide(cfg, truth, GPT, r2(item, row, own, "Mine.", peers)).levels
            assert all(got[k] in (own[k], lower[k]) for k in own)
            moved[row.model == OWN].extend(got[k] != own[k] for k in own)
        return {k: statistics.fmean(v) for k, v in moved.items()}

    held = move_rates(3.0)
    assert held[False] > 0.75 and held[True] < 0.15, held
    free = move_rates(0.0)
    assert abs(free[True] - free[False]) < 0.1 and free[True] > 0.75, free


# ---- omission ------------------------------------------------------------------------------------------


def test_omit_rate_leaves_dimensions_out() -> None:
    items, rows = bank(200, SCALE4)
    truth = TruthTable.from_rows(items, rows)
    cfg = config(openai={"omit_rate": 0.5})
    shown = 0
    for item, row in zip(items, rows):
        d = decide(cfg, truth, GPT, r1(item, row))
        full = decide(config(), truth, GPT, r1(item, row)).levels
        assert all(full[k] == v for k, v in d.levels.items())  # left out, not changed
        shown += len(d.levels)
        assert levels_of(d.content, SCALE4) == (d.levels or None)
    assert 0.4 < shown / (3 * len(rows)) < 0.6
    d = decide(config(openai={"omit_rate": 1.0}), truth, GPT, r1(items[0], rows[0]))
    assert d.levels == {} and read_scores(d.content, SCALE4)[0] is None


# ---- through the embedded server -----------------------------------------------------------------------


async def test_graded_prompt_over_http() -> None:
    items, rows = bank(1, SCALE4)
    cfg = SimConfig.planted(seed=2)
    truth = TruthTable.from_rows(items, rows)
    messages = round1_messages(items[0], rows[0])
    assert messages[0]["content"] == SCALE_SYSTEM_PROMPT and round1_body(items[0], rows[0]) in messages[1]["content"]
    async with await start_sim(cfg, truth) as server:
        client = openai_client(server)
        resp = await client.chat.completions.create(model=GPT, messages=messages, max_completion_tokens=4000)
        await client.close()
    content = resp.choices[0].message.content
    got, _ = read_scores(content, SCALE4)
    expected = decide(cfg, truth, GPT, msgs(messages))
    assert got is not None and got[0] == expected.levels and set(got[0]) == set(SCALE4.names)
