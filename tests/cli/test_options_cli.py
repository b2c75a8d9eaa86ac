"""Every number and duration option goes through the one parser: one line naming the option
and its allowed range, exit 2; old spellings still work and warn with the new one."""

from __future__ import annotations

import pytest

from conftest import assert_one_line_error, run_main
from jitterlab.cli.main import build_parser


@pytest.mark.parametrize(
    ("args", "flag", "allowed"),
    [
        (["mtp", "analyze", "v.mp4", "--rolling-shutter", "abc"], "--rolling-shutter", "0 s to 1 s"),
        (["mtp", "analyze", "v.mp4", "--window", "abc"], "--window", "more than 0 s"),
        (["mtp", "analyze", "v.mp4", "--capture-fps", "1e-300"], "--capture-fps", "1 Hz to 100_000 Hz"),
        (["mtp", "ingest", "f.csv", "--rev-per-s", "1e-300"], "--rev-per-s", "0.01 to 1000"),
        (["mtp", "ingest", "f.csv", "--warmup", "1e12s"], "--warmup", "0 s to 1 day"),
        (["mtp", "ingest", "f.csv", "--offset-steps", "1" + "0" * 400], "--offset-steps", "1_000_000_000"),
        (["mtp", "ingest", "f.csv", "--steps-per-rev", "1e23"], "--steps-per-rev", "1 to 1_000_000"),
        (["net", "bench", "--rate", "0"], "--rate", "more than 0 Hz"),
        (["repl", "bench", "--rate", "nan"], "--rate", "more than 0 Hz"),
        (["bench", "--seed", "-1"], "--seed", "0 to 4_294_967_295"),
        (["model", "sample", "m.json", "--rate", "1e-300x"], "--rate", "more than 0 Hz"),
    ],
)
def test_bad_values_name_the_option_and_its_range(
    args: list[str], flag: str, allowed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(args, capsys)
    assert code == 2
    assert_one_line_error(err)
    assert f"argument {flag}" in err
    assert allowed in err


@pytest.mark.parametrize(
    ("command", "old", "new", "dest", "value", "expected"),
    [
        ("bench", "--warmup", "--warmup-samples", "warmup", "50", 50),
        ("net bench", "--messages", "--samples", "samples", "2000", 2000),
        ("inject validate", "--count", "--samples", "samples", "300", 300),
        ("inject validate", "--size", "--payload", "payload", "100", 100),
        ("mtp synth-log folder", "--load", "--spike-probability", "spike_probability", "0.5", 0.5),
    ],
)
def test_old_spellings_work_and_warn(
    command: str,
    old: str,
    new: str,
    dest: str,
    value: str,
    expected: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    words = command.split()
    args = build_parser(words[0]).parse_args([*words, old, value])
    assert getattr(args, dest) == expected
    err = capsys.readouterr().err
    assert f"warning[deprecated-option]: {old} is an old spelling: use {new}" in err
    again = build_parser(words[0]).parse_args([*words, new, value])
    assert getattr(again, dest) == expected
    assert capsys.readouterr().err == ""


def test_durations_mean_seconds_everywhere() -> None:
    for words in (["net", "bench"], ["repl", "bench"]):
        args = build_parser(words[0]).parse_args([*words, "--duration", "1500ms", "--warmup", "2"])
        assert (args.duration, args.warmup) == (1.5, 2.0)
