"""Export runs to HdrHistogram, CSV and Parquet; import HdrHistogram logs and CSV files.

HdrHistogram files are written and read with the ``hdrhistogram`` package (``hdrh``), so
they follow its V2 encoding exactly. Values are nanoseconds. Percentiles of a histogram
follow HdrHistogram's own definition (the value at which the cumulative count first
reaches p % of the total, reported as the highest equivalent value of its bucket), which
differs from the type-7 definition used for raw samples; both are documented in
docs/statistics.md.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader, HistogramLogWriter

from jitterlab import environment
from jitterlab._version import __version__, build_info
from jitterlab.errors import JitterlabError
from jitterlab.fileio import atomic_write_bytes, atomic_write_json, fsync_dir
from jitterlab.rawfile import RECORD_DTYPE, RawSamples
from jitterlab.stats.summary import SUMMARY_PERCENTILES
from jitterlab.store import RUN_JSON, SCHEMA_VERSION, ResultsStore, Run

SIGNIFICANT_FIGURES = 3
HISTOGRAM_FILE = "histogram.hlog"
FORMATS = ("hgrm", "hlog", "csv", "parquet")


def new_histogram(highest_ns: int) -> HdrHistogram:
    """A histogram from 1 ns to at least ``highest_ns`` with 3 significant digits."""
    return HdrHistogram(1, max(int(highest_ns) * 2, 1_000_000), SIGNIFICANT_FIGURES)


def record_all(histogram: HdrHistogram, values: np.ndarray) -> int:
    """Record every value (grouped by distinct value, so it is fast). Returns how many
    values could not be recorded (negative ones): reported, never fatal."""
    valid = values[values >= 0]
    distinct, counts = np.unique(valid, return_counts=True)
    for value, count in zip(distinct.tolist(), counts.tolist(), strict=True):
        histogram.record_value(value, count)
    return int(values.size - valid.size)


def histogram_summary(histogram: HdrHistogram) -> dict[str, Any]:
    """The run.json summary block of a histogram (HdrHistogram's percentile definition)."""
    total = histogram.get_total_count()
    summary: dict[str, Any] = {
        "count": int(total),
        "min": float(histogram.get_min_value()) if total else float("nan"),
        "max": float(histogram.get_max_value()) if total else float("nan"),
        "mean": float(histogram.get_mean_value()) if total else float("nan"),
        "std": float(histogram.get_stddev()) if total else float("nan"),
    }
    for p, key in zip(SUMMARY_PERCENTILES, ("p50", "p90", "p99", "p99_9", "p99_99", "p99_999"), strict=True):
        summary[key] = float(histogram.get_value_at_percentile(p)) if total else float("nan")
    return summary


# --- export -----------------------------------------------------------------------------


def export_run(
    run: Run, fmt: str, out: Path, window_ns: int = 1_000_000_000, unit_ratio: float = 1_000.0
) -> None:
    """Write ``run`` as ``fmt`` to ``out`` (atomically)."""
    if fmt not in FORMATS:
        raise JitterlabError(f"unknown export format '{fmt}' (choose from {', '.join(FORMATS)})")
    if run.meta.get("samples") is None:
        if fmt != "hlog":
            raise JitterlabError(f"run {run.id} holds a histogram only: it exports as hlog, not {fmt}")
        shutil.copyfile(run.path / run.meta["histogram"]["file"], out)
        return
    if fmt == "parquet":
        shutil.copyfile(run.path / run.meta["samples"]["file"], out)
    elif fmt == "csv":
        table = run.table.append_column("latency_ns", pa.array(run.latency_ns))
        buffer = io.BytesIO()
        pacsv.write_csv(table, buffer)
        atomic_write_bytes(out, buffer.getvalue())
    elif fmt == "hgrm":
        latency = run.latency_ns
        histogram = new_histogram(int(latency.max(initial=1)))
        record_all(histogram, latency)
        binary = io.BytesIO()
        histogram.output_percentile_distribution(binary, unit_ratio)
        atomic_write_bytes(out, binary.getvalue())
    else:
        atomic_write_bytes(out, hlog_bytes(run, window_ns))


def hlog_bytes(run: Run, window_ns: int) -> bytes:
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
            writer.output_interval_histogram(histogram, start or 1e-9, end, 1e6)
    return text.getvalue().encode()


# --- import -----------------------------------------------------------------------------


def read_hlog(path: Path) -> list[HdrHistogram]:
    """Interval histograms of an HdrHistogram log, in file order."""
    try:
        reader = HistogramLogReader(str(path), new_histogram(3_600_000_000_000))
        intervals = []
        while (histogram := reader.get_next_interval_histogram()) is not None:
            intervals.append(histogram)
        reader.close()
    except (OSError, ValueError, TypeError, IndexError) as e:
        raise JitterlabError(f"{path}: not a readable HdrHistogram log ({e})") from e
    if not intervals:
        raise JitterlabError(f"{path}: no interval histograms found (is it an HdrHistogram V2 .hlog?)")
    return intervals


def _import_meta(store: ResultsStore, source: Path, kind: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "run",
        "id": store.new_run_id("import", source.stem),
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        "status": "complete",
        "partial_reason": "",
        "config": {
            "runtime": "import",
            "technique": source.stem,
            "pairs": 1,
            "policy": "unknown",
            "source": str(source),
            "source_format": kind,
        },
        "obtained": {},
        "environment": environment.collect(),
        "tool": {"name": "jitterlab", "version": __version__, "git_commit": build_info().get("git_commit")},
        "floor": {},
        "timing": {},
    }


def import_hlog(path: Path, store: ResultsStore) -> Run:
    """Store an HdrHistogram log as a histogram-only run (no raw samples)."""
    intervals = read_hlog(path)
    merged = new_histogram(3_600_000_000_000)
    windows = []
    for h in intervals:
        merged.add(h)
        windows.append(
            {"start_ms": h.get_start_time_stamp(), "end_ms": h.get_end_time_stamp(), **histogram_summary(h)}
        )
    meta = _import_meta(store, path, "hlog")
    staging = store.staging_dir(meta["id"])
    shutil.copyfile(path, staging / HISTOGRAM_FILE)
    meta["samples"] = None
    meta["histogram"] = {
        "file": HISTOGRAM_FILE,
        "intervals": len(intervals),
        "unit": "ns",
        "percentile_definition": "hdrhistogram",
        "windows": windows,
    }
    meta["summary"] = {"latency_ns": histogram_summary(merged)}
    meta["config"]["samples_per_pair"] = meta["summary"]["latency_ns"]["count"]
    atomic_write_json(staging / RUN_JSON, meta)
    final = store.root / meta["id"]
    staging.rename(final)
    fsync_dir(store.root)
    return Run(final, meta)


def import_csv(path: Path, store: ResultsStore) -> Run:
    """Store a CSV of samples: columns t_send_ns and t_recv_ns (optionally pair, seq), or
    latency_ns alone (then send times are unknown and set to the row number)."""
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        table = pacsv.read_csv(path)
    except (OSError, StopIteration, pa.ArrowInvalid) as e:
        raise JitterlabError(f"{path}: cannot read CSV ({e})") from e
    columns = set(header)
    n = table.num_rows
    records = np.zeros(n, dtype=RECORD_DTYPE)
    try:
        if {"t_send_ns", "t_recv_ns"} <= columns:
            records["t_send_ns"] = table.column("t_send_ns").to_numpy()
            records["t_recv_ns"] = table.column("t_recv_ns").to_numpy()
        elif "latency_ns" in columns:
            records["t_send_ns"] = np.arange(n)
            records["t_recv_ns"] = records["t_send_ns"] + table.column("latency_ns").to_numpy()
        else:
            raise JitterlabError(f"{path}: needs columns t_send_ns and t_recv_ns, or latency_ns")
        records["pair"] = table.column("pair").to_numpy() if "pair" in columns else 0
        records["seq"] = table.column("seq").to_numpy() if "seq" in columns else np.arange(n)
    except (pa.ArrowInvalid, ValueError, TypeError) as e:
        raise JitterlabError(f"{path}: columns must hold integers ({e})") from e
    meta = _import_meta(store, path, "csv")
    meta["config"]["samples_per_pair"] = n
    staging = store.staging_dir(meta["id"])
    return store.commit(staging, RawSamples(records, partial=False, truncated=False, note=""), meta)


def import_file(path: Path, store: ResultsStore) -> Run:
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    if path.suffix == ".hlog":
        return import_hlog(path, store)
    if path.suffix == ".csv":
        return import_csv(path, store)
    raise JitterlabError(f"{path}: import reads .hlog (HdrHistogram log) or .csv files")
