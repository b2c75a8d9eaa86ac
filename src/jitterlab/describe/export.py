"""Exporters: a stored run written as HdrHistogram (.hgrm, .hlog), CSV or Parquet.

One exporter per format behind one interface (hyperfine's habit): each is a function
``(run, options, out)`` that writes to the binary file ``out``, registered in
:data:`EXPORTERS`; :func:`export_run` picks one, checks what the run holds, and streams it
to the file (atomically: core/fileio.py's writer) or standard output. A new format is one
function and one line in the table.

CSV and Parquet stream: the run's file is read row group by row group (of ``--from/--to``,
only the row groups that can hold the span, store/span.py) and written batch by batch,
never the run in memory; the bytes are the same as writing the whole table at once.

The HdrHistogram formats are HdrHistogram Java 2.2.2's, read back equal by its
HistogramLogReader and HistogramLogProcessor (tests/store/test_hdr_oracle.py):

- ``.hgrm`` is ``outputPercentileDistribution(out, ticks, unitRatio)`` character for
  character: of a sample run, every latency recorded into Java's ``new Histogram(3)``
  (1 ns to auto-resized, 3 significant digits); of a histogram-only run, its log's
  intervals accumulated as HistogramLogProcessor accumulates them;
- ``.hlog`` of a sample run holds one histogram per window of send time, as
  HistogramLogWriter writes them; of a histogram-only run, its stored log.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import open_output
from jitterlab.core.version import __version__
from jitterlab.describe.analysis import time_range
from jitterlab.describe.otlp import export_otlp
from jitterlab.stats.scan import Scan
from jitterlab.stats.windows import window_count
from jitterlab.store import Run
from jitterlab.store.formats import write_parquet_batches
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogWriter
from jitterlab.store.hdr.streams import UNITS_NS, read_figures
from jitterlab.store.hdr.text import percentile_distribution
from jitterlab.store.reader import (
    LOCAL,
    READ_BATCH_ROWS,
    Engine,
    batch_latency_ns,
    record_batches,
)
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.span import time_span

MAX_UNIT_RATIO = 1e6  # an interval's max is logged in milliseconds of the ns values, as jHiccup does
DIGITS = 3


@dataclass(frozen=True)
class ExportOptions:
    window_ns: int = 1_000_000_000  # hlog: interval of each histogram
    unit: str = "us"  # hgrm: the unit values are printed in
    latency_unit: str = "ns"  # csv, parquet: the unit of the latency column (latency_<unit>)
    ticks: int = 5  # hgrm: percentile ticks per half distance (Java's default 5)
    percentiles: Sequence[float] | None = None  # hgrm: rows at these levels instead of the ticks
    tag: str | None = None  # histogram-only runs: which tag (default: the run's own stream)
    from_s: float | None = None  # seconds from the run's start (a log's StartTime)
    to_s: float | None = None
    engine: Engine | None = None  # hgrm/hlog of a run's file: where its passes run (--cluster)


def _time_range(run: Run, o: ExportOptions) -> Run:
    return time_range(run, o.from_s, o.to_s)


def latency_histogram(latency_ns: np.ndarray | Iterable[np.ndarray]) -> Histogram:
    """Every latency in Java's ``new Histogram(3)`` (auto-resizing, 1 ns up); the latencies
    may come as chunks (a run read row group by row group: recording adds)."""
    histogram = Histogram.auto(DIGITS)
    for chunk in [latency_ns] if isinstance(latency_ns, np.ndarray) else latency_ns:
        distinct, counts = np.unique(chunk, return_counts=True)
        histogram.record(distinct, counts)
    return histogram


def _streams(run: Run, o: ExportOptions) -> bool:
    """Whether the run is read in row groups (its file, not loaded; only the samples sent
    in ``--from/--to`` when given, store/span.py) or in memory."""
    return not run.loaded


def _timed_scan(run: Run, o: ExportOptions) -> Scan:
    """The (send time, latency) chunks of the run's file as a scan (of the span when one is
    given: the reader's filter), read here or by a cluster's workers (``o.engine``)."""
    path = verified_samples_path(run)
    span = time_span(run, o.from_s, o.to_s)
    return (o.engine or LOCAL).timed(path, where=span)


def value_counts_chunk(chunk: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct latencies of a timed chunk and their counts (a pass: what one chunk
    records into a histogram)."""
    return np.unique(chunk[1], return_counts=True)


def extent_chunk(chunk: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int, int]:
    """(count, first send, last send, largest latency) of a timed chunk (a pass)."""
    t, x = chunk
    if t.size == 0:
        return 0, 0, 0, 0
    return int(t.size), int(t.min()), int(t.max()), int(x.max())


def window_counts_chunk(
    chunk: tuple[np.ndarray, np.ndarray], t0: int, window_ns: int
) -> list[tuple[int, np.ndarray, np.ndarray, int]]:
    """Per window of send time a timed chunk touches: (window, distinct latencies, their
    counts, last send in it) (a pass: what the chunk records into each window's histogram)."""
    t, x = chunk
    w = (t - t0) // window_ns
    out = []
    for k in np.unique(w).tolist():
        inside = w == k
        distinct, counts = np.unique(x[inside], return_counts=True)
        out.append((k, distinct, counts, int(t[inside].max())))
    return out


# pq.write_table's row groups (pyarrow's default): the streamed Parquet export writes the
# same, so that its file is the one the whole table gave
PARQUET_ROW_GROUP_ROWS = 1024 * 1024
COPY_BYTES = 8 << 20


def _batches(run: Run, o: ExportOptions) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema of the run's samples and their record batches in file order (of the span
    when one is given), read in row groups; a run in memory gives its own table's."""
    if run.loaded:
        table = _time_range(run, o).table
        return table.schema, iter(table.to_batches(max_chunksize=READ_BATCH_ROWS))
    path = verified_samples_path(run)
    span = time_span(run, o.from_s, o.to_s)
    return record_batches(path, span)


def _with_latency(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], unit: str
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The samples' batches with a ``latency_<unit>`` column appended (t_recv − t_send:
    int64 in ns, float64 in any other unit, exact to the nanosecond)."""
    if unit not in UNITS_NS:
        raise JitterlabError(f"--unit {unit}: choose ns, us, ms or s")
    field = pa.field(f"latency_{unit}", pa.int64() if unit == "ns" else pa.float64())
    schema = schema.append(field)
    scale = UNITS_NS[unit]

    def out() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ns = batch_latency_ns(batch)
            latency = pa.array(ns if unit == "ns" else ns / scale, field.type)
            yield pa.RecordBatch.from_arrays([*batch.columns, latency], schema=schema)

    return schema, out()


def export_parquet(run: Run, o: ExportOptions, out: BinaryIO) -> None:
    """The run's samples with a latency column (``latency_ns``, or ``latency_<unit>`` of
    ``--unit``), as CSV has, written batch by batch in row groups of pq.write_table's size
    (the file write_table of the whole table gives)."""
    schema, batches = _with_latency(*_batches(run, o), o.latency_unit)
    write_parquet_batches(out, schema, batches, PARQUET_ROW_GROUP_ROWS)


def export_csv(run: Run, o: ExportOptions, out: BinaryIO) -> None:
    """Every column of the samples and ``latency_ns`` (``latency_<unit>`` of ``--unit``),
    batch by batch."""
    schema, batches = _with_latency(*_batches(run, o), o.latency_unit)
    with pacsv.CSVWriter(out, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


def export_hgrm(run: Run, o: ExportOptions, out: BinaryIO) -> None:
    """HdrHistogram's percentile distribution, in ``o.unit`` (one histogram in memory)."""
    out.write(_hgrm(run, o))


def _hgrm(run: Run, o: ExportOptions) -> bytes:
    if run.histogram_only:
        histogram, scale = _stored_stream(run, o)
        ratio = UNITS_NS[o.unit] / scale
    elif _streams(run, o):
        histogram = Histogram.auto(DIGITS)
        for distinct, counts in _timed_scan(run, o).map(value_counts_chunk):
            histogram.record(distinct, counts)
        ratio = float(UNITS_NS[o.unit])
    else:
        histogram, ratio = latency_histogram(_time_range(run, o).latency_ns), float(UNITS_NS[o.unit])
    return percentile_distribution(histogram, o.ticks, ratio, o.percentiles).encode()


def _stored_stream(run: Run, o: ExportOptions) -> tuple[Histogram, int]:
    """A histogram-only run's stream (``o.tag``, else the run's own) accumulated over the
    selected range, and the log's unit in ns."""
    info = run.meta["histogram"]
    scale = int(info.get("scale_ns", 1))
    tag = o.tag if o.tag is not None else info.get("tag")
    with open(run.path / str(info["file"]), "rb") as f:
        figures = read_figures(
            f, str(run.path / str(info["file"])), scale=scale, tags=[tag], from_s=o.from_s, to_s=o.to_s
        )
    stream = figures.streams.get(tag)
    if stream is None or stream.whole is None:
        tags = ", ".join(str(t) if t is not None else "(untagged)" for t in figures.seen_tags) or "none"
        raise JitterlabError(
            f"run {run.id}: no intervals of tag {tag or '(untagged)'} in that range (tags: {tags})"
        )
    return stream.whole, scale  # type: ignore[return-value]


def export_hlog(run: Run, o: ExportOptions, out: BinaryIO) -> None:
    """An HdrHistogram V2 interval log: one histogram per window of send time (of a
    histogram-only run, its stored log, copied line by line as it is read)."""
    if run.histogram_only:
        info = run.meta["histogram"]
        path = run.path / str(info["file"])
        if o.tag is None and o.from_s is None and o.to_s is None:
            with open(path, "rb") as f:
                shutil.copyfileobj(f, out, COPY_BYTES)
            return
        with open(path, "rb") as f:
            read_figures(
                f,
                str(path),
                tags=None if o.tag is None else [o.tag],
                from_s=o.from_s,
                to_s=o.to_s,
                copy_to=out,
            )
        return
    out.write(_hlog(run, o))


def _hlog(run: Run, o: ExportOptions) -> bytes:
    if _streams(run, o):
        return _hlog_streamed(run, o)
    run = _time_range(run, o)
    latency = run.latency_ns
    t_send = run.t_send_ns
    order = np.argsort(t_send, kind="stable")
    t_send, latency = t_send[order], latency[order]
    highest = max(2 * int(latency.max(initial=1)), 1_000_000)  # one range for every interval
    text = io.StringIO()
    writer = _hlog_writer(run, text)
    window_ns = o.window_ns
    if latency.size:
        t0 = int(t_send[0])
        n_windows = window_count(t0, int(t_send[-1]), window_ns)  # refused before any is made
        edges = np.searchsorted(t_send, t0 + window_ns * np.arange(n_windows + 1))
        for w in range(edges.size - 1):
            lo, hi = edges[w], edges[w + 1]
            if hi == lo:
                continue
            histogram = Histogram(1, highest, DIGITS)
            distinct, counts = np.unique(latency[lo:hi], return_counts=True)
            histogram.record(distinct, counts)
            start = w * window_ns / 1e9  # seconds since StartTime, as jHiccup logs them
            end = min(start + window_ns / 1e9, (int(t_send[hi - 1]) - t0) / 1e9 + 1e-9)
            writer.interval(start, end, histogram, MAX_UNIT_RATIO)
    return text.getvalue().encode()


def _hlog_writer(run: Run, text: io.StringIO) -> LogWriter:
    writer = LogWriter(text)
    started_ns = (run.meta.get("timing") or {}).get("started_realtime_ns") or 0
    writer.comment(f"jitterlab {__version__} run {run.id} ({run.label}); values in nanoseconds")
    writer.version()
    writer.start_time(started_ns // 1_000_000)
    writer.legend()
    return writer


def _hlog_streamed(run: Run, o: ExportOptions) -> bytes:
    """:func:`export_hlog` of a run (or its --from/--to span) read in row groups: one pass for the first and last
    send and the largest latency, one recording each window's histogram (one histogram per
    window in memory, never the samples); the same log as from the samples in memory."""
    scan = _timed_scan(run, o)
    t0, t_last, top, n = 0, 0, 1, 0
    for size, first, last, largest in scan.map(extent_chunk):
        if size:
            t0, t_last = (first, last) if n == 0 else (min(t0, first), max(t_last, last))
            top, n = max(top, largest), n + size
    text = io.StringIO()
    writer = _hlog_writer(run, text)
    if n == 0:
        return text.getvalue().encode()
    window_count(t0, t_last, o.window_ns)  # a histogram per window: refused before any is made
    highest = max(2 * top, 1_000_000)  # one range for every interval
    window_ns = o.window_ns
    histograms: dict[int, Histogram] = {}
    last_send: dict[int, int] = {}
    for windows in scan.map(window_counts_chunk, t0, window_ns):
        for k, distinct, counts, last in windows:
            histogram = histograms.setdefault(k, Histogram(1, highest, DIGITS))
            histogram.record(distinct, counts)
            last_send[k] = max(last_send.get(k, t0), last)
    for k in sorted(histograms):
        start = k * window_ns / 1e9  # seconds since StartTime, as jHiccup logs them
        end = min(start + window_ns / 1e9, (last_send[k] - t0) / 1e9 + 1e-9)
        writer.interval(start, end, histograms[k], MAX_UNIT_RATIO)
    return text.getvalue().encode()


Exporter = Callable[[Run, ExportOptions, BinaryIO], None]
EXPORTERS: dict[str, Exporter] = {
    "hgrm": export_hgrm,
    "hlog": export_hlog,
    "csv": export_csv,
    "parquet": export_parquet,
    "otlp": export_otlp,  # describe/otlp.py
}
FORMATS = tuple(EXPORTERS)


def export_bytes(run: Run, fmt: str, options: ExportOptions) -> bytes:
    """``run`` encoded as ``fmt``, in memory (small runs, tests: :func:`export_run` streams)."""
    out = io.BytesIO()
    _exporter(run, fmt, options)(run, options, out)
    return out.getvalue()


def _exporter(run: Run, fmt: str, options: ExportOptions) -> Exporter:
    """The exporter of ``fmt``, once the run and options are known to fit it (one line else)."""
    exporter = EXPORTERS.get(fmt)
    if exporter is None:
        raise JitterlabError(f"unknown export format '{fmt}' (choose from {', '.join(FORMATS)})")
    if run.histogram_only and fmt not in ("hlog", "hgrm"):
        raise JitterlabError(f"run {run.id} holds a histogram only: it exports as hlog or hgrm, not {fmt}")
    if options.tag is not None and not run.histogram_only:
        raise JitterlabError("--tag selects a stream of an imported HdrHistogram log; this run has samples")
    if options.engine is not None and not run.histogram_only:
        refuse_export_on_cluster(fmt, run.loaded)
    return exporter


def refuse_export_on_cluster(fmt: str, loaded: bool = False) -> None:
    """What ``export --cluster`` refuses, in one line (before a cluster is started): csv and
    parquet (copies of the samples, not analyses: nothing to compute on the workers) and a
    run already held here (a --from/--to range of a stored run is read by the workers)."""
    if fmt not in ("hgrm", "hlog"):
        raise JitterlabError(
            f"--cluster computes the histograms of hgrm and hlog; a {fmt} export copies the samples "
            "(nothing to compute): drop --cluster"
        )
    if loaded:
        raise JitterlabError(
            "--cluster exports stored runs read by its workers, not a run held here: drop --cluster"
        )


def export_run(run: Run, fmt: str, out: Path, options: ExportOptions = ExportOptions()) -> None:
    """Stream ``run`` as ``fmt`` to ``out`` (atomically; ``-``: standard output), in memory
    independent of the run's size for CSV, Parquet and the histograms of a run's file."""
    exporter = _exporter(run, fmt, options)
    with open_output(out) as f:
        exporter(run, options, f)
