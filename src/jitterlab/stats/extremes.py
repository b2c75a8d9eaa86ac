"""The stacked generalized ESD and Walsh tests, written once as passes over a sample's
chunks, in memory independent of its size; a sample in memory is the one-chunk case
(:func:`stacked_gesd`, :func:`stacked_walsh`).

Both tests only ever look at the ends of a sorted sample:

- **GESD** with at most r outliers removes, r times, the value farthest from the mean of
  what is left: always the smallest or the largest left. Its steps need the r smallest and
  the r largest values, the count n and the sums S1 = Σx and S2 = Σx², which are *exact
  integers* for integer samples (:func:`~jitterlab.stats.summary.exact_squares`). Step i, with m values left and sums
  S1, S2, takes the largest value x_h when m (x_h + x_l) >= 2 S1 (the smallest x_l
  otherwise) and records R_i² = D² (m − 1) / (m Q), D = |m x − S1|, Q = m S2 − S1²: a
  ratio of exact integers rounded once, then its square root. The in-memory test computes
  the same integers the same way (:func:`jitterlab.stats.gesd.gesd_steps`), so both agree to the last bit.
  Its high-side outliers are those above the sample's median; the median is never needed
  as a number except when a removed value ties the smallest of the r largest (then it is
  the exact order statistic, found by radix refinement).
- **Walsh** needs X_(n+1−k), X_(n−k) and X_(n+1−k−c) for k = 1, 2, … until the first k
  that fails: the K largest values answer every k <= K − c; a pass with a larger K
  (×4, at most :data:`WALSH_MAX_TOP`) follows in the rare case where they do not decide.

One pass (:func:`extremes_chunk`, folded by :func:`extremes_by`) gathers count, exact sums
and the running k smallest and k largest values of a level. The stacked tests' next level is
the values above the level's cut; when the k largest values hold all of them (the common
case: the outliers are a handful of the k largest) the rest of the stack runs in memory on
them with the in-memory tests' own cut functions, otherwise the next level is read again
through a filter of the chunks. Every function given to a :class:`~jitterlab.stats.scan.Scan`
is a module-level pure function of one chunk whose results fold by integer sums and by
keeping the k smallest/largest of a concatenation, so the cluster engine can run them too.

Samples are integers (latencies in ns) of magnitude below 2^52 (exact comparisons with float cuts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitterlab.stats.categories import Level, SortedLevel, StackedResult, stack_levels
from jitterlab.stats.gesd import default_max_outliers, gesd_cut, gesd_outcome
from jitterlab.stats.scan import LocalScan, Scan
from jitterlab.stats.summary import exact_squares, exact_sum
from jitterlab.stats.walsh import walsh_cut, walsh_of_largest

DEFAULT_GESD_EXTREMES = 100_000  # gesd.default_max_outliers' cap: r <= this at any n
WALSH_FIRST_TOP = 1 << 16  # largest values gathered for Walsh's first try (512 KiB)
WALSH_MAX_TOP = 1 << 24  # and at most (128 MiB): beyond, the test refuses
MAX_LEVELS = 64  # categories.stack's bound, shared by the streamed stack


# ---------------------------------------------------------------------------------------
# one pass: count, exact sums, k smallest and k largest


@dataclass(frozen=True)
class Extremes:
    """What one pass keeps of a sample: its count, exact Σx and Σx², its ``k_low``
    smallest values and ``k_high`` largest values (both ascending; all values when the
    sample has no more)."""

    count: int
    total: int
    squares: int
    lowest: np.ndarray
    highest: np.ndarray


def _smallest(x: np.ndarray, k: int) -> np.ndarray:
    if k <= 0:
        return x[:0]
    return x if x.size <= k else np.partition(x, k - 1)[:k]


def _largest(x: np.ndarray, k: int) -> np.ndarray:
    if k <= 0:
        return x[:0]
    return x if x.size <= k else np.partition(x, x.size - k)[x.size - k :]


def extremes_chunk(
    x: np.ndarray, k_low: int, k_high: int, sums: bool
) -> tuple[int, int, int, np.ndarray, np.ndarray]:
    """One chunk's (count, Σx, Σx², k_low smallest, k_high largest), unsorted; the sums 0
    unless ``sums``."""
    x = np.asarray(x, dtype=np.int64)
    total = exact_sum(x) if sums else 0
    squares = exact_squares(x) if sums else 0
    return int(x.size), total, squares, _smallest(x, k_low).copy(), _largest(x, k_high).copy()


def extremes_by(scan: Scan, k_low: int, k_high: int, sums: bool = True) -> Extremes:
    """:class:`Extremes` of an integer sample read by ``scan``, in one pass."""
    count, total, squares = 0, 0, 0
    low, high = np.zeros(0, np.int64), np.zeros(0, np.int64)
    for n, t, s, lo, hi in scan.map(extremes_chunk, k_low, k_high, sums):
        count += n
        total += t
        squares += s
        low = _smallest(np.concatenate([low, lo]), k_low)
        high = _largest(np.concatenate([high, hi]), k_high)
    return Extremes(count, total, squares, np.sort(low), np.sort(high))


def extremes_of(x: np.ndarray, k_low: int, k_high: int, sums: bool = True) -> Extremes:
    """:class:`Extremes` of an integer sample in memory."""
    return extremes_by(LocalScan(lambda: [x]), k_low, k_high, sums)


# ---------------------------------------------------------------------------------------
# steps of a scan


def above_cut(x: np.ndarray, key: int) -> np.ndarray:
    """The values of a chunk above the integer ``key`` (a step)."""
    return x[x > key]


def _above(scan: Scan, cut: float | None) -> Scan:
    """The scan's values above ``cut`` (all of them for None)."""
    if cut is None:
        return scan
    return scan.then(above_cut, math.floor(cut))  # x > cut  <=>  x > floor(cut) for integers


def count_below_chunk(x: np.ndarray, value: int) -> int:
    """How many values of a chunk are below ``value``."""
    return int(np.count_nonzero(x < value))


# ---------------------------------------------------------------------------------------
# the stacked tests


Cut = Callable[[np.ndarray], float | None]


def _stack_scan(
    scan: Scan,
    level_cut: Callable[[Scan, int], tuple[float | None, Extremes]],
    memory_cut: Cut,
    gathered: int,
) -> tuple[float, ...]:
    """Thresholds of a stacked test (:func:`jitterlab.stats.categories.stack_levels`) of a
    sample read by ``scan``. ``level_cut(level_scan, k)`` is a level's cut and its pass's
    :class:`Extremes` (k largest at least); ``memory_cut`` the in-memory test's cut, run on
    a level once its values are all among the ``gathered`` largest of the previous one."""
    first = _EndsLevel(scan, None, level_cut, memory_cut, gathered)
    if first.size() == 0:
        raise ValueError("stacked test of an empty sample")
    return stack_levels(first, MAX_LEVELS)


class _EndsLevel:
    """A level of a stacked GESD or Walsh test read by a scan: the values of ``root`` above
    ``floor``, whose cut comes from one pass gathering their ends (:class:`Extremes`); a
    level whose values were all gathered continues in memory."""

    def __init__(
        self,
        root: Scan,
        floor: float | None,
        level_cut: Callable[[Scan, int], tuple[float | None, Extremes]],
        memory_cut: Cut,
        gathered: int,
    ) -> None:
        self.root, self.floor, self.level_cut, self.memory_cut, self.gathered = (
            root, floor, level_cut, memory_cut, gathered
        )  # fmt: skip
        self._seen: tuple[float | None, Extremes] | None = None

    def _pass(self) -> tuple[float | None, Extremes]:
        if self._seen is None:
            self._seen = self.level_cut(_above(self.root, self.floor), self.gathered)
        return self._seen

    def _whole(self) -> SortedLevel | None:
        seen = self._pass()[1]
        return SortedLevel(seen.highest, self.memory_cut) if seen.count <= seen.highest.size else None

    def size(self) -> int:
        return self._pass()[1].count

    def cut(self) -> float | None:
        whole = self._whole()
        return whole.cut() if whole is not None else self._pass()[0]

    def above(self, cut: float) -> Level:
        whole = self._whole()
        if whole is not None:
            return whole.above(cut)
        seen = self._pass()[1]
        if float(seen.lowest[0]) > cut:  # no value at or below the cut: the stack ends here
            return self
        if float(seen.highest[0]) <= cut:  # every value above the cut was gathered
            return SortedLevel(seen.highest[seen.highest > cut], self.memory_cut)
        return _EndsLevel(self.root, cut, self.level_cut, self.memory_cut, self.gathered)


def stacked_gesd_scan(scan: Scan, alpha: float = 0.05, max_outliers: int | None = None) -> tuple[float, ...]:
    """Thresholds of :func:`stacked_gesd` of an integer sample read
    by ``scan`` (identical); one pass per level read from the chunks."""
    k = max_outliers or DEFAULT_GESD_EXTREMES

    def level_cut(level: Scan, gathered: int) -> tuple[float | None, Extremes]:
        e = extremes_by(level, k, max(k, gathered))
        n = e.count
        if n < 3 or n <= e.highest.size:
            return None, e
        r = int(min(max_outliers or default_max_outliers(n), n - 2))
        lows = e.lowest[:r].tolist()
        highs = e.highest[::-1][:r].tolist()
        found, sides, _, _ = gesd_outcome(n, e.total, e.squares, lows, highs, r, alpha)
        removed, lo, hi = [], 0, 0
        for side in sides[:found]:
            removed.append(highs[hi] if side else lows[lo])
            hi, lo = (hi + 1, lo) if side else (hi, lo + 1)
        median = _Median(level, n, e)
        smallest = next((v for v in sorted(set(removed)) if median.below(v)), None)
        return (None if smallest is None else float(np.nextafter(float(smallest), -np.inf))), e

    # 2k largest kept: the next level (the values at or above the smallest outlier, ties
    # included) is then nearly always among them and runs in memory
    return _stack_scan(scan, level_cut, lambda s: gesd_cut(s, alpha, max_outliers), 2 * k)


class _Median:
    """Whether a value lies above a level's median (type 7: the mean of the order
    statistics at ranks ⌊(n−1)/2⌋ and ⌊n/2⌋), from the level's extremes where they hold
    those ranks or bound them, else from the exact order statistics (radix refinement)."""

    def __init__(self, level: Scan, count: int, e: Extremes) -> None:
        self.level, self.count, self.e = level, count, e
        self.exact: tuple[int, int] | None = None

    def _known(self, rank: int) -> int | None:
        e, n = self.e, self.count
        if rank < e.lowest.size:
            return int(e.lowest[rank])
        if rank >= n - e.highest.size:
            return int(e.highest[rank - (n - e.highest.size)])
        return None

    def below(self, value: int) -> bool:
        """median < value, exactly."""
        n = self.count
        a, b = (n - 1) // 2, n // 2
        xa, xb = self._known(a), self._known(b)
        if xa is None or xb is None:
            # a rank not held lies between the k smallest and the k largest
            upper = int(self.e.highest[0]) if xb is None else xb  # x_b <= it
            lower = int(self.e.lowest[-1]) if xa is None else xa  # x_a >= it
            if value > upper:
                return True  # x_a <= x_b < value
            if value < lower:
                return False  # value < x_a <= x_b
            if xb is None and value == upper:
                # x_a <= x_b <= value: the median is below value unless x_a = value, that is
                # unless at most a values lie below it (one counting pass)
                return int(sum(self.level.map(count_below_chunk, value))) > a
            xa, xb = self._exact(a, b)
        return 2 * value > xa + xb

    def _exact(self, a: int, b: int) -> tuple[int, int]:
        if self.exact is None:
            from jitterlab.stats.summary import order_statistics_by

            e = self.e
            v = order_statistics_by(self.level, [a, b], int(e.lowest[0]), int(e.highest[-1]), self.count)
            self.exact = (v[a], v[b])
        return self.exact


def stacked_walsh_scan(scan: Scan, max_top: int = WALSH_MAX_TOP) -> tuple[float, ...]:
    """Thresholds of :func:`stacked_walsh` of an integer sample read
    by ``scan`` (identical): one pass per level read from the chunks, or a few when the
    :data:`WALSH_FIRST_TOP` largest values do not decide the k search."""

    def level_cut(level: Scan, gathered: int) -> tuple[float | None, Extremes]:
        k = max(WALSH_FIRST_TOP, gathered)
        while True:
            e = extremes_by(level, 1, k, sums=False)
            n = e.count
            if n <= 60 or n <= e.highest.size:
                return None, e
            result = walsh_of_largest(e.highest.astype(np.float64), n)
            if result is not None:
                if result.threshold is None:
                    return None, e
                return float(np.nextafter(result.threshold, -np.inf)), e
            if k >= max_top:
                raise ValueError(
                    f"Walsh's test of {n:,} values is not decided by their {k:,} largest, the most "
                    "it holds in memory (its outliers would number about that many)"
                )
            k = min(4 * k, max_top)

    return _stack_scan(scan, level_cut, walsh_cut, WALSH_FIRST_TOP)


def stacked_gesd_result(scan: Scan, alpha: float = 0.05, max_outliers: int | None = None) -> StackedResult:
    """:func:`stacked_gesd` of an integer sample read by ``scan``:
    the thresholds, then the categories in one more pass."""
    from jitterlab.stats.outofcore import categories_scan

    return categories_scan(scan, stacked_gesd_scan(scan, alpha, max_outliers), None, (), alpha, False)


def stacked_walsh_result(scan: Scan, max_top: int = WALSH_MAX_TOP) -> StackedResult:
    """:func:`stacked_walsh` of an integer sample read by ``scan``."""
    from jitterlab.stats.outofcore import categories_scan

    return categories_scan(scan, stacked_walsh_scan(scan, max_top), None, (), 0.05, False)


def _one_chunk(values: object) -> LocalScan:
    """A sample in memory as a scan of one chunk (integers: latencies in ns)."""
    x = np.asarray(values)
    if x.dtype.kind not in "iu":
        raise ValueError("the stacked GESD and Walsh tests take integer samples (latencies in ns)")
    return LocalScan(lambda: [x])


def stacked_gesd(values: object, alpha: float = 0.05, max_outliers: int | None = None) -> StackedResult:
    """The generalized ESD test applied to its own high-side outliers again and again
    (VRST'16 §3.3): categories like the stacked z-test's. ``max_outliers`` defaults to
    :func:`~jitterlab.stats.gesd.default_max_outliers` of each level's size. A sample in
    memory is :func:`stacked_gesd_result` of it as one chunk."""
    return stacked_gesd_result(_one_chunk(values), alpha, max_outliers)


def stacked_walsh(values: object) -> StackedResult:
    """Walsh's test applied to its own outliers while they number more than 60: a sample in
    memory is :func:`stacked_walsh_result` of it as one chunk (every largest value at hand)."""
    x = np.asarray(values)
    return stacked_walsh_result(_one_chunk(x), max(WALSH_MAX_TOP, x.size))
