"""Which rows deliberate: the one rule the coordinator (whether to send round two) and scoring (which rows'
round two counts) both apply, so that a run and its rescore can never disagree on it.

``--deliberate all`` sends round two on every row. ``--deliberate disputed`` sends it only on a row whose round
one is *disputed*; the other rows are *skipped*: their consensus is their round-one consensus. A seeded share
of the skipped rows (``--deliberation-audit F``) still gets round two, archived but never counted, to measure
what skipping changed.

Disputed, for a correct / incorrect item: the panel's round-one verdicts are not all the same, or some member
has no valid verdict (the unanimity cannot be confirmed, and round two may decide a quorum that round one
lacked). For a graded item: on some dimension the members' levels spread by more than one level, or some
member gave no valid level for it. A spread of one is a neighbouring-level disagreement, the rubric's
resolution: the council's level (the median) then lies between them whatever round two does, so the row's
score can move by at most one level's width on that dimension, where a spread of two or more leaves a
panel in real disagreement, with room for persuasion (or herding) to move the median across a level.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Mode = Literal["all", "disputed"]
MODES: tuple[str, ...] = ("all", "disputed")
LEVEL_SPREAD = 1  # a graded row is disputed when some dimension's levels spread by more than this


def disputed(verdicts: Iterable[str | None]) -> bool:
    """Whether a correct / incorrect row's round-one ``verdicts`` (one per panel member, None: no valid
    verdict) are disputed: not all given, or not all the same. No vote at all is disputed too."""
    given = list(verdicts)
    return not given or any(v is None for v in given) or len(set(given)) > 1


def disputed_levels(levels: Iterable[Mapping[str, int] | None], dimensions: Sequence[str]) -> bool:
    """Whether a graded row's round-one ``levels`` (one mapping dimension -> level per panel member, None: no
    valid answer) are disputed: some member lacks a level on some dimension of ``dimensions``, or some
    dimension's levels spread by more than :data:`LEVEL_SPREAD`."""
    given = list(levels)
    if not given:
        return True
    for d in dimensions:
        column = [None if member is None else member.get(d) for member in given]
        if any(x is None for x in column) or max(column) - min(column) > LEVEL_SPREAD:
            return True
    return False


def sampled(label: str, seed: int, key: Iterable[object], share: float) -> bool:
    """Whether ``key`` is in the seeded sample of ``share`` that ``label`` names (a hash of the label, the seed
    and the key: the same sample on every run, rerun and resume with that seed). The batch audit's votes and
    the deliberation audit's rows are both drawn so."""
    if share <= 0.0:
        return False
    digest = hashlib.sha256("\x1f".join([label, str(seed), *map(str, key)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < share


def audited(seed: int, row_id: str, share: float) -> bool:
    """Whether the row ``row_id`` is in the deliberation audit's seeded sample of ``share`` of the rows."""
    return sampled("deliberation-audit", seed, [row_id], share)


Role = Literal["deliberated", "skipped", "audit"]


@dataclass(frozen=True)
class Rule:
    """A run's deliberation settings (its config's ``deliberate``, ``deliberation_audit`` and ``seed``)."""

    mode: Mode = "all"
    audit_share: float = 0.0
    seed: int = 0

    @classmethod
    def of(cls, config: Mapping | object) -> Rule:
        """The rule of a ``CouncilConfig`` or of a manifest's ``config`` dict (older runs: every row deliberates)."""
        get = config.get if isinstance(config, Mapping) else lambda k, d: getattr(config, k, d)
        return cls(get("deliberate", "all"), float(get("deliberation_audit", 0.0) or 0.0), int(get("seed", 0)))

    def role(self, row_id: str, is_disputed: bool) -> Role:
        """What round two is on the row: counted (``deliberated``), not sent (``skipped``), or sent and never
        counted (``audit``)."""
        if self.mode == "all" or is_disputed:
            return "deliberated"
        return "audit" if audited(self.seed, row_id, self.audit_share) else "skipped"
