"""Parsing and formatting of durations (all internal times are integer nanoseconds)."""

from __future__ import annotations

import math
import re

from jitterlab.core.errors import JitterlabError
from jitterlab.core.options import bare_number_rule

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# the units a file's values may be in (HdrHistogram logs, CSV; ``--unit`` of import and export)
UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$")


def parse_duration_ns(text: str, default_unit: str = "s") -> int:
    """Parse ``"1ms"``, ``"250us"``, ``"1.5s"`` or a bare number of seconds (with another
    ``default_unit``, a bare number other than 0 is refused: core.options.bare_number_rule).

    Raises
    ------
    JitterlabError
        When the text is not a non-negative duration.
    """
    match = _DURATION.match(text)
    if not match:
        raise JitterlabError(f"'{text}' is not a duration (examples: 1s, 250ms, 10us, 500ns)")
    bare_number_rule(text, match.group(1), match.group(2), default_unit)
    unit = match.group(2) or default_unit
    return round(float(match.group(1)) * _UNITS_NS[unit])


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
