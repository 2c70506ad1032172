"""Tests for the shared vote count (``tally_rounds``) and the counting paths behind it.

A precomputed tally must give exactly the results of counting inside each
function; the packed, blocked and pattern-based counting must agree with plain
per-member loops, including at block edges, for wide panels and for
non-contiguous input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import aggregator._agreement as agreement_mod
import aggregator._consensus as consensus_mod
import aggregator._deliberation as deliberation_mod
from aggregator._agreement import (
    agreement_summary,
    cohens_kappa_pairs,
    fleiss_kappa,
    krippendorff_alpha_nominal,
    pairwise_agreement,
)
from aggregator._codes import CORRECT, INCORRECT, MISSING
from aggregator._consensus import Tally, consensus, tally, tally_rounds
from aggregator._deliberation import (
    agreement,
    agreement_lift,
    consensus_flip_rate,
    deliberation_impact,
    deliberation_summary,
    member_flips,
    unanimity_lift,
)


def random_votes(seed: int, rows: int = 400, members: int = 5, p_missing: float = 0.25) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r1 = rng.integers(0, 2, size=(rows, members))
    r2 = np.where(rng.random((rows, members)) < 0.25, 1 - r1, r1)
    r1 = np.where(rng.random((rows, members)) < p_missing, MISSING, r1)
    r2 = np.where(rng.random((rows, members)) < p_missing, MISSING, r2)
    return np.stack([r1, r2], axis=2).astype(np.int8)


def naive_tally(v: np.ndarray) -> dict[str, np.ndarray]:
    """The tally's fields from plain comparisons over the member axis."""
    r1, r2 = v[:, :, 0], v[:, :, 1]
    both = (r1 != MISSING) & (r2 != MISSING)
    to_correct = (r1 == INCORRECT) & (r2 == CORRECT)
    to_incorrect = (r1 == CORRECT) & (r2 == INCORRECT)
    return {
        "y": (v == CORRECT).sum(axis=1),
        "n": (v != MISSING).sum(axis=1),
        "changed": (to_correct | to_incorrect).any(axis=1),
        "eligible": both.any(axis=1),
        "to_correct": to_correct.sum(axis=0),
        "to_incorrect": to_incorrect.sum(axis=0),
        "valid_both": both.sum(axis=0),
    }


def assert_tally_matches(t: Tally, v: np.ndarray) -> None:
    ref = naive_tally(v)
    for field, expected in ref.items():
        assert np.array_equal(getattr(t, field), expected), field


def all_results(v: np.ndarray, quorum: int, t: Tally | None) -> dict:
    kw = {} if t is None else {"tally": t}
    c = consensus(v, quorum, **kw)
    return {
        "consensus": {f: getattr(c, f) for f in ("verdict", "tie", "no_quorum", "y", "n")},
        "agreement": agreement(v, **kw),
        "deliberation_impact": deliberation_impact(v, **kw),
        "agreement_lift": agreement_lift(v, **kw),
        "consensus_flip_rate": consensus_flip_rate(v, quorum, **kw),
        "unanimity_lift": unanimity_lift(v, **kw),
        "member_flips": member_flips(v, **kw),
        "summary": deliberation_summary(v, [f"m{j}" for j in range(v.shape[1])], quorum, **kw),
    }


def assert_same(a, b, path: str = "", rel: float = 0.0) -> None:
    """Equality of nested results: same dtypes, NaN equal to NaN, floats within ``rel``."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}", rel)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), path
    elif isinstance(a, float) and rel:
        assert isinstance(b, float) and b == pytest.approx(a, rel=rel, abs=1e-15), path
    else:
        assert type(a) is type(b) and a == b, path


CASES = [
    (0, 400, 5, 0.25, 3),
    (1, 400, 4, 0.5, 2),  # even panel, heavy missingness
    (2, 300, 3, 0.8, 1),  # many empty rows
    (3, 200, 7, 0.1, 4),
    (4, 0, 5, 0.2, 3),  # no rows
    (5, 50, 1, 0.3, 1),  # a single member
]


@pytest.mark.parametrize("seed,rows,members,p_missing,quorum", CASES)
def test_precomputed_tally_gives_identical_results(seed, rows, members, p_missing, quorum):
    v = random_votes(seed, rows, members, p_missing)
    t = tally_rounds(v)
    assert isinstance(t, Tally) and t.members == members
    assert_tally_matches(t, v)
    assert_same(all_results(v, quorum, None), all_results(v, quorum, t))


def test_tally_matches_single_round_tally():
    v = random_votes(7)
    t = tally_rounds(v)
    for k in range(2):
        y, n = tally(v[:, :, k])
        assert np.array_equal(t.y[:, k], y) and np.array_equal(t.n[:, k], n)
        assert y.dtype == np.int64 and n.dtype == np.int64


def test_all_missing_and_no_members():
    v = np.full((6, 4, 2), MISSING, dtype=np.int8)
    t = tally_rounds(v)
    assert_tally_matches(t, v)
    assert_same(all_results(v, 3, None), all_results(v, 3, t))
    empty = np.zeros((3, 0, 2), dtype=np.int8)
    t = tally_rounds(empty)
    assert not t.n.any() and t.members == 0
    assert consensus(empty, tally=t).no_quorum.all()


@pytest.mark.parametrize("block", [1, 7, 64])
def test_block_edges(monkeypatch, block):
    v = random_votes(11, rows=203, members=6)
    expected = all_results(v, 3, None)
    monkeypatch.setattr(consensus_mod, "BLOCK_ROWS", block)
    monkeypatch.setattr(deliberation_mod, "BLOCK_ROWS", block)
    t = tally_rounds(v)
    assert_tally_matches(t, v)
    # Sums of agreement shares are made per block, so only their rounding may differ.
    assert_same(expected, all_results(v, 3, t), rel=1e-12)


def test_wide_panel_counts_past_one_packed_pass(monkeypatch):
    # Over 85 members the packed sums are flushed into int16 counts; a smaller
    # group size exercises the same path on a small array.
    v = random_votes(12, rows=150, members=9)
    expected = all_results(v, 3, None)
    monkeypatch.setattr(consensus_mod, "_PACKED_MEMBERS", 2)
    t = tally_rounds(v)
    assert t.y.dtype == np.int16
    assert_tally_matches(t, v)
    assert_same(expected, all_results(v, 3, t))


def test_many_members():
    v = random_votes(13, rows=120, members=90, p_missing=0.4)
    t = tally_rounds(v)
    assert_tally_matches(t, v)
    c = consensus(v, quorum=40, tally=t)
    ref = naive_tally(v)
    y, n = ref["y"], ref["n"]
    assert np.array_equal(c.verdict, ((y > n - y) & (n >= 40)).astype(np.int8))
    assert_same(all_results(v, 40, None), all_results(v, 40, t))


def test_non_contiguous_and_other_dtypes():
    v = random_votes(14, rows=300, members=5)
    expected = all_results(v, 3, None)
    fortran = np.asfortranarray(v)
    reversed_rounds = np.ascontiguousarray(v[:, :, ::-1])[:, :, ::-1]
    every_other = np.repeat(v, 2, axis=0)[::2]
    for other in (fortran, reversed_rounds, every_other, v.astype(np.int64)):
        assert_same(expected, all_results(other, 3, None))
        assert_same(expected, all_results(other, 3, tally_rounds(other)))


def test_tally_must_fit_the_votes():
    v = random_votes(15, rows=50)
    with pytest.raises(ValueError):
        consensus(v, tally=tally_rounds(v[:40]))
    with pytest.raises(ValueError):
        deliberation_summary(v[:, :4], ["a", "b", "c", "d"], tally=tally_rounds(v))
    with pytest.raises(TypeError):
        agreement_lift(v, tally=(1, 2))
    with pytest.raises(ValueError):
        tally_rounds(np.full((2, 3, 2), 2, dtype=np.int8))


@pytest.mark.parametrize("seed,members,p_missing", [(20, 5, 0.2), (21, 3, 0.7), (22, 10, 0.3), (23, 1, 0.1)])
def test_pattern_counting_matches_pairwise_loops(monkeypatch, seed, members, p_missing):
    v = random_votes(seed, rows=500, members=members, p_missing=p_missing)
    names = [f"m{j}" for j in range(members)]

    def results():
        out = {}
        for k in range(2):
            r = v[:, :, k]
            agree, n = pairwise_agreement(r)
            out[k] = {
                "agree": agree,
                "n": n,
                "kappa": cohens_kappa_pairs(r),
                "fleiss": fleiss_kappa(r),
                "alpha": krippendorff_alpha_nominal(r),
                "pairs": agreement_mod._vote_pair_counts(np.ascontiguousarray(r)),
                "ny": agreement_mod._ny_table(np.ascontiguousarray(r)),
            }
        out["summary"] = agreement_summary(v, names)
        return out

    by_pattern = results()
    monkeypatch.setattr(agreement_mod, "_BLOCK_ROWS", 37)
    assert_same(by_pattern, results())
    monkeypatch.setattr(agreement_mod, "_PATTERN_MEMBERS", 0)
    assert_same(by_pattern, results())


def test_pairwise_agreement_for_many_members():
    # 11 members is past the pattern limit; the pair-by-pair count is used.
    v = random_votes(24, rows=200, members=11)[:, :, 0]
    agree, n = pairwise_agreement(v)
    for i in range(11):
        for j in range(11):
            both = (v[:, i] != MISSING) & (v[:, j] != MISSING)
            assert n[i, j] == both.sum()
            assert agree[i, j] == pytest.approx((both & (v[:, i] == v[:, j])).sum() / both.sum())
