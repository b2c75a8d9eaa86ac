"""HdrHistogram's integer histogram, with the figures of HdrHistogram Java 2.2.2.

The bucket layout, the recorded minimum and maximum, the mean and standard deviation, the
value at a percentile, the percentile iteration behind ``outputPercentileDistribution``,
adding histograms (with auto-resize) and the coordinated-omission correction follow
``org.HdrHistogram.AbstractHistogram`` operation for operation, in IEEE double arithmetic
in the same order, so the figures are *equal* to Java's, not close (the test suite runs
Java 2.2.2 beside this code: ``tests/store/test_hdr_oracle.py``). Counts live in one numpy
int64 array indexed as Java's counts array; the normalizing index offset Java uses to
shift a DoubleHistogram's values in O(1) is kept out: shifts move the counts instead.

The percentile definition (docs/statistics.md): for p in (0, 100], the count to reach is
``max(1, ceil(p⁻ · n / 100))`` where p⁻ is p less one ulp, and the value reported is the
highest value equivalent to the first bucket whose cumulative count reaches it (the
lowest equivalent value for p = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LONG_MAX = 2**63 - 1
DEFAULT_DIGITS = 3


class HistogramRangeError(ValueError):
    """A value or a setting a histogram cannot hold (Java's IllegalArgumentException or
    ArrayIndexOutOfBoundsException)."""


def _log2_floor(x: float) -> int:
    # Java computes (int) (Math.log(x) / Math.log(2)); so do we, to get the same integer.
    return int(math.log(x) / math.log(2))


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bits needed for each non-negative int64 (what 64 − Long.numberOfLeadingZeros gives)."""
    _, exponent = np.frexp(x.astype(np.float64))
    e = exponent.astype(np.int64)
    # a conversion to float64 may round up to the next power of two: then one bit less
    rounded_up = (e > 0) & ((x >> np.maximum(e - 1, 0)) == 0)
    return np.asarray(e - rounded_up)


@dataclass(frozen=True)
class PercentileRow:
    """One step of the percentile iteration (``PercentileIterator``): the value reported,
    the percentile level iterated to and the count of values up to it."""

    value: int
    level: float
    total_count: int


class Histogram:
    """An integer HdrHistogram (``org.HdrHistogram.Histogram``).

    Parameters
    ----------
    lowest
        Lowest discernible value (≥ 1); values below it share bucket 0.
    highest
        Highest trackable value (≥ 2 × lowest).
    digits
        Significant decimal digits kept (0 to 5).
    auto_resize
        Grow the range as values beyond it arrive, as Java's auto-resizing histograms do.
    """

    def __init__(
        self, lowest: int = 1, highest: int = 2, digits: int = DEFAULT_DIGITS, auto_resize: bool = False
    ):
        if lowest < 1:
            raise HistogramRangeError("lowestDiscernibleValue must be >= 1")
        if lowest > LONG_MAX // 2:
            raise HistogramRangeError("lowestDiscernibleValue must be <= Long.MAX_VALUE / 2")
        if highest < 2 * lowest:
            raise HistogramRangeError("highestTrackableValue must be >= 2 * lowestDiscernibleValue")
        if not 0 <= digits <= 5:
            raise HistogramRangeError("numberOfSignificantValueDigits must be between 0 and 5")
        self.lowest = int(lowest)
        self.digits = int(digits)
        self.auto_resize = auto_resize
        largest_single_unit = 2 * 10**digits
        self.unit_magnitude = _log2_floor(lowest)
        self.unit_mask = (1 << self.unit_magnitude) - 1
        sub_bucket_count_magnitude = math.ceil(math.log(largest_single_unit) / math.log(2))
        self.sub_bucket_half_count_magnitude = sub_bucket_count_magnitude - 1
        self.sub_bucket_count = 1 << sub_bucket_count_magnitude
        self.sub_bucket_half_count = self.sub_bucket_count // 2
        self.sub_bucket_mask = (self.sub_bucket_count - 1) << self.unit_magnitude
        if sub_bucket_count_magnitude + self.unit_magnitude > 62:
            raise HistogramRangeError(
                "Cannot represent numberOfSignificantValueDigits worth of values beyond lowestDiscernibleValue"
            )
        self._magnitude_base = self.unit_magnitude + sub_bucket_count_magnitude
        self.bucket_count = 0
        self.counts_len = 0
        self.highest = 0
        self._establish_size(int(highest))
        self.counts = np.zeros(self.counts_len, dtype=np.int64)
        self.total = 0
        self._max = 0  # Java's maxValue field: the recorded max with the unit bits set
        self._min_non_zero = LONG_MAX  # Java's minNonZeroValue field
        self.start_ms = LONG_MAX
        self.end_ms = 0
        self.tag: str | None = None
        # a DoubleHistogram's value of one integer unit (the encoding carries it; 1 otherwise)
        self.i2d = 1.0
        self.d2i = 1.0
        self._cumulative: np.ndarray | None = None

    @classmethod
    def auto(cls, digits: int = DEFAULT_DIGITS, lowest: int = 1) -> Histogram:
        """An auto-resizing histogram (Java's ``new Histogram(digits)`` for lowest 1)."""
        return cls(lowest, 2 * lowest, digits, auto_resize=True)

    def like(self) -> Histogram:
        """An empty histogram with this one's settings and time stamps (Java's
        ``new Histogram(AbstractHistogram source)``)."""
        h = Histogram(self.lowest, self.highest, self.digits, self.auto_resize)
        h.start_ms, h.end_ms = self.start_ms, self.end_ms
        return h

    # ------------------------------------------------------------------ layout

    def _buckets_needed(self, value: int) -> int:
        smallest_untrackable = self.sub_bucket_count << self.unit_magnitude
        buckets = 1
        while smallest_untrackable <= value:
            if smallest_untrackable > LONG_MAX // 2:
                return buckets + 1
            smallest_untrackable <<= 1
            buckets += 1
        return buckets

    def _establish_size(self, highest: int) -> None:
        if highest < 2 * self.lowest:
            raise HistogramRangeError(
                f"highestTrackableValue ({highest}) cannot be < (2 * lowestDiscernibleValue)"
            )
        self.bucket_count = self._buckets_needed(highest)
        self.counts_len = (self.bucket_count + 1) * self.sub_bucket_half_count
        self.highest = highest

    def _resize(self, highest: int) -> None:
        self._establish_size(highest)
        if self.counts_len > self.counts.size:
            self.counts = np.concatenate(
                [self.counts, np.zeros(self.counts_len - self.counts.size, np.int64)]
            )

    def bucket_index(self, value: int) -> int:
        return (value | self.sub_bucket_mask).bit_length() - self._magnitude_base

    def index_of(self, value: int) -> int:
        """Java's countsArrayIndex(value)."""
        if value < 0:
            raise HistogramRangeError("Histogram recorded value cannot be negative.")
        bucket = self.bucket_index(value)
        sub_bucket = value >> (bucket + self.unit_magnitude)
        return (
            ((bucket + 1) << self.sub_bucket_half_count_magnitude) + sub_bucket - self.sub_bucket_half_count
        )

    def indices_of(self, values: np.ndarray) -> np.ndarray:
        """:meth:`index_of` of every value of a non-negative int64 array."""
        bucket = _bit_length(values | self.sub_bucket_mask) - self._magnitude_base
        sub_bucket = values >> (bucket + self.unit_magnitude)
        return np.asarray(
            ((bucket + 1) << self.sub_bucket_half_count_magnitude) + sub_bucket - self.sub_bucket_half_count
        )

    def value_from_index(self, index: int) -> int:
        bucket = (index >> self.sub_bucket_half_count_magnitude) - 1
        sub_bucket = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        if bucket < 0:
            sub_bucket -= self.sub_bucket_half_count
            bucket = 0
        return sub_bucket << (bucket + self.unit_magnitude)

    def values_from_indices(self, index: np.ndarray) -> np.ndarray:
        bucket = (index >> self.sub_bucket_half_count_magnitude) - 1
        sub_bucket = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        low = bucket < 0
        sub_bucket = np.where(low, sub_bucket - self.sub_bucket_half_count, sub_bucket)
        bucket = np.where(low, 0, bucket)
        return sub_bucket << (bucket + self.unit_magnitude)

    def _range_sizes(self, index: np.ndarray) -> np.ndarray:
        """sizeOfEquivalentValueRange of each index's values."""
        bucket = np.maximum((index >> self.sub_bucket_half_count_magnitude) - 1, 0)
        return np.asarray(np.left_shift(np.int64(1), bucket + self.unit_magnitude))

    def size_of_equivalent_range(self, value: int) -> int:
        return 1 << (self.unit_magnitude + self.bucket_index(value))

    def lowest_equivalent(self, value: int) -> int:
        bucket = self.bucket_index(value)
        return (value >> (bucket + self.unit_magnitude)) << (bucket + self.unit_magnitude)

    def highest_equivalent(self, value: int) -> int:
        return self.lowest_equivalent(value) + self.size_of_equivalent_range(value) - 1

    def median_equivalent(self, value: int) -> int:
        return self.lowest_equivalent(value) + (self.size_of_equivalent_range(value) >> 1)

    @property
    def highest_recordable(self) -> int:
        return self.highest_equivalent(self.value_from_index(self.counts_len - 1))

    # ------------------------------------------------------------------ recording

    def _changed(self) -> None:
        self._cumulative = None

    def _note(self, value: int) -> None:
        """Java's updateMinAndMax(value)."""
        if value > self._max:
            self._raise_max(value)
        if value < self._min_non_zero and value != 0:
            self._lower_min_non_zero(value)

    def record(self, values: np.ndarray | int, counts: np.ndarray | int = 1) -> None:
        """Record values (each ``counts`` times), as recordValueWithCount does value by value."""
        v = np.atleast_1d(np.asarray(values, dtype=np.int64))
        c = np.broadcast_to(np.asarray(counts, dtype=np.int64), v.shape)
        if v.size == 0:
            return
        if int(v.min()) < 0:
            raise HistogramRangeError(f"value {int(v.min())} is negative: a histogram holds values >= 0")
        index = self.indices_of(v)
        top = int(index.max())
        if top >= self.counts_len:
            if not self.auto_resize:
                raise HistogramRangeError(f"value {int(v.max())} outside of histogram covered range")
            self._resize(int(v.max()))
            self.highest = self.highest_recordable
        np.add.at(self.counts, index, c)
        self.total += int(c.sum())
        # noting each value leaves the largest as max and the smallest above the unit as min
        self._note(int(v.max()))
        above_unit = v[v > self.unit_mask]
        if above_unit.size:
            self._note(int(above_unit.min()))
        self._changed()

    def record_corrected(self, values: np.ndarray, counts: np.ndarray, expected_interval: int) -> None:
        """Record each value with Java's recordValueWithCountAndExpectedInterval: the value,
        then value − E, value − 2E, … while ≥ E, each with the value's count (the values
        a stalled closed-loop measurement missed, HdrHistogram's coordinated-omission
        correction). Exact, and bounded in work by the histogram's buckets."""
        self.record(values, counts)
        if expected_interval <= 0:
            return
        e = int(expected_interval)
        lowest_filled: int | None = None
        for value, count in zip(values.tolist(), counts.tolist(), strict=True):
            m = (value - e) // e  # how many of value − jE (j = 1..m) are ≥ E
            if m <= 0:
                continue
            low = value - m * e
            lowest_filled = low if lowest_filled is None else min(lowest_filled, low)
            first, last = self.index_of(low), self.index_of(value - e)
            if m <= (last - first + 1) * 4:
                terms = value - e * np.arange(1, m + 1, dtype=np.int64)
                np.add.at(self.counts, self.indices_of(terms), count)
            else:  # count the terms falling in each bucket instead of making them
                index = np.arange(first, last + 1, dtype=np.int64)
                base = self.values_from_indices(index)
                lo = np.maximum(base, low)
                hi = np.minimum(base + self._range_sizes(index) - 1, value - e)
                j_max = (value - lo) // e  # the largest j with value − jE ≥ lo
                j_min = -((hi - value) // e)  # the smallest j with value − jE ≤ hi: ceil((value − hi)/E)
                n = np.maximum(j_max - j_min + 1, 0)
                self.counts[first : last + 1] += n * count
            self.total += m * count
        if lowest_filled is not None:
            self._note(lowest_filled)
        self._changed()

    def reset(self) -> None:
        self.counts[:] = 0
        self.total = 0
        self._max = 0
        self._min_non_zero = LONG_MAX
        self.start_ms = LONG_MAX
        self.end_ms = 0
        self.tag = None
        self._changed()

    def copy(self) -> Histogram:
        """Java's ``copy()``: the same settings, contents and time stamps."""
        h = self.like()
        h.add(self)
        return h

    def copy_corrected(self, expected_interval: int) -> Histogram:
        """Java's ``copyCorrectedForCoordinatedOmission(expectedInterval)``."""
        h = self.like()
        index = np.flatnonzero(self.counts)
        values = self.values_from_indices(index) + self._range_sizes(index) - 1  # the highest equivalent
        h.record_corrected(values, self.counts[index], expected_interval)
        return h

    def add(self, other: Histogram) -> None:
        """Add ``other``'s counts (Java's ``add``, resizing an auto-resizing histogram)."""
        other_max = other.max
        if self.highest_recordable < other_max:
            if not self.auto_resize:
                raise HistogramRangeError(
                    "The other histogram includes values that do not fit in this histogram's range."
                )
            self._resize(other_max)
        if (
            self.bucket_count == other.bucket_count
            and self.sub_bucket_count == other.sub_bucket_count
            and self.unit_magnitude == other.unit_magnitude
        ):
            self.counts[: other.counts_len] += other.counts
            self.total += int(other.counts.sum())
            self._raise_max(max(self.max, other_max))
            self._lower_min_non_zero(min(self.min_non_zero, other.min_non_zero))
        else:
            index = np.flatnonzero(other.counts)
            if index.size:
                top = other.index_of(other_max)
                values = other.values_from_indices(index)
                # Java records the max's bucket first, then the others up to it
                first = np.flatnonzero(index == top)
                order = np.concatenate([first, np.flatnonzero(index < top)])
                self.record(values[order], other.counts[index][order])
        self.start_ms = min(self.start_ms, other.start_ms)
        self.end_ms = max(self.end_ms, other.end_ms)
        self._changed()

    def _raise_max(self, value: int) -> None:
        internal = value | self.unit_mask
        if internal > self._max:
            self._max = internal

    def _lower_min_non_zero(self, value: int) -> None:
        if value <= self.unit_mask:
            return
        internal = value & ~self.unit_mask
        if internal < self._min_non_zero:
            self._min_non_zero = internal

    def establish_tracking(self, length: int | None = None) -> None:
        """Total, max and min from the counts (Java's establishInternalTackingValues)."""
        counts = self.counts[: self.counts_len if length is None else length]
        self._max = 0
        self._min_non_zero = LONG_MAX
        index = np.flatnonzero(counts > 0)
        self.total = int(counts[index].sum())
        if index.size:
            self._raise_max(self.highest_equivalent(self.value_from_index(int(index[-1]))))
            above_zero = index[index != 0]
            if above_zero.size:
                self._lower_min_non_zero(self.value_from_index(int(above_zero[0])))
        self._changed()

    # ------------------------------------------------------------------ shifting (DoubleHistogram)

    def shift_left(self, magnitudes: int) -> None:
        """Multiply every recorded value by 2**magnitudes (Java's shiftValuesLeft)."""
        if magnitudes == 0 or self.total == int(self.counts[0]):
            return
        shift = magnitudes << self.sub_bucket_half_count_magnitude
        if self.index_of(self.max) >= self.counts_len - shift:
            raise HistogramRangeError("Operation would overflow, would discard recorded value counts")
        max_before, min_before = self._max, self._min_non_zero
        self._max, self._min_non_zero = 0, LONG_MAX
        moved = np.zeros_like(self.counts)
        moved[0] = self.counts[0]
        low = np.flatnonzero(self.counts[1 : self.sub_bucket_half_count]) + 1
        upper = np.arange(self.sub_bucket_half_count, self.counts_len - shift)
        moved[upper + shift] = self.counts[upper]
        if low.size:
            targets = self.indices_of(self.values_from_indices(low) << magnitudes)
            moved[targets] = self.counts[low]
        self.counts = moved
        self._note(max_before << magnitudes)
        if min_before < LONG_MAX:
            self._note(min_before << magnitudes)
        self._changed()

    def shift_right(self, magnitudes: int) -> None:
        """Divide every recorded value by 2**magnitudes (Java's shiftValuesRight)."""
        if magnitudes == 0 or self.total == int(self.counts[0]):
            return
        shift = self.sub_bucket_half_count * magnitudes
        if self.index_of(self.min_non_zero) < shift + self.sub_bucket_half_count:
            raise HistogramRangeError(
                "Operation would underflow and lose precision of already recorded value counts"
            )
        max_before, min_before = self._max, self._min_non_zero
        self._max, self._min_non_zero = 0, LONG_MAX
        moved = np.zeros_like(self.counts)
        moved[0] = self.counts[0]
        moved[self.sub_bucket_half_count : self.counts_len - shift] = self.counts[
            self.sub_bucket_half_count + shift :
        ]
        self.counts = moved
        self._note(max_before >> magnitudes)
        if min_before < LONG_MAX:
            self._note(min_before >> magnitudes)
        self._changed()

    # ------------------------------------------------------------------ figures

    @property
    def min(self) -> int:
        if self.counts[0] > 0 or self.total == 0:
            return 0
        return self.min_non_zero

    @property
    def max(self) -> int:
        return 0 if self._max == 0 else self.highest_equivalent(self._max)

    @property
    def min_non_zero(self) -> int:
        return LONG_MAX if self._min_non_zero == LONG_MAX else self.lowest_equivalent(self._min_non_zero)

    def _recorded(self) -> tuple[np.ndarray, np.ndarray]:
        """(medianEquivalentValue of each recorded bucket as float64, its count as float64)."""
        index = np.flatnonzero(self.counts)
        median = self.values_from_indices(index) + (self._range_sizes(index) >> 1)
        return median.astype(np.float64), self.counts[index].astype(np.float64)

    @property
    def mean(self) -> float:
        """Java's getMean: Σ median·count summed in index order, over the total."""
        if self.total == 0:
            return 0.0
        median, count = self._recorded()
        return float(np.cumsum(median * count)[-1]) / float(self.total)

    @property
    def std(self) -> float:
        """Java's getStdDeviation (population form, about the mean above)."""
        if self.total == 0:
            return 0.0
        mean = self.mean
        median, count = self._recorded()
        deviation = median - mean
        return math.sqrt(float(np.cumsum((deviation * deviation) * count)[-1]) / float(self.total))

    def _cumulative_counts(self) -> np.ndarray:
        if self._cumulative is None:
            self._cumulative = np.cumsum(self.counts)
        return self._cumulative

    def value_at_percentile(self, percentile: float) -> int:
        """Java's getValueAtPercentile (see the module docstring)."""
        requested = min(max(math.nextafter(percentile, -math.inf), 0.0), 100.0)
        target = max(math.ceil((requested * float(self.total)) / 100.0), 1)
        cumulative = self._cumulative_counts()
        i = int(np.searchsorted(cumulative, target, side="left"))
        if i >= self.counts_len:
            return 0
        value = self.value_from_index(i)
        return self.lowest_equivalent(value) if percentile == 0.0 else self.highest_equivalent(value)

    def count_at_or_below(self, value: int) -> int:
        """Values recorded at or below ``value``'s bucket (getCountBetweenValues(0, value))."""
        i = min(self.index_of(value), self.counts_len - 1)
        return int(self._cumulative_counts()[i])

    def percentile_rows(self, ticks_per_half_distance: int = 5) -> list[PercentileRow]:
        """The steps of Java's PercentileIterator: what outputPercentileDistribution prints."""
        if self.total == 0:
            return []
        index = np.flatnonzero(self.counts)
        cumulative = np.cumsum(self.counts[index])
        percent = (100.0 * cumulative.astype(np.float64)) / float(self.total)
        rows: list[PercentileRow] = []
        level, pos, reached = 0.0, 0, 0
        while reached < self.total:
            pos = max(pos, int(np.searchsorted(percent, level, side="left")))
            if pos >= index.size:  # a level beyond 100 % (Java would run out of buckets)
                break
            reached = int(cumulative[pos])
            rows.append(
                PercentileRow(self.highest_equivalent(self.value_from_index(int(index[pos]))), level, reached)
            )
            level = _next_level(level, ticks_per_half_distance)
        last = int(index[min(pos, index.size - 1)])
        rows.append(PercentileRow(self.highest_equivalent(self.value_from_index(last)), 100.0, reached))
        return rows


def _next_level(level: float, ticks_per_half_distance: int) -> float:
    """PercentileIterator.incrementIterationLevel: equal ticks in each half-distance to 100 %."""
    if level >= 100.0:
        return math.inf
    halvings = int(math.log(100.0 / (100.0 - level)) / math.log(2))
    ticks = ticks_per_half_distance * int(2.0 ** (halvings + 1))
    return level + 100.0 / ticks
