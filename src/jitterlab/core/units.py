"""Parsing and formatting of durations (all internal times are integer nanoseconds)."""

from __future__ import annotations

import math

from jitterlab.core.options import YEAR_S, Range, parse_duration_s

# the units a file's values may be in (HdrHistogram logs, CSV; ``--unit`` of import and export)
UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# every duration in nanoseconds lies in 0 .. 1 year (core.options.YEAR_S): far inside int64
_DURATIONS_NS = Range(0.0, YEAR_S)


def parse_duration_ns(text: str, default_unit: str = "s") -> int:
    """Parse ``"1ms"``, ``"250us"``, ``"1.5s"`` or a bare number in ``default_unit`` as
    whole nanoseconds, through the one duration parser (:func:`core.options.parse_duration_s`)
    and its range: 0 to 1 year (``1e400``, ``-1ms``, ``nan`` are one-line errors, never an
    ``OverflowError``).

    Raises
    ------
    JitterlabError
        When the text is not a duration from 0 to 1 year.
    """
    return round(parse_duration_s(text, _DURATIONS_NS, default_unit) * 1e9)


def format_ns(value: float | int | None, digits: int = 3) -> str:
    """Format nanoseconds with a readable unit and ``digits`` significant digits (three)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    magnitude = abs(float(value))
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if magnitude >= scale:
            return f"{value / scale:.{digits}g} {unit}"
    return f"{value:.{digits}g} ns"


def format_count(value: int) -> str:
    """Format a count compactly: 1000000 -> 1M, 50000 -> 50k."""
    for suffix, scale in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if value >= scale and value % (scale // 100 or 1) == 0:
            return f"{value / scale:g}{suffix}"
    return str(value)
