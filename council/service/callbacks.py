"""Job callbacks: when a job ends, the service POSTs its summary to the job's ``callback_url``.

The body is ``{"job": <JobView>, "summary": <summary.json, or null>}`` as JSON; it is sent byte for byte as
signed. Headers: ``Content-Type: application/json``, ``X-Council-Job: <job id>``, ``X-Council-Timestamp: <unix
seconds>`` and, when the job's tenant has a callback secret, ``X-Council-Signature: sha256=<hex>``: the
HMAC-SHA256 of ``b"<timestamp>." + body`` under that secret. A receiver checks it with
:func:`verify_signature` (and should refuse old timestamps: ``max_age_s``).

An attempt that cannot connect, times out, or is answered 5xx or 429 is tried again after an exponential wait
with jitter (:class:`RetryPolicy`); any other answer outside 2xx (4xx, or a redirect, which is not followed) is
final.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import aiohttp
from pydantic import BaseModel, ConfigDict

USER_AGENT = "grading-council-callback/1"


class CallbackState(BaseModel):
    """How a job's callback went (kept in its job record); ``pending`` until delivered or given up."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["pending", "delivered", "failed"] = "pending"
    attempts: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6  # at most, per delivery
    first_wait_s: float = 0.5  # doubled after every attempt
    max_wait_s: float = 30.0  # cap on one wait
    timeout_s: float = 10.0  # one attempt, connecting to reading the answer

    def wait_s(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 for the second attempt), jittered by +-25%, capped."""
        return min(self.max_wait_s, self.first_wait_s * 2 ** (retry - 1) * random.uniform(0.75, 1.25))


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Council-Signature`` value for ``body`` sent at ``timestamp``."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, timestamp: str, body: bytes, header: str, *,
                     max_age_s: float | None = None) -> bool:
    """Whether ``header`` (``X-Council-Signature``) signs ``body`` at ``timestamp`` (``X-Council-Timestamp``) under
    ``secret``; compared in constant time. With ``max_age_s``, a timestamp further than that from now fails too."""
    if max_age_s is not None:
        try:
            if abs(time.time() - int(timestamp)) > max_age_s:
                return False
        except ValueError:
            return False
    expected = sign(secret, timestamp, body).encode()
    return hmac.compare_digest(expected, (header or "").strip().encode("utf-8", "replace"))


async def deliver(url: str, job_id: str, body: bytes, secret: bytes | None, state: CallbackState, *,
                  policy: RetryPolicy, on_attempt: Callable[[CallbackState], None]) -> CallbackState:
    """POST ``body`` to ``url`` until it is delivered, refused for good, or ``policy.attempts`` are spent; the
    counts go on from ``state``. ``on_attempt`` gets the state after every attempt (to keep it)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=policy.timeout_s)) as session:
        for attempt in range(1, policy.attempts + 1):
            if attempt > 1:
                await asyncio.sleep(policy.wait_s(attempt - 1))
            retry, error = await _attempt(session, url, job_id, body, secret)
            status = "delivered" if error is None else "pending" if retry and attempt < policy.attempts else "failed"
            state = CallbackState(status=status, attempts=state.attempts + 1, last_error=error)
            on_attempt(state)
            if status != "pending":
                break
    return state


async def _attempt(session: aiohttp.ClientSession, url: str, job_id: str, body: bytes,
                   secret: bytes | None) -> tuple[bool, str | None]:
    """One POST: (worth trying again, the error or None when delivered)."""
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Council-Job": job_id,
               "X-Council-Timestamp": timestamp}
    if secret is not None:
        headers["X-Council-Signature"] = sign(secret, timestamp, body)
    try:
        async with session.post(url, data=body, headers=headers, allow_redirects=False) as resp:
            status = resp.status
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return True, f"{type(exc).__name__}: {exc}".rstrip(": ")
    if 200 <= status < 300:
        return False, None
    return status == 429 or status >= 500, f"HTTP {status}"
