"""Reading a judge's verdict from its raw output: a JSON object or nothing. A vote is never guessed.

A reply that is the JSON object alone is read as it is (``ok``). Real providers also wrap the object in a
Markdown code fence or put it inside a sentence of prose; such an object is *found*, not guessed: it is
read when the text holds exactly one object of the expected shape (or several that say the same), and
the vote is marked ``extracted`` so the rate is reported per member. A verdict word outside JSON, an
unknown verdict, a missing reason or two objects that disagree are not a vote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import orjson

from council.core.schema import Scale, Verdict

_VERDICTS: frozenset[str] = frozenset({"correct", "incorrect"})
_DECODER = json.JSONDecoder()

How = Literal["ok", "extracted"]
T = TypeVar("T")


def _embedded_objects(text: str) -> list[dict]:
    """Every JSON object that starts at a ``{`` of ``text`` and is not inside an earlier one."""
    out: list[dict] = []
    pos = text.find("{")
    while pos >= 0:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):  # not JSON here, or nested past what Python can parse
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            out.append(value)
        pos = text.find("{", end)
    return out


def _read(content: str | None, shape: Callable[[dict], T | None]) -> tuple[T | None, How]:
    """The one value of ``shape`` in ``content``: the whole text as JSON (``ok``), else the objects found
    inside it (``extracted``), provided they all read the same."""
    if not content or not content.strip():
        return None, "ok"
    try:
        data: Any = orjson.loads(content)
    except orjson.JSONDecodeError:  # orjson also refuses (never overflows on) deep nesting
        data = None
    if isinstance(data, dict):
        return shape(data), "ok"
    found = [v for v in map(shape, _embedded_objects(content)) if v is not None]
    if found and all(v == found[0] for v in found):
        return found[0], "extracted"
    return None, "ok"


def _vote(data: dict) -> tuple[Verdict, str] | None:
    verdict, reason = data.get("verdict"), data.get("reason")
    if not isinstance(verdict, str) or verdict.strip().lower() not in _VERDICTS or not isinstance(reason, str):
        return None
    return verdict.strip().lower(), " ".join(reason.split())  # type: ignore[return-value]


def read_verdict(content: str | None) -> tuple[tuple[Verdict, str] | None, How]:
    """``((verdict, reason), how)`` from ``{"verdict": ..., "reason": ...}``, else ``(None, ...)``."""
    return _read(content, _vote)


def parse_verdict(content: str | None) -> tuple[Verdict, str] | None:
    """``(verdict, reason)`` or ``None`` (see :func:`read_verdict`)."""
    return read_verdict(content)[0]


def _batch_entries(size: int) -> Callable[[dict], dict[int, tuple[Verdict, str]] | None]:
    def shape(data: dict) -> dict[int, tuple[Verdict, str]] | None:
        entries = data.get("verdicts")
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

    return shape


def read_batch(content: str | None, size: int) -> tuple[dict[int, tuple[Verdict, str]] | None, How]:
    """Votes of a batched reply ``{"verdicts": [{"key": "1", "verdict": ..., "reason": ...}, ...]}`` by
    1-based position, and how the object was read. ``None`` when the reply as a whole is unreadable (worth
    one repair re-ask); items that are missing, duplicated, out of range or malformed are simply absent
    (each is retried alone)."""
    return _read(content, _batch_entries(size))


def parse_batch(content: str | None, size: int) -> dict[int, tuple[Verdict, str]] | None:
    return read_batch(content, size)[0]


def _levels(scale: Scale) -> Callable[[dict], tuple[dict[str, int], str] | None]:
    """A graded reply ``{"scores": {dimension: level, ...}, "reason": ...}``: the levels given validly (an
    integer in ``0..high`` for a dimension of the scale; a name is matched exactly, else ignoring case), and
    the reason. A dimension left out or given an invalid level is absent (the council flags it); a reply with
    no valid level, or without a reason, is not a vote."""
    by_lower = {n.lower(): n for n in scale.names}

    def shape(data: dict) -> tuple[dict[str, int], str] | None:
        scores, reason = data.get("scores"), data.get("reason")
        if not isinstance(scores, dict) or not isinstance(reason, str):
            return None
        out: dict[str, int] = {}
        for key, level in scores.items():
            name = key if key in scale.names else by_lower.get(str(key).strip().lower())
            if name is None or name in out or isinstance(level, bool) or not isinstance(level, int):
                continue
            if 0 <= level <= scale.high:
                out[name] = level
        if not out:
            return None
        return {n: out[n] for n in scale.names if n in out}, " ".join(reason.split())

    return shape


def read_scores(content: str | None, scale: Scale) -> tuple[tuple[dict[str, int], str] | None, How]:
    """``((levels, reason), how)`` of a graded reply (see :func:`_levels`), else ``(None, ...)``."""
    return _read(content, _levels(scale))
