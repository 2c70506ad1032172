"""The council's rule for a graded dimension with too few valid levels, worked by hand on one row.

A dimension is omitted (``omitted:<dim>``, no council level, counted 0) when fewer of the panel's round-two levels
are valid than the quorum, not only when none is: a dimension two members of five scored is not the council's.
"""

from __future__ import annotations

import math

import numpy as np

from council.core.schema import Dimension, Scale
from council.scoring.scales import ScaleRows

SCALE = Scale(name="quality", levels=["0", "1", "2", "3", "4"],
              dimensions=[Dimension(name="accuracy", weight=0.75), Dimension(name="clarity", weight=0.25)])
MEMBERS = ["a", "b", "c", "d", "e"]


def one_row(accuracy: list[float], clarity: list[float]) -> np.ndarray:
    """Levels (1, M, D, 2) with the same levels in both rounds; NaN where a member gave no valid level."""
    levels = np.full((1, len(MEMBERS), 2, 2), np.nan)
    levels[0, :, 0, :] = np.array(accuracy)[:, None]
    levels[0, :, 1, :] = np.array(clarity)[:, None]
    return levels


def test_a_dimension_below_the_quorum_is_omitted_and_counts_zero():
    nan = math.nan
    row = ScaleRows.of(SCALE, np.array([0]), one_row([4, 3, 3, 2, 4], [4, 4, nan, nan, nan]), quorum=3)
    fields = row.fields(0, MEMBERS, np.arange(len(MEMBERS)))
    # accuracy: median of 2, 3, 3, 4, 4 is 3; clarity: two valid levels against a quorum of three
    assert fields["score"] == {"accuracy": 3, "clarity": None}
    assert fields["flags"] == ["omitted:clarity"]
    assert fields["score_normalised"] == 100 * 0.75 * 3 / 4  # clarity counts 0, its weight stays


def test_at_the_quorum_the_lower_middle_level_is_the_councils():
    nan = math.nan
    row = ScaleRows.of(SCALE, np.array([0]), one_row([4, 3, 3, 2, 4], [4, 1, nan, nan, nan]), quorum=2)
    fields = row.fields(0, MEMBERS, np.arange(len(MEMBERS)))
    assert fields["score"] == {"accuracy": 3, "clarity": 1}  # levels 1 and 4: the lower middle one
    assert fields["flags"] == ["split:clarity"]
    assert fields["score_normalised"] == 100 * (0.75 * 3 + 0.25 * 1) / 4
