"""Runs and HdrHistogram logs recorded on several hosts or at several times made into one
run (``jitterlab merge RUN… FILE.hlog… --as NAME``), streaming.

* **Sample runs only**: the samples of every source become one samples file, row group by
  row group (:class:`~jitterlab.store.writer.SampleWriter`), with an extra column ``source``
  (the source's index in run.json's ``merge.sources``) so every table can still split by
  it. Each source's times are moved to its own start (``t_send_ns − its first t_send_ns``,
  the same for ``t_recv_ns``; latencies are unchanged): the hosts' monotonic clocks are
  unrelated, so windows count from each source's own start. The stored summary is the
  union's, exact (:func:`~jitterlab.store.reader.summarize_file`).
* **Any HdrHistogram log or histogram-only run among the sources**: the result is a
  histogram run (said in ``merge.note``): a log whose untagged intervals are every source's
  intervals (HdrHistogram's union: the sum of the counts, exact as HdrHistogram is) and
  whose intervals tagged with the source's name are the same intervals per source. A sample
  run among them becomes intervals of :data:`SAMPLE_INTERVAL_S` recorded into HdrHistogram
  (3 significant digits, as Java's ``new Histogram(3)``). Interval times are offsets from
  each source's own start.
* Sources that differ in unit, clock or percentile definition are refused, naming the
  difference.
"""

from __future__ import annotations

import datetime as dt
import heapq
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import open_plain_file
from jitterlab.store.hdr.codec import to_base64
from jitterlab.store.hdr.histogram import Histogram
from jitterlab.store.hdr.log import LEGEND, LogReader, unit_named_in
from jitterlab.store.hdr.streams import UNITS_NS, figures, read_figures
from jitterlab.store.reader import LOCAL, Engine, column_chunks, column_names, first_send_ns
from jitterlab.store.runs import ResultsStore, Run, verified_samples_path
from jitterlab.store.schema import HISTOGRAM_FILE, SAMPLES_FILE, run_meta, safe_id_part
from jitterlab.store.writer import SampleWriter

HDR_DEFINITION = "hdrhistogram-java-2.2.2"
SAMPLE_DEFINITION = "type-7"  # docs/statistics.md: linear interpolation between closest ranks
SAMPLE_INTERVAL_S = 1.0  # a sample run merged into a histogram run: one interval per second
SOURCE_COLUMN = "source"


@dataclass
class Source:
    """One input of a merge: a stored run or an HdrHistogram log file."""

    index: int
    name: str  # unique among the sources: the tag of its intervals, the label in tables
    run: Run | None = None
    path: Path | None = None  # the log file (a histogram run's own, or one given)
    unit: str = "ns"
    clock: str | None = None
    definition: str = SAMPLE_DEFINITION
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def samples(self) -> bool:
        return self.run is not None and not self.run.histogram_only

    def describe(self) -> str:
        return f"run {self.run.id}" if self.run is not None else str(self.path)


def open_sources(store: ResultsStore, refs: Sequence[str]) -> list[Source]:
    """Each reference as a source: an existing ``.hlog`` file, else a run (path or id)."""
    if len(refs) < 2:
        raise JitterlabError("merge needs at least two runs or logs")
    sources: list[Source] = []
    for index, ref in enumerate(refs):
        path = Path(ref)
        if path.is_file() and path.suffix != ".json":
            sources.append(_log_source(index, path))
        else:
            from jitterlab.store.runs import load_run

            sources.append(_run_source(index, load_run(ref, store)))
    _tell_apart(sources)
    check_alike(sources)
    return sources


def _tell_apart(sources: list[Source]) -> None:
    """Make the sources' names unique (issue 43 item 2): each says what its source is (a
    run's name, else its technique, pairs and policy; a log's file name), and only sources
    that are truly alike by that are told apart, a run by the last part of its id (the
    whole id when that is not enough), a log by its position."""
    counts: dict[str, int] = {}
    for source in sources:
        counts[source.name] = counts.get(source.name, 0) + 1
    taken = {s.name for s in sources if counts[s.name] == 1}
    for source in sources:
        if counts[source.name] == 1:
            continue
        base = source.name
        if source.run is not None:
            tail = source.run.id.rsplit("-", 1)[-1]
            candidates = [f"{base}-{tail}", f"{base}-{source.run.id}", source.run.id]
        else:
            candidates = [f"{base}-{source.index + 1}"]
        name = next((c for c in candidates if safe_id_part(c) == c and c not in taken), None)
        n = 2
        while name is None or name in taken:
            name = f"{safe_id_part(candidates[0])[:44]}-{n}"
            n += 1
        source.name = name
        taken.add(name)
        if source.run is not None:  # the label says which one too
            source.info["label"] = f"{source.info['label']} [{source.run.id}]"


def _log_source(index: int, path: Path) -> Source:
    unit = None
    try:
        with open(path, "rb") as f:
            for raw in f:
                text = raw.decode("utf-8", "replace").strip("\x00\ufeff\r\n ")
                if text and not text.startswith(("#", '"StartTimestamp"')):
                    break
                unit = unit or unit_named_in(text)
    except OSError as e:
        raise JitterlabError(f"{path}: cannot read ({e.strerror or e})") from None
    name = safe_id_part(path.stem) or f"log{index}"
    info = {"kind": "hlog", "file": str(path.resolve()), "unit": unit or "ns"}
    return Source(index, name, path=path, unit=unit or "ns", definition=HDR_DEFINITION, info=info)


def _run_source(index: int, run: Run) -> Source:
    host = str((run.meta.get("environment") or {}).get("host") or "")
    # what it is (its name, else technique ×pairs policy), never the host: two runs of one
    # host are told apart by what they are, not "vm, vm-2" (issue 43 item 2); a tag of the
    # merged log, so in the characters of an id: "mutex-x1-other"
    name = safe_id_part(run.name or run.what.replace(" ×", "-x").replace(" ", "-")) or f"run{index}"
    info: dict[str, Any] = {"kind": "run", "id": run.id, "host": host or None, "label": run.label}
    if run.histogram_only:
        h = run.meta["histogram"]
        unit = str(h.get("source_unit") or h.get("unit") or "ns")
        path = run.path / str(h.get("file", HISTOGRAM_FILE))
        definition = str(h.get("percentile_definition", HDR_DEFINITION))
        return Source(index, name, run, path, unit, None, definition, info)
    samples = run.meta.get("samples") or {}
    return Source(
        index, name, run, None, str(samples.get("unit", "ns")), samples.get("clock"), SAMPLE_DEFINITION, info
    )


def run_sources(runs: Sequence[Run]) -> list[Source]:
    """Stored runs as the sources of a merge (or of a ``--union``), in order, each named by
    what it is (told apart by id only when alike)."""
    sources = [_run_source(index, run) for index, run in enumerate(runs)]
    _tell_apart(sources)
    return sources


def check_alike(sources: list[Source], verb: str = "merge") -> None:
    """Refuse sources whose values cannot be pooled: one line naming the difference
    (``verb``: the command refusing, as the line starts)."""
    first = sources[0]
    for s in sources[1:]:
        if s.unit != first.unit:
            raise JitterlabError(
                f"{verb}: {first.describe()} is in {first.unit}, {s.describe()} in {s.unit}: "
                "different units are not merged (import the log with --unit first)"
            )
    clocked = [s for s in sources if s.clock is not None]
    for s in clocked[1:]:
        if s.clock != clocked[0].clock:
            raise JitterlabError(
                f"{verb}: {clocked[0].describe()} was timed with {clocked[0].clock}, "
                f"{s.describe()} with {s.clock}: different clocks are not merged"
            )
    histograms = [s for s in sources if not s.samples]
    for s in histograms[1:]:
        if s.definition != histograms[0].definition:
            raise JitterlabError(
                f"{verb}: {histograms[0].describe()} defines percentiles as {histograms[0].definition}, "
                f"{s.describe()} as {s.definition}: different percentile definitions are not merged"
            )
    if histograms and histograms[0].definition != HDR_DEFINITION:
        raise JitterlabError(
            f"{verb}: {histograms[0].describe()} defines percentiles as {histograms[0].definition}, "
            f"not {HDR_DEFINITION}: not merged"
        )


def merge(
    store: ResultsStore,
    refs: Sequence[str],
    name: str,
    note: Callable[[str], None] = lambda _: None,
    engine: Engine = LOCAL,
) -> Run:
    """One run from ``refs`` (runs and ``.hlog`` files), stored as ``name`` (see the module
    docstring); ``note`` hears that a mixed merge gives a histogram run. ``engine`` runs the
    passes over sample files (the union's summary, the sample runs' interval histograms):
    here, or on a cluster's workers (jitterlab.cluster.engine) with the same results."""
    sources = open_sources(store, refs)
    run_id = store.new_run_id("merge", name)
    now = dt.datetime.now(dt.timezone.utc)
    meta = run_meta(
        run_id,
        now,
        environment=None,
        doctor=None,
        config={
            "runtime": "merge",
            "technique": name,
            "pairs": 1,
            "policy": "unknown",
            "source_format": "merge",
            "source": _sources_text(sources),
        },
        obtained={},
        floor={},
        timing={},
    )
    staging = store.staging_dir(run_id, lock=True)
    meta["id"] = staging.name
    if not all(readable_by_everyone(s) for s in sources):
        store.keep_private(staging)
    try:
        if all(s.samples for s in sources):
            return _merge_samples(store, staging, meta, sources, engine)
        if any(s.samples for s in sources):
            note(
                "merge: the sources mix raw samples and HdrHistograms: the result is a histogram run "
                f"(samples recorded into HdrHistogram, 3 significant digits, {SAMPLE_INTERVAL_S:g} s intervals)"
            )
        return _merge_histograms(store, staging, meta, sources, engine)
    except BaseException:
        store.discard_staging(staging)
        raise


def readable_by_everyone(source: Source) -> bool:
    """Whether every user may read ``source``: its run folder (entered and listed) and its
    data file, or the log file, are readable by others. A merge of anything less is
    published private (0700): root merging a private run never hands its samples out."""
    try:
        if source.run is not None:
            if os.stat(source.run.path).st_mode & 0o005 != 0o005:
                return False
            info = source.run.meta.get("samples") or {}
            name = str(info.get("file", SAMPLES_FILE)) if source.samples else str(source.path)
            return bool(os.stat(source.run.path / name).st_mode & 0o004)
        assert source.path is not None
        return bool(os.stat(source.path).st_mode & 0o004)
    except OSError:
        return False


def _sources_text(sources: list[Source]) -> str:
    runs = sum(s.run is not None for s in sources)
    logs = len(sources) - runs
    parts = [
        f"{runs} run{'s' * (runs != 1)}" if runs else "",
        f"{logs} log{'s' * (logs != 1)}" if logs else "",
    ]
    return (
        " and ".join(p for p in parts if p)
        + f" ({', '.join(s.name for s in sources[:4])}{', …' if len(sources) > 4 else ''})"
    )


def first_send(path: Path) -> int:
    """The earliest t_send_ns of a samples file (0 when it has none): the reader's, from
    the row groups' statistics."""
    return first_send_ns(path) or 0


def _merge_samples(
    store: ResultsStore, staging: Path, meta: dict[str, Any], sources: list[Source], engine: Engine
) -> Run:
    paths = [verified_samples_path(s.run) for s in sources if s.run is not None]
    extras = [
        [c for c in column_names(p) if c not in {"pair", "seq", "t_send_ns", "t_recv_ns"}] for p in paths
    ]
    common = [c for c in extras[0] if all(c in e for e in extras[1:]) and c != SOURCE_COLUMN]
    wanted = ["pair", "seq", "t_send_ns", "t_recv_ns", *common]
    with SampleWriter(staging / SAMPLES_FILE, meta["id"], (*common, SOURCE_COLUMN)) as writer:
        for source, path in zip(sources, paths, strict=True):
            start = first_send(path)
            rows = 0
            for chunk in column_chunks(path, wanted):
                col = dict(zip(wanted, chunk, strict=True))
                n = len(col["seq"])
                rows += n
                writer.write(
                    col["pair"],
                    col["seq"],
                    col["t_send_ns"] - start,
                    col["t_recv_ns"] - start,
                    **{c: col[c] for c in common},
                    **{SOURCE_COLUMN: np.full(n, source.index, np.int64)},
                )
            source.info |= {"name": source.name, "start_ns": start, "rows": rows}
    meta["config"]["pairs"] = max(int(s.run.config.get("pairs") or 1) for s in sources if s.run is not None)
    meta["merge"] = {
        "kind": "samples",
        "sources": [s.info | {"index": s.index} for s in sources],
        "column": SOURCE_COLUMN,
        "time": "each source's times count from its own first send (t_send_ns − start_ns)",
    }
    return store.publish_samples(staging, meta, writer, engine)


@dataclass(order=True)
class _Line:
    offset_s: float
    order: int  # the source's index, then its line: a stable order for equal offsets
    line: int
    length_s: float = field(compare=False)
    logged_max: str = field(compare=False)
    encoded: str = field(compare=False)


def _log_lines(source: Source) -> Iterator[_Line]:
    """The main stream of a log (untagged lines; a histogram run's own tag), as offsets
    from the log's StartTime, with each histogram as logged (not re-encoded)."""
    assert source.path is not None
    wanted = (source.run.meta["histogram"].get("tag") if source.run is not None else None) or None
    # a histogram run's own log is a plain file of its folder, never read through a link
    # (issue 42 item 5); a log named on the command line is the invoking user's to name
    opened = open_plain_file(source.path.parent, source.path.name) if source.run is not None else None
    with opened or open(source.path, "rb") as f:
        reader = LogReader(f, str(source.path))
        for interval in reader.intervals():
            if interval.tag != wanted:
                continue
            text = interval.raw.decode("utf-8").rstrip("\r\n")
            fields = text.split(",")
            if fields[0].startswith("Tag="):
                fields = fields[1:]
            yield _Line(
                interval.offset_s, source.index, interval.line, interval.length_s, fields[2], fields[3]
            )


def interval_values(
    chunk: tuple[np.ndarray, np.ndarray], start: int, step: int
) -> tuple[int, list[tuple[int, np.ndarray, np.ndarray]]]:
    """One timed chunk's smallest latency and, for each interval of ``step`` ns from
    ``start`` that it touches, its distinct latencies and their counts (nothing when a
    latency is negative)."""
    send, latency = chunk
    lowest = int(latency.min()) if latency.size else 0
    if lowest < 0:
        return lowest, []
    slot = (send - start) // step
    shares = []
    for k in np.unique(slot):
        values, counts = np.unique(latency[slot == k], return_counts=True)
        shares.append((int(k), values, counts))
    return lowest, shares


def _sample_lines(source: Source, engine: Engine = LOCAL) -> Iterator[_Line]:
    """A sample run's latencies recorded into one HdrHistogram per second of its own time."""
    assert source.run is not None
    path = verified_samples_path(source.run)
    start = first_send(path)
    step = int(SAMPLE_INTERVAL_S * 1e9)
    per_interval: dict[int, Histogram] = {}
    for lowest, shares in engine.timed(path).map(interval_values, start, step):
        if lowest < 0:
            raise JitterlabError(
                f"merge: run {source.run.id} has negative latencies: HdrHistogram cannot hold them"
            )
        for k, values, counts in shares:
            per_interval.setdefault(k, Histogram.auto(3)).record(values, counts)
    for k in sorted(per_interval):
        h = per_interval[k]
        yield _Line(
            k * SAMPLE_INTERVAL_S, source.index, k, SAMPLE_INTERVAL_S, f"{h.max / 1e6:.3f}", to_base64(h)
        )
    source.info |= {"start_ns": start}


def _merge_histograms(
    store: ResultsStore, staging: Path, meta: dict[str, Any], sources: list[Source], engine: Engine
) -> Run:
    streams = [_sample_lines(s, engine) if s.samples else _log_lines(s) for s in sources]
    names = {s.index: s.name for s in sources}
    counts = dict.fromkeys(names, 0)
    target = staging / HISTOGRAM_FILE
    with open(target, "w", encoding="utf-8") as out:
        out.write("#[Histogram log format version 1.3]\n")
        out.write(f"#jitterlab merge of {len(sources)} sources; values are in {sources[0].unit}\n")
        out.write("#untagged intervals: every source (the union); Tag=NAME: that source alone\n")
        out.write("#[StartTime: 0.000 (seconds since epoch), Thu Jan 01 00:00:00 UTC 1970]\n")
        out.write(LEGEND + "\n")
        for line in heapq.merge(*streams):
            fields = f"{line.offset_s:.3f},{line.length_s:.3f},{line.logged_max},{line.encoded}\n"
            out.write(fields)
            out.write(f"Tag={names[line.order]},{fields}")
            counts[line.order] += 1
        out.flush()
        os.fsync(out.fileno())
    scale = UNITS_NS[sources[0].unit]
    with open(target, "rb") as f:
        result = read_figures(f, str(target), scale=scale)
    if None not in result.streams:
        raise JitterlabError("merge: the sources hold no interval histograms")
    entries = []
    for tag, stream in result.streams.items():
        assert stream.whole is not None
        entries.append({"tag": tag, "intervals": stream.intervals, "summary": figures(stream.whole, scale)})
    union = result.streams[None].whole
    assert union is not None
    meta["histogram"] = {
        "format": "hlog",
        "intervals": result.kept,
        "kind": result.kind,
        "unit": "ns",
        "source_unit": sources[0].unit,
        "scale_ns": scale,
        "percentile_definition": HDR_DEFINITION,
        "start_time_s": 0.0,
        "base_time_s": None,
        "log_start_s": 0.0,
        "tag": None,
        "streams": entries,
        "expected_interval_ns": None,
        "windows": result.windows,
        "leading_junk": None,
    }
    meta["summary"] = {"latency_ns": figures(union, scale)}
    meta["config"]["samples"] = meta["summary"]["latency_ns"]["count"]
    mixed = any(s.samples for s in sources)
    meta["merge"] = {
        "kind": "histogram",
        "sources": [
            s.info | {"index": s.index, "name": s.name, "intervals": counts[s.index]} for s in sources
        ],
        "column": "tag",
        "note": (
            "sample runs were recorded into HdrHistogram (3 significant digits): the union's "
            "percentiles are HdrHistogram's, not the samples' exact ones"
            if mixed
            else "the union of HdrHistograms: exact as HdrHistogram is"
        ),
        "time": "interval times count from each source's own start",
    }
    return store.commit_histogram(staging, meta)
