"""The stacked modified z-score test of a sample read in chunks, in memory independent of
its size, with results identical to the in-memory function
(:func:`jitterlab.stats.zscore.stacked_z_test`); its categories and the time windows are
passes written once in :mod:`jitterlab.stats.categories` and :mod:`jitterlab.stats.windows`
(re-exported here: ``categories_scan``, ``time_windows_scan``, ``time_windows_chunks``).

Nothing is estimated. Every median and MAD is the order statistic itself, found by radix
refinement over the chunks (:func:`jitterlab.stats.summary.percentiles_by`'s selection):

- level k's sample is the values above the previous level's cut (all values for level 1),
  read again as a filter of the chunks;
- its median from the order statistics at ranks floor((n-1)/2) and n/2;
- its MAD from the same ranks of the doubled deviations |2x - 2 median|, which are
  integers for integer samples (the median is a whole or a half number), halved after;
- the MeanAD fallback (MAD = 0) from the exact integer sum of those deviations;
- once a level's sample holds at most ``in_memory_at`` values it is gathered and the rest
  of the stack runs in memory on it (the same functions as the in-memory test).

Categories (count, smallest and largest member) are one pass
(:func:`jitterlab.stats.categories.category_ranges` per chunk); the windows are
:func:`jitterlab.stats.windows.time_windows_scan`'s passes.

With a baseline, the screening (:mod:`jitterlab.stats.screening`) is a pass over the reference
for its outlier share and its top category, and one over the run for its category counts.

Every pass is one pure function of a chunk whose results the caller folds (integer sums,
minima, maxima, concatenations sorted after), run by a :class:`~jitterlab.stats.scan.Scan`:
in this process (the ``*_chunks`` functions) or on a cluster's workers (the ``*_scan``
functions with ``jitterlab.cluster.scan.ClusterScan``). The folds do not depend on how
the sample is cut into chunks, so both give the same numbers to the last bit.

Samples are integers (latencies in ns) of magnitude below 2^52, so every comparison of a
value with a float cut and every halving is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from jitterlab.stats.categories import StackedResult
from jitterlab.stats.categories import categories_scan as categories_scan
from jitterlab.stats.scan import LocalScan, Scan, identity
from jitterlab.stats.screening import baseline_scan as baseline_scan
from jitterlab.stats.screening import screen_scan as screen_scan
from jitterlab.stats.summary import exact_sum, extent_by, order_statistics_by
from jitterlab.stats.windows import time_extent_chunk as time_extent_chunk
from jitterlab.stats.windows import time_windows_chunks as time_windows_chunks
from jitterlab.stats.windows import time_windows_scan as time_windows_scan
from jitterlab.stats.zscore import RobustScale, robust_scale_of, stacked_cuts

Chunks = Callable[[], Iterable[np.ndarray]]

IN_MEMORY_AT = 1 << 22  # values of a level gathered to finish the stack in memory (32 MiB)


def keep_above(x: np.ndarray, key: int) -> np.ndarray:
    """The values of a chunk above the integer ``key`` (a step)."""
    return x[x > key]


def doubled_deviation(x: np.ndarray, twice: int) -> np.ndarray:
    """|2x − twice| of a chunk: twice the deviations from a median ``twice`` / 2 (a step)."""
    doubled: np.ndarray = np.abs(2 * x - twice)
    return doubled


def _above(scan: Scan, cut: float | None) -> Scan:
    """The scan's values above ``cut`` (all of them for None)."""
    if cut is None:
        return scan
    return scan.then(keep_above, math.floor(cut))  # x > cut  <=>  x > floor(cut) for integers


def robust_scale_chunks(chunks: Chunks, count: int, lowest: int, highest: int) -> RobustScale:
    """:func:`jitterlab.stats.zscore.robust_scale_of` of a non-empty integer sample read as
    chunks (see the module docs)."""
    return robust_scale_scan(LocalScan(chunks), count, lowest, highest)


def robust_scale_scan(scan: Scan, count: int, lowest: int, highest: int) -> RobustScale:
    """:func:`robust_scale_chunks` of a sample read by ``scan``."""
    return robust_scale_of(_ScanLevels(scan, (count, lowest, highest)))


def stacked_z_chunks(
    chunks: Chunks,
    threshold: float = 3.5,
    two_sided: bool = False,
    in_memory_at: int = IN_MEMORY_AT,
) -> StackedResult:
    """:func:`jitterlab.stats.zscore.stacked_z_test` of an integer sample read as chunks
    (each call of ``chunks`` reads it again in the same order); identical results."""
    return stacked_z_scan(LocalScan(chunks), threshold, two_sided, in_memory_at)


def stacked_z_scan(
    scan: Scan,
    threshold: float = 3.5,
    two_sided: bool = False,
    in_memory_at: int = IN_MEMORY_AT,
) -> StackedResult:
    """:func:`stacked_z_chunks` of a sample read by ``scan``."""
    thresholds, levels, low = stacked_cuts(_ScanLevels(scan), threshold, two_sided, in_memory_at)
    return categories_scan(scan, thresholds, low, levels, threshold, False)


class _ScanLevels:
    """A level read in chunks: its values through the filters of the levels below; its
    order statistics by radix refinement, its deviations' as those of the doubled
    deviations |2x - 2 median| (integers), halved."""

    def __init__(self, scan: Scan, extent: tuple[int, int, int] | None = None) -> None:
        self.scan = scan
        self._extent = extent

    def extent(self) -> tuple[int, int, int]:
        if self._extent is None:
            self._extent = extent_by(self.scan)[:3]
        return self._extent

    def above(self, cut: float) -> _ScanLevels:
        return _ScanLevels(_above(self.scan, cut))

    def size(self) -> int:
        return self.extent()[0]

    def order_statistics(self, ranks: list[int]) -> dict[int, Any]:
        return dict(order_statistics_by(self.scan, ranks, *self.extent()[1:], self.size()))

    def deviations(self, middle: tuple[Any, Any], ranks: list[int]) -> dict[int, float]:
        count, lowest, highest = self.extent()
        twice = int(middle[0]) + int(middle[1])  # 2 * median, an integer
        doubled = self.scan.then(doubled_deviation, twice)
        d = order_statistics_by(doubled, ranks, 0, max(2 * highest - twice, twice - 2 * lowest), count)
        return {k: d[k] / 2.0 for k in ranks}

    def mean_deviation(self, middle: tuple[Any, Any]) -> float:
        twice = int(middle[0]) + int(middle[1])
        total: int = sum(self.scan.then(doubled_deviation, twice).map(exact_sum))
        return total / (2 * self.size())

    def sorted_values(self) -> np.ndarray:
        return np.sort(np.concatenate(list(self.scan.map(identity))))
