"""Containment of the untrusted text a judge prompt shows (the response, members' reasons): the escape that keeps
it from opening or closing one of the prompt's sections, and the nonce that fences it
(:mod:`council.protocol.prompts` explains both)."""

from __future__ import annotations

import hashlib
import itertools
import re

TAG_NAMES = ("round", "question", "reference", "rubric", "scale", "response", "your_round_one", "peer", "batch",
             "item")
"""Every tag the prompts use (``peer`` also covers ``peers``); matched as a prefix, in any case."""
_TAG_AHEAD = r"\s*/?\s*(?:" + "|".join(TAG_NAMES) + ")"
_ENCODE_RE = re.compile(r"<(?=" + _TAG_AHEAD + r")|&(?=(?:amp;)*lt;" + _TAG_AHEAD + ")", re.IGNORECASE)
_DECODE_RE = re.compile(r"&lt;(?=" + _TAG_AHEAD + r")|&amp;(?=(?:amp;)*lt;" + _TAG_AHEAD + ")", re.IGNORECASE)


def encode_untrusted(text: str) -> str:
    """``text`` with every ``<`` that would start one of the prompt's tags written ``&lt;`` and every ``&``
    that would start such an escape (``&lt;``, ``&amp;lt;``, ...) written ``&amp;``; everything else as is."""
    return _ENCODE_RE.sub(lambda m: "&lt;" if m[0] == "<" else "&amp;", text)


def decode_untrusted(text: str) -> str:
    """The inverse of :func:`encode_untrusted`: ``decode_untrusted(encode_untrusted(t)) == t``."""
    return _DECODE_RE.sub(lambda m: "<" if m[0] == "&lt;" else "&", text)


def fence_nonce(*blocks: str) -> str:
    """The nonce that fences a body's untrusted ``blocks`` (as they appear in the prompt): 16 hex digits of
    sha256 over the blocks and a counter, the first counter value whose nonce occurs in no block."""
    material = "\x1e".join(blocks).encode("utf-8", "surrogatepass")
    for attempt in itertools.count():
        nonce = hashlib.sha256(b"council-fence\x1f%d\x1f" % attempt + material).hexdigest()[:16]
        if not any(nonce in block for block in blocks):
            return nonce
    raise AssertionError("unreachable")
