"""A log's figures: each interval's and, per tag, the whole log's, as HdrHistogram Java
2.2.2's HistogramLogProcessor computes them.

The processor keeps the tags apart (``-tag NAME``; the untagged lines by default) and
accumulates a tag's intervals into a copy of its first interval histogram, emptied and
auto-resizing; with ``-correctLogWithKnownCoordinatedOmission E`` it corrects each
interval (``copyCorrectedForCoordinatedOmission``) before accumulating it. Here every tag is
one *stream*, accumulated the same way, with and without the correction, in one pass over
the log; figures are scaled from the log's unit to nanoseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import UNITS_NS as UNITS_NS  # where ingest and export read it
from jitterlab.store.hdr.double import DoubleHistogram
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import DamagedLogError, Interval, LogHeader, LogReader

SUMMARY_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
SUMMARY_KEYS = ("p50", "p90", "p99", "p99_9", "p99_99", "p99_999")  # run.json's names for them
AnyHistogram = Histogram | DoubleHistogram


def in_unit(expected_ns: int | None, scale: int) -> float:
    """An expected interval in nanoseconds as a number of the log's unit (0: none)."""
    if not expected_ns:
        return 0.0
    return float(expected_ns // scale) if expected_ns % scale == 0 else expected_ns / scale


def figures(
    h: AnyHistogram,
    scale: float = 1,
    percentiles: Sequence[float] = SUMMARY_PERCENTILES,
    keys: Sequence[str] = SUMMARY_KEYS,
) -> dict[str, Any]:
    """count, min, max, mean, std and percentiles of a histogram, in nanoseconds: Java's
    figure times ``scale`` (the log's unit in ns). None for an empty histogram."""
    total = h.total
    out: dict[str, Any] = {"count": int(total)}
    for key, value in (("min", h.min), ("max", h.max), ("mean", h.mean), ("std", h.std)):
        out[key] = float(value) * scale if total else None
    for key, p in zip(keys, percentiles, strict=True):
        out[key] = float(h.value_at_percentile(p)) * scale if total else None
    return out


def corrected_figures(
    latency_ns: np.ndarray | Iterable[np.ndarray], expected_interval_ns: int
) -> dict[str, Any]:
    """The figures of samples recorded with HdrHistogram's recordValueWithExpectedInterval
    into Java's ``new Histogram(3)`` (auto-resizing, 3 significant digits); the samples may
    come as chunks (a run read row group by row group: recording adds)."""
    histogram = Histogram.auto(3)
    for chunk in [latency_ns] if isinstance(latency_ns, np.ndarray) else latency_ns:
        distinct, counts = np.unique(chunk, return_counts=True)
        histogram.record_corrected(distinct, counts, expected_interval_ns)
    return figures(histogram)


def empty_like(h: AnyHistogram) -> AnyHistogram:
    """What HistogramLogProcessor accumulates a tag into: a copy of its first interval,
    emptied, auto-resizing."""
    accumulator = h.copy()
    accumulator.reset()
    accumulator.auto_resize = True
    return accumulator


def corrected(h: AnyHistogram, expected_interval: float) -> AnyHistogram:
    """The interval as ``-correctLogWithKnownCoordinatedOmission`` makes it. Java truncates
    the interval to an integer for an integer histogram; a fraction of the log's unit is
    refused here instead of being rounded."""
    if isinstance(h, DoubleHistogram):
        c: AnyHistogram = h.copy_corrected(expected_interval)
    else:
        if not float(expected_interval).is_integer():
            raise ValueError(
                f"the expected interval is {expected_interval:g} of the log's unit: not a whole number"
            )
        c = h.copy_corrected(int(expected_interval))
    c.tag = h.tag
    return c


@dataclass
class Stream:
    """One tag's intervals accumulated (``None`` tag: the untagged lines)."""

    tag: str | None
    intervals: int = 0
    whole: AnyHistogram | None = None  # the intervals as read
    corrected: AnyHistogram | None = None  # … corrected for coordinated omission, when asked
    first_start_s: float | None = None
    last_end_s: float | None = None

    def add(self, h: AnyHistogram, fixed: AnyHistogram | None) -> None:
        if self.whole is None:
            self.whole = empty_like(h)
        _same_kind(self.whole, h)
        self.whole.add(h)  # type: ignore[arg-type]
        if fixed is not None:
            if self.corrected is None:
                self.corrected = empty_like(fixed)
            self.corrected.add(fixed)  # type: ignore[arg-type]
        self.intervals += 1


def _same_kind(accumulator: AnyHistogram, h: AnyHistogram) -> None:
    if isinstance(accumulator, DoubleHistogram) != isinstance(h, DoubleHistogram):
        kinds = (
            ("integer", "DoubleHistogram")
            if isinstance(h, DoubleHistogram)
            else ("DoubleHistogram", "integer")
        )
        raise ValueError(f"a {kinds[1]} interval in a stream of {kinds[0]} histograms")


@dataclass
class LogFigures:
    """Everything an import or a description needs from one pass over a log."""

    header: LogHeader
    start_time_s: float  # Java's StartTime (the comment, or the first interval's timestamp)
    base_time_s: float
    streams: dict[str | None, Stream] = field(default_factory=dict)
    windows: list[dict[str, Any]] = field(default_factory=list)
    kind: str = "integer"
    truncated: str = ""
    skipped: list[str] = field(default_factory=list)
    time_problems: list[str] = field(default_factory=list)
    kept: int = 0
    seen_tags: set[str | None] = field(default_factory=set)  # every tag read, selected or not

    def stream(self, tag: str | None) -> Stream:
        return self.streams[tag]


def read_figures(
    lines: Iterable[bytes],
    name: str,
    *,
    scale: float = 1,
    tags: Sequence[str | None] | None = None,
    from_s: float | None = None,
    to_s: float | None = None,
    expected_interval: float = 0.0,
    skip_invalid: bool = False,
    warn: Callable[[str], None] = lambda _: None,
    copy_to: BinaryIO | None = None,
) -> LogFigures:
    """One pass over a log: per-interval figures (``windows``) and per-tag streams.

    ``tags`` keeps only those tags' lines (None: all); ``from_s``/``to_s`` select by offset
    from StartTime; ``expected_interval`` (in the log's unit, > 0) also gives each interval
    and stream corrected for coordinated omission. ``copy_to`` receives the
    log's comment and legend lines and the kept interval lines, byte for byte: the log of
    exactly what was selected.
    """
    reader = LogReader(lines, name, skip_invalid, warn)
    if copy_to is not None:
        reader.echo = copy_to.write
    result = LogFigures(reader.header, 0.0, 0.0)
    previous: dict[str | None, Interval] = {}
    for interval in reader.intervals(from_s, to_s):
        result.seen_tags.add(interval.tag)
        if tags is not None and interval.tag not in tags:
            continue
        h = interval.histogram
        stream = result.streams.setdefault(interval.tag, Stream(interval.tag))
        try:
            fixed = corrected(h, expected_interval) if expected_interval > 0 else None
        except ValueError as e:
            raise JitterlabError(f"--expected-interval: {e}") from e
        try:
            stream.add(h, fixed)
        except ValueError as e:  # a kind that does not match, or a range no histogram can hold
            raise DamagedLogError(
                f"{name}: line {interval.line}: {e} (Java's HistogramLogProcessor refuses it too)"
            ) from e
        if copy_to is not None:
            copy_to.write(interval.raw)
        result.kind = "double" if isinstance(h, DoubleHistogram) else "integer"
        _check_time(result, previous.get(interval.tag), interval)
        previous[interval.tag] = interval
        if stream.first_start_s is None:
            stream.first_start_s = interval.start_s
        stream.last_end_s = interval.end_s
        window: dict[str, Any] = {
            "tag": interval.tag,
            "line": interval.line,
            "start_ms": h.start_ms,
            "end_ms": h.end_ms,
            "offset_s": interval.offset_s,
            "length_s": interval.length_s,
            **figures(h, scale),
        }
        if fixed is not None:
            window["corrected"] = figures(fixed, scale)
        result.windows.append(window)
        result.kept += 1
    result.start_time_s, result.base_time_s = reader.start_time_s, reader.base_time_s
    result.truncated, result.skipped = reader.truncated, reader.skipped
    return result


def _check_time(result: LogFigures, before: Interval | None, now: Interval) -> None:
    """Note intervals that start before the previous one of their tag, or after a gap of
    more than one interval length."""
    if before is None:
        return
    tag = f" (tag {now.tag})" if now.tag is not None else ""
    if now.start_s < before.start_s:
        result.time_problems.append(
            f"line {now.line} starts {before.start_s - now.start_s:.3f} s before line {before.line}{tag}: time goes backwards"
        )
    elif now.start_s - before.end_s > max(before.length_s, 0.0) and before.length_s > 0:
        result.time_problems.append(
            f"a gap of {now.start_s - before.end_s:.3f} s between lines {before.line} and {now.line}{tag}"
        )
