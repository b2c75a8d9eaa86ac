"""Text for the terminal: what ``show``, ``describe``, ``hiccup`` and ``bench`` print,
built from the rows of :mod:`jitterlab.describe.tables` (the report shows the same rows).
"""

from __future__ import annotations

from typing import Any

from jitterlab.core.render import render
from jitterlab.core.tidy import counted
from jitterlab.core.units import format_count, format_ns
from jitterlab.describe.analysis import RunDescription, pauses_in_run
from jitterlab.describe.context import context_header
from jitterlab.describe.description import (
    Description,
    HistogramRunDescription,
    ShownRun,
    UnionDescription,
)
from jitterlab.describe.histograms import HistogramDescription
from jitterlab.describe.sources import SourceTable, source_caption, source_rows
from jitterlab.describe.tables import (
    ATTRIBUTION_HEADERS,
    CATEGORY_HEADERS,
    INTERVAL_HEADERS,
    INTERVAL_TABLE_HEADERS,
    attribution_caption,
    attribution_rows,
    category_name,
    category_rows,
    histogram_interval_rows,
    interval_caption,
    interval_rows,
    level_cell,
    stream_rows,
    summary_cells,
    untagged_name,
    window_start,
)
from jitterlab.stats.quantile_ci import QuantileInterval
from jitterlab.store import Run
from jitterlab.store.schema import samples_per_pair

WINDOW_ROWS = 20  # window rows `describe` prints; more are the first and last ten


def stored_line(run: Run) -> str:
    """The one line ``bench`` prints as each run is stored."""
    s = run.meta["summary"]["latency_ns"]
    count = int(s.get("count") or 0)  # a level the run does not resolve: "not resolved"
    p50, p99 = level_cell(s["p50"], count, 50.0), level_cell(s["p99"], count, 99.0)
    line = f"p50 {p50}  p99 {p99}  max {format_ns(s['max'])}"
    if "jvm" in run.meta:
        gc = [e["end_ns"] - e["start_ns"] for e in pauses_in_run(run) if e["kind"] == "gc-pause"]
        line += f"  GC pauses during the samples {len(gc)}" + (f" (max {format_ns(max(gc))})" if gc else "")
    if run.partial:
        line += f"  PARTIAL ({run.meta.get('partial_reason')})"
    return line


def show_text(run: Run, summary: dict[str, Any], intervals: list[QuantileInterval] | None = None) -> str:
    """``jitterlab show``: what the run is, its summary, its floor and obtained policy."""
    c = run.config
    partial = f"  [PARTIAL: {run.meta.get('partial_reason')}]" if run.partial else ""
    lines = [
        context_header([run]),
        f"run      {run.id}",
        f"what     {run.label}, {format_count(samples_per_pair(c) or 0)} samples per pair{partial}",
    ]
    headers, values = summary_cells(summary, intervals)
    lines.append(render(["latency", "value"], [list(pair) for pair in zip(headers, values, strict=True)]))
    floor = run.meta.get("floor") or {}
    clock = floor.get("clock_overhead_ns") or {}
    if clock:
        lines.append(f"floor    clock read {format_ns(clock.get('median'))}; {c2c_text(floor)}")
    obtained = run.meta.get("obtained") or {}
    if obtained.get("policies"):
        lines.append(
            f"obtained policy {', '.join(obtained['policies'])}; spin mode {obtained.get('spin_mode')}"
        )
    return "\n".join(lines)


def shown_text(shown: ShownRun) -> str:
    """``jitterlab show``'s terminal text of a shown run (:func:`describe.description.show`):
    what the run is, its summary, floor and policy, then every percentile with its interval."""
    intervals = list(shown.intervals)
    return "\n".join(
        [
            show_text(shown.run, shown.summary, intervals),
            interval_caption(intervals),
            render(
                INTERVAL_TABLE_HEADERS, interval_rows(intervals, int(shown.summary.get("count") or 0)), "lrll"
            ),
        ]
    )


def c2c_text(floor: dict[str, Any]) -> str:
    """The core-to-core floor a run met: measured before the run and, by newer harnesses,
    again after it (this VM's cross-core cost flips between regimes; both say which it met)."""
    c2c = floor.get("c2c_one_way_ns") or {}
    if not c2c.get("measured"):
        return f"core-to-core not measured ({c2c.get('skipped_reason')})"
    text = f"core-to-core one-way p50 {format_ns(c2c.get('median'))}"
    end = floor.get("c2c_end_one_way_ns") or {}
    if end.get("measured"):
        text += f" before the run, {format_ns(end.get('median'))} after it"
    return text + f" (CPUs {c2c.get('cpu_a')}↔{c2c.get('cpu_b')})"


PURE_CHANNEL_FLAGS = "--block-ints 0 --pin spread"


def floor_note(runs: list[Run]) -> str | None:
    """For native thread runs that are not pure-channel: which flags give the figure to read
    against the core-to-core floor (no shared-block access, sender and receiver on two CPUs)."""
    native = [r for r in runs if r.config.get("runtime") == "native" and "block_ints" in r.config]
    if not native:
        return None
    floors = [(r.meta.get("floor") or {}) for r in native]
    measured = [f for f in floors if (f.get("c2c_one_way_ns") or {}).get("measured")]
    met = f"the floor these runs met: {c2c_text(measured[-1])}. " if measured else ""
    if all(r.config.get("block_ints") == 0 and r.config.get("pin") == "spread" for r in native):
        return f"{met}These are pure-channel figures, comparable with it."
    return (
        f"{met}These latencies include the shared-block access of the protocol; "
        f"for the pure-channel figure comparable with the floor, run with {PURE_CHANNEL_FLAGS}."
    )


def attribution_text(block: dict[str, Any] | None) -> tuple[str, str]:
    """(stdout, stderr) text of a spike-attribution block; empty strings when there is none."""
    if block is None:
        return "", ""
    if not block.get("available"):
        return "", f"spike attribution: unavailable ({block.get('reason')})"
    return f"\n{attribution_caption(block)}:\n" + render(
        ATTRIBUTION_HEADERS, attribution_rows(block), "lrrr"
    ), ""


VIEW_NAMES = {
    "corrected": "corrected for coordinated omission",
    "from_actual_send": "from the actual send (uncorrected)",
}


def describe_text(
    d: RunDescription,
    views: dict[str, dict[str, Any]] | None = None,
    sources: SourceTable | None = None,
    header: list[str] | None = None,
    intervals: list[QuantileInterval] | None = None,
) -> str:
    """``jitterlab describe``: summary, outlier categories and windows of one run; other
    views of its latency (:func:`describe.analysis.latency_views`) as rows beside; a merged
    run's (or a union's) table split by source after its categories; ``header``: the lines
    that head it instead of the run's context and id (a union's)."""
    return _describe_text(d, views, sources, header, intervals)[0]


def _describe_text(
    d: RunDescription,
    views: dict[str, dict[str, Any]] | None,
    sources: SourceTable | None,
    header: list[str] | None,
    intervals: list[QuantileInterval] | None,
) -> tuple[str, str]:
    """:func:`describe_text`'s text and the spike attribution's note for stderr (empty when
    none), the attribution rendered once for both."""
    run = d.run
    headers, values = summary_cells(d.summary.to_dict(), intervals)
    lines = header or [
        context_header([run]),
        f"run      {run.id}  ({run.label}{', PARTIAL' if run.partial else ''})",
    ]
    if views:
        first = "from the intended send" if "from_actual_send" in views else "as measured"
        rows = [[first, *values]]
        rows += [[VIEW_NAMES[name], *summary_cells(view)[1]] for name, view in views.items()]
        lines.append(render(["latency", *headers], rows, "l" + "r" * len(headers)))
        if "corrected" in views:
            lines.append(
                "corrected: HdrHistogram's recordValueWithExpectedInterval into a 3-digit histogram (its "
                "percentile definition); as measured: the samples' own (type 7). docs/statistics.md says when each is right."
            )
    else:
        lines.append(render(headers, [values], "r" * len(headers)))
    if intervals:
        lines.append("\n" + interval_caption(intervals))
        lines.append(render(INTERVAL_TABLE_HEADERS, interval_rows(intervals, d.summary.count), "lrll"))
    against = f", thresholds of baseline {d.baseline_id}" if d.baseline_id else ""
    lines.append(f"\noutlier categories ({d.test}{against}):")
    lines.append(render(CATEGORY_HEADERS, category_rows(d.categories), "lrrr"))
    if sources is not None:
        source_headers, source_body = source_rows(sources)
        lines.append(f"\n{source_caption(sources)}:")
        lines.append(render(source_headers, source_body, "l" + "r" * (len(source_headers) - 1)))
    if d.screening is not None:
        verdict = "CONTAMINATED" if d.screening.contaminated else "clean"
        lines.append(f"screening against baseline {d.baseline_id}: {verdict} ({d.screening.reason})")
    w = d.windows
    n = w.start_ns.size
    lines.append(f"\nwindows of {format_ns(w.width_ns)} by send time: {n:,}")
    shown = range(n) if n <= WINDOW_ROWS + 2 else [*range(10), *range(n - 10, n)]  # never hide 1 or 2
    rows = []
    for i in shown:
        cats = " ".join(
            f"{category_name(c)}:{int(k)}"
            for c, k in zip(w.categories, w.category_counts[i], strict=True)
            if c != 0 and k
        )
        rows.append(
            [
                window_start(w.start_ns[i], w.width_ns),
                f"{int(w.count[i]):,}",
                level_cell(float(w.p50[i]), int(w.count[i]), 50.0),
                level_cell(float(w.p99[i]), int(w.count[i]), 99.0),
                format_ns(w.max[i]),
                cats or "-",
            ]
        )
    lines.append(render(["start", "samples", "p50", "p99", "max", "outliers by category"], rows, "rrrrrl"))
    if len(shown) < n:
        hidden = n - len(shown)
        lines.append(
            f"({counted(hidden, 'window')} in between not shown, from "
            f"{window_start(w.start_ns[10], w.width_ns)} to {window_start(w.start_ns[n - 11], w.width_ns)}; "
            f"jitterlab describe {d.run.id} --json has them all)"
        )
    out, unavailable = attribution_text(d.attribution)
    if out:
        lines.append(out)
    return "\n".join(lines), unavailable


def histogram_text(d: HistogramDescription) -> str:
    """``describe`` of an imported histogram: every tag's figures side by side, the chosen
    tag's intervals (and, with an expected interval, the corrected figures beside)."""
    run = d.run
    info = run.meta["histogram"]
    unit = info.get("source_unit", "ns")
    lines = [
        context_header([run]),
        f"run      {run.id}  (histogram-only import of {run.config.get('source')}; values in {unit}"
        f"{', PARTIAL' if run.partial else ''})",
    ]
    selection = ""
    if d.from_s is not None or d.to_s is not None:
        end = "the end" if d.to_s is None else f"{d.to_s:g} s"
        selection = f"; from {d.from_s or 0:g} s to {end} after StartTime"
    lines.append(f"streams (HdrHistogram Java's figures, one row per tag{selection}):")
    headers, rows = stream_rows(d.streams, untagged=untagged_name(run))
    lines.append(render(headers, rows, "l" + "r" * (len(headers) - 1)))
    if d.expected_interval_ns:
        headers, rows = stream_rows(d.streams, "corrected", untagged_name(run))
        lines.append(
            f"\ncorrected for coordinated omission (expected interval {format_ns(d.expected_interval_ns)}, "
            "HdrHistogram's copyCorrectedForCoordinatedOmission):"
        )
        lines.append(render(headers, rows, "l" + "r" * (len(headers) - 1)))
    name = "(untagged)" if d.tag is None else f"tag {d.tag}"
    lines.append(f"\nintervals of {name}: {len(d.windows):,}")
    headers = list(INTERVAL_HEADERS) + (["corrected p99", "corrected max"] if d.expected_interval_ns else [])
    rows = histogram_interval_rows(d.windows, 20 if len(d.windows) > 40 else None)
    lines.append(render(headers, rows, "r" * len(headers)))
    if len(d.windows) > 40:
        lines.append(
            f"(the last {counted(len(d.windows) - 20, 'interval')} not shown; "
            f"jitterlab describe {d.run.id} --json has them all)"
        )
    return "\n".join(lines)


def description_text(d: Description) -> tuple[str, list[str]]:
    """``jitterlab describe``'s terminal text of a description (:mod:`describe.description`):
    (stdout, the notes for stderr)."""
    if isinstance(d, HistogramRunDescription):
        parts = [histogram_text(d.histogram)]
        if d.intervals is not None:
            intervals = list(d.intervals)
            parts.append("\n" + interval_caption(intervals))
            parts.append(
                render(
                    INTERVAL_TABLE_HEADERS,
                    interval_rows(intervals, d.histogram.summary.get("count") or 0),
                    "lrll",
                )
            )
        return "\n".join(parts), [d.note]
    if isinstance(d, UnionDescription):
        runs = [e.run.run for e in d.runs]
        header = [
            context_header(runs),
            f"union    {len(runs)} runs as one ({', '.join(r.id for r in runs)}); "
            "each run's times count from its own first send",
        ]
        parts = [describe_text(d.union, None, d.table, header, list(d.union.intervals))]
        parts += ["\n" + describe_text(e.run, None, e.sources, intervals=list(e.intervals)) for e in d.runs]
        return "\n".join(parts), []
    text, unavailable = _describe_text(d.run, d.views, d.sources, None, list(d.intervals))
    return text, [unavailable] if unavailable else []
