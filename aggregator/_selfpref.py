"""Self-preference audit: how a vendor's own judge grades its own vendor's models, against the council.

With ``--shadow-self`` the excluded own-vendor member also grades round one blind; its vote is recorded,
never counted. Per vendor, over that vendor's rows with a valid shadow vote: the share the shadow judge
calls correct, the share the council calls correct, their difference (leniency), and where the truth is
known, both false-positive rates on rows whose truth is incorrect.
"""

from __future__ import annotations

import numpy as np

from ._codes import CORRECT, INCORRECT, MISSING


def self_preference(shadow: np.ndarray, council: np.ndarray, gold: np.ndarray, group: np.ndarray,
                    n_groups: int) -> dict[str, np.ndarray]:
    """Per group (the rows' vendor): rows, shadow and council 'correct' rates, leniency, false-positive rates.

    ``shadow`` (R,) vote codes, MISSING where no shadow vote; ``council`` (R,) 0/1; ``gold`` (R,) codes.
    """
    shadow, council, gold, group = map(np.asarray, (shadow, council, gold, group))
    has = shadow != MISSING
    wrong = has & (gold == INCORRECT)

    def rate(mask: np.ndarray, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = np.bincount(group[mask], minlength=n_groups)
        k = np.bincount(group[mask & hit], minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, k / np.maximum(n, 1), np.nan), n

    shadow_rate, rows = rate(has, shadow == CORRECT)
    council_rate, _ = rate(has, council == 1)
    shadow_fp, wrong_rows = rate(wrong, shadow == CORRECT)
    council_fp, _ = rate(wrong, council == 1)
    return {"rows": rows, "shadow_correct_rate": shadow_rate, "council_correct_rate": council_rate,
            "leniency": shadow_rate - council_rate, "rows_truth_incorrect": wrong_rows,
            "shadow_false_positive_rate": shadow_fp, "council_false_positive_rate": council_fp}
