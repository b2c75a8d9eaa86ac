"""`compare` reads both runs in row groups (issue 25 item 1): its JSON equals the
comparison of the whole columns in memory, number for number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import latency_clusters, make_run, run_main
from jitterlab.core.tidy import tidy_json
from jitterlab.describe.compare import comparison_json
from jitterlab.stats import compare_samples
from jitterlab.stats.compare import COMPARE_PERCENTILES, ChunkedSample, interval_confidence
from jitterlab.stats.quantile_ci import intervals_of_sample


def test_compare_reads_in_row_groups_and_equals_the_whole_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jitterlab.describe import compare
    from jitterlab.store import memory

    monkeypatch.setattr(memory, "IN_MEMORY_AT_MOST", 1_000)  # read in row groups, as above 2^24
    rng = np.random.default_rng(17)
    store = tmp_path / "s"
    a = make_run(
        store, np.concatenate([latency_clusters(1, 1_100_000), rng.integers(10**7, 10**8, 20)]), technique="a"
    )
    b = make_run(store, (latency_clusters(2, 300_000) * 1.07).astype(np.int64), technique="b")
    assert pq.ParquetFile(a.path / "samples.parquet").metadata.num_row_groups >= 2
    assert isinstance(compare.run_sample(a), ChunkedSample)
    code, out, err = run_main(["compare", a.id, b.id, "--json", "--store", str(store)], capsys)
    assert code == 0, err
    got = json.loads(out)
    # each run's intervals in memory, blocks by send time (as the CLI's, read in row groups)
    level = interval_confidence(0.95)
    intervals = (
        intervals_of_sample(a.latency_ns, COMPARE_PERCENTILES, a.t_send_ns, level),
        intervals_of_sample(b.latency_ns, COMPARE_PERCENTILES, b.t_send_ns, level),
    )
    whole = compare_samples(a.latency_ns, b.latency_ns, intervals=intervals)

    class Whole:
        pass

    rc = Whole()
    rc.a, rc.b, rc.result, rc.warnings = a, b, whole, []  # type: ignore[attr-defined]
    expected = json.loads(json.dumps(tidy_json(comparison_json(rc))))  # type: ignore[arg-type]  # --json: 12 digits
    for key in ("verdict", "tests", "percentiles", "qq"):
        assert got[key] == expected[key], key
