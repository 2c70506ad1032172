"""One council run, start to finish: load and validate the inputs, open the run folder, start the
embedded provider unless a provider URL is given, drive the coordinator through the chosen backend,
then score from the archive."""

from __future__ import annotations

import datetime as dt
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bank import dataset_fingerprint, load_bank, load_responses, responses_fingerprint
from council import logs
from council.config import CouncilConfig, Endpoint
from council.coordinator import Coordinator
from council.errors import ConfigError
from council.prompts import PROMPT_HASHES, PROMPT_VERSION
from council.runfolder import MANIFEST, ROWS, RunFolder, dump_json
from council.schema import ResponseRow, RunManifest
from council.scoring import rescore

BACKENDS = ("ray", "local")


@dataclass
class RunRequest:
    bank: Path
    responses: Path
    runs_dir: Path = Path("runs")
    run_id: str | None = None
    backend: str = "ray"
    provider_url: str | None = None
    ray_address: str | None = None
    config: CouncilConfig = field(default_factory=CouncilConfig)
    sim_config: Path | None = None
    command: str = "run"


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any]
    seconds: float
    provider_stats: dict[str, Any] | None


def new_run_id() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for dist in ("grading-council", "aiohttp", "ray", "pydantic", "numpy", "orjson", "structlog"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


async def run_council(
    req: RunRequest,
    *,
    on_start: Callable[[int], None] | None = None,
    on_row_done: Callable[[ResponseRow], None] | None = None,
) -> RunResult:
    if req.backend not in BACKENDS:
        raise ConfigError(f"unknown backend {req.backend!r}; choose one of {', '.join(BACKENDS)}")
    items = load_bank(req.bank)
    rows = load_responses(req.responses, items)
    started = dt.datetime.now(dt.UTC)
    folder = RunFolder.create(req.runs_dir, req.run_id or new_run_id())
    logs.configure(folder.path / "log.jsonl")
    log = logs.get_logger("council.run").bind(run_id=folder.path.name)

    sim = None
    provider_url = req.provider_url
    if provider_url is None:
        from council.sim import SimConfig, TruthTable, start_sim

        sim_cfg = SimConfig.from_file(req.sim_config) if req.sim_config else SimConfig.planted(seed=req.config.seed)
        sim = await start_sim(sim_cfg, TruthTable.from_rows(items, rows))
        base_url = sim.url
    else:
        base_url = provider_url
    endpoint = Endpoint(base_url=base_url)
    endpoints = {v: endpoint for v in req.config.roster_vendors}

    manifest = RunManifest(
        run_id=folder.path.name, created_at=started.isoformat(), command=req.command, roster=req.config.roster,
        self_exclusion=req.config.self_exclusion, quorum=req.config.quorum, seed=req.config.seed,
        backend=req.backend, provider_url=provider_url, prompt_version=PROMPT_VERSION,
        prompt_hashes=PROMPT_HASHES, bank_path=str(req.bank), responses_path=str(req.responses),
        dataset_fingerprint=dataset_fingerprint(items), responses_fingerprint=responses_fingerprint(rows),
        rows=len(rows), versions=_versions(),
        config=req.config.model_dump(mode="json") | {"embedded_provider": sim is not None},
    )
    folder.write_json(MANIFEST, manifest.model_dump(mode="json"))
    folder.write_lines(ROWS, rows)
    log.info("run.start", rows=len(rows), backend=req.backend, provider="embedded" if sim else provider_url)

    if req.backend == "ray":
        from council.pools import RayPool
        from council.raycluster import ensure_ray

        ensure_ray(req.ray_address)
        pool: Any = RayPool(req.config, endpoints)
        linger_s = 0.002
    else:
        from council.pools import LocalPool

        pool, linger_s = LocalPool(req.config, endpoints), 0.0

    if on_start is not None:
        on_start(len(rows))
    t0 = dt.datetime.now(dt.UTC)
    stats = None
    try:
        coordinator = Coordinator(
            req.config, {i.id: i for i in items}, pool, folder.append, on_row_done=on_row_done,
            linger_s=linger_s, extra_names=sorted({r.model for r in rows} | {r.vendor for r in rows}),
        )
        await coordinator.run(rows)
    finally:
        await pool.close()
        folder.close()
        if sim is not None:
            stats = await sim.stats()
            folder.write_bytes("provider_stats.json", dump_json(stats))
            await sim.close()
    seconds = (dt.datetime.now(dt.UTC) - t0).total_seconds()
    summary = rescore(folder)
    log.info("run.done", seconds=round(seconds, 3), rows=len(rows))
    logs.configure(None)
    return RunResult(run_dir=folder.path, summary=summary, seconds=seconds, provider_stats=stats)
