"""HdrHistogram's DoubleHistogram, with the figures of HdrHistogram Java 2.2.2.

A DoubleHistogram keeps an integer :class:`Histogram` and a conversion ratio; its range
floats over the values recorded (``autoAdjustRangeForValue``) by shifting the integer
counts a binary order of magnitude at a time. Every step follows
``org.HdrHistogram.DoubleHistogram``, so adding interval histograms of a DoubleHistogram
log gives Java's whole-log figures.
"""

from __future__ import annotations

import math

from jitterlab.store.hdr.histogram import DEFAULT_DIGITS, Histogram, HistogramRangeError, PercentileRow

_HIGHEST_ALLOWED = 2.0**1022  # Java's highestAllowedValueEver: the first power of two >= Double.MAX_VALUE / 4


def _containing_magnitude(value: int) -> int:
    """findContainingBinaryOrderOfMagnitude(long): the bits the value needs."""
    return int(value).bit_length()


def _integer_value_range(highest_to_lowest: int, digits: int) -> int:
    internal = 1 << (_containing_magnitude(highest_to_lowest) + 1)
    sub_bucket_count = 1 << math.ceil(math.log(2 * 10**digits) / math.log(2))
    return (sub_bucket_count // 2) * internal


class DoubleHistogram:
    """Java's ``DoubleHistogram(highestToLowestValueRatio, digits)``; :meth:`auto` for the
    auto-resizing ``DoubleHistogram(digits)``."""

    def __init__(
        self, highest_to_lowest: int = 2, digits: int = DEFAULT_DIGITS, inner: Histogram | None = None
    ):
        if highest_to_lowest < 2:
            raise HistogramRangeError("highestToLowestValueRatio must be >= 2")
        if highest_to_lowest * 10.0**digits >= 2.0**61:
            raise HistogramRangeError(
                "highestToLowestValueRatio * (10^numberOfSignificantValueDigits) must be < (1L << 61)"
            )
        value_range = _integer_value_range(highest_to_lowest, digits)
        self.auto_resize = False
        if inner is None:
            inner = Histogram(1, value_range - 1, digits)
            lowest = 2.0**800
        else:
            if inner.lowest != 1 or inner.highest != value_range - 1 or inner.digits != digits:
                raise HistogramRangeError("integer values histogram does not match stated parameters.")
            lowest = inner.i2d * inner.sub_bucket_half_count
        self.inner = inner
        self.highest_to_lowest = highest_to_lowest
        internal_ratio = 1 << (_containing_magnitude(highest_to_lowest) + 1)
        self._set_range(lowest, lowest * internal_ratio)

    @classmethod
    def auto(cls, digits: int = DEFAULT_DIGITS) -> DoubleHistogram:
        h = cls(2, digits)
        h.auto_resize = True
        return h

    def _set_range(self, lowest: float, highest_limit: float) -> None:
        self.lowest_in_range = lowest
        self.highest_limit = highest_limit
        self.inner.i2d = lowest / self.inner.sub_bucket_half_count
        self.inner.d2i = 1.0 / self.inner.i2d

    @property
    def i2d(self) -> float:
        """integerToDoubleValueConversionRatio: a double value is an integer one times this."""
        return float(self.inner.i2d)

    @property
    def digits(self) -> int:
        return self.inner.digits

    @property
    def total(self) -> int:
        return self.inner.total

    @property
    def tag(self) -> str | None:
        return self.inner.tag

    @tag.setter
    def tag(self, value: str | None) -> None:
        self.inner.tag = value

    @property
    def start_ms(self) -> int:
        return self.inner.start_ms

    @start_ms.setter
    def start_ms(self, value: int) -> None:
        self.inner.start_ms = value

    @property
    def end_ms(self) -> int:
        return self.inner.end_ms

    @end_ms.setter
    def end_ms(self, value: int) -> None:
        self.inner.end_ms = value

    # ------------------------------------------------------------------ recording

    def record(self, value: float, count: int = 1) -> None:
        """recordValueWithCount: adjust the range if the value is outside it, then record."""
        for _ in range(65):
            if value < self.lowest_in_range or value >= self.highest_limit:
                self._adjust_range_for(value)
            try:
                self.inner.record(int(value * self.inner.d2i), count)
                return
            except HistogramRangeError:
                continue
        raise HistogramRangeError(f"the value {value} cannot be recorded")

    def record_corrected(self, value: float, count: int, expected_interval: float) -> None:
        """recordValueWithCountAndExpectedInterval (the coordinated-omission correction)."""
        self.record(value, count)
        if expected_interval <= 0:
            return
        missing = value - expected_interval
        while missing >= expected_interval:
            self.record(missing, count)
            missing -= expected_interval

    def _adjust_range_for(self, value: float) -> None:
        if value == 0.0:
            return
        if value < self.lowest_in_range:
            if value < 0.0:
                raise HistogramRangeError("Negative values cannot be recorded")
            while value < self.lowest_in_range:
                self._shift_range_right(self._capped_magnitude(math.ceil(self.lowest_in_range / value) - 1.0))
        elif value >= self.highest_limit:
            if value > _HIGHEST_ALLOWED:
                raise HistogramRangeError(f"Values above {_HIGHEST_ALLOWED} cannot be recorded")
            while value >= self.highest_limit:
                ratio = math.ceil((value + math.ulp(value)) / self.highest_limit) - 1.0
                self._shift_range_left(self._capped_magnitude(ratio))

    def _capped_magnitude(self, number: float) -> int:
        if number > self.highest_to_lowest:
            return int(math.log(self.highest_to_lowest) / math.log(2))
        if number > 2.0**50:
            return 50
        return _containing_magnitude(math.ceil(number))

    def _shift_range_right(self, magnitudes: int) -> None:
        """shiftCoveredRangeToTheRight: the range moves down, the integer values up."""
        new_lowest, new_highest = self.lowest_in_range, self.highest_limit
        try:
            multiplier = 1.0 / (1 << magnitudes)
            self.highest_limit *= multiplier
            if self.total > int(self.inner.counts[0]):
                try:
                    self.inner.shift_left(magnitudes)
                except HistogramRangeError:
                    self._grow(magnitudes)
                    new_highest /= multiplier
                    self.inner.shift_left(magnitudes)
            new_lowest *= multiplier
            new_highest *= multiplier
        finally:
            self._set_range(new_lowest, new_highest)

    def _shift_range_left(self, magnitudes: int) -> None:
        """shiftCoveredRangeToTheLeft: the range moves up, the integer values down. On a
        successful shift Java 2.2.2 scales the new range twice; so does this."""
        new_lowest, new_highest = self.lowest_in_range, self.highest_limit
        try:
            multiplier = 1.0 * (1 << magnitudes)
            self.lowest_in_range *= multiplier
            if self.total > int(self.inner.counts[0]):
                try:
                    self.inner.shift_right(magnitudes)
                    new_lowest *= multiplier
                    new_highest *= multiplier
                except HistogramRangeError:
                    self._grow(magnitudes)
                    new_lowest /= multiplier
            new_lowest *= multiplier
            new_highest *= multiplier
        finally:
            self._set_range(new_lowest, new_highest)

    def _grow(self, magnitudes: int) -> None:
        """handleShiftValuesException: resize the integer histogram instead of shifting."""
        if not self.auto_resize:
            raise HistogramRangeError("Value outside of histogram covered range.")
        containing = _containing_magnitude(self.inner.highest) + magnitudes
        if containing > 63:
            raise HistogramRangeError("Cannot resize histogram covered range beyond (1L << 63)")
        highest = (1 << containing) - 1
        self.inner._resize(highest)
        self.inner.highest = highest
        self.highest_to_lowest <<= magnitudes

    def reset(self) -> None:
        self.inner.reset()
        internal_ratio = 1 << (_containing_magnitude(self.highest_to_lowest) + 1)
        self._set_range(2.0**800, 2.0**800 * internal_ratio)

    def copy(self) -> DoubleHistogram:
        """Java's copy(): same ratio and range, contents and time stamps."""
        h = DoubleHistogram(self.highest_to_lowest, self.digits)
        h._set_range(self.lowest_in_range, self.highest_limit)
        h.inner.reset()
        h.inner.add(self.inner)
        h.inner.start_ms, h.inner.end_ms = self.inner.start_ms, self.inner.end_ms
        return h

    def add(self, other: DoubleHistogram) -> None:
        """Java's add: every recorded bucket of ``other`` recorded here by its double value."""
        counts = other.inner.counts
        for i in range(other.inner.counts_len):
            count = int(counts[i])
            if count > 0:
                self.record(other.inner.value_from_index(i) * other.i2d, count)

    def copy_corrected(self, expected_interval: float) -> DoubleHistogram:
        """Java's copyCorrectedForCoordinatedOmission(expectedInterval)."""
        h = DoubleHistogram(self.highest_to_lowest, self.digits)
        h._set_range(self.lowest_in_range, self.highest_limit)
        inner = self.inner
        for i in range(inner.counts_len):
            count = int(inner.counts[i])
            if count > 0:
                value = inner.highest_equivalent(inner.value_from_index(i))
                # Java multiplies by the *target's* conversion ratio (getIntegerToDoubleValueConversionRatio())
                h.record_corrected(value * h.i2d, count, expected_interval)
        return h

    # ------------------------------------------------------------------ figures

    def _next_non_equivalent(self, value: float) -> float:
        inner = self.inner
        integer = int(value * inner.d2i)
        return (inner.lowest_equivalent(integer) + inner.size_of_equivalent_range(integer)) * self.i2d

    def highest_equivalent(self, value: float) -> float:
        upper = self._next_non_equivalent(value)
        highest = upper - 2 * math.ulp(upper)
        while highest + math.ulp(highest) < upper:
            highest += math.ulp(highest)
        return highest

    @property
    def min(self) -> float:
        return self.inner.min * self.i2d

    @property
    def max(self) -> float:
        return self.highest_equivalent(self.inner.max * self.i2d)

    @property
    def mean(self) -> float:
        return self.inner.mean * self.i2d

    @property
    def std(self) -> float:
        return self.inner.std * self.i2d

    def value_at_percentile(self, percentile: float) -> float:
        return self.inner.value_at_percentile(percentile) * self.i2d

    def percentile_rows(self, ticks_per_half_distance: int = 5) -> list[PercentileRow]:
        """The integer histogram's steps (values are integers: divide by the output ratio over
        :attr:`i2d`, as Java's outputPercentileDistribution does)."""
        return self.inner.percentile_rows(ticks_per_half_distance)
