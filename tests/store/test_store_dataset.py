"""The store as a dataset (issue 25 item 6): the DuckDB query in docs/run-format.md runs
over a real store and gives every run's figures, checked against the stored samples."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import latency_clusters, make_run
from jitterlab.store import ResultsStore, Run
from jitterlab.store.writer import SampleWriter

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-format.md"


def documented_query(language: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The store as a dataset", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"docs/run-format.md lost its {language} query"
    return match.group(1)


def run_with_extra_columns(store: Path, latency: np.ndarray) -> Run:
    """A run with the net runs' extra columns beside the four every run has."""
    s = ResultsStore(store)
    meta = {"id": s.new_run_id("net", "p1"), "kind": "run", "status": "complete", "config": {"pairs": 1}}
    staging = s.staging_dir(meta["id"])
    t_send = 1_000_000_000 + np.arange(latency.size, dtype=np.int64) * 10_000
    with SampleWriter(staging / "samples.parquet", meta["id"], ("t_intended_ns", "src_node")) as w:
        w.write(
            0, np.arange(latency.size), t_send, t_send + latency, t_intended_ns=t_send, src_node=t_send * 0
        )
    return s.publish_samples(staging, meta, w)


def stored_runs(store: Path) -> list[tuple[str, int, int, int, int]]:
    runs = [
        make_run(store, latency_clusters(seed=1, n=20_000), pairs=2),
        make_run(store, latency_clusters(seed=2, n=30_000), pairs=4),
        make_run(store, latency_clusters(seed=3, n=5_000)),
        run_with_extra_columns(store, latency_clusters(seed=4, n=3_000)),  # columns differ by run
    ]
    return sorted(
        (
            r.id,
            int(r.latency_ns.size),
            int(r.latency_ns.min()),
            int(r.latency_ns.max()),
            int(np.sum(r.latency_ns, dtype=np.int64)),
        )
        for r in runs
    )


def test_the_documented_duckdb_query_reads_every_run_of_a_store(store: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    expected = stored_runs(store)
    sql = documented_query("sql").replace("STORE", store.as_posix())
    rows = duckdb.connect().execute(sql).fetchall()
    assert [tuple(int(v) if i else v for i, v in enumerate(row)) for row in rows] == expected


def test_the_documented_polars_query_reads_every_run_of_a_store(store: Path) -> None:
    pytest.importorskip("polars")
    expected = stored_runs(store)
    scope: dict[str, object] = {}
    exec(documented_query("python").replace("STORE", store.as_posix()), scope)
    rows = scope["per_run"].rows()  # type: ignore[attr-defined]
    assert [(r[0], *(int(v) for v in r[1:])) for r in rows] == expected
