"""Which rows deliberate, how far the audit of the others goes, and how round two is laid out: the rules the
coordinator (what to send) and scoring (what counts) both apply, so that a run and its rescore can never
disagree on them.

``--deliberate all`` sends round two on every row. ``--deliberate disputed`` sends it only on a row whose round
one is *disputed*; the other rows are *skipped*: their consensus is their round-one consensus. A seeded share
of the skipped rows (``--deliberation-audit F``, :func:`audited`) are the audit's *candidates*: round two is
still sent on them, archived but never counted, to measure what skipping changed.

Disputed, for a correct / incorrect item: the panel's round-one verdicts are not all the same, or some member
has no valid verdict (the unanimity cannot be confirmed, and round two may decide a quorum that round one
lacked). For a graded item: on some dimension the members' levels spread by more than one level, or some
member gave no valid level for it. A spread of one is a neighbouring-level disagreement, the rubric's
resolution: the council's level (the median) then lies between them whatever round two does, so the row's
score can move by at most one level's width on that dimension, where a spread of two or more leaves a
panel in real disagreement, with room for persuasion (or herding) to move the median across a level.

The audit is sequential (``deliberation_audit_stop``, :class:`Rule` ``audit_stop``). Its candidates are taken
in the order the run takes its rows, in slices: the first slice is the fewest audited rows whose 95% Wilson
interval of the flip rate (the share of audited rows whose verdict round two would have changed,
:func:`changed_verdicts`, :func:`changed_levels`) could end at or under ``audit_stop`` with no flip
(:func:`audit_first_slice`); each later slice (a quarter of the candidates before it, :func:`next_slice_end`) is
audited only while the upper end of that interval, over every audited row of the slices before it, is still
above ``audit_stop`` (:func:`keep_auditing`).
Once it is not, no later candidate is audited. ``audit_stop`` 0 audits every candidate (a fixed share). What the
run audited is what its archive holds: a row that is not disputed and has a round two is an audit row
(:meth:`Rule.role`), so scoring counts exactly the rows the run audited, whatever decided it.

Within a correct / incorrect audit row (``audit_stop`` above 0) round two is asked in waves until the row's change
is decided (:func:`audit_wave`, :func:`audit_change`): a wave is the fewest of the members not yet asked that would
decide it if each kept its round-one verdict, and the row is decided once every way the members not asked could
answer gives the same change. A unanimous panel of five that keeps its verdict is decided by three votes; the answer
is always the one the whole panel would give. Scoring counts such a row complete when every member asked answered
and those answers decide it (:func:`audit_decided`).

Round two's layout (:func:`round_two_layout`). ``judge-v4`` repeats round one only where a provider's prompt cache
serves the repeat at its cache-read rate: the member's round-two request continues round one's conversation
(the judge-v3 layout) when that request can be round one's whole request again, and round one's request was at
least :data:`CACHE_MIN_TOKENS` long; otherwise round two is the judge-v2 layout, one new message without round
one's instructions repeated. Round one's request can be repeated whole when it held this row alone (round two is
then sent alone too), or, under ``--deliberate all``, when it held several rows, all of which deliberate (round
two then goes out as that request's rows, when they are all queued). A disputed subset of a request of several
rows is never its whole request. The rule reads round one's archived record alone, so a resumed run makes the
same bodies, hence the same request keys (:func:`council.transport.shape.vote_key`), as the run it resumes.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

import aggregator as agg
from council.core.schema import JudgeCallRecord
from council.protocol.prompts import CACHED_VERSION, CONVERSATION_VERSION, PROMPT_VERSION

Mode = Literal["all", "disputed"]
MODES: tuple[str, ...] = ("all", "disputed")
CODE = {"correct": agg.CORRECT, "incorrect": agg.INCORRECT}  # a verdict as the aggregator's vote code
LEVEL_SPREAD = 1  # a graded row is disputed when some dimension's levels spread by more than this
AUDIT_CI = 0.95  # the audit's interval
CACHE_MIN_TOKENS = 1024
"""The shortest prompt a provider's cache serves: OpenAI's automatic caching and Anthropic's breakpoints on most
Claude models (some models want more; they then serve nothing of a judge-v3 round two, as of a judge-v2 one)."""


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
    """A run's deliberation settings (its config's ``deliberate``, ``deliberation_audit``,
    ``deliberation_audit_stop`` and ``seed``)."""

    mode: Mode = "all"
    audit_share: float = 0.0
    seed: int = 0
    audit_stop: float = 0.0  # 0: every candidate is audited

    @classmethod
    def of(cls, config: Mapping | object) -> Rule:
        """The rule of a ``CouncilConfig`` or of a manifest's ``config`` dict (older runs: every row deliberates;
        a run recorded before the sequential audit: the whole share audited)."""
        get = config.get if isinstance(config, Mapping) else lambda k, d: getattr(config, k, d)
        return cls(get("deliberate", "all"), float(get("deliberation_audit", 0.0) or 0.0), int(get("seed", 0)),
                   float(get("deliberation_audit_stop", 0.0) or 0.0))

    def candidate(self, row_id: str) -> bool:
        """Whether a skipped row is one of the audit's candidates (its seeded share)."""
        return self.mode == "disputed" and audited(self.seed, row_id, self.audit_share)

    def role(self, row_id: str, is_disputed: bool, asked: bool) -> Role:
        """What round two is on the row: counted (``deliberated``), not sent (``skipped``), or sent and never
        counted (``audit``: a row not disputed whose round two was ``asked``, as the archive holds it)."""
        if self.mode == "all" or is_disputed:
            return "deliberated"
        return "audit" if asked else "skipped"


# -- the sequential audit -------------------------------------------------------------------------------------


def audit_bound(changed: int, rows: int) -> float:
    """The upper end of the 95% Wilson interval of ``changed`` of ``rows`` (1 with no row)."""
    return 1.0 if rows <= 0 else agg.wilson_interval(changed, rows, AUDIT_CI)[1]


def audit_first_slice(stop: float) -> int:
    """The candidates of the audit's first slice for the threshold ``stop``: the fewest audited rows whose bound
    (:func:`audit_bound`) could be at or under ``stop``, none of them changed (0 when ``stop`` is 0: the audit
    never stops early)."""
    if stop <= 0.0:
        return 0
    z2 = audit_bound(0, 1) / (1.0 - audit_bound(0, 1))  # bound(0, n) = z^2 / (n + z^2)
    first = max(1, math.ceil(z2 * (1.0 - stop) / stop - 1e-9))
    while audit_bound(0, first) > stop:
        first += 1
    return first


def next_slice_end(end: int) -> int:
    """Where the audit's next slice ends, the slices before it ending at ``end`` candidates: a quarter more (at
    least one), so that an audit that does not stop looks at its bound a number of times that grows only as the
    logarithm of its candidates, and one that stops takes at most a quarter more rows than it needed."""
    return end + max(1, math.ceil(end / 4))


def keep_auditing(stop: float, changed: int, rows: int) -> bool:
    """Whether the audit goes on to its next slice, having seen ``changed`` of ``rows`` audited rows change: its
    bound is still above ``stop`` (always, when ``stop`` is 0)."""
    return stop <= 0.0 or audit_bound(changed, rows) > stop


def changed_verdicts(first: np.ndarray, second: np.ndarray, quorum: int) -> np.ndarray:
    """(n,) bool: whether each audit row's consensus would change had its round two counted. ``first`` and
    ``second`` are (n, M) verdict codes (``aggregator.MISSING`` where a member gave none or sits out)."""
    votes = np.stack([np.asarray(first, dtype=np.int8), np.asarray(second, dtype=np.int8)], axis=2)
    if not len(votes):
        return np.zeros(0, dtype=bool)
    verdict = agg.consensus(votes, quorum=quorum).verdict
    return verdict[:, 1] != verdict[:, 0]


def audit_change(first: np.ndarray, second: np.ndarray, open_: np.ndarray, quorum: int) -> bool | None:
    """Whether a correct / incorrect audit row's verdict would change had its round two counted, if the round-two
    votes in already decide it: ``first`` and ``second`` (M,) verdict codes (``MISSING`` where none), ``open_`` (M,)
    bool: the panel members whose round two was not asked. Decided when every way the open members could answer
    (correct, incorrect, or no valid vote) gives the same; None when it is not (:func:`changed_verdicts` decides)."""
    cols = np.flatnonzero(np.asarray(open_, dtype=bool))
    answers = np.array(list(itertools.product((agg.CORRECT, agg.INCORRECT, agg.MISSING), repeat=len(cols))),
                       dtype=np.int8).reshape(3 ** len(cols), len(cols))
    seconds = np.repeat(np.asarray(second, dtype=np.int8)[None, :], len(answers), axis=0)
    seconds[:, cols] = answers
    firsts = np.repeat(np.asarray(first, dtype=np.int8)[None, :], len(answers), axis=0)
    changed = changed_verdicts(firsts, seconds, quorum)
    return bool(changed[0]) if (changed == changed[0]).all() else None


def audit_decided(first: np.ndarray, second: np.ndarray, open_: np.ndarray, quorum: int) -> np.ndarray:
    """(n,) bool: :func:`audit_change` is decided on each of n audit rows (``first``, ``second``: (n, M) codes;
    ``open_``: (n, M) bool). A row whose whole panel was asked is decided."""
    out = np.ones(len(open_), dtype=bool)
    for i in np.flatnonzero(np.asarray(open_, dtype=bool).any(axis=1)):
        out[i] = audit_change(first[i], second[i], open_[i], quorum) is not None
    return out


def audit_wave(first: np.ndarray, second: np.ndarray, open_: np.ndarray, order: Sequence[int],
               quorum: int) -> list[int]:
    """The members an audit row asks next (indices into the (M,) arrays of :func:`audit_change`): the fewest of
    ``order`` (its open members, cheapest first) that would decide the row if each kept its round-one verdict,
    round two's usual answer on a unanimous panel (all of them when none would). The row asks wave after wave
    until it is decided, so it takes the same answer as with its whole panel asked, from fewer votes."""
    order = list(order)
    for k in range(1, len(order)):
        trial = np.asarray(second, dtype=np.int8).copy()
        trial[order[:k]] = np.asarray(first, dtype=np.int8)[order[:k]]
        still = np.asarray(open_, dtype=bool).copy()
        still[order[:k]] = False
        if audit_change(first, trial, still, quorum) is not None:
            return order[:k]
    return order


def changed_levels(levels: np.ndarray, quorum: int) -> np.ndarray:
    """(n,) bool: whether some dimension's council level of each graded audit row would change had its round two
    counted. ``levels`` is (n, M, D, 2) float: round one's and round two's levels, NaN where none was given (a
    member outside the panel gives none); the quorum is at most M, as scoring decides graded rows."""
    levels = np.asarray(levels, dtype=np.float64)
    if not len(levels):
        return np.zeros(0, dtype=bool)
    council = agg.score_consensus(levels, quorum=min(quorum, max(1, levels.shape[1]))).score
    before, after = council[..., 0], council[..., 1]
    return (~((before == after) | (np.isnan(before) & np.isnan(after)))).any(axis=1)


# -- round two's layout ---------------------------------------------------------------------------------------


def round_one_tokens(record: JudgeCallRecord) -> int:
    """The prompt tokens of the request that asked ``record``'s round-one vote, from its usage as the provider
    counted it: the vote's share of the request's prompt times the request's rows (a repaired vote's usage
    holds two prompts: halved)."""
    return record.usage.prompt_tokens * max(1, len(record.batch_rows)) // max(1, len(record.raw_outputs))


def round_two_layout(version: str, first: JudgeCallRecord, *, mode: Mode, contain: bool = True) -> str:
    """The prompt layout of a member's round two (``judge-v2`` or ``judge-v3``) in a run of prompt ``version``,
    from ``first``, the member's round-one record of the row: judge-v2 and judge-v3 runs keep their own layout;
    judge-v4 follows round one's conversation only where a prompt cache serves the repeat (see the module's
    docstring)."""
    if version != CACHED_VERSION:
        return version
    whole = len(first.batch_rows) <= 1 or mode == "all"
    cached = contain and whole and round_one_tokens(first) >= CACHE_MIN_TOKENS
    return CONVERSATION_VERSION if cached else PROMPT_VERSION
