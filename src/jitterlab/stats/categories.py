"""Outlier categories: contiguous value ranges separated by increasing thresholds.

Every stacked test (modified z-score, generalized ESD, Walsh) ends in the same shape: a
main cluster, then categories 1..k above thresholds t_0 < t_1 < ... < t_(k-1), where a
value x belongs to category j when t_(j-1) < x <= t_j. Keeping only the thresholds lets a
later run be classified with a reference run's cuts (baseline mode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_CHUNK = 1 << 23  # values per pass of the chunked loops (bounds temporary memory)


@dataclass(frozen=True)
class Category:
    """A value range of the stacked test: 0 is the main cluster, 1..k outlier categories,
    -1 the low-side outliers of a two-sided test."""

    index: int
    lower: float  # smallest member
    upper: float  # largest member
    count: int
    share: float


@dataclass(frozen=True)
class StackedResult:
    """Thresholds and categories of the stacked modified z-score test.

    ``thresholds[k]`` separates category k from k+1: values > thresholds[k] belong to a
    category above k. ``levels[k]`` is the center and scale the k-th cut came from.
    """

    thresholds: tuple[float, ...]
    levels: tuple[object, ...]
    categories: tuple[Category, ...]
    low_threshold: float | None
    threshold: float

    def labels(self, values: npt.ArrayLike) -> np.ndarray:
        """Category of every value under these thresholds (int8)."""
        return categorize(values, self.thresholds, self.low_threshold)


def categorize(
    values: npt.ArrayLike, thresholds: tuple[float, ...], low_threshold: float | None = None
) -> np.ndarray:
    """Category (0..k, or -1 below ``low_threshold``) of every value, in chunks to bound memory."""
    x = np.asarray(values)
    out = np.empty(x.size, dtype=np.int8)
    cuts = np.asarray(thresholds, dtype=np.float64)
    for start in range(0, x.size, _CHUNK):
        chunk = x[start : start + _CHUNK]
        labels = np.searchsorted(cuts, chunk, side="left").astype(np.int8)
        if low_threshold is not None:
            labels[chunk < low_threshold] = -1
        out[start : start + _CHUNK] = labels
    return out


def _range_counts(
    x: np.ndarray, cuts: np.ndarray, low: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, min and max per category in one chunked pass (slot 0 holds category -1)."""
    k = cuts.size + 2
    counts = np.zeros(k, dtype=np.int64)
    mins = np.full(k, np.inf)
    maxs = np.full(k, -np.inf)
    for start in range(0, x.size, _CHUNK):
        chunk = x[start : start + _CHUNK]
        labels = np.searchsorted(cuts, chunk, side="left") + 1
        if low is not None:
            labels[chunk < low] = 0
        chunk_counts = np.bincount(labels, minlength=k)
        counts += chunk_counts
        for label in np.flatnonzero(chunk_counts):
            members = chunk[labels == label]
            mins[label] = min(mins[label], float(members.min()))
            maxs[label] = max(maxs[label], float(members.max()))
    return counts, mins, maxs


def build_result(
    x: np.ndarray,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """Count, range and share of every category of ``x`` under ``thresholds``."""
    counts, mins, maxs = _range_counts(x, np.asarray(thresholds, dtype=np.float64), low)
    categories = []
    for slot, count in enumerate(counts):
        index = slot - 1
        if index == -1 and low is None:
            continue
        if count == 0 and not keep_empty:
            continue
        lo, hi = (float(mins[slot]), float(maxs[slot])) if count else (float("nan"), float("nan"))
        categories.append(Category(index, lo, hi, int(count), float(count) / x.size))
    return StackedResult(thresholds, levels, tuple(categories), low, threshold)


def stack(
    x: np.ndarray, next_cut: Callable[[np.ndarray], float | None], max_levels: int = 64
) -> tuple[float, ...]:
    """Thresholds of a stacked test: ``next_cut(sample)`` returns the value above which the
    sample's outliers lie (None when there are none); it is applied to the outliers again
    until no outlier remains."""
    thresholds: list[float] = []
    current = x
    for _ in range(max_levels):
        if current.size == 0:
            break
        cut = next_cut(current)
        if cut is None:
            break
        outliers = current[current > cut]
        if outliers.size == 0 or outliers.size == current.size:
            break
        thresholds.append(cut)
        current = outliers
    return tuple(thresholds)
