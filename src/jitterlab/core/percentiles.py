"""Percentile lists on the command line (``--percentiles 50,90,99,99.9,max``) and the JSON
key of each percentile (``"p99.9"``), one definition for every command."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jitterlab.core.errors import JitterlabError

# run.json's summary keys spell the decimal point as "_" (p99_9, p99_999): --percentiles takes
# that spelling too, and no other "_" (Python's float() would read "9_9" as 99, silently)
_UNDERSCORED = re.compile(r"[0-9]+_[0-9]+")


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``"50,90,99.9,max"`` → (50.0, 90.0, 99.9, 100.0): each 0 < p ≤ 100 (``max`` is 100),
    sorted, duplicates dropped. An entry may carry a leading ``p`` and spell the decimal
    point as the summary keys do (``p99_9`` is 99.9, the JSON key ``p99.9``)."""
    values: set[float] = set()
    for part in text.split(","):
        word = part.strip().lower().removeprefix("p")
        if not word:
            raise JitterlabError(f"--percentiles {text!r}: an empty entry (example: 50,90,99,99.9,max)")
        if word == "max":
            values.add(100.0)
            continue
        if "_" in word:
            if not _UNDERSCORED.fullmatch(word):
                raise JitterlabError(
                    f"--percentiles: {part.strip()!r} is not a percentile (example: 50,90,99.9 or p99_9,max)"
                )
            word = word.replace("_", ".")
        try:
            p = float(word)
        except ValueError:
            raise JitterlabError(
                f"--percentiles: {part.strip()!r} is not a percentile (example: 50,90,99.9,max)"
            ) from None
        if not (math.isfinite(p) and 0 < p <= 100):
            raise JitterlabError(f"--percentiles: {part.strip()} is not in (0, 100]")
        values.add(p)
    return tuple(sorted(values))


def percentile_key(p: float) -> str:
    """The JSON key of a percentile: ``p50``, ``p99.9``, ``p99.999``; ``max`` for 100."""
    if p == 100:
        return "max"
    return "p" + repr(float(p)).removesuffix(".0")


RESOLVE_BEYOND = 10  # samples expected beyond a level for it to be resolved (docs/statistics.md)


def is_resolved(n: int, level: float) -> bool:
    """True when ``n`` samples resolve percentile ``level``: n·(1 − level/100) ≥ 10
    (a small tolerance for levels such as 99.9 that are not exact in binary); the maximum
    (100) is a sample, not an estimate, and never "resolved" here."""
    return level < 100 and n * (100.0 - level) / 100.0 >= RESOLVE_BEYOND - 1e-9


# a summary's percentile keys (run.json's spelling) and their levels
SUMMARY_KEY_LEVELS = {
    "p50": 50.0,
    "p90": 90.0,
    "p99": 99.0,
    "p99_9": 99.9,
    "p99_99": 99.99,
    "p99_999": 99.999,
}


def unresolved_keys(summary: Mapping[str, Any], keys: Sequence[str] = tuple(SUMMARY_KEY_LEVELS)) -> list[str]:
    """The summary keys (``p50`` … ``p99_999``) whose level the summary's ``count`` does not
    resolve (:func:`is_resolved`): the flag that stands beside every stored percentile in
    ``--json`` output, so that no reader takes an unresolved one for a figure."""
    count = int(summary.get("count") or 0)
    return [k for k in keys if count and not is_resolved(count, SUMMARY_KEY_LEVELS[k])]
