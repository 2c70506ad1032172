"""A simulated judge and what its two kinds of answer share: verdicts (``council.sim._judging``) and levels on
a scale (``council.sim._grading``). Who is judging, the seeded draws a reply is made of, the reply's shape
(``Decision``, one ``ItemVerdict`` per row) and how its JSON is wrapped.

Every draw is a pure function of its inputs (sha256 of the seed, the judge model id and the text drawn on), so
the same request always gets the same reply.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from statistics import NormalDist

from council.sim._config import VendorBehaviour
from council.sim._reading import Message
from council.sim._world import World

_UNIT = 2.0**-53
_U4 = struct.Struct(">4Q")
_U12 = struct.Struct(">12Q")


def _request_uniforms(seed: int, model: str, messages: list[Message]) -> list[float]:
    """Four uniforms in [0, 1) from sha256 of (seed, judge model id, the whole request's messages)."""
    h = hashlib.sha256(f"{seed}\x1e{model}".encode())
    for role, content in messages:
        h.update(f"\x1e{role}\x1d{content}".encode())
    return [(q >> 11) * _UNIT for q in _U4.unpack(h.digest())]


def _item_uniforms(seed: int, model: str, rnd: int, stream: str) -> list[float]:
    """Twelve uniforms in [0, 1) for one row, from sha256 of (seed, judge model id, round, the row's stream,
    ``JudgePrompt.stream``): the same whatever request the row came in. (The digest, then sha512 of it.)"""
    digest = hashlib.sha256(f"{seed}\x1e{model}\x1e{rnd}\x1e{stream}".encode("utf-8", "surrogatepass")).digest()
    return [(q >> 11) * _UNIT for q in _U12.unpack(digest + hashlib.sha512(digest).digest())]


_NORMAL = NormalDist()


def _z(u: float) -> float:
    return _NORMAL.inv_cdf(min(max(u, 1e-12), 1.0 - 1e-12))


def _shared_normal(tag: str, seed: int, *texts: str) -> float:
    h = hashlib.sha256(f"{tag}\x1e{seed}".encode())
    for text in texts:
        h.update(b"\x1e" + text.strip().encode())
    return _z((int.from_bytes(h.digest()[:8], "big") >> 11) * _UNIT)


def _lcfirst(text: str) -> str:
    return text[:1].lower() + text[1:]


def _pick(options: tuple[str, ...], u: float) -> str:
    return options[min(int(u * len(options)), len(options) - 1)]


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """One row's answer: its key ("" for a single-row request), the verdict it means, the reason, and whether
    a batched reply left the row out."""

    key: str
    verdict: str
    reason: str
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """A judge's reply: what it means for each row, the content actually sent, and what the provider saw."""

    round: int  # 1 or 2; 0 when the request was not a council prompt
    content: str
    malformed: bool
    repair: bool
    batch: bool = False
    items: tuple[ItemVerdict, ...] = ()  # one per row (a single-row or fallback reply: exactly one)
    wrapping: str = ""  # "prose" (JSON inside a sentence), "fenced" (inside a ```json fence) or ""
    rows: tuple[tuple[str, str], ...] = ()  # (question, response) of each council row received
    own_vendor_rows: int = 0  # rows produced by a model of the judge's own vendor, per the world
    unknown_producers: int = 0  # producer lookups the world could not answer
    # A graded item's reply: the level per dimension it gives (dimensions left out are absent; its one item
    # carries the reason and no verdict). None for a correct / incorrect reply.
    levels: dict[str, int] | None = field(default=None, hash=False)

    @property
    def verdict(self) -> str:
        return self.items[0].verdict if self.items else ""

    @property
    def reason(self) -> str:
        return self.items[0].reason if self.items else ""


@dataclass(frozen=True, slots=True)
class _Judge:
    """Who is judging: the model id as asked, its vendor per the world ("" if unknown) and its behaviour."""

    model: str
    vendor: str
    b: VendorBehaviour


def own_vendor_row(world: World, vendor: str, producers: frozenset[str]) -> tuple[bool, int]:
    """Whether a row was written by a model of the judge's ``vendor`` (per the world), and how many of its
    producers the world does not know (a judge of no known vendor owns no row)."""
    own_row, unknown = False, 0
    for producer in producers:
        made_by = world.vendor(producer)
        if made_by is None:
            unknown += 1
        elif made_by == vendor and vendor:
            own_row = True
    return own_row, unknown


_PROSE = (
    ("Here is my verdict: ", " Hope this helps."),
    ("After comparing the response with the reference, my assessment is ", "."),
    ("Sure! ", " Let me know if you need anything else."),
)


def _wrap(good: str, u_wrap: float, u_how: float, b: VendorBehaviour) -> tuple[str, str]:
    """(content, wrapping): the JSON alone, inside a sentence of prose, or inside a ```json fence."""
    if u_wrap < b.prose_json_rate:
        lead, tail = _pick(_PROSE, u_how)
        return lead + good + tail, "prose"
    if u_wrap < b.prose_json_rate + b.fenced_rate:
        return "```json\n" + good + "\n```", "fenced"
    return good, ""
