"""The one parser of number and duration options: a value and its allowed range.

Every command's numeric option goes through these functions (via ``cli.common``'s argparse
types), so ``--rate abc``, ``--capture-fps 1e-300`` and ``--warmup 1e12s`` all end in one line
naming the option and the range it accepts, never a traceback, an overflow or a silly run.
Pure functions: text in, value out, :class:`OptionError` (one line) otherwise.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass

from jitterlab.core.errors import JitterlabError

_UNITS_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|min|m|h)?\s*$")
_INTEGER = re.compile(r"^\s*[-+]?[0-9][0-9_]*\s*$")
_FLOAT_INTEGER = re.compile(r"^\s*[-+]?[0-9]*\.?[0-9]+[eE]\+?[0-9]+\s*$")  # 1e6, 2.5e3

DAY_S = 86_400.0
YEAR_S = 365 * DAY_S  # the longest duration any option takes: far inside int64 nanoseconds


class OptionError(JitterlabError):
    """A value outside its option's type or range (argparse prefixes the option's name)."""


def printable(text: str, limit: int = 60) -> str:
    """``text`` quoted for an error line: control characters escaped, long text cut."""
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
    return f"'{escaped}'"


def _fmt(value: float) -> str:
    if value >= 2**40 and float(value).is_integer() and int(value) & (int(value) - 1) == 0:
        return f"2^{int(value).bit_length() - 1}"  # the generic bound, inside int64
    if float(value).is_integer() and abs(value) < 1e19:
        return f"{int(value):,}".replace(",", "_") if abs(value) >= 100_000 else str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class Range:
    """Allowed values ``low ≤ x ≤ high``; ``low_open``/``high_open`` make a bound strict."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    unit: str = ""

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        """``1 to 1000``, ``more than 0``, ``more than 0 and at most 1 year`` ..."""
        u = f" {self.unit}" if self.unit else ""
        low = None if self.low is None else f"{_fmt(self.low)}{u}"
        high = None if self.high is None else f"{_fmt(self.high)}{u}"
        if low and high and not self.low_open and not self.high_open:
            return f"{low} to {high}"
        parts = []
        if low:
            parts.append(f"more than {low}" if self.low_open else f"at least {low}")
        if high:
            parts.append(f"less than {high}" if self.high_open else f"at most {high}")
        return " and ".join(parts) or "any number"


def _check(text: str, value: float, allowed: Range) -> None:
    if value not in allowed:
        raise OptionError(f"{printable(text)} is out of range (allowed: {allowed.describe()})")


def parse_integer(text: str, allowed: Range) -> int:
    """An integer option: ``1000``, ``1_000_000`` or an exact float form such as ``1e6``."""
    # the patterns' \s also matches \x1c-\x1f, which int() and float() refuse: strip them first
    if _INTEGER.match(text):
        value = int(text.strip().replace("_", ""))
    elif _FLOAT_INTEGER.match(text) and len(text) < 40:
        as_float = float(text.strip())
        if not as_float.is_integer():
            raise OptionError(f"{printable(text)} is not a whole number")
        value = int(as_float)
    else:
        raise OptionError(f"{printable(text)} is not a whole number (allowed: {allowed.describe()})")
    _check(text, value, allowed)
    return value


def parse_number(text: str, allowed: Range) -> float:
    """A finite real number option in ``allowed``."""
    try:
        value = float(text.replace("_", "")) if len(text) < 60 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise OptionError(f"{printable(text)} is not a finite number (allowed: {allowed.describe()})")
    _check(text, value, allowed)
    return value


def bare_number_rule(text: str, number: str, unit: str | None, default_unit: str) -> None:
    """The one meaning of a bare number in a duration option: **seconds**, everywhere
    (``--window 0.5`` is half a second). An option that once read a bare number in another
    unit (``mtp synth --latency 33.3`` was ms) refuses one that is not 0, in one line naming
    both readings, rather than guess: ``33.3ms`` or ``33.3s``, never a silent factor of 1000."""
    if unit is None and default_unit != "s" and float(number) != 0:
        raise OptionError(
            f"{printable(text)} needs a unit: a bare number in a duration is seconds in jitterlab, "
            f"and this option once read it as {default_unit} (write {number.strip()}{default_unit} "
            f"or {number.strip()}s)"
        )


def parse_duration_s(text: str, allowed: Range, default_unit: str = "s") -> float:
    """A duration in seconds: ``10s``, ``500ms``, ``250us``, ``2min``, ``1h``, or a bare number
    of seconds (an option whose ``default_unit`` is another refuses it: :func:`bare_number_rule`).
    ``allowed`` is in seconds."""
    match = _DURATION.match(text) if len(text) < 60 else None
    if not match:
        raise OptionError(
            f"{printable(text)} is not a duration (examples: 10s, 500ms, 250us; allowed: "
            f"{describe_duration(allowed)})"
        )
    bare_number_rule(text, match.group(1), match.group(2), default_unit)
    value = float(match.group(1)) * _UNITS_S[match.group(2) or default_unit]
    if not math.isfinite(value) or value not in allowed:
        raise OptionError(f"{printable(text)} is out of range (allowed: {describe_duration(allowed)})")
    return value


def describe_duration(allowed: Range) -> str:
    """``allowed`` (in seconds) in words: ``0 s to 1 day``."""
    text = Range(allowed.low, allowed.high, allowed.low_open, allowed.high_open, "s").describe()
    return text.replace(f"{_fmt(YEAR_S)} s", "1 year").replace(f"{_fmt(DAY_S)} s", "1 day")


class TextDuration:
    """An argparse ``type`` for a duration the measuring code reads again as text (``bench
    --pause``, ``hiccup --threshold``): checked here by :func:`parse_duration_s` and its range
    (one line naming the option, never an ``OverflowError`` later), kept as the text given;
    ``words`` (``auto``) pass as they are. ``kind``/``allowed`` are what docs/cli.md lists."""

    def __init__(self, allowed: Range, unit: str = "s", words: tuple[str, ...] = ()) -> None:
        self.__name__ = self.kind = "duration"
        self.range, self.unit, self.words = allowed, unit, words
        self.allowed = f"{describe_duration(allowed)}; a bare number is in {unit}"
        self.allowed += f"; or {', '.join(words)}" if words else ""

    def __call__(self, text: str) -> str:
        if text.strip() in self.words:
            return text.strip()
        try:
            parse_duration_s(text, self.range, self.unit)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text


def duration_text(
    low: float = 0.0,
    high: float = YEAR_S,
    *,
    low_open: bool = False,
    unit: str = "s",
    words: tuple[str, ...] = (),
) -> TextDuration:
    """A :class:`TextDuration` of ``low..high`` seconds (``low_open``: strictly above ``low``)."""
    return TextDuration(Range(low, high, low_open=low_open), unit, words)
