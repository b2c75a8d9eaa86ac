"""Bad input: one line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_main


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "--pairs", "0"],
        ["bench", "--pairs", "65"],
        ["bench", "--pairs", "x"],
        ["bench", "--technique", "nosuch"],
        ["bench", "--policy", "batch"],
        ["bench", "--samples", "-5"],
        ["bench", "--samples", "0"],
        ["bench", "--pause", "soon"],
        ["bench", "--priority", "120", "--policy", "rr"],
        ["bench", "--policy", "deadline"],
        ["bench", "--pin", "first-cpu", "--technique", "mutex", "--samples", "10"],
        ["bench", "--caf-scheduler", "magic"],
        ["show", "no-such-run"],
        ["nosuchcommand"],
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main([*args, "--store", str(store)] if args[0] in ("bench", "show") else args, capsys)
    assert code == 2
    assert_one_line_error(err)


def test_runs_on_an_empty_store_says_so(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["runs", "--store", str(store)], capsys)
    assert code == 0
    assert out == ""
    assert "no runs" in err
