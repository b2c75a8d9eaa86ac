"""Every duration option goes through the one parser with its range (issue 42 item 12):
``1e400``, ``nan`` and a negative duration are one line naming the option and the range,
exit 2, never ``internal error: OverflowError`` nor argparse's "expected one argument"."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_main
from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import parse_duration_ns

# (argv before the value, the option) for every duration option kept as text for the
# measuring code (the others are checked by cli.common.duration already)
TEXT_DURATIONS = [
    (["bench", "--pause"], "--pause"),
    (["bench", "--scenario", "pipeline", "--interval"], "--interval"),
    (["bench", "--policy", "deadline", "--dl-runtime"], "--dl-runtime"),
    (["bench", "--policy", "deadline", "--dl-deadline"], "--dl-deadline"),
    (["bench", "--policy", "deadline", "--dl-period"], "--dl-period"),
    (["hiccup", "--duration"], "--duration"),
    (["hiccup", "--threshold"], "--threshold"),
    (["inject", "--stats-interval"], "--stats-interval"),
    (["model", "make", "-o", "m.json", "--constant"], "--constant"),
    (["describe", "RUN", "--expected-interval"], "--expected-interval"),
]


@pytest.mark.parametrize(("argv", "option"), TEXT_DURATIONS)
@pytest.mark.parametrize("value", ["1e400", "1e400s", "-1ms", "-0.5", "nan", "inf", "1e20h"])
def test_a_duration_out_of_range_is_one_line_naming_the_option(
    argv: list[str], option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main([*argv, value, "--store", str(tmp_path / "s")], capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert option in err and "expected one argument" not in err, err
    # a bare number in an option that once read another unit is refused for that (issue 38
    # item 8: a bare number is seconds everywhere), also one line naming the option
    assert "out of range" in err or "is not a duration" in err or "needs a unit" in err, err
    assert not (tmp_path / "s").exists()  # refused before anything was made


def test_the_pause_of_the_audit_gets_the_range_message(tmp_path: Path, capsys) -> None:
    code, _, err = run_main(["bench", "--pause", "-1ms", "--store", str(tmp_path)], capsys)
    assert code == 2
    assert "argument --pause: '-1ms' is out of range (allowed: 0 s to 1 year" in err, err


def test_a_negative_offset_still_reaches_its_option(capsys) -> None:
    """The wider negative-value rule lets --from -0.5s (allowed) through as a value."""
    _, _, err = run_main(["show", "nosuchrun", "--from", "-0.5s"], capsys)
    assert "expected one argument" not in err, err


@pytest.mark.parametrize("text", ["1e400", "1e400s", "-1ms", "nan", "inf", "-0", "1e30"])
def test_the_one_parser_refuses_what_no_int64_holds(text: str) -> None:
    if text == "-0":
        assert parse_duration_ns(text) == 0
        return
    with pytest.raises(JitterlabError) as e:
        parse_duration_ns(text)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("text", "unit", "ns"),
    [
        ("1ms", "s", 1_000_000),
        ("250us", "s", 250_000),
        ("1.5", "s", 1_500_000_000),
        ("7ns", "ns", 7),
        ("33.3ms", "ms", 33_300_000),
        ("0", "ms", 0),
        ("1ns", "s", 1),
    ],
)
def test_the_one_parser_keeps_the_values_it_took(text: str, unit: str, ns: int) -> None:
    assert parse_duration_ns(text, unit) == ns


@pytest.mark.parametrize(("text", "unit"), [("7", "ns"), ("33.3", "ms")])
def test_a_bare_number_in_an_option_of_another_unit_is_refused(text: str, unit: str) -> None:
    with pytest.raises(JitterlabError, match="needs a unit"):
        parse_duration_ns(text, unit)
