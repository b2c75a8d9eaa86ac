"""Issue 38 item 7: replaying a model at another rate than its run's says how the delays
change, with the figures, and which --rate keeps the run's distribution."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import make_run, run_main


def fast_run(store: Path, seed: int = 5):
    """2 s at 20 kHz near 25 µs, with spikes of 0.5-1 ms about 50 times a second."""
    rng = np.random.default_rng(seed)
    n = 40_000
    t_send = 1_000_000_000 + np.arange(n, dtype=np.int64) * 50_000
    latency = rng.normal(25_500, 800, n)
    spikes = rng.choice(n, 100, replace=False)
    latency[spikes] = rng.uniform(500_000, 1_000_000, spikes.size)
    return make_run(store, latency.astype(np.int64), t_send=t_send)


def test_a_replay_far_from_the_runs_rate_warns_with_the_figures_and_the_rate_that_keeps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    run = fast_run(store)
    model = tmp_path / "m.json"
    code, _out, err = run_main(["model", "build", run.id, "-o", str(model), "--store", str(store)], capsys)
    assert code == 0, err
    code, out, err = run_main(["model", "sample", str(model), "-n", "2000", "--rate", "90"], capsys)
    assert code == 0, err
    assert len(out.split()) == 2000  # the delays are still printed, on stdout
    (line,) = [x for x in err.splitlines() if "replay-rate" in x]
    assert "90 Hz" in line and "20 kHz" in line
    assert re.search(r"median \S+ µs against the run's 25\.\d µs", line), line
    share = re.search(r"([\d.]+) % above \S+ \S+ against the run's ([\d.]+) %", line)
    assert share is not None, line
    assert float(share.group(1)) > 10 * float(share.group(2))  # far more items delayed by spikes
    assert re.search(r"--rate 2000\d", line), line
    code, _out, err = run_main(["model", "sample", str(model), "-n", "2000", "--rate", "20000"], capsys)
    assert code == 0 and "replay-rate" not in err


def test_a_designed_model_has_no_run_rate_and_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "p.json"
    code, _out, err = run_main(
        ["model", "make", "-o", str(model), "--constant", "1ms", "--spikes", "40ms@2"], capsys
    )
    assert code == 0, err
    code, _out, err = run_main(["model", "sample", str(model), "-n", "100", "--rate", "90"], capsys)
    assert code == 0 and "replay-rate" not in err
