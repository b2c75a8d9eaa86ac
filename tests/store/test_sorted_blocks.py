"""A ``jitterlab net`` run's blocks are stored in (pair, seq) order without every record in
memory (issue 25 item 3: no write path holds a whole column): an external merge sort of the
agents' raw files gives the same samples as ``np.lexsort`` of all of them at once."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterlab.store import ResultsStore, Run
from jitterlab.store import reader as reader_module
from jitterlab.store import writer as writer_module
from jitterlab.store.rawfile import NET_RECORD_DTYPE, RawSamples, read_raw_samples, write_raw_samples
from jitterlab.store.sorting import sorted_records
from jitterlab.store.staging import BLOCKS_DIR, DRAFT_JSON, PARTS_DIR


def net_records(n: int, seed: int, pairs: int = 4) -> np.ndarray:
    """Records as agents hand them over: pairs interleaved, sequence numbers out of order
    (UDP reorders) and repeated (equal keys: the sort must keep their order)."""
    rng = np.random.default_rng(seed)
    r = np.zeros(n, NET_RECORD_DTYPE)
    r["pair"] = rng.integers(0, pairs, n)
    r["seq"] = rng.integers(0, max(n // 3, 1), n)
    r["t_send_ns"] = np.arange(n) * 1_000
    r["t_recv_ns"] = r["t_send_ns"] + rng.integers(1_000, 90_000, n)
    r["t_intended_ns"] = r["t_send_ns"] - 5
    r["t_actual_send_ns"] = r["t_send_ns"]
    r["src_node"] = 0
    r["dst_node"] = r["pair"] + 1
    return r


def whole_sort(records: np.ndarray) -> np.ndarray:
    """What net bench stored before: every record at once, lexsorted."""
    return records[np.lexsort((records["seq"], records["pair"]))]


@pytest.mark.parametrize(
    ("n", "rows", "blocks"), [(0, 10, 1), (5, 10, 2), (1_000, 64, 3), (30_000, 1_024, 4)]
)
def test_the_external_sort_equals_the_whole_sort_record_for_record(
    tmp_path: Path, n: int, rows: int, blocks: int
) -> None:
    records = net_records(n, seed=n)
    cuts = np.sort(np.random.default_rng(1).integers(0, n + 1, blocks - 1))
    raws = [RawSamples(b, False, False, "", dtype=NET_RECORD_DTYPE) for b in np.split(records, cuts)]
    chunks = list(sorted_records(raws, tmp_path / "sorted", rows))
    got = np.concatenate([np.zeros(0, NET_RECORD_DTYPE), *chunks])
    assert got.dtype == NET_RECORD_DTYPE
    assert np.array_equal(got, whole_sort(records))  # stable too: equal keys keep their order
    files = -(-n // rows)  # sorted chunks merged: a slice of each (1,024 records at least) at a time
    assert all(c.size <= max(rows, files * 1_024) for c in chunks)
    assert list(tmp_path.iterdir()) == []  # scratch files removed


def test_many_small_parts_are_joined_into_whole_chunks_before_the_sort(tmp_path: Path) -> None:
    """A stream is stored from its parts (about a second each, thousands in a long run) and
    the receivers' final blocks: the sort joins them into chunks of ``rows``, so its scratch
    files number records / rows, not one per part (each open twice during the merge)."""
    records = net_records(5_000, seed=7)
    cuts = np.sort(np.random.default_rng(2).integers(0, 5_000, 299))  # 300 parts, some empty
    raws = [RawSamples(b, False, False, "", dtype=NET_RECORD_DTYPE) for b in np.split(records, cuts)]
    scratch: set[str] = set()
    chunks = []
    for chunk in sorted_records(raws, tmp_path / "sorted", 1_000):
        scratch |= {p.name for p in tmp_path.iterdir()}
        chunks.append(chunk)
    assert np.array_equal(np.concatenate(chunks), whole_sort(records))
    assert len(scratch) == 2 * 5  # 5 chunks of 1,000, each a records and an index file


def test_blocks_are_stored_sorted_in_memory_independent_of_their_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400,000 records (22 MB as records; the whole sort held ~70 MB: the array, its
    order, the sorted copy) stored with 16,384 records at a time (and row groups of as many): the
    peak of the numpy and Python allocations stays under 8 MB, and the run holds exactly the whole sort."""
    n, rows = 400_000, 16_384
    # the writer's row groups and the summary's read batches as small as the sort's chunks
    monkeypatch.setattr(writer_module, "ROW_GROUP_ROWS", rows)
    monkeypatch.setattr(reader_module, "READ_BATCH_ROWS", rows)
    store = ResultsStore(tmp_path / "s")

    def commit(records: np.ndarray) -> tuple[Run, int]:
        meta = {"id": store.new_run_id("net"), "kind": "run", "status": "complete", "config": {"pairs": 4}}
        staging = store.staging_dir(meta["id"])
        (staging / BLOCKS_DIR).mkdir()
        (staging / PARTS_DIR).mkdir()
        (staging / DRAFT_JSON).write_text("{}")
        half = records.size // 2
        write_raw_samples(staging / BLOCKS_DIR / "node-1.jlraw", records[:half])
        write_raw_samples(staging / BLOCKS_DIR / "node-2.jlraw", records[half:])
        blocks = [read_raw_samples(staging / BLOCKS_DIR / f"node-{k}.jlraw") for k in (1, 2)]
        assert all(b.loaded is None for b in blocks)
        del records
        tracemalloc.start()
        try:
            run = store.commit_blocks(staging, blocks, meta, rows=rows)
            return run, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    commit(net_records(1_000, seed=1))  # what the store imports on first use is not the sort's
    run, peak = commit(net_records(n, seed=7))
    assert peak < 8_000_000, f"peak {peak / 1e6:.1f} MB: the whole column was built"
    want = whole_sort(net_records(n, seed=7))
    table = pq.read_table(run.path / "samples.parquet")
    for name in ("pair", "seq", "t_send_ns", "t_recv_ns", "t_intended_ns", "src_node", "dst_node"):
        assert np.array_equal(table.column(name).to_numpy(), want[name].astype(np.int64)), name
    # the blocks, the parts and the draft went once the samples file was written
    assert sorted(p.name for p in run.path.iterdir()) == ["run.json", "samples.parquet"]


def test_records_in_order_already_come_out_the_same(tmp_path: Path) -> None:
    """An agent's records are mostly in order (one pair, rising sequence numbers): chunks in
    order are not sorted again, and a few reordered records still land where the whole
    sort puts them."""
    records = net_records(20_000, seed=3, pairs=1)
    records["seq"] = np.arange(records.size)
    records["seq"][5_000::997] -= 3  # UDP reordering, a few places
    raws = [RawSamples(records, False, False, "", dtype=NET_RECORD_DTYPE)]
    got = np.concatenate(list(sorted_records(raws, tmp_path / "sorted", 2_048)))
    assert np.array_equal(got, whole_sort(records))
    ordered = whole_sort(records)
    got = np.concatenate(list(sorted_records([RawSamples(ordered, False, False, "")], tmp_path / "s", 2_048)))
    assert np.array_equal(got, ordered)
