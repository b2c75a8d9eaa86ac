"""The stacked modified z-score test and the time windows of a sample read in chunks, in
memory independent of its size, with results identical to the in-memory functions
(:func:`jitterlab.stats.zscore.stacked_z_test`, :func:`jitterlab.stats.windows.time_windows`).

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

Categories (count, smallest and largest member) and the per-window count, exact sum, max
and category counts are one pass each; each window's p50 and p99 are order statistics
found by refinement per window (2^18 / windows buckets, at least 2^8, per window and rank
per pass).

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

from jitterlab.stats.categories import StackedResult, categories_of_ranges, categorize
from jitterlab.stats.scan import LocalScan, Scan, identity
from jitterlab.stats.screening import baseline_scan as baseline_scan
from jitterlab.stats.screening import screen_scan as screen_scan
from jitterlab.stats.summary import exact_sum, extent_by, order_statistics_by
from jitterlab.stats.windows import WindowTable, no_windows, window_count, window_ranks, window_table
from jitterlab.stats.zscore import RobustScale, robust_scale_of, stacked_cuts

Chunks = Callable[[], Iterable[np.ndarray]]
TimedChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]  # (t_send_ns, latency_ns)

IN_MEMORY_AT = 1 << 22  # values of a level gathered to finish the stack in memory (32 MiB)
_WINDOW_BUCKETS = 1 << 8  # buckets per window and rank in one refinement pass
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


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


def categories_of_chunks(
    chunks: Chunks,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """:func:`jitterlab.stats.categories.build_result` of a sample read as chunks (one pass)."""
    return categories_scan(LocalScan(chunks), thresholds, low, levels, threshold, keep_empty)


def category_chunk(
    x: np.ndarray, thresholds: tuple[float, ...], low: float | None, slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, smallest and largest value of each category slot in one chunk (slot 0 is
    category -1 when there is a low threshold)."""
    first = -1 if low is not None else 0
    labels = categorize(x, thresholds, low).astype(np.intp) - first
    lowest = np.full(slots, _INT64_MAX)
    highest = np.full(slots, _INT64_MIN)
    np.minimum.at(lowest, labels, x)
    np.maximum.at(highest, labels, x)
    return np.bincount(labels, minlength=slots).astype(np.int64), lowest, highest


def categories_scan(
    scan: Scan,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """:func:`categories_of_chunks` of a sample read by ``scan``."""
    first = -1 if low is not None else 0
    slots = len(thresholds) + 1 - first
    counts = np.zeros(slots, np.int64)
    lowest = np.full(slots, _INT64_MAX)
    highest = np.full(slots, _INT64_MIN)
    for c, lo, hi in scan.map(category_chunk, thresholds, low, slots):
        counts += c
        np.minimum(lowest, lo, out=lowest)
        np.maximum(highest, hi, out=highest)
    ranges = [
        (int(c), float(a) if c else math.nan, float(b) if c else math.nan)
        for c, a, b in zip(counts, lowest, highest, strict=True)
    ]
    categories = categories_of_ranges(ranges, first, keep_empty, int(counts.sum()))
    return StackedResult(thresholds, levels, categories, low, threshold)


def time_extent_chunk(chunk: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """(count, first, last send time) of a timed chunk (0, 0, 0 when empty)."""
    t = chunk[0]
    return (int(t.size), int(t.min()), int(t.max())) if t.size else (0, 0, 0)


def window_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    t0: int,
    width_ns: int,
    thresholds: tuple[float, ...] | None,
    low: float | None,
    n_slots: int,
) -> tuple[np.ndarray, ...]:
    """One timed chunk's share of the window table, for the windows it touches only:
    (windows, count, exact sum, min, max of each; (window, slot) keys and their counts)."""
    t, x = chunk
    w = (t - t0) // width_ns
    # per window sum, min and max by reductions over the chunk ordered by window (a stable
    # sort of nearly sorted keys: cheap); exact integer sums
    order = np.argsort(w, kind="stable")
    ws, xs = w[order], x[order]
    starts = np.flatnonzero(np.concatenate([[True], ws[1:] != ws[:-1]])) if ws.size else np.zeros(0, np.intp)
    at = ws[starts]
    counts = np.diff(np.append(starts, ws.size)).astype(np.int64)
    if ws.size:
        sums = np.add.reduceat(xs, starts)
        lows, highs = np.minimum.reduceat(xs, starts), np.maximum.reduceat(xs, starts)
    else:
        sums = lows = highs = np.zeros(0, np.int64)
    keys = slot_counts = np.zeros(0, np.int64)
    if thresholds is not None:
        first = -1 if low is not None else 0
        labels = categorize(x, thresholds, low).astype(np.int64)
        keys, found = np.unique(w * n_slots + labels - first, return_counts=True)
        slot_counts = found.astype(np.int64)
    return at, counts, sums, lows, highs, keys, slot_counts


def time_windows_chunks(
    chunks: TimedChunks, width_ns: int = 1_000_000_000, categories: StackedResult | None = None
) -> WindowTable:
    """:func:`jitterlab.stats.windows.time_windows` of (send time, latency) chunks, in any
    order; identical results. Memory: a few arrays per window, none per sample."""
    return time_windows_scan(LocalScan(chunks), width_ns, categories)


def time_windows_scan(
    scan: Scan, width_ns: int = 1_000_000_000, categories: StackedResult | None = None
) -> WindowTable:
    """:func:`time_windows_chunks` of a timed sample read by ``scan``."""
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    t0, t_last, n = 0, 0, 0
    for size, lo, hi in scan.map(time_extent_chunk):
        if size:
            t0, t_last = (lo, hi) if n == 0 else (min(t0, lo), max(t_last, hi))
            n += size
    if n == 0:
        return no_windows(width_ns, indices)
    n_windows = window_count(t0, t_last, width_ns)
    first = -1 if categories is not None and categories.low_threshold is not None else 0
    n_slots = (len(categories.thresholds) + 1 - first) if categories is not None else 0
    counts = np.zeros(n_windows, np.int64)
    sums = np.zeros(n_windows, np.int64)  # exact: a window's latencies sum far below 2^63
    lowest = np.full(n_windows, _INT64_MAX)
    highest = np.full(n_windows, _INT64_MIN)
    by_slot = np.zeros(n_windows * max(n_slots, 1), np.int64)
    cuts = categories.thresholds if categories is not None else None
    low = categories.low_threshold if categories is not None else None
    for at, c, s, lo, hi, keys, slot_counts in scan.map(window_chunk, t0, width_ns, cuts, low, n_slots):
        counts[at] += c
        sums[at] += s
        lowest[at] = np.minimum(lowest[at], lo)
        highest[at] = np.maximum(highest[at], hi)
        by_slot[keys] += slot_counts
    weight, ranks = window_ranks(counts)
    value = _window_order_statistics(scan, ranks, lowest, highest, counts > 0, t0, width_ns)
    slots = by_slot.reshape(n_windows, max(n_slots, 1)) if categories is not None else None
    return window_table(width_ns, counts, sums, highest, weight, value, slots, categories, first)


WindowIntervals = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # per window: a, b, step, open


def window_refine_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    t0: int,
    width_ns: int,
    intervals: list[WindowIntervals],
    nb: int,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One timed chunk's bucket counts of a window refinement pass, per set of intervals
    (one per window): the (window × nb + bucket) keys it touches and their counts."""
    t, x = chunk
    w = (t - t0) // width_ns
    shares = []
    for a, b, step, open_ in intervals:
        lower = a[w]
        inside = (x >= lower) & (x <= b[w])  # one mask and one compaction: no per-array copies
        if not open_.all():
            inside &= open_[w]
        counts = np.bincount((w * nb + (x - lower) // step[w])[inside], minlength=a.size * nb)
        keys = np.flatnonzero(counts)
        shares.append((keys, counts[keys]))
    return shares


def _window_order_statistics(
    scan: Scan,
    ranks: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    filled: np.ndarray,
    t0: int,
    width_ns: int,
) -> np.ndarray:
    """The value at ``ranks[w, r]`` (0-based) of each window's sorted latencies: every
    (window, rank) keeps a closed interval of values holding it, split into 2^8 buckets
    per pass (counts only) until it is one value wide."""
    n_windows, n_ranks = ranks.shape
    # buckets per window and rank: as many as 2^18 counters over all windows allow (2 MiB
    # per rank), at least 2^8
    nb = max(_WINDOW_BUCKETS, min(1 << 16, (1 << 18) // n_windows))
    a = np.where(filled, lowest, 0)[:, None].repeat(n_ranks, axis=1)
    b = np.where(filled, highest, 0)[:, None].repeat(n_ranks, axis=1)
    below = np.zeros_like(a)
    while bool((a < b).any()):
        step = -(-(b - a + 1) // nb)
        open_ = a < b
        # ranks whose intervals are the same in every window (a percentile's two neighbouring
        # ranks, mostly) share one histogram: counted once per pass
        groups: dict[bytes, list[int]] = {}
        for r in range(n_ranks):
            if open_[:, r].any():
                key = a[:, r].tobytes() + b[:, r].tobytes() + open_[:, r].tobytes()
                groups.setdefault(key, []).append(r)
        intervals = [tuple(m[:, rs[0]].copy() for m in (a, b, step, open_)) for rs in groups.values()]
        hist = np.zeros((n_ranks, n_windows * nb), np.int64)
        for shares in scan.map(window_refine_chunk, t0, width_ns, intervals, nb):
            for rs, (keys, found) in zip(groups.values(), shares, strict=True):
                hist[rs[0]][keys] += found
        for rs in groups.values():
            hist[rs[1:]] = hist[rs[0]]
        for r in range(n_ranks):
            rows = np.flatnonzero(open_[:, r])
            if rows.size == 0:
                continue
            narrow(hist[r].reshape(n_windows, nb)[rows], rows, r, ranks, a, b, below, step[rows, r])
    return a


def narrow(
    counts: np.ndarray,
    rows: np.ndarray,
    r: int,
    ranks: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    below: np.ndarray,
    step: np.ndarray,
) -> None:
    """Narrow rank column ``r``'s interval [a, b] in the windows ``rows`` to the bucket that
    holds the rank, from those windows' bucket counts (rows × buckets, buckets ``step`` wide
    from a); ``below`` gains the values of the buckets before it. In place."""
    cumulative = np.cumsum(counts, axis=1)
    target = ranks[rows, r] - below[rows, r]
    j = (cumulative <= target[:, None]).sum(axis=1)
    before = np.where(j > 0, cumulative[np.arange(rows.size), np.maximum(j - 1, 0)], 0)
    start = a[rows, r] + j * step
    b[rows, r] = np.minimum(start + step - 1, b[rows, r])
    a[rows, r] = start
    below[rows, r] += before
