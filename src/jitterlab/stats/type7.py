"""The type-7 percentile, written once: every percentile jitterlab reports comes from here.

Definition (Hyndman & Fan 1996, type 7; numpy's default ``method="linear"``): for the
sorted sample x_0 … x_{n−1} and p in [0, 100],

    h = (n − 1) p / 100,   Q(p) = x_⌊h⌋ + (h − ⌊h⌋) (x_⌊h⌋+1 − x_⌊h⌋)

(x_n is read as x_{n−1}). Computing Q is two steps whatever holds the sample:
:func:`type7_ranks` turns (n, p) into the two 0-based ranks and the weight, and
:func:`type7_interpolate` combines the two order statistics found at those ranks — by
indexing a sorted array, a partial sort, a table of value counts, a radix refinement over
chunks or a cluster's passes. Because every path does the same float operations on the
same order statistics, they agree to the last bit. :func:`type7_percentiles` is the two
steps around a function that reads the order statistics at given ranks.

numpy's own ``np.percentile`` interpolates as ``b − (b − a)(1 − w)`` when w ≥ 0.5, so it
may differ from Q(p) in the last bit; jitterlab's figures use the form above throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

Levels = Sequence[float] | np.ndarray


def type7_ranks(n: int | np.ndarray, levels: Levels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranks type 7 interpolates between, and the weight.

    Parameters
    ----------
    n
        Sample size, or an array of sizes that broadcasts against ``levels`` (e.g.
        ``counts[:, None]`` for one sample per row).
    levels
        Percentiles in [0, 100].

    Returns
    -------
    (lo, hi, weight)
        int64 arrays of 0-based ranks ⌊h⌋ and min(⌊h⌋ + 1, n − 1) (0 for an empty sample)
        and the float64 weight h − ⌊h⌋, with h = (n − 1) p / 100.
    """
    size = np.asarray(n, dtype=np.int64)
    h = (size - 1) * np.asarray(levels, dtype=np.float64) / 100.0
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(size - 1, 0))
    return lo, hi, h - lo


def type7_interpolate(a: npt.ArrayLike, b: npt.ArrayLike, weight: npt.ArrayLike) -> np.ndarray:
    """Q = a + weight (b − a) in float64, from the order statistics ``a`` (rank lo) and ``b``
    (rank hi) of :func:`type7_ranks`."""
    fa = np.asarray(a).astype(np.float64)
    fb = np.asarray(b).astype(np.float64)
    return np.asarray(fa + np.asarray(weight, dtype=np.float64) * (fb - fa))


def type7_percentiles(n: int, levels: Levels, at_ranks: Callable[[np.ndarray], npt.ArrayLike]) -> np.ndarray:
    """Type-7 percentiles ``levels`` of a sample of ``n`` values whose order statistics
    ``at_ranks(ranks)`` reads (one call with every rank: the lo ranks, then the hi ranks);
    NaN for every level of an empty sample."""
    p = np.asarray(levels, dtype=np.float64)
    if n == 0:
        return np.full(p.shape, np.nan)
    lo, hi, weight = type7_ranks(n, p)
    values = np.asarray(at_ranks(np.concatenate([lo.ravel(), hi.ravel()])))
    a, b = values[: lo.size].reshape(lo.shape), values[lo.size :].reshape(hi.shape)
    return type7_interpolate(a, b, weight)
