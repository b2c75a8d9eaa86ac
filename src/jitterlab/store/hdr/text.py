"""The percentile distribution text (``.hgrm``) as HdrHistogram Java 2.2.2 prints it.

``outputPercentileDistribution`` formats with ``java.util.Formatter``, whose ``%.Nf``
rounds half up the decimal digits ``Double.toString`` gives (0.125 → "0.13"), where
Python rounds the binary value half to even ("0.12"); :func:`java_fixed` does what Java
does, so the text is character for character Java's.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence

from jitterlab.store.hdr.double import DoubleHistogram
from jitterlab.store.hdr.histogram import Histogram, PercentileRow

_CONTEXT = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)


def java_fixed(x: float, decimals: int, width: int = 0) -> str:
    """``String.format(Locale.US, "%<width>.<decimals>f", x)``."""
    if math.isnan(x):
        text = "NaN"
    elif math.isinf(x):
        text = "Infinity" if x > 0 else "-Infinity"
    else:
        exact = decimal.Decimal(repr(x))  # the shortest digits that read back as x, as Java's
        text = f"{exact.quantize(decimal.Decimal(1).scaleb(-decimals), context=_CONTEXT):f}"
        if text.startswith("-") and math.copysign(1.0, x) > 0:
            text = text[1:]
    return text.rjust(width)


def _integer_view(histogram: Histogram | DoubleHistogram, unit_ratio: float) -> tuple[Histogram, float]:
    """The integer histogram Java prints and the ratio its values are divided by."""
    if isinstance(histogram, DoubleHistogram):
        return histogram.inner, unit_ratio / histogram.i2d
    return histogram, unit_ratio


def percentile_distribution(
    histogram: Histogram | DoubleHistogram,
    ticks_per_half_distance: int = 5,
    unit_ratio: float = 1.0,
    percentiles: Sequence[float] | None = None,
) -> str:
    """Java's ``outputPercentileDistribution(out, ticks, unitRatio)``: rows at the percentile
    iterator's steps, values divided by ``unit_ratio``, then the mean, standard deviation,
    max, count and the bucket layout. With ``percentiles`` the rows are at those levels
    instead (each value Java's getValueAtPercentile, its count the values up to it)."""
    h, ratio = _integer_view(histogram, unit_ratio)
    digits = h.digits
    out = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n"]
    rows = (
        percentile_rows_at(h, percentiles)
        if percentiles is not None
        else h.percentile_rows(ticks_per_half_distance)
    )
    for row in rows:
        value = java_fixed(row.value / ratio, digits, 12)
        level = java_fixed(row.level / 100.0, 12, 2)
        if row.level != 100.0:
            inverse = java_fixed(1 / (1.0 - (row.level / 100.0)), 2, 14)
            out.append(f"{value} {level} {row.total_count:10d} {inverse}\n")
        else:
            out.append(f"{value} {level} {row.total_count:10d}\n")
    mean = java_fixed(h.mean / ratio, digits, 12)
    std = java_fixed(h.std / ratio, digits, 12)
    out.append(f"#[Mean    = {mean}, StdDeviation   = {std}]\n")
    out.append(f"#[Max     = {java_fixed(h.max / ratio, digits, 12)}, Total count    = {h.total:12d}]\n")
    out.append(f"#[Buckets = {h.bucket_count:12d}, SubBuckets     = {h.sub_bucket_count:12d}]\n")
    return "".join(out)


def percentile_rows_at(h: Histogram, percentiles: Sequence[float]) -> list[PercentileRow]:
    """Rows at chosen percentiles: Java's value at each, and the count up to that value."""
    rows: list[PercentileRow] = []
    if h.total == 0:
        return rows
    for p in sorted(percentiles):
        value = h.value_at_percentile(p)
        rows.append(PercentileRow(value, float(p), h.count_at_or_below(value)))
    return rows
