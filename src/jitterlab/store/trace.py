"""Trace events stored with a run (``trace-events.parquet``): what the kernel did on
each CPU while the run measured, so spikes can be attributed when the run is described,
with whichever outlier test the reader picks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jitterlab.core.errors import CorruptRunError
from jitterlab.core.fileio import open_output, open_plain_file, os_error_text

TRACE_FILE = "trace-events.parquet"


@dataclass(frozen=True)
class TraceEvents:
    """Events per CPU, sorted by time: times (int64 ns, CLOCK_MONOTONIC) and their causes."""

    times: dict[int, np.ndarray]
    causes: dict[int, list[str]]
    counts: dict[str, int]  # events seen per tracepoint, causes or not


def write_trace_events(path: Path, events: TraceEvents) -> None:
    cpus, times, causes = [], [], []
    for cpu, t in events.times.items():
        cpus.append(np.full(t.size, cpu, dtype=np.int32))
        times.append(t)
        causes.extend(events.causes[cpu])
    table = pa.table(
        {
            "cpu": pa.array(np.concatenate(cpus) if cpus else np.zeros(0, np.int32), pa.int32()),
            "t_ns": pa.array(np.concatenate(times) if times else np.zeros(0, np.int64), pa.int64()),
            "cause": pa.array(causes, pa.string()),
        }
    )
    with open_output(path) as f:
        pq.write_table(table, f, compression="zstd")


def read_trace_events(path: Path, counts: dict[str, int]) -> TraceEvents:
    """The events of ``path`` (a run folder's trace file), opened from its folder without
    following a link, as a regular file (:func:`open_plain_file`): a trace file linked to
    another run's, a FIFO or a device there is refused in one line (issue 42)."""
    try:
        with open_plain_file(path.parent, path.name) as f:
            table = pq.read_table(f)
    except (pa.ArrowException, OSError) as e:
        raise CorruptRunError(
            f"{path}: unreadable trace events ({os_error_text(e) if isinstance(e, OSError) else e})"
        ) from e
    missing = [c for c in ("cpu", "t_ns", "cause") if c not in table.column_names]
    if missing:  # a run.json naming another file of the folder (its samples) as the trace
        raise CorruptRunError(f"{path}: not trace events (no column {', '.join(missing)})")
    try:
        cpu = table.column("cpu").to_numpy().astype(np.int64)
        t = table.column("t_ns").to_numpy().astype(np.int64)
        cause = [str(c) for c in table.column("cause").to_pylist()]
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise CorruptRunError(f"{path}: unreadable trace events ({e})") from e
    times, causes = {}, {}
    for c in np.unique(cpu).tolist():
        mine = np.flatnonzero(cpu == c)
        order = mine[np.argsort(t[mine], kind="stable")]
        times[int(c)] = t[order]
        causes[int(c)] = [cause[i] for i in order.tolist()]
    return TraceEvents(times, causes, counts)
