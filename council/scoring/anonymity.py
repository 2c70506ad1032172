"""What the anonymiser cut from the reasons each member's peers were shown, counted from the archive.

Each round-two record keeps the letters of the peers it was shown (``peer_letters``: letter -> vendor)
and how many names were scrubbed from each of their reasons (``peers_scrubbed``), so the counts come
from what was sent, and ``council rescore`` reproduces them. The records are counted as they stream by,
with the votes (``Counters.shown``), so nothing is kept per row. Records archived before
``peers_scrubbed`` existed count as shown with nothing scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_FIELDS = ("reasons_shown", "reasons_scrubbed", "names_scrubbed")


@dataclass
class ShownCounts:
    """Per member whose reasons were shown to peers in round two: ``reasons_shown`` (one per peer prompt that
    showed it), ``reasons_scrubbed`` (of those, the ones with a name cut out) and ``names_scrubbed`` (the names
    cut), summed over round-two records. Only the latest record of a vote counts: the caller takes back
    (``sign=-1``) a record another supersedes."""

    by_author: dict[str, list[int]] = field(default_factory=dict)  # author -> the three counts, in _FIELDS order

    def add(self, rec: Mapping[str, Any], sign: int = 1) -> None:
        scrubbed = rec.get("peers_scrubbed") or {}
        for letter, author in (rec.get("peer_letters") or {}).items():
            counts = self.by_author.setdefault(author, [0, 0, 0])
            names = int(scrubbed.get(letter, 0))
            counts[0] += sign
            counts[1] += sign * (names > 0)
            counts[2] += sign * names

    def summary(self) -> dict[str, dict[str, int]]:
        return {author: dict(zip(_FIELDS, counts, strict=True))
                for author, counts in sorted(self.by_author.items()) if counts[0]}
