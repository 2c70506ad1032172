"""Member leniency and the panel offsets it gives (``aggregator.panel_leniency``), against a plain loop."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from aggregator import panel_leniency


def naive(scores: np.ndarray, group: np.ndarray, n_groups: int):
    r1 = scores[..., 0]
    R, M, D = r1.shape
    dev: dict[int, list[float]] = {m: [] for m in range(M)}
    for r in range(R):
        for d in range(D):
            valid = [r1[r, m, d] for m in range(M) if not np.isnan(r1[r, m, d])]
            if not valid:
                continue
            med = statistics.median_low(valid)
            for m in range(M):
                if not np.isnan(r1[r, m, d]):
                    dev[m].append(r1[r, m, d] - med)
    offset = [sum(v) / len(v) if v else np.nan for m, v in dev.items()]
    panels: dict[int, list[float]] = {g: [] for g in range(n_groups)}
    for r in range(R):
        seated = [offset[m] for m in range(M) if not np.isnan(r1[r, m]).all()]
        if seated:
            panels[int(group[r])].append(statistics.median_low(seated))
    return np.array(offset), np.array([sum(p) / len(p) if p else np.nan for g, p in panels.items()])


@pytest.mark.parametrize("seed", range(5))
def test_panel_leniency_equals_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    R, M, D = 120, 6, 3
    lenient = np.array([-0.4, 0.0, 0.5, 0.2, 0.0, -0.2])
    truth = rng.integers(0, 5, size=(R, 1, D)).astype(float)
    levels = np.clip(np.rint(truth + lenient[None, :, None] + rng.normal(0, 0.6, (R, M, D))), 0, 4)
    group = rng.integers(0, 5, size=R)
    for r in range(R):  # self-exclusion: group g's rows never see member g; some votes missing
        if group[r] < M:
            levels[r, group[r]] = np.nan
    levels[rng.random((R, M, D)) < 0.05] = np.nan
    scores = np.stack([levels, levels], axis=-1)
    got = panel_leniency(scores, group, 5)
    offset, panels = naive(scores, group, 5)
    np.testing.assert_allclose(got.member_offset, offset, atol=1e-12)
    np.testing.assert_allclose(got.group_offset, panels, atol=1e-12)
    assert np.argmax(got.member_offset) == 2 and np.argmin(got.member_offset) == 0  # the planted order
    assert got.spread == pytest.approx(np.nanmax(panels) - np.nanmin(panels))


def test_equal_members_give_no_panel_offset():
    levels = np.tile(np.array([[1.0, 1.0, 1.0, np.nan]]), (8, 1))[:, :, None]
    got = panel_leniency(np.stack([levels, levels], -1), np.zeros(8, dtype=int), 1)
    assert got.member_offset[:3].tolist() == [0.0, 0.0, 0.0] and np.isnan(got.member_offset[3])
    assert got.group_offset.tolist() == [0.0] and np.isnan(got.spread)
    with pytest.raises(ValueError, match="group"):
        panel_leniency(np.stack([levels, levels], -1), np.full(8, 3), 1)


def test_f_tail_at_extreme_arguments_does_not_fail():
    """A panel of a few rows can give ICC's F interval a near-zero denominator df against a huge statistic:
    the tail underflows to 0 or 1 instead of raising (as scipy gives)."""
    from scipy import stats

    from aggregator._fdist import f_isf, f_sf

    for f, d1, d2 in [(1e308, 3.0, 1e-3), (5.0, 2.0, 1e-6), (1e200, 1e-3, 5.0), (1e-300, 4.0, 4.0)]:
        assert f_sf(f, d1, d2) == pytest.approx(float(stats.f.sf(f, d1, d2)), abs=1e-12)
    assert f_isf(0.025, 4.0, 1e-6) > 1e290
