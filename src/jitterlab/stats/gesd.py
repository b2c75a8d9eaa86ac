"""Generalized extreme studentized deviate test (Rosner 1983).

For up to r outliers, step i = 1..r removes the value farthest from the mean of what is
left and records

    R_i = max |x_j - mean| / s          (s: sample standard deviation, ddof = 1)
    lambda_i = (n - i) t_{p, n-i-1} / sqrt((n - i - 1 + t_{p, n-i-1}^2)(n - i + 1))
    p = 1 - alpha / (2 (n - i + 1))

The number of outliers is the largest i with R_i > lambda_i (two-sided test).

Speed: the sample is sorted once; the farthest value of the remainder is always at one of
its two ends, so the steps need only the r smallest and r largest values. Mean and
variance follow from the exact integer sums Σx and Σx² (:func:`gesd_steps`;
floats are scaled to integers by a common power of two first, which does not change R_i):
O(n log n + r) instead of O(n r), and the same numbers to the last bit as the test of a run
read in chunks (:mod:`jitterlab.stats.extremes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.stats.summary import exact_squares, exact_sum


@dataclass(frozen=True)
class GesdResult:
    """Outcome of the generalized ESD test."""

    n_outliers: int
    outlier_values: np.ndarray  # in the order they were removed
    statistics: np.ndarray  # R_i
    critical_values: np.ndarray  # lambda_i
    alpha: float


def gesd_steps(
    count: int, total: int, squares: int, lowest: list[int], highest: list[int], r: int
) -> tuple[list[bool], np.ndarray]:
    """The r removal steps of the generalized ESD test from exact integers.

    Parameters
    ----------
    count, total, squares
        n, Σx and Σx² of the sample (exact; the values may be integers scaled by a common
        power of two: R_i does not change with the scale).
    lowest, highest
        The r smallest values ascending and the r largest descending (same scale).
    r
        Steps (1 <= r <= n - 2).

    Returns
    -------
    (sides, statistics)
        ``sides[i]`` is True when step i removed the largest value left (False: the
        smallest); ``statistics[i]`` is R_i (0 when what is left has no spread).
    """
    m, s1, s2 = count, total, squares
    lo = hi = 0
    sides: list[bool] = []
    statistic = np.empty(r)
    for i in range(r):
        low, high = lowest[lo], highest[hi]
        if m * (high + low) >= 2 * s1:  # high − mean >= mean − low
            value, lo_side = high, False
            hi += 1
        else:
            value, lo_side = low, True
            lo += 1
        q = m * s2 - s1 * s1  # m (m − 1) s², exact
        d = m * value - s1  # m (x − mean), exact
        statistic[i] = math.sqrt(d * d * (m - 1) / (m * q)) if q > 0 else 0.0
        sides.append(not lo_side)
        s1 -= value
        s2 -= value * value
        m -= 1
    return sides, statistic


def gesd_critical_values(n: int, max_outliers: int, alpha: float) -> np.ndarray:
    """lambda_1..lambda_r of Rosner (1983) for a sample of size n."""
    i = np.arange(1, max_outliers + 1)
    p = 1 - alpha / (2 * (n - i + 1))
    from scipy import stats  # here, not at import: scipy costs `show` a second

    t = stats.t.ppf(p, n - i - 1)
    return np.asarray((n - i) * t / np.sqrt((n - i - 1 + t**2) * (n - i + 1)))


def generalized_esd(values: npt.ArrayLike, max_outliers: int, alpha: float = 0.05) -> GesdResult:
    """Generalized ESD many-outlier test (two-sided).

    Parameters
    ----------
    values
        The sample (at least 3 values).
    max_outliers
        Upper bound r on the number of outliers tested for; capped at n - 2.
    alpha
        Significance level.
    """
    x = np.sort(np.asarray(values))
    if x.dtype.kind not in "iu":
        x = x.astype(np.float64)
    n = x.size
    if n < 3:
        raise ValueError("the generalized ESD test needs at least 3 values")
    r = int(min(max_outliers, n - 2))
    if r < 1:
        raise ValueError("max_outliers must be at least 1")
    total, squares, lows, highs = _exact_ends(x, r)
    found, sides, statistic, critical = gesd_outcome(n, total, squares, lows, highs, r, alpha)
    removed = np.empty(r)
    lo, hi = 0, n - 1
    for i, side in enumerate(sides):
        if side:
            removed[i] = x[hi]
            hi -= 1
        else:
            removed[i] = x[lo]
            lo += 1
    return GesdResult(found, removed[:found], statistic, critical, alpha)


def gesd_outcome(
    count: int, total: int, squares: int, lowest: list[int], highest: list[int], r: int, alpha: float
) -> tuple[int, list[bool], np.ndarray, np.ndarray]:
    """The generalized ESD test from exact integers (:func:`gesd_steps`'s arguments):
    how many outliers it finds, each step's side, R_i and lambda_i. The one test: in
    memory (:func:`generalized_esd`) and read in chunks (stats/extremes.py) call it."""
    sides, statistic = gesd_steps(count, total, squares, lowest, highest, r)
    critical = gesd_critical_values(count, r, alpha)
    hits = np.flatnonzero(statistic > critical)
    return (int(hits[-1] + 1) if hits.size else 0), sides, statistic, critical


def _exact_ends(x: np.ndarray, r: int) -> tuple[int, int, list[int], list[int]]:
    """Σx, Σx², the r smallest values ascending and the r largest descending of a sorted
    sample, as exact integers: the values themselves for an integer sample; for floats
    each value m 2^e (m an integer of at most 53 bits) scaled by the smallest 2^e."""
    if x.dtype.kind in "iu":
        return exact_sum(x), exact_squares(x), x[:r].tolist(), x[::-1][:r].tolist()
    if not np.isfinite(x).all():
        raise ValueError("the generalized ESD test needs finite values")
    mantissa, exponent = np.frexp(x)
    m = np.ldexp(mantissa, 53).astype(np.int64)  # exact: at most 53 significant bits
    e = exponent.astype(np.int64) - 53
    nonzero = m != 0
    shift = np.where(nonzero, e - (int(e[nonzero].min()) if nonzero.any() else 0), 0)
    total = squares = 0
    for s in np.unique(shift).tolist():
        part = m[shift == s]
        total += exact_sum(part) << s
        squares += exact_squares(part) << (2 * s)

    def scaled(i: np.ndarray) -> list[int]:
        return [v << s for v, s in zip(m[i].tolist(), shift[i].tolist(), strict=True)]

    return total, squares, scaled(np.arange(r)), scaled(np.arange(x.size - 1, x.size - 1 - r, -1))


def default_max_outliers(n: int) -> int:
    """Default r: 10 % of the sample, at most 100 000 (and at least 1)."""
    return max(1, min(n // 10, 100_000))


def gesd_cut(sample: np.ndarray, alpha: float, max_outliers: int | None) -> float | None:
    """One level of the stacked GESD test (stats/extremes.py) held sorted in memory: the value just below its
    smallest outlier above the median (None when there is none)."""
    if sample.size < 3:
        return None
    result = generalized_esd(sample, max_outliers or default_max_outliers(sample.size), alpha)
    high = result.outlier_values[result.outlier_values > np.median(sample)]
    return float(np.nextafter(high.min(), -np.inf)) if high.size else None
