"""Shared fixtures: a private results store and helpers that run the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jitterlab.cli import main


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "results"


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jitterlab ARGS`` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "jitterlab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    try:
        code = main(args)
    except SystemExit as e:  # argparse errors
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    assert "Traceback" not in err
    assert "error" in lines[0]
