"""A per-vendor circuit breaker: once a vendor cannot be used, stop sending it requests.

One breaker per :class:`council.transport.client.ChatClient` (per vendor judge, per elicitor). Its rules:

- **closed** (normal): every attempt goes through. A success clears the failure streak (and closes an
  open breaker too: a request sent before it opened that comes back answered shows the vendor answers).
- It **opens** at once on a permanent failure (connection refused, unknown host, TLS failure, 401, 403,
  404, unknown model), or when transient failures (429, 5xx, timeouts, resets, unreadable bodies) have
  gone on with no success for ``window_s`` seconds and number at least ``min_failures`` attempts in a row.
- **open**: every attempt, queued or new, fails at once with :class:`ProviderUnavailable` naming the cause
  that opened it; no request is sent. Callers sleeping before a retry are woken and fail too.
- **half-open**: ``cooldown_s`` after opening, the next attempt is let through as the one probe (others
  still fail at once). A probe that succeeds closes the breaker; one that fails opens it again.

Requests that the provider answered but refused for their own content (another 4xx) say nothing about the
vendor's health: they neither clear nor extend the streak (but a probe so answered closes the breaker).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from council.core.errors import ProviderUnavailable

Clock = Callable[[], float]


class Breaker:
    def __init__(self, *, window_s: float = 60.0, min_failures: int = 10, cooldown_s: float = 30.0,
                 clock: Clock = time.monotonic) -> None:
        self.window_s = window_s
        self.min_failures = min_failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.state = "closed"
        self.cause: str | None = None  # why it opened: one line, the client's message prefix included
        self.opened = 0  # how many times it opened
        self._streak = 0  # failed attempts since the last success
        self._streak_since: float | None = None  # when the first of them failed
        self._opened_at = 0.0
        self._probing = False
        self._event: asyncio.Event | None = None

    @property
    def opened_at(self) -> float:
        """When it last opened (on its clock)."""
        return self._opened_at

    # -- asking ------------------------------------------------------------------------------------------
    def before(self) -> bool:
        """May an attempt be sent now? Raises :class:`ProviderUnavailable` if not; returns True when the
        attempt is the half-open probe (report its outcome with :meth:`success` or a failure)."""
        if self.state == "closed":
            return False
        if self.state == "open" and self._clock() - self._opened_at >= self.cooldown_s and not self._probing:
            self.state = "half_open"
        if self.state == "half_open" and not self._probing:
            self._probing = True
            return True
        raise self.error()

    def error(self) -> ProviderUnavailable:
        return ProviderUnavailable(f"{self.cause} [circuit open]" if self.cause else "circuit open")

    def probe_done(self) -> None:
        """The probe ended without a verdict on the vendor (cancelled): let another one through."""
        if self._probing:
            self._probing = False
            if self.state == "half_open":
                self.state = "open"
                self._opened_at = self._clock() - self.cooldown_s

    async def sleep(self, seconds: float) -> None:
        """Wait before a retry; wake early (and raise) if the breaker opens meanwhile."""
        self.check()
        if seconds <= 0:
            return
        event = self._opened_event()
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            pass
        self.check()

    def check(self) -> None:
        """Raise if the breaker is open (without claiming the probe)."""
        if self.state != "closed" and not (self.state == "open" and self._clock() - self._opened_at >= self.cooldown_s):
            raise self.error()

    # -- reporting ---------------------------------------------------------------------------------------
    def success(self) -> None:
        self._streak, self._streak_since = 0, None
        self._probing = False
        if self.state != "closed":
            self.state, self.cause = "closed", None
            self._event = None

    def failure(self, cause: str) -> None:
        """A transient failure (``cause`` is the one-line message of the attempt)."""
        now = self._clock()
        if self._streak_since is None:
            self._streak_since = now
        self._streak += 1
        if self._probing or self.state == "half_open":
            self._open(f"{cause} (probe after {self.cooldown_s:g} s failed)")
        elif self.state == "closed" and self._streak >= self.min_failures and now - self._streak_since >= self.window_s:
            self._open(f"{cause} (no successful call for {now - self._streak_since:.0f} s, "
                       f"{self._streak} failed attempts in a row)")

    def trip(self, cause: str) -> None:
        """A permanent failure: open now."""
        self._streak += 1
        self._open(cause)

    def _open(self, cause: str) -> None:
        self._probing = False
        if self.state != "open":
            self.opened += 1
        self.state, self.cause, self._opened_at = "open", cause, self._clock()
        if self._event is not None:
            self._event.set()

    def _opened_event(self) -> asyncio.Event:
        if self._event is None or self._event.is_set():
            self._event = asyncio.Event()
        return self._event
