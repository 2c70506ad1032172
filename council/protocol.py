"""The council protocol's rules: who may grade a row, and what each member sees of its peers."""

from __future__ import annotations

import hashlib
import random
import re

from council.prompts import LETTERS, Peer, scrub
from council.schema import JudgeCallRecord, MemberSpec, ResponseRow

# The rules this module and the aggregator implement; recorded on every judge-call record.
METHODOLOGY_VERSION = "council-v1 (self-exclusion; blind round one; lettered round two; strict majority, ties incorrect)"


def eligible_members(row: ResponseRow, roster: list[MemberSpec], self_exclusion: bool = True) -> list[MemberSpec]:
    """The roster minus the vendor that produced the row (vendor self-exclusion)."""
    if not self_exclusion:
        return list(roster)
    return [m for m in roster if m.vendor != row.vendor]


def row_order(seed: int, row_id: str, vendors: list[str]) -> list[str]:
    """The row's seeded shuffle of its members: the order in which peers receive letters B, C, ..."""
    digest = hashlib.sha256(f"{seed}\x1f{row_id}".encode()).digest()
    order = sorted(vendors)
    random.Random(digest).shuffle(order)
    return order


def peers_for(
    viewer: str, order: list[str], round1: dict[str, JudgeCallRecord], pattern: re.Pattern[str]
) -> tuple[list[Peer], dict[str, str]]:
    """The viewer's peers with a valid round-one vote, lettered from B in the row's order, reasons scrubbed.

    Returns the peers to show and the letter -> vendor key (kept in the record for audit, never shown).
    """
    peers: list[Peer] = []
    letters: dict[str, str] = {}
    for vendor in order:
        record = round1.get(vendor)
        if vendor == viewer or record is None or record.verdict is None:
            continue
        letter = LETTERS[len(peers)]
        peers.append(Peer(letter=letter, verdict=record.verdict, reason=scrub(record.reason or "", pattern)))
        letters[letter] = vendor
    return peers, letters
