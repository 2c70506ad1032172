"""``council serve``: the grading service on one address until SIGTERM or Ctrl-C, which drain it (running
jobs stop as a run stops on a signal: calls in flight finish and are archived; they resume at the next start)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from aiohttp import web

from council.core import logs
from council.protocol.config import CouncilConfig
from council.service.app import MAX_BODY, make_app
from council.service.jobs import JobManager
from council.service.tenants import Tenants

LISTENING = "grading service listening on "


async def serve(*, host: str, port: int, tokens: Path, runs_dir: Path, bank_items: list, provider_url: str | None,
                sim_config: Path | None, config: CouncilConfig, max_body: int = MAX_BODY) -> None:
    tenants = Tenants.load(tokens)
    runs_dir.mkdir(parents=True, exist_ok=True)
    logs.configure(runs_dir / "service.log.jsonl")
    app = make_app(JobManager(runs_dir, bank_items, provider_url=provider_url, sim_config=sim_config, config=config,
                              tenants=tenants), tenants, max_body=max_body)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    logs.get_logger("council.service").info("service.start", host=host, port=bound, runs_dir=str(runs_dir))
    print(f"{LISTENING}http://{host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        logs.get_logger("council.service").info("service.stop")
        await runner.cleanup()  # shutdown hooks drain the jobs
        logs.configure(None)
