"""Exporters: a stored run written as HdrHistogram (.hgrm, .hlog), CSV or Parquet.

One exporter per format behind one interface (hyperfine's habit): each is a function
``(run, options) -> bytes`` registered in :data:`EXPORTERS`; :func:`export_run` picks one,
checks what the run holds, and writes the file atomically. A new format is one function
and one line in the table.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from hdrh.log import HistogramLogWriter

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_bytes
from jitterlab.core.version import __version__
from jitterlab.store import Run
from jitterlab.store.hdr import new_histogram, record_all

MAX_UNIT_RATIO = 1e6  # an interval's max is logged in milliseconds of the ns values, as jHiccup does


@dataclass(frozen=True)
class ExportOptions:
    window_ns: int = 1_000_000_000  # hlog: interval of each histogram
    unit_ratio: float = 1_000.0  # hgrm: values are divided by this (ns → µs)


def export_parquet(run: Run, _o: ExportOptions) -> bytes:
    return (run.path / str(run.meta["samples"]["file"])).read_bytes()


def export_csv(run: Run, _o: ExportOptions) -> bytes:
    table = run.table.append_column("latency_ns", pa.array(run.latency_ns))
    buffer = io.BytesIO()
    pacsv.write_csv(table, buffer)
    return buffer.getvalue()


def export_hgrm(run: Run, o: ExportOptions) -> bytes:
    """HdrHistogram's percentile distribution. The body is hdrh's; the footer is written here
    as Java's HdrHistogram writes it, every figure in the output unit (hdrh leaves the
    standard deviation in nanoseconds beside a mean in microseconds)."""
    latency = run.latency_ns
    histogram = new_histogram(int(latency.max(initial=1)))
    record_all(histogram, latency)
    binary = io.BytesIO()
    histogram.output_percentile_distribution(binary, o.unit_ratio)
    body = binary.getvalue().decode().split("#[Mean")[0]
    digits = histogram.significant_figures
    footer = (
        f"#[Mean    = {histogram.get_mean_value() / o.unit_ratio:12.{digits}f}, "
        f"StdDeviation   = {histogram.get_stddev() / o.unit_ratio:12.{digits}f}]\n"
        f"#[Max     = {histogram.get_max_value() / o.unit_ratio:12.{digits}f}, "
        f"Total count    = {histogram.get_total_count():12d}]\n"
        f"#[Buckets = {histogram.bucket_count:12d}, SubBuckets     = {histogram.sub_bucket_count:12d}]\n"
    )
    return (body + footer).encode()


def export_hlog(run: Run, o: ExportOptions) -> bytes:
    """An HdrHistogram V2 interval log: one histogram per window of send time."""
    latency = run.latency_ns
    t_send = run.t_send_ns
    order = np.argsort(t_send, kind="stable")
    t_send, latency = t_send[order], latency[order]
    highest = int(latency.max(initial=1))
    text = io.StringIO()
    writer = HistogramLogWriter(text)
    started_ns = (run.meta.get("timing") or {}).get("started_realtime_ns") or 0
    started_s = started_ns / 1e9
    writer.output_comment(f"jitterlab {__version__} run {run.id} ({run.label}); values in nanoseconds")
    writer.output_log_format_version()
    # Written by hand: hdrh's output_start_time mistakes milliseconds for seconds.
    when = dt.datetime.fromtimestamp(started_s, dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    text.write(f"#[StartTime: {started_s:.3f} (seconds since epoch), {when}]\n")
    writer.output_legend()
    window_ns = o.window_ns
    if latency.size:
        t0 = int(t_send[0])
        edges = np.searchsorted(t_send, t0 + window_ns * np.arange(int((t_send[-1] - t0) // window_ns) + 2))
        for w in range(edges.size - 1):
            lo, hi = edges[w], edges[w + 1]
            if hi == lo:
                continue
            histogram = new_histogram(highest)
            record_all(histogram, latency[lo:hi])
            start = w * window_ns / 1e9  # seconds since StartTime, as jHiccup logs them
            end = min(start + window_ns / 1e9, (int(t_send[hi - 1]) - t0) / 1e9 + 1e-9)
            # Written by hand as Java's HistogramLogWriter does (%.3f, the max divided, not
            # floor-divided as hdrh's writer does: a 425 µs max is 0.425 ms, not 0).
            payload = histogram.encode().decode()
            text.write(
                f"{start:.3f},{end - start:.3f},{histogram.get_max_value() / MAX_UNIT_RATIO:.3f},{payload}\n"
            )
    return text.getvalue().encode()


Exporter = Callable[[Run, ExportOptions], bytes]
EXPORTERS: dict[str, Exporter] = {
    "hgrm": export_hgrm,
    "hlog": export_hlog,
    "csv": export_csv,
    "parquet": export_parquet,
}
FORMATS = tuple(EXPORTERS)


def export_bytes(run: Run, fmt: str, options: ExportOptions) -> bytes:
    """``run`` encoded as ``fmt``."""
    exporter = EXPORTERS.get(fmt)
    if exporter is None:
        raise JitterlabError(f"unknown export format '{fmt}' (choose from {', '.join(FORMATS)})")
    if run.histogram_only:
        if fmt != "hlog":
            raise JitterlabError(f"run {run.id} holds a histogram only: it exports as hlog, not {fmt}")
        return (run.path / str(run.meta["histogram"]["file"])).read_bytes()
    return exporter(run, options)


def export_run(
    run: Run, fmt: str, out: Path, window_ns: int = 1_000_000_000, unit_ratio: float = 1_000.0
) -> None:
    """Write ``run`` as ``fmt`` to ``out`` (atomically)."""
    atomic_write_bytes(out, export_bytes(run, fmt, ExportOptions(window_ns, unit_ratio)))
