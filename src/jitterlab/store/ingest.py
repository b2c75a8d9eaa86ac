"""Outside files into runs: HdrHistogram interval logs (histogram-only runs) and CSV
files of samples. Both enter the store through its one commit path.

An imported run records where it came from (``config.source``, ``config.source_format``)
and no ``environment`` block: it was not measured on this machine.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.store.hdr import LONGEST_NS, histogram_summary, new_histogram, read_hlog
from jitterlab.store.rawfile import RECORD_DTYPE, RawSamples
from jitterlab.store.runs import ResultsStore, Run
from jitterlab.store.schema import run_meta


def _import_meta(store: ResultsStore, source: Path, kind: str) -> dict[str, Any]:
    return run_meta(
        store.new_run_id("import", source.stem),
        dt.datetime.now(dt.timezone.utc),
        environment=None,
        doctor=None,
        config={
            "runtime": "import",
            "technique": source.stem,
            "pairs": 1,
            "policy": "unknown",
            "source": str(source.resolve()),
            "source_format": kind,
        },
        obtained={},
        floor={},
        timing={},
    )


def import_hlog(path: Path, store: ResultsStore, warn: Warn = lambda _: None) -> Run:
    """Store an HdrHistogram log as a histogram-only run (no raw samples). A log cut off in
    its last interval (still being written) keeps its complete intervals and is partial."""
    contents = read_hlog(path)
    intervals = contents.intervals
    merged = new_histogram(LONGEST_NS)
    windows = []
    for h in intervals:
        merged.add(h)
        windows.append(
            {"start_ms": h.get_start_time_stamp(), "end_ms": h.get_end_time_stamp(), **histogram_summary(h)}
        )
    meta = _import_meta(store, path, "hlog")
    meta["histogram"] = {
        "intervals": len(intervals),
        "unit": "ns",
        "percentile_definition": "hdrhistogram",
        "windows": windows,
    }
    meta["summary"] = {"latency_ns": histogram_summary(merged)}
    meta["config"]["samples_per_pair"] = meta["summary"]["latency_ns"]["count"]
    if contents.truncated:
        warn(CodedWarning("import-truncated", f"{path}: {contents.truncated}"))
        meta["status"], meta["partial_reason"] = "partial", contents.truncated
    return store.commit_histogram(store.staging_dir(meta["id"]), contents.complete_text, meta)


MAX_LATENCY_NS = 86_400 * 1_000_000_000  # a day: anything longer is not a latency


def _numbers(table: pa.Table, name: str, path: Path) -> np.ndarray:
    """A column as float64, each row a number (NaN where the text is not one)."""
    column = table.column(name)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    text = column.to_pylist()
    out = np.empty(len(text), dtype=np.float64)
    for i, cell in enumerate(text):
        try:
            out[i] = float(cell) if cell is not None else np.nan
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def _integers(table: pa.Table, name: str) -> np.ndarray | None:
    """The column as exact int64 when the CSV reader typed it so (no float rounding)."""
    column = table.column(name)
    return np.asarray(column.to_numpy(), dtype=np.int64) if pa.types.is_integer(column.type) else None


def _validate_rows(
    path: Path, table: pa.Table, columns: set[str], skip_invalid: bool, warn: Warn
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keep mask, t_send, t_recv) of the CSV's rows; an invalid row is refused with its
    line number, or dropped and counted when ``skip_invalid``."""
    n = table.num_rows
    if {"t_send_ns", "t_recv_ns"} <= columns:
        names = ["t_send_ns", "t_recv_ns"]
    elif "latency_ns" in columns:
        names = ["latency_ns"]
    else:
        raise JitterlabError(f"{path}: needs columns t_send_ns and t_recv_ns, or latency_ns")
    values = {name: _numbers(table, name, path) for name in names}
    problems: list[tuple[np.ndarray, str]] = []
    for name, v in values.items():
        problems.append((~np.isfinite(v), f"{name} is not a finite number"))
        problems.append((np.isfinite(v) & (v != np.round(v)), f"{name} is not a whole number of nanoseconds"))
        problems.append((v < 0, f"{name} is negative"))
        problems.append((np.abs(v) >= 2**62, f"{name} is out of range"))
    if "latency_ns" in values:
        latency = values["latency_ns"]
    else:
        latency = values["t_recv_ns"] - values["t_send_ns"]
        problems.append((values["t_recv_ns"] < values["t_send_ns"], "t_recv_ns is before t_send_ns"))
    problems.append((latency > MAX_LATENCY_NS, "the latency is longer than a day"))
    bad = np.zeros(n, dtype=bool)
    first: tuple[int, str] | None = None
    for mask, why in problems:
        mask = mask & ~bad
        if mask.any():
            row = int(np.flatnonzero(mask)[0])
            if first is None or row < first[0]:
                first = (row, why)
            bad |= mask
    if first is not None:
        line = first[0] + 2  # the header is line 1
        if not skip_invalid:
            raise JitterlabError(
                f"{path}: line {line}: {first[1]} ({int(bad.sum()):,} invalid rows; --skip-invalid drops and counts them)"
            )
        warn(
            CodedWarning(
                "rows-skipped",
                f"{path}: skipped {int(bad.sum()):,} invalid rows (first: line {line}, {first[1]})",
            )
        )
    keep = ~bad
    if "latency_ns" in values:
        exact = _integers(table, "latency_ns")
        latency_ns = exact if exact is not None else np.nan_to_num(values["latency_ns"]).astype(np.int64)
        t_send = np.arange(n, dtype=np.int64)
        return keep, t_send, t_send + np.where(keep, latency_ns, 0)
    send, recv = (_integers(table, c) for c in names)
    t_send = send if send is not None else np.nan_to_num(values["t_send_ns"]).astype(np.int64)
    t_recv = recv if recv is not None else np.nan_to_num(values["t_recv_ns"]).astype(np.int64)
    return keep, t_send, t_recv


def import_csv(
    path: Path, store: ResultsStore, skip_invalid: bool = False, warn: Warn = lambda _: None
) -> Run:
    """Store a CSV of samples: columns t_send_ns and t_recv_ns (optionally pair, seq), or
    latency_ns alone (then send times are unknown and set to the row number). Every value
    must be a whole, non-negative number of nanoseconds, with t_recv_ns ≥ t_send_ns and a
    latency under a day; a row that is not is refused with its line number, or dropped and
    counted with ``skip_invalid``."""
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        table = pacsv.read_csv(path)
    except (OSError, StopIteration, pa.ArrowInvalid, UnicodeDecodeError) as e:
        raise JitterlabError(f"{path}: cannot read CSV ({e})") from e
    columns = set(header)
    keep, t_send, t_recv = _validate_rows(path, table, columns, skip_invalid, warn)
    n = int(keep.sum())
    if n == 0:
        raise JitterlabError(f"{path}: no samples (a header and no valid rows)")
    records = np.zeros(n, dtype=RECORD_DTYPE)
    records["t_send_ns"] = t_send[keep]
    records["t_recv_ns"] = t_recv[keep]
    for name in ("pair", "seq"):
        if name in columns:
            v = _numbers(table, name, path)[keep]
            if not (
                np.isfinite(v).all() and (v == np.round(v)).all() and (v >= 0).all() and (v < 2**31).all()
            ):
                raise JitterlabError(f"{path}: column {name} must hold non-negative integers")
            records[name] = v.astype(np.int64)
        else:
            records[name] = 0 if name == "pair" else np.arange(n)
    meta = _import_meta(store, path, "csv")
    meta["config"]["samples_per_pair"] = n
    meta["config"]["rows_skipped"] = int((~keep).sum())
    staging = store.staging_dir(meta["id"])
    return store.commit(staging, RawSamples(records, partial=False, truncated=False, note=""), meta)


def import_file(
    path: Path, store: ResultsStore, skip_invalid: bool = False, warn: Warn = lambda _: None
) -> Run:
    """Store ``path`` as a run, by its suffix (.hlog or .csv)."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    if path.suffix == ".hlog":
        return import_hlog(path, store, warn)
    if path.suffix == ".csv":
        return import_csv(path, store, skip_invalid, warn)
    raise JitterlabError(f"{path}: import reads .hlog (HdrHistogram log) or .csv files")
