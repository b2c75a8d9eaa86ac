"""HdrHistogram helpers shared by the import (store) and the export (describe).

Histograms are built and read with the ``hdrhistogram`` package (``hdrh``), so they follow
its V2 encoding exactly. Values are nanoseconds. Percentiles of a histogram follow
HdrHistogram's own definition (the value at which the cumulative count first reaches p % of
the total, reported as the highest equivalent value of its bucket), which differs from the
type-7 definition used for raw samples; both are documented in docs/statistics.md.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.summary import SUMMARY_PERCENTILES

SIGNIFICANT_FIGURES = 3
LONGEST_NS = 3_600_000_000_000  # an hour: the range of imported histograms


def new_histogram(highest_ns: int) -> HdrHistogram:
    """A histogram from 1 ns to at least ``highest_ns`` with 3 significant digits."""
    return HdrHistogram(1, max(int(highest_ns) * 2, 1_000_000), SIGNIFICANT_FIGURES)


def record_all(histogram: HdrHistogram, values: np.ndarray) -> int:
    """Record every value (grouped by distinct value, so it is fast). Returns how many
    values could not be recorded (negative ones): reported, never fatal."""
    valid = values[values >= 0]
    distinct, counts = np.unique(valid, return_counts=True)
    for value, count in zip(distinct.tolist(), counts.tolist(), strict=True):
        histogram.record_value(value, count)
    return int(values.size - valid.size)


def histogram_summary(histogram: HdrHistogram) -> dict[str, Any]:
    """The run.json summary block of a histogram (HdrHistogram's percentile definition)."""
    total = histogram.get_total_count()
    summary: dict[str, Any] = {
        "count": int(total),
        "min": float(histogram.get_min_value()) if total else None,
        "max": float(histogram.get_max_value()) if total else None,
        "mean": float(histogram.get_mean_value()) if total else None,
        "std": float(histogram.get_stddev()) if total else None,
    }
    for p, key in zip(SUMMARY_PERCENTILES, ("p50", "p90", "p99", "p99_9", "p99_99", "p99_999"), strict=True):
        summary[key] = float(histogram.get_value_at_percentile(p)) if total else None
    return summary


@dataclass(frozen=True)
class HlogContents:
    intervals: list[HdrHistogram]
    complete_text: str  # the log without a cut-off last interval
    truncated: str  # why the last line was left out ("" when the log is whole)


def _interval_lines(lines: list[str]) -> list[int]:
    """Indexes of the interval lines (not comments, the legend or blank lines)."""
    return [
        i
        for i, line in enumerate(lines)
        if line.strip() and not line.startswith("#") and not line.startswith('"StartTimestamp"')
    ]


def _decodes(line: str) -> str:
    """Why an interval line cannot be read ("" when it can)."""
    fields = line.strip().split(",")
    if fields and fields[0].startswith("Tag="):
        fields = fields[1:]
    if len(fields) != 4:
        return f"{len(fields)} fields instead of 4"
    try:
        for value in fields[:3]:
            float(value)
        HdrHistogram.decode(fields[3])
    except Exception as e:  # hdrh raises many kinds (zlib, base64, its own length errors)
        return f"{type(e).__name__}: {e}"
    return ""


def read_hlog(path: Path) -> HlogContents:
    """Interval histograms of an HdrHistogram log, in file order.

    A log still being written ends in a cut-off interval: its complete intervals are kept
    and ``truncated`` says what was left out. A damaged interval anywhere else is an error
    naming its line.
    """
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise JitterlabError(f"{path}: not a readable HdrHistogram log ({e})") from e
    lines = text.splitlines(keepends=True)
    interval_lines = _interval_lines(lines)
    truncated = ""
    for n, i in enumerate(interval_lines):
        why = _decodes(lines[i])
        if not why:
            continue
        if n == len(interval_lines) - 1:
            truncated = f"line {i + 1}, the last interval, is cut off ({why}); it was left out"
            lines = lines[:i]
            break
        raise JitterlabError(f"{path}: line {i + 1}: damaged interval histogram ({why})")
    complete = "".join(lines)
    try:
        with tempfile.TemporaryDirectory(prefix="jitterlab-hlog-") as tmp:
            whole = Path(tmp) / "whole.hlog"
            whole.write_text(complete)  # hdrh's reader takes a file name
            reader = HistogramLogReader(str(whole), new_histogram(LONGEST_NS))
            intervals = []
            while (histogram := reader.get_next_interval_histogram()) is not None:
                intervals.append(histogram)
            reader.close()
    except Exception as e:  # same as above: a damaged header line
        raise JitterlabError(f"{path}: not a readable HdrHistogram log ({type(e).__name__}: {e})") from e
    if not intervals:
        raise JitterlabError(f"{path}: no interval histograms found (is it an HdrHistogram V2 .hlog?)")
    return HlogContents(intervals, complete, truncated)
