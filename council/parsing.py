"""Reading a judge's verdict from its raw output: structured JSON or nothing. A vote is never guessed."""

from __future__ import annotations

import orjson

from council.schema import Verdict

_VERDICTS: frozenset[str] = frozenset({"correct", "incorrect"})


def parse_verdict(content: str | None) -> tuple[Verdict, str] | None:
    """``(verdict, reason)`` from a JSON object ``{"verdict": ..., "reason": ...}``, else ``None``.

    A Markdown code fence around the object is tolerated; anything else (prose, a verdict word outside
    JSON, an unknown verdict, a missing reason) is not a vote.
    """
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
    if not isinstance(data, dict):
        return None
    verdict, reason = data.get("verdict"), data.get("reason")
    if not isinstance(verdict, str) or verdict.strip().lower() not in _VERDICTS or not isinstance(reason, str):
        return None
    return verdict.strip().lower(), " ".join(reason.split())  # type: ignore[return-value]
