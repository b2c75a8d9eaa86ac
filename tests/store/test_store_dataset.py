"""The store as a dataset (issue 25 item 6): the DuckDB query in docs/run-format.md runs
over a real store and gives every run's figures, checked against the stored samples."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import latency_clusters, make_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-format.md"


def documented_query() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The store as a dataset", 1)[1]
    match = re.search(r"```sql\n(.*?)```", section, re.S)
    assert match, "docs/run-format.md lost its DuckDB query"
    return match.group(1)


def test_the_documented_duckdb_query_reads_every_run_of_a_store(store: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    runs = [
        make_run(store, latency_clusters(seed=1, n=20_000), pairs=2),
        make_run(store, latency_clusters(seed=2, n=30_000), pairs=4),
        make_run(store, latency_clusters(seed=3, n=5_000)),
    ]
    sql = documented_query().replace("STORE", store.as_posix())
    rows = duckdb.connect().execute(sql).fetchall()
    expected = sorted(
        (
            r.id,
            int(r.latency_ns.size),
            int(r.latency_ns.min()),
            int(r.latency_ns.max()),
            int(np.sum(r.latency_ns, dtype=np.int64)),
        )
        for r in runs
    )
    assert [tuple(int(v) if i else v for i, v in enumerate(row)) for row in rows] == expected
