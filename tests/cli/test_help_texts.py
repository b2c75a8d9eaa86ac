"""Help texts and small things (issue 43 item 6): every --json says what it does, defaults are
stated, RUN is spelled one way, ssq ignores named columns, mtp names a folder or a FIFO, and
--skip-invalid does not print a line per damaged line without end."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, run_main
from jitterlab.cli.main import build_parser
from jitterlab.stats.ssq import ITEMS
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import MAX_SKIP_WARNINGS, LogWriter


def sub(words: list[str]) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = build_parser(words[0])
    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def option(words: list[str], name: str) -> argparse.Action:
    return next(a for a in sub(words)._actions if name in a.option_strings)


@pytest.mark.parametrize(
    "words",
    [["show"], ["describe"], ["runs"], ["compare"], ["hiccup"], ["inject"], ["ssq", "score"], ["bench"]],
)
def test_every_json_option_has_help(words: list[str]) -> None:
    assert option(words, "--json").help


@pytest.mark.parametrize(
    ("words", "name", "default"),
    [
        (["bench"], "--pairs", "default 1"),
        (["bench"], "--pin", "default none"),
        (["hiccup"], "--policy", "default other"),
        (["describe"], "--test", "default stacked-z"),
        (["inject"], "--samples", "default 10000"),
        (["mtp", "synth"], "--fps", "default 60"),
        (["mtp", "synth"], "--duration", "default 10s"),
        (["report"], "--output", "default report.html"),
    ],
)
def test_defaults_are_stated(words: list[str], name: str, default: str) -> None:
    assert default in (option(words, name).help or "")


@pytest.mark.parametrize("words", [["show"], ["compare"], ["report"], ["describe"], ["export"], ["rename"]])
def test_runs_are_spelled_run(words: list[str]) -> None:
    positionals = [a for a in sub(words)._actions if not a.option_strings and a.dest != "help"]
    runs = positionals[:2] if words == ["compare"] else positionals[:1]
    assert positionals and all((a.metavar or "").startswith("RUN") for a in runs)


def test_ssq_score_ignores_named_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = [n for n, _ in ITEMS]
    path = tmp_path / "answers.csv"
    path.write_text("participant,age," + ",".join(names) + "\n" + "p1,31," + ",".join(["1"] * 16) + "\n")
    code, _, err = run_main(["ssq", "score", str(path)], capsys)
    assert code == 2 and "--ignore-column" in err
    code, out, err = run_main(["ssq", "score", str(path), "--ignore-column", "age"], capsys)
    assert code == 0, err and "p1" in out
    code, _, err = run_main(["ssq", "score", str(path), "--ignore-column", "weight"], capsys)
    assert code == 2 and "no such column" in err


def test_mtp_analyze_names_a_folder_and_a_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "a folder"), (fifo, "a FIFO")):
        code, _, err = run_main(["mtp", "analyze", str(path), "--no-store"], capsys)
        assert code == 2 and what in err, err
        assert_one_line_error(err)


def test_skip_invalid_warnings_are_capped(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = Histogram.auto(3)
    h.record(np.array([1_000], dtype=np.int64), 5)
    text = io.StringIO()
    w = LogWriter(text)
    w.version()
    w.legend()
    for i in range(40):
        w.interval(float(i), 1.0, h)
        text.write("0.0,1.0,this is damaged\n")
    path = tmp_path / "damaged.hlog"
    path.write_text(text.getvalue())
    code, _, err = run_main(["import", str(path), "--skip-invalid", "--store", str(store)], capsys)
    assert code == 0, err
    assert err.count("left out (--skip-invalid)") == MAX_SKIP_WARNINGS
    assert "further damaged lines" in err
