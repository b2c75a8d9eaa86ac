"""The one reader of a run's samples file: every pass over a stored run's samples opens the
file here, and nothing outside ``store/`` opens a Parquet file or names a samples column
(tests/test_architecture.py keeps that rule).

A samples file is verified against run.json once per command
(:func:`jitterlab.store.runs.verified_samples_path` remembers it on the run); its row
groups' statistics are read once (:func:`send_ranges`); columns are read by name, in file
order, as numpy chunks: latencies (:func:`latency_chunks`), (send time, latency)
(:func:`timed_latency_chunks`), (send, receive) decoded ahead by threads
(:func:`send_recv_chunks`), or any columns (:func:`column_chunks`, :func:`record_batches`).

A :class:`Filter` pushed into these readers (``where``) keeps only some samples: a row group
whose send-time statistics (:func:`send_ranges`) cannot hold one is skipped unread, the
others are read and filtered row by row, in file order, and a chunk left empty is not
yielded. ``--from/--to`` is the one filter today (:class:`Span`); tags or a merge's
sources would be others of the same kind.

:class:`Engine` says where the passes over a file run: :data:`LOCAL` here, a cluster's
workers in ``jitterlab.cluster.engine.ClusterEngine``, with the same results; both take the
same filter.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import polars as pl

    from jitterlab.stats.compare import OrderedSample
    from jitterlab.stats.twopass import PassReader, SendRecvChunks

from jitterlab.stats import kernels
from jitterlab.stats.scan import LocalScan, Scan
from jitterlab.stats.summary import Summary, summarize_chunks, summarize_differences, summary_and_table
from jitterlab.stats.valuetable import ValueTable

READ_BATCH_ROWS = 1 << 20
SEND = "t_send_ns"
RECV = "t_recv_ns"
PAIR = "pair"
SEQ = "seq"
ACTUAL_SEND = "t_actual_send_ns"  # net's open-loop runs: when the sender really sent


# pyarrow's own to_numpy (Array's and ChunkedArray's) imports pandas on its first call (its
# conversion sets up pandas' types): 45 MB of a describe's resident memory it never uses.
# The samples columns are integers without nulls, which numpy views in place.
_VIEWED = {pa.int64(): np.int64, pa.int32(): np.int32, pa.int16(): np.int16, pa.int8(): np.int8,
           pa.uint64(): np.uint64, pa.uint32(): np.uint32, pa.uint16(): np.uint16, pa.uint8(): np.uint8,
           pa.float64(): np.float64, pa.float32(): np.float32}  # fmt: skip


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column as numpy, as its ``to_numpy()`` gives it (a read-only view of one chunk of
    integers or floats without nulls, chunks joined), without importing pandas where the
    column is viewed in place; any other column through pyarrow's conversion."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    dtype = _VIEWED.get(column.type)
    if dtype is None or any(c.null_count for c in chunks):
        return np.asarray(column.to_numpy())
    size = np.dtype(dtype).itemsize
    views = [np.frombuffer(c.buffers()[1], dtype, len(c), c.offset * size) for c in chunks if len(c)]
    if len(views) != 1:
        return np.concatenate(views) if views else np.zeros(0, dtype)
    views[0].flags.writeable = False  # Arrow's memory is immutable, as pyarrow's view says
    return views[0]


class Filter(Protocol):
    """Which samples a pass reads, by their send times (``t_send_ns``)."""

    def keeps(self, t: np.ndarray) -> np.ndarray:
        """Which of the send times ``t`` are kept (a boolean mask)."""
        ...

    def meets(self, lowest: int, highest: int) -> bool:
        """Whether send times from ``lowest`` to ``highest`` can hold a kept one (a row
        group whose statistics say no is not read)."""
        ...

    def holds(self, lowest: int, highest: int) -> bool:
        """Whether every send time from ``lowest`` to ``highest`` is kept."""
        ...


@dataclass(frozen=True)
class Span:
    """The :class:`Filter` of ``--from/--to``: send times ``first_ns`` <= t <= ``last_ns``
    (None: unbounded)."""

    first_ns: int | None
    last_ns: int | None

    def keeps(self, t: np.ndarray) -> np.ndarray:
        keep = np.ones(t.size, dtype=bool)
        if self.first_ns is not None:
            keep &= t >= self.first_ns
        if self.last_ns is not None:
            keep &= t <= self.last_ns
        return keep

    def meets(self, lowest: int, highest: int) -> bool:
        return (self.first_ns is None or highest >= self.first_ns) and (
            self.last_ns is None or lowest <= self.last_ns
        )

    def holds(self, lowest: int, highest: int) -> bool:
        return (self.first_ns is None or lowest >= self.first_ns) and (
            self.last_ns is None or highest <= self.last_ns
        )


def column_names(path: Path) -> list[str]:
    """The columns of the samples file at ``path`` (from its footer; no sample read)."""
    return list(pq.read_schema(path).names)


def has_column(path: Path, name: str) -> bool:
    """Whether the samples file at ``path`` has the column ``name``."""
    return name in column_names(path)


def column_chunks(
    path: Path, columns: Sequence[str], row_groups: Sequence[int] | None = None, where: Filter | None = None
) -> Iterator[list[np.ndarray]]:
    """The ``columns`` (by name) of the samples file at ``path``, batch by batch in file
    order (of ``row_groups`` only when given; of the samples ``where`` keeps when given),
    one batch in memory at a time."""
    if where is not None:
        groups = groups_meeting(path, where)
        if row_groups is not None:
            chosen = set(row_groups)
            groups = [g for g in groups if g in chosen]
        if not groups:
            return
        row_groups = groups
    names = list(columns) if where is None or SEND in columns else [*columns, SEND]
    with pq.ParquetFile(path, pre_buffer=False) as f:  # pre-buffering keeps every row group read
        for batch in f.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=row_groups, columns=names):
            chunk = [to_numpy(batch.column(name)) for name in columns]
            if where is None:
                yield chunk
                continue
            keep = where.keeps(to_numpy(batch.column(SEND)))
            if keep.all():
                yield chunk
            elif keep.any():
                yield [c[keep] for c in chunk]


def groups_meeting(path: Path, where: Filter) -> list[int]:
    """The row groups of the samples file at ``path`` that may hold a sample ``where``
    keeps (from their send-time statistics; every one without statistics)."""
    return [i for i, (rows, r) in enumerate(send_ranges(path)) if rows > 0 and (r is None or where.meets(*r))]


def count_kept(path: Path, where: Filter) -> int:
    """How many samples of the file ``where`` keeps: row groups wholly kept counted from
    their statistics, the others it meets by their send times."""
    ranges = send_ranges(path)
    total = sum(rows for rows, r in ranges if r is not None and where.holds(*r))
    partial = [i for i, (rows, r) in enumerate(ranges) if rows > 0 and (r is None or not where.holds(*r))]
    if partial:
        total += sum(int(t.size) for (t,) in column_chunks(path, [SEND], row_groups=partial, where=where))
    return total


def latency_chunks(path: Path, since: str = SEND, where: Filter | None = None) -> Iterator[np.ndarray]:
    """t_recv_ns - t_send_ns (or another start column ``since``) of the samples file at
    ``path`` (those ``where`` keeps), batch by batch."""
    for start, recv in column_chunks(path, [since, RECV], where=where):
        yield recv - start


def timed_latency_chunks(path: Path, where: Filter | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(t_send_ns, t_recv_ns - t_send_ns) of the samples file at ``path`` (those ``where``
    keeps), batch by batch."""
    for send, recv in column_chunks(path, [SEND, RECV], where=where):
        yield send, recv - send


def row_group_count(path: Path | str) -> int:
    """The row groups of the samples file at ``path`` (from its footer)."""
    with pq.ParquetFile(path) as f:
        return int(f.metadata.num_row_groups)


def read_row_group(
    path: Path, group: int, columns: Sequence[str], where: Filter | None = None
) -> list[np.ndarray]:
    """The ``columns`` (by name) of one row group of the samples file at ``path`` (what a
    cluster's worker reads for its task), of the samples ``where`` keeps when given."""
    names = list(columns) if where is None or SEND in columns else [*columns, SEND]
    with pq.ParquetFile(path, pre_buffer=False) as f:
        table = f.read_row_group(group, columns=names)
    chunk = [to_numpy(table.column(name)) for name in columns]
    if where is None:
        return chunk
    keep = where.keeps(to_numpy(table.column(SEND)))
    return chunk if keep.all() else [c[keep] for c in chunk]


def pair_send_recv_chunks(
    path: Path, where: Filter | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(pair, t_send_ns, t_recv_ns) of the samples file at ``path`` (those ``where``
    keeps), batch by batch."""
    return ((pair, send, recv) for pair, send, recv in column_chunks(path, [PAIR, SEND, RECV], where=where))


def latency_by_column(path: Path, column: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(latency, ``column``) of the samples file at ``path``, batch by batch (a merged run's
    source index, for one)."""
    for send, recv, other in column_chunks(path, [SEND, RECV, column]):
        yield recv - send, other


def record_batches(path: Path, where: Filter | None = None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema of the samples file at ``path`` and its record batches (every column) in
    file order; ``where`` filters the rows (a row group it cannot meet is not read), a
    batch with none left is skipped."""

    def batches() -> Iterator[pa.RecordBatch]:
        groups = None if where is None else groups_meeting(path, where)
        if groups == []:
            return
        with pq.ParquetFile(path, pre_buffer=False) as f:
            for batch in f.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=groups):
                if where is not None:
                    kept = where.keeps(to_numpy(batch.column(SEND)))
                    if not kept.all():
                        if not kept.any():
                            continue
                        batch = batch.filter(pa.array(kept))
                yield batch

    return pq.read_schema(path), batches()


def batch_latency_ns(batch: pa.RecordBatch) -> np.ndarray:
    """t_recv_ns - t_send_ns of one record batch of a samples file (int64)."""
    latency: np.ndarray = to_numpy(batch.column(RECV)) - to_numpy(batch.column(SEND))
    return latency


def empty_samples_frame() -> pl.LazyFrame:
    """An empty frame with :func:`lazy_samples`' columns and types (a store without samples)."""
    import polars as pl

    schema = {"run_id": pl.String, "name": pl.String, "latency_ns": pl.Int64, PAIR: pl.Int32,
              SEQ: pl.Int64, SEND: pl.Int64, RECV: pl.Int64}  # fmt: skip
    return pl.LazyFrame(schema=schema)


def lazy_samples(path: Path, run_id: str, name: str | None) -> pl.LazyFrame:
    """The samples file at ``path`` as a lazy Polars frame: run_id, name, latency_ns, pair,
    seq, t_send_ns, t_recv_ns (nothing read until it is collected; Polars reads only the
    row groups and columns the query needs)."""
    import polars as pl

    return (
        pl.scan_parquet(path)
        .select(PAIR, SEQ, SEND, RECV)
        .with_columns(
            pl.lit(run_id).alias("run_id"),
            pl.lit(name, dtype=pl.String).alias("name"),
            (pl.col(RECV) - pl.col(SEND)).alias("latency_ns"),
        )
        .select("run_id", "name", "latency_ns", PAIR, SEQ, SEND, RECV)
    )


def send_recv_chunks(path: Path, readers: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(t_send_ns, t_recv_ns) of the samples file at ``path``, row group by row group, in
    order; threads decode the next row groups while the caller works on this one.

    Decoding (DELTA_BINARY_PACKED) is the pass's bottleneck, and one row group's columns do
    not split evenly across threads (t_send_ns is nearly free), so whole row groups are
    decoded side by side, one per allowed CPU (at most :data:`_READERS`; ``readers`` to
    choose), each on one thread. At most ``readers + 1`` row groups are in memory, and
    what they took is handed back to the system when the pass ends (:func:`_release`).
    """
    readers = readers or _reader_count()
    try:
        yield from _decoded_ahead(path, readers)
    finally:
        _release()


def _release() -> None:
    """Hand the memory pyarrow's pool keeps after a pass back to the system: mimalloc keeps
    the pages of the decoding threads' freed row groups (59 MB after describe's first pass
    over 10⁹ samples, with nothing allocated), under the next pass's tables and histograms."""
    pa.default_memory_pool().release_unused()


def _decoded_ahead(path: Path, readers: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    with pq.ParquetFile(path, pre_buffer=False) as f, ThreadPoolExecutor(readers) as pool:

        def read(i: int) -> tuple[np.ndarray, np.ndarray]:
            table = f.read_row_group(i, columns=[SEND, RECV], use_threads=False)
            send, recv = (np.ascontiguousarray(to_numpy(table.column(k))) for k in (0, 1))
            return send, recv

        n = f.num_row_groups
        ahead: deque[Future[tuple[np.ndarray, np.ndarray]]] = deque()
        for i in range(min(readers, n)):
            ahead.append(pool.submit(read, i))
        for i in range(n):
            chunk = ahead.popleft().result()
            if i + readers < n:
                ahead.append(pool.submit(read, i + readers))
            yield chunk


_READERS = 4  # row groups decoded at once, at most (memory: 16 MiB of the two columns each)


def _reader_count() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _READERS))


class UnreadableFile(Exception):
    """A samples file that could not be decoded (its text: what pyarrow said, one line)."""


def decoded_facts(path: Path) -> tuple[int, list[str], int]:
    """The rows, the column names and the pairs (highest ``pair`` + 1) of the samples file
    at ``path``, every column of every row group decoded once (what checks a leftover's
    file before it is recovered); :class:`UnreadableFile` otherwise."""
    try:
        with pq.ParquetFile(path, pre_buffer=False) as f:
            rows = f.metadata.num_rows
            names = list(f.schema_arrow.names)
            pairs = 0
            for batch in f.iter_batches():  # every column of every row group decoded once
                column = to_numpy(batch.column(PAIR))
                pairs = max(pairs, int(column.max()) + 1 if column.size else 0)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise UnreadableFile(" ".join(str(e).split())[:200]) from None
    return rows, names, pairs


# --- row-group statistics of the send times: read once, here ---------------------------


def send_ranges(path: Path) -> list[tuple[int, tuple[int, int] | None]]:
    """Each row group's rows and (min, max) of ``t_send_ns`` from its statistics (None where
    it has none, or no rows): no sample read."""
    with pq.ParquetFile(path, pre_buffer=False) as f:
        meta = f.metadata
        ranges: list[tuple[int, tuple[int, int] | None]] = []
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            found = None
            for j in range(group.num_columns):
                column = group.column(j)
                if column.path_in_schema == SEND:
                    stats = column.statistics
                    if stats is not None and stats.has_min_max and group.num_rows > 0:
                        found = (int(stats.min), int(stats.max))
            ranges.append((group.num_rows, found))
    return ranges


def send_time_extent(path: Path) -> tuple[int, int] | None:
    """The first and last send time of the samples file from its row groups' statistics
    (no sample read); None when a row group has none (a file from another writer), or
    there is no row group."""
    ranges = [r for _, r in send_ranges(path)]
    if not ranges or any(r is None for r in ranges):
        return None
    return min(r[0] for r in ranges if r), max(r[1] for r in ranges if r)


def first_send_ns(path: Path) -> int | None:
    """The run's first send time (None when it has no samples): from the row groups'
    statistics, reading only those without."""
    minima: list[int] = []
    for i, (rows, found) in enumerate(send_ranges(path)):
        if found is not None:
            minima.append(found[0])
        elif rows > 0:
            (t,) = next(iter(_group_sends(path, i)))
            if t.size:
                minima.append(int(t.min()))
    return min(minima) if minima else None


def _group_sends(path: Path, group: int) -> Iterator[list[np.ndarray]]:
    with pq.ParquetFile(path, pre_buffer=False) as f:
        yield [to_numpy(f.read_row_group(group, columns=[SEND]).column(0))]


# --- what a pass over the file needs ----------------------------------------------------


def summary_and_table_of_file(path: Path) -> tuple[Summary, ValueTable | None]:
    """:func:`summarize_file` of the latencies and the count of every value it made on the
    way (None when there were too many distinct values)."""
    return summary_and_table(lambda: send_recv_chunks(path), lambda: latency_chunks(path))


def summarize_file(path: Path, since: str = SEND) -> Summary:
    """The exact summary of the samples file's latencies (t_recv_ns − ``since``), in memory
    independent of its size, in one pass over the file (row groups decoded by a thread while
    the kernel counts the last)."""
    if since == SEND:
        return summarize_differences(lambda: send_recv_chunks(path), lambda: latency_chunks(path))
    return summarize_chunks(lambda: latency_chunks(path, since))


def warm() -> None:
    """Write and read a tiny Parquet table here, before workers fork: pyarrow's reader sets
    itself up on its first read (about 40 MB written), and done once in the parent those
    pages are shared by every worker instead of copied into each (describe/report.py)."""
    import io

    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": np.arange(8)}), buffer)
    pq.read_table(pa.BufferReader(buffer.getvalue()))


class Engine(Protocol):
    """Where the passes over a samples file run: in this process (:data:`LOCAL`) or on a
    cluster (``jitterlab.cluster.engine.ClusterEngine``), with the same results. ``where``:
    only the samples that filter keeps (``--from/--to``), read through this module on
    either."""

    def latency(self, path: Path, since: str = SEND, where: Filter | None = None) -> Scan:
        """The file's latencies (t_recv_ns − ``since``), chunk by chunk."""
        ...

    def timed(self, path: Path, where: Filter | None = None) -> Scan:
        """The file's (t_send_ns, latency) chunks."""
        ...

    def summary(self, path: Path, since: str = SEND, where: Filter | None = None) -> Summary:
        """:func:`summarize_file` of the file (of the samples ``where`` keeps)."""
        ...

    def two_pass(self, path: Path, where: Filter | None = None) -> SendRecvChunks | PassReader | None:
        """Where describe's two kernel passes (stats/twopass.py) read the file, None where
        they cannot run (no kernel library here, or a filter: the radix passes instead)."""
        ...

    def sample(self, path: Path) -> OrderedSample | None:
        """The file's latencies (whole: compare takes no filter) as compare's sample when
        this engine reads them elsewhere (a cluster's workers); None: compare reads them
        here."""
        ...


class LocalEngine:
    """The :class:`Engine` that reads the samples file in this process, batch by batch."""

    def latency(self, path: Path, since: str = SEND, where: Filter | None = None) -> LocalScan:
        return LocalScan(lambda: latency_chunks(path, since, where))

    def timed(self, path: Path, where: Filter | None = None) -> LocalScan:
        return LocalScan(lambda: timed_latency_chunks(path, where))

    def summary(self, path: Path, since: str = SEND, where: Filter | None = None) -> Summary:
        if where is not None:
            return summarize_chunks(lambda: latency_chunks(path, since, where))
        return summarize_file(path, since)

    def two_pass(self, path: Path, where: Filter | None = None) -> SendRecvChunks | None:
        return (lambda: send_recv_chunks(path)) if kernels.available() and where is None else None

    def sample(self, path: Path) -> None:
        return None


LOCAL = LocalEngine()
