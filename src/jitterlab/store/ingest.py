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


def import_hlog(path: Path, store: ResultsStore) -> Run:
    """Store an HdrHistogram log as a histogram-only run (no raw samples)."""
    intervals = read_hlog(path)
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
    return store.commit_histogram(store.staging_dir(meta["id"]), path, meta)


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


IMPORTERS = {".hlog": import_hlog, ".csv": import_csv}


def import_file(path: Path, store: ResultsStore) -> Run:
    """Store ``path`` as a run, by its suffix (.hlog or .csv)."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    importer = IMPORTERS.get(path.suffix)
    if importer is None:
        raise JitterlabError(f"{path}: import reads .hlog (HdrHistogram log) or .csv files")
    return importer(path, store)
