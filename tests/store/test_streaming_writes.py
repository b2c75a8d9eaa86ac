"""Writes stream (issue 25 item 3): samples enter the store row group by row group and the
stored summary is computed from the written file in bounded memory, exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import percentiles_of_scan, summarize, summarize_chunks
from jitterlab.store import ResultsStore
from jitterlab.store import writer as writer_module
from jitterlab.store.ingest import ImportOptions, import_csv
from jitterlab.store.rawfile import RECORD_DTYPE, read_raw_samples, write_raw_samples


def chunked(x: np.ndarray, size: int):  # type: ignore[no-untyped-def]
    return lambda: (x[i : i + size] for i in range(0, x.size, size))


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 400_000])
def test_the_streaming_summary_equals_the_in_memory_one(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.lognormal(8, 1.5, n).astype(np.int64)
    x[rng.integers(0, n, max(1, n // 1000))] = rng.integers(10**7, 10**11, max(1, n // 1000))
    whole = summarize(x).to_dict()
    for size in (65_537, 1_000, 1 << 20):  # chunks that do and do not align with the blocks
        assert summarize_chunks(chunked(x, size)).to_dict() == whole  # every figure, to the last bit
    assert abs(whole["mean"] - float(np.mean(x))) <= 1e-12 * abs(
        whole["mean"]
    )  # the exact mean, rounded once
    assert percentiles_of_scan(LocalScan(chunked(x, 999)), (50.0,))[0] == float(np.median(x))


def test_ties_wide_ranges_and_negative_values_are_exact() -> None:
    rng = np.random.default_rng(3)
    ties = np.full(600_000, 7, np.int64)
    wide = np.concatenate([ties, rng.integers(0, 2**61, 300_000), -rng.integers(0, 10**6, 300_000)])
    rng.shuffle(wide)
    for x in (ties, wide):
        whole, streamed = summarize(x).to_dict(), summarize_chunks(chunked(x, 100_000)).to_dict()
        assert streamed == whole


def test_a_raw_file_is_stored_in_row_groups_without_being_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "ROW_GROUP_ROWS", 1000)
    n = 4_500
    records = np.zeros(n, RECORD_DTYPE)
    records["pair"] = np.arange(n) % 3
    records["seq"] = np.arange(n) // 3
    records["t_send_ns"] = np.arange(n) * 1000
    records["t_recv_ns"] = records["t_send_ns"] + 500 + np.arange(n) % 97
    store = ResultsStore(tmp_path / "s")
    meta = {"id": store.new_run_id("raw"), "kind": "run", "status": "complete", "config": {}}
    staging = store.staging_dir(meta["id"])
    write_raw_samples(staging / "samples.jlraw", records)
    raw = read_raw_samples(staging / "samples.jlraw")
    assert raw.loaded is None and raw.rows == n  # checked, nothing held
    run = store.commit(staging, raw, meta)
    assert not (run.path / "samples.jlraw").exists()  # consumed
    f = pq.ParquetFile(run.path / "samples.parquet")
    assert f.metadata.num_row_groups == 5 and f.metadata.row_group(0).num_rows == 1000
    assert np.array_equal(run.latency_ns, records["t_recv_ns"] - records["t_send_ns"])
    assert run.meta["summary"]["latency_ns"]["p99"] == summarize(run.latency_ns).p99


def test_a_csv_whose_later_rows_are_not_integers_is_read_as_text_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CSV reader infers types from its first block; a later block that does not fit
    is read again as text, not refused and not rounded."""
    from jitterlab.store import ingest

    monkeypatch.setattr(ingest, "READ_BLOCK_BYTES", 1 << 16)
    path = tmp_path / "late.csv"
    n = 100_000  # several blocks of the reader
    lines = ["latency_us"] + [str(5 + i % 7) for i in range(n)] + ["12.345", "7.5"]
    path.write_text("\n".join(lines) + "\n")
    run = import_csv(path, ResultsStore(tmp_path / "s"), ImportOptions())
    assert run.meta["samples"]["rows"] == n + 2
    assert run.latency_ns[-2:].tolist() == [12_345, 7_500]


def test_a_bad_row_far_into_a_csv_names_its_line_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jitterlab.store import ingest

    monkeypatch.setattr(ingest, "READ_BLOCK_BYTES", 1 << 16)
    path = tmp_path / "bad.csv"
    rows = [f"{i},{i + 100}" for i in range(200_000)]
    rows[150_000] = "5,1"
    path.write_text("t_send_ns,t_recv_ns\n" + "\n".join(rows) + "\n")
    store = ResultsStore(tmp_path / "s")
    from jitterlab.core.errors import JitterlabError

    with pytest.raises(JitterlabError, match=r"line 150002: t_recv_ns is before t_send_ns \(1 invalid rows"):
        import_csv(path, store, ImportOptions())
    assert store.runs() == [] and not any((tmp_path / "s" / ".staging").glob("*/samples.parquet"))


def test_every_run_says_its_samples_per_pair_and_old_runs_still_read(tmp_path: Path) -> None:
    """``config.samples`` (issue 28 item 2): set by the producer when it asked for a count,
    else what was recorded per pair; runs stored with ``samples_per_pair`` still read."""
    from jitterlab.store.schema import samples_per_pair

    store = ResultsStore(tmp_path / "s")
    meta = {"id": store.new_run_id("no-count"), "kind": "run", "status": "complete", "config": {"pairs": 1}}
    run = store.commit_latencies(meta, np.arange(10), np.arange(10) + 5)
    assert run.config["samples"] == 10 and samples_per_pair(run.config) == 10
    assert samples_per_pair({"samples_per_pair": 300}) == 300
    assert samples_per_pair({}) is None


class ArrowPeak:
    """The peak of pyarrow's allocations above where they were when it started, sampled
    every millisecond by a thread (Parquet buffers are not Python allocations)."""

    def __init__(self) -> None:
        import threading

        import pyarrow as pa

        self._pa = pa
        self.base = pa.total_allocated_bytes()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, self._pa.total_allocated_bytes() - self.base)

    def __enter__(self) -> ArrowPeak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def test_merge_and_import_read_stored_samples_without_keeping_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 item 3: merge's copy of each run and import's read-back of the stored samples
    opened Parquet files with pre-buffering, which keeps every row group read until the file
    closes (a 10^8-sample run: its whole file in memory). 48 row groups of 65,536 samples
    (3.1 M rows, a file of ~20 MB) read a row group at a time: pyarrow's allocations stay
    below 8 MB."""
    from conftest import make_run
    from jitterlab.store import ingest
    from jitterlab.store import reader as reader_module
    from jitterlab.store.merge import merge

    rows = 1 << 16
    monkeypatch.setattr(writer_module, "ROW_GROUP_ROWS", rows)
    for module in (reader_module, ingest):  # batches of a row group
        monkeypatch.setattr(module, "READ_BATCH_ROWS", rows)
    monkeypatch.setattr(ingest, "READ_BLOCK_BYTES", 1 << 20)  # the CSV read a MiB of text at a time
    n = 48 * rows
    rng = np.random.default_rng(4)
    # values that do not pack to a few bits (about 7 B a row stored): a file of ~20 MB
    t_send = 1_000_000_000 + np.cumsum(rng.integers(1, 1 << 20, n))
    run = make_run(tmp_path / "s", rng.integers(1_000, 1 << 36, n), t_send=t_send)
    assert pq.ParquetFile(run.path / "samples.parquet").metadata.num_row_groups == 48
    bound = 8 << 20  # a few row groups of 65,536 rows (1.8 MB each as read) in flight
    store = ResultsStore(tmp_path / "s")
    with ArrowPeak() as peak:
        merged = merge(store, [run.id, run.id], "twice")
    assert merged.meta["samples"]["rows"] == 2 * n
    assert peak.peak < bound, f"merge: pyarrow held {peak.peak / 1e6:.0f} MB"
    csv = tmp_path / "samples.csv"
    latency = rng.integers(1_000, 1 << 36, n)
    csv.write_text(
        "t_send_ns,t_recv_ns\n"
        + "".join(f"{t},{t + x}\n" for t, x in zip(t_send.tolist(), latency.tolist(), strict=True))
    )
    with ArrowPeak() as peak:
        imported = import_csv(csv, store)
    assert imported.meta["samples"]["rows"] == n
    assert peak.peak < bound, f"import: pyarrow held {peak.peak / 1e6:.0f} MB"
