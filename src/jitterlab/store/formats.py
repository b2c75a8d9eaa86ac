"""Files other tools write, imported as runs (issue 43 item 3): cyclictest histograms
(``-h``/``--histfile`` text and ``--json``), HdrHistogram percentile distributions
(``.hgrm``: ``outputPercentileDistribution``, wrk2), PresentMon CSV, and Parquet/Arrow files
of samples.

The histogram formats become histogram-only runs by the one road every histogram takes into
the store: their counts are written as an HdrHistogram interval log and imported by
:func:`jitterlab.store.ingest.import_hlog`, so ``show``, ``export`` and ``merge`` treat them as
any imported log. The sample formats go through the CSV import's row checks
(:func:`jitterlab.store.ingest.import_table_batches`), batch by batch.
"""

from __future__ import annotations

import decimal
import io
import json
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import UNITS_NS
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LogWriter
from jitterlab.store.runs import ResultsStore, Run
from jitterlab.store.schema import safe_id_part

# --- the sniffing: which reader a file needs ----------------------------------------------


def kind_of(path: Path) -> str | None:
    """``cyclictest``, ``cyclictest-json``, ``hgrm``, ``presentmon``, ``parquet``, ``arrow``
    or None (the suffix decides: .hlog, .csv)."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".arrow", ".feather", ".ipc"):
        return "arrow"
    if suffix == ".hgrm":
        return "hgrm"
    with open(path, "rb") as f:
        head = f.read(4096).decode("utf-8", "replace")
    if suffix == ".json" and '"rt_test_version' in head and '"thread"' in head:
        return "cyclictest-json"
    if re.search(r"^# Histogram\s*$", head, re.M) or head.startswith("# /dev/cpu_dma_latency"):
        return "cyclictest"
    first = head.splitlines()[0] if head else ""
    if "MsBetweenPresents" in first and "TimeInSeconds" in first:
        return "presentmon"
    if re.search(r"^\s*Value\s+Percentile\s+TotalCount", head, re.M):
        return "hgrm"
    return None


def _log_of(histograms: list[Histogram], unit_comment: str) -> str:
    """One interval per histogram (its tag set), as HistogramLogWriter writes them."""
    text = io.StringIO()
    writer = LogWriter(text)
    writer.comment(unit_comment)
    writer.version()
    writer.legend()
    for h in histograms:
        writer.interval(0.0, 1.0, h)
    return text.getvalue()


def _import_histograms(
    path: Path,
    store: ResultsStore,
    histograms: list[Histogram],
    unit: str,
    origin: dict[str, Any],
    warn: Warn,
    per_tag: dict[str, dict[str, Any]] | None = None,
) -> list[Run]:
    """Each histogram (tagged) stored as one histogram-only run, through import_hlog."""
    from jitterlab.store.ingest import ImportOptions, import_hlog

    runs = []
    with tempfile.TemporaryDirectory(prefix="jitterlab-import-") as tmp:
        log = Path(tmp) / f"{safe_id_part(path.stem)[:20]}.hlog"
        log.write_text(_log_of(histograms, f"converted from {path.name} by jitterlab; values in {unit}"))
        for h in histograms:
            tag = h.tag
            single = len(histograms) == 1
            named = log if single else log.with_name(f"{log.stem}-{tag}.hlog")
            if not single:
                named.write_text(log.read_text())
            extra = (per_tag or {}).get(str(tag), {})
            config = {"source": str(path.resolve())} | origin | extra
            config.setdefault("technique", path.stem if single else f"{path.stem}/{tag}")
            runs.append(import_hlog(named, store, ImportOptions(unit=unit, tag=tag), warn, config))
    return runs


# --- cyclictest ---------------------------------------------------------------------------


def _cyclictest_text(path: Path) -> tuple[list[dict[int, int]], dict[str, list[int]]]:
    """(per thread: µs bucket -> count, the summary lines: Total, Min, Avg, Max, Overflows)."""
    threads: list[dict[int, int]] = []
    summary: dict[str, list[int]] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                m = re.match(
                    r"#\s*(Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):\s*(.*)", line
                )
                if m:
                    summary[m.group(1)] = [int(x) for x in m.group(2).split()]
                continue
            fields = line.split()
            try:
                bucket, counts = int(fields[0]), [int(x) for x in fields[1:]]
            except ValueError:
                raise JitterlabError(
                    f"{path}: line {number}: not a cyclictest histogram row ({line[:60]!r})"
                ) from None
            if not threads:
                threads = [{} for _ in counts]
            if len(counts) != len(threads):
                raise JitterlabError(
                    f"{path}: line {number}: {len(counts)} threads, earlier rows had {len(threads)}"
                )
            for t, c in enumerate(counts):
                if c:
                    threads[t][bucket] = c
    if not threads:
        raise JitterlabError(f"{path}: no histogram rows (was cyclictest run with -h N or --histfile?)")
    return threads, summary


def _cyclictest_json(path: Path) -> tuple[list[dict[int, int]], dict[str, list[int]]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        threads = document["thread"]
        keys = sorted(threads, key=int)
        hists = [{int(k): int(v) for k, v in threads[t].get("histogram", {}).items()} for t in keys]
        cycles = [int(threads[t]["cycles"]) for t in keys]
        summary = {
            "Total": cycles,
            "Min Latencies": [int(threads[t]["min"]) for t in keys],
            "Max Latencies": [int(threads[t]["max"]) for t in keys],
            "Histogram Overflows": [c - sum(h.values()) for c, h in zip(cycles, hists, strict=True)],
        }
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise JitterlabError(f"{path}: not cyclictest --json output ({type(e).__name__}: {e})") from None
    if not any(hists):
        raise JitterlabError(f"{path}: no histogram in it (was cyclictest run with -h N?)")
    return hists, summary


def import_cyclictest(path: Path, store: ResultsStore, as_json: bool, warn: Warn) -> list[Run]:
    """One histogram-only run per thread of a cyclictest histogram (µs buckets, exact: a
    5-digit HdrHistogram holds every whole µs up to 262 ms). Overflows (latencies beyond the
    histogram's range, whose values cyclictest does not keep) are left out and named: such
    a run is partial."""
    threads, summary = (_cyclictest_json if as_json else _cyclictest_text)(path)
    histograms = []
    per_tag: dict[str, dict[str, Any]] = {}
    overflows = summary.get("Histogram Overflows", [])
    for t, buckets in enumerate(threads):
        h = Histogram.auto(5)
        h.tag = f"thread{t}"
        if buckets:
            values = np.fromiter(buckets, dtype=np.int64)
            h.record(values, np.fromiter(buckets.values(), dtype=np.int64))
        histograms.append(h)
        per_tag[h.tag] = {"thread": t, "source_format": "cyclictest-json" if as_json else "cyclictest"}
        over = overflows[t] if t < len(overflows) else 0
        if over:
            top = summary.get("Max Latencies", [None] * (t + 1))[t]
            per_tag[h.tag]["histogram_overflows"] = over
            warn(
                CodedWarning(
                    "import-truncated",
                    f"{path}: thread {t}: {over:,} latencies beyond the histogram's range (max {top} µs) "
                    "are not in it: run cyclictest with a larger -h",
                )
            )
    empty = [h.tag for h in histograms if h.total == 0]
    if empty:
        raise JitterlabError(f"{path}: no samples in the histogram of {', '.join(str(e) for e in empty)}")
    runs = _import_histograms(path, store, histograms, "us", {"runtime": "import"}, warn, per_tag)
    for run, h in zip(runs, histograms, strict=True):
        beyond = per_tag[str(h.tag)].get("histogram_overflows")
        if beyond:
            store.amend(
                run,
                {
                    "status": "partial",
                    "partial_reason": f"{beyond:,} latencies beyond the histogram's range are not in it",
                },
            )
    return runs


# --- .hgrm ---------------------------------------------------------------------------------

_HGRM_ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)\s+(\d+)(?:\s+\S+)?\s*$")
_SUB_BUCKETS = re.compile(r"SubBuckets\s*=\s*(\d+)")
# producers whose .hgrm says who wrote it, and the unit of its values
HGRM_PRODUCERS = (("HdrHistogram - Recorded Latency", "wrk2", "ms"),)


def import_hgrm(path: Path, store: ResultsStore, unit: str | None, warn: Warn) -> list[Run]:
    """A percentile distribution as a histogram-only run whose figures reproduce the file's
    rows: each row's count beyond the previous one recorded at the row's value, in the
    integer unit the file printed (its decimals), in a histogram of the file's precision
    (its SubBuckets). The values' unit is not in the file: ``unit`` (``--unit``), or its
    producer's (wrk2: ms); refused without either."""
    text = path.read_text(encoding="utf-8", errors="replace")
    producer = next(((n, u) for mark, n, u in HGRM_PRODUCERS if mark in text), None)
    if unit is None and producer is None:
        raise JitterlabError(
            f"{path}: a percentile distribution does not say the unit of its values: give --unit "
            "(us for HdrHistogram's outputPercentileDistribution(out, 1000.0) of ns, ms for wrk2)"
        )
    if unit is None and producer is not None:
        unit = producer[1]
        warn(CodedWarning("import-assumed", f"{path}: a {producer[0]} file: values read in {unit}"))
    assert unit is not None
    rows: list[tuple[str, int]] = []
    decimals = None
    for line in text.splitlines():
        m = _HGRM_ROW.match(line)
        if not m:
            continue
        value, _, total = m.groups()
        d = len(value.partition(".")[2])
        if decimals is None:
            decimals = d
        rows.append((value, int(total)))
    if not rows or decimals is None:
        raise JitterlabError(f"{path}: no 'Value Percentile TotalCount' rows: not a percentile distribution")
    sub = _SUB_BUCKETS.search(text)
    digits = 3
    if sub:
        wanted = int(sub.group(1))
        digits = next((d for d in range(6) if Histogram(1, 2, d).sub_bucket_count == wanted), 3)
    step = decimal.Decimal(10) ** decimals
    scale_ns = UNITS_NS[unit] / 10**decimals  # ns of one integer of the reconstruction
    int_unit = next((u for u, ns in UNITS_NS.items() if ns == scale_ns), None)
    if int_unit is None:
        raise JitterlabError(
            f"{path}: values in {unit} with {decimals} decimals are not whole ns, µs, ms or s: give another --unit"
        )
    h = Histogram.auto(digits)
    previous = 0
    for value, total in rows:
        if total < previous:
            raise JitterlabError(
                f"{path}: TotalCount goes down ({previous} then {total}): not a percentile distribution"
            )
        if total > previous:
            h.record(int(decimal.Decimal(value) * step), total - previous)
        previous = total
    origin = {
        "runtime": "import",
        "technique": path.stem,
        "source_format": "hgrm",
        "hgrm_unit": unit,
        "hgrm_rows": len(rows),
    }
    mean = re.search(r"#\[Mean\s*=\s*([0-9.]+)", text)
    if mean:
        origin["hgrm_mean_ns"] = float(mean.group(1)) * UNITS_NS[unit]
    return _import_histograms(path, store, [h], int_unit, origin, warn)


# --- PresentMon ------------------------------------------------------------------------------

PRESENTMON_COLUMNS = ("MsBetweenPresents", "MsBetweenDisplayChange", "MsClickToPhotonLatency", "MsPCLatency")


def import_presentmon(
    path: Path, store: ResultsStore, columns: list[str] | None, warn: Warn, options: Any
) -> list[Run]:
    """One run per chosen column (default: every one of :data:`PRESENTMON_COLUMNS` the file
    has), in ms, sent at ``TimeInSeconds``; each (process, swap chain) is one pair, named in
    the run's config. Rows where the column is ``NA`` (a frame never displayed, no click)
    are left out and counted."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from jitterlab.store.ingest import import_table_batches

    header = path.open(encoding="utf-8", errors="replace").readline().strip().split(",")
    present = [c for c in PRESENTMON_COLUMNS if c in header]
    chosen = columns or present
    for c in chosen:
        if c not in header:
            raise JitterlabError(
                f"{path}: --latency-column {c}: not in this PresentMon file (it has {', '.join(present) or 'none of them'})"
            )
    process = next((c for c in ("ProcessID", "ProcessId") if c in header), None)
    swap = next((c for c in ("SwapChainAddress", "SwapChain") if c in header), None)
    app = next((c for c in ("Application", "ProcessName") if c in header), None)
    keys = [c for c in (app, process, swap) if c]
    runs = []
    for column in chosen:
        wanted = ["TimeInSeconds", column, *keys]
        convert = pacsv.ConvertOptions(
            include_columns=wanted, column_types={c: pa.string() for c in wanted}, strings_can_be_null=False
        )
        chains: dict[tuple[str, ...], int] = {}
        missing = 0

        def batches(
            column: str = column,
            convert: pacsv.ConvertOptions = convert,
            chains: dict[tuple[str, ...], int] = chains,
        ) -> Iterator[pa.Table]:
            nonlocal missing
            reader = pacsv.open_csv(str(path), convert_options=convert)
            for batch in reader:
                table = pa.Table.from_batches([batch])
                values = table.column(column).to_pylist()
                keep = np.array([v not in ("NA", "", None) for v in values], dtype=bool)
                missing += int((~keep).sum())
                table = table.filter(pa.array(keep))
                ids = [tuple(table.column(k)[i].as_py() for k in keys) for i in range(table.num_rows)]
                pair = [chains.setdefault(i, len(chains)) for i in ids]
                yield table.append_column("pair", pa.array(pair, pa.int64()))

        run_options = replace(options, latency_column=f"{column}:ms", time_column="TimeInSeconds:s")
        run = import_table_batches(
            path,
            [*wanted, "pair"],
            batches(),
            store,
            run_options,
            warn,
            kind="presentmon",
            technique=f"{path.stem}/{column}",
        )
        store.amend(
            run,
            {
                "config": run.config
                | {
                    "presentmon_column": column,
                    "rows_not_available": missing,
                    "swap_chains": [dict(zip(keys, k, strict=True)) | {"pair": p} for k, p in chains.items()],
                }
            },
        )
        runs.append(run)
    return runs


# --- Parquet / Arrow ------------------------------------------------------------------------


def import_columnar(path: Path, store: ResultsStore, kind: str, options: Any, warn: Warn) -> Run:
    """A Parquet or Arrow IPC file of samples: the columns as a CSV's (t_send/t_recv, or a
    latency with --latency-column / --time-column and their units), read batch by batch."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    from jitterlab.store.ingest import import_table_batches

    try:
        if kind == "parquet":
            f = pq.ParquetFile(path, pre_buffer=False)
            names = list(f.schema_arrow.names)

            def batches() -> Iterator[pa.Table]:
                for b in f.iter_batches(batch_size=1 << 16):
                    yield pa.Table.from_batches([b])

        else:
            try:
                reader = ipc.open_file(path)
            except pa.ArrowInvalid:
                reader = None
            names = list((reader.schema if reader else ipc.open_stream(path).schema).names)

            def batches() -> Iterator[pa.Table]:
                if reader is not None:
                    for i in range(reader.num_record_batches):
                        yield pa.Table.from_batches([reader.get_batch(i)])
                else:
                    for b in ipc.open_stream(path):
                        yield pa.Table.from_batches([b])

    except (pa.ArrowInvalid, OSError) as e:
        raise JitterlabError(f"{path}: cannot read {kind} ({e})") from None
    return import_table_batches(path, names, batches(), store, options, warn, kind=kind)


# --- the one entry -----------------------------------------------------------------------------


def import_any(path: Path, store: ResultsStore, options: Any, warn: Warn) -> list[Run]:
    """``path`` stored as one run or several (one per cyclictest thread, per PresentMon
    column), by what the file is: :func:`kind_of`, else its suffix (.hlog, .csv)."""
    from jitterlab.store.ingest import import_file

    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    kind = kind_of(path)
    if kind is None:
        return [import_file(path, store, options, warn)]
    hlog_only = {"--tag": options.tag, "--from": options.from_s, "--to": options.to_s}
    for name, value in hlog_only.items():
        if value is not None:
            raise JitterlabError(f"{name} is for HdrHistogram logs (.hlog), not {kind} files")
    samples = kind in ("presentmon", "parquet", "arrow")
    if not samples:
        for name, value in (
            ("--time-column", options.time_column),
            ("--latency-column", options.latency_column),
            ("--expected-interval", options.expected_interval_ns),
        ):
            if value is not None:
                raise JitterlabError(f"{name} is for files of samples, not a {kind} histogram")
    if kind in ("cyclictest", "cyclictest-json"):
        if options.unit not in (None, "us"):
            raise JitterlabError(f"--unit {options.unit}: cyclictest histograms are in us")
        return import_cyclictest(path, store, kind == "cyclictest-json", warn)
    if kind == "hgrm":
        return import_hgrm(path, store, options.unit, warn)
    if kind == "presentmon":
        columns = [options.latency_column.partition(":")[0]] if options.latency_column else None
        return import_presentmon(path, store, columns, warn, replace(options, latency_column=None))
    return [import_columnar(path, store, kind, options, warn)]


def write_parquet_batches(
    out: BinaryIO, schema: pa.Schema, batches: Iterable[pa.RecordBatch], row_group_rows: int
) -> None:
    """``batches`` written to ``out`` as a Parquet file of ``schema`` in row groups of
    ``row_group_rows`` (the file ``pq.write_table`` of the whole table gives), one row group
    pending at a time (``export --format parquet``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetWriter(out, schema) as writer:
        pending: list[pa.RecordBatch] = []
        rows = 0
        for batch in batches:
            pending.append(batch)
            rows += batch.num_rows
            while rows >= row_group_rows:
                table = pa.Table.from_batches(pending, schema)
                writer.write_table(table.slice(0, row_group_rows), row_group_rows)
                rest = table.slice(row_group_rows)
                pending, rows = rest.combine_chunks().to_batches(), rest.num_rows
        if rows:
            writer.write_table(pa.Table.from_batches(pending, schema), row_group_rows)
