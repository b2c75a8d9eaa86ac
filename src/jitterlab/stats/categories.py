"""Outlier categories: contiguous value ranges separated by increasing thresholds.

Every stacked test (modified z-score, generalized ESD, Walsh) ends in the same shape: a
main cluster, then categories 1..k above thresholds t_0 < t_1 < ... < t_(k-1), where a
value x belongs to category j when t_(j-1) < x <= t_j. Keeping only the thresholds lets a
later run be classified with a reference run's cuts (baseline mode). Every
representation (a sorted array, chunks streamed or read on a cluster's workers, a table
of value counts) gets each category's count and range from one per-chunk function,
:func:`category_ranges`, folded by :func:`add_ranges`; on a sorted chunk it takes the
binary-search shortcut (every category is a slice).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from jitterlab.stats.scan import Scan

_CHUNK = 1 << 23  # values per pass of the chunked labelling (bounds temporary memory)


@dataclass(frozen=True)
class Category:
    """A value range of a stacked test: 0 is the main cluster, 1..k outlier categories,
    -1 the low-side outliers of a two-sided test."""

    index: int
    lower: float  # smallest member (NaN when empty)
    upper: float  # largest member (NaN when empty)
    count: int
    share: float


@dataclass(frozen=True)
class StackedResult:
    """Thresholds and categories of a stacked outlier test.

    ``thresholds[k]`` separates category k from k+1: values > thresholds[k] belong to a
    category above k. ``levels[k]`` is what the k-th cut came from (for the z-score test,
    its center and scale).
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
    """Category (0..k, or -1 below ``low_threshold``) of every value (int8).

    The label is the number of thresholds below the value: one comparison per threshold,
    added up in chunks, which beats a binary search for the handful of thresholds here.
    """
    x = np.asarray(values)
    out = np.zeros(x.size, dtype=np.int8)
    for start in range(0, x.size, _CHUNK):
        chunk = x[start : start + _CHUNK]
        labels = out[start : start + _CHUNK]
        for t in thresholds:
            labels += chunk > t
        if low_threshold is not None:
            labels[chunk < low_threshold] = -1
    return out


def search(ordered: np.ndarray, value: float, side: str) -> int:
    """``np.searchsorted`` for a float key that never converts an integer array to float
    (numpy would cast the whole array to compare): the key is rounded to the integer
    bound that selects the same position."""
    if np.issubdtype(ordered.dtype, np.integer):
        info = np.iinfo(ordered.dtype)
        key = math.ceil(value) if side == "left" else math.floor(value)
        return int(np.searchsorted(ordered, min(max(key, info.min), info.max), side=side))  # type: ignore[call-overload]
    return int(np.searchsorted(ordered, value, side=side))  # type: ignore[call-overload]


Ranges = tuple[np.ndarray, np.ndarray, np.ndarray]  # per value range: count, smallest, largest


def _sentinels(dtype: np.dtype, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest of ``slots`` empty ranges: the extremes of ``dtype`` reversed."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.full(slots, info.max, dtype), np.full(slots, info.min, dtype)
    return np.full(slots, np.inf, dtype), np.full(slots, -np.inf, dtype)


def category_ranges(
    x: np.ndarray,
    thresholds: tuple[float, ...],
    low: float | None,
    weights: np.ndarray | None = None,
    ordered: bool = False,
) -> Ranges:
    """Count, smallest and largest value of each category's value range in one chunk
    (-1 first when ``low`` is set, then 0..k; an empty range has count 0 and the reversed
    extremes of the dtype as its smallest and largest): the one per-chunk function of
    every representation's categories, folded by :func:`add_ranges`.

    ``weights``: how often each value occurs (a value table's counts, all positive);
    ``ordered``: the caller says ``x`` is sorted, so every range is a slice found by
    binary search instead of a label per value.
    """
    slots = len(thresholds) + 1 + (low is not None)
    lowest, highest = _sentinels(x.dtype, slots)
    if ordered:
        edges = [0]
        if low is not None:
            edges.append(search(x, low, "left"))
        edges += [search(x, t, "right") for t in thresholds]
        edges.append(x.size)
        starts, ends = np.asarray(edges[:-1]), np.asarray(edges[1:])
        filled = ends > starts
        lowest[filled] = x[starts[filled]]
        highest[filled] = x[ends[filled] - 1]
        if weights is None:
            return (ends - starts).astype(np.int64), lowest, highest
        cumulative = np.concatenate([[0], np.cumsum(weights, dtype=np.int64)])
        return cumulative[ends] - cumulative[starts], lowest, highest
    labels = categorize(x, thresholds, low).astype(np.intp) + (low is not None)
    np.minimum.at(lowest, labels, x)
    np.maximum.at(highest, labels, x)
    counts = np.bincount(labels, weights, minlength=slots)
    return counts.astype(np.int64), lowest, highest


def add_ranges(total: Ranges | None, more: Ranges) -> Ranges:
    """The fold of :func:`category_ranges`: counts added, extremes kept (in any order of
    the chunks; ``total`` None before the first)."""
    if total is None:
        return more
    return total[0] + more[0], np.minimum(total[1], more[1]), np.maximum(total[2], more[2])


def stacked_result(
    ranges: Ranges,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """The :class:`StackedResult` of the folded :func:`category_ranges` of a whole sample."""
    counts, lowest, highest = ranges
    found = [
        (int(c), float(a) if c else math.nan, float(b) if c else math.nan)
        for c, a, b in zip(counts.tolist(), lowest.tolist(), highest.tolist(), strict=True)
    ]
    categories = categories_of_ranges(found, -1 if low is not None else 0, keep_empty, int(counts.sum()))
    return StackedResult(thresholds, levels, categories, low, threshold)


def categories_scan(
    scan: Scan,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
    ordered: bool = False,
) -> StackedResult:
    """Count, range and share of every category of a sample read by ``scan`` (in memory,
    streamed or on a cluster's workers): :func:`category_ranges` of every chunk, folded.
    ``ordered``: every chunk is sorted (a sorted sample held as one chunk)."""
    total: Ranges | None = None
    for more in scan.map(category_ranges, thresholds, low, None, ordered):
        total = add_ranges(total, more)
    if total is None:  # no chunk at all: every range empty
        total = category_ranges(np.zeros(0, np.int64), thresholds, low)
    return stacked_result(total, thresholds, low, levels, threshold, keep_empty)


def build_result(
    ordered: np.ndarray,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """Count, range and share of every category of the **sorted** sample ``ordered``:
    :func:`categories_scan` of it as one sorted chunk (the fold of one chunk is the chunk's)."""
    ranges = category_ranges(ordered, thresholds, low, ordered=True)
    return stacked_result(ranges, thresholds, low, levels, threshold, keep_empty)


def categories_of_ranges(
    ranges: list[tuple[int, float, float]], first_index: int, keep_empty: bool, n: int
) -> tuple[Category, ...]:
    """The categories from (count, smallest, largest) of each value range in order, the
    first being category ``first_index``; empty ones kept only with ``keep_empty`` (never
    an empty low-side category)."""
    categories = []
    for k, (count, lower, upper) in enumerate(ranges):
        index = first_index + k
        if count == 0 and (not keep_empty or index == -1):
            continue
        categories.append(Category(index, lower, upper, count, count / n))
    return tuple(categories)


class Level(Protocol):
    """One level of a stacked test: the values that remain, however they are held (a
    sorted array, chunks read through the filters of the levels below, a table of value
    counts, a sample's gathered ends)."""

    def size(self) -> int:
        """How many values the level holds."""
        ...

    def cut(self) -> float | None:
        """The value above which the level's outliers lie (None: it has none), from the
        test's center and scale of this level (median/MAD, GESD, Walsh)."""
        ...

    def above(self, cut: float) -> Level:
        """The next level: the values above ``cut``."""
        ...


def stack_levels(first: Level, max_levels: int = 64) -> tuple[float, ...]:
    """Thresholds of a stacked test: the first level's cut, then the cut of the values above
    it, and so on until a level has no outlier, its cut leaves every value or none above it,
    or ``max_levels`` thresholds are found. The one loop that stacks levels: the in-memory,
    streamed, two-pass and cluster tests differ only in how a level is held."""
    thresholds: list[float] = []
    current = first
    while len(thresholds) < max_levels:
        count = current.size()
        if count == 0:
            break
        cut = current.cut()
        if cut is None:
            break
        upper = current.above(cut)
        if upper.size() in (0, count):
            break
        thresholds.append(cut)
        current = upper
    return tuple(thresholds)


class SortedLevel:
    """A level held as a sorted array: ``next_cut(values)`` is the test's cut; the outliers
    of a sorted sample are its tail, so every level is a slice."""

    def __init__(self, ordered: np.ndarray, next_cut: Callable[[np.ndarray], float | None]) -> None:
        self.ordered = ordered
        self.next_cut = next_cut

    def size(self) -> int:
        return int(self.ordered.size)

    def cut(self) -> float | None:
        return self.next_cut(self.ordered)

    def above(self, cut: float) -> SortedLevel:
        return SortedLevel(self.ordered[search(self.ordered, cut, "right") :], self.next_cut)
