"""The embedded provider's HTTP face: an OpenAI-compatible chat-completions server on aiohttp.

It answers as a council judge, or, when the system message asks for a stated confidence and then an
answer, as a model under test (see ``council.sim._eliciting``); both draw on the vendor's one quota.

Routes: ``POST /v1/chat/completions`` (the gateway, OpenRouter-like: any model the world knows), ``GET
/v1/models`` (both need ``Authorization: Bearer <anything>``), and the unauthenticated test hooks ``GET
/v1/sim/stats`` and ``POST /v1/sim/reset``; Anthropic's native ``POST /v1/messages`` (``council.sim._messages``:
the same answers in Anthropic's shape, native ids only) and both providers' batch APIs, ``/v1/files`` +
``/v1/batches`` and ``/v1/messages/batches`` (``council.sim._batches``). Each provider's own API is served under a
prefix naming its real host (``/api.openai.com/v1/...``, ``/api.anthropic.com/v1/messages``, ...:
``council.sim._hosts``), native ids only, in that provider's wording (``council.sim._faces``).

With ``SimConfig.api_rules`` (the default) every request is read first by its model's maker's documented rules
(``council.sim._apis``): a parameter the maker refuses is answered 400 in the maker's words (counted as refused,
not as a request, not billed), and a reasoning model spends reasoning tokens (``council.sim._reasoning``) that
come first out of the output cap and are billed as output, for judges and models under test alike.

A message's ``content`` is a string or, as the chat API allows, a list of text parts (read as their texts run
together; any other part type is a 400). A part may carry ``cache_control: {"type": "ephemeral"}``: a vendor
with ``prompt_cache_breakpoints`` caches at those breakpoints only (``council.sim._cache``), the others ignore it.

Who made which model is the simulated world's (``council.sim._world`` plus ``SimConfig.world``), never the
council's: a chat request for a model the world does not know is answered 404 ``model_not_found`` in the
OpenAI error shape, and ``GET /v1/models`` lists every model of the world with its vendor as ``owned_by``.

The stats count, per model and per vendor (the world's): requests, rate_limited, billed, errors,
prompt_tokens, completion_tokens, batched_items (rows received inside batched requests), elicitations
(elicitation requests received), reasoning_tokens (billed hidden reasoning, part of completion_tokens),
own_vendor_rows (rows a judge received whose producer is a model of the judge's own vendor, per the world:
the provider-side check of self-exclusion), unknown_producers (producer models of received rows that the
world does not know, counted as no vendor), prose_json and fenced (replies whose JSON came inside prose or
inside a ```json fence), and the transport faults served: stalls (``timeout_rate``), resets, bad_bodies,
slow_answers and storm_429s (429s of a storm, also counted in rate_limited), and cached_tokens (billed prompt
tokens served from the prompt cache, ``council.sim._cache``: part of prompt_tokens). Everything counted on receipt
is counted billed or not. Requests answered inside the batch APIs (``council.sim._batches``) are counted in the
same counters when their result is produced, and also in batch_requests, batch_billed and batch_billed_twice
(batch requests billed under a ``(model, custom_id)`` already billed in any batch since the last reset); refused
(requests a maker's rule refused, ``council.sim._apis``: not counted in requests) and overloaded (Anthropic's
529s, ``overloaded_rate``).

Billing is truthful: ``billed`` counts the chat requests whose work was done and whose 200 status line went
out, whatever happened next: an answer whose body is then cut or unreadable (``bad_body_rate``) or trickled
out to a client that gave up (``slow_rate``) is billed. A 429 (quota or storm), a 500, a reset (the
connection closed before the work was done, after a few bytes that are no HTTP answer) and a stall the
client gave up on before the answer went out (``start_sim`` serves with handler cancellation, so the
stalled handler is cancelled) are not billed. So for a client
``billed`` is its 200s received plus the billed answers it could not read or waited for no longer.

With ``record_requests`` (``start_sim(..., record_requests=True)``) the server also keeps every judge chat
request it receives, billed or not (repairs and rate-limited attempts included; elicitations excluded), in
``SimServer.requests``, in arrival order, as ``{"model", "vendor", "round", "batch", "messages", "rows"}``:
the model id as asked, its vendor per the world, the round (0 when the request is not a council prompt),
whether it was a batched prompt, the messages as ``{"role", "content"}`` dicts, and the ``(question,
response)`` pair of each council row it carried.
It keeps too every reply billed as a model under test, in ``SimServer.answers``: what the model sent and
what it meant (the answer it wrote, the confidence it stated, whether it declined, the verdict the answer
deserves), so a client's reading of the replies can be checked against what was written.

A request carries one row (a single-row judge prompt) or several (a batched judge prompt, answered with
``{"verdicts": [...]}``). The reply's content (verdicts, reasons, malformed or not) is a pure function of
the request, so the same request always gets the same content, and each row's verdict and reason depend
only on that row's item text, so a row is answered alike alone or in any batch. Transport faults (5xx,
timeouts, resets, bad bodies, slow answers, truncation, latency) are drawn from one seeded stream per
server, so a retried request can succeed where the first attempt failed; a fault whose rate is 0 draws
nothing, so adding a fault leaves the others' draws alone. A 429 storm (``storm_429``) is a window of time
per vendor, not a draw.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

from council.sim import _batches, _hosts, _message_batches, _messages, _serving
from council.sim._config import SimConfig
from council.sim._quota import Clock
from council.sim._serving import STATE
from council.sim._state import _State
from council.sim._truth import TruthTable


def build_app(
    config: SimConfig | None = None, truth: TruthTable | None = None, *, clock: Clock | None = None,
    record_requests: bool = False,
) -> web.Application:
    """The aiohttp application; ``clock`` (default ``time.monotonic``) drives the quota buckets;
    ``record_requests`` keeps every judge request received (see the module docstring)."""
    app = web.Application(client_max_size=32 * 1024 * 1024)
    truth = truth if truth is not None else TruthTable()  # an empty table is falsy but may know items
    app[STATE] = _State(config or SimConfig.planted(), truth, clock or time.monotonic, record_requests)
    _serving.add_routes(app)
    _messages.add_routes(app)
    _batches.add_routes(app)
    _message_batches.add_routes(app)
    _hosts.add_hosts(app)
    return app


# ---- running -------------------------------------------------------------------------------------------


class SimServer:
    """A running embedded provider. ``url`` is the OpenAI-style base URL (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, app: web.Application, runner: web.AppRunner, host: str, port: int) -> None:
        self.app = app
        self._runner = runner
        self.host = host
        self.port = port
        self.url = f"http://{host}:{port}/v1"

    @property
    def config(self) -> SimConfig:
        return self.app[STATE].config

    @property
    def truth(self) -> TruthTable:
        return self.app[STATE].truth

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every judge chat request received, in arrival order, when started with ``record_requests=True``
        (``{"model", "vendor", "round", "batch", "messages", "rows"}``, see the module docstring); else empty."""
        got = self.app[STATE].requests
        return got if got is not None else []

    @property
    def answers(self) -> list[dict[str, Any]]:
        """Every reply billed as a model under test, in arrival order, when started with ``record_requests=True``
        (``{"model", "question", "content", "answer", "confidence", "abstained", "gold"}``: what the model sent
        and meant, see ``council.sim._eliciting.sent_record``); else empty."""
        got = self.app[STATE].answers
        return got if got is not None else []

    async def stats(self) -> dict[str, Any]:
        """The same counters as ``GET /v1/sim/stats``, read directly."""
        return self.app[STATE].stats()

    async def reset(self, quotas: bool = False) -> None:
        """Zero the counters and forget recorded requests (and, with ``quotas``, refill every bucket)."""
        self.app[STATE].reset(quotas=quotas)

    async def close(self) -> None:
        await self._runner.cleanup()

    async def __aenter__(self) -> SimServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def start_sim(
    config: SimConfig | None = None,
    truth: TruthTable | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    record_requests: bool = False,
    *,
    clock: Clock | None = None,
) -> SimServer:
    """Start the provider on ``host:port`` (port 0 = an ephemeral port) and return it running.

    With ``record_requests`` the server keeps every judge chat request it receives in ``SimServer.requests``
    (each a dict ``{"model", "vendor", "round", "batch", "messages", "rows"}``; see the module docstring)."""
    app = build_app(config, truth, clock=clock, record_requests=record_requests)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = port
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            bound = int(addr[1])
            break
    shown = f"[{host}]" if ":" in host else host
    return SimServer(app, runner, shown, bound)


def serve(
    config: SimConfig | None = None, truth: TruthTable | None = None, host: str = "127.0.0.1", port: int = 0
) -> None:
    """Run the provider until interrupted, printing its base URL first (for ``council sim``)."""

    async def main() -> None:
        server = await start_sim(config, truth, host, port)
        print(f"embedded provider listening on {server.url}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
