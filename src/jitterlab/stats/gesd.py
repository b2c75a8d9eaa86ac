"""Generalized extreme studentized deviate test (Rosner 1983).

For up to r outliers, step i = 1..r removes the value farthest from the mean of what is
left and records

    R_i = max |x_j - mean| / s          (s: sample standard deviation, ddof = 1)
    lambda_i = (n - i) t_{p, n-i-1} / sqrt((n - i - 1 + t_{p, n-i-1}^2)(n - i + 1))
    p = 1 - alpha / (2 (n - i + 1))

The number of outliers is the largest i with R_i > lambda_i (two-sided test).

Speed: the sample is sorted once; the farthest value of the remainder is always at one of
its two ends, and mean and variance follow from running sums of the data shifted by its
mean (which keeps the sums well conditioned). That makes the test O(n log n + r) instead
of O(n r).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.stats.categories import StackedResult, build_result, stack


@dataclass(frozen=True)
class GesdResult:
    """Outcome of the generalized ESD test."""

    n_outliers: int
    outlier_values: np.ndarray  # in the order they were removed
    statistics: np.ndarray  # R_i
    critical_values: np.ndarray  # lambda_i
    alpha: float


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
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n < 3:
        raise ValueError("the generalized ESD test needs at least 3 values")
    r = int(min(max_outliers, n - 2))
    if r < 1:
        raise ValueError("max_outliers must be at least 1")
    shift = float(x.mean())
    s1 = float(np.sum(x - shift))
    s2 = float(np.sum(np.square(x - shift)))
    lo, hi, m = 0, n - 1, n
    removed = np.empty(r)
    statistic = np.empty(r)
    for i in range(r):
        mean = s1 / m
        var = max((s2 - s1 * s1 / m) / (m - 1), 0.0)
        below = mean - (x[lo] - shift)
        above = (x[hi] - shift) - mean
        if above >= below:
            value, dev = x[hi], above
            hi -= 1
        else:
            value, dev = x[lo], below
            lo += 1
        statistic[i] = dev / np.sqrt(var) if var > 0 else 0.0
        removed[i] = value
        s1 -= value - shift
        s2 -= (value - shift) ** 2
        m -= 1
    critical = gesd_critical_values(n, r, alpha)
    hits = np.flatnonzero(statistic > critical)
    count = int(hits[-1] + 1) if hits.size else 0
    return GesdResult(count, removed[:count], statistic, critical, alpha)


def default_max_outliers(n: int) -> int:
    """Default r: 10 % of the sample, at most 100 000 (and at least 1)."""
    return max(1, min(n // 10, 100_000))


def stacked_gesd(
    values: npt.ArrayLike, alpha: float = 0.05, max_outliers: int | None = None
) -> StackedResult:
    """The generalized ESD test applied to its own high-side outliers again and again
    (VRST'16 §3.3): categories like the stacked z-test's. ``max_outliers`` defaults to
    :func:`default_max_outliers` of each level's size."""
    x = np.asarray(values)

    def cut(sample: np.ndarray) -> float | None:
        if sample.size < 3:
            return None
        result = generalized_esd(sample, max_outliers or default_max_outliers(sample.size), alpha)
        high = result.outlier_values[result.outlier_values > np.median(sample)]
        return float(np.nextafter(high.min(), -np.inf)) if high.size else None

    ordered = np.sort(x)
    return build_result(ordered, stack(ordered, cut), None, (), alpha, False)
