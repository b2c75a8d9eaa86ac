"""The one reader (issue 37): a run's samples file is verified once per command, whatever
number of passes read it, and read through store/reader.py."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from conftest import latency_clusters, make_run, run_main
from jitterlab.store.reader import to_numpy


def _counting_sha256(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every SHA-256 started from now on, counted (the verification hashes the whole file)."""
    made: list[int] = []
    real = hashlib.sha256

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "sha256", counted)
    return made


@pytest.mark.parametrize(
    "extra",
    [[], ["--from", "0.1s", "--to", "0.5s"], ["--test", "gesd"]],
    ids=["plain", "span", "gesd"],
)
def test_describe_hashes_the_samples_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """A plain describe hashed the file three times (its passes, the latency views and the
    intervals each verified it again), with --from/--to four times."""
    run = make_run(tmp_path / "s", latency_clusters(3, 20_000))
    made = _counting_sha256(monkeypatch)
    code, out, err = run_main(["describe", run.id, "--store", str(tmp_path / "s"), "--json", *extra], capsys)
    assert code == 0, err
    assert '"summary"' in out
    assert len(made) == 1


def test_a_damaged_file_is_named_by_the_reader_before_any_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path / "s", np.arange(1_000, 101_000, dtype=np.int64))
    path = run.path / "samples.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    for command in (["describe", run.id], ["show", run.id, "--recompute"]):
        code, out, err = run_main([*command, "--store", str(tmp_path / "s")], capsys)
        assert code == 2 and out == ""
        assert err.strip() == f"jitterlab: error: {path}: corrupt (SHA-256 differs from run.json)"


def test_the_first_send_time_is_one_function() -> None:
    """merge's and --from/--to's first send time are the reader's (row-group statistics)."""
    from jitterlab.store import merge, reader, span

    assert span.first_send_ns is reader.first_send_ns
    assert merge.first_send_ns is reader.first_send_ns


def test_a_time_filter_is_pushed_into_the_reader(tmp_path: Path) -> None:
    """Issue 37 item 1: a span is a filter of the reader's chunk functions (not an engine):
    row groups whose send-time statistics miss it are not read, the rest filtered row by
    row in file order; every chunk function and both engines' scans give numpy's filter."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jitterlab.stats.scan import identity
    from jitterlab.store.reader import (
        LOCAL,
        Span,
        count_kept,
        groups_meeting,
        latency_chunks,
        pair_send_recv_chunks,
        record_batches,
        timed_latency_chunks,
    )

    rng = np.random.default_rng(37)
    n = 10_000
    send = 1_000_000_000 + np.arange(n, dtype=np.int64) * 1_000 + rng.integers(0, 500, n)
    recv = send + rng.integers(1_000, 90_000, n)
    path = tmp_path / "samples.parquet"
    table = pa.table({"pair": np.zeros(n, np.int32), "t_send_ns": send, "t_recv_ns": recv})
    pq.write_table(table, path, row_group_size=1_000)
    span = Span(int(send[2_500]), int(send[6_200]))
    keep = (send >= span.first_ns) & (send <= span.last_ns)
    assert groups_meeting(path, span) == [2, 3, 4, 5, 6]  # 0, 1, 7, 8, 9 never read
    assert count_kept(path, span) == int(keep.sum()) == 3_701
    expected = (recv - send)[keep]
    assert np.array_equal(np.concatenate(list(latency_chunks(path, where=span))), expected)
    t, x = (np.concatenate(c) for c in zip(*timed_latency_chunks(path, where=span), strict=True))
    assert np.array_equal(t, send[keep]) and np.array_equal(x, expected)
    (_, s, r), *_ = pair_send_recv_chunks(path, where=span)
    assert np.array_equal(r - s, expected)
    _, batches = record_batches(path, span)
    assert pa.Table.from_batches(list(batches)).equals(table.filter(pa.array(keep)))
    assert np.array_equal(np.concatenate(list(LOCAL.latency(path, where=span).map(identity))), expected)
    assert LOCAL.summary(path, where=span).count == 3_701
    assert LOCAL.two_pass(path, where=span) is None  # a filter: the radix passes
    nothing = Span(int(send[-1]) + 1, None)
    assert groups_meeting(path, nothing) == [] and list(latency_chunks(path, where=nothing)) == []


def test_describe_of_a_streamed_run_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow's to_numpy imports pandas on its first call: 45 MB of describe's resident
    memory (of the 306 MB describe of 10⁹ peaked at, issue 37's target ≤ 300 MB) that
    nothing uses. The reader views the columns itself."""
    run = make_run(tmp_path / "s", latency_clusters(5, 20_000))
    code = (
        "import sys\nfrom jitterlab.cli import main\n"
        f"code = main(['describe', {run.id!r}, '--store', {str(tmp_path / 's')!r}, '--json', '--window', '1s'])\n"
        "print('pandas' in sys.modules, code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False 0", done.stdout[-300:] + done.stderr[-300:]


@pytest.mark.parametrize(
    "column",
    [
        pa.chunked_array([pa.array([3, 1, 2], pa.int64())]),
        pa.chunked_array([pa.array([3, 1], pa.int64()), pa.array([], pa.int64()), pa.array([7], pa.int64())]),
        pa.chunked_array([], pa.int64()),
        pa.array(np.arange(10, dtype=np.int32)).slice(3, 4),
        pa.chunked_array([pa.array([1.5, 2.5]).slice(1)]),
        pa.array([1, None, 3], pa.int64()),
        pa.array([True, False]),
    ],
    ids=["one chunk", "chunks", "no chunk", "sliced int32", "sliced float", "nulls", "bool"],
)
def test_to_numpy_is_pyarrows(column: pa.Array | pa.ChunkedArray) -> None:
    """Same values, type and writability as pyarrow's own to_numpy (zero-copy where it is),
    or the same refusal (an Array with nulls or of booleans is not viewed)."""
    try:
        theirs = column.to_numpy()
    except pa.ArrowInvalid:
        with pytest.raises(pa.ArrowInvalid):
            to_numpy(column)
        return
    ours = to_numpy(column)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    assert ours.flags.writeable == theirs.flags.writeable


RELEASED = """
import sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from jitterlab.store.reader import send_recv_chunks
path, rows = sys.argv[1], 1 << 20
schema = pa.schema([("t_send_ns", pa.int64()), ("t_recv_ns", pa.int64())])
rng = np.random.default_rng(37)
with pq.ParquetWriter(path, schema, use_dictionary=False, column_encoding="DELTA_BINARY_PACKED") as w:
    for g in range(8):
        send = np.arange(g * rows, (g + 1) * rows, dtype=np.int64) * 1000
        w.write_table(pa.table([send, send + rng.integers(5000, 90000, rows)], schema=schema))
pa.default_memory_pool().release_unused()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
before = rss()
total = sum(int((recv - send).sum()) for send, recv in send_recv_chunks(path, readers=2))
print(total, (rss() - before) / 1e6)
"""


def test_a_pass_hands_the_decoded_row_groups_back(tmp_path: Path) -> None:
    """After a pass over 8 row groups (16 MiB of the two columns each), pyarrow's pool
    (mimalloc) kept 108–116 MB of the freed row groups resident: under describe's value table
    and histograms that was its peak at 10⁹ samples. The reader hands it back when the
    pass ends."""
    path = tmp_path / "samples.parquet"
    done = subprocess.run(
        [sys.executable, "-c", RELEASED, str(path)], capture_output=True, text=True, check=True
    )
    total, kept_mb = done.stdout.split()
    assert int(total) == sum(
        int(s) for s in np.random.default_rng(37).integers(5000, 90000, (8, 1 << 20)).sum(1)
    )
    assert float(kept_mb) < 40, f"{kept_mb} MB still resident after the pass"
