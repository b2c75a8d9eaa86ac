"""Summary statistics of a latency sample, with percentiles to the far tail.

Percentile definition: linear interpolation between closest ranks (Hyndman & Fan type 7,
numpy's default ``method="linear"``): for sorted values x_0..x_{n-1} and p in [0, 100],
h = (n - 1) p / 100 and Q(p) = x_floor(h) + (h - floor(h)) (x_ceil(h) - x_floor(h)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from jitterlab.stats import kernels
from jitterlab.stats.scan import LocalScan, Scan
from jitterlab.stats.type7 import type7_interpolate, type7_percentiles, type7_ranks
from jitterlab.stats.valuetable import ValueCounter, ValueTable

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
    return type7_percentiles(x.size, ps, lambda ranks: np.partition(x, np.unique(ranks))[ranks])


def percentiles_sorted(ordered: np.ndarray, ps: tuple[float, ...] | list[float]) -> np.ndarray:
    """Type-7 percentiles of an already sorted sample: index arithmetic only."""
    return type7_percentiles(ordered.size, ps, lambda ranks: ordered[ranks])


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
    elsewhere. For integers, the mean and std come from the exact sums of x and x²
    (:func:`integer_moments`), as :func:`summarize_chunks` computes them: a sample read
    whole and read in chunks of any size give the same figures to the last bit.
    """
    x = np.asarray(values)
    if x.size == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    s = np.sort(x) if ordered is None else ordered
    p = percentiles_sorted(s, SUMMARY_PERCENTILES)
    if x.dtype.kind in "iu":
        count, _, _, total, squares = integer_moments(x)
        return summary_of(count, s[0], s[-1], total / count, std_of(count, total, squares), p)
    mean = float(x.mean(dtype=np.float64))
    return summary_of(int(x.size), s[0], s[-1], mean, float(np.sqrt(_squares(x, mean) / x.size)), p)


def summary_of(count: int, lowest: Any, highest: Any, mean: float, std: float, p: np.ndarray) -> Summary:
    """The :class:`Summary` of a non-empty sample from its parts (``p``: the percentiles of
    SUMMARY_PERCENTILES), however they were computed: in memory, in chunks or on a cluster."""
    return Summary(
        count=count,
        min=float(lowest),
        max=float(highest),
        mean=float(mean),
        std=float(std),
        p50=float(p[0]),
        p90=float(p[1]),
        p99=float(p[2]),
        p99_9=float(p[3]),
        p99_99=float(p[4]),
        p99_999=float(p[5]),
    )


def std_of(count: int, total: int, squares: int) -> float:
    """The population standard deviation of ``count`` integers from their exact sums Σx and
    Σx²: √((nΣx² − (Σx)²) / n²), the variance one correctly rounded division of integers."""
    return math.sqrt((count * squares - total * total) / (count * count))


Moments = tuple[int, int, int, int, int]  # count, min, max, Σx, Σx² (exact integers)


def integer_moments(x: np.ndarray) -> Moments:
    """(count, min, max, Σx, Σx²) of an integer array, exactly (min and max 0 when it is empty)."""
    if x.size == 0:
        return 0, 0, 0, 0, 0
    if kernels.available():
        try:
            lowest, highest, total, squares, _ = kernels.summary_pass(None, np.ascontiguousarray(x, np.int64))
            return int(x.size), lowest, highest, total, squares
        except kernels.KernelRangeError:  # Σx² past 128 bits: Python integers below
            pass
    return int(x.size), int(x.min()), int(x.max()), exact_sum(x), exact_squares(x)


def add_moments(a: Moments, b: Moments) -> Moments:
    """The moments of two samples together (either may be empty)."""
    if a[0] == 0 or b[0] == 0:
        return b if a[0] == 0 else a
    return a[0] + b[0], min(a[1], b[1]), max(a[2], b[2]), a[3] + b[3], a[4] + b[4]


def summary_from(moments: Moments, p: np.ndarray) -> Summary:
    """The :class:`Summary` of a non-empty integer sample from its moments and percentiles."""
    count, lowest, highest, total, squares = moments
    return summary_of(count, lowest, highest, total / count, std_of(count, total, squares), p)


_SELECT_AT_MOST = 1 << 18  # values gathered to select an order statistic exactly (2 MiB)
_BUCKETS = 1 << 16  # width of one refinement step

Differences = Callable[[], Iterable[tuple[np.ndarray | None, np.ndarray]]]


def summarize_chunks(chunks: Callable[[], Iterable[np.ndarray]]) -> Summary:
    """:func:`summarize` of an integer sample too large to hold, read as chunks (each call of
    ``chunks`` reads it again, in the same order), in memory independent of its size: in
    one pass (:func:`summarize_differences`)."""
    return summarize_differences(lambda: ((None, x) for x in chunks()), chunks)


def summarize_differences(pairs: Differences, chunks: Callable[[], Iterable[np.ndarray]]) -> Summary:
    """:func:`summary_and_table` without the table."""
    return summary_and_table(pairs, chunks)[0]


def summary_and_table(
    pairs: Differences, chunks: Callable[[], Iterable[np.ndarray]]
) -> tuple[Summary, ValueTable | None]:
    """:func:`summarize` of the sample x = b − a read as chunks (a, b) (``a`` None: x = b),
    e.g. t_recv_ns and t_send_ns, without making x; ``chunks`` reads the same x again, for
    the fallback.

    Exact, not estimated, in one pass: count, extremes and the exact sums of x and x²
    (for the mean and std) and the count of every value
    (:class:`~jitterlab.stats.valuetable.ValueCounter`, sized from the first chunk), whose
    table gives every order statistic the type-7 percentiles need. A sample of too many
    distinct values (or a chunk the kernel refuses) has its percentiles by radix
    refinement instead (:func:`percentiles_by`, more passes). The table is returned beside
    the summary (None then), so that other order statistics cost no pass.
    """
    moments: Moments = (0, 0, 0, 0, 0)
    counter: ValueCounter | None = None
    fast = kernels.available()
    for a, b in pairs():
        if b.size == 0:
            continue
        b = np.ascontiguousarray(b, np.int64)
        a = None if a is None else np.ascontiguousarray(a, np.int64)
        if fast and counter is None:
            first = b if a is None else b - a
            counter = ValueCounter.around(int(first.min()), int(first.max()))
        counting = counter is not None and counter.exact
        try:
            if not fast:
                raise kernels.KernelRangeError("no kernels")
            lowest, highest, total, squares, beyond = kernels.summary_pass(
                a,
                b,
                counter.base if counting and counter else 0,
                counter.dense if counting and counter else None,
                counter.buffer(b.size) if counting and counter else None,
            )
            chunk: Moments = (int(b.size), lowest, highest, total, squares)
            if counting and counter and beyond is not None:
                counter.add_beyond(beyond)
        except kernels.KernelRangeError:  # a counted part of the chunk is lost: no table
            if counter is not None:
                counter.give_up()
            chunk = integer_moments(b if a is None else b - a)
        moments = add_moments(moments, chunk)
    if moments[0] == 0:
        return summarize(np.zeros(0, np.int64)), None
    table = counter.table() if counter is not None else None
    if table is not None:
        p = table.percentiles(SUMMARY_PERCENTILES)
    else:
        p = percentiles_by(local_refine(chunks), SUMMARY_PERCENTILES, moments[:3])
    return summary_from(moments, p), table


def percentiles_of_scan(scan: Scan, ps: tuple[float, ...]) -> np.ndarray:
    """Type-7 percentiles of an integer sample read by ``scan`` (here or on a cluster), exactly
    (NaN for no sample): its extent in one pass, then :func:`percentiles_by`."""
    count, lowest, highest, _ = extent_by(scan)
    if count == 0:
        return np.full(len(ps), np.nan)
    return percentiles_by(refine_by(scan), ps, (count, lowest, highest))


def exact_sum(x: np.ndarray) -> int:
    """The sum of an integer array as a Python integer: int64 sums of blocks that cannot overflow."""
    if x.size == 0:
        return 0
    block = max(1, 2**62 // max(abs(int(x.min())), abs(int(x.max())), 1))
    return sum(int(x[i : i + block].sum(dtype=np.int64)) for i in range(0, x.size, block))


def exact_squares(x: np.ndarray) -> int:
    """Σx² of an integer array as a Python integer (exact), without the kernels: |x| split as
    h·2³¹ + l, so x² = h²·2⁶² + 2hl·2³¹ + l², three sums of values below 2⁶² each summed in
    two int64 halves (:func:`_sum_nonnegative`); latencies below 2³¹ ns (2.1 s) need only
    the squares. Values of 2⁶² or more, or 2³² values and more, in Python integers."""
    if x.size == 0:
        return 0
    a = np.abs(x.astype(np.int64, copy=False))
    if int(a.max()) >= _LIMIT or int(a.min()) < 0 or x.size >= (1 << 32):  # min < 0: |int64 min|
        return sum(int(v) * int(v) for v in x.tolist())
    if int(a.max()) < (1 << 31):  # every square below 2^62
        return _sum_nonnegative(a * a)
    h, low = a >> 31, a & _MASK31
    return (_sum_nonnegative(h * h) << 62) + (_sum_nonnegative(h * low) << 32) + _sum_nonnegative(low * low)


_MASK31 = (1 << 31) - 1
_LIMIT = 1 << 62


def _sum_nonnegative(t: np.ndarray) -> int:
    """Exact sum of non-negative int64 values below 2^62 (fewer than 2^32 of them): the high
    and low 31 bits summed apart, each in int64 without overflow."""
    return (int(np.sum(t >> 31, dtype=np.int64)) << 31) + int(np.sum(t & _MASK31, dtype=np.int64))


def _squares(x: np.ndarray, mean: float, start: float = 0.0) -> float:
    """``start`` + Σ (x − mean)² of a float sample in blocks of _CHUNK values (no full-size
    temporaries)."""
    squares = start
    for i in range(0, x.size, _CHUNK):
        squares += _block_squares(x[i : i + _CHUNK], mean)
    return squares


def _block_squares(block: np.ndarray, mean: float) -> float:
    deviation = block.astype(np.float64) - mean
    return float(np.add.reduce(deviation * deviation))


def chunk_extent(x: np.ndarray) -> tuple[int, int, int, int]:
    """(count, min, max, exact sum) of one chunk (min and max 0 when it is empty)."""
    if x.size == 0:
        return 0, 0, 0, 0
    return int(x.size), int(x.min()), int(x.max()), exact_sum(x)


def extent_by(scan: Scan) -> tuple[int, int, int, int]:
    """(count, min, max, exact sum) of an integer sample read by ``scan``, in one pass."""
    count, lowest, highest, total = 0, 0, 0, 0
    for n, lo, hi, part in scan.map(chunk_extent):
        if n == 0:
            continue
        lowest, highest = (lo, hi) if count == 0 else (min(lowest, lo), max(highest, hi))
        total += part
        count += n
    return count, lowest, highest, total


def percentiles_by(
    refine: RefinePass,
    ps: tuple[float, ...],
    extent: tuple[int, int, int],
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Type-7 percentiles of a non-empty integer sample, exactly, given its (count, min, max),
    with ``refine`` running each pass (here or on a cluster): each order statistic they need
    is found by radix refinement — its rank's interval of values split into 2^16 equal
    buckets per pass over the data (counts only) until the interval holds at most 2^18
    values, which one more pass gathers and sorts. ``transform`` (non-decreasing) maps the
    order statistics before interpolation, as :func:`percentiles_sorted` of the transformed
    sorted sample would."""
    count, lowest, highest = extent
    lo_rank, hi_rank, weight = type7_ranks(count, ps)
    ranks = sorted({int(r) for r in np.concatenate([lo_rank, hi_rank])})
    value = _order_statistics(refine, ranks, lowest, highest, count)
    a = np.array([value[int(r)] for r in lo_rank], dtype=np.int64)
    b = np.array([value[int(r)] for r in hi_rank], dtype=np.int64)
    if transform is not None:
        a, b = transform(a), transform(b)
    return type7_interpolate(a, b, weight)


Interval = tuple[int, int]
# one refinement pass over the whole sample: the values inside each interval to gather, and
# the counts of each interval to split in _BUCKETS buckets of the given width
RefinePass = Callable[
    [set[Interval], dict[Interval, int]], tuple[dict[Interval, np.ndarray], dict[Interval, np.ndarray]]
]


def refine_chunk(
    x: np.ndarray, gather: set[Interval], widths: dict[Interval, int]
) -> tuple[dict[Interval, np.ndarray], dict[Interval, np.ndarray]]:
    """One chunk's share of a refinement pass (the values to gather, the bucket counts):
    shares of separate chunks combine by concatenation and addition, in any order."""
    gathered = {(a, b): x[(x >= a) & (x <= b)] for a, b in gather}
    counts = {}
    for (a, b), w in widths.items():
        inside = x[(x >= a) & (x <= b)]
        counts[(a, b)] = np.bincount((inside - a) // w, minlength=_BUCKETS)[:_BUCKETS].astype(np.int64)
    return gathered, counts


def local_refine(chunks: Callable[[], Iterable[np.ndarray]]) -> RefinePass:
    """A refinement pass that reads the chunks in this process."""
    return refine_by(LocalScan(chunks))


def refine_by(scan: Scan) -> RefinePass:
    """A refinement pass run by ``scan`` (here or on a cluster's workers): each chunk's
    share from :func:`refine_chunk`, added and concatenated in the caller."""

    def run(
        gather: set[Interval], widths: dict[Interval, int]
    ) -> tuple[dict[Interval, np.ndarray], dict[Interval, np.ndarray]]:
        parts: dict[Interval, list[np.ndarray]] = {ab: [] for ab in gather}
        counts = {ab: np.zeros(_BUCKETS, np.int64) for ab in widths}
        for g, c in scan.map(refine_chunk, gather, widths):
            for ab, values in g.items():
                parts[ab].append(values)
            for ab, n in c.items():
                counts[ab] += n
        return {ab: np.concatenate(v) if v else np.zeros(0, np.int64) for ab, v in parts.items()}, counts

    return run


def order_statistics_by(
    scan: Scan, ranks: list[int], lowest: int, highest: int, count: int
) -> dict[int, int]:
    """:func:`order_statistics` of a sample read by ``scan``."""
    return _order_statistics(refine_by(scan), sorted(set(ranks)), lowest, highest, count)


def _order_statistics(
    refine: RefinePass, ranks: list[int], lowest: int, highest: int, count: int
) -> dict[int, int]:
    """The value of each 0-based rank of the sorted sample (see :func:`summarize_chunks`)."""
    # per rank: the closed interval [a, b] of values holding it, how many values lie below a,
    # and how many lie in it
    state = {r: (lowest, highest, 0, count) for r in ranks}
    found: dict[int, int] = {}
    while True:
        for r, (a, b, _, _) in state.items():
            if a == b:  # one value left
                found.setdefault(r, a)
        if len(found) == len(ranks):
            return found
        open_ = {s[:2] for r, s in state.items() if r not in found}
        gather = {
            (a, b) for a, b, _, n in (state[r] for r in state if r not in found) if n <= _SELECT_AT_MOST
        }
        split = open_ - gather
        widths = {(a, b): -(-(b - a + 1) // _BUCKETS) for a, b in split}
        gathered, counts = refine(gather, widths)
        for r in ranks:
            if r in found:
                continue
            a, b, below, _ = state[r]
            if (a, b) in gathered:
                values = np.sort(gathered[(a, b)])
                found[r] = int(values[r - below])
                continue
            cumulative = np.cumsum(counts[(a, b)])
            j = int(np.searchsorted(cumulative, r - below, side="right"))
            before = int(cumulative[j - 1]) if j else 0
            w = widths[(a, b)]
            state[r] = (a + j * w, min(a + (j + 1) * w - 1, b), below + before, int(cumulative[j]) - before)
