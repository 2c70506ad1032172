"""Kill -9 of a batch-mode run in each phase, then ``--resume``: the same verdicts as an uninterrupted run, and the
provider (a ``council sim`` process that outlives every kill) billed each request once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from council.batching.journal import JOURNAL
from council.sim import SimConfig
from tests.council._provider import command, council, quiet, sim_process
from tests.council.test_end_to_end import lines, subset

ITEMS = 12  # of the sample's 160: 72 rows
# A batch's time from creation to end on the provider. It bounds the second kill's window: the resume after the
# first kill takes up the batches that kill left on the provider, so round one waits, none ended, only until
# those end, COMPLETION_S after the first attempt made them, less the resume's own start. That start took 0.76 s
# on a quiet machine; at 1.5 s, a loaded suite run once started the resume after they had ended, and the run
# never waited with none ended ("waiting: the run ended before it could be killed").
COMPLETION_S = 3.0
REPLY_DELAY_S = 0.8  # a create answers this long after the batch is made: the window of the first kill


def model_stats(url: str) -> dict[str, dict]:
    with urllib.request.urlopen(url + "/sim/stats", timeout=10) as resp:
        return orjson.loads(resp.read())["models"]


def counter(url: str, name: str) -> int:
    return sum(m[name] for m in model_stats(url).values())


def events(run_dir: Path) -> list[dict]:
    path = run_dir / JOURNAL
    if not path.exists():
        return []
    data = path.read_bytes()
    return [orjson.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]  # a torn tail is not yet written


def provider_batches(url: str) -> set[str]:
    """Every batch the provider holds, of both APIs (at most 100 of each: enough here)."""
    ids = set()
    for path, headers in (("/batches", {"Authorization": "Bearer test"}),
                          ("/messages/batches", {"x-api-key": "test", "anthropic-version": "2023-06-01"})):
        request = urllib.request.Request(f"{url}{path}?limit=100", headers=headers)
        with urllib.request.urlopen(request, timeout=10) as resp:
            ids.update(b["id"] for b in orjson.loads(resp.read())["data"])
    return ids


def submitting(url: str, before: set[str]) -> Callable[[Path], bool]:
    """The provider has made a batch of this run whose create has not answered yet (none is in the journal)."""
    def reached(run_dir: Path) -> bool:
        return bool(provider_batches(url) - before) and not any(e["event"] == "submitted" for e in events(run_dir))

    return reached


def waiting(run_dir: Path) -> bool:
    """Round one's batches are all created and none has ended."""
    got = events(run_dir)
    intents = {e["local"] for e in got if e["event"] == "intent"}
    done = {e["local"] for e in got if e["event"] in ("submitted", "gone")}
    return len(intents) >= 5 and intents == done and not any(e["event"] == "ended" for e in got)  # deepseek: sync


def round_two(run_dir: Path) -> bool:
    """A batch announced after one ended: round two (or repairs) under way."""
    got = events(run_dir)
    first_end = next((i for i, e in enumerate(got) if e["event"] == "ended"), None)
    return first_end is not None and any(e["event"] == "intent" for e in got[first_end:])


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    config = quiet(SimConfig.planted(seed=0), latency_ms=5.0, latency_jitter_ms=0.0)
    config = config.model_copy(update={"batch_completion_s": COMPLETION_S, "batch_reply_delay_s": REPLY_DELAY_S})
    with sim_process(config, tmp_path_factory.mktemp("provider")) as url:
        yield url


def test_kill_9_in_each_phase_then_resume_pays_each_request_once(tmp_path, provider):
    config = tmp_path / "council.json"
    config.write_bytes(orjson.dumps({"transport": "batch", "batch": {"flush_s": 0.05, "poll_s": 0.2},
                                     "vendors": {"anthropic": {"api": "anthropic"}}}))
    runs = tmp_path / "runs"
    rows = ["--responses", str(subset(tmp_path, ITEMS))]
    # --no-check: the paid calls counted here are the run's alone (council check's would be billed too)
    common = ["--backend", "local", "--provider-url", provider, "--no-check", "--runs-dir", str(runs), "--no-report"]
    subprocess.run(council("run", "--run-id", "whole", *rows, *common), check=True, capture_output=True, timeout=120)

    crash = runs / "crashed"
    billed_before = counter(provider, "batch_billed")
    twice_before = counter(provider, "batch_billed_twice")
    # After the kill while waiting, the provider ends round one's batches while no process of the run is alive:
    # the next resume reads their results from the provider (then is killed in round two).
    before = provider_batches(provider)
    phases = [("submitting", submitting(provider, before)), ("waiting", waiting), ("round two", round_two)]
    unheard: set[str] = set()
    for i, (name, reached) in enumerate(phases):
        args = (("run", "--run-id", "crashed", *rows, "--config", str(config), *common) if i == 0
                else ("run", "--resume", "crashed", *common))
        with command(council(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not reached(crash) and proc.poll() is None:
                time.sleep(0.005)
            assert proc.poll() is None, f"{name}: the run ended before it could be killed"
            assert reached(crash), f"{name}: not reached within 60 s"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        if i == 0:
            unheard = provider_batches(provider) - before
        if name == "waiting":  # where it stands, from the run folder alone
            shown = subprocess.run(council("show", "crashed", "--runs-dir", str(runs)), capture_output=True,
                                   text=True, timeout=60, check=True).stdout
            assert "batches (" in shown and "council run --resume crashed" in shown, shown
            assert " batches open, " in shown or " batch open, " in shown, shown
            time.sleep(COMPLETION_S + 0.5)
    subprocess.run(council("run", "--resume", "crashed", *common), check=True, capture_output=True, timeout=120)

    assert (crash / "verdicts.jsonl").read_bytes() == (runs / "whole" / "verdicts.jsonl").read_bytes()
    got = events(crash)
    # The batches whose creates were cut off by the first kill existed on the provider: the resume found them
    # (their ids are in the journal) rather than sending their keys again.
    assert unheard and unheard <= {e["batch_id"] for e in got if e["event"] == "submitted"}
    kept = {e["local"] for e in got if e["event"] == "intent"} - {e["local"] for e in got if e["event"] == "gone"}
    distinct = {k for e in got if e["event"] == "intent" and e["local"] in kept for k in e["keys"]}
    assert {k for e in got if e["event"] == "intent" for k in e["packs"]} == {k for e in got if e["event"] == "intent"
                                                                              for k in e["keys"]}
    assert counter(provider, "batch_billed_twice") == twice_before
    assert counter(provider, "batch_billed") - billed_before == len(distinct)
    # every vote is archived: round one's are the synchronous run's; a batch run's round two asks a row's whole panel
    # (the synchronous run may stop asking an audited row once it is decided), on at least the rows it deliberated
    records = [r for name in ("round1.jsonl", "round2.jsonl") for r in lines(crash / name)]
    whole = [r for name in ("round1.jsonl", "round2.jsonl") for r in lines(runs / "whole" / name)]
    votes = {(r["row_id"], r["member"], r["round"]) for r in records}
    assert {v for v in votes if v[2] == 1} == {(r["row_id"], r["member"], 1) for r in whole if r["round"] == 1}
    seconds = {row for row, _, round_ in votes if round_ == 2}
    assert {(row, m) for row, m, round_ in votes if round_ == 2} == {(row, m) for row, m, round_ in votes
                                                                    if round_ == 1 and row in seconds}
    assert {r["row_id"] for r in whole if r["round"] == 2} <= seconds
    manifest = orjson.loads((crash / "manifest.json").read_bytes())
    assert len(manifest["resumes"]) == len(phases)
