"""Calibration of stated confidence, for responses that carry one.

Per-row inputs: ``confidence`` float in [0, 1], NaN when the response stated
none; ``correct`` 0/1 (1 when the consensus judged the response correct);
``abstained`` bool (the model declined to answer); ``model`` the model index.

Brier score and expected calibration error use the *confident* rows: a
confidence is stated and the model did not abstain. The selective score uses
every row. Values whose rows are empty are NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ._bootstrap import _as_index, _check_count
from ._codes import plain


def _as_confidence(confidence) -> np.ndarray:
    c = np.asarray(confidence, dtype=np.float64)
    if c.ndim != 1:
        raise ValueError(f"confidence must be one-dimensional, got shape {c.shape}")
    stated = ~np.isnan(c)
    if ((c[stated] < 0.0) | (c[stated] > 1.0)).any():
        raise ValueError("confidence must lie in [0, 1] (or be NaN when absent)")
    return c


def _as_flags(values, what: str, rows: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != rows:
        raise ValueError(f"{what} has {arr.shape[0]} rows, expected {rows}")
    if arr.size and not (arr.dtype == bool or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{what} must be a bool or integer array, got dtype {arr.dtype}")
    if arr.size and not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{what} may only contain 0 and 1")
    return arr.astype(bool)


def _abstained_or_none(abstained, rows: int) -> np.ndarray:
    if abstained is None:
        return np.zeros(rows, dtype=bool)
    return _as_flags(abstained, "abstained", rows)


def _check_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    return int(n_bins)


def _check_penalty(penalty) -> float:
    p = float(penalty)
    if not math.isfinite(p) or p < 0:
        raise ValueError(f"penalty must be a finite non-negative number, got {penalty!r}")
    return p


def confidence_bins(confidence, n_bins: int = 10) -> np.ndarray:
    """Equal-width bin index in ``[0, n_bins)`` of each confidence.

    Bin ``b`` is ``[b / n_bins, (b + 1) / n_bins)`` with edges computed as
    ``b / n_bins`` (so a stated 0.3 falls in bin 3 of 10); confidence 1.0
    goes in the last bin. NaN confidences get bin -1.
    """
    c = _as_confidence(confidence)
    n_bins = _check_bins(n_bins)
    edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    bins = np.searchsorted(edges, c, side="right") - 1
    bins = np.minimum(bins, n_bins - 1)
    bins[np.isnan(c)] = -1
    return bins.astype(np.int64)


def _confident(c: np.ndarray, abst: np.ndarray) -> np.ndarray:
    return ~np.isnan(c) & ~abst


def brier(confidence, correct, abstained=None) -> float:
    """Mean of (confidence - correct)^2 over confident rows; NaN if none.

    ``abstained`` (optional) removes rows where the model declined.
    """
    c = _as_confidence(confidence)
    y = _as_flags(correct, "correct", c.shape[0])
    use = _confident(c, _abstained_or_none(abstained, c.shape[0]))
    if not use.any():
        return math.nan
    return float(np.mean((c[use] - y[use]) ** 2))


def expected_calibration_error(confidence, correct, n_bins: int = 10, abstained=None) -> float:
    """ECE = sum_b (n_b / N) * |mean confidence_b - mean correct_b| over confident rows.

    Equal-width bins as in ``confidence_bins``; NaN if no confident row.
    """
    c = _as_confidence(confidence)
    y = _as_flags(correct, "correct", c.shape[0])
    n_bins = _check_bins(n_bins)
    use = _confident(c, _abstained_or_none(abstained, c.shape[0]))
    total = int(np.count_nonzero(use))
    if not total:
        return math.nan
    bins = confidence_bins(c[use], n_bins)
    sum_conf = np.bincount(bins, weights=c[use], minlength=n_bins)
    sum_correct = np.bincount(bins, weights=y[use].astype(np.float64), minlength=n_bins)
    # (n_b / N) * |sum_conf_b / n_b - sum_correct_b / n_b| = |sum_conf_b - sum_correct_b| / N
    return float(np.abs(sum_conf - sum_correct).sum() / total)


def selective_score(correct, abstained, penalty: float = 1.0) -> float:
    """Mean over all rows of +1 (correct, answered), 0 (abstained), -penalty (wrong, answered).

    NaN if there are no rows.
    """
    y = np.asarray(correct)
    if y.ndim != 1:
        raise ValueError(f"correct must be one-dimensional, got shape {y.shape}")
    y = _as_flags(y, "correct", y.shape[0])
    a = _as_flags(abstained, "abstained", y.shape[0])
    p = _check_penalty(penalty)
    if not y.size:
        return math.nan
    return float(np.mean(_row_selective(y, a, p)))


def _row_selective(y: np.ndarray, a: np.ndarray, penalty: float) -> np.ndarray:
    return np.where(a, 0.0, np.where(y, 1.0, -penalty))


def calibration_by_model(
    confidence, correct, abstained, model, n_models: int, *, penalty: float = 1.0, n_bins: int = 10
) -> dict[str, np.ndarray]:
    """Per-model calibration metrics, shape (n_models,) each.

    Keys: ``brier``, ``ece``, ``selective`` (float, NaN where the model has
    no qualifying row), ``n_confident`` (rows with a stated confidence and
    no abstention), ``n_abstained`` and ``n_rows`` (int64).
    """
    c = _as_confidence(confidence)
    rows = c.shape[0]
    y = _as_flags(correct, "correct", rows)
    a = _as_flags(abstained, "abstained", rows)
    n_models, m = _model_index(model, n_models, rows)
    p = _check_penalty(penalty)
    n_bins = _check_bins(n_bins)

    yf = y.astype(np.float64)
    n_rows = np.bincount(m, minlength=n_models).astype(np.int64)
    n_abstained = np.bincount(m[a], minlength=n_models).astype(np.int64)
    selective = _nan_ratio(np.bincount(m, weights=_row_selective(y, a, p), minlength=n_models), n_rows)

    use = _confident(c, a)
    mu, cu, yu = m[use], c[use], yf[use]
    n_confident = np.bincount(mu, minlength=n_models).astype(np.int64)
    brier_ = _nan_ratio(np.bincount(mu, weights=(cu - yu) ** 2, minlength=n_models), n_confident)

    cell = mu * n_bins + confidence_bins(cu, n_bins)
    size = n_models * n_bins
    sum_conf = np.bincount(cell, weights=cu, minlength=size).reshape(n_models, n_bins)
    sum_correct = np.bincount(cell, weights=yu, minlength=size).reshape(n_models, n_bins)
    ece = _nan_ratio(np.abs(sum_conf - sum_correct).sum(axis=1), n_confident)

    return {
        "brier": brier_,
        "ece": ece,
        "selective": selective,
        "n_confident": n_confident,
        "n_abstained": n_abstained,
        "n_rows": n_rows,
    }


def _nan_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(den), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out




def calibration_summary(
    confidence, correct, abstained, model, names, *, penalty: float = 1.0, n_bins: int = 10
) -> dict:
    """Per-model calibration as plain Python: {name: {brier, ece, selective,
    n_confident, n_abstained, n_rows}}, floats rounded to 6 places, NaN as None.

    ``names`` names the models in index order.
    """
    names = [str(x) for x in names]
    if len(set(names)) != len(names):
        raise ValueError("model names must be unique")
    res = calibration_by_model(
        confidence, correct, abstained, model, len(names), penalty=penalty, n_bins=n_bins
    )
    return {
        name: {
            "brier": plain(res["brier"][j]),
            "ece": plain(res["ece"][j]),
            "selective": plain(res["selective"][j]),
            "n_confident": int(res["n_confident"][j]),
            "n_abstained": int(res["n_abstained"][j]),
            "n_rows": int(res["n_rows"][j]),
        }
        for j, name in enumerate(names)
    }


def _model_index(model, n_models, rows: int) -> tuple[int, np.ndarray]:
    """``(n_models, model)`` checked: a non-negative count and (rows,) integer indexes below it."""
    n_models = _check_count(n_models, "n_models")
    return n_models, _as_index(model, "model", n_models, rows=rows)


def reliability_bins(confidence, correct, abstained, model, n_models: int, *, n_bins: int = 10) -> dict[str, np.ndarray]:
    """Per-model reliability diagram over the confident rows, in the equal-width bins of ``confidence_bins``
    (the bins ``expected_calibration_error`` uses, so ``sum_b n_b / N * |mean_confidence_b - share_correct_b|``
    is each model's ECE).

    Keys: ``edges`` (n_bins + 1,) bin edges; ``n`` (n_models, n_bins) int64 confident rows per bin;
    ``mean_confidence`` and ``share_correct`` (n_models, n_bins) float, NaN in empty bins.
    """
    c = _as_confidence(confidence)
    rows = c.shape[0]
    y = _as_flags(correct, "correct", rows)
    a = _abstained_or_none(abstained, rows)
    n_models, m = _model_index(model, n_models, rows)
    n_bins = _check_bins(n_bins)

    use = _confident(c, a)
    cu = c[use]
    cell = m[use] * n_bins + confidence_bins(cu, n_bins)
    size = n_models * n_bins
    n = np.bincount(cell, minlength=size).astype(np.int64).reshape(n_models, n_bins)
    sum_conf = np.bincount(cell, weights=cu, minlength=size).reshape(n_models, n_bins)
    sum_correct = np.bincount(cell, weights=y[use].astype(np.float64), minlength=size).reshape(n_models, n_bins)
    return {
        "edges": np.arange(n_bins + 1, dtype=np.float64) / n_bins,
        "n": n,
        "mean_confidence": _nan_ratio(sum_conf, n),
        "share_correct": _nan_ratio(sum_correct, n),
    }
