"""`show` reads a run in row groups (issue 25 item 1) with figures equal to the in-memory
summary to the last bit, and `--percentiles` (issue 26 item 5) gives exact type-7 values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import latency_clusters, make_run, run_main
from jitterlab.core.tidy import tidy_json
from jitterlab.describe.analysis import run_summary
from jitterlab.stats import percentiles, summarize
from jitterlab.stats.quantile_ci import is_resolved


def test_show_reads_in_row_groups_and_equals_the_whole_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    latency = np.concatenate([latency_clusters(1, 1_100_000), rng.integers(10**7, 10**9, 50)])
    run = make_run(tmp_path / "s", latency)
    assert pq.ParquetFile(run.path / "samples.parquet").metadata.num_row_groups >= 2
    assert run_summary(run) == summarize(run.latency_ns).to_dict()


def test_show_percentiles_are_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path / "s", latency_clusters(3, 20_000))
    store = str(run.path.parent)
    code, out, err = run_main(
        ["show", run.id, "--json", "--percentiles", "25,99.9,99.99,max", "--store", store], capsys
    )
    assert code == 0, err
    got = json.loads(out)["percentiles_ns"]
    x = run.latency_ns
    ps = (25.0, 99.9, 99.99, 100.0)
    # equal to the in-memory type-7 percentiles, and to numpy's up to its interpolation rounding;
    # p99.99 of 20 400 samples is not resolved (2 beyond it): null, never a bare number
    assert not is_resolved(x.size, 99.99)
    exact = [float(v) for v in percentiles(x, ps)]
    assert list(got.values()) == tidy_json([exact[0], exact[1], None, exact[3]])
    assert list(got) == ["p25", "p99.9", "p99.99", "max"]
    resolved = [v for p, v in zip(ps, got.values(), strict=True) if p != 99.99]
    assert resolved == pytest.approx(np.percentile(x, (25.0, 99.9, 100.0)), rel=1e-12)
    code, out, _ = run_main(["show", run.id, "--percentiles", "99.9", "--store", store], capsys)
    assert code == 0 and "p99.9" in out
    for bad in ("0", "101", "abc", "50,,90"):
        code, _, err = run_main(["show", run.id, "--percentiles", bad, "--store", store], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, (bad, err)
