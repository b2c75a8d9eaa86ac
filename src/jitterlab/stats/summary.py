"""Summary statistics of a latency sample, with percentiles to the far tail.

Percentile definition: linear interpolation between closest ranks (Hyndman & Fan type 7,
numpy's default ``method="linear"``): for sorted values x_0..x_{n-1} and p in [0, 100],
h = (n - 1) p / 100 and Q(p) = x_floor(h) + (h - floor(h)) (x_ceil(h) - x_floor(h)).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

SUMMARY_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
_CHUNK = 1 << 16  # 512 KiB of float64: the deviations stay in cache


def percentiles(values: npt.ArrayLike, ps: tuple[float, ...] | list[float]) -> np.ndarray:
    """Type-7 percentiles of ``values`` in O(n) with one partial sort for all of them.

    Parameters
    ----------
    values
        One-dimensional sample (not modified).
    ps
        Percentiles in [0, 100].

    Returns
    -------
    numpy.ndarray
        One float per requested percentile; NaN for an empty sample.
    """
    x = np.asarray(values)
    if x.size == 0:
        return np.full(len(ps), np.nan)
    h = (x.size - 1) * np.asarray(ps, dtype=np.float64) / 100.0
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, x.size - 1)
    part = np.partition(x, np.unique(np.concatenate([lo, hi])))
    a = part[lo].astype(np.float64)
    b = part[hi].astype(np.float64)
    return np.asarray(a + (h - lo) * (b - a))


def percentiles_sorted(ordered: np.ndarray, ps: tuple[float, ...] | list[float]) -> np.ndarray:
    """Type-7 percentiles of an already sorted sample: index arithmetic only."""
    if ordered.size == 0:
        return np.full(len(ps), np.nan)
    h = (ordered.size - 1) * np.asarray(ps, dtype=np.float64) / 100.0
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, ordered.size - 1)
    a = ordered[lo].astype(np.float64)
    b = ordered[hi].astype(np.float64)
    return np.asarray(a + (h - lo) * (b - a))


@dataclass(frozen=True)
class Summary:
    """Count, extremes, moments and tail percentiles of one sample, in its own unit."""

    count: int
    min: float
    max: float
    mean: float
    std: float
    p50: float
    p90: float
    p99: float
    p99_9: float
    p99_99: float
    p99_999: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: npt.ArrayLike, ordered: np.ndarray | None = None) -> Summary:
    """Summary of a sample; ``std`` is the population standard deviation (ddof=0).

    ``ordered`` is the sample sorted, when the caller has it (one sort serves the
    percentiles here and the stacked test). An empty sample gives count 0 and NaN
    elsewhere.
    """
    x = np.asarray(values)
    if x.size == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(x.mean(dtype=np.float64))
    # Sum of squared deviations in chunks: no full-size temporaries for large runs.
    squares = 0.0
    for start in range(0, x.size, _CHUNK):
        deviation = x[start : start + _CHUNK].astype(np.float64) - mean
        squares += float(np.dot(deviation, deviation))
    std = float(np.sqrt(squares / x.size))
    s = np.sort(x) if ordered is None else ordered
    p = percentiles_sorted(s, SUMMARY_PERCENTILES)
    return Summary(
        count=int(x.size),
        min=float(s[0]),
        max=float(s[-1]),
        mean=mean,
        std=std,
        p50=float(p[0]),
        p90=float(p[1]),
        p99=float(p[2]),
        p99_9=float(p[3]),
        p99_99=float(p[4]),
        p99_999=float(p[5]),
    )
