"""An analysis knows how many windows it will hold before it allocates them (issue 42 item
13): ``describe --window 1ns`` and ``export --format hlog --window 1ns`` on a 2 s run are
one line naming the bound and the narrowest width that fits, exit 2, in little memory and
time (the audit's took 24 GB and the OOM killer)."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import latency_clusters, make_run
from jitterlab.stats.windows import MAX_WINDOWS, TooManyWindows, time_windows, window_count

LIMIT_BYTES = 4_000_000_000  # the audit's ulimit -v 4000000 (kB)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


@pytest.fixture(scope="module")
def two_seconds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("windows") / "store"
    x = latency_clusters(seed=42, n=100_000)  # 20 us apart: 2 s of sends
    run = make_run(store, x, t_send=1_000_000_000 + np.arange(x.size) * 20_000)
    return store, run.id


@pytest.mark.parametrize(
    "argv",
    [
        ["describe", "RUN", "--window", "1ns"],
        ["describe", "RUN", "--window", "1ns", "--from", "0.1", "--to", "1.9"],
        ["describe", "RUN", "--window", "1ns", "--test", "gesd"],
        ["export", "RUN", "--format", "hlog", "--window", "1ns", "-o", "-"],
        ["export", "RUN", "--format", "hlog", "--window", "1ns", "--from", "0.5", "-o", "-"],
    ],
)
def test_a_window_too_narrow_is_one_line_naming_the_bound(two_seconds, argv: list[str]) -> None:
    store, run = two_seconds
    argv = [run if a == "RUN" else a for a in argv]
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jitterlab", *argv, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"at most {MAX_WINDOWS:,} are held" in lines[0] and "--window 1ns" in lines[0], lines[0]
    assert re.search(r"give --window [0-9.]+us or wider$", lines[0]), lines[0]
    assert done.stdout == ""
    assert time.monotonic() - began < 60


def _describe(store: Path, run: str, width: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "jitterlab", "describe", run, "--window", width, "--json"]
    return subprocess.run(
        [*argv, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited,
        check=False,
    )


def test_the_narrowest_width_offered_is_accepted(two_seconds) -> None:
    store, run = two_seconds
    refused = _describe(store, run, "1ns")
    offered = re.search(r"give --window ([0-9.]+us) or wider$", refused.stderr.strip())
    assert offered, refused.stderr
    done = _describe(store, run, offered.group(1))
    assert done.returncode == 0, done.stderr


def test_window_count_refuses_before_any_window_exists() -> None:
    assert window_count(0, 999, 1) == 1000
    assert window_count(5, 5, 1) == 1
    assert window_count(0, MAX_WINDOWS - 1, 1) == MAX_WINDOWS
    with pytest.raises(TooManyWindows, match="give --window 2ns or wider"):
        window_count(0, MAX_WINDOWS, 1)
    with pytest.raises(TooManyWindows):
        window_count(0, 2**62, 1)


def test_the_in_memory_windows_refuse_too(tmp_path: Path) -> None:
    t = np.array([0, 1_800_000_000], dtype=np.int64)  # 1.8 s, two samples: 1.8e9 windows of 1 ns
    with pytest.raises(TooManyWindows, match="1,800,000,001 windows"):
        time_windows(t, np.array([5, 6]), 1)
    table = time_windows(t, np.array([5, 6]), 1_000_000_000)
    assert table.count.tolist() == [1, 1]
