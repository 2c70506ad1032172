"""Plain text (a help string, a comment, a docstring) made safe for a cell of a Markdown table."""

from __future__ import annotations

import html


def cell(text: str) -> str:
    """``text`` on one line, ``|`` escaped, and outside its `code spans` the characters Markdown would read as
    HTML or emphasis (``<FIELD>``, ``T*``) escaped."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        parts[i] = html.escape(parts[i], quote=False).replace("*", "\\*").replace("_", "\\_")
    return "`".join(parts)
