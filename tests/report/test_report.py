"""report.html on real runs of the embedded provider: a binary run, a graded-scale run, a mixed run with a
cross-judge report, a run stopped by its budget, and a run that elicited answers with stated confidence.

Each page holds the figures its data allows (and says why the others are left out), links to nothing outside
itself, is the same bytes for the same run, and renders in headless Chromium without asking for anything."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

import aggregator as agg
import bank
from council.protocol.config import CouncilConfig
from council.report import reading
from council.report.page import REPORT, write_report
from council.report.run_sections import MIN_TIMELINE_BUCKETS
from council.run.runner import RunRequest, run_council
from council.sim import SimConfig
from council.tools.crossjudge import crossjudge
from tests.council._provider import quiet
from tests.council.test_end_to_end import subset
from tests.council.test_scales import write_world
from tests.elicitor.test_elicit_run import MODELS, small_bank

PRICED = {v: {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0}
          for v in ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")}
BINARY_FIGURES = {"fig-leaderboard", "fig-rules", "fig-agreement-round1", "fig-agreement-round2"}
SCALE_FIGURES = {"fig-scale-quality", "fig-scale-quality-agreement"}
FIGURES = {  # every run of the kind has these; fig-flips, fig-herding and fig-quota depend on what happened (see
    # expected)
    "binary": BINARY_FIGURES,
    "graded": SCALE_FIGURES | {"fig-crossjudge-meta-llama-llama-3-1-405b-instruct"},
    "mixed": BINARY_FIGURES | SCALE_FIGURES | {"fig-crossjudge-single-google"},
    "partial": BINARY_FIGURES,
    "elicited": BINARY_FIGURES | {"fig-calibration"},
}
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def sim_file(folder: Path) -> Path:
    path = folder / "sim.json"
    path.write_bytes(orjson.dumps(quiet(SimConfig.planted(5), latency_ms=0.0).model_dump(mode="json")))
    return path


@pytest.fixture(scope="module")
async def runs(tmp_path_factory) -> dict[str, Path]:
    """One run folder of each kind (about a second each)."""
    tmp = tmp_path_factory.mktemp("report-runs")
    runs_dir = tmp / "runs"
    out = {}

    async def run(name: str, **request) -> Path:
        result = await run_council(RunRequest(runs_dir=runs_dir, run_id=name, backend="local", **request))
        out[name] = result.run_dir
        return result.run_dir

    (tmp / "b").mkdir()
    await run("binary", bank=bank.SAMPLE_BANK, responses=subset(tmp / "b", 8), config=CouncilConfig(deliberate="all"))
    for name, graded, judge in (("graded", "all", "meta-llama/llama-3.1-405b-instruct"), ("mixed", "half", "single:google")):
        folder = tmp / name
        folder.mkdir()
        bank_path, responses = write_world(folder, 8, graded=graded)  # (6 items, half graded: see the report)
        await run(name, bank=bank_path, responses=responses, sim_config=sim_file(folder), config=CouncilConfig())
        await crossjudge(runs_dir, name, judge)
    await run("partial", bank=bank.SAMPLE_BANK, responses=subset(tmp / "b", 8),
              config=CouncilConfig(vendors=PRICED, rows_in_flight=4, budget_usd=0.1, compress_archive=True))
    await run("elicited", bank=small_bank(tmp, 12), responses=None, models=MODELS[:3], config=CouncilConfig())
    return out


@pytest.fixture(scope="module")
def drawn(runs):
    """Each run's report.html, drawn at most once for the tests that only read it (about a second of matplotlib
    each; the same run gives the same bytes, as a test below checks)."""
    pages: dict[str, Path] = {}

    def draw(kind: str) -> Path:
        if kind not in pages:
            pages[kind] = write_report(runs[kind])
        return pages[kind]

    return draw


def expected(kind: str, folder: Path) -> set[str]:
    """The figures of a run of ``kind``: fig-flips when some correct / incorrect row deliberated with a member
    valid in both rounds, fig-herding when some member changed a vote, fig-quota when quota_stats.json has a
    timeline of at least MIN_TIMELINE_BUCKETS intervals."""
    summary = orjson.loads((folder / "summary.json").read_bytes())
    quota = orjson.loads((folder / "quota_stats.json").read_bytes())
    flips = sum(f[k] for f in summary["herding"]["flips"].values() for k in ("conforming", "dissenting", "unaligned"))
    moved = sum(m["valid_both"] for m in summary.get("member_flips", {}).values())
    drawn = any(len(v.get("timeline", {}).get("t", [])) >= MIN_TIMELINE_BUCKETS for v in quota.values())
    return (FIGURES[kind] | ({"fig-flips"} if moved else set()) | ({"fig-herding"} if flips else set())
            | ({"fig-quota"} if drawn else set()))


def figure_ids(page: str) -> set[str]:
    return set(re.findall(r'<figure id="([^"]+)"', page))


@pytest.mark.parametrize("kind", sorted(FIGURES))
def test_each_kind_of_run_gets_its_figures_and_links_nowhere(runs, drawn, kind):
    path = drawn(kind)
    assert path == runs[kind] / REPORT
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<html lang="en">' in page
    assert figure_ids(page) == expected(kind, runs[kind])
    if "fig-herding" not in figure_ids(page):  # said in one line why
        herding = page[page.index('id="sec-herding"'):page.index('id="sec-calibration"')]
        assert "Left out: no member changed a vote in round two" in herding or "Left out: no correct" in herding
    for fig_id in figure_ids(page):  # every figure: inline SVG, labelled by its caption
        block = page[page.index(f'<figure id="{fig_id}">'):]
        block = block[:block.index("</figure>")]
        assert f'<svg role="img" aria-labelledby="{fig_id}-cap"' in block and f'<figcaption id="{fig_id}-cap">' in block
    assert "http://" not in page and "https://" not in page  # no URL at all, not even an XML namespace
    for attr, target in re.findall(r'\b(src|href)\s*=\s*"([^"]*)"', page, flags=re.I):
        assert target.startswith(("#", "data:")), (attr, target)
    assert "<script" not in page.lower() and "@import" not in page and "url(" not in page.replace("url(#", "")
    assert "@media print" in page and "break-inside: avoid" in page
    assert "absent error" not in page  # no section failed to draw
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids clash between inline SVGs"
    for ref in re.findall(r'(?:url\(#|href="#)([^")]+)', page):
        assert ref in ids, ref
    if kind != "elicited":
        assert "Left out: no confidence was elicited" in page
    if kind == "graded":
        assert "no correct / incorrect rows were graded" in page


def test_the_header_says_what_the_run_is(runs, drawn):
    page = drawn("partial").read_text(encoding="utf-8")
    summary = orjson.loads((runs["partial"] / "summary.json").read_bytes())
    assert summary["state"]["state"] == "stopped" and summary["complete"] is False
    head = page[page.index("<header"):page.index("</header>")]
    assert ">SIMULATED<" in head and "stopped: budget" in head and "PARTIAL" in head
    assert f"{summary['rows']:,} of {summary['rows_total']:,}" in head
    assert (runs["partial"] / "round1.jsonl.zst").is_file()  # a compressed archive reads as well
    assert "distinct rubric hash" in page and "fig-leaderboard" in figure_ids(page)
    finished = drawn("binary").read_text(encoding="utf-8")
    assert ">finished<" in finished[:finished.index("</header>")]


def test_the_same_run_gives_the_same_bytes(runs, tmp_path):
    first = write_report(runs["mixed"]).read_bytes()
    copy = tmp_path / "copy"
    shutil.copytree(runs["mixed"], copy)
    (copy / REPORT).unlink()
    # Another folder, another process with another string hash seed: the same run, the same bytes.
    code = "import sys; from pathlib import Path; from council.report.page import write_report; write_report(Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", code, str(copy)], check=True, cwd=Path(__file__).resolve().parents[2],
                   env={**os.environ, "PYTHONHASHSEED": "12345"}, timeout=120)
    assert (copy / REPORT).read_bytes() == first
    assert b"Date" not in first and b"<metadata" not in first and b"Matplotlib v" not in first


def test_provenance_lists_prompts_rubrics_and_roster(runs, drawn):
    page = drawn("binary").read_text(encoding="utf-8")
    manifest = orjson.loads((runs["binary"] / "manifest.json").read_bytes())
    section = page[page.index('id="sec-provenance"'):page.index('id="sec-crossjudge"')]
    for value in (manifest["judge_prompt_version"], *manifest["prompt_hashes"].values(), manifest["dataset_fingerprint"],
                  manifest["responses_fingerprint"], *(m["judge_model"] for m in manifest["roster"])):
        assert value in section, value
    hashes = {orjson.loads(x)["rubric_hash"] for x in (runs["binary"] / "round1.jsonl").read_bytes().splitlines()}
    assert all(h in section for h in hashes)
    assert "SIMULATED" in section and "self-exclusion" in section


def test_quota_timeline_is_drawn_when_present_and_a_table_otherwise(runs, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(runs["binary"], folder)
    before = orjson.loads((folder / "quota_stats.json").read_bytes())
    before = {v: {k: x for k, x in stats.items() if k != "timeline"} for v, stats in before.items()}
    before["openai"] = {"granted_requests": 2, "granted_tokens": 447, "rate_limited": 0, "effective_rpm": 0.0,
                        "factor": 1.0, "holders": ["local:openai"]}  # the totals-only form of older runs
    (folder / "quota_stats.json").write_bytes(orjson.dumps(before))
    page = write_report(folder).read_text(encoding="utf-8")
    assert "fig-quota" not in figure_ids(page) and "has no timeline" in page and "granted requests" in page
    assert "absent error" not in page
    stats = {}
    for k, (vendor, old) in enumerate(sorted(before.items())):
        requests = [5 + k, 7, 0, 9]
        limited = [0, 2 if k % 2 else 0, 0, 0]
        stats[vendor] = {**old, "requests": sum(requests), "rate_limited": sum(limited), "timeline": {
            "bucket_s": 5.0, "t": [0.0, 5.0, 10.0, 15.0], "requests": requests, "tokens": [100] * 4,
            "rate_limited": limited}}
    stats["odd"] = {"timeline": {"bucket_s": 0, "t": "nope"}}  # a malformed timeline is left out, not fatal
    (folder / "quota_stats.json").write_bytes(orjson.dumps(stats))
    page = write_report(folder).read_text(encoding="utf-8")
    assert "fig-quota" in figure_ids(page) and "absent error" not in page
    limited = sum(sum(v["timeline"]["rate_limited"]) for v in stats.values() if "rate_limited" in v["timeline"])
    assert limited and f"{limited:,} rate-limited responses (429)" in page
    assert set(reading.timelines(stats)) == set(before)


def test_a_run_without_a_summary_still_gets_a_page(runs, tmp_path):
    folder = tmp_path / "early"
    folder.mkdir()
    shutil.copy(runs["binary"] / "manifest.json", folder / "manifest.json")
    (folder / "state.json").write_bytes(b'{"state": "running"}')
    page = write_report(folder).read_text(encoding="utf-8")
    assert not figure_ids(page) and "no summary.json" in page and ">running<" in page
    assert "absent error" not in page and 'id="sec-provenance"' in page


# -- calibration bins ----------------------------------------------------------------------------------------


def test_reliability_bins_agree_with_the_ece():
    rng = np.random.default_rng(3)
    rows, n_models = 500, 4
    confidence = rng.random(rows)
    confidence[rng.random(rows) < 0.1] = np.nan
    confidence[:3] = [0.0, 1.0, 0.3]  # the edges and a value on a bin edge
    correct = (rng.random(rows) < confidence).astype(np.int8)
    abstained = rng.random(rows) < 0.05
    model = rng.integers(0, n_models, rows)
    bins = agg.reliability_bins(confidence, correct, abstained, model, n_models)
    assert bins["n"].shape == bins["mean_confidence"].shape == (n_models, 10) and len(bins["edges"]) == 11
    use = ~np.isnan(confidence) & ~abstained
    for k in range(n_models):
        mine = use & (model == k)
        assert bins["n"][k].sum() == mine.sum()
        n = bins["n"][k]
        have = n > 0
        ece = (n[have] * np.abs(bins["mean_confidence"][k][have] - bins["share_correct"][k][have])).sum() / n.sum()
        assert ece == pytest.approx(agg.expected_calibration_error(confidence[model == k], correct[model == k],
                                                                   abstained=abstained[model == k]))
        assert np.isnan(bins["share_correct"][k][~have]).all()
    assert bins["n"][model[1], 9] >= 1 and bins["n"][model[2], 3] >= 1  # 1.0 in the last bin, 0.3 in bin 3
    empty = agg.reliability_bins(np.array([np.nan]), np.array([1]), None, np.array([0]), 2)
    assert empty["n"].sum() == 0 and np.isnan(empty["share_correct"]).all()
    with pytest.raises(ValueError):
        agg.reliability_bins(np.array([0.5]), np.array([1]), None, np.array([2]), 2)


def test_reliability_from_the_run_matches_the_summary(runs):
    rel = reading.reliability(runs["elicited"])
    summary = orjson.loads((runs["elicited"] / "summary.json").read_bytes())
    assert rel is not None and set(rel.models) == set(summary["calibration"])
    for k, model in enumerate(rel.models):
        n, have = rel.n[k], rel.n[k] > 0
        assert n.sum() == summary["calibration"][model]["n_confident"]
        ece = (n[have] * np.abs(rel.mean_confidence[k][have] - rel.share_correct[k][have])).sum() / n.sum()
        assert ece == pytest.approx(summary["calibration"][model]["ece"], abs=1e-6)
    assert reading.reliability(runs["binary"]) is None


# -- the room ------------------------------------------------------------------------------------------------


def test_the_report_room_imports_only_what_it_may():
    from tests.test_layers import MODULES, imports_of, room_of

    allowed = {"aggregator", "core", "protocol", "store", "scoring", "report"}
    mine = [m for m in MODULES if room_of(m) == "report"]
    assert "council.report.page" in mine
    for module in mine:
        for line, target in imports_of(module):
            assert room_of(target) in allowed, f"{module}:{line} imports {target}"


# -- in a browser --------------------------------------------------------------------------------------------


def browser_or_skip():
    reason = None
    if not CHROMIUM.is_file():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        if importlib.util.find_spec("playwright") is None:
            reason = "playwright is not installed (pip install -e '.[test]')"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must render the report in Chromium: {reason}")
        pytest.skip(reason)


async def test_the_page_renders_in_headless_chromium_asking_for_nothing(runs, drawn, tmp_path):
    browser_or_skip()
    from playwright.async_api import async_playwright

    shots = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for kind in ("elicited", "mixed"):
                path = drawn(kind)
                page = await browser.new_page(viewport={"width": 1200, "height": 900})
                requests, errors = [], []
                page.on("request", lambda r, requests=requests: requests.append(r.url))
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                await page.goto(path.as_uri(), wait_until="load")
                shots[kind] = tmp_path / f"{kind}.png"
                await page.screenshot(path=str(shots[kind]), full_page=True)
                assert requests and all(u == path.as_uri() or u.startswith("data:") for u in requests), requests
                assert not errors
                boxes = await page.eval_on_selector_all("figure > svg", """els => els.map(e => {
                    const r = e.getBoundingClientRect(); return [e.parentElement.id, r.width, r.height]; })""")
                assert {b[0] for b in boxes} == expected(kind, runs[kind])
                assert all(w > 0 and h > 0 for _, w, h in boxes), boxes
                wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert wide <= 0, "the page is wider than the window"
                await page.close()
        finally:
            await browser.close()
    assert shots["elicited"].stat().st_size > 10_000
    shutil.copyfile(shots["elicited"], "/tmp/report-screenshot.png")


async def test_a_run_that_skipped_round_two_on_unanimous_rows_says_so_and_what_the_audit_found(drawn, tmp_path):
    """With ``--deliberate disputed`` the page says how many rows deliberated and kept their round-one verdict,
    that the round-two figures are on the rows that deliberated, and the audit's changed verdicts with their
    interval, as summary.json has them."""
    config = CouncilConfig(deliberate="disputed", deliberation_audit=0.5)
    result = await run_council(RunRequest(runs_dir=tmp_path / "runs", run_id="d", backend="local",
                                          bank=bank.SAMPLE_BANK, responses=subset(tmp_path, 8), config=config))
    d = orjson.loads((result.run_dir / "summary.json").read_bytes())["deliberation"]
    assert d["rows_skipped"] and d["audit"]["rows"]  # the cases are there
    page = write_report(result.run_dir).read_text(encoding="utf-8")
    flips = page[page.index('<section id="sec-flips"'):]
    flips = html.unescape(flips[:flips.index("</section>")])
    assert f"{d['rows_deliberated']:,} rows deliberated, {d['rows_skipped']:,} kept their round-one verdict" in flips
    assert "on the rows that deliberated" in flips
    assert f"sent round two to {d['audit']['rows']:,} of the skipped rows" in flips
    assert f"would have changed {d['audit']['changed']:,} of their verdicts" in flips
    assert "kept their round-one verdict" not in drawn("binary").read_text(encoding="utf-8")  # all
