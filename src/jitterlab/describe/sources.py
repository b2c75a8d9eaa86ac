"""Tables split by source, and several runs described as one union (issue 25 item 4).

* A run made by ``jitterlab merge`` from sample runs keeps each sample's source in the
  ``source`` column of its samples file. :func:`source_table` reads that file in row
  groups and gives, after the union's row, one row per source: count, p50, p99, p99.9,
  max and its count in each of the union's outlier categories. The passes are grouped by
  the source column (:mod:`jitterlab.stats.groups`): one pass for counts, extremes and
  categories, and the refinement passes of the exact percentiles shared by every source;
  memory does not depend on the run's size.
* ``describe RUN RUN… --union`` and ``report RUN… --union`` describe the runs as the one
  run ``merge`` would make of them, without storing it (:func:`describe_union`): the same
  compatibility check as merge (units, clocks), the samples of every run read one file
  after the other, each run's times counted from its own first send (as merge moves
  them), the exact summary, the stacked z-score categories and the windows of the union,
  then the same per-source table with one row per run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.percentiles import is_resolved
from jitterlab.stats import StackedResult, Summary
from jitterlab.stats.groups import group_extent, group_percentiles
from jitterlab.stats.outofcore import stacked_z_scan, time_windows_scan
from jitterlab.stats.quantile_ci import intervals_of_scan
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import SUMMARY_PERCENTILES, summarize_chunks
from jitterlab.store import Run
from jitterlab.store.reader import has_column, latency_by_column, latency_chunks, timed_latency_chunks
from jitterlab.store.runs import verified_samples_path

SOURCE_PERCENTILES = (50.0, 99.0, 99.9)
UNION_ID = "union"


@dataclass(frozen=True)
class SourceRow:
    """One source's figures (ns) and its count in each of the union's categories."""

    name: str
    count: int
    p50: float
    p99: float
    p99_9: float
    max: float
    category_counts: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.name,
            "count": self.count,
            # None where the source's count does not resolve the level (docs/statistics.md)
            "p50_ns": _num(self.p50) if is_resolved(self.count, 50.0) else None,
            "p99_ns": _num(self.p99) if is_resolved(self.count, 99.0) else None,
            "p99_9_ns": _num(self.p99_9) if is_resolved(self.count, 99.9) else None,
            "max_ns": _num(self.max),
            "category_counts": list(self.category_counts),
        }


@dataclass(frozen=True)
class SourceTable:
    """The union's row, then one row per source; ``column`` says what a source is (the
    merged run's ``source`` column, or a run of a ``--union``)."""

    column: str
    categories: tuple[int, ...]  # category indices, the order of every row's counts
    union: SourceRow
    rows: tuple[SourceRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "categories": list(self.categories),
            "union": self.union.to_dict(),
            "rows": [r.to_dict() for r in self.rows],
        }


def _num(v: float) -> float | None:
    return None if not np.isfinite(v) else float(v)


def merged_source_names(run: Run) -> list[str] | None:
    """The source names of a run merged from sample runs (index order), else None."""
    block = run.meta.get("merge") or {}
    if block.get("kind") != "samples":
        return None
    sources = sorted(block.get("sources") or [], key=lambda s: int(s.get("index", 0)))
    return [str(s.get("name") or s.get("id") or f"source {i}") for i, s in enumerate(sources)]


def source_chunks(path: Path, column: str = "source") -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(latency, source) of a merged run's samples file, batch by batch."""
    yield from latency_by_column(path, column)


def union_chunks(paths: Sequence[Path]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(latency, run index) of several samples files read one after the other."""
    for i, path in enumerate(paths):
        for x in latency_chunks(path):
            yield x, np.full(x.size, i, np.int64)


def union_latency(paths: Sequence[Path]) -> Iterator[np.ndarray]:
    """The latencies of several samples files read one after the other."""
    for path in paths:
        yield from latency_chunks(path)


def union_timed(paths: Sequence[Path], starts: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(send time since that run's first send, latency) of several samples files: the times
    ``merge`` would store."""
    for path, start in zip(paths, starts, strict=True):
        for send, latency in timed_latency_chunks(path):
            yield send - start, latency


def grouped_table(
    scan: LocalScan, names: Sequence[str], summary: Summary, categories: StackedResult, column: str
) -> SourceTable:
    """The per-source table of a grouped scan ((latency, group) chunks), with the union's
    row from its exact ``summary`` and ``categories``."""
    result = categories
    extent = group_extent(scan, len(names), result.thresholds, result.low_threshold)
    p = group_percentiles(scan, extent, SOURCE_PERCENTILES)
    first = -1 if result.low_threshold is not None else 0
    indices = tuple(c.index for c in result.categories)
    slots = [i - first for i in indices]
    rows = []
    for g, name in enumerate(names):
        n = int(extent.count[g])
        rows.append(
            SourceRow(
                name,
                n,
                float(p[g, 0]),
                float(p[g, 1]),
                float(p[g, 2]),
                float(extent.highest[g]) if n else float("nan"),
                tuple(int(extent.by_slot[g, s]) for s in slots),
            )
        )
    union = SourceRow(
        "(union)",
        summary.count,
        summary.p50,
        summary.p99,
        summary.p99_9,
        summary.max,
        tuple(int(c.count) for c in result.categories),
    )
    return SourceTable(column, indices, union, tuple(rows))


def source_table(run: Run, summary: Summary, categories: StackedResult) -> SourceTable | None:
    """The per-source table of a run merged from sample runs (None for any other run): read
    in row groups, or from the samples in memory when the run holds them (the report's
    small runs, a --from/--to range)."""
    names = merged_source_names(run)
    if names is None:
        return None
    column = str((run.meta.get("merge") or {}).get("column") or "source")
    if run.loaded:
        if column not in run.table.column_names:
            return None
        chunk = (run.latency_ns, run.column(column))
        return grouped_table(LocalScan(lambda: [chunk]), names, summary, categories, column)
    path = verified_samples_path(run)
    if not has_column(path, column):
        return None
    return grouped_table(LocalScan(lambda: source_chunks(path, column)), names, summary, categories, column)


# --- several runs as one union ---------------------------------------------------------


@dataclass(frozen=True)
class Union:
    """Several sample runs checked alike and read as one sample."""

    runs: tuple[Run, ...]
    paths: tuple[Path, ...]
    starts: tuple[int, ...]  # each run's first send (its times count from it)
    names: tuple[str, ...]

    def latency(self) -> LocalScan:
        return LocalScan(lambda: union_latency(self.paths))

    def timed(self) -> LocalScan:
        return LocalScan(lambda: union_timed(self.paths, self.starts))

    def grouped(self) -> LocalScan:
        return LocalScan(lambda: union_chunks(self.paths))


def open_union(runs: Sequence[Run], verb: str = "--union") -> Union:
    """The runs as one union: refused in one line, as ``merge`` refuses them, when their
    units or clocks differ (merge's own check), or when one holds a histogram only."""
    from jitterlab.store.merge import check_alike, first_send, run_sources

    if len(runs) < 2:
        raise JitterlabError(f"{verb} needs at least two runs")
    for run in runs:
        if run.histogram_only:
            raise JitterlabError(
                f"{verb}: run {run.id} holds a histogram only; the union of histograms is "
                "'jitterlab merge RUN… --as NAME'"
            )
        if run.loaded:
            raise JitterlabError(f"{verb} describes whole stored runs: drop --from/--to")
    if len({r.id for r in runs}) < len(runs):
        raise JitterlabError(f"{verb}: a run is named twice")
    sources = run_sources(runs)
    check_alike(sources, verb)
    paths = tuple(verified_samples_path(r) for r in runs)
    starts = tuple(first_send(p) for p in paths)
    return Union(tuple(runs), paths, starts, tuple(s.name for s in sources))


def union_run(union: Union) -> Run:
    """A run record standing for the union (not stored): its id, label and configuration."""
    first = union.runs[0]
    ids = [r.id for r in union.runs]
    meta = {
        "id": f"{UNION_ID}({', '.join(ids)})",
        "status": "partial" if any(r.partial for r in union.runs) else "complete",
        "partial_reason": "a run of the union is partial" if any(r.partial for r in union.runs) else "",
        "config": {
            "runtime": "union",
            "technique": f"union of {len(ids)} runs",
            "pairs": max(int(r.config.get("pairs") or 1) for r in union.runs),
            "policy": first.config.get("policy", "other"),
        },
        "union": {"runs": ids, "time": "each run's times count from its own first send"},
    }
    return Run(first.path, meta)


def describe_union(
    union: Union, window_ns: int = 1_000_000_000, two_sided: bool = False, threshold: float = 3.5
) -> tuple[Any, SourceTable]:
    """The union described as one run (stacked z-score test; exact summary, categories and
    windows, as ``describe`` of the merged run gives them) and its per-run table."""
    from jitterlab.describe.analysis import RunDescription

    summary = summarize_chunks(lambda: union_latency(union.paths))
    if summary.count == 0:
        raise JitterlabError("--union: the runs hold no samples")
    categories = stacked_z_scan(union.latency(), threshold, two_sided)
    windows = time_windows_scan(union.timed(), window_ns, categories)
    # the union's percentiles with their intervals, as describe gives a run's (time blocks
    # over each run's time from its own first send)
    intervals = intervals_of_scan(
        union.latency(),
        union.timed(),
        (*SUMMARY_PERCENTILES, 100.0),
        (summary.count, int(summary.min), int(summary.max)),
    )
    d = RunDescription(
        union_run(union), summary, "stacked-z", categories, windows, None, None, intervals=tuple(intervals)
    )
    table = grouped_table(union.grouped(), union.names, summary, categories, "run")
    return d, table


def source_rows(table: SourceTable) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-source table (the union first), the same in the
    terminal and the report."""
    from jitterlab.core.units import format_ns
    from jitterlab.describe.tables import category_name, level_cell

    headers = [table.column, "count", "p50", "p99", "p99.9", "max"]
    headers += [f"cat {category_name(c)}" for c in table.categories]
    rows = []
    for r in (table.union, *table.rows):
        rows.append(
            [
                r.name,
                f"{r.count:,}",
                *(
                    level_cell(v, r.count, level)
                    for v, level in zip((r.p50, r.p99, r.p99_9), SOURCE_PERCENTILES, strict=True)
                ),
                format_ns(r.max),
                *(f"{c:,}" for c in r.category_counts),
            ]
        )
    return headers, rows


def source_caption(table: SourceTable) -> str:
    """What the per-source table shows."""
    what = (
        "run of the union" if table.column == "run" else f"source (the merged run's {table.column!r} column)"
    )
    return f"split by source: the union, then one row per {what}; categories of the union's test"
