"""Outside files into runs: HdrHistogram interval logs (histogram-only runs) and CSV
files of samples. Both enter the store through its one commit path.

An imported run records where it came from (``config.source``, ``config.source_format``)
and no ``environment`` block: it was not measured on this machine.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import format_ns
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import percentiles_of_scan
from jitterlab.store.hdr.log import YEAR_S, unit_named_in
from jitterlab.store.hdr.streams import UNITS_NS, corrected_figures, figures, in_unit, read_figures
from jitterlab.store.reader import READ_BATCH_ROWS, latency_chunks
from jitterlab.store.runs import ResultsStore, Run
from jitterlab.store.schema import HISTOGRAM_FILE, SAMPLES_FILE, run_meta
from jitterlab.store.writer import SampleWriter


@dataclass(frozen=True)
class ImportOptions:
    """How to read an outside file (``jitterlab import``'s options)."""

    skip_invalid: bool = False  # leave damaged lines/rows out (counted, the run partial)
    unit: str | None = None  # ns|us|ms|s: the file's values (None: what its header names, else ns)
    tag: str | None = None  # hlog: keep only this tag's intervals (None: every tag, kept apart)
    from_s: float | None = None  # hlog: intervals from this offset from StartTime (seconds)
    to_s: float | None = None  # … up to this one (the first beyond ends the reading)
    expected_interval_ns: int | None = None  # correct for coordinated omission (HdrHistogram's rule)
    time_column: str | None = None  # CSV: the column of send times
    latency_column: str | None = None  # CSV: NAME[:UNIT] of the latency column, any name


def _import_meta(
    store: ResultsStore, source: Path, kind: str, started: dt.datetime | None = None
) -> dict[str, Any]:
    now = dt.datetime.now(dt.timezone.utc)
    meta = run_meta(
        store.new_run_id("import", source.stem[:24]),  # a long file name never widens `runs`
        started or now,
        environment=None,
        doctor=None,
        config={
            "runtime": "import",
            "technique": source.stem,
            "pairs": 1,
            "policy": "unknown",
            "source": str(source.resolve()),
            "source_format": kind,
            "imported_utc": now.isoformat(timespec="milliseconds"),
        },
        obtained={},
        floor={},
        timing={},
    )
    return meta


def _header_unit(path: Path) -> str | None:
    """The unit a log's comments name, read from the lines before its first interval."""
    with open(path, "rb") as f:
        for raw in f:
            text = raw.decode("utf-8", "replace").strip("\x00\ufeff\r\n ")
            if text and not text.startswith(("#", '"StartTimestamp"')):
                return None
            unit = unit_named_in(text)
            if unit:
                return unit
    return None


# producers whose logs say who wrote them but not their unit: (header text, name, unit)
PRODUCERS = (("[Logging for:", "YCSB", "us"),)


def _producer(path: Path) -> tuple[str, str] | None:
    """(producer, the unit it logs in) of a log whose header comments name a producer that
    logs in a unit other than ns (YCSB's ``#[Logging for: READ]``: microseconds)."""
    with open(path, "rb") as f:
        for raw in f:
            text = raw.decode("utf-8", "replace").strip("\x00\ufeff\r\n ")
            if text and not text.startswith(("#", '"StartTimestamp"')):
                return None
            for mark, name, unit in PRODUCERS:
                if mark in text:
                    return name, unit
    return None


def resolve_unit(path: Path, given: str | None, named: str | None, default: str = "ns") -> str:
    """The unit of a file's values: --unit, or what its header names, or ``default``; a
    --unit that contradicts the header is refused."""
    if given is not None and given not in UNITS_NS:
        raise JitterlabError(f"--unit {given}: choose ns, us, ms or s")
    if given and named and given != named:
        raise JitterlabError(f"{path}: --unit {given}, but the file's header says its values are in {named}")
    return given or named or default


def _epoch(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def import_hlog(
    path: Path,
    store: ResultsStore,
    options: ImportOptions = ImportOptions(),
    warn: Warn = lambda _: None,
    origin: dict[str, Any] | None = None,
) -> Run:
    """Store an HdrHistogram log as a histogram-only run (no raw samples).

    The run's data file is the log itself, reduced to what was selected (``--tag``,
    ``--from/--to``; byte for byte otherwise). run.json holds every interval's figures and
    each tag's whole-log figures as HdrHistogram Java's HistogramLogProcessor gives them, in
    nanoseconds; the run's summary is the untagged stream's (or, in a log of tagged lines
    only, the first tag's). A log cut off in its last line (still being written) keeps its
    complete intervals and is partial, as is one with damaged lines left out by
    ``skip_invalid``. ``origin``: the config of a file converted to a log on the way in
    (cyclictest, .hgrm: store/formats.py), which the run names as its source instead."""
    named = _header_unit(path)
    producer = None if named or options.unit else _producer(path)
    unit = resolve_unit(path, options.unit, named or (producer[1] if producer else None))
    if producer:
        warn(
            CodedWarning(
                "import-assumed",
                f"{path}: a {producer[0]} log: values read in {producer[1]} ({producer[0]} logs latencies in "
                f"{producer[1]}; --unit gives another unit)",
            )
        )
    scale = UNITS_NS[unit]
    expected = in_unit(options.expected_interval_ns, scale)
    staging = store.staging_dir(store.new_run_id("import", path.stem[:24]), lock=True)
    run_id = staging.name
    try:
        with open(path, "rb") as source, open(staging / HISTOGRAM_FILE, "wb") as copy:
            result = read_figures(
                source,
                str(path),
                scale=scale,
                tags=None if options.tag is None else [options.tag],
                from_s=options.from_s,
                to_s=options.to_s,
                expected_interval=expected,
                skip_invalid=options.skip_invalid,
                warn=lambda text: warn(CodedWarning("log-irregular", text)),
                copy_to=copy,
            )
            copy.flush()
            os.fsync(copy.fileno())
    except OSError as e:
        store.discard_staging(staging)
        raise JitterlabError(f"{path}: cannot read ({e.strerror or e})") from e
    except BaseException:
        store.discard_staging(staging)
        raise
    if not result.streams:
        store.discard_staging(staging)
        selection = _selection_text(options)
        raise JitterlabError(
            f"{path}: no interval histograms{selection} (is it an HdrHistogram log?"
            f"{' tags in it: ' + ', '.join(sorted(t for t in result.seen_tags if t)) if result.seen_tags - {None} else ''})"
        )
    main_tag = (
        options.tag
        if options.tag is not None
        else (None if None in result.streams else next(iter(result.streams)))
    )
    main = result.streams[main_tag]
    assert main.whole is not None
    known_start = result.header.start_time_s is not None or result.start_time_s > YEAR_S
    meta = _import_meta(store, path, "hlog", _epoch(result.start_time_s) if known_start else None)
    meta["id"] = run_id
    meta["config"] |= origin or {}
    meta["config"] |= {
        "unit": unit,
        "tag": options.tag,
        "from_s": options.from_s,
        "to_s": options.to_s,
        "expected_interval_ns": options.expected_interval_ns,
    }
    if known_start:
        meta["timing"] = {"started_realtime_ns": int(decimal.Decimal(repr(result.start_time_s)) * 10**9)}
    streams = []
    for tag, stream in result.streams.items():
        assert stream.whole is not None
        entry: dict[str, Any] = {
            "tag": tag,
            "intervals": stream.intervals,
            "summary": figures(stream.whole, scale),
        }
        if stream.corrected is not None:
            entry["corrected"] = figures(stream.corrected, scale)
        streams.append(entry)
    meta["histogram"] = {
        "format": "hlog",
        "intervals": result.kept,
        "kind": result.kind,
        "unit": "ns",
        "source_unit": unit,
        "scale_ns": scale,
        "percentile_definition": "hdrhistogram-java-2.2.2",
        "start_time_s": result.header.start_time_s,
        "base_time_s": result.header.base_time_s,
        "log_start_s": result.start_time_s,
        "tag": main_tag,
        "streams": streams,
        "expected_interval_ns": options.expected_interval_ns,
        "windows": result.windows,
        "leading_junk": result.header.leading_junk or None,
    }
    meta["summary"] = {"latency_ns": figures(main.whole, scale)}
    if main.corrected is not None:
        meta["summary"]["latency_corrected_ns"] = figures(main.corrected, scale)
    meta["config"]["samples"] = meta["summary"]["latency_ns"]["count"]
    reasons = []
    if result.truncated:
        warn(CodedWarning("import-truncated", f"{path}: {result.truncated}"))
        reasons.append(result.truncated)
    if result.skipped:
        reasons.append(f"{len(result.skipped)} damaged line(s) left out (first: {result.skipped[0]})")
    if result.time_problems:
        more = f" (and {len(result.time_problems) - 1} more)" if len(result.time_problems) > 1 else ""
        warn(CodedWarning("time-irregular", f"{path}: {result.time_problems[0]}{more}"))
        meta["histogram"]["time_problems"] = result.time_problems[:20]
    if reasons:
        meta["status"], meta["partial_reason"] = "partial", "; ".join(reasons)
    return store.commit_histogram(staging, meta)


def _selection_text(options: ImportOptions) -> str:
    parts = []
    if options.tag is not None:
        parts.append(f"with tag {options.tag}")
    if options.from_s is not None or options.to_s is not None:
        parts.append(
            f"between {options.from_s or 0:g} s and {'the end' if options.to_s is None else f'{options.to_s:g} s'}"
        )
    return f" {' and '.join(parts)}" if parts else ""


READ_BLOCK_BYTES = 1 << 22  # the CSV reader's block (about 170 k rows): memory per block in flight
MAX_LATENCY_NS = 86_400 * 1_000_000_000  # a day: anything longer is not a latency
_UNIT_SUFFIX = re.compile(r"^(?P<base>.*?)(?:_|\s*[(\[])(?P<unit>ns|us|µs|ms|s)[)\]]?$")
_DECIMAL = re.compile(r"\s*([+-]?)(\d*)(?:\.(\d*))?\s*")
ROLES = ("latency", "t_send", "t_recv")
SPAN_NAMES = {"start": "t_send", "end": "t_recv"}  # a span's columns, when t_send/t_recv are absent


def _column_unit(name: str) -> tuple[str, str | None]:
    """(name without its unit, the unit it names): "latency_us" → ("latency", "us")."""
    m = _UNIT_SUFFIX.match(name.strip())
    if not m:
        return name.strip(), None
    unit = m.group("unit")
    return m.group("base"), "us" if unit == "µs" else unit


@dataclass(frozen=True)
class _Column:
    name: str  # as in the header
    unit: str
    defaulted: bool = False  # the unit is nobody's word (no suffix, no --unit, no :UNIT): ns


# column names that hold times, not latencies: a CSV with one and no --time-column is refused
# rather than given send times 0, 1, 2 … ns (issue 38 item 5)
TIME_NAMES = ("time", "timestamp", "ts", "t", "timeinseconds", "time_s", "epoch")


def _name_and_unit(text: str, option: str, header: list[str], path: Path) -> tuple[str, str | None]:
    """``NAME[:UNIT]`` of --latency-column / --time-column, checked against the header."""
    name, colon, unit = text.rpartition(":") if ":" in text else (text, "", "")
    if not colon:
        name, unit = text, ""
    if name not in header:
        raise JitterlabError(f"{path}: {option} {name}: no such column (columns: {', '.join(header)})")
    if unit and unit not in UNITS_NS:
        raise JitterlabError(f"{option} {text}: the unit after ':' is ns, us, ms or s")
    return name, unit or None


def _csv_layout(path: Path, header: list[str], options: ImportOptions) -> dict[str, _Column]:
    """Which header column holds the latency or the send and receive times, and each one's
    unit (its name's suffix, else --unit, else ns); --time-column NAME[:UNIT] names the
    send times of a latency column."""
    if options.unit is not None and options.unit not in UNITS_NS:
        raise JitterlabError(f"--unit {options.unit}: choose ns, us, ms or s")
    layout: dict[str, _Column] = {}
    chosen = None
    if options.latency_column is not None:
        chosen = _name_and_unit(options.latency_column, "--latency-column", header, path)
        unit = chosen[1] or _column_unit(chosen[0])[1] or options.unit
        layout["latency"] = _Column(chosen[0], unit or "ns", unit is None)
    for name in header:
        base, named = _column_unit(name)
        if base.lower() in SPAN_NAMES and not any(_column_unit(n)[0] in ("t_send", "t_recv") for n in header):
            base = SPAN_NAMES[base.lower()]  # start/end columns: the send and receive times
        if base not in ROLES or (chosen is not None and base in ("latency", "t_recv")):
            continue
        if named and options.unit and named != options.unit:
            raise JitterlabError(f"{path}: --unit {options.unit}, but column '{name}' says {named}")
        if base in layout:
            raise JitterlabError(f"{path}: two columns hold {base} ('{layout[base].name}' and '{name}')")
        layout[base] = _Column(name, named or options.unit or "ns", not (named or options.unit))
    if options.time_column is not None:
        name, given = _name_and_unit(options.time_column, "--time-column", header, path)
        if "t_send" in layout:
            raise JitterlabError(
                f"{path}: --time-column {name}, but the file has send times already ('{layout['t_send'].name}')"
            )
        unit = given or _column_unit(name)[1] or options.unit
        layout["t_send"] = _Column(name, unit or "ns", unit is None)
        if "latency" not in layout:
            raise JitterlabError(f"{path}: --time-column needs a latency column to go with the send times")
        layout.pop("t_recv", None)
    if not ({"t_send", "t_recv"} <= layout.keys() or "latency" in layout):
        raise JitterlabError(
            f"{path}: needs columns t_send_ns and t_recv_ns, or latency_ns (a unit suffix _us, _ms, _s "
            "or --unit for other units; --time-column for send times beside a latency); "
            f"columns seen: {', '.join(header) or 'none'}: --latency-column NAME[:UNIT] names the latency"
        )
    if "t_send" not in layout:
        times = [n for n in header if _column_unit(n)[0].strip().lower() in TIME_NAMES]
        if times:
            unit = _column_unit(times[0])[1] or "s"
            raise JitterlabError(
                f"{path}: column '{times[0]}' looks like the send times: give --time-column {times[0]}:{unit} "
                "(its unit: ns, us, ms or s), or rename it to import latencies without times"
            )
    return layout


def _exact_ns(table: pa.Table, name: str, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values in ns as int64, finite mask, whole-nanoseconds mask) of a column. Integers in
    ns are taken as they are; anything else is converted from its decimal text exactly
    (12.345 µs is 12 345 ns); digits below a nanosecond are rounded to the nearest one
    (12.3456 µs is 12 346 ns, and the mask says it was not whole)."""
    column = table.column(name)
    n = table.num_rows
    if unit == "ns" and pa.types.is_integer(column.type) and column.null_count == 0:
        values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
        ones = np.ones(n, dtype=bool)
        return values, ones, ones
    scale = UNITS_NS[unit]
    digits = len(str(scale)) - 1
    out = np.zeros(n, dtype=np.int64)
    finite = np.zeros(n, dtype=bool)
    whole = np.zeros(n, dtype=bool)
    try:
        cells = pa.compute.cast(column, pa.string()).to_pylist()
    except pa.ArrowInvalid:  # bytes that are not UTF-8: such a cell is no number
        cells = [None if c is None else bytes(c).decode("utf-8", "replace") for c in column.to_pylist()]
    for i, cell in enumerate(cells):
        if cell is None:
            continue
        m = _DECIMAL.fullmatch(cell)
        try:
            if m and (m.group(2) or m.group(3)):
                sign, integer, fraction = m.group(1), m.group(2) or "0", m.group(3) or ""
                kept, rest = fraction[:digits], fraction[digits:]
                value = int(integer) * scale + int(kept.ljust(digits, "0") or "0")
                value += 1 if rest[:1] >= "5" else 0  # rounded to the nearest ns (half away from 0)
                finite[i], whole[i] = True, not rest.strip("0")
            else:
                exact = decimal.Decimal(cell.strip()) * scale
                if not exact.is_finite():
                    continue
                value = int(abs(exact).to_integral_value(rounding=decimal.ROUND_HALF_UP))
                finite[i], whole[i] = True, exact == exact.to_integral_value()
                sign = "-" if exact < 0 else ""
        except (decimal.InvalidOperation, ValueError):
            continue
        if value >= 2**62:
            out[i], whole[i] = 2**62, True  # out of range: refused below
            continue
        out[i] = -value if sign == "-" else value
    return out, finite, whole


class TimeUnitUnknown(JitterlabError):
    """A time column in no stated unit holds fractions of a nanosecond: seconds, likely."""


def _validate_rows(
    table: pa.Table, layout: dict[str, _Column], offset: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, str] | None, int]:
    """(keep mask, t_send, t_recv, first problem as (row, why), values rounded to the
    nanosecond) in ns of a batch of the CSV's rows, ``offset`` rows into the file. A send
    time in no stated unit with fractions of a nanosecond is refused (:class:`TimeUnitUnknown`):
    epoch seconds read as ns would be no times at all."""
    n = table.num_rows
    values: dict[str, np.ndarray] = {}
    problems: list[tuple[np.ndarray, str]] = []
    rounded = 0
    for role, column in layout.items():
        v, finite, whole = _exact_ns(table, column.name, column.unit)
        values[role] = v
        problems.append((~finite, f"{column.name} is not a finite number"))
        fractions = finite & ~whole
        if role == "t_send" and column.defaulted and fractions.any():
            raise TimeUnitUnknown(
                f"column '{column.name}' holds fractions of a nanosecond (row {int(np.flatnonzero(fractions)[0]) + offset + 1}: "
                f"{table.column(column.name)[int(np.flatnonzero(fractions)[0])]}): give its unit, "
                f"e.g. --time-column {column.name}:s"
            )
        rounded += int(fractions.sum())
        problems.append((finite & (v < 0), f"{column.name} is negative"))
        problems.append((finite & (np.abs(v) >= 2**62), f"{column.name} is out of range"))
    if "latency" in values:
        latency = values["latency"]
        if "t_send" not in values:
            values["t_send"] = np.arange(offset, offset + n, dtype=np.int64)
        values["t_recv"] = values["t_send"] + np.where(np.abs(latency) < 2**62, latency, 0)
    else:
        latency = values["t_recv"] - values["t_send"]
        problems.append(
            (
                values["t_recv"] < values["t_send"],
                f"{layout['t_recv'].name} is before {layout['t_send'].name}",
            )
        )
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
    return ~bad, values["t_send"], values["t_recv"], first, int(rounded)


def _send_steps(samples: Path, pair: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(steps between one pair's consecutive send times, the 0-based row of each step's
    later sample) of a samples file, batch by batch."""
    last: tuple[int, int] | None = None  # (row, t_send) of the pair's last sample so far
    offset = 0
    with pq.ParquetFile(samples, pre_buffer=False) as f:  # pre-buffering keeps every row group read
        for batch in f.iter_batches(batch_size=READ_BATCH_ROWS, columns=["pair", "t_send_ns"]):
            rows = np.flatnonzero(batch.column(0).to_numpy() == pair)
            t = batch.column(1).to_numpy()[rows]
            rows += offset
            offset += batch.num_rows
            if last is not None:
                rows, t = np.concatenate([[last[0]], rows]), np.concatenate([[last[1]], t])
            if rows.size:
                last = (int(rows[-1]), int(t[-1]))
            yield np.diff(t), rows[1:]


def _time_warnings(path: Path, name: str, samples: Path, pairs: list[int], warn: Warn) -> list[str]:
    """Send times that go backwards, and gaps longer than ten times the usual spacing (the
    median forward step), read back from the stored samples in bounded memory."""
    notes: list[str] = []
    for p in pairs:
        where = f" (pair {p})" if len(pairs) > 1 else ""
        backwards, first_back = 0, -1
        for step, rows in _send_steps(samples, p):
            back = np.flatnonzero(step < 0)
            if back.size and first_back < 0:
                first_back = int(rows[back[0]])
            backwards += int(back.size)
        if backwards:
            notes.append(f"{name} goes backwards {backwards:,} time(s){where}, first at row {first_back + 1}")

        def forward(p: int = p) -> Iterator[np.ndarray]:
            return (step[step >= 0] for step, _ in _send_steps(samples, p))

        usual = float(percentiles_of_scan(LocalScan(forward), (50.0,))[0])  # NaN: no step
        if usual > 0:
            gaps, widest, widest_row = 0, -1, -1
            for step, rows in _send_steps(samples, p):
                wide = np.flatnonzero(step > 10 * usual)
                gaps += int(wide.size)
                if wide.size and int(step[wide].max()) > widest:
                    at = int(wide[np.argmax(step[wide])])
                    widest, widest_row = int(step[at]), int(rows[at])
            if gaps:
                notes.append(
                    f"{gaps:,} gap(s) in {name} longer than 10× the usual spacing ({format_ns(usual)}){where}; "
                    f"the widest, {format_ns(float(widest))}, before row {widest_row + 1}"
                )
    for note in notes:
        warn(CodedWarning("time-irregular", f"{path}: {note}"))
    return notes


def _leading_junk(path: Path) -> tuple[int, str]:
    """(bytes before the header, what they are): NULs from a damaged capture, a byte-order mark."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if head.startswith(b"\xef\xbb\xbf"):
        return 3, "a UTF-8 byte-order mark"
    stripped = head.lstrip(b"\x00")
    if len(stripped) < len(head):
        return len(head) - len(stripped), "NUL bytes"
    return 0, ""


def import_csv(
    path: Path,
    store: ResultsStore,
    options: ImportOptions = ImportOptions(),
    warn: Warn = lambda _: None,
) -> Run:
    """Store a CSV of samples: columns t_send and t_recv (optionally pair, seq), or latency
    alone (then send times are the row number, unless --time-column names them). Column
    names carry their unit (``latency_us``, ``t_send_ns``, ``latency (ms)``), else --unit
    (default ns). Every value must be a whole, non-negative number of nanoseconds once
    converted, with t_recv ≥ t_send and a latency under a day; a row that is not is refused
    with its line number, or dropped and counted with ``skip_invalid``. Bytes before the
    header are reported and skipped; send times that go backwards or jump are reported.

    Streams: pyarrow's CSV reader hands over blocks of rows, each checked and written as
    row groups of the run's samples file; the figures are read back from that file. Memory
    does not grow with the file."""
    junk, kind = _leading_junk(path)
    try:
        with open(path, "rb") as raw:
            raw.seek(junk)
            header = next(csv.reader([raw.readline().decode("utf-8")]))
    except (OSError, StopIteration, UnicodeDecodeError, csv.Error) as e:
        raise JitterlabError(f"{path}: cannot read CSV ({e})") from e
    if junk:
        warn(
            CodedWarning(
                "leading-junk", f"{path}: {junk} bytes before the header ({kind}); read from the header on"
            )
        )
    layout = _csv_layout(path, header, options)
    meta = _import_meta(store, path, "csv")
    staging = store.staging_dir(meta["id"], lock=True)
    meta["id"] = staging.name
    try:
        try:
            writer, skipped, pairs = _write_csv(
                path, junk, header, layout, options, staging, meta["id"], warn, False
            )
        except _Retype:  # a later block is not what the first suggested: read every cell as text
            writer, skipped, pairs = _write_csv(
                path, junk, header, layout, options, staging, meta["id"], warn, True
            )
        _sample_config(path, meta, writer, skipped, pairs, layout, options, warn)
        if junk:
            meta["config"]["leading_junk"] = f"{junk} bytes before the header ({kind})"
        return store.publish_samples(staging, meta, writer)
    except BaseException:
        store.discard_staging(staging)
        raise


def import_table_batches(
    path: Path,
    header: list[str],
    tables: Iterable[pa.Table],
    store: ResultsStore,
    options: ImportOptions,
    warn: Warn,
    kind: str,
    technique: str | None = None,
) -> Run:
    """A file of samples read as tables of rows (Parquet, Arrow, a PresentMon CSV): the
    columns and their checks as :func:`import_csv`'s, streamed the same way."""
    layout = _csv_layout(path, header, options)
    meta = _import_meta(store, path, kind)
    if technique:
        meta["config"]["technique"] = technique
    staging = store.staging_dir(meta["id"], lock=True)
    meta["id"] = staging.name
    try:
        writer, skipped, pairs = _write_tables(
            path, header, tables, layout, options, staging, meta["id"], warn
        )
        _sample_config(path, meta, writer, skipped, pairs, layout, options, warn)
        return store.publish_samples(staging, meta, writer)
    except BaseException:
        store.discard_staging(staging)
        raise


def _sample_config(
    path: Path,
    meta: dict[str, Any],
    writer: SampleWriter,
    skipped: int,
    pairs: list[int],
    layout: dict[str, _Column],
    options: ImportOptions,
    warn: Warn,
) -> None:
    """What an import of samples records in run.json's config, and its time warnings (said
    once the file is read: a refused file prints its one error line only)."""
    if "t_send" not in layout:
        warn(
            CodedWarning(
                "import-assumed",
                f"{path}: no send times: the samples are placed 1 ns apart by row, so time windows and "
                "plots over time mean nothing (--time-column NAME[:UNIT] names a column of times)",
            )
        )
    meta["config"]["samples"] = writer.rows
    meta["config"]["rows_skipped"] = skipped
    meta["config"]["units"] = {role: c.unit for role, c in layout.items()}
    if options.time_column is not None:
        meta["config"]["time_column"] = layout["t_send"].name
    if options.latency_column is not None:
        meta["config"]["latency_column"] = layout["latency"].name
    if "t_send" in layout:
        notes = _time_warnings(path, layout["t_send"].name, writer.path, pairs, warn)
        if notes:
            meta["config"]["time_problems"] = notes
    if options.expected_interval_ns:
        meta["config"]["expected_interval_ns"] = options.expected_interval_ns
        corrected = corrected_figures(latency_chunks(writer.path), options.expected_interval_ns)
        meta["summary"] = {"latency_corrected_ns": corrected}


class _Retype(Exception):
    """A block of the CSV does not parse as the types inferred from the first."""


def _write_csv(
    path: Path,
    junk: int,
    header: list[str],
    layout: dict[str, _Column],
    options: ImportOptions,
    staging: Path,
    run_id: str,
    warn: Warn,
    as_text: bool,
) -> tuple[SampleWriter, int, list[int]]:
    """The CSV's valid rows written to the samples file in ``staging``, block by block:
    (the closed writer, rows skipped, the pairs seen)."""
    columns = set(header)
    wanted = [*(c.name for c in layout.values()), *(n for n in ("pair", "seq") if n in columns)]
    convert = pacsv.ConvertOptions(
        include_columns=wanted, column_types={n: pa.string() for n in wanted} if as_text else None
    )
    with open(path, "rb") as raw:
        raw.seek(junk)

        def tables() -> Iterator[pa.Table]:
            reader = pacsv.open_csv(
                raw, read_options=pacsv.ReadOptions(block_size=READ_BLOCK_BYTES), convert_options=convert
            )
            for batch in reader:
                yield pa.Table.from_batches([batch])

        try:
            return _write_tables(
                path,
                header,
                tables(),
                layout,
                options,
                staging,
                run_id,
                warn,
                lambda row: f"line {_line_of_row(path, junk, row)}",
            )
        except pa.ArrowInvalid as e:
            if not as_text and "conversion error" in str(e):
                raise _Retype from e
            raise JitterlabError(f"{path}: cannot read CSV ({e})") from e


def _write_tables(
    path: Path,
    header: list[str],
    tables: Iterable[pa.Table],
    layout: dict[str, _Column],
    options: ImportOptions,
    staging: Path,
    run_id: str,
    warn: Warn,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
) -> tuple[SampleWriter, int, list[int]]:
    """The valid rows of ``tables`` (a file's rows in order, batch by batch) written to the
    samples file in ``staging``: (the closed writer, rows skipped, the pairs seen).
    ``where`` names a 0-based row for a message (a CSV's line)."""
    columns = set(header)
    rows_in, skipped, rounded, pairs = 0, 0, 0, set[int]()
    first: tuple[int, str] | None = None
    with SampleWriter(staging / SAMPLES_FILE, run_id) as writer:
        for table in tables:
            try:
                keep, t_send, t_recv, bad, r = _validate_rows(table, layout, rows_in)
            except TimeUnitUnknown as e:
                raise JitterlabError(f"{path}: {e}") from None
            rounded += r
            if bad is not None:
                skipped += int((~keep).sum())
                first = first or (bad[0] + rows_in, bad[1])
            if first is None or options.skip_invalid:
                pair_seq = {}
                for name in ("pair", "seq"):
                    if name in columns:
                        v = _numbers(table, name)[keep]
                        if not (
                            np.isfinite(v).all()
                            and (v == np.round(v)).all()
                            and (v >= 0).all()
                            and (v < 2**31).all()
                        ):
                            raise JitterlabError(f"{path}: column {name} must hold non-negative integers")
                        pair_seq[name] = v.astype(np.int64)
                n = int(keep.sum())
                pair = pair_seq.get("pair", np.zeros(n, np.int64))
                pairs.update(int(p) for p in np.unique(pair))
                seq = pair_seq.get("seq", np.arange(writer.rows, writer.rows + n, dtype=np.int64))
                writer.write(pair, seq, t_send[keep], t_recv[keep])
            rows_in += table.num_rows
        if rounded:
            warn(
                CodedWarning(
                    "import-assumed",
                    f"{path}: {rounded:,} value(s) had digits below a nanosecond: rounded to the nearest ns",
                )
            )
        if first is not None:
            at = where(first[0])
            if not options.skip_invalid:
                raise JitterlabError(
                    f"{path}: {at}: {first[1]} ({skipped:,} invalid rows; --skip-invalid drops and counts them)"
                )
            warn(
                CodedWarning(
                    "rows-skipped",
                    f"{path}: skipped {skipped:,} invalid rows (first: {at}, {first[1]})",
                )
            )
        if writer.rows == 0:
            raise JitterlabError(f"{path}: no samples (a header and no valid rows)")
    return writer, skipped, sorted(pairs)


def _line_of_row(path: Path, junk: int, row: int) -> int:
    """The file's line number (1-based, the header is line 1) of data row ``row`` (0-based):
    the CSV reader skips blank lines, so rows and lines part where a file has them."""
    with open(path, "rb") as f:
        f.seek(junk)
        f.readline()  # the header
        line, seen = 1, -1
        for raw in f:
            line += 1
            if raw.strip(b"\r\n"):
                seen += 1
                if seen == row:
                    return line
    return row + 2


def _numbers(table: pa.Table, name: str) -> np.ndarray:
    """A column as float64, each row a number (NaN where the text is not one)."""
    column = table.column(name)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    out = np.empty(table.num_rows, dtype=np.float64)
    for i, cell in enumerate(column.to_pylist()):
        try:
            out[i] = float(cell) if cell is not None else np.nan
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def import_file(
    path: Path,
    store: ResultsStore,
    options: ImportOptions = ImportOptions(),
    warn: Warn = lambda _: None,
) -> Run:
    """Store ``path`` as a run, by its suffix (.hlog or .csv)."""
    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    if path.suffix == ".hlog":
        if options.time_column is not None or options.latency_column is not None:
            raise JitterlabError(
                "--time-column and --latency-column are for CSV files (an hlog's intervals carry their times)"
            )
        return import_hlog(path, store, options, warn)
    if path.suffix == ".csv":
        for name, value in (("--tag", options.tag), ("--from", options.from_s), ("--to", options.to_s)):
            if value is not None:
                raise JitterlabError(f"{name} is for HdrHistogram logs (.hlog), not CSV files")
        return import_csv(path, store, options, warn)
    raise JitterlabError(
        f"{path}: import reads .hlog (HdrHistogram log), .csv, .parquet, .arrow and .hgrm files, "
        "PresentMon CSV and cyclictest histograms (-h/--histfile, --json)"
    )
