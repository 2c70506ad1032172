"""What the anonymiser cut from the reasons each member's peers were shown, counted from the archive.

Each round-two record keeps the letters of the peers it was shown (``peer_letters``: letter -> vendor)
and how many names were scrubbed from each of their reasons (``peers_scrubbed``), so the counts come
from what was sent, and ``council rescore`` reproduces them. The records are read once, with the votes
(``Counters.peers_shown``). Records archived before ``peers_scrubbed`` existed count as shown with nothing
scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping


def anonymisation(peers_shown: Mapping[tuple[str, str], tuple[dict[str, str], dict[str, int]]]
                  ) -> dict[str, dict[str, int]]:
    """Per member whose reasons were shown to peers in round two: ``reasons_shown`` (one per peer prompt
    that showed it), ``reasons_scrubbed`` (of those, the ones with a name cut out) and ``names_scrubbed``
    (the names cut). ``peers_shown``: (row, member) -> the latest round-two record's letters and counts."""
    out: dict[str, dict[str, int]] = {}
    for letters, scrubbed in peers_shown.values():
        for letter, author in letters.items():
            counts = out.setdefault(author, {"reasons_shown": 0, "reasons_scrubbed": 0, "names_scrubbed": 0})
            names = int(scrubbed.get(letter, 0))
            counts["reasons_shown"] += 1
            counts["reasons_scrubbed"] += names > 0
            counts["names_scrubbed"] += names
    return dict(sorted(out.items()))
