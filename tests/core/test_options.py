"""The one parser of number and duration options: values, ranges, one-line errors."""

from __future__ import annotations

import pytest

from jitterlab.core.options import (
    DAY_S,
    YEAR_S,
    OptionError,
    Range,
    parse_duration_s,
    parse_integer,
    parse_number,
    printable,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10.0),
        ("500ms", 0.5),
        ("250us", 250e-6),
        ("250µs", 250e-6),
        ("40ns", 40e-9),
        ("2min", 120.0),
        ("1h", 3600.0),
        ("1.5", 1.5),
        ("1e-3", 1e-3),
    ],
)
def test_durations_in_every_unit(text: str, seconds: float) -> None:
    assert parse_duration_s(text, Range(0, YEAR_S)) == pytest.approx(seconds, rel=1e-12)


def test_a_bare_number_is_seconds_and_an_option_of_another_unit_refuses_it() -> None:
    """Issue 38 item 8: one meaning of a bare number (seconds); `33.3` where ms were meant
    is refused in one line instead of being read 1000 times off."""
    assert parse_duration_s("0.5", Range(0, 1)) == 0.5
    assert parse_duration_s("33.3ms", Range(0, 1), default_unit="ms") == pytest.approx(0.0333)
    assert parse_duration_s("0", Range(0, 1), default_unit="ms") == 0.0
    with pytest.raises(OptionError, match=r"needs a unit.*33\.3ms or 33\.3s"):
        parse_duration_s("33.3", Range(0, 1), default_unit="ms")


@pytest.mark.parametrize("text", ["abc", "", "10 parsecs", "1e12s", "-1s", "1e400", "nan", "inf", "9" * 100])
def test_bad_durations_name_the_allowed_range(text: str) -> None:
    with pytest.raises(OptionError) as e:
        parse_duration_s(text, Range(0, DAY_S))
    assert "allowed: 0 s to 1 day" in str(e.value)
    assert "\n" not in str(e.value)


def test_integers_accept_underscores_and_exact_exponents() -> None:
    assert parse_integer("1_000_000", Range(1)) == 1_000_000
    assert parse_integer("1e6", Range(1)) == 1_000_000
    with pytest.raises(OptionError, match="not a whole number"):
        parse_integer("1.5", Range(1))
    with pytest.raises(OptionError, match="not a whole number"):
        parse_integer("2.5e0", Range(1))


@pytest.mark.parametrize("text", ["1e23", "10" + "0" * 400, "-1", "0"])
def test_integers_out_of_range_are_refused(text: str) -> None:
    with pytest.raises(OptionError, match=r"out of range \(allowed: 1 to 1_000_000\)"):
        parse_integer(text, Range(1, 1_000_000))


def test_numbers_check_open_and_closed_bounds() -> None:
    above_zero = Range(0, 1000, low_open=True, unit="Hz")
    assert parse_number("1e-3", above_zero) == 1e-3
    assert parse_number("1000", above_zero) == 1000
    for bad in ("0", "1000.5", "-1e-300", "nan", "inf", "x"):
        with pytest.raises(OptionError, match="more than 0 Hz and at most 1000 Hz"):
            parse_number(bad, above_zero)
    with pytest.raises(OptionError, match=r"allowed: 0\.01 to 1000"):
        parse_number("1e-300", Range(0.01, 1000))


def test_error_lines_escape_control_characters() -> None:
    with pytest.raises(OptionError) as e:
        parse_number("1\n\x1b[31m", Range(0, 1))
    message = str(e.value)
    assert "\n" not in message and "\x1b" not in message
    assert r"\x1b" in message
    assert printable("x" * 100).endswith("…'")


def test_integers_with_separator_controls_around_them_are_read_or_refused_in_one_line() -> None:
    # found by benchmarks/fuzz.py (target options): the patterns' \s matches \x1c-\x1f, which
    # int() and float() refused with a ValueError (an internal error)
    assert parse_integer("\x1e\x1e0", Range(0, 10)) == 0
    assert parse_integer("1e3\x1f", Range(0, 10_000)) == 1_000
    with pytest.raises(OptionError):
        parse_integer("\x1c5", Range(0, 1))
