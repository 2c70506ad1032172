"""What a run's grading needs running, started side by side before it and stopped after it: Ray (the ray
backend) and the embedded provider (when no provider URL is given). A stop asked while they start is answered
at once: nothing was sent yet.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from council.core.errors import ConfigError
from council.core.schema import BankItem, ResponseRow, RunManifest
from council.grading.stop import StopControl
from council.run.timings import Timings
from council.store.runfolder import RunFolder, dump_json

if TYPE_CHECKING:
    from council.sim import SimProcess, SimServer

OWN_PROCESS_ROWS = 200  # the embedded provider has a process of its own for runs of at least this many rows


@dataclass
class Services:
    """Ray and the embedded provider on their way up (None: not needed by this run)."""

    ray: asyncio.Future[None] | None
    provider: asyncio.Future[SimProcess | SimServer] | None

    @classmethod
    def start(cls, backend: str, ray_address: str | None, shards: int, embedded: bool, manifest: RunManifest,
              items: list[BankItem], rows: Callable[[], Iterable[ResponseRow]], timings: Timings) -> Services:
        """Start Ray (the ray backend) and the embedded provider (``embedded``: told the truth of the rows
        ``rows()`` reads)."""
        ray_up = _start_ray(ray_address, shards, timings) if backend == "ray" else None
        provider = (asyncio.ensure_future(timings.timed("provider start", start_embedded(manifest, items, rows())))
                    if embedded else None)
        return cls(ray_up, provider)

    async def ready(self, stop: StopControl, provider_url: str | None) -> tuple[str | None, dt.datetime | None]:
        """Once both are up: the provider URL to grade with (the embedded provider's, else ``provider_url``) and
        when the grading begins; (None, None) when a stop came first. ConfigError for the embedded provider on a
        cluster of several nodes (they cannot reach this machine's loopback)."""
        await _first_of([f for f in (self.ray, self.provider) if f is not None], stop)
        if stop.requested:
            return None, None
        if self.ray is not None:
            from council.cluster.raycluster import node_count

            if provider_url is None and node_count() > 1:
                raise ConfigError("the embedded provider listens on this machine's loopback, which the other "
                                  "nodes of the cluster cannot reach: serve it where they can (`council sim "
                                  "--host ADDRESS` on a node) and pass --provider-url, or use --backend local")
        if self.provider is not None:
            provider_url = self.provider.result().url
        return provider_url, dt.datetime.now(dt.UTC)

    async def stop(self, folder: RunFolder, timings: Timings) -> dict | None:
        """The embedded provider's counters, written to the run folder (``provider_stats.json``), and the provider
        stopped (one still starting is cancelled)."""
        provider = self.provider
        if provider is None:
            return None
        if not provider.done():
            provider.cancel()
            await asyncio.gather(provider, return_exceptions=True)
            return None
        if provider.exception() is not None:
            return None
        sim = provider.result()
        with timings.phase("provider stop"):
            try:
                stats = await sim.stats()
                folder.write_bytes("provider_stats.json", dump_json(stats))
            finally:
                await sim.close()
        return stats


def _start_ray(address: str | None, shards: int, timings: Timings) -> asyncio.Future[None]:
    from council.cluster.raycluster import ensure_ray_soon

    # A local instance gets a logical CPU per shard worker, so every worker is placed on this machine.
    num_cpus = max(os.cpu_count() or 1, shards) if shards and not address else None
    return asyncio.ensure_future(timings.timed("ray start", ensure_ray_soon(address, num_cpus=num_cpus)))


async def _first_of(work: list[asyncio.Future[Any]], stop: StopControl) -> None:
    """Wait for all of ``work``, or for a stop, whichever comes first (a failure of ``work`` is raised)."""
    if not work:
        return
    everything = asyncio.gather(*work)
    if await stop.first(everything):
        everything.result()
    else:  # stopped first: what is still starting is left to end with the process (or is stopped below)
        everything.add_done_callback(lambda f: f.cancelled() or f.exception())


async def start_embedded(manifest: RunManifest, items: Iterable[BankItem], rows: Iterable[ResponseRow], *,
                         on_this_loop: bool = False) -> SimProcess | SimServer:
    """The embedded provider of a simulated run, started with the run's own behaviour (the planted one at the
    run's seed when it recorded none) and told the truth of ``rows``, and primed with the truth of every answer
    the run's models under test give. Answers are a pure function of the request, so a provider started for
    the same run later (to resume it, or to ask another judge: ``council crossjudge``) knows the truth of the
    answers given earlier, and its judges grade them against it rather than guess. For a run of at least
    ``OWN_PROCESS_ROWS`` rows it runs in a process of its own (:mod:`council.sim._process`), so that it and the
    council's client do not take turns on one event loop; a smaller run is served on this process's own loop,
    as starting a process (about half a second of a core) would cost more than it saves, and so is one whose
    truth grows as it runs (``on_this_loop``: ``SimServer.truth`` is told of each new row)."""
    from council.sim import SimConfig, TruthTable, prime, start_sim, start_sim_process

    sim_config = (SimConfig.model_validate(manifest.sim_config) if manifest.sim_config
                  else SimConfig.planted(manifest.seed))
    truth = TruthTable.from_rows(items, rows)
    prime(sim_config, truth, manifest.models)
    rows = manifest.rows or len(truth.questions()) * len(manifest.models)
    own_process = rows >= OWN_PROCESS_ROWS and not on_this_loop
    return await (start_sim_process if own_process else start_sim)(sim_config, truth)
