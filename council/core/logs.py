"""Structured logging: structlog, configured once, JSON lines rendered with orjson.

Secrets never reach a log line. Just before rendering (after exceptions are formatted, so a traceback is
scrubbed too), every event is redacted twice over:

- by name: a value whose key names a credential (``authorization``, ``api_key``, ``password``, ...), at any
  depth, is replaced whole;
- by value: in every string, at any depth, the value of every environment variable whose name marks it as a
  credential (``*_API_KEY``, ``*TOKEN*``, ``*SECRET*``, ...: where API keys come from, see
  ``council.protocol.config.Endpoint``), ``Bearer`` credentials, strings shaped like well-known API keys
  (``sk-...``, ``AIza...``, ...), the password of a URL and secret-looking URL query parameters.

Lines go to the process's log (:func:`configure`; none by default, never to structlog's unredacted default)
and to the log of the run in whose context they are logged (:func:`run_log`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson


class _WithoutRich:
    """A finder that fails ``import rich`` in one thread (the one importing structlog); other threads import as
    usual."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "rich" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("left out while structlog is imported", name=name)


def _import_structlog() -> Any:
    """structlog, imported without rich in a process that has not imported rich: ``structlog.dev`` imports rich at
    structlog's own import, for coloured console tracebacks that these JSON lines never render, and rich (with
    pygments) cost each Ray actor's process (each judge's, the quota actor's) 25-55 ms of a core
    (``bench/actor_imports.py``). A process that shows rich's console (the command line) imports rich itself,
    before or after."""
    if "structlog" in sys.modules or "rich" in sys.modules:
        import structlog
    else:
        finder = _WithoutRich()
        sys.meta_path.insert(0, finder)
        try:
            import structlog
        finally:
            sys.meta_path.remove(finder)
    return structlog


structlog = _import_structlog()

REDACTED = "[redacted]"

SECRET_KEYS = frozenset({
    "authorization", "proxy-authorization", "proxy_authorization", "api_key", "api-key", "apikey", "x-api-key",
    "x_api_key", "token", "access_token", "refresh_token", "id_token", "bearer", "password", "passwd", "secret",
    "client_secret", "headers", "cookie", "set-cookie", "credentials",
})
_SECRET_KEY_PARTS = ("api_key", "apikey", "api-key", "secret", "password", "passwd", "authorization", "credential")

# Environment variables whose values are credentials: named like them, and long enough to be one.
_SECRET_ENV = re.compile(r"API_?KEY|(?:^|_)KEY(?:$|_)|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_MIN_SECRET_LEN = 8

_VALUE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # an Authorization header value, with the scheme word itself ("the bearer of ..." is left alone)
    (re.compile(r"\b(?:Bearer|BEARER)\s+[^\s\"',;]+"), REDACTED),
    (re.compile(r"\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE), REDACTED),
    # well-known API key shapes: OpenAI / Anthropic / OpenRouter / DeepSeek (sk-...), Google (AIza...),
    # xAI, Groq, Hugging Face, GitHub, AWS access key ids, Slack, JWTs
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), REDACTED),
    (re.compile(r"\b(?:xai|gsk|hf|ghp|gho|ghs|github_pat|xox[abpr])[-_][A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
    # the password in scheme://user:password@host
    (re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^/\s:@]*:)[^/\s@]+@", re.IGNORECASE), r"\g<head>" + REDACTED + "@"),
    # secret-looking query parameters: ?key=..., &api_key=..., &token=...
    (re.compile(r"(?P<head>[?&](?:key|api[_\-]?key|token|access_token|auth|sig|signature|password|secret)=)[^&#\s\"']+",
                re.IGNORECASE), r"\g<head>" + REDACTED),
)

_extra_secrets: set[str] = set()
_sink: IO[bytes] | None = None


def add_secret(value: str | None) -> None:
    """Redact this exact value from every later log line too (a credential read from somewhere other than a
    credential-named environment variable)."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _extra_secrets.add(value)


def secret_values(environ: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """The exact values to redact: credential-named environment variables and :func:`add_secret`'s, longest
    first (so a secret containing another is replaced whole)."""
    pairs = os.environ.items() if environ is None else environ
    values = {v for k, v in pairs if _SECRET_ENV.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values | _extra_secrets, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret value and credential-shaped substring replaced by ``[redacted]``."""
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern, replacement in _VALUE_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _secret_key(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return lowered in SECRET_KEYS or any(part in lowered for part in _SECRET_KEY_PARTS)


def _scrub(value: Any, secrets: list[str], depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if depth > 20:  # something absurdly nested: drop it rather than render it unchecked
        return REDACTED
    if isinstance(value, dict):
        return {k: REDACTED if _secret_key(k) else _scrub(v, secrets, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_scrub(v, secrets, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return redact_text(bytes(value).decode("utf-8", "replace"), secrets)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact_text(str(value), secrets)  # rendered as text anyway: scrub the text


def _redact(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    secrets = secret_values()
    for key in list(event):
        event[key] = REDACTED if _secret_key(key) else _scrub(event[key], secrets)
    return event


_run_sink: contextvars.ContextVar[IO[bytes] | None] = contextvars.ContextVar("council_run_log", default=None)


class _Router:
    """Writes each rendered line to the process's log (if any) and to the log of the run whose work this is
    (the context's :func:`run_log`), so that runs sharing a process (the service's jobs) keep separate logs."""

    def msg(self, line: bytes) -> None:
        for sink in (_sink, _run_sink.get()):
            if sink is not None:
                sink.write(line + b"\n")
                sink.flush()

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def _router(*_: Any) -> _Router:
    return _Router()


@contextlib.contextmanager
def run_log(log_file: Path) -> Iterator[None]:
    """Within this context (and the tasks it starts), log lines also go to ``log_file`` (appending)."""
    handle = open(log_file, "ab")
    token = _run_sink.set(handle)
    try:
        yield
    finally:
        _run_sink.reset(token)
        handle.close()


def configure(log_file: Path | None = None, level: int = logging.INFO) -> None:
    """Send every JSON log line to ``log_file`` (appending), or only to the runs' own logs when ``None``."""
    global _sink
    if _sink is not None:
        _sink.close()
        _sink = None
    if log_file is not None:
        _sink = open(log_file, "ab")
    logger_factory: Any = _router
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=logger_factory,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)


if not structlog.is_configured():
    configure(None)
