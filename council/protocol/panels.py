"""The council protocol's rules: who may grade a row, and what each member sees of its peers."""

from __future__ import annotations

import hashlib
import random

from council.core.schema import JudgeCallRecord, MemberSpec, ResponseRow
from council.protocol.anonymise import Anonymiser
from council.protocol.prompts import LETTERS, Peer

# The rules this module and the aggregator implement; recorded on every judge-call record.
METHODOLOGY_VERSION = "council-v1 (self-exclusion; blind round one; lettered round two; strict majority, ties incorrect)"


def panel(vendor: str, roster: list[MemberSpec], self_exclusion: bool = True) -> list[MemberSpec]:
    """Who sits on a row produced by ``vendor``, in roster order: the regular members minus that vendor's
    (vendor self-exclusion), with each emptied seat filled by the next reserve not of that vendor, so every
    row has the same panel size. Without self-exclusion the regular members sit and no reserve does."""
    regulars = [m for m in roster if not m.reserve]
    if not self_exclusion:
        return regulars
    seated = [m for m in regulars if m.vendor != vendor]
    fill = [m for m in roster if m.reserve and m.vendor != vendor][: len(regulars) - len(seated)]
    chosen = {m.vendor for m in seated} | {m.vendor for m in fill}
    return [m for m in roster if m.vendor in chosen]


def eligible_members(row: ResponseRow, roster: list[MemberSpec], self_exclusion: bool = True) -> list[MemberSpec]:
    """The panel of ``row`` (see :func:`panel`)."""
    return panel(row.vendor, roster, self_exclusion)


def row_order(seed: int, row_id: str, vendors: list[str]) -> list[str]:
    """The row's seeded shuffle of its members: the order in which peers receive letters B, C, ..."""
    digest = hashlib.sha256(f"{seed}\x1f{row_id}".encode()).digest()
    order = sorted(vendors)
    random.Random(digest).shuffle(order)
    return order


def peers_for(
    viewer: str, order: list[str], round1: dict[str, JudgeCallRecord], anonymiser: Anonymiser
) -> tuple[list[Peer], dict[str, str], dict[str, int]]:
    """The viewer's peers with a valid round-one vote (a verdict, or a graded item's levels), lettered from B
    in the row's order, each reason scrubbed by ``anonymiser`` as written by that peer's vendor (its own
    product words and split names included).

    Returns the peers to show, the letter -> vendor key (kept in the record for audit, never shown) and
    letter -> the number of names scrubbed from that peer's reason (letters with none left out).
    """
    peers: list[Peer] = []
    letters: dict[str, str] = {}
    scrubbed: dict[str, int] = {}
    for vendor in order:
        record = round1.get(vendor)
        if vendor == viewer or record is None or (record.verdict is None and record.scores is None):
            continue
        letter = LETTERS[len(peers)]
        reason, names = anonymiser.redact(record.reason or "", vendor)
        peers.append(Peer(letter=letter, verdict=record.verdict, reason=reason, scores=record.scores))
        letters[letter] = vendor
        if names:
            scrubbed[letter] = names
    return peers, letters, scrubbed
