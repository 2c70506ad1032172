"""The cross-judge report: re-score an archived run with another grader and say whether its scores survive.

``council crossjudge RUN --judge MODEL`` asks one judge model to grade every row of the run blind (a round one
alone, the council's own prompts), through the run's provider: the embedded one for a simulated run (started and
primed with the truth as the run's own was: :func:`council.run.services.start_embedded`), else ``--provider-url``.
``--judge single:<vendor>`` re-scores from the archive without a call: that member's round-one votes alone.
Either way the council's own results are never touched: everything goes to ``runs/<id>/crossjudge/<name>/``:

- ``round1.jsonl``: the other judge's votes, archived as they return (a second invocation asks only for the
  rows missing, so an interrupted report resumes);
- ``scores.jsonl``: per row, the council's score, the other grader's and the delta, on 0-100 (a verdict is
  100 correct / 0 incorrect; a graded item its normalised score);
- ``report.json``: ``mean_delta``, ``rank_correlation`` (Kendall, Spearman), ``provider_spread`` (family
  preference) and ``group_spread`` (target preference, from the bank's ``group``), each with its bootstrap
  interval and a safe / not-safe reading whose rule is stated beside it (:mod:`aggregator._crossjudge`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import aggregator as agg
from council.core.errors import ConfigError
from council.core.schema import BankItem, JudgeCallRecord, MemberSpec, ResponseRow, RunManifest
from council.protocol.config import CouncilConfig
from council.protocol.prompts import round1_body, rubric_hash
from council.store.runfolder import ITEMS, MANIFEST, ROWS, VERDICTS, RunFolder, dump_json, dump_line, iter_json, iter_jsonl, read_jsonl
from council.transport.judge import Judge, JudgeTask
from council.transport.limiter import Limiter, LocalLedger
from council.transport.quota import QuotaLedger
from council.transport.shape import vote_key

SINGLE = "single:"


@dataclass
class CrossJudgeResult:
    folder: Path
    report: dict[str, Any]
    asked: int  # votes asked of the other judge by this invocation
    archived: int  # votes found in the report's own archive


def report_name(grader: str) -> str:
    """The report's folder name for a grader: the model id or rule with anything but ``[A-Za-z0-9._-]`` as ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", grader).strip("._") or "grader"


def _score(item: BankItem, verdict: str | None, levels: dict[str, int] | None) -> float:
    """A vote's 0-100 score: 100 / 0 for a verdict, the normalised levels for a graded item; NaN for no vote."""
    if item.scale is None:
        return {"correct": 100.0, "incorrect": 0.0}.get(verdict or "", np.nan)
    if not levels:
        return np.nan
    row = np.array([[levels.get(n, np.nan) for n in item.scale.names]], dtype=np.float64)
    return float(agg.normalised_scores(row, item.scale.weights, item.scale.high)[0][0])


def _council_scores(folder: Path) -> dict[str, float]:
    """The council's 0-100 score (``council_score``) of every graded row, from the run's ``verdicts.jsonl``."""
    out: dict[str, float] = {}
    for _, v in iter_json(folder / VERDICTS):
        if "council_score" not in v:
            raise ConfigError(f"{folder / VERDICTS} predates council_score: run `council rescore {folder.name}` first")
        if v["council_score"] is not None:
            out[v["row_id"]] = float(v["council_score"])
    return out


def _archived_votes(path: Path) -> dict[str, JudgeCallRecord]:
    return {r.row_id: r for r in iter_jsonl(path, JudgeCallRecord, missing_ok=True) if r.parse_status != "error"}


async def _ask_judge(model: str, vendor: str, config: CouncilConfig, provider_url: str, items: dict[str, BankItem],
                     rows: Iterator[ResponseRow], out: Path, archived: dict[str, JudgeCallRecord]) -> int:
    """Ask ``model`` round one on every row not archived with the same request; archive each vote as it returns."""
    from council.run.runner import provider_endpoint

    settings = config.settings(vendor)
    limiter = Limiter(LocalLedger(QuotaLedger(settings.limits)), f"crossjudge:{vendor}",
                      concurrency=settings.concurrency, seed=config.seed)
    judge = Judge(MemberSpec(vendor=vendor, judge_model=model), provider_endpoint(provider_url, config), config.judge,
                  limiter=limiter, max_batch=settings.max_batch, seed=config.seed,
                  prices=config.rates_for(model, vendor), api=settings.api)
    params, asked = config.judge, 0
    pending: set[asyncio.Future[JudgeCallRecord]] = set()
    with open(out, "ab") as handle:
        def archive(done: set[asyncio.Future[JudgeCallRecord]]) -> None:
            """Archive the votes that came back; then raise the first failure among them (every future's
            outcome is read, so none is left unretrieved)."""
            failure = None
            for future in done:
                if future.exception() is not None:
                    failure = failure or future.exception()
                    continue
                record = future.result()
                archived[record.row_id] = record
                handle.write(dump_line(record.model_dump(mode="json")))
            handle.flush()
            if failure is not None:
                raise failure

        try:
            for row in rows:
                item = items[row.item_id]
                body = round1_body(item, row, contain=params.containment)
                key = vote_key(model, vendor, 1, body, params)
                if (seen := archived.get(row.row_id)) is not None and seen.request_key == key:
                    continue
                pending.add(judge.submit(JudgeTask(row.row_id, 1, body, rubric_hash=rubric_hash(item), request_key=key,
                                                   item_id=row.item_id, scale=item.scale)))
                asked += 1
                if len(pending) >= config.rows_in_flight:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    archive(done)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                archive(done)
        finally:
            for future in pending:  # a failure stops the report: what is still queued is never sent
                future.cancel()
            await judge.close()
    return asked


async def crossjudge(runs_dir: Path, run_id: str, grader: str, *, name: str | None = None,
                     provider_url: str | None = None, resamples: int | None = None,
                     thresholds: agg.CrossJudgeThresholds | None = None) -> CrossJudgeResult:
    """Re-score run ``run_id`` with ``grader`` (a judge model id, or ``single:<vendor>``) into
    ``crossjudge/<name>/`` and return the report (see the module docstring)."""
    run = RunFolder.open_run(runs_dir, run_id)
    manifest = RunManifest.model_validate(run.read_json(MANIFEST))
    config = CouncilConfig.recorded(manifest.config, manifest.judge_prompt_version)
    items = {i.id: i for i in read_jsonl(run.path / ITEMS, BankItem)}
    if not (run.path / VERDICTS).is_file():
        raise ConfigError(f"run {run_id} has no verdicts.jsonl yet: finish or rescore it before a cross-judge report")
    out = run.path / "crossjudge" / (name or report_name(grader))
    out.mkdir(parents=True, exist_ok=True)
    rows = lambda: iter_jsonl(run.path / ROWS, ResponseRow)  # noqa: E731 - streamed twice, never held
    asked = 0
    if grader.startswith(SINGLE):
        member = grader[len(SINGLE):]
        if member not in [m.vendor for m in manifest.roster]:
            raise ConfigError(f"--judge {grader}: {member!r} is not a member of run {run_id} "
                              f"(members: {', '.join(m.vendor for m in manifest.roster)})")
        votes = {r.row_id: r for r in run.read_records(1) if r.member == member and not r.shadow and r.ok}
        archived = len(votes)
    else:
        vendor = config.vendor_of(grader)
        votes = _archived_votes(out / "round1.jsonl")
        archived = len(votes)
        if provider_url is None and not manifest.simulated:
            raise ConfigError(f"run {run_id} was graded by real providers: pass --provider-url for {grader}")
        sim = None
        if provider_url is None:  # the run's own embedded provider, primed with the truth as the run was
            from council.run.runner import start_embedded

            sim = await start_embedded(manifest, items.values(), rows())
            provider_url = sim.url
        try:
            asked = await _ask_judge(grader, vendor, config, provider_url, items, rows(), out / "round1.jsonl", votes)
        finally:
            if sim is not None:
                await sim.close()
    report = _report(run.path, out, grader, items, rows(), votes, resamples or config.bootstrap_resamples,
                     config.seed, thresholds)
    return CrossJudgeResult(out, report, asked, archived)


def _report(run: Path, out: Path, grader: str, items: dict[str, BankItem], rows: Iterator[ResponseRow],
            votes: dict[str, JudgeCallRecord], resamples: int, seed: int,
            thresholds: agg.CrossJudgeThresholds | None) -> dict[str, Any]:
    council = _council_scores(run)
    models: dict[str, int] = {}
    vendors: dict[str, int] = {}
    model_vendor: list[int] = []
    item_at: dict[str, int] = {}
    base, cross, item_idx, model_idx = [], [], [], []
    with open(out / "scores.jsonl", "wb") as handle:
        for row in rows:
            item = items[row.item_id]
            vote = votes.get(row.row_id)
            b = council.get(row.row_id, np.nan)
            c = np.nan if vote is None else _score(item, vote.verdict, vote.scores)
            k = models.setdefault(row.model, len(models))
            if k == len(model_vendor):
                model_vendor.append(vendors.setdefault(row.vendor, len(vendors)))
            base.append(b)
            cross.append(c)
            item_idx.append(item_at.setdefault(row.item_id, len(item_at)))
            model_idx.append(k)
            handle.write(dump_line({"row_id": row.row_id, "item_id": row.item_id, "model": row.model,
                                    "vendor": row.vendor, "council": _num(b), "cross": _num(c),
                                    "delta": _num(c - b)}))
    groups: dict[str, int] = {}
    group_of_item = np.array([groups.setdefault(g, len(groups)) if (g := items[i].group) else -1 for i in item_at],
                             dtype=np.int64)
    result = agg.crossjudge(
        np.array(base), np.array(cross), np.array(item_idx, dtype=np.int64), np.array(model_idx, dtype=np.int64),
        np.array(model_vendor, dtype=np.int64), len(item_at), len(models), len(vendors),
        group_of_item=group_of_item if groups else None, n_resamples=resamples, seed=seed,
        thresholds=thresholds or agg.CrossJudgeThresholds())
    report = {"grader": grader, "rows": len(base), "paired_rows": int(np.sum(~np.isnan(base) & ~np.isnan(cross))),
              "models": list(models), "vendors": list(vendors), "groups": list(groups), **_named(result.to_dict(),
              list(models), list(vendors))}
    (out / "report.json").write_bytes(dump_json(report))
    return report


def _named(stats: dict[str, Any], models: list[str], vendors: list[str]) -> dict[str, Any]:
    """The statistics with model and vendor indexes replaced by names."""
    stats["per_model"] = {models[m.pop("model")]: {**m, "vendor": vendors[m["vendor"]]} for m in stats["per_model"]}
    stats["per_vendor"] = {vendors[v.pop("vendor")]: v for v in stats["per_vendor"]}
    spread = stats.get("provider_spread")
    if spread:
        for end in ("highest_vendor", "lowest_vendor"):
            if isinstance(spread.get(end), int):
                spread[end] = vendors[spread[end]]
    return stats


def _num(x: float) -> float | None:
    return None if np.isnan(x) else round(float(x), 6)
