"""A vendor's requests on its provider's batch API: what the batch judge (:mod:`council.batching.judge`) asks for,
cut into batches, recorded in the run folder's journal, polled and read back. One sender per batching vendor.

- **Cutting**: requests are gathered until none has come for ``batch.flush_s`` or a batch is full
  (``batch_max_requests``, the API's own limit, and the bytes :mod:`council.transport.batch_formats` allows),
  then sent as a batch, within the vendor's queue limits (``batch_queue_requests`` / ``batch_queue_tokens`` over
  its open batches, and what the provider says when its queue is full: the batch waits for one to end).
- **Durable**: each batch's keys are in the run folder's journal (:mod:`council.batching.journal`) before it is
  created, and its id right after. A sender built on a journal that already holds batches (a resumed run) finds
  first what became of the ones it never heard back about (:meth:`BatchApi.find`), and then never sends a key
  again while a batch holding it may still succeed: it polls that batch, or reads the results of an ended one.
- **Polling**: open batches are polled at growing intervals (at most ``batch.poll_s``); a snapshot of every batch
  goes to ``batches.json`` at each poll, with its counts, age and expected end.
- **Lost requests**: an expired, cancelled or failed request is sent again, in a new batch, or as a chat call
  (``fallback``) when fewer than ``batch.sync_below`` remain or it was lost ``MAX_SENDS - 1`` times; with no
  fallback, a request lost ``MAX_SENDS`` times is handed back as lost. A batch that fails validation stops the
  vendor with the provider's reasons (:class:`ProviderUnavailable`).
- **Shared requests**: two votes asking for the same custom id share one request; each learns how many shared it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from council.batching.api import QUEUE_CODES, TRANSIENT_CODES, BatchApi, BatchGone, Polled, QueueFull, Unsure
from council.batching.journal import BatchEntry, Journal
from council.core import logs
from council.core.errors import ProviderError, ProviderUnavailable
from council.protocol.config import BatchSettings, VendorSettings
from council.transport.batch_formats import BatchError, BatchOutcome, BatchRequest
from council.transport.judge import Judge
from council.transport.quota import estimate_tokens
from council.transport.shape import RequestShape
from council.transport.wire import Reply

MAX_SENDS = 3  # batches (or chat calls) one request is sent in before it is handed back as lost
RESEND = frozenset({"batch_expired", "batch_cancelled", "expired", "canceled", "missing", "api_error",
                    "overloaded_error", "server_error", "rate_limit_error", "malformed_result"})
FIRST_POLL_S = 0.25
_log = logs.get_logger("council.batch")


@dataclass(slots=True)
class _Want:
    """A request whose outcome some votes wait for."""

    request: BatchRequest  # its messages are dropped once a batch holds it (remade to send it again)
    remake: Callable[[], list[dict[str, Any]]]
    tokens: int
    future: asyncio.Future[tuple[BatchOutcome, str | None, int]]
    sharers: int = 0  # votes waiting on it
    sends: int = 0  # times sent so far (this run)


@dataclass(slots=True)
class _Open:
    """A batch this judge polls."""

    entry: BatchEntry
    polled: Polled | None = None
    next_poll: float = 0.0
    interval: float = FIRST_POLL_S


@dataclass
class BatchStats:
    batches: int = 0
    requests: int = 0
    resent: int = 0
    sent_sync: int = 0
    shared: int = 0
    read_again: int = 0  # results read from a batch an earlier process of the run submitted
    queue_waits: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


class BatchSender:
    def __init__(self, vendor: str, shape: RequestShape, api: BatchApi, journal: Journal, *,
                 settings: VendorSettings, batch: BatchSettings, fallback: Judge | None = None) -> None:
        self.vendor = vendor
        self.shape = shape  # the seat's requests (council.transport.shape): the id sent, bounds, reasoning
        self.model = shape.model
        self.api = api
        self.journal = journal
        self.settings = settings
        self.batch = batch
        self.fallback = fallback
        self.stats = BatchStats()
        self._wants: dict[str, _Want] = {}
        self._queued: dict[str, _Want] = {}  # to go in the next batch, in order
        self._holder: dict[str, str] = {}  # custom id -> the local batch that holds it (the latest)
        self._open: dict[str, _Open] = {}
        self._kept: dict[str, dict[str, BatchOutcome]] = {}  # an ended batch's outcomes not yet taken
        self._last_queued = 0.0
        self._queue_limit: int | None = None  # requests the provider's queue took before it said it was full
        self._wake = asyncio.Event()  # something to cut
        self._room = asyncio.Event()  # a batch ended: the queue may have room
        self._poke = asyncio.Event()  # a batch was submitted: poll soon
        self._tasks: list[asyncio.Task[Any]] = []
        self._ready: asyncio.Task[None] | None = None
        self._failed: ProviderUnavailable | None = None
        self._failures = 0  # creates in a row that failed with nothing made
        self._charged_ids: set[int] = set()  # hashes of the custom ids delivered by this process
        for entry in journal.of(vendor):
            if not entry.gone:
                for key in entry.keys:
                    self._holder[key] = entry.local
                if entry.open:
                    self._open[entry.local] = _Open(entry)

    def cancel(self, exc: BaseException) -> int:
        """A stop: fail every request still waited for, at once. Those not in a batch yet are never sent; those in an
        open batch are not lost (the journal holds the batch: a resume polls it), but their answer may be hours
        away, longer than a stop's grace period is worth."""
        cancelled = 0
        for cid, want in list(self._wants.items()):
            del self._wants[cid]
            self._queued.pop(cid, None)
            if not want.future.done():
                want.future.set_exception(exc)
                cancelled += want.sharers
        return cancelled

    async def close(self) -> None:
        """Stop polling and cutting; the provider's batches are left as they are (the journal holds them)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self.journal.write_status()
        await self.api.close()  # the fallback's owner (the pool) closes it

    def open_batches(self) -> list[dict[str, Any]]:
        """The batches this judge waits on, as the run folder's snapshot shows them (for the progress display)."""
        return [asdict(o.entry) | {"keys": len(o.entry.keys)} for o in self._open.values()]

    async def outcome(self, cid: str, messages: Callable[[], list[dict[str, Any]]], max_tokens: int,
                       response_format: dict[str, Any]) -> tuple[BatchOutcome, str | None, tuple[int, int]]:
        """The outcome of the request ``cid`` (its ``messages`` made when it is sent), the batch that carried it
        (None: a chat call), and this vote's share of it (its index, of how many votes waited on it; (0, 0) when an earlier vote of
        this process was charged for it). Raises :class:`ProviderUnavailable` when the vendor cannot be used."""
        self._start()
        want = self._wants.get(cid)
        index = 0
        if want is None:
            loop = asyncio.get_running_loop()
            request = BatchRequest(cid, self.model, messages(), self.shape.temperature or 0.0, max_tokens,
                                   response_format, self.shape)
            tokens = estimate_tokens(request.messages, max_tokens + self.shape.headroom)
            want = self._wants[cid] = _Want(request, messages, tokens, loop.create_future(), sharers=1)
            del request  # the want holds it, and drops its messages once a batch holds them
            if self._ready is not None and not self._ready.done():
                await asyncio.shield(self._ready)
            if self._failed is not None:
                self._wants.pop(cid, None)
                raise ProviderUnavailable(str(self._failed), status=self._failed.status)
            await self._place(want)
        else:
            self.stats.shared += 1
            index = want.sharers
            want.sharers += 1
        outcome, batch_id, sharers = await asyncio.shield(want.future)
        return outcome, batch_id, (index, sharers)

    async def _place(self, want: _Want) -> None:
        """Wait on the batch that holds the request, read it from an ended one, or queue it for the next."""
        cid = want.request.custom_id
        local = self._holder.get(cid)
        entry = self.journal.entries.get(local) if local else None
        if entry is not None and entry.open:
            return  # the poller delivers it
        if entry is not None and entry.ended_at is not None and not entry.gone:
            outcome = await self._kept_outcome(entry, cid)
            if outcome is not None and not _resendable(outcome):
                self.stats.read_again += 1
                self._deliver(cid, outcome, entry.batch_id)
                return
        self._enqueue(want)

    def _enqueue(self, want: _Want) -> None:
        self._queued[want.request.custom_id] = want
        self._last_queued = time.monotonic()
        self._wake.set()

    def _deliver(self, cid: str, outcome: BatchOutcome, batch_id: str | None) -> None:
        """Hand the outcome to the votes waiting on it. A request this process already delivered once (two rows
        with the same prompt, the second asked after the first's batch ended) is charged to the first: the later
        votes get the answer with no usage of their own."""
        want = self._wants.pop(cid, None)
        if want is not None and not want.future.done():
            mark = hash(cid)
            sharers = 0 if mark in self._charged_ids else want.sharers
            self._charged_ids.add(mark)
            want.future.set_result((outcome, batch_id, sharers))

    def _fail(self, cids: list[str], exc: ProviderUnavailable) -> None:
        self._failed = self._failed or exc
        for cid in cids:
            want = self._wants.pop(cid, None)
            self._queued.pop(cid, None)
            if want is not None and not want.future.done():
                want.future.set_exception(ProviderUnavailable(str(exc), status=exc.status))

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
        self._fail(list(self._wants), exc if isinstance(exc, ProviderUnavailable) else ProviderUnavailable(
            f"{self.vendor}: the batch transport failed: {type(exc).__name__}: {exc}"))

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
            if not self._queued:
                self._wake.clear()
                await self._wake.wait()
                continue
            idle = self.batch.flush_s - (time.monotonic() - self._last_queued)
            if idle > 0 and len(self._queued) < most:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), idle)
                except TimeoutError:
                    pass
                continue
            room, room_tokens = self._room_now()
            taken: list[_Want] = []
            tokens = 0
            for want in self._queued.values():
                if len(taken) >= min(most, room) or (room_tokens is not None and tokens + want.tokens > room_tokens):
                    break
                taken.append(want)
                tokens += want.tokens
            if not taken:  # the queue is full: wait for a batch to end
                self.stats.queue_waits += 1
                self._room.clear()
                if not self._open:
                    want = next(iter(self._queued.values()))
                    if room_tokens is not None and want.tokens > self.settings.batch_queue_tokens:
                        self._fail([want.request.custom_id], ProviderUnavailable(
                            f"{self.vendor}: a request of about {want.tokens} tokens is over batch_queue_tokens "
                            f"({self.settings.batch_queue_tokens})"))
                        continue
                    await asyncio.sleep(self.batch.poll_s)  # someone else's batches fill the queue
                    continue
                await self._room.wait()
                continue
            for want in taken:
                del self._queued[want.request.custom_id]
            await self._send(taken)

    async def _send(self, wants: list[_Want]) -> None:
        """``wants`` as one or more batches (as the provider's size limits cut them), each in the journal first."""
        by_id = {w.request.custom_id: w for w in wants}
        try:
            packs = self.api.pack([w.request for w in wants])
        except ValueError as exc:
            self._fail(list(by_id), ProviderUnavailable(f"{self.vendor}: cannot make a batch: {exc}"))
            return
        for packed in packs:
            keys = list(packed.custom_ids)
            tokens = sum(by_id[k].tokens for k in keys)
            local = f"cb-{uuid.uuid4().hex[:16]}"
            entry = self.journal.intend(local, self.vendor, self.api.api, packed.model, keys, tokens)
            try:
                batch_id, file_id, created = await self.api.create(packed, local)
            except QueueFull as exc:
                self._queue_limit = self._learned_limit(len(keys))
                _log.info("batch.queue_full", vendor=self.vendor, open=len(self._open), error=str(exc))
                # others' batches fill the queue when none of ours is open: wait longer each time it stays full
                await self._not_made(entry, [by_id[k] for k in keys], pause=not self._open)
                continue
            except Unsure as exc:
                batch_id = await self.api.find(local, entry.intent_at, len(keys), self._known())
                if batch_id is None:
                    _log.warning("batch.create_failed", vendor=self.vendor, error=str(exc))
                    await self._not_made(entry, [by_id[k] for k in keys], pause=True)
                    continue
                file_id, created = None, None
            except ProviderUnavailable as exc:
                self._gone(entry)
                self._fail(keys, exc)
                continue
            except BatchGone as exc:  # 404 to a create: no such endpoint here
                self._gone(entry)
                self._fail(keys, ProviderUnavailable(f"{exc} (does this provider serve a batch API?)", status=404))
                continue
            except ProviderError as exc:  # the upload failed, or the create was refused: nothing was made
                _log.warning("batch.create_failed", vendor=self.vendor, error=str(exc))
                await self._not_made(entry, [by_id[k] for k in keys], pause=True)
                continue
            self.journal.submitted(local, batch_id, file_id, created)
            self._failures = 0
            for key in keys:
                self._holder[key] = local
                want = by_id[key]
                want.sends += 1
                want.request = dataclasses.replace(want.request, messages=[])  # held by the batch now
            self._open[local] = _Open(entry)
            self.stats.batches += 1
            self.stats.requests += len(keys)
            _log.info("batch.submitted", vendor=self.vendor, batch_id=batch_id, requests=len(keys), tokens=tokens)
            self._poke.set()
        self.journal.write_status()

    async def _not_made(self, entry: BatchEntry, wants: list[_Want], *, pause: bool) -> None:
        """A batch the provider did not make: its requests go first into the next one, after a pause that grows
        while creates keep failing (``pause``)."""
        self._gone(entry)
        if pause:
            self._failures += 1
            await asyncio.sleep(min(self.batch.poll_s, FIRST_POLL_S * 2 ** self._failures))
        self._requeue(wants, front=True)

    def _learned_limit(self, refused: int) -> int:
        """Requests the provider's queue is taken to hold after it refused a batch of ``refused``: what is open now,
        or half the refused batch when nothing of ours is open (forgotten when a batch of ours ends)."""
        return self._open_requests() or max(1, refused // 2)

    def _open_requests(self) -> int:
        return sum(len(o.entry.keys) for o in self._open.values())

    def _requeue(self, wants: list[_Want], *, front: bool = False) -> None:
        for want in wants:
            _remade(want)
        if front:
            rest = dict(self._queued)
            self._queued.clear()
            self._queued.update({w.request.custom_id: w for w in wants})
            self._queued.update(rest)
        else:
            self._queued.update({w.request.custom_id: w for w in wants})
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
        try:
            outcomes = await self.api.results(entry.batch_id, polled) if polled.status != "failed" else {}
        except ProviderError as exc:
            _log.warning("batch.results_failed", vendor=self.vendor, batch_id=entry.batch_id, error=str(exc))
            return  # read at the next poll
        self.journal.ended(entry.local, polled.status, polled.counts, polled.output_file_id, polled.error_file_id,
                           [m for _, m in polled.errors])
        self._open.pop(entry.local)
        self.stats.by_status[polled.status] = self.stats.by_status.get(polled.status, 0) + 1
        self._queue_limit = self._learned_limit(len(entry.keys)) if codes & QUEUE_CODES else None
        _log.info("batch.ended", vendor=self.vendor, batch_id=entry.batch_id, status=polled.status, **polled.counts)
        again: list[_Want] = []
        kept: dict[str, BatchOutcome] = {}
        queue_full = bool(codes & QUEUE_CODES)
        for key in entry.keys:
            outcome = outcomes.get(key) or BatchError("missing", None, f"no result in batch ({polled.status})")
            want = self._wants.get(key)
            if want is None:
                kept[key] = outcome
            elif queue_full:  # never enqueued: not a send
                want.sends -= 1
                again.append(want)
            elif _resendable(outcome) and want.sends < MAX_SENDS:
                again.append(want)
            else:
                self._deliver(key, outcome, entry.batch_id)
        if kept:
            self._kept[entry.local] = kept
        self._room.set()
        if again:
            self.stats.resent += len(again)
            few = len(again) < self.batch.sync_below and not self._queued
            chat = [w for w in again if self.fallback is not None and (few or w.sends >= MAX_SENDS - 1)]
            self._requeue([w for w in again if w not in chat])
            await asyncio.gather(*(self._send_sync(w) for w in chat))

    async def _send_sync(self, want: _Want) -> None:
        """A request sent again as a chat call (few remain: a batch would wait longer than it is worth)."""
        assert self.fallback is not None
        r = _remade(want).request
        self.stats.sent_sync += 1
        try:
            result = await self.fallback.client.chat(r.model, r.messages, max_tokens=r.max_tokens,
                                                     response_format=r.response_format, shape=r.shape)
        except ProviderUnavailable as exc:
            self._fail([r.custom_id], exc)
            return
        except ProviderError as exc:
            self._deliver(r.custom_id, BatchError("chat_error", exc.status, str(exc)), None)
            return
        self._deliver(r.custom_id, Reply(result.content, result.finish_reason, result.usage), None)

    async def _kept_outcome(self, entry: BatchEntry, cid: str) -> BatchOutcome | None:
        """The outcome of ``cid`` in the ended batch ``entry``: kept since it ended, else read again from the
        provider (an earlier process of the run polled it, or an earlier vote of this one took it)."""
        kept = self._kept.get(entry.local)
        if kept is None or cid not in kept:
            if entry.status == "failed" or entry.batch_id is None:
                return None
            polled = Polled(entry.status or "", True, entry.counts, output_file_id=entry.output_file_id,
                            error_file_id=entry.error_file_id)
            try:
                kept = self._kept[entry.local] = await self.api.results(entry.batch_id, polled)
            except BatchGone:
                self._gone(entry)
                return None
        outcome = kept.pop(cid, None)
        if not kept:
            self._kept.pop(entry.local, None)
        return outcome


def _remade(want: _Want) -> _Want:
    """``want`` with its request's messages, made again if a batch held it."""
    if not want.request.messages:
        want.request = dataclasses.replace(want.request, messages=want.remake())
    return want


def _resendable(outcome: BatchOutcome) -> bool:
    return isinstance(outcome, BatchError) and (outcome.code in RESEND or (outcome.status or 0) >= 500
                                                or outcome.status == 429)


def expected_end(polled: Polled, now: float) -> float | None:
    """When the batch should end, from its progress so far; None before any request is done (then at the latest
    ``expires_at``)."""
    if polled.ended:
        return None
    total = polled.counts.get("total", 0)
    done = polled.counts.get("succeeded", 0) + polled.counts.get("errored", 0)
    if not total or not done or polled.created_at is None or now <= polled.created_at:
        return polled.expires_at
    return polled.created_at + (now - polled.created_at) * total / done
