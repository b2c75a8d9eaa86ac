"""The one way samples become a stored run's data file, streaming: batches of any length
in, Parquet row groups of :data:`ROW_GROUP_ROWS` out, never a whole column in memory.

Every producer writes through :class:`SampleWriter` — a harness's raw file read by memory
map, a CSV read by pyarrow's streaming reader, a monitor's rolling parts, samples computed
in Python — and :meth:`jitterlab.store.runs.ResultsStore.publish_samples` turns the
closed file into a run. The summary stored in run.json is computed from the written file
by :func:`jitterlab.store.reader.summarize_file` in bounded memory (exact: see
:func:`jitterlab.stats.summary.summarize_chunks`).

The file layout (columns, row groups, compression, key-value metadata) is
:func:`open_sample_file`'s alone, so a new layout is a change in one place.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import open_output
from jitterlab.stats.summary import Summary
from jitterlab.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from jitterlab.stats.quantile_ci import QuantileInterval
    from jitterlab.stats.valuetable import ValueTable
    from jitterlab.store.reader import Engine

ROW_GROUP_ROWS = 1 << 20  # 32 MiB of the four columns: large enough to scan fast, small enough to hold

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("pair", pa.int32(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("t_send_ns", pa.int64(), nullable=False),
        pa.field("t_recv_ns", pa.int64(), nullable=False),
    ]
)


def sample_schema(extra: Sequence[str] = ()) -> pa.Schema:
    """The four columns every run has, then ``extra`` int64 columns, with the schema version.

    The run's id is not stored in the file: it is the run folder's name (and run.json's
    ``id``), and a run renamed on an id clash when it is published would otherwise carry
    two ids (issue 24)."""
    fields = [*SAMPLE_SCHEMA, *(pa.field(name, pa.int64(), nullable=False) for name in extra)]
    return pa.schema(fields).with_metadata({"jitterlab.schema_version": str(SCHEMA_VERSION)})


def open_sample_file(f: IO[bytes], schema: pa.Schema) -> pq.ParquetWriter:
    """The run's samples file as a Parquet writer (the one place its layout is chosen).

    Every int64 column is DELTA_BINARY_PACKED: timestamps and sequence numbers grow by
    nearly constant steps, so they pack to a few bits each and decode 5-10x faster than
    dictionary pages under zstd (benchmarks/scale.py: a pass over 10^7 latencies 0.41 s
    -> 0.044 s, file 51 -> 22 MB). Timestamp columns (``t_*_ns``) stay uncompressed:
    zstd on top gains ~4 % of size and halves their decoding speed; ``pair`` keeps a
    dictionary. Runs written before (dictionary + zstd) read the same."""
    ints = [field.name for field in schema if field.type == pa.int64()]
    return pq.ParquetWriter(
        f,
        schema,
        use_dictionary=[name for name in schema.names if name not in ints],
        column_encoding={name: "DELTA_BINARY_PACKED" for name in ints},
        compression={name: "none" if _is_timestamp(name) else "zstd" for name in schema.names},
    )


def _is_timestamp(column: str) -> bool:
    return column.startswith("t_") and column.endswith("_ns")


class SampleWriter:
    """Samples appended in batches of any length, written as row groups to ``path``
    (atomically: the file appears only when :meth:`close` succeeds)."""

    def __init__(self, path: Path, run_id: str, extra: Sequence[str] = ()) -> None:
        self.path = path
        self.run_id = run_id  # the id it is written for (not stored in the file: sample_schema)
        self.extra = tuple(extra)
        self.schema = sample_schema(self.extra)
        self.rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._output = open_output(path)
        self._file = self._output.__enter__()
        self._flushed_rows = 0
        try:
            self._writer = open_sample_file(self._file, self.schema)
        except OSError as e:  # entered by hand: its own handler never sees a write error
            self._output.__exit__(type(e), e, None)
            raise JitterlabError(write_error_text(self.path, e, 0, 0)) from None

    def write(
        self,
        pair: np.ndarray | int,
        seq: np.ndarray,
        t_send_ns: np.ndarray,
        t_recv_ns: np.ndarray,
        **extra: np.ndarray,
    ) -> None:
        """Append samples (``pair`` may be one number for all of them)."""
        n = len(t_recv_ns)
        if n == 0:
            return
        if set(extra) != set(self.extra):
            raise ValueError(f"extra columns {sorted(extra)} differ from {sorted(self.extra)}")
        pairs = np.full(n, pair, np.int32) if np.ndim(pair) == 0 else np.asarray(pair, np.int32)
        columns = [
            pa.array(pairs, pa.int32()),
            pa.array(np.asarray(seq, np.int64), pa.int64()),
            pa.array(np.asarray(t_send_ns, np.int64), pa.int64()),
            pa.array(np.asarray(t_recv_ns, np.int64), pa.int64()),
            *(pa.array(np.asarray(extra[name], np.int64), pa.int64()) for name in self.extra),
        ]
        self._pending.append(pa.RecordBatch.from_arrays(columns, schema=self.schema))
        self._pending_rows += n
        self.rows += n
        while self._pending_rows >= ROW_GROUP_ROWS:
            self._flush(ROW_GROUP_ROWS)

    def write_records(self, records: np.ndarray) -> None:
        """Append records of the raw format (a structured array or a memory map of one)."""
        for start in range(0, len(records), ROW_GROUP_ROWS):
            chunk = records[start : start + ROW_GROUP_ROWS]
            self.write(chunk["pair"], chunk["seq"], chunk["t_send_ns"], chunk["t_recv_ns"])

    def _flush(self, rows: int) -> None:
        table = pa.Table.from_batches(self._pending, self.schema)
        head, rest = table.slice(0, rows), table.slice(rows)
        try:
            self._writer.write_table(head, row_group_size=rows)
        except OSError as e:
            self._failed(e)
        self._flushed_rows += rows
        self._pending = rest.combine_chunks().to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _failed(self, e: OSError) -> NoReturn:
        """A write error (a full disk): no half-written file left, one line naming the
        folder, what is free and about what the samples need (issue 42 item 10)."""
        written = self._file.tell()
        self.abort()
        raise JitterlabError(write_error_text(self.path, e, written, self.rows, self._flushed_rows)) from None

    def close(self) -> None:
        """Write what is pending and put the file in place."""
        if self._pending_rows:
            self._flush(self._pending_rows)
        try:
            self._writer.close()
        except OSError as e:
            self._failed(e)
        self._output.__exit__(None, None, None)

    def abort(self) -> None:
        """Leave no file behind (an error while writing)."""
        with contextlib.suppress(OSError):  # a full disk fails the footer too
            self._writer.close()
        self._output.__exit__(RuntimeError, RuntimeError("aborted"), None)

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def write_error_text(path: Path, error: OSError, written: int, rows: int, flushed: int = 0) -> str:
    """One line for a samples file that could not be written: with a full disk, the folder,
    the space free and about the space the samples need (the bytes a flushed row took,
    else 8 a sample)."""
    folder = path.parent
    if error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write {path}: {error.strerror or error}"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = 0
    per_row = written / flushed if flushed and written else 8.0
    need = max(int(per_row * rows), written + 1)
    return (
        f"no space left in {folder} for {path.name}: {free / 1e6:.1f} MB free, about "
        f"{need / 1e6:.1f} MB needed for {rows:,} samples (free space there, or use a store on a larger disk)"
    )


# Names the computation behind a stored summary (exact type-7 percentiles, population std
# from the exact integer sums of x and x^2). A run whose summary carries this name, and
# whose samples file still has the size and SHA-256 recorded beside it, need not be read
# again for its summary; change the name whenever summarize_chunks changes any figure.
SUMMARY_METHOD = "exact-type7-intmoments/2"


def summary_block(summary: Summary) -> dict[str, Any]:
    """run.json's ``summary`` block (JSON has no NaN: the summary of no samples is null)."""
    return {
        "latency_ns": {k: v if v == v else None for k, v in summary.to_dict().items()},
        "method": SUMMARY_METHOD,
    }


# Names the computation behind stored percentile intervals (stats/quantile_ci.py at the
# summary's levels and the maximum); change it whenever that computation changes any figure.
INTERVALS_METHOD = "quantile-ci/1"
STORED_LEVELS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0)  # the summary's levels and the maximum


def intervals_block(
    path: Path, summary: Summary, engine: Engine, table: ValueTable | None = None
) -> dict[str, Any]:
    """run.json's ``summary.intervals``: :data:`STORED_LEVELS` each with its interval, as
    ``describe`` and ``show`` compute them from the samples file (the same function and
    inputs: count, min and max of the exact ``summary``, the send times from the row
    groups' statistics), so that ``show`` answers from run.json without reading the samples
    again (issue 38: intervals made ``show`` read them). ``table``: the summary pass's count
    of every value, when it has one; the order statistics are read off it (no pass), and
    only the block counts read the file again."""
    from jitterlab.stats.quantile_ci import intervals_of_sample, intervals_of_scan
    from jitterlab.store.reader import send_time_extent

    if summary.count == 0:
        levels = intervals_of_sample(np.zeros(0, np.int64), STORED_LEVELS)
    else:
        levels = intervals_of_scan(
            engine.latency(path),
            engine.timed(path),
            STORED_LEVELS,
            (summary.count, int(summary.min), int(summary.max)),
            send_time_extent(path),
            table=table,
        )
    return {"method": INTERVALS_METHOD, "levels": [q.to_dict() for q in levels]}


def stored_intervals(meta: dict[str, Any], levels: Sequence[float]) -> list[QuantileInterval] | None:
    """The intervals run.json holds for ``levels`` (in that order), when this version
    computes them the same way (``summary.intervals.method``) and holds every level asked;
    None otherwise (compute them from the samples). As for :func:`stored_summary`, the
    caller must have verified the samples file against run.json first."""
    from jitterlab.stats.quantile_ci import QuantileInterval

    block = (meta.get("summary") or {}).get("intervals") or {}
    if block.get("method") != INTERVALS_METHOD or stored_summary(meta) is None:
        return None
    try:
        by_level = {float(q["level"]): q for q in block["levels"]}
        return [QuantileInterval(**by_level[float(level)]) for level in levels]
    except (KeyError, TypeError, ValueError):
        return None


def stored_summary(meta: dict[str, Any]) -> Summary | None:
    """The summary run.json holds, when this version computes summaries the same way
    (``summary.method``); None otherwise (an older run: read its samples again).

    The caller must have verified the samples file against run.json first: the stored
    figures describe the file whose size and SHA-256 run.json records."""
    block = meta.get("summary") or {}
    figures = block.get("latency_ns")
    if block.get("method") != SUMMARY_METHOD or not isinstance(figures, dict):
        return None
    try:
        values = [figures[f.name] for f in fields(Summary)]
        count, *rest = (float("nan") if v is None else v for v in values)
        return Summary(int(count), *(float(v) for v in rest))
    except (KeyError, TypeError, ValueError):
        return None
