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

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import Summary, summarize_chunks
from jitterlab.store.reader import column_chunks, first_send_ns, send_ranges
from jitterlab.store.runs import Run, verified_samples_path

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


def _groups_in(path: Path, span: Span) -> list[int]:
    """The row groups that may hold a sample in the span (all those without statistics)."""
    return [i for i, (rows, r) in enumerate(send_ranges(path)) if rows > 0 and (r is None or span.meets(*r))]


def _batches(path: Path, span: Span, columns: list[str]) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """(send times, the other columns) of the samples in the span, batch by batch, in file order."""
    groups = _groups_in(path, span)
    if not groups:
        return
    for t, *rest in column_chunks(path, [SEND, *columns], row_groups=groups):
        keep = span.keeps(t)
        if keep.all():
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
    total = sum(rows for rows, r in send_ranges(path) if r is not None and span.holds(*r))
    if total:
        return total
    return sum(int(t.size) for t, _ in _batches(path, span, []))


class SpanEngine:
    """The :class:`jitterlab.store.reader.Engine` of the samples in a span, read in this process."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def latency(self, path: Path, since: str = SEND) -> LocalScan:
        return LocalScan(lambda: span_latency_chunks(path, self.span, since))

    def timed(self, path: Path) -> LocalScan:
        return LocalScan(lambda: span_timed_chunks(path, self.span))

    def summary(self, path: Path, since: str = SEND) -> Summary:
        return summarize_chunks(lambda: span_latency_chunks(path, self.span, since))

    def two_pass(self, path: Path) -> None:
        return None  # a span's windows: the radix passes (stats/outofcore.py)

    def sample(self, path: Path) -> None:
        return None


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
