"""A vendor's requests on its provider's batch API: what the batch judge (:mod:`council.batching.judge`) asks for,
cut into batches, recorded in the run folder's journal, polled and read back. One sender per batching vendor.

- **Cutting**: the judge's votes wait, packed into requests only when a batch is cut (``source``), which is when
  none has come for ``batch.flush_s`` or a batch is full (``batch_max_requests``, the API's own limit, and the
  bytes :mod:`council.transport.batch_formats` allows); a batch goes out within the vendor's queue limits
  (``batch_queue_requests`` / ``batch_queue_tokens`` over its open batches, and what the provider says when its
  queue is full: the batch waits for one to end).
- **On disk, not in memory**: a batch is written to a file as its requests are made (one request's messages in
  memory at a time), uploaded from it and the file removed; its results are downloaded to a file and read back a
  line at a time. While a batch runs, a request is its custom id and the few fields of the votes that wait on it.
- **Durable**: each batch's requests, and the votes each asks for, are in the run folder's journal
  (:mod:`council.batching.journal`) before it is created, and its id right after. A sender built on a journal that
  already holds batches (a resumed run) finds first what became of the ones it never heard back about
  (:meth:`BatchApi.find`), and then never sends a vote again while a batch holding it may still succeed: it polls
  that batch, or reads the results of an ended one.
- **Polling**: open batches are polled at growing intervals (at most ``batch.poll_s``); a snapshot of every batch
  goes to ``batches.json`` at each poll, with its counts, age and expected end.
- **Lost requests**: an expired, cancelled or failed request is sent again, in a new batch, or as a chat call
  (``fallback``) when fewer than ``batch.sync_below`` remain or it was lost ``MAX_SENDS - 1`` times; with no
  fallback, a request lost ``MAX_SENDS`` times is handed back as lost. A batch that fails validation stops the
  vendor with the provider's reasons (:class:`ProviderUnavailable`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from council.batching.api import QUEUE_CODES, TRANSIENT_CODES, BatchApi, BatchGone, Polled, QueueFull, Unsure
from council.batching.journal import BatchEntry, Journal
from council.batching.results import FOLDER, breathing, expected_end, outcomes, resendable
from council.core import logs
from council.core.errors import ProviderError, ProviderUnavailable
from council.protocol.config import BatchSettings, VendorSettings
from council.transport.batch_formats import BatchError, BatchOutcome, BatchRequest
from council.transport.judge import Judge
from council.transport.shape import RequestShape
from council.transport.wire import Reply

MAX_SENDS = 3  # batches (or chat calls) one request is sent in before it is handed back as lost
FIRST_POLL_S = 0.25
_log = logs.get_logger("council.batch")


class Request(Protocol):
    """One request of a batch, as the judge makes it: its custom id, its prompt tokens (estimated), how often it
    was sent, whether it can be made again here (one of an earlier process cannot), and what to do with its
    outcome."""

    custom_id: str
    tokens: int
    sends: int
    rebuildable: bool

    def build(self) -> tuple[list[dict[str, Any]], int, dict[str, Any]]: ...  # messages, max_tokens, format

    def members(self) -> list[tuple[str, str]]: ...  # the (request key, row id) of its votes, in key order

    def done(self, outcome: BatchOutcome, batch_id: str | None) -> None: ...  # batch_id None: a chat call

    def fail(self, exc: BaseException) -> int: ...  # its votes fail with exc; returns how many


@dataclass(slots=True)
class _Open:
    """A batch this sender polls."""

    entry: BatchEntry
    polled: Polled | None = None
    next_poll: float = 0.0
    interval: float = FIRST_POLL_S


@dataclass
class BatchStats:
    batches: int = 0
    requests: int = 0
    votes: int = 0  # votes asked in those requests
    resent: int = 0
    sent_sync: int = 0
    shared: int = 0  # votes that shared a request with another vote of the same prompt
    read_again: int = 0  # votes read from a batch an earlier process of the run submitted
    queue_waits: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


class BatchSender:
    def __init__(self, vendor: str, shape: RequestShape, api: BatchApi, journal: Journal, *,
                 settings: VendorSettings, batch: BatchSettings, fallback: Judge | None = None,
                 source: Callable[[int], list[Request]] = lambda _: [], waiting: Callable[[], int] = lambda: 0) -> None:
        self.vendor = vendor
        self.shape = shape  # the seat's requests (council.transport.shape): the id sent, bounds, reasoning
        self.model = shape.model
        self.api = api
        self.journal = journal
        self.folder = journal.path.parent / FOLDER
        self.settings = settings
        self.batch = batch
        self.fallback = fallback
        self.source = source  # the judge's votes packed into up to n requests
        self.waiting = waiting  # requests the judge's waiting votes would make
        self.stats = BatchStats()
        self._wants: dict[str, Request] = {}  # custom id -> the request waiting for its outcome
        self._queued: dict[str, Request] = {}  # made, to go in the next batch, in order
        self._holder: dict[str, str] = {}  # custom id -> the local batch that holds it (the latest)
        self._open: dict[str, _Open] = {}
        self._reading: dict[str, asyncio.Task[None]] = {}  # ended batches of an earlier process being read again
        self._last_queued = 0.0
        self._queue_limit: int | None = None  # requests the provider's queue took before it said it was full
        self._wake = asyncio.Event()  # something to cut
        self._room = asyncio.Event()  # a batch ended: the queue may have room
        self._poke = asyncio.Event()  # a batch was submitted: poll soon
        self._tasks: list[asyncio.Task[Any]] = []
        self._ready: asyncio.Task[None] | None = None
        self._failed: ProviderUnavailable | None = None
        self._failures = 0  # creates in a row that failed with nothing made
        for entry in journal.of(vendor):
            if not entry.gone:
                for key in entry.keys:
                    self._holder[key] = entry.local
                if entry.open:
                    self._open[entry.local] = _Open(entry)

    # -- what the judge calls ----------------------------------------------------------------------------------
    def wake(self) -> None:
        """A vote is waiting: cut a batch once none has come for ``batch.flush_s`` (or one is full)."""
        self._start()
        self._last_queued = time.monotonic()
        self._wake.set()

    def held(self, key: str) -> tuple[str, int, list[str]] | None:
        """The request of an earlier process of the run that asked for the vote ``key`` and may still answer it: its
        custom id, the vote's position in it and its rows ([]: the vote alone); None when there is none."""
        found = self.journal.held(key)
        if found is None and key in self._holder and key not in self.journal.votes:
            found = (key, 0, [])  # a journal of one vote per request: the custom id is the vote's key
        return found if found is not None and found[0] in self._holder else None

    @property
    def waited(self) -> dict[str, Request]:
        """The requests waiting for their outcome, by custom id."""
        return self._wants

    def holds(self, custom_id: str) -> bool:
        """Whether a batch of the run that may still answer holds the request ``custom_id``."""
        return custom_id in self._holder

    def add(self, request: Request) -> None:
        """``request`` made by the judge outside a cut (a repair, a row asked again alone, or a request of an earlier
        process): it waits on the batch that holds it, is read from an ended one, or goes in the next batch."""
        self._start()
        if self._failed is not None:
            request.fail(ProviderUnavailable(str(self._failed), status=self._failed.status))
            return
        self._wants[request.custom_id] = request
        if self._ready is not None and not self._ready.done():
            self._ready.add_done_callback(lambda _: self._place(request))
        else:
            self._place(request)

    def cancel(self, exc: BaseException) -> int:
        """A stop: fail every request still waited for, at once. Those not in a batch yet are never sent; those in an
        open batch are not lost (the journal holds the batch: a resume polls it), but their answer may be hours
        away, longer than a stop's grace period is worth. Returns the votes failed."""
        wants = list(self._wants.values())
        self._wants.clear()
        self._queued.clear()
        return sum(request.fail(exc) for request in wants)

    async def close(self) -> None:
        """Stop polling and cutting; the provider's batches are left as they are (the journal holds them)."""
        for task in [*self._tasks, *self._reading.values()]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._reading.values(), return_exceptions=True)
        self._tasks.clear()
        self.journal.write_status()
        await self.api.close()  # the fallback's owner (the pool) closes it

    def open_batches(self) -> list[dict[str, Any]]:
        """The batches this sender waits on, as the run folder's snapshot shows them (for the progress display)."""
        return [asdict(o.entry) | {"keys": len(o.entry.keys)} for o in self._open.values()]

    # -- placing and delivering ----------------------------------------------------------------------------------
    def _place(self, request: Request) -> None:
        cid = request.custom_id
        if cid not in self._wants:  # failed or cancelled meanwhile
            return
        local = self._holder.get(cid)
        entry = self.journal.entries.get(local) if local else None
        if entry is not None and entry.open:
            return  # the poller delivers it
        if entry is not None and entry.ended_at is not None and not entry.gone and entry.batch_id:
            if local not in self._reading:
                self._reading[local] = asyncio.ensure_future(self._read_again(entry))
            return
        if not request.rebuildable:  # of an earlier process, in no batch that may answer: the judge asks anew
            self._deliver(cid, BatchError("gone", None, "its batch is gone"), None)
            return
        self._enqueue(request)

    def _enqueue(self, request: Request) -> None:
        self._queued[request.custom_id] = request
        self._last_queued = time.monotonic()
        self._wake.set()

    def _deliver(self, cid: str, outcome: BatchOutcome, batch_id: str | None) -> None:
        """Hand the outcome to the request waiting on it (a judge whose handling fails fails that request's votes,
        never the sender)."""
        request = self._wants.pop(cid, None)
        if request is None:
            return
        try:
            request.done(outcome, batch_id)
        except Exception as exc:  # noqa: BLE001 - the votes get it, the run goes on
            _log.error("batch.deliver_failed", vendor=self.vendor, error=f"{type(exc).__name__}: {exc}")
            request.fail(exc)

    def _fail(self, cids: list[str], exc: ProviderUnavailable) -> None:
        self._failed = self._failed or exc
        for cid in cids:
            request = self._wants.pop(cid, None)
            self._queued.pop(cid, None)
            if request is not None:
                request.fail(ProviderUnavailable(str(exc), status=exc.status))

    # -- the background work -----------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._tasks:
            return
        self._ready = asyncio.ensure_future(self._reconcile())
        self._tasks = [asyncio.create_task(self._cut(), name=f"batch-cut-{self.vendor}"),
                       asyncio.create_task(self._poll(), name=f"batch-poll-{self.vendor}"), self._ready]
        for task in self._tasks:
            task.add_done_callback(self._crashed)

    def _crashed(self, task: asyncio.Task[Any]) -> None:
        """A background task that ends in an error fails every waiting vote (none is left waiting forever)."""
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        _log.error("batch.failed", vendor=self.vendor, error=f"{type(exc).__name__}: {exc}")
        failure = exc if isinstance(exc, ProviderUnavailable) else ProviderUnavailable(
            f"{self.vendor}: the batch transport failed: {type(exc).__name__}: {exc}")
        self._fail(list(self._wants), failure)
        for request in self.source(1 << 30):  # the votes still waiting in the judge fail too
            request.fail(failure)

    async def _reconcile(self) -> None:
        """What became of the batches an earlier process of the run announced but never heard back about."""
        for entry in self.journal.of(self.vendor):
            if not entry.unconfirmed:
                continue
            try:
                batch_id = await self.api.find(entry.local, entry.intent_at, len(entry.keys), self._known())
            except ProviderError as exc:  # sending its keys again could pay for them twice: the run stops
                raise ProviderUnavailable(f"{self.vendor}: cannot tell whether batch {entry.local} was made "
                                          f"(its create never answered): {exc}") from None
            if batch_id is None:
                self._gone(entry)
            else:
                self.journal.submitted(entry.local, batch_id, None, None)
                self._open[entry.local] = _Open(entry)
                _log.info("batch.found", vendor=self.vendor, batch_id=batch_id, requests=len(entry.keys))
        self._poke.set()

    def _known(self) -> frozenset[str]:
        """The provider ids of every batch the run's journal holds."""
        return frozenset(e.batch_id for e in self.journal.entries.values() if e.batch_id)

    def _gone(self, entry: BatchEntry) -> None:
        self.journal.gone(entry.local)
        self._open.pop(entry.local, None)
        for key in entry.keys:
            if self._holder.get(key) == entry.local:
                del self._holder[key]

    def _room_now(self) -> tuple[int, int | None]:
        """Requests and prompt tokens the vendor's queue takes now (None: no token limit)."""
        open_tokens = sum(o.entry.tokens for o in self._open.values())
        limits = [x for x in (self.settings.batch_queue_requests, self._queue_limit) if x]
        requests = min(limits) - self._open_requests() if limits else 1 << 62
        tokens = self.settings.batch_queue_tokens - open_tokens if self.settings.batch_queue_tokens else None
        return requests, tokens

    async def _cut(self) -> None:
        if self._ready is not None:
            await asyncio.shield(self._ready)
        most = self.api.max_requests
        while True:
            ready = len(self._queued) + self.waiting()
            if not ready:
                self._wake.clear()
                await self._wake.wait()
                continue
            idle = self.batch.flush_s - (time.monotonic() - self._last_queued)
            if idle > 0 and ready < most:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), idle)
                except TimeoutError:
                    pass
                continue
            room, room_tokens = self._room_now()
            taken = self._take(min(most, room), room_tokens)
            if not taken:  # the queue is full: wait for a batch to end
                self.stats.queue_waits += 1
                self._room.clear()
                if not self._open:
                    first = next(iter(self._queued.values()), None)
                    over = room_tokens is not None and first is not None
                    if over and first.tokens > self.settings.batch_queue_tokens:
                        self._fail([first.custom_id], ProviderUnavailable(
                            f"{self.vendor}: a request of about {first.tokens} tokens is over batch_queue_tokens "
                            f"({self.settings.batch_queue_tokens})"))
                        continue
                    await asyncio.sleep(self.batch.poll_s)  # someone else's batches fill the queue
                    continue
                await self._room.wait()
                continue
            await self._send(taken)
            del taken  # its requests wait in _wants, not in this frame until the next cut (their records with them)

    def _take(self, most: int, room_tokens: int | None) -> list[Request]:
        """Up to ``most`` requests for the next batch within ``room_tokens``: those made already first, then the
        judge's waiting votes packed into requests (those that do not fit wait, made, for the next)."""
        if most <= 0:
            return []
        if len(self._queued) < most:
            for request in self.source(most - len(self._queued)):
                self._wants[request.custom_id] = request
                self._queued[request.custom_id] = request
        taken: list[Request] = []
        tokens = 0
        for request in self._queued.values():
            if len(taken) >= most or (room_tokens is not None and tokens + request.tokens > room_tokens):
                break
            taken.append(request)
            tokens += request.tokens
        for request in taken:
            del self._queued[request.custom_id]
        return taken

    def _bodies(self, requests: list[Request]) -> Iterator[BatchRequest]:
        """Each request's body, made as it is written to disk (one in memory at a time)."""
        for request in requests:
            messages, max_tokens, response_format = request.build()
            yield BatchRequest(request.custom_id, self.model, messages, self.shape.temperature or 0.0, max_tokens,
                               response_format, self.shape)

    async def _send(self, requests: list[Request]) -> None:
        """``requests`` as one or more batches (as the provider's size limits cut them), each in the journal first."""
        by_id = {r.custom_id: r for r in requests}
        try:
            packs = self.api.spool(self._bodies(requests), self.folder)
        except (ValueError, OSError) as exc:
            self._fail(list(by_id), ProviderUnavailable(f"{self.vendor}: cannot make a batch: {exc}"))
            return
        for packed in packs:
            try:
                await self._create(packed, [by_id[k] for k in packed.custom_ids])
            finally:
                packed.path.unlink(missing_ok=True)
        self.journal.write_status()

    async def _create(self, packed: Any, requests: list[Request]) -> None:
        keys = list(packed.custom_ids)
        tokens = sum(r.tokens for r in requests)
        local = f"cb-{uuid.uuid4().hex[:16]}"
        entry = self.journal.intend(local, self.vendor, self.api.api, packed.model, keys, tokens,
                                    {r.custom_id: r.members() for r in requests})
        try:
            batch_id, file_id, created = await self.api.create(packed, local)
        except QueueFull as exc:
            self._queue_limit = self._learned_limit(len(keys))
            _log.info("batch.queue_full", vendor=self.vendor, open=len(self._open), error=str(exc))
            # others' batches fill the queue when none of ours is open: wait longer each time it stays full
            await self._not_made(entry, requests, pause=not self._open)
            return
        except Unsure as exc:
            batch_id = await self.api.find(local, entry.intent_at, len(keys), self._known())
            if batch_id is None:
                _log.warning("batch.create_failed", vendor=self.vendor, error=str(exc))
                await self._not_made(entry, requests, pause=True)
                return
            file_id, created = None, None
        except ProviderUnavailable as exc:
            self._gone(entry)
            self._fail(keys, exc)
            return
        except BatchGone as exc:  # 404 to a create: no such endpoint here
            self._gone(entry)
            self._fail(keys, ProviderUnavailable(f"{exc} (does this provider serve a batch API?)", status=404))
            return
        except ProviderError as exc:  # the upload failed, or the create was refused: nothing was made
            _log.warning("batch.create_failed", vendor=self.vendor, error=str(exc))
            await self._not_made(entry, requests, pause=True)
            return
        self.journal.submitted(local, batch_id, file_id, created)
        self._failures = 0
        for request in requests:
            self._holder[request.custom_id] = local
            request.sends += 1
        self._open[local] = _Open(entry)
        self.stats.batches += 1
        self.stats.requests += len(keys)
        _log.info("batch.submitted", vendor=self.vendor, batch_id=batch_id, requests=len(keys), tokens=tokens)
        self._poke.set()

    async def _not_made(self, entry: BatchEntry, requests: list[Request], *, pause: bool) -> None:
        """A batch the provider did not make: its requests go first into the next one, after a pause that grows
        while creates keep failing (``pause``)."""
        self._gone(entry)
        if pause:
            self._failures += 1
            await asyncio.sleep(min(self.batch.poll_s, FIRST_POLL_S * 2 ** self._failures))
        self._requeue(requests, front=True)

    def _learned_limit(self, refused: int) -> int:
        """Requests the provider's queue is taken to hold after it refused a batch of ``refused``: what is open now,
        or half the refused batch when nothing of ours is open (forgotten when a batch of ours ends)."""
        return self._open_requests() or max(1, refused // 2)

    def _open_requests(self) -> int:
        return sum(len(o.entry.keys) for o in self._open.values())

    def _requeue(self, requests: list[Request], *, front: bool = False) -> None:
        """``requests`` into the next batch (first, with ``front``); one that cannot be made here goes back to the
        judge, which asks its votes anew."""
        lost = [r for r in requests if not r.rebuildable]
        for request in lost:
            self._deliver(request.custom_id, BatchError("gone", None, "its batch is gone"), None)
        fresh = {r.custom_id: r for r in requests if r.rebuildable and r.custom_id in self._wants}
        if front:
            self._queued = fresh | {k: v for k, v in self._queued.items() if k not in fresh}
        else:
            self._queued.update(fresh)
        self._wake.set()

    async def _poll(self) -> None:
        if self._ready is not None:
            await asyncio.shield(self._ready)
        while True:
            if not self._open:
                self._poke.clear()
                await self._poke.wait()
                continue
            now = time.monotonic()
            due = [o for o in self._open.values() if o.next_poll <= now]
            if not due:
                self._poke.clear()
                wait = min(o.next_poll for o in self._open.values()) - now
                try:
                    await asyncio.wait_for(self._poke.wait(), wait)
                except TimeoutError:
                    pass
                continue
            await asyncio.gather(*(self._poll_one(o) for o in due))
            self.journal.write_status()

    async def _poll_one(self, one: _Open) -> None:
        entry = one.entry
        try:
            polled = await self.api.poll(entry.batch_id)
        except BatchGone:
            _log.warning("batch.gone", vendor=self.vendor, batch_id=entry.batch_id)
            self._gone(entry)
            self._requeue([self._wants[k] for k in entry.keys if k in self._wants])
            return
        except ProviderUnavailable as exc:
            self._fail([k for k in entry.keys if k in self._wants], exc)
            self._open.pop(entry.local, None)
            return
        except ProviderError as exc:  # polled again later
            _log.warning("batch.poll_failed", vendor=self.vendor, batch_id=entry.batch_id, error=str(exc))
            polled = None
        one.interval = min(self.batch.poll_s, one.interval * 2)
        one.next_poll = time.monotonic() + one.interval
        if polled is None:
            return
        one.polled = polled
        entry.status, entry.counts = polled.status, polled.counts
        entry.created_at = entry.created_at or polled.created_at
        entry.expected_end = expected_end(polled, time.time())
        if polled.ended:
            await self._ended(one, polled)

    def _results_path(self, entry: BatchEntry) -> Path:
        return self.folder / f"{entry.local}.results.jsonl"

    async def _ended(self, one: _Open, polled: Polled) -> None:
        entry = one.entry
        codes = {code for code, _ in polled.errors}
        if polled.status == "failed" and polled.errors and not (codes & (QUEUE_CODES | TRANSIENT_CODES)):
            why = "; ".join(message for _, message in polled.errors[:5])
            self.journal.ended(entry.local, polled.status, polled.counts, None, None, [m for _, m in polled.errors])
            self._open.pop(entry.local)
            self._fail([k for k in entry.keys if k in self._wants],
                       ProviderUnavailable(f"{self.vendor}: batch {entry.batch_id} failed validation: {why}"))
            return
        path = self._results_path(entry)
        try:
            if polled.status != "failed":
                self.folder.mkdir(parents=True, exist_ok=True)
                await self.api.download(entry.batch_id, polled, path)
        except ProviderError as exc:
            _log.warning("batch.results_failed", vendor=self.vendor, batch_id=entry.batch_id, error=str(exc))
            return  # read at the next poll
        self.journal.ended(entry.local, polled.status, polled.counts, polled.output_file_id, polled.error_file_id,
                           [m for _, m in polled.errors])
        self._open.pop(entry.local)
        self.stats.by_status[polled.status] = self.stats.by_status.get(polled.status, 0) + 1
        queue_full = bool(codes & QUEUE_CODES)
        self._queue_limit = self._learned_limit(len(entry.keys)) if queue_full else None
        _log.info("batch.ended", vendor=self.vendor, batch_id=entry.batch_id, status=polled.status, **polled.counts)
        again: list[Request] = []
        unread = 0
        async for cid, outcome in breathing(outcomes(self.api.api, self.vendor, entry,
                                                     path if polled.status != "failed" else None)):
            request = self._wants.get(cid)
            if request is None or self._holder.get(cid) != entry.local:
                unread += 1
            elif queue_full:  # never enqueued: not a send
                request.sends -= 1
                again.append(request)
            elif resendable(outcome) and request.sends < MAX_SENDS and request.rebuildable:
                again.append(request)
            else:
                self._deliver(cid, outcome, entry.batch_id)
        if not unread:
            path.unlink(missing_ok=True)
        self._room.set()
        if again:
            self.stats.resent += len(again)
            few = len(again) < self.batch.sync_below and not self._queued
            chat = [r for r in again if self.fallback is not None and (few or r.sends >= MAX_SENDS - 1)]
            self._requeue([r for r in again if r not in chat])
            await asyncio.gather(*(self._send_sync(r) for r in chat))

    async def _read_again(self, entry: BatchEntry) -> None:
        """The results of an ended batch an earlier process of the run submitted, read (again: from the run folder,
        else from the provider) for the requests now waiting on it; a request lost there goes in a new batch."""
        try:
            await asyncio.sleep(self.batch.flush_s)  # the votes of a resumed run come in over a moment: one read
            path = self._results_path(entry)
            if not path.is_file():
                if entry.status == "failed":
                    path = None
                else:
                    polled = Polled(entry.status or "", True, entry.counts, output_file_id=entry.output_file_id,
                                    error_file_id=entry.error_file_id)
                    self.folder.mkdir(parents=True, exist_ok=True)
                    try:
                        await self.api.download(entry.batch_id, polled, path)
                    except BatchGone:
                        self._gone(entry)
                        path = None
            lost: list[Request] = []
            async for cid, outcome in breathing(outcomes(self.api.api, self.vendor, entry, path)):
                request = self._wants.get(cid)
                if request is None or self._holder.get(cid) != entry.local:
                    continue
                if resendable(outcome):
                    lost.append(request)
                else:
                    self._deliver(cid, outcome, entry.batch_id)
            for request in lost:
                self._holder.pop(request.custom_id, None)
            self._requeue(lost)
        except ProviderError as exc:
            waiting = [k for k in entry.keys if k in self._wants and self._holder.get(k) == entry.local]
            self._fail(waiting, exc if isinstance(exc, ProviderUnavailable) else ProviderUnavailable(
                f"{self.vendor}: results of batch {entry.batch_id}: {exc}"))
        finally:
            self._reading.pop(entry.local, None)
        for cid in [k for k in entry.keys if k in self._wants and self._holder.get(k) == entry.local]:
            self._place(self._wants[cid])  # came while it was read: read once more

    async def _send_sync(self, request: Request) -> None:
        """A request sent again as a chat call (few remain: a batch would wait longer than it is worth)."""
        assert self.fallback is not None
        messages, max_tokens, response_format = request.build()
        self.stats.sent_sync += 1
        try:
            result = await self.fallback.client.chat(self.model, messages, max_tokens=max_tokens,
                                                     response_format=response_format, shape=self.shape)
        except ProviderUnavailable as exc:
            self._fail([request.custom_id], exc)
            return
        except ProviderError as exc:
            self._deliver(request.custom_id, BatchError("chat_error", exc.status, str(exc)), None)
            return
        self._deliver(request.custom_id, Reply(result.content, result.finish_reason, result.usage), None)

