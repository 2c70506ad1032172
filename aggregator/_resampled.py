"""The cross-judge check's statistics over resamples, vectorised: one value per row of a (b, ...) array of
resamples (masked means, ranges, Kendall's tau-b and Spearman's rho row by row, spreads within segments), their
percentile intervals and quantiles, and how a spread is read against its no-preference interval
(``SAFE`` / ``NOT_SAFE``). The check itself and its definitions: ``aggregator._crossjudge``.
"""

from __future__ import annotations

import math

import numpy as np

from ._bootstrap import _MEMORY_BUDGET, _percentile_interval

SAFE = "safe"
NOT_SAFE = "not_safe"


def _num(x) -> float | None:
    """A statistic for a dict: a Python float, None where NaN."""
    x = float(x)
    return None if math.isnan(x) else x


def _masked_mean(x: np.ndarray, axis: int) -> np.ndarray:
    ok = ~np.isnan(x)
    n = ok.sum(axis=axis)
    s = np.where(ok, x, 0.0).sum(axis=axis)
    out = np.full(n.shape, np.nan)
    np.divide(s, n, out=out, where=n > 0)
    return out


def _range(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """max - min over ``axis`` ignoring NaN; NaN with fewer than two defined values."""
    ok = ~np.isnan(x)
    hi = np.where(ok, x, -np.inf).max(axis=axis)
    lo = np.where(ok, x, np.inf).min(axis=axis)
    out = hi - lo
    return np.where(ok.sum(axis=axis) >= 2, out, np.nan)


def _rank_blocks(n: int) -> int:
    """Resamples per block of the (b, n, n) rank-correlation work arrays."""
    return max(1, _MEMORY_BUDGET // (8 * 8 * max(n, 1) ** 2))


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of every row pair (x[b], y[b]), shape (b, n) -> (b,), as ``kendall_tau_b``."""
    n = x.shape[1]
    out = np.full(x.shape[0], np.nan)
    if n < 2:
        return out
    i, j = np.triu_indices(n, k=1)
    ok = ~(np.isnan(x) | np.isnan(y))
    for start in range(0, x.shape[0], _rank_blocks(n)):
        sl = slice(start, start + _rank_blocks(n))
        valid = ok[sl][:, i] & ok[sl][:, j]
        with np.errstate(invalid="ignore"):
            sx = np.where(valid, np.sign(x[sl][:, i] - x[sl][:, j]), 0.0)
            sy = np.where(valid, np.sign(y[sl][:, i] - y[sl][:, j]), 0.0)
        pairs = valid.sum(axis=1)
        free_x = pairs - (valid & (sx == 0)).sum(axis=1)
        free_y = pairs - (valid & (sy == 0)).sum(axis=1)
        den = np.sqrt(free_x.astype(np.float64)) * np.sqrt(free_y.astype(np.float64))
        tau = np.full(den.shape, np.nan)
        np.divide((sx * sy).sum(axis=1), den, out=tau, where=den > 0)
        out[sl] = np.clip(tau, -1.0, 1.0)
    return out


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row pair (x[b], y[b]), shape (b, n) -> (b,), as ``spearman``."""
    n = x.shape[1]
    out = np.full(x.shape[0], np.nan)
    if n < 2:
        return out
    ok = ~(np.isnan(x) | np.isnan(y))
    for start in range(0, x.shape[0], _rank_blocks(n)):
        sl = slice(start, start + _rank_blocks(n))
        m = ok[sl]
        count = m.sum(axis=1)
        centred = []
        for v in (x[sl], y[sl]):
            # rank = (# valid values below) + ((# valid values equal, itself included) + 1) / 2
            below = ((v[:, None, :] < v[:, :, None]) & m[:, None, :]).sum(axis=2)
            equal = ((v[:, None, :] == v[:, :, None]) & m[:, None, :]).sum(axis=2)
            rank = below + (equal + 1) / 2.0
            centred.append(np.where(m, rank - ((count + 1) / 2.0)[:, None], 0.0))
        dx, dy = centred
        den = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
        rho = np.full(den.shape, np.nan)
        np.divide((dx * dy).sum(axis=1), den, out=rho, where=(den > 0) & (count >= 2))
        out[sl] = np.clip(rho, -1.0, 1.0)
    return out


def _segment_range(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per row of x (b, K) and per segment [starts[g], starts[g+1]): max - min ignoring NaN,
    NaN with fewer than two defined values; shape (b, G)."""
    ok = ~np.isnan(x)
    hi = np.maximum.reduceat(np.where(ok, x, -np.inf), starts, axis=1)
    lo = np.minimum.reduceat(np.where(ok, x, np.inf), starts, axis=1)
    count = np.add.reduceat(ok.astype(np.int64), starts, axis=1)
    return np.where(count >= 2, hi - lo, np.nan)


def _null_scale(W: np.ndarray, n: int) -> np.ndarray:
    """Per resample (row of the count matrix W over n units): sqrt(n / sum_j (w_j - 1)^2), NaN if 0."""
    size = ((W - 1.0) ** 2).sum(axis=1)
    out = np.full(W.shape[0], np.nan)
    np.divide(float(n), size, out=out, where=size > 0)
    return np.sqrt(out)


def _quantile(samples: np.ndarray, q: float) -> float:
    s = samples[~np.isnan(samples)]
    return float(np.percentile(s, 100.0 * q)) if s.size else math.nan


def _interval(samples: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    return _percentile_interval(samples.reshape(samples.shape[0], -1), ci)


def _spread_reading(value: float, null_high: float, min_spread: float) -> str | None:
    if math.isnan(value) or math.isnan(null_high):
        return None
    return NOT_SAFE if value > null_high and value >= min_spread else SAFE


def _safe_div(num, den) -> np.ndarray:
    out = np.full(np.broadcast_shapes(np.shape(num), np.shape(den)), np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=np.asarray(den) != 0)
    return out
