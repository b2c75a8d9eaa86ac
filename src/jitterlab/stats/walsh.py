"""Walsh's nonparametric test for multiple outliers (Walsh 1950; as used in VRST'16 §3.2).

For the sorted sample X_1 <= ... <= X_n:

    c = ceil(sqrt(2 n)),   r = k + c,   b^2 = 1 / alpha
    a = (1 + b sqrt((c - b^2) / (c - 1))) / (c - b^2 - 1)

The k largest values are outliers when X_{n+1-k} - (1 + a) X_{n-k} + a X_{n+1-r} > 0.
alpha is 0.10 for 60 < n <= 220 and 0.05 for n > 220; the test is not defined for
n <= 60. The test is run for k = 1, 2, ... while it tests positive, and the last such k
is taken: k = 1 failing means no outlier. (Scanning every k and keeping the largest
positive one would pick up chance positives deep in the bulk of a large sample, where a
single gap between neighbours now and then exceeds a * c average gaps.) Like the paper
notes, a dense group of extremes can hide itself: when X_n and X_{n-1} are close, k = 1
fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class WalshResult:
    n_outliers: int
    threshold: float | None  # the smallest outlier (None when there is none)
    alpha: float
    c: int
    a: float


def walsh_alpha(n: int) -> float:
    """Significance level of the Walsh test for a sample of size n."""
    if n <= 60:
        raise ValueError(f"the Walsh test needs more than 60 values (got {n})")
    return 0.10 if n <= 220 else 0.05


def walsh_test(values: npt.ArrayLike) -> WalshResult:
    """Walsh's test for the largest values, with its k search (see module docs)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    result = walsh_of_largest(x, x.size)
    assert result is not None  # the whole sample decides every k
    return result


def walsh_of_largest(top: np.ndarray, n: int) -> WalshResult | None:
    """:func:`walsh_test` of a sample of ``n`` values from its ``top.size`` largest ones
    (float64, ascending; the whole sorted sample when top.size == n), or None when they do
    not decide: every k they answer (k <= top.size − c) tests positive and k = n − c is not
    among them. The statistic of each k is the same floating-point expression of the same
    three values whatever part of the sample is given, so the answer is the same to the bit."""
    alpha = walsh_alpha(n)
    c = math.ceil(math.sqrt(2 * n))
    b2 = 1.0 / alpha
    b = math.sqrt(b2)
    a = (1 + b * math.sqrt((c - b2) / (c - 1))) / (c - b2 - 1)
    # 1-based X_j is top[j - 1 - off]; k runs while X_{n+1-r} exists (r <= n).
    off = n - top.size
    last = n - c  # the largest k of the test
    if last < 1:
        return WalshResult(0, None, alpha, c, a)
    k = np.arange(1, min(last, top.size - c) + 1)
    r = k + c
    statistic = top[n - k - off] - (1 + a) * top[n - k - 1 - off] + a * top[n - r - off]
    failures = np.flatnonzero(statistic <= 0)
    if failures.size:
        count = int(failures[0])
    elif k.size == last:
        count = last
    else:
        return None
    if count == 0:
        return WalshResult(0, None, alpha, c, a)
    return WalshResult(count, float(top[n - count - off]), alpha, c, a)


def walsh_cut(sample: np.ndarray) -> float | None:
    """One level of the stacked Walsh test (stats/extremes.py) held sorted in memory: the value just below its
    smallest outlier (None when there is none or the sample has 60 values or fewer)."""
    if sample.size <= 60:
        return None
    result = walsh_test(sample)
    return None if result.threshold is None else float(np.nextafter(result.threshold, -np.inf))
