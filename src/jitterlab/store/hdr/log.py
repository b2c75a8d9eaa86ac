"""HdrHistogram interval logs (``.hlog``), read and written as HdrHistogram Java 2.2.2's
``HistogramLogReader`` and ``HistogramLogWriter`` do.

A log is comment lines (``#…``, among them ``#[StartTime: S …]`` and ``#[BaseTime: S …]``,
seconds since the epoch), a legend line (``"StartTimestamp",…``) and one line per interval
histogram: ``[Tag=NAME,]start,length,max,base64``. The reader is a generator over the
file's lines (a log of any length streams through in bounded memory) and keeps Java's
time rules:

- StartTime is the ``#[StartTime:`` comment, or else the first interval's timestamp;
- BaseTime is the ``#[BaseTime:`` comment, or else deduced at the first interval: the
  StartTime when that timestamp is more than a year before it (timestamps relative to the
  start, as jHiccup writes them), 0 otherwise (absolute timestamps, as YCSB writes them);
- an interval starts at ``timestamp + BaseTime`` (absolute, seconds) and its offset is
  that minus StartTime; ``--from/--to`` select by offset as HistogramLogProcessor's
  ``-start``/``-end`` do (the first interval beyond ``to`` ends the reading).

Where Java stops silently (a blank line, an unparsable number, a damaged payload) this
reader names the line and what is wrong with it; a last line without its newline that does
not decode is a log still being written: its complete intervals are kept and the cut is
reported.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from jitterlab.core.errors import JitterlabError
from jitterlab.store.hdr.codec import HdrFormatError, from_base64, to_base64
from jitterlab.store.hdr.double import DoubleHistogram
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.text import java_fixed

YEAR_S = 365 * 24 * 3600.0
FORMAT_VERSION = "1.3"
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TIME_COMMENT = re.compile(r"#\[(StartTime|BaseTime):[ ,]([^ ,\]]*)")
_UNIT_COMMENT = re.compile(
    r"\b(?:values|measures|latenc\w*)\s+(?:are\s+)?in\s+(nano|micro|milli|)\s?-?(?:seconds|secs)\b"
    r"|\b(?:values|measures|latenc\w*)\s+(?:are\s+)?in\s+(ns|us|µs|ms|s)\b"
)
_UNIT_WORDS = {"nano": "ns", "micro": "us", "milli": "ms", "": "s", "µs": "us"}


MAX_SKIP_WARNINGS = 10  # --skip-invalid: damaged lines named one by one, then only counted


class DamagedLogError(JitterlabError):
    """A line of an HdrHistogram log that cannot be read: the message names the file, the
    line and what is wrong with it."""


@dataclass
class Interval:
    """One interval histogram of a log, with its times as Java's reader computes them."""

    line: int
    tag: str | None
    timestamp_s: float  # as logged
    length_s: float
    logged_max: float
    start_s: float  # absolute: timestamp + BaseTime
    offset_s: float  # start − StartTime
    histogram: Histogram | DoubleHistogram
    raw: bytes = b""  # the line as logged (with its newline)

    @property
    def end_s(self) -> float:
        return self.start_s + self.length_s


@dataclass
class LogHeader:
    """What the log said about itself before and between its intervals."""

    start_time_s: float | None = None  # the #[StartTime: comment
    base_time_s: float | None = None  # the #[BaseTime: comment
    unit: str | None = None  # a comment naming the values' unit (node-hiccup, jitterlab)
    comments: list[str] = field(default_factory=list)
    leading_junk: str = ""  # bytes before the first line (NULs in a damaged capture)


def unit_named_in(comment: str) -> str | None:
    """The unit a comment says the values are in ("#Hiccup measures are in micro seconds")."""
    m = _UNIT_COMMENT.search(re.sub(r"(nano|micro|milli)\s+seconds", r"\1seconds", comment.lower()))
    if not m:
        return None
    word = m.group(1) if m.group(1) is not None else m.group(2)
    return _UNIT_WORDS.get(word, word)


def _number(text: str, what: str) -> float:
    if not _NUMBER.fullmatch(text):
        raise HdrFormatError(f"{what} {text!r} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise HdrFormatError(f"{what} {text!r} is not a finite number")
    return value


def _parse_interval(text: str) -> tuple[str | None, float, float, float, Histogram | DoubleHistogram, int]:
    """(tag, timestamp, length, logged max, histogram, extra fields) of an interval line."""
    tokens = re.split("[ ,]", text)
    tag = None
    if tokens[0].startswith("Tag="):
        tag = tokens[0][4:]
        tokens = tokens[1:]
        if not tag:
            raise HdrFormatError("'Tag=' without a name")
    if len(tokens) < 4:
        raise HdrFormatError(
            f"{len(tokens)} fields{' after the tag' if tag else ''}, expected 4 (start, length, max, histogram)"
        )
    timestamp = _number(tokens[0], "the start time")
    length = _number(tokens[1], "the interval length")
    logged_max = _number(tokens[2], "the interval max")
    if not tokens[3]:
        raise HdrFormatError("the histogram field is empty")
    histogram = from_base64(tokens[3])
    return tag, timestamp, length, logged_max, histogram, len(tokens) - 4


class LogReader:
    """Interval histograms of an HdrHistogram log, one at a time (see the module docstring).

    Parameters
    ----------
    lines
        The log's lines as bytes, each with its line ending (an open binary file).
    name
        What to call the log in messages (its path).
    skip_invalid
        Leave damaged interval lines out (each reported through ``warn``) instead of
        raising :class:`DamagedLogError`.
    warn
        Where warnings go (one line each).
    """

    def __init__(
        self,
        lines: Iterable[bytes],
        name: str,
        skip_invalid: bool = False,
        warn: Callable[[str], None] = lambda _: None,
    ):
        self._lines = lines
        self.name = name
        self.skip_invalid = skip_invalid
        self.warn = warn
        self.header = LogHeader()
        self.start_time_s = 0.0  # Java's startTimeSec
        self._observed_start = False
        self.base_time_s = 0.0
        self._observed_base = False
        self.truncated = ""  # why the last line was left out ("" when the log is whole)
        self.skipped: list[str] = []  # damaged lines left out with skip_invalid
        self.lines_read = 0
        self.echo: Callable[[bytes], object] | None = None  # receives comment and legend lines as read

    def _damaged(self, number: int, why: str) -> None:
        message = f"{self.name}: line {number}: {why}"
        if not self.skip_invalid:
            raise DamagedLogError(message + " (--skip-invalid leaves damaged lines out)")
        self.skipped.append(message)
        if len(self.skipped) <= MAX_SKIP_WARNINGS:  # then one line says how many more follow
            self.warn(f"{message}; left out (--skip-invalid)")
        if len(self.skipped) == MAX_SKIP_WARNINGS:
            self.warn(
                f"{self.name}: further damaged lines are left out without a line each (counted at the end)"
            )

    def intervals(self, from_s: float | None = None, to_s: float | None = None) -> Iterator[Interval]:
        """Every interval histogram in file order (all tags); with ``from_s``/``to_s`` only
        those whose offset from StartTime lies in [from_s, to_s], reading stops at the first
        beyond ``to_s``."""
        extra_warned = False
        for number, raw in enumerate(self._lines, start=1):
            self.lines_read = number
            if number == 1:
                raw = self._strip_leading_junk(raw)
            # only the last line can lack its newline: if it does not read, the log is still
            # being written (or was cut): the complete intervals before it are kept
            complete = raw.endswith(b"\n")
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                self._unreadable(number, complete, f"not UTF-8 text ({e.reason} at byte {e.start})")
                continue
            if not text.strip():
                continue
            if text.startswith(("#", '"StartTimestamp"')):
                if text.startswith("#"):
                    self._comment(number, text)
                if self.echo is not None:
                    self.echo(raw if complete else raw + b"\n")
                continue
            try:
                tag, timestamp, length, logged_max, histogram, extra = _parse_interval(text)
            except HdrFormatError as e:
                self._unreadable(number, complete, str(e))
                continue
            if extra and not extra_warned:
                extra_warned = True
                self.warn(
                    f"{self.name}: line {number}: {extra} field(s) after the histogram ignored, as Java's reader does"
                )
            interval = self._timed(number, tag, timestamp, length, logged_max, histogram)
            interval.raw = raw if complete else raw + b"\n"
            if from_s is not None and interval.offset_s < from_s:
                continue
            if to_s is not None and interval.offset_s > to_s:
                return
            yield interval

    def _unreadable(self, number: int, complete: bool, why: str) -> None:
        if complete:
            self._damaged(number, why)
        else:
            self.truncated = f"line {number}, the last, is cut off ({why}); it was left out"

    def _strip_leading_junk(self, raw: bytes) -> bytes:
        stripped = raw.lstrip(b"\x00")
        if raw.startswith(b"\xef\xbb\xbf"):
            stripped = raw[3:]
        junk = len(raw) - len(stripped)
        if junk:
            kind = "NUL bytes" if raw.startswith(b"\x00") else "a UTF-8 byte-order mark"
            self.header.leading_junk = f"{junk} bytes before the first line ({kind})"
            self.warn(f"{self.name}: {self.header.leading_junk}; read from the first line after them")
        return stripped

    def _comment(self, number: int, text: str) -> None:
        m = _TIME_COMMENT.match(text)
        if m:
            try:
                seconds = _number(m.group(2), f"the {m.group(1)}")
            except HdrFormatError as e:
                self.warn(f"{self.name}: line {number}: {e}; the line is ignored, as Java's reader does")
                return
            if m.group(1) == "StartTime":
                self.start_time_s, self._observed_start = seconds, True
                self.header.start_time_s = seconds
            else:
                self.base_time_s, self._observed_base = seconds, True
                self.header.base_time_s = seconds
            return
        if len(self.header.comments) < 20:
            self.header.comments.append(text)
        unit = unit_named_in(text)
        if unit and self.header.unit is None:
            self.header.unit = unit

    def _timed(
        self,
        number: int,
        tag: str | None,
        timestamp: float,
        length: float,
        logged_max: float,
        histogram: Histogram | DoubleHistogram,
    ) -> Interval:
        """HistogramLogReader's onHistogram: StartTime and BaseTime rules, time stamps."""
        if not self._observed_start:
            self.start_time_s, self._observed_start = timestamp, True
        if not self._observed_base:
            self.base_time_s = self.start_time_s if timestamp < self.start_time_s - YEAR_S else 0.0
            self._observed_base = True
        start = timestamp + self.base_time_s
        end = start + length
        histogram.start_ms = int(start * 1000.0)
        histogram.end_ms = int(end * 1000.0)
        histogram.tag = tag
        return Interval(
            number, tag, timestamp, length, logged_max, start, start - self.start_time_s, histogram
        )


def read_log(
    path_lines: Iterable[bytes],
    name: str,
    skip_invalid: bool = False,
    warn: Callable[[str], None] = lambda _: None,
) -> tuple[LogReader, list[Interval]]:
    """Every interval of a (small) log at once; :class:`LogReader` streams."""
    reader = LogReader(path_lines, name, skip_invalid, warn)
    return reader, list(reader.intervals())


def _java_date(seconds: float) -> str:
    """``new Date(ms).toString()`` in UTC ("Wed Sep 09 15:24:39 UTC 2015")."""
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")


class LogWriter:
    """HistogramLogWriter: comments, StartTime/BaseTime, legend and interval lines, each
    formatted as Java formats them."""

    def __init__(self, out: TextIO):
        self.out = out

    def comment(self, text: str) -> None:
        self.out.write(f"#{text}\n")

    def version(self) -> None:
        self.comment(f"[Histogram log format version {FORMAT_VERSION}]")

    def start_time(self, ms: int) -> None:
        self.out.write(
            f"#[StartTime: {java_fixed(ms / 1000.0, 3)} (seconds since epoch), {_java_date(ms / 1000.0)}]\n"
        )

    def base_time(self, ms: int) -> None:
        self.out.write(f"#[BaseTime: {java_fixed(ms / 1000.0, 3)} (seconds since epoch)]\n")

    def legend(self) -> None:
        self.out.write(LEGEND + "\n")

    def interval(
        self,
        start_s: float,
        end_s: float,
        histogram: Histogram | DoubleHistogram,
        max_ratio: float = 1_000_000.0,
    ) -> None:
        """outputIntervalHistogram(start, end, histogram, maxValueUnitRatio)."""
        tag = histogram.tag
        if tag is not None and re.search("[, \r\n]", tag):
            raise JitterlabError(f"tag {tag!r}: a tag cannot contain commas, spaces or line breaks")
        fields = (
            f"{java_fixed(start_s, 3)},{java_fixed(end_s - start_s, 3)},"
            f"{java_fixed(float(histogram.max) / max_ratio, 3)},{to_base64(histogram)}"
        )
        self.out.write(f"Tag={tag},{fields}\n" if tag is not None else f"{fields}\n")
