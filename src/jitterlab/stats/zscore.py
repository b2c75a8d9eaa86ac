"""Modified z-score (Iglewicz & Hoaglin 1993) and the stacked test (Stauffert et al. 2016).

    Z_i = 0.6745 (x_i - median) / MAD,    MAD = median |x_i - median|

A sample is an outlier when Z_i > 3.5 (high side, the default for latency) or |Z_i| > 3.5
(two-sided). Quantised latencies often give MAD = 0; then the mean absolute deviation
form is used instead of flagging everything above the median:

    Z_i = (x_i - median) / (1.253314 * MeanAD),    MeanAD = mean |x_i - median|

(1.253314 = sqrt(pi/2) makes MeanAD consistent with the standard deviation of a normal
distribution, as 1/0.6745 = 1.4826 does for MAD.) When MeanAD is 0 too, every value is
the median and nothing is an outlier.

The stacked test applies the high-side test to the outliers again and again until none
remain: the main cluster, then outlier categories 1..k. Because every level cuts at
``center + threshold * scale`` the categories are contiguous value ranges separated by
increasing thresholds, so a later run can be classified with a reference run's thresholds
(baseline mode, VRST'16 eqs. 4-5).

Speed: the sample is sorted once. The median is then an index, the MAD the middle of two
sorted sequences (the deviations left and right of the median) found by binary search,
every level's outliers a tail slice, and every category a slice.

Written once: :func:`robust_scale_of` and :func:`stacked_cuts` read a sample through the
order statistics of a :class:`Levels`; a sample in memory is the one-chunk case (a
:class:`SortedLevels`), a run read in chunks or held as a table of values and counts
gives the same order statistics by its own passes (stats/outofcore.py, stats/twopass.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from jitterlab.stats.categories import StackedResult, build_result, search, stack_levels
from jitterlab.stats.summary import exact_sum

MAD_CONSISTENCY = 0.6745  # Phi^-1(0.75): MAD / 0.6745 estimates sigma for normal data
MEANAD_CONSISTENCY = 1.253314  # sqrt(pi / 2): 1.253314 * MeanAD estimates sigma
DEFAULT_THRESHOLD = 3.5
MAX_LEVELS = 64  # a safety bound; real data stops after a handful


@dataclass(frozen=True)
class RobustScale:
    """Center and scale of one level: z = (x - center) / scale."""

    center: float
    scale: float  # MAD / 0.6745, or 1.253314 * MeanAD when MAD is 0; 0 when all values are equal
    mad: float
    fallback: bool  # True when the MeanAD form was used


def median_sorted(ordered: np.ndarray) -> float:
    """Median of a sorted sample (the mean of the two middle values when n is even)."""
    n = ordered.size
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (float(ordered[mid - 1]) + float(ordered[mid])) / 2.0


class Levels(Protocol):
    """A sample as the stacked test walks it, however it is held: sorted in memory
    (:class:`SortedLevels`), read in chunks (``jitterlab.stats.outofcore``) or as a table of
    values and counts (``jitterlab.stats.twopass``). It gives the order statistics the
    robust scale needs; :func:`robust_scale_of` and :func:`stacked_cuts` are written once
    over them."""

    def size(self) -> int:
        """How many values the sample holds."""
        ...

    def above(self, cut: float) -> Levels:
        """The values above ``cut``."""
        ...

    def order_statistics(self, ranks: list[int]) -> dict[int, Any]:
        """The value at each 0-based rank of the sorted sample (ints for integer samples)."""
        ...

    def deviations(self, middle: tuple[Any, Any], ranks: list[int]) -> dict[int, float]:
        """The value at each 0-based rank of the sorted |x - center|, center the mean of the
        two ``middle`` order statistics (the same one twice when the size is odd)."""
        ...

    def mean_deviation(self, middle: tuple[Any, Any]) -> float:
        """mean |x - center| (center as for :meth:`deviations`), exact for integers."""
        ...

    def sorted_values(self) -> np.ndarray:
        """The values, sorted."""
        ...


def _kth_deviation(ordered: np.ndarray, center: float, split: int, k: int) -> float:
    """k-th smallest (0-based) of |x - center| over a sorted sample without building it:
    the deviations left of ``split`` (center - x, read right to left) and from ``split``
    on (x - center) are two ascending sequences; binary search on how many come from the
    left one (the k-th element of two sorted arrays)."""
    na, nb = split, ordered.size - split

    def a(i: int) -> float:
        return center - float(ordered[split - 1 - i])

    def b(j: int) -> float:
        return float(ordered[split + j]) - center

    lo, hi = max(0, k + 1 - nb), min(k + 1, na)
    while lo <= hi:
        i = (lo + hi) // 2
        j = k + 1 - i
        if i < na and j > 0 and b(j - 1) > a(i):
            lo = i + 1
        elif i > 0 and j < nb and a(i - 1) > b(j):
            hi = i - 1
        else:
            return max(a(i - 1) if i > 0 else -np.inf, b(j - 1) if j > 0 else -np.inf)
    raise AssertionError("unreachable: the k-th element always exists")


def _center(middle: tuple[Any, Any]) -> float:
    """The median from its two middle order statistics (equal when the size is odd)."""
    a, b = middle
    return float(a) if a == b else (float(a) + float(b)) / 2.0


class SortedLevels:
    """A sample held sorted in memory (one chunk): every order statistic is an index, the
    deviations' a binary search over the two sorted runs left and right of the center, and
    a level above a cut a tail slice."""

    def __init__(self, ordered: np.ndarray) -> None:
        self.ordered = ordered

    def size(self) -> int:
        return int(self.ordered.size)

    def above(self, cut: float) -> SortedLevels:
        return SortedLevels(self.ordered[search(self.ordered, cut, "right") :])

    def order_statistics(self, ranks: list[int]) -> dict[int, Any]:
        return {r: self.ordered[r].item() for r in ranks}

    def deviations(self, middle: tuple[Any, Any], ranks: list[int]) -> dict[int, float]:
        center = _center(middle)
        split = search(self.ordered, center, "left")
        return {k: _kth_deviation(self.ordered, center, split, k) for k in ranks}

    def mean_deviation(self, middle: tuple[Any, Any]) -> float:
        ordered, n = self.ordered, self.ordered.size
        center = _center(middle)
        split = search(ordered, center, "left")
        if ordered.dtype.kind in "iu":
            # integers: the exact sum of the doubled deviations |2x - 2 center| (whole numbers)
            twice = int(middle[0]) + int(middle[1])
            deviations = (2 * exact_sum(ordered[split:]) - twice * (n - split)) + (
                twice * split - 2 * exact_sum(ordered[:split])
            )
            return deviations / (2 * n)
        below = float(ordered[:split].sum(dtype=np.float64))
        above = float(ordered[split:].sum(dtype=np.float64))
        return ((above - center * (n - split)) + (center * split - below)) / n

    def sorted_values(self) -> np.ndarray:
        return self.ordered


def robust_scale_of(sample: Levels) -> RobustScale:
    """Median, MAD and the modified z-score's scale of a non-empty sample however it is
    held (see the module docs): the one robust scale, from the sample's order statistics
    at ranks floor((n-1)/2) and floor(n/2), and the same ranks of its deviations."""
    n = sample.size()
    if n == 0:
        raise ValueError("robust scale of an empty sample")
    ranks = sorted({(n - 1) // 2, n // 2})
    v = sample.order_statistics(ranks)
    middle = (v[(n - 1) // 2], v[n // 2])
    center = _center(middle)
    d = sample.deviations(middle, ranks)
    mad = d[(n - 1) // 2]
    if n % 2 == 0:
        mad = (mad + d[n // 2]) / 2.0
    if mad > 0:
        return RobustScale(center, mad / MAD_CONSISTENCY, mad, fallback=False)
    return RobustScale(center, MEANAD_CONSISTENCY * sample.mean_deviation(middle), 0.0, fallback=True)


def robust_scale_sorted(ordered: np.ndarray) -> RobustScale:
    """Median, MAD and the modified z-score's scale of a **sorted** sample (see module docs)."""
    return robust_scale_of(SortedLevels(ordered))


def robust_scale(values: npt.ArrayLike) -> RobustScale:
    """Median, MAD and the scale used by the modified z-score (MeanAD fallback when MAD = 0)."""
    return robust_scale_sorted(np.sort(np.asarray(values)))


def modified_z_scores(values: npt.ArrayLike, scale: RobustScale | None = None) -> np.ndarray:
    """Modified z-score of every value (against ``scale``, by default the sample's own).

    Where the scale is 0 (all values equal) every score is 0.
    """
    x = np.asarray(values, dtype=np.float64)
    s = scale or robust_scale(x)
    if s.scale == 0:
        return np.zeros_like(x)
    return np.asarray((x - s.center) / s.scale)


def modified_z_outliers(
    values: npt.ArrayLike,
    threshold: float = DEFAULT_THRESHOLD,
    two_sided: bool = False,
    scale: RobustScale | None = None,
) -> np.ndarray:
    """Boolean mask of outliers: Z > threshold, or |Z| > threshold when two-sided."""
    z = modified_z_scores(values, scale)
    return np.asarray(np.abs(z) > threshold if two_sided else z > threshold)


def stacked_z_test(
    values: npt.ArrayLike,
    threshold: float = DEFAULT_THRESHOLD,
    two_sided: bool = False,
    baseline: StackedResult | None = None,
    ordered: np.ndarray | None = None,
) -> StackedResult:
    """The stacked modified z-score test.

    Parameters
    ----------
    values
        Latency sample.
    threshold
        Z above which a value is an outlier (3.5, Iglewicz & Hoaglin).
    two_sided
        Also flag low outliers of the first level (|Z| > threshold) as category -1; only
        the high side is stacked.
    baseline
        Thresholds from a reference run (baseline mode): they are applied as they are
        instead of being estimated from ``values``.
    ordered
        ``values`` already sorted, when the caller has them (saves the sort).

    Returns
    -------
    StackedResult
        Thresholds, the levels they came from, and categories with value range, count and
        share. Categories partition the sample; empty categories of a baseline are kept so
        that runs line up.
    """
    s = np.sort(np.asarray(values)) if ordered is None else ordered
    if s.size == 0:
        raise ValueError("stacked test of an empty sample")
    if baseline is not None:
        return build_result(
            s, baseline.thresholds, baseline.low_threshold, baseline.levels, baseline.threshold, True
        )
    thresholds, levels, low = stacked_cuts(SortedLevels(s), threshold, two_sided, s.size)
    return build_result(s, thresholds, low, levels, threshold, False)


def stacked_cuts(
    sample: Levels, threshold: float, two_sided: bool, in_memory_at: int
) -> tuple[tuple[float, ...], tuple[RobustScale, ...], float | None]:
    """The stacked z-score test's thresholds, the levels they came from and the low
    threshold, by :func:`~jitterlab.stats.categories.stack_levels`, whatever holds the
    sample: the one stacked z-score test (in memory it is given a :class:`SortedLevels`);
    a level of at most ``in_memory_at`` values is sorted and finished in memory."""
    levels: list[RobustScale] = []

    def z_cut(level: RobustScale) -> float | None:
        if level.scale == 0:
            return None
        levels.append(level)
        return level.center + threshold * level.scale

    first = _ZLevel(sample, z_cut, in_memory_at)
    if first.size() == 0:
        raise ValueError("stacked test of an empty sample")
    thresholds = stack_levels(first, MAX_LEVELS)
    low = levels[0].center - threshold * levels[0].scale if two_sided and levels else None
    return thresholds, tuple(levels[: len(thresholds)]), low


class _ZLevel:
    """A level of the stacked z-score test: its cut from the robust scale of ``sample``,
    which is sorted and held in memory once it has at most ``in_memory_at`` values."""

    def __init__(
        self, sample: Levels, z_cut: Callable[[RobustScale], float | None], in_memory_at: int
    ) -> None:
        self.sample, self.z_cut, self.in_memory_at = sample, z_cut, in_memory_at
        self._size: int | None = None

    def _held(self) -> Levels:
        if not isinstance(self.sample, SortedLevels) and self.size() <= self.in_memory_at:
            self.sample = SortedLevels(self.sample.sorted_values())
        return self.sample

    def size(self) -> int:
        if self._size is None:
            self._size = self.sample.size()
        return self._size

    def cut(self) -> float | None:
        return self.z_cut(robust_scale_of(self._held()))

    def above(self, cut: float) -> _ZLevel:
        return _ZLevel(self._held().above(cut), self.z_cut, self.in_memory_at)
