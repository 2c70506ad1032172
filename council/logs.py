"""Structured logging: structlog, configured once, JSON lines rendered with orjson.

Secrets never reach a log line: keys that name credentials are replaced before rendering.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import IO, Any

import orjson
import structlog

SECRET_KEYS = frozenset({"authorization", "api_key", "apikey", "token", "password", "secret", "headers"})

_sink: IO[bytes] | None = None


def _redact(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    for key in list(event):
        if key.lower() in SECRET_KEYS:
            event[key] = "[redacted]"
    return event


def configure(log_file: Path | None = None, level: int = logging.INFO) -> None:
    """Send JSON log lines to ``log_file`` (appending), or nowhere when ``None``."""
    global _sink
    if _sink is not None:
        _sink.close()
        _sink = None
    if log_file is not None:
        _sink = open(log_file, "ab")
        logger_factory: Any = structlog.BytesLoggerFactory(_sink)
    else:
        logger_factory = structlog.ReturnLoggerFactory()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=logger_factory,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
