"""describe's stacked-z categories and time windows of a samples file in two passes,
identical to :mod:`jitterlab.stats.outofcore` (and so to the in-memory functions).

:mod:`~jitterlab.stats.outofcore` finds every order statistic by radix refinement: about
ten passes over the file for the stacked test and the windows. Here the file is read twice
(docs/statistics.md, "describe in two passes"):

1. **First pass** (C++ kernel, one loop per chunk): per window the count, exact sum,
   minimum, maximum and a log-linear histogram (``sub_bits`` significant bits, buckets at
   most 2^(1-sub_bits) of their values wide); and the exact count of every latency value —
   a dense array of counts from the run's minimum, the rare values beyond it counted apart.
2. **Between the passes, no reading:** the stacked test runs on that table of (value,
   count), which holds the whole sample exactly: each level's median and MAD are order
   statistics of the table, its doubled deviations a second table. Each window's p50 and
   p99 ranks are located in their histogram bucket (an interval a few values wide).
3. **Second pass** (C++ kernel): per window the category counts under the thresholds, and
   the bucket counts that pin each rank's interval down to one value. An interval still
   wider than the pass could split (a far tail of a huge window) takes one more pass.

Memory is bounded and independent of the run's size: the window histograms and refinement
counters at most 2^23 each (64 MiB), the dense counts 2^22 (32 MiB), the table's values
beyond them at most 2^22 distinct (else the stacked test is left to outofcore). Everything
here is counts, exact integer sums, minima and maxima: the results do not depend on how the
file is cut into chunks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from jitterlab.stats import kernels
from jitterlab.stats.categories import StackedResult, category_ranges, stacked_result
from jitterlab.stats.loglinear import layout_bounds, layout_count
from jitterlab.stats.outofcore import IN_MEMORY_AT
from jitterlab.stats.valuetable import ValueCounter, ValueTable
from jitterlab.stats.windows import WindowTable, narrow, window_count, window_ranks, window_table
from jitterlab.stats.zscore import RobustScale, robust_scale_of, stacked_cuts

SendRecvChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]  # (t_send_ns, t_recv_ns)

COUNTERS = 1 << 23  # window histogram and refinement counters (64 MiB)
_SUB_BITS = range(11, 3, -1)  # the finest histogram that fits COUNTERS first
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


class PassReader(Protocol):
    """Where the two passes read the sample: each method adds the whole sample's share to
    the caller's arrays in place (the kernels' arguments, see stats/kernels.py), and
    raises :class:`~jitterlab.stats.kernels.KernelRangeError` to send the work elsewhere."""

    def first(
        self, spec: kernels.FirstSpec, arrays: dict[str, np.ndarray], counter: ValueCounter
    ) -> None: ...

    def refine(self, spec: kernels.RefineSpec, slot_counts: np.ndarray | None, hist: np.ndarray) -> None: ...


class ChunkReader:
    """The :class:`PassReader` of chunks read in this process, one kernel call each."""

    def __init__(self, chunks: SendRecvChunks) -> None:
        self.chunks = chunks

    def first(self, spec: kernels.FirstSpec, arrays: dict[str, np.ndarray], counter: ValueCounter) -> None:
        for send, recv in self.chunks():
            beyond = counter.buffer(send.size)
            counter.add_beyond(kernels.first_pass(send, recv, spec, arrays, counter.dense, beyond))

    def refine(self, spec: kernels.RefineSpec, slot_counts: np.ndarray | None, hist: np.ndarray) -> None:
        for send, recv in self.chunks():
            kernels.refine_pass(send, recv, spec, slot_counts, hist)


def _reader(chunks: SendRecvChunks | PassReader) -> PassReader:
    """A reader as given, or the chunks callable wrapped in a :class:`ChunkReader`."""
    if callable(chunks):
        return ChunkReader(chunks)
    return chunks


@dataclass
class FirstPass:
    """What the first pass gathers (see the module docs)."""

    t0: int
    width_ns: int
    base: int
    sub_bits: int
    count: np.ndarray
    sum: np.ndarray
    lowest: np.ndarray
    highest: np.ndarray
    hist: np.ndarray  # windows × buckets
    table: ValueTable | None  # None: more distinct values than BEYOND_AT_MOST


def first_pass(
    chunks: SendRecvChunks | PassReader, lowest: int, highest: int, t0: int, t_last: int, width_ns: int
) -> FirstPass | None:
    """The first pass over a sample whose latencies span [lowest, highest] and whose sends
    span [t0, t_last]; None when its histograms would not fit COUNTERS."""
    n_windows = window_count(t0, t_last, width_ns)
    span = highest - lowest
    sub_bits = next((s for s in _SUB_BITS if n_windows * layout_count(span, s) <= COUNTERS), None)
    if sub_bits is None:
        return None
    arrays = {
        "count": np.zeros(n_windows, np.int64),
        "sum": np.zeros(n_windows, np.int64),
        "lowest": np.full(n_windows, _INT64_MAX),
        "highest": np.full(n_windows, _INT64_MIN),
        "hist": np.zeros((n_windows, layout_count(span, sub_bits)), np.int64),
    }
    counter = ValueCounter(lowest, highest)
    _reader(chunks).first(kernels.FirstSpec(t0, width_ns, lowest, sub_bits), arrays, counter)
    return FirstPass(t0, width_ns, lowest, sub_bits, table=counter.table(), **arrays)


# --- the stacked test on a table -------------------------------------------------------


def robust_scale_table(table: ValueTable) -> RobustScale:
    """:func:`jitterlab.stats.zscore.robust_scale_of` of a sample held as a table."""
    return robust_scale_of(_TableLevels(table))


def _above(table: ValueTable, cut: float | None) -> ValueTable:
    if cut is None:
        return table
    start = int(np.searchsorted(table.values, math.floor(cut), side="right"))  # x > cut for integers
    return ValueTable(table.values[start:], table.counts[start:])


def stacked_z_table(
    table: ValueTable, threshold: float = 3.5, two_sided: bool = False, in_memory_at: int = IN_MEMORY_AT
) -> StackedResult:
    """:func:`jitterlab.stats.outofcore.stacked_z_scan` of a sample held as a table."""
    thresholds, levels, low = stacked_cuts(_TableLevels(table), threshold, two_sided, in_memory_at)
    return categories_table(table, thresholds, low, levels, threshold)


class _TableLevels:
    """A level of the stacked test as a suffix of the table: order statistics read off the
    cumulative counts, the deviations' off the table of doubled deviations |2x - 2 median|
    (integers) and their counts, halved."""

    def __init__(self, table: ValueTable) -> None:
        self.table = table

    def above(self, cut: float) -> _TableLevels:
        return _TableLevels(_above(self.table, cut))

    def size(self) -> int:
        return int(self.table.counts.sum())

    def order_statistics(self, ranks: list[int]) -> dict[int, Any]:
        return dict(zip(ranks, self.table.at_ranks(np.asarray(ranks)).tolist(), strict=True))

    def _doubled(self, middle: tuple[Any, Any]) -> np.ndarray:
        doubled: np.ndarray = np.abs(2 * self.table.values - (int(middle[0]) + int(middle[1])))
        return doubled

    def deviations(self, middle: tuple[Any, Any], ranks: list[int]) -> dict[int, float]:
        doubled = self._doubled(middle)
        order = np.argsort(doubled, kind="stable")
        d = ValueTable(doubled[order], self.table.counts[order]).at_ranks(np.asarray(ranks))
        return {k: int(v) / 2.0 for k, v in zip(ranks, d.tolist(), strict=True)}

    def mean_deviation(self, middle: tuple[Any, Any]) -> float:
        doubled = self._doubled(middle)
        total = int(np.dot(self.table.counts.astype(object), doubled.astype(object)))
        return total / (2 * self.size())

    def sorted_values(self) -> np.ndarray:
        return np.repeat(self.table.values, self.table.counts)


def categories_table(
    table: ValueTable,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool = False,
) -> StackedResult:
    """:func:`jitterlab.stats.categories.categories_scan` of a table: the one per-chunk
    :func:`~jitterlab.stats.categories.category_ranges` of its sorted values weighted by
    their counts."""
    ranges = category_ranges(table.values, thresholds, low, table.counts, ordered=True)
    return stacked_result(ranges, thresholds, low, levels, threshold, keep_empty)


# --- the windows --------------------------------------------------------------------------


def _locate(first: FirstPass, ranks: np.ndarray, filled: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each (window, rank)'s histogram bucket: its interval [a, b] of values (clipped to the
    window's extremes) and how many of the window's values lie below it."""
    n_windows, n_ranks = ranks.shape
    start, size = layout_bounds(np.arange(first.hist.shape[1], dtype=np.int64), first.sub_bits)
    a = np.zeros((n_windows, n_ranks), np.int64)
    b = np.zeros_like(a)
    below = np.zeros_like(a)
    rows = np.flatnonzero(filled)
    for w in rows:  # one cumulative row at a time: no windows × buckets temporary
        cumulative = np.cumsum(first.hist[w])
        j = np.searchsorted(cumulative, ranks[w], side="right")
        below[w] = np.where(j > 0, cumulative[np.maximum(j - 1, 0)], 0)
        a[w] = np.maximum(first.lowest[w], first.base + start[j])
        b[w] = np.minimum(first.highest[w], first.base + start[j] + size[j] - 1)
    return a, b, below


def windows_two_pass(
    chunks: SendRecvChunks | PassReader, first: FirstPass, categories: StackedResult | None
) -> WindowTable:
    """The second pass (and, rarely, more): :func:`jitterlab.stats.outofcore.time_windows_scan`
    from the first pass's products."""
    reader = _reader(chunks)
    counts = first.count
    n_windows = counts.size
    filled = counts > 0
    weight, ranks = window_ranks(counts)
    n_ranks = ranks.shape[1]
    a, b, below = _locate(first, ranks, filled)
    low = categories.low_threshold if categories is not None else None
    cuts = np.asarray(categories.thresholds if categories is not None else (), np.float64)
    n_slots = cuts.size + 1 + (low is not None)
    by_slot = np.zeros((n_windows, n_slots), np.int64) if categories is not None else None
    first_round = True
    while first_round or bool((a < b).any()):
        open_ = (a < b) & filled[:, None]
        # ranks whose intervals are the same in every window share one histogram
        groups: dict[bytes, list[int]] = {}
        for r in range(n_ranks):
            if open_[:, r].any():
                groups.setdefault(a[:, r].tobytes() + b[:, r].tobytes() + open_[:, r].tobytes(), []).append(r)
        leaders = [rs[0] for rs in groups.values()]
        g_open = open_[:, leaders].T.copy()
        g_a = np.where(g_open, a[:, leaders].T, 1)  # a closed (window, rank): the empty [1, 0]
        g_b = np.where(g_open, b[:, leaders].T, 0)
        widest = int((g_b - g_a + 1).max()) if leaders else 1
        nb = max(1, min(widest, max(1 << 8, COUNTERS // max(1, len(leaders) * n_windows))))
        step = np.maximum(-(-(g_b - g_a + 1) // nb), 1)
        hist = np.zeros((len(leaders), n_windows, nb), np.int64)
        slot_counts = by_slot if first_round else None
        g_a, g_b, step = (np.ascontiguousarray(x) for x in (g_a, g_b, step))
        spec = kernels.RefineSpec(first.t0, first.width_ns, n_windows, cuts, low, g_a, g_b, step, nb)
        reader.refine(spec, slot_counts, hist)
        first_round = False
        for g, rs in enumerate(groups.values()):
            for r in rs:
                rows = np.flatnonzero(open_[:, r])
                narrow(hist[g][rows], rows, r, ranks, a, b, below, step[g, rows])
    first_slot = -1 if low is not None else 0
    return window_table(
        first.width_ns, counts, first.sum, first.highest, weight, a, by_slot, categories, first_slot
    )


def describe_two_pass(
    chunks: SendRecvChunks | PassReader,
    lowest: int,
    highest: int,
    t0: int,
    t_last: int,
    width_ns: int,
    stacked: Callable[[ValueTable | None], StackedResult],
) -> tuple[StackedResult, WindowTable] | None:
    """The stacked-z categories (``stacked`` of the first pass's table, which may be None:
    then it must compute them another way) and the time windows of a sample; None when its
    windows are too many for the histograms, or a sample lies outside the given extents.
    ``chunks``: the (t_send_ns, t_recv_ns) chunks read here, or a :class:`PassReader` that
    runs the passes elsewhere (a cluster's workers: jitterlab.cluster.twopass)."""
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    try:
        first = first_pass(chunks, lowest, highest, t0, t_last, width_ns)
        if first is None:
            return None
        categories = stacked(first.table)
        return categories, windows_two_pass(chunks, first, categories)
    except kernels.KernelRangeError:
        return None
