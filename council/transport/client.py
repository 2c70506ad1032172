"""A chat client on aiohttp: one session per vendor, per-phase timeouts, retries on transient faults that
honour the provider's hints, with jitter, and a circuit breaker (:mod:`council.transport.breaker`). aiohttp
errors stop here and leave as :class:`ProviderError`. The vendor's wire format (``VendorSettings.api``:
OpenAI-compatible chat completions, or Anthropic's Messages API) is :mod:`council.transport.wire`'s.

Failures come in two kinds:

- **permanent**: retrying cannot help (connection refused, unknown host, TLS failure, HTTP 401, 403, 404 for
  a wrong base URL or an unknown model, a 400 saying the model does not exist, a 429 saying the account
  has no quota left, Anthropic's ``billing_error``). Never retried: :class:`ProviderUnavailable` at once, and the vendor's breaker opens.
- **transient**: 429, 5xx, 408, timeouts, connections reset or closed mid-response, bodies that are not
  valid JSON or are cut short. Retried with backoff as :class:`RetryPolicy` allows; a call that runs out of
  attempts raises :class:`ProviderError` (or :class:`RateLimited`).

Every message is one line that starts with ``<vendor>: <base URL>: `` and never holds the API key or an
``Authorization`` header (the URL is shown without credentials or query string).

A vendor that caches prompts only where a request marks it (Anthropic's models, directly or through OpenRouter
or LiteLLM) gets its cache breakpoints marked when the client is built with ``cache_breakpoints``
(:func:`council.transport.wire.marked`).
"""

from __future__ import annotations

import asyncio
import errno
import random
import re
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import orjson

from council.core import logs
from council.core.errors import ProviderError, ProviderUnavailable, RateLimited
from council.core.schema import Usage
from council.protocol.config import Endpoint, RetryPolicy
from council.transport.breaker import Breaker
from council.transport.limiter import Limiter
from council.transport.quota import estimate_tokens
from council.transport.shape import RequestShape, plain
from council.transport.wire import Api, ErrorBody, MalformedReply, wire_for

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str | None
    finish_reason: str | None
    usage: Usage
    attempts: int
    latency_s: float


def retry_hint_s(headers: Any) -> float | None:
    """The provider's wait hint in seconds: ``retry-after-ms``, ``retry-after``, or ``x-ratelimit-reset-*``."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
    resets = [_duration_s(headers.get(h)) for h in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")]
    resets += [_until_s(headers.get(f"anthropic-ratelimit-{kind}-reset"))
               for kind in ("requests", "tokens", "input-tokens", "output-tokens")]
    resets = [r for r in resets if r is not None]
    return max(resets) if resets else None


def _until_s(stamp: str | None) -> float | None:
    """Seconds from now until an RFC 3339 time (Anthropic's ``anthropic-ratelimit-*-reset``), at least 0."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _duration_s(text: str | None) -> float | None:
    """Parse OpenAI-style durations: ``"1.5s"``, ``"20ms"``, ``"1m30s"``, or a bare number of seconds."""
    if not text:
        return None
    total, number = 0.0, ""
    i = 0
    try:
        while i < len(text):
            ch = text[i]
            if ch.isdigit() or ch == ".":
                number += ch
            elif text.startswith("ms", i):
                total, number, i = total + float(number) / 1000.0, "", i + 1
            elif ch in "hms":
                total += float(number) * {"h": 3600.0, "m": 60.0, "s": 1.0}[ch]
                number = ""
            else:
                return None
            i += 1
        return total + (float(number) if number else 0.0)
    except ValueError:
        return None


def full_jitter(policy: RetryPolicy, rng: random.Random, retry: int) -> float:
    """A random wait in [0, base * 2^(retry-1)], capped at the policy's longest (retry 1-based)."""
    return rng.uniform(0.0, min(policy.max_delay_s, policy.base_delay_s * 2 ** (retry - 1)))


class ChatClient:
    """Chat calls against one endpoint, for one vendor (``vendor`` names it in error messages), in the wire
    format ``api`` names. Create and use inside one event loop. With ``cache_breakpoints`` every request is sent
    with its cache breakpoints marked (:func:`council.transport.wire.marked`)."""

    def __init__(self, endpoint: Endpoint, *, seed: int | None = None, limiter: Limiter | None = None,
                 vendor: str = "", cache_breakpoints: bool = False, api: Api = "openai") -> None:
        self.endpoint = endpoint
        self.limiter = limiter
        self.vendor = vendor
        self.cache_breakpoints = cache_breakpoints
        self.wire = wire_for(api)
        self._session: aiohttp.ClientSession | None = None
        self._rng = random.Random(seed)
        self._url = endpoint.base_url + self.wire.path
        self._secret = ""
        policy = endpoint.retry
        self.breaker = Breaker(window_s=policy.breaker_window_s, min_failures=policy.breaker_min_failures,
                               cooldown_s=policy.breaker_cooldown_s)

    @property
    def where(self) -> str:
        """The prefix of every message: ``vendor: base URL`` (no credentials, no query string)."""
        url = safe_url(self.endpoint.base_url)
        return f"{self.vendor}: {url}" if self.vendor else url

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            t = self.endpoint.timeouts
            self._secret = self.endpoint.api_key()
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=t.total_s, sock_connect=t.connect_s, sock_read=t.read_s),
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),  # concurrency is the limiter's
                headers=self.wire.headers(self._secret),
                json_serialize=lambda obj: orjson.dumps(obj).decode(),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    def backoff_s(self, attempt: int, hint_s: float | None) -> float:
        """Wait before retry number ``attempt`` (1-based): the hint plus jitter, else full-jitter exponential."""
        policy = self.endpoint.retry
        if hint_s is not None:
            return min(policy.max_delay_s, hint_s) + self._rng.uniform(0.0, policy.base_delay_s + 0.25 * hint_s)
        return full_jitter(policy, self._rng, attempt)

    async def chat(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        response_format: dict[str, Any] | None = None,
        admitted: bool = False,
        shape: RequestShape | None = None,
    ) -> ChatResult:
        """One completion, retried as the policy allows. Every attempt passes the vendor's breaker and
        limiter (the first one not the limiter if the caller has ``admitted`` it already) and reports back
        what it cost. Raises :class:`ProviderUnavailable` at once on a permanent failure or an open
        breaker, :class:`ProviderError` when the transient faults outlast the attempts. ``shape`` fits the request
        to the seat's model (:mod:`council.transport.shape`: the id sent, its output bound with reasoning's room,
        sampling and reasoning fields); without one, ``model`` is sent with ``temperature`` and ``max_tokens``."""
        shape = shape or plain(model, temperature)
        model = shape.model
        fields = shape.fields(max_tokens)
        payload = orjson.dumps(self.wire.body(model, messages, fields, response_format=response_format,
                                              cache_breakpoints=self.cache_breakpoints))
        started = time.perf_counter()
        last: ProviderError | None = None
        limiter = self.limiter
        estimate = estimate_tokens(messages, max_tokens + shape.headroom) if limiter else 0
        breaker = self.breaker
        max_attempts = self.endpoint.retry.max_attempts
        for attempt in range(1, max_attempts + 1):
            needs_admission = bool(limiter) and (attempt > 1 or not admitted)
            try:
                probe = breaker.before()
            except ProviderUnavailable as exc:
                if limiter and not needs_admission:
                    limiter.settle(estimate, 0)  # the caller's admission is given back unused
                exc.attempts = attempt - 1
                raise
            try:
                if needs_admission:
                    await limiter.admit(estimate)
                outcome = await self._attempt(model, payload, estimate, attempt, started)
            except BaseException:
                if probe:
                    breaker.probe_done()
                raise
            if isinstance(outcome, ChatResult):
                breaker.success()
                return outcome
            last, hint = outcome
            if isinstance(last, ProviderUnavailable):
                breaker.trip(str(last))
                raise last
            if last.status is not None and last.status not in RETRYABLE_STATUS:
                if probe:  # the vendor answered: it is reachable
                    breaker.success()
                raise last
            breaker.failure(str(last))
            if breaker.state != "closed":
                raise _unavailable(breaker.error(), last)
            if attempt < max_attempts:
                try:
                    await breaker.sleep(self.backoff_s(attempt, hint))
                except ProviderUnavailable as exc:
                    raise _unavailable(exc, last) from None
        assert last is not None
        raise last

    async def _attempt(self, model: str, payload: bytes, estimate: int, attempt: int,
                       started: float) -> ChatResult | tuple[ProviderError, float | None]:
        """One request: its result, or the error it ended in (and the provider's wait hint). The limiter is
        told what the request used (:meth:`Limiter.settle`) and that it was sent (:meth:`Limiter.sent`: the
        tokens of its answer's usage, the estimate where a billed answer is unreadable or none came, 0 when the
        provider refused it; not at all when it could not be sent)."""
        limiter = self.limiter
        hint: float | None = None
        sent_at = limiter.now() if limiter else 0.0
        used: int | None = estimate  # what the request used, as far as we know (None: it never left)

        def settle(actual: int | None) -> None:
            nonlocal used
            used = actual
            if limiter:
                limiter.settle(estimate, actual or 0)

        try:
            session = self._open()
            async with session.post(self._url, data=payload) as resp:
                raw = await resp.read()
                if resp.status == 200:
                    try:
                        reply = self.wire.reply(raw)
                    except MalformedReply as exc:  # a billed answer we cannot read: the provider counted it
                        settle(estimate)
                        return ProviderError(f"{self.where}: {model}: {self._clean(str(exc))}", attempts=attempt), None
                    result = ChatResult(reply.content, reply.finish_reason, reply.usage, attempt,
                                        time.perf_counter() - started)
                    settle(result.usage.total_tokens)
                    if limiter:
                        limiter.announced(*_announced(resp.headers))
                    return result
                said = self.wire.error(resp.status, raw)
                hint = retry_hint_s(resp.headers)
                hint = said.retry_after_s if hint is None else hint
                settle(0)
                if limiter and resp.status == 429:
                    limiter.rate_limited(hint)
                return self._http_error(model, resp.status, said, attempt, hint), hint
        except ValueError as exc:  # aiohttp refuses to send (credentials in the URL, a bad header)
            settle(None)
            return ProviderUnavailable(f"{self.where}: cannot send ({self._clean(str(exc))})", attempts=attempt), None
        except (asyncio.TimeoutError, aiohttp.ClientError, OSError) as exc:
            settle(0)
            permanent = _permanent_cause(exc)
            if permanent is not None:
                return ProviderUnavailable(f"{self.where}: {self._clean(permanent)}", attempts=attempt), None
            return ProviderError(f"{self.where}: {model}: {self._clean(_transport_cause(exc))}", attempts=attempt), None
        finally:
            if limiter and used is not None:
                limiter.sent(sent_at, used)

    def _http_error(self, model: str, status: int, error: ErrorBody, attempt: int, hint: float | None) -> ProviderError:
        """The error for a non-200 answer (``error``: what its body says), permanent (:class:`ProviderUnavailable`)
        or not."""
        text = self._clean(error.text)
        path = self.wire.path
        said = f": {text}" if text else ""
        cause: str | None = None
        if status == 401:
            env = self.endpoint.api_key_env
            cause = f"HTTP 401 for {path} (API key rejected{f'; check {env}' if env else ''}){said}"
        elif status == 403:
            cause = f"HTTP 403 for {path} (access denied for this key or model){said}"
        elif status == 404:
            if error.unknown_model:
                cause = f"HTTP 404: unknown model {model!r}{said}"
            elif not _VERSIONED.search(urlsplit(self.endpoint.base_url).path):
                cause = f"HTTP 404 for {path} (is the base URL missing /v1?)"
            else:
                cause = f"HTTP 404 for {path} (is the base URL right?){said}"
        elif status == 400 and error.unknown_model:
            cause = f"HTTP 400: unknown model {model!r}{said}"
        elif error.refused_parameter:  # every request of the seat carries it: no point sending the next one
            cause = f"HTTP 400: {model} refuses the request's parameters (`council check` names the fix){said}"
        elif error.no_quota:
            cause = f"HTTP {status}: the account has no quota left{said}"
        if cause is not None:
            return ProviderUnavailable(f"{self.where}: {cause}", status=status, attempts=attempt)
        message = f"{self.where}: {model}: HTTP {status}{said}"
        if status == 429:
            return RateLimited(message, retry_after_s=hint, attempts=attempt)
        return ProviderError(message, status=status, attempts=attempt)

    def _clean(self, text: str) -> str:
        """Provider text fit for a one-line message: no line breaks, no secret, at most 300 characters."""
        return one_line(text, self._secret)


def _unavailable(exc: ProviderUnavailable, last: ProviderError) -> ProviderUnavailable:
    exc.attempts, exc.status = last.attempts, last.status
    return exc


_VERSIONED = re.compile(r"/v\d|/openai\b|/api\b", re.IGNORECASE)
def one_line(text: str, secret: str = "", limit: int = 300) -> str:
    """``text`` on one line, secrets (``secret`` itself, the environment's keys, an Authorization value with
    its scheme word, key-shaped words) redacted as the logs redact them, cut."""
    text = logs.redact_text(text, [*logs.secret_values(), *([secret] if len(secret) >= 4 else [])])
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def safe_url(url: str) -> str:
    """``url`` without user info, query string or fragment (where credentials may hide)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "<invalid URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _permanent_cause(exc: BaseException) -> str | None:
    """Why a transport error means the endpoint cannot be used at all, or None if it may pass."""
    if isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)):
        return f"TLS failure ({_os_text(exc)})"
    if isinstance(exc, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
        return f"invalid URL ({type(exc).__name__})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        host = exc.host
        if isinstance(exc, aiohttp.ClientConnectorDNSError) or isinstance(os_error, socket.gaierror):
            return f"cannot connect (unknown host {host})"
        if isinstance(os_error, ConnectionRefusedError) or getattr(os_error, "errno", None) == errno.ECONNREFUSED:
            return "cannot connect (connection refused)"
    return None


def _transport_cause(exc: BaseException) -> str:
    """A transient transport error in a few words."""
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "server disconnected mid-response"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "response body cut short"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect ({_os_text(exc)})"
    return f"{type(exc).__name__}: {one_line(str(exc), limit=200)}"


def _os_text(exc: BaseException) -> str:
    os_error = getattr(exc, "os_error", None)
    inner = os_error if isinstance(os_error, BaseException) else exc
    text = getattr(inner, "strerror", None) or getattr(inner, "reason", None) or str(inner) or type(inner).__name__
    return one_line(str(text), limit=160)


def _announced(headers: Any) -> tuple[float | None, float | None]:
    """Limits the provider announces per minute: OpenAI's ``x-ratelimit-limit-requests`` / ``-tokens``, or
    Anthropic's ``anthropic-ratelimit-requests-limit`` / ``-tokens-limit``
    (https://docs.anthropic.com/en/api/rate-limits#response-headers)."""
    out: list[float | None] = []
    for names in (("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"),
                  ("x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit")):
        value = next((headers.get(n) for n in names if headers.get(n) is not None), None)
        try:
            out.append(float(value) if value is not None else None)
        except ValueError:
            out.append(None)
    return out[0], out[1]
