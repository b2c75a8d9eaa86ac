"""A stored run's samples sent in a span of time (``--from``/``--to``), read row group by
row group: memory independent of the run's size, and no copy of the run.

The span is what :func:`jitterlab.describe.analysis.time_range` keeps in memory: the
samples whose send time t satisfies t0 + from <= t <= t0 + to, t0 being the run's first
send. t0 comes from the Parquet row groups' statistics of ``t_send_ns`` (the minimum of their
minima; exact for int64), a row group without statistics is read for it. A row group whose
[min, max] of ``t_send_ns`` misses the span is skipped without being read; the others are read
in batches and filtered row by row, in file order, so every analysis sees the same samples in
the same order as the in-memory filter and gives the same figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import Summary, summarize_chunks
from jitterlab.store.runs import Run, verified_samples_path
from jitterlab.store.writer import READ_BATCH_ROWS

SEND = "t_send_ns"


@dataclass(frozen=True)
class Span:
    """Send times kept: ``first_ns`` <= t_send <= ``last_ns`` (None: unbounded)."""

    first_ns: int | None
    last_ns: int | None

    def keeps(self, t: np.ndarray) -> np.ndarray:
        """Which of the send times ``t`` lie in the span."""
        keep = np.ones(t.size, dtype=bool)
        if self.first_ns is not None:
            keep &= t >= self.first_ns
        if self.last_ns is not None:
            keep &= t <= self.last_ns
        return keep

    def meets(self, lowest: int, highest: int) -> bool:
        """Whether send times from ``lowest`` to ``highest`` can hold one in the span."""
        return (self.first_ns is None or highest >= self.first_ns) and (
            self.last_ns is None or lowest <= self.last_ns
        )

    def holds(self, lowest: int, highest: int) -> bool:
        """Whether every send time from ``lowest`` to ``highest`` lies in the span."""
        return (self.first_ns is None or lowest >= self.first_ns) and (
            self.last_ns is None or highest <= self.last_ns
        )


def _send_ranges(f: pq.ParquetFile) -> list[tuple[int, int] | None]:
    """(min, max) of ``t_send_ns`` of every row group from its statistics (None where it
    has none, or no rows)."""
    meta = f.metadata
    ranges: list[tuple[int, int] | None] = []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        found = None
        for j in range(group.num_columns):
            column = group.column(j)
            if column.path_in_schema == SEND:
                stats = column.statistics
                if stats is not None and stats.has_min_max and group.num_rows > 0:
                    found = (int(stats.min), int(stats.max))
        ranges.append(found)
    return ranges


def _read_range(f: pq.ParquetFile, group: int) -> tuple[int, int] | None:
    """(min, max) of ``t_send_ns`` of one row group, read (None when it has no rows)."""
    t = f.read_row_group(group, columns=[SEND]).column(0).to_numpy()
    return (int(t.min()), int(t.max())) if t.size else None


def first_send_ns(path: Path) -> int | None:
    """The run's first send time (None when it has no samples): from the row groups'
    statistics, reading only those without."""
    with pq.ParquetFile(path, pre_buffer=False) as f:
        ranges = _send_ranges(f)
        found = [
            r if r is not None else _read_range(f, i)
            for i, r in enumerate(ranges)
            if r is not None or f.metadata.row_group(i).num_rows > 0
        ]
    minima = [r[0] for r in found if r is not None]
    return min(minima) if minima else None


def _groups_in(f: pq.ParquetFile, span: Span) -> list[int]:
    """The row groups that may hold a sample in the span (all those without statistics)."""
    return [
        i
        for i, r in enumerate(_send_ranges(f))
        if f.metadata.row_group(i).num_rows > 0 and (r is None or span.meets(*r))
    ]


def _batches(path: Path, span: Span, columns: list[str]) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """(send times, the other columns) of the samples in the span, batch by batch, in file order."""
    with pq.ParquetFile(path, pre_buffer=False) as f:  # as latency_chunks: memory of one batch
        groups = _groups_in(f, span)
        if not groups:
            return
        for batch in f.iter_batches(batch_size=READ_BATCH_ROWS, row_groups=groups, columns=[SEND, *columns]):
            t = batch.column(0).to_numpy()
            keep = span.keeps(t)
            everything = bool(keep.all())
            rest = [batch.column(k + 1).to_numpy() for k in range(len(columns))]
            if everything:
                yield t, rest
            elif keep.any():
                yield t[keep], [c[keep] for c in rest]


def span_latency_chunks(path: Path, span: Span, since: str = SEND) -> Iterator[np.ndarray]:
    """t_recv_ns − ``since`` of the samples in the span, chunk by chunk."""
    columns = ["t_recv_ns"] if since == SEND else [since, "t_recv_ns"]
    for t, rest in _batches(path, span, columns):
        yield rest[0] - t if since == SEND else rest[1] - rest[0]


def span_timed_chunks(path: Path, span: Span) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(t_send_ns, latency) of the samples in the span, chunk by chunk."""
    for t, (recv,) in _batches(path, span, ["t_recv_ns"]):
        yield t, recv - t


def span_count(path: Path, span: Span) -> int:
    """How many samples the span holds (row groups wholly inside it counted from their
    statistics, the others by their send times)."""
    with pq.ParquetFile(path, pre_buffer=False) as f:
        ranges = _send_ranges(f)
        inside = [i for i, r in enumerate(ranges) if r is not None and span.holds(*r)]
        total = sum(int(f.metadata.row_group(i).num_rows) for i in inside)
        if total:
            return total
    return sum(int(t.size) for t, _ in _batches(path, span, []))


class SpanEngine:
    """The :class:`jitterlab.store.writer.Engine` of the samples in a span, read in this process."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def latency(self, path: Path, since: str = SEND) -> LocalScan:
        return LocalScan(lambda: span_latency_chunks(path, self.span, since))

    def timed(self, path: Path) -> LocalScan:
        return LocalScan(lambda: span_timed_chunks(path, self.span))

    def summary(self, path: Path, since: str = SEND) -> Summary:
        return summarize_chunks(lambda: span_latency_chunks(path, self.span, since))


def time_span(run: Run, from_s: float | None, to_s: float | None) -> Span | None:
    """The span of ``--from``/``--to`` (seconds after the run's first send) of a sample run,
    None when neither is given; refused in one line when it holds no sample."""
    if from_s is None and to_s is None:
        return None
    path = verified_samples_path(run)
    t0 = first_send_ns(path) or 0
    span = Span(
        t0 + round(from_s * 1e9) if from_s is not None else None,
        t0 + round(to_s * 1e9) if to_s is not None else None,
    )
    if span_count(path, span) == 0:
        raise JitterlabError(f"run {run.id}: no samples sent between {from_s or 0:g} s and {to_s} s")
    return span
