"""Reading a judge's verdict from its raw output: structured JSON or nothing. A vote is never guessed."""

from __future__ import annotations

import orjson

from council.schema import Verdict

_VERDICTS: frozenset[str] = frozenset({"correct", "incorrect"})


def _json_object(content: str | None) -> dict | None:
    """The JSON object in ``content`` (a Markdown code fence around it is tolerated), else ``None``."""
    if not content:
        return None
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        if text[:4].lower() == "json":
            text = text[4:]
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _vote(data: dict) -> tuple[Verdict, str] | None:
    verdict, reason = data.get("verdict"), data.get("reason")
    if not isinstance(verdict, str) or verdict.strip().lower() not in _VERDICTS or not isinstance(reason, str):
        return None
    return verdict.strip().lower(), " ".join(reason.split())  # type: ignore[return-value]


def parse_verdict(content: str | None) -> tuple[Verdict, str] | None:
    """``(verdict, reason)`` from a JSON object ``{"verdict": ..., "reason": ...}``, else ``None``.

    A Markdown code fence around the object is tolerated; anything else (prose, a verdict word outside
    JSON, an unknown verdict, a missing reason) is not a vote.
    """
    data = _json_object(content)
    return None if data is None else _vote(data)


def parse_batch(content: str | None, size: int) -> dict[int, tuple[Verdict, str]] | None:
    """Votes of a batched reply ``{"verdicts": [{"key": "1", "verdict": ..., "reason": ...}, ...]}`` by
    1-based position. ``None`` when the reply as a whole is unreadable (worth one repair re-ask); items
    that are missing, duplicated, out of range or malformed are simply absent (each is retried alone)."""
    data = _json_object(content)
    entries = None if data is None else data.get("verdicts")
    if not isinstance(entries, list):
        return None
    seen: dict[int, tuple[Verdict, str] | None] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        try:
            key = int(str(entry.get("key")).strip())
        except ValueError:
            continue
        if 1 <= key <= size:
            vote = _vote(entry)
            seen[key] = None if key in seen else vote  # a key answered twice is not trusted
    return {k: v for k, v in seen.items() if v is not None}
