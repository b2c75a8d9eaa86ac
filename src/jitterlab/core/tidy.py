"""Numbers as people read them: JSON floats without binary noise, counts with thousands
separators and the right plural (one rule, used by every output)."""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT_DIGITS = 12
"""Digits a float keeps in JSON output: far more than any measured figure carries (a
latency in ns to 12 digits is exact below 1000 s), few enough that the last bits of binary
arithmetic (``47295.060000000056``) never show."""


def tidy_float(value: float) -> float:
    """``value`` to :data:`SIGNIFICANT_DIGITS` significant digits (non-finite unchanged)."""
    if not math.isfinite(value) or value == 0:
        return value
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def tidy_json(document: Any) -> Any:
    """``document`` with every float (in dicts, lists and tuples, at any depth) tidied by
    :func:`tidy_float`; everything else as it was."""
    if isinstance(document, float):
        return tidy_float(document)
    if isinstance(document, dict):
        return {key: tidy_json(value) for key, value in document.items()}
    if isinstance(document, (list, tuple)):
        return [tidy_json(value) for value in document]
    return document


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and the noun in the right number: "1 run",
    "200,000 samples", "0 windows"."""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"
