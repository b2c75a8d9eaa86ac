"""One self-contained offline HTML report for one or more runs.

Figures are matplotlib PNGs embedded as data URIs; there is no script and nothing is
fetched, so the file opens anywhere and can be mailed or archived with a paper. Every
number comes from :mod:`jitterlab.describe.analysis` and :mod:`jitterlab.stats`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_bytes
from jitterlab.core.html import PAGE_END, esc, figure_img, html_table, page_head
from jitterlab.core.palette import PAUSE_COLOURS, category_colour
from jitterlab.core.percentiles import percentile_key
from jitterlab.core.progress import ProgressBar
from jitterlab.core.tidy import counted
from jitterlab.core.units import format_count, format_ns
from jitterlab.core.version import __version__
from jitterlab.core.warnings import fix_for, normalized
from jitterlab.describe.analysis import RunDescription, pauses_in_run, run_percentiles
from jitterlab.describe.context import context_lines, contexts
from jitterlab.describe.description import DescribeRequest, SampleDescription, describe
from jitterlab.describe.histograms import describe_histogram
from jitterlab.describe.overview import (
    RunDigest,
    compare_runs_for_report,
    comparison_groups,
    digest,
    digest_of_histogram,
    log_axis,
    overview_html,
)
from jitterlab.describe.panels import Panels, memory_panels, streamed_panels
from jitterlab.describe.replication import replication_section
from jitterlab.describe.sources import (
    SourceTable,
    describe_union,
    open_union,
    source_caption,
    source_rows,
)
from jitterlab.describe.tables import (
    ATTRIBUTION_HEADERS,
    CATEGORY_HEADERS,
    INTERVAL_HEADERS,
    INTERVAL_TABLE_HEADERS,
    attribution_caption,
    attribution_rows,
    category_name,
    category_rows,
    collector_table_layout,
    covers_several_collectors,
    distinct_labels,
    histogram_interval_rows,
    interval_caption,
    interval_rows,
    stream_rows,
    summary_cells,
    table1_layout,
    untagged_name,
)
from jitterlab.stats.summary import percentiles_sorted
from jitterlab.store import Run
from jitterlab.store.reader import LOCAL, Engine, send_time_extent
from jitterlab.store.reader import warm as warm_reader
from jitterlab.store.runs import verified_samples_path

MAX_SCATTER_POINTS = 20_000  # drawn points per timeline; above this, M4-decimated (and said so)
SCATTER_COLUMNS = 600  # M4 columns of the timeline: more than its axes' width in pixels at 96 dpi


_esc = esc


def _us(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64) / 1_000.0


def run_figure(d: RunDescription, panels: Panels | None = None) -> str:
    """The four per-run plots in one figure (2 x 2), drawn from ``panels`` (default: from
    the run's samples in memory; a run too large to hold: :func:`panels.streamed_panels`).

    Drawn for speed (a report has dozens): a fixed layout instead of tight_layout, titles
    at a fixed height, histograms and window counts as one step patch each instead of one
    rectangle per bar."""
    if panels is None:
        run = d.run
        panels = memory_panels(
            run.latency_ns,
            run.t_send_ns,
            d.summary,
            d.categories,
            d.ordered,
            MAX_SCATTER_POINTS,
            SCATTER_COLUMNS,
        )
    p = panels
    s = d.summary
    thresholds = d.categories.thresholds
    fig, axes = _run_axes()
    from_histogram = p.drawn_from == "histogram"

    # Seed 000 Fig. 2: the samples above median + 2 sigma over the run, in seconds since it
    # started (the seed normalised the time to 0–1; seconds say when, and how long it ran).
    ax = axes[0][0]
    span = max(p.stop_ns - p.start_ns, 1)
    cut = s.p50 + 2 * s.std
    note = ""
    if p.t.size < p.above:
        note = f" (M4: {format_count(p.t.size)} of {format_count(p.above)} drawn, extremes kept)"
    for cat in np.unique(p.labels):
        sel = p.labels == cat
        ax.scatter(
            (p.t[sel] - p.start_ns) / 1e9,
            _us(p.v[sel]),
            s=4,
            alpha=0.6,
            color=category_colour(int(cat)),
            label=f"category {category_name(int(cat))}",
        )
    ax.axhline(s.p50 / 1000, color="#333", lw=0.8, ls="--", label="median")
    marked = mark_pauses(ax, d.run, p.start_ns)
    ax.set_yscale("log")
    log_axis(ax.yaxis)
    ax.set_xlim(0, span / 1e9)
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("latency (µs)")
    below = format_count(max(s.count - p.above, 0))
    ax.set_title(
        f"samples above median + 2σ ({format_ns(cut)}){note}; {below} below not drawn", fontsize=10, y=1.0
    )
    if p.t.size or marked:
        # Below the median + 2σ cut no point is drawn, so the legend sits there, not on spikes.
        ax.legend(fontsize=7, loc="lower center", ncol=3, framealpha=0.85)

    # VRST'16 Fig. 1: log-y histogram with the category separators.
    ax = axes[0][1]
    ax.stairs(p.counts, p.edges / 1000, fill=True, color=category_colour(0), alpha=0.85)
    for k, t in enumerate(thresholds):
        ax.axvline(t / 1000, color=category_colour(k + 1), ls="--", lw=1.2)  # the cut up to category k + 1
        ax.text(t / 1000, 1, f" {k + 1}", color="#333", fontsize=8, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.8)
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    ax.set_xlabel("latency (µs)")
    ax.set_ylabel("samples")
    title = (
        f"histogram of every sample (log-linear buckets); dashed: {d.test} cuts"
        if from_histogram
        else f"histogram (dashed: {d.test} category separators)"
    )
    ax.set_title(title, fontsize=10, y=1.0)

    # Percentile spectrum on a 1/(1-p) axis (HdrHistogram style).
    ax = axes[1][0]
    n = max(s.count, 2)
    top = 1 - 1 / n
    ax.plot(1 / (1 - p.spectrum_ps), _us(p.spectrum), color=category_colour(0))
    if from_histogram:  # the exact percentiles of the summary, marked on the histogram's curve
        exact = [(q, v) for q, v in zip(EXACT_LEVELS, _exact_values(s), strict=True) if q <= top]
        ax.plot(
            [1 / (1 - q) for q, _ in exact], [v / 1000 for _, v in exact], "o", ms=3,
            color="#333", label="exact (type 7)",
        )  # fmt: skip
        ax.legend(fontsize=7, loc="upper left")
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.yaxis)
    ax.xaxis.set_minor_locator(NullLocator())
    ticks = [q for q in (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999) if q <= top]
    ax.set_xticks([1 / (1 - q) for q in ticks], [f"{q * 100:g}%" for q in ticks], fontsize=8)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (µs)")
    ax.set_title(
        "percentile spectrum (log-linear histogram, ±0.4 %; dots exact)"
        if from_histogram
        else "percentile spectrum (exact)",
        fontsize=10,
        y=1.0,
    )

    # Category counts per window over time, stacked.
    ax = axes[1][1]
    w = d.windows
    edges = np.append(w.start_ns, w.start_ns[-1] + w.width_ns) / 1e9 if w.start_ns.size else np.zeros(1)
    bottom = np.zeros(w.start_ns.size)
    drawn = False
    for j, cat in enumerate(w.categories):
        if cat == 0 or not w.category_counts[:, j].any():
            continue
        top_counts = bottom + w.category_counts[:, j]
        ax.stairs(
            top_counts,
            edges,
            baseline=bottom.copy(),
            fill=True,
            color=category_colour(cat),
            label=f"category {category_name(cat)}",
        )
        bottom = top_counts
        drawn = True
    ax.set_xlabel(f"time (s), windows of {format_ns(w.width_ns)}")
    ax.set_ylabel("outliers per window")
    ax.set_title("outlier categories per window (exact counts)", fontsize=10, y=1.0)
    if drawn:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no outliers", transform=ax.transAxes, ha="center")
    return figure_img(fig, f"plots of {d.run.label}", close=False)


EXACT_LEVELS = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999)


def _exact_values(s: Any) -> list[float]:
    return [s.p50, s.p90, s.p99, s.p99_9, s.p99_99, s.p99_999]


_RUN_FIGURE: list[Any] = []  # [figure, axes]: made once per process, emptied for each run


def _run_axes() -> tuple[Any, Any]:
    """The 2 x 2 figure of a run, emptied: making four log axes costs more than drawing a
    run's data into them, so each process makes it once and clears it for the next run."""
    if not _RUN_FIGURE:
        fig, axes = plt.subplots(2, 2, figsize=(12, 7.2))
        fig.subplots_adjust(left=0.065, right=0.985, bottom=0.075, top=0.955, hspace=0.34, wspace=0.18)
        _RUN_FIGURE.extend([fig, axes])
    fig, axes = _RUN_FIGURE
    for ax in axes.flat:
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]:
            artist.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.set_xscale("linear")  # also restores the default locators and formatters
        ax.set_yscale("linear")
        ax.relim()
        ax.autoscale(True)
    return fig, axes


def mark_pauses(ax: Any, run: Run, origin_ns: int) -> bool:
    """Seed 000 Figs. 3–4: where the collector stopped the JVM, as vertical lines on the
    timeline (safepoints grey beneath, GC pauses red on top), placed at each pause's start.
    Returns whether any pause was drawn."""
    events = pauses_in_run(run)
    for kind in ("safepoint", "gc-pause"):
        starts = np.array([e["start_ns"] for e in events if e["kind"] == kind], dtype=np.float64)
        if starts.size == 0:
            continue
        ax.vlines(
            (starts - origin_ns) / 1e9,
            0,
            1,
            transform=ax.get_xaxis_transform(),
            colors=PAUSE_COLOURS[kind],
            lw=0.8 if kind == "gc-pause" else 0.5,
            alpha=0.7 if kind == "gc-pause" else 0.35,
            label=f"{kind.replace('-', ' ')} ({starts.size:,})",
            zorder=0,
        )
    return bool(events)


def _jvm_facts(run: Run) -> list[str]:
    block = run.meta.get("jvm")
    if not block:
        return []
    c = run.config
    java = run.meta.get("java") or {}
    events = pauses_in_run(run)
    facts = [
        f"JVM {_esc(java.get('vm_name') or '')} {_esc(java.get('version') or block.get('jdk_feature'))}, "
        f"collector {_esc(block.get('gc'))} ({_esc(' '.join(block.get('gc_flags', [])))}), heap {_esc(c.get('heap'))}"
        + (f", variant {_esc(c['variant'])}" if c.get("variant") else "")
    ]
    for kind in ("gc-pause", "safepoint"):
        d = np.array([e["end_ns"] - e["start_ns"] for e in events if e["kind"] == kind], dtype=np.float64)
        if d.size:
            facts.append(
                f"{kind.replace('-', ' ')}s during the samples: {d.size:,}, longest {format_ns(float(d.max()))}, "
                f"total {format_ns(float(d.sum()))} (from <code>{_esc(block.get('gc_log'))}</code>)"
            )
        else:
            facts.append(f"no {kind.replace('-', ' ')} during the samples")
    return facts


def _summary_table(d: RunDescription) -> str:
    headers, values = summary_cells(d.summary.to_dict(), d.intervals)
    table = html_table(headers, [values])
    if d.intervals:  # every percentile with its interval and method (stats/quantile_ci.py)
        rows = [[_esc(cell) for cell in row] for row in interval_rows(d.intervals, d.summary.count)]
        table += f"<div class='muted'>{_esc(interval_caption(d.intervals))}</div>"
        table += html_table(INTERVAL_TABLE_HEADERS, rows)
    return table


def _chosen_table(chosen: dict[str, float | None] | None) -> str:
    """``report --percentiles``: the chosen levels as columns, one row of values (each cell
    carries its exact value in ns as ``data-ns``)."""
    if not chosen:
        return ""
    return "<div class='muted'>chosen percentiles (exact, type 7)</div>" + html_table(
        list(chosen), [[_ns_cell(v) for v in chosen.values()]]
    )


def _ns_cell(value: float | None) -> str:
    if value is None:  # a level the run does not resolve (stats/quantile_ci.py): no bare number
        return "<span class='muted'>not resolved</span>"
    return f"<span data-ns='{value!r}'>{_esc(format_ns(value))}</span>"


def _resolved_chosen(chosen: dict[str, float] | None, count: int) -> dict[str, float | None] | None:
    """``--percentiles``' values with None where ``count`` samples do not resolve the level."""
    if chosen is None:
        return None
    from jitterlab.stats.quantile_ci import is_resolved

    return {k: v if k == "max" or is_resolved(count, float(k[1:])) else None for k, v in chosen.items()}


def _chosen_overview(runs: Sequence[Run], chosen: Sequence[dict[str, float | None] | None]) -> str:
    """``report --percentiles`` over several runs: one row per run, the chosen levels as columns."""
    present = [(run, c) for run, c in zip(runs, chosen, strict=True) if c]
    if not present:
        return ""
    rows = [[_esc(run.label), *(_ns_cell(v) for v in c.values())] for run, c in present]
    return "<h3>Chosen percentiles (exact, type 7)</h3>" + html_table(["run", *present[0][1]], rows)


def _source_table(table: SourceTable | None) -> str:
    """A merged run's (or a union's) table split by source, or nothing."""
    if table is None:
        return ""
    headers, rows = source_rows(table)
    return f"<div class='muted'>{_esc(source_caption(table))}</div>" + html_table(
        headers, [[_esc(cell) for cell in row] for row in rows]
    )


def _category_table(d: RunDescription) -> str:
    return html_table(CATEGORY_HEADERS, category_rows(d.categories))


def _attribution(block: dict[str, Any] | None) -> str:
    """The spike-cause table of a traced run, or a line saying why there is none."""
    if block is None:
        return ""
    if not block.get("available"):
        return f"<div class='muted'>spike attribution unavailable: {_esc(block.get('reason'))}</div>"
    rows = [[_esc(cell) for cell in row] for row in attribution_rows(block)]
    return f"<div class='muted'>{_esc(attribution_caption(block))}</div>" + html_table(
        ATTRIBUTION_HEADERS, rows
    )


def _run_section(
    d: RunDescription,
    anchor: str,
    chosen: dict[str, float | None] | None = None,
    panels: Panels | None = None,
    sources: SourceTable | None = None,
    facts_html: str | None = None,
) -> str:
    run = d.run
    meta = run.meta
    env = meta.get("environment") or {}
    floor = meta.get("floor") or {}
    clock = (floor.get("clock_overhead_ns") or {}).get("median")
    c2c = floor.get("c2c_one_way_ns") or {}
    status = (
        f' <span class="partial">PARTIAL: {_esc(meta.get("partial_reason"))}</span>' if run.partial else ""
    )
    obtained = meta.get("obtained") or {}
    facts = [
        f"run <code>{_esc(run.id)}</code>{status}",
        f"{_esc(env.get('cpu_model'))}, {_esc(env.get('logical_cpus'))} CPUs, kernel {_esc(env.get('kernel'))}"
        f"{' (PREEMPT_RT)' if env.get('preempt_rt') else ''}, virtualisation: {_esc(env.get('virtualization') or 'none')}",
        f"obtained policy {_esc(', '.join(obtained.get('policies', [])) or 'n/a')}; spin mode "
        f"{_esc(obtained.get('spin_mode') or 'n/a')}",
        f"floor: clock read {format_ns(clock)}; core-to-core one-way "
        f"{format_ns(c2c.get('median')) if c2c.get('measured') else 'not measured'}",
        *_jvm_facts(run),
    ]
    if facts_html is not None:  # a union: what it is made of, instead of one machine's facts
        facts = [facts_html]
    warnings = "".join(
        f"<li>{_esc(w['detail'])} <span class='muted'>({_esc(w['code'])}; fix: {_esc(fix_for(w['code']))})</span></li>"
        for w in normalized(obtained.get("warnings"))
    )
    baseline = (
        f" against the thresholds of baseline run <code>{_esc(d.baseline_id)}</code>" if d.baseline_id else ""
    )
    return f"""<section class="card" id="{anchor}"><h3>{_esc(run.label)}</h3>
<div class="muted">{"<br>".join(facts)}</div>{f"<ul class='muted'>{warnings}</ul>" if warnings else ""}
{_summary_table(d)}{_chosen_table(chosen)}{_attribution(d.attribution)}<div class="muted">outlier categories ({_esc(d.test)}{baseline})</div>{_category_table(d)}
{_source_table(sources)}{run_figure(d, panels)}</section>"""


UNDERSTANDING = """<h2 id="understanding">Understanding this report</h2><div class="card">
<p><b>What was measured.</b> n sender/receiver pairs run at once. Before each sample all senders meet at a
barrier; a sender takes a timestamp, reads a random place of a shared memory block and sends both; its receiver
writes the value to a random place, takes a timestamp and records the difference. Timestamps are
CLOCK_MONOTONIC nanoseconds. The <i>floor</i> is what the machine itself costs: reading the clock, and one
cache line travelling between two cores. No result can be below it.</p>
<p><b>Why not just the mean.</b> Latency is rarely one bump: most samples gather near a central value, then come
clusters of larger values, then rare extreme spikes. A mean and a standard deviation blur these together; the
percentiles and the categories keep them apart.</p>
<p><b>Outlier categories.</b> The stacked modified z-score test (Iglewicz &amp; Hoaglin; Stauffert et al.)
computes z = 0.6745 (x − median) / MAD and calls a sample an outlier when z &gt; 3.5. It is applied to the
outliers again and again until none remain: the <i>main</i> cluster, then categories 1, 2, … of ever larger
values. The dashed lines in the histogram are the cuts between them; the table gives each category's range,
count and share. Formulas and references: <code>docs/statistics.md</code>.</p>
<p><b>Timeline.</b> Each point is a sample above median + 2σ, placed at its send time in seconds since the run
started, as in Stauffert et al. (2016) Fig. 2. The samples below that cut are not drawn (the title says how
many); every sample with its send time: <code>jitterlab export RUN --format csv</code>. Spikes at regular intervals point at periodic sources (timers,
garbage collection); a cloud at the start at warm-up effects. On JVM runs, red vertical lines mark where a
garbage-collection pause began and grey ones other safepoints, read from the JVM's own log on the samples'
clock (Figs. 3–4 of the same paper); a spike on a red line was the collector's doing.</p>
<p><b>Percentile spectrum.</b> The x axis stretches the tail: equal steps for 90 %, 99 %, 99.9 %, … so the
rare worst cases, which decide whether a frame is missed, are as visible as the median.</p>
<p><b>Comparisons.</b> Runs are judged only against runs of the same runtime, technique and pairs (the first
of each such group is its baseline), or against the run named with <code>--baseline</code>. QQ plots, one per
group, put each run's quantiles against the baseline's: on the diagonal the
distributions match, above it the run is slower. Verdicts compare percentiles with a bootstrap 95 % interval
against a 5 % noise threshold: <i>regressed</i> or <i>improved</i> only when the whole interval is beyond it.
With millions of samples every test p-value is tiny, so the verdict rests on the size of the change.</p>
<p><b>Several hosts, and huge runs.</b> A run made by <code>jitterlab merge</code> (and the union of
<code>report --union</code>) has a table split by source: the union's row, then one row per source or run, with
its exact percentiles and its count in each of the union's categories. A run too large to hold in memory is drawn
from one streamed pass over every sample: its histogram and spectrum from a log-linear histogram (buckets 0.8 %
wide, so a rare cluster in the tail is never lost; the spectrum within 0.4 %, its dots exact), its timeline by
M4 (every extreme kept); each panel's title says which.</p>
<p><b>Read with care.</b> Runs marked PARTIAL were interrupted. In a virtual machine, cross-core wake-ups and
the hypervisor add jitter of their own; the environment line of each run says where it was measured.</p></div>"""


def _histogram_section(run: Run, anchor: str, percentiles_asked: bool = False) -> str:
    """An imported histogram-only run: every tag's figures side by side, its intervals, and
    what it lacks."""
    d = describe_histogram(run)
    headers, rows = stream_rows(d.streams, untagged=untagged_name(run))
    shown = histogram_interval_rows(d.windows, 50)
    corrected = ""
    if d.expected_interval_ns:
        c_headers, c_rows = stream_rows(d.streams, "corrected", untagged_name(run))
        corrected = (
            f'<div class="muted">corrected for coordinated omission (expected interval '
            f"{_esc(format_ns(d.expected_interval_ns))})</div>{html_table(c_headers, c_rows)}"
        )
    interval_headers = list(INTERVAL_HEADERS) + (
        ["corrected p99", "corrected max"] if d.expected_interval_ns else []
    )
    which = "the untagged lines" if d.tag is None else f"tag {d.tag}"
    asked = (
        f" Percentiles at chosen levels (HdrHistogram's definition): <code>jitterlab export {_esc(run.id)} "
        "--format hgrm --percentiles …</code>."
        if percentiles_asked
        else ""
    )
    return f"""<section class="card" id="{anchor}"><h3>{_esc(run.label)} (histogram-only import)</h3>
<div class="muted">run <code>{_esc(run.id)}</code> from <code>{_esc(run.config.get("source"))}</code>.
Figures are HdrHistogram Java's, one row per tag of the log. Outlier categories, the timeline and comparisons
need raw samples, which an HdrHistogram log does not hold, so they are not shown.{asked}</div>{
        html_table(headers, rows)
    }
{corrected}<div class="muted">intervals of {_esc(which)}{
        f" (the first 50 of {len(d.windows):,}; every interval: <code>jitterlab describe {_esc(run.id)} --json</code>)"
        if len(d.windows) > 50
        else ""
    }</div>
{html_table(interval_headers, shown)}</section>"""


def _section_job(
    run: Run, anchor: str, ps: tuple[float, ...] = (), engine: Engine | None = None
) -> tuple[str, RunDigest, dict[str, float | None] | None]:
    """One run's section and the overview's numbers of it (in a worker process), rendered
    from the run's description (:func:`jitterlab.describe.description.describe`, as
    ``describe`` gives it); ``ps``: the percentiles ``--percentiles`` chose, the same type-7
    values ``show --percentiles`` prints, taken from the sorted samples the description holds.

    The description holds the run when the one memory rule lets it (store/memory.py
    ``hold_in_memory``): read once and described in memory (one sort serves the summary,
    the stacked test, the digest and the chosen percentiles): about 4x faster than the
    row-group passes at the main job's sizes, identical numbers, and its plots need the
    whole columns anyway. ``engine`` (``report --cluster``): every number from passes on
    the cluster's workers, whatever the size; the panels from one local streamed pass (the
    M4 timeline and the log-linear histogram are drawings). The caller's ``run`` keeps none
    of the columns read here (the description holds its own copy, gone when the job ends)."""
    described = describe(
        DescribeRequest(
            (run,), engine=(lambda: engine) if engine is not None else None, hold=True, views=False
        )
    )
    assert isinstance(described, SampleDescription)  # a sample run (histogram-only runs: their section)
    d = described.run
    run = d.run
    if not run.loaded:  # too large to hold: every panel from one streamed pass, nothing subsampled
        path = verified_samples_path(run)
        panels, histogram = streamed_panels(
            LOCAL.timed(path), d.summary, d.categories, SCATTER_COLUMNS, send_time_extent(path)
        )
        chosen = _resolved_chosen(run_percentiles(run, ps, engine or LOCAL) if ps else None, d.summary.count)
        section = _run_section(d, anchor, chosen, panels, described.sources)
        return section, digest_of_histogram(run, d.summary, histogram), chosen
    ordered = d.ordered if d.ordered is not None else np.sort(run.latency_ns)
    chosen = _resolved_chosen(
        {percentile_key(p): float(v) for p, v in zip(ps, percentiles_sorted(ordered, ps), strict=True)}
        if ps
        else None,
        d.summary.count,
    )
    section = _run_section(d, anchor, chosen, sources=described.sources)
    return section, digest(run, d.summary, ordered), chosen


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent (which stops them) and die quietly on SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


Job = tuple[Callable[..., Any], tuple[Any, ...]]
JobRunner = Callable[[list[Job], ProgressBar | None], list[Any]]


def _warm_parquet() -> None:
    """Read a tiny Parquet table here, before the workers fork: pyarrow's reader sets itself
    up on its first read (about 40 MB written), and done once in the parent those pages are
    shared by every worker instead of copied into each (measured: a worker's first read of a
    10 MB run dirtied 60 MB cold, 19 MB after this)."""
    warm_reader()


IN_PROCESS_SAMPLES = 1 << 24  # a report of at most this many samples in all renders in one process


def _rows(run: Run) -> int:
    """The samples of a run as run.json counts them (unknown: counted as too many)."""
    return int((run.meta.get("samples") or {}).get("rows", IN_PROCESS_SAMPLES + 1))


@contextlib.contextmanager
def _workers(samples: int = IN_PROCESS_SAMPLES + 1, jobs: int | None = None) -> Iterator[JobRunner]:
    """A job runner on every allowed CPU: forked worker processes, each loading its own runs
    and dropping them, so no process holds all samples. Results come back in job order,
    feeding the progress bar. On one CPU, or for a report of at most IN_PROCESS_SAMPLES
    ``samples`` in all, the jobs run here, one run in memory at a time: each worker costs
    its own ~80 MB (copies of the parent's pages, matplotlib's caches) and its own warm-up,
    which a small report does not win back (the main job's 28 runs, 8.4 M samples, on 2
    vCPUs: 7.0 s and 268 MB PSS here against 7.9 s and 382 MB with two workers;
    docs/results/scale.md). Never more workers than ``jobs``: the report of one huge run forks
    one worker, not one per CPU (the idle one added ~90 MB to the tree's RSS, a few MB of
    PSS, for a 10⁸-sample run: docs/results/scale.md). It still forks that one: rendered in this process
    the same run measured 9.0–9.2 s of CPU against 7.5–7.9 s forked, interleaved, with six
    times the page faults (not understood, and not seen in every later repeat)."""
    cpus = len(os.sched_getaffinity(0))
    count = min(cpus, jobs if jobs is not None else cpus) if samples > IN_PROCESS_SAMPLES and cpus > 1 else 0

    def inline(jobs: list[Job], progress: ProgressBar | None) -> list[Any]:
        results = []
        for k, (fn, args) in enumerate(jobs):
            results.append(fn(*args))
            if progress:
                progress.update(k + 1)
        return results

    if count == 0:
        yield inline
        return
    context = multiprocessing.get_context("fork")
    _warm_parquet()
    # The workers share the parent's imported modules copy-on-write; a collection in a worker
    # would write to every object's GC header and so copy every page of them (PSS, issue 25):
    # frozen objects are never scanned (the gc.freeze recipe for fork without exec).
    gc.freeze()
    with contextlib.ExitStack() as stack:
        stack.callback(gc.unfreeze)
        pool = stack.enter_context(
            ProcessPoolExecutor(count, mp_context=context, initializer=_ignore_interrupts)
        )

        def parallel(jobs: list[Job], progress: ProgressBar | None) -> list[Any]:
            futures = [pool.submit(fn, *args) for fn, args in jobs]
            results = []
            for k, future in enumerate(futures):
                results.append(future.result())
                if progress:
                    progress.update(k + 1)
            return results

        try:
            yield parallel
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def union_section(runs: Sequence[Run], anchor: str = "union") -> str:
    """``report RUN… --union``: the runs described as one (the run ``merge`` would store,
    exact, in row groups), split by run, with panels from one streamed pass."""
    union = open_union(runs)
    d, table = describe_union(union)
    panels, _histogram = streamed_panels(union.timed(), d.summary, d.categories, SCATTER_COLUMNS)
    facts = (
        f"the union of {len(runs)} runs ({', '.join(f'<code>{_esc(r.id)}</code>' for r in runs)}), "
        "described as the run <code>jitterlab merge</code> would store; each run's times count from "
        "its own first send; nothing is stored"
    )
    return _run_section(d, anchor, None, panels, table, facts)


def build_report(
    runs: Sequence[Run],
    title: str = "jitterlab report",
    preface_html: str = "",
    baseline_id: str | None = None,
    percentiles: Sequence[float] | None = None,
    union: bool = False,
    engine: Engine | None = None,
) -> str:
    """The HTML of the report (a string; the caller writes it atomically). ``preface_html``
    goes first, before the overview (for example the validation of an injector);
    ``baseline_id`` names a run every other run is judged against (default: like with like);
    ``percentiles`` (``report --percentiles``) adds a table of those exact percentiles to every
    sample run's section (histogram-only runs say where theirs are).

    The runs' sections and the comparisons are computed one run at a time in this process
    for a report of at most IN_PROCESS_SAMPLES samples in all, else in parallel worker
    processes (:func:`_workers`); a progress bar shows on a terminal. ``union``
    (``report --union``): the sample runs described as one first (:func:`union_section`).
    ``engine`` (``report --cluster``): the passes over the samples run on a cluster's workers
    and the jobs run here, one after the other (the cluster is the one source of parallelism:
    a forked worker cannot share the client's connection)."""
    united = union_section([r for r in runs if not r.histogram_only]) if union else ""
    histogram_runs = [r for r in runs if r.histogram_only]
    sample_runs = [r for r in runs if not r.histogram_only]
    groups = comparison_groups(sample_runs, baseline_id) if len(sample_runs) > 1 else []
    pairs = [(base, other) for base, others in groups for other in others]
    ps = tuple(percentiles or ())
    jobs: list[Job] = [(_section_job, (r, f"run{i}", ps, engine)) for i, r in enumerate(sample_runs)]
    jobs += [(compare_runs_for_report, (base, other, engine)) for base, other in pairs]
    samples = sum(_rows(r) for r in sample_runs) if engine is None else 0  # 0: the jobs run here
    with _workers(samples, len(jobs)) as run_jobs:
        progress = ProgressBar("rendering the report", len(jobs))
        results = run_jobs(jobs, progress)
        progress.close()
        digests = [d for _section, d, _chosen in results[: len(sample_runs)]]
        comparisons = {(b.id, o.id): c for (b, o), c in zip(pairs, results[len(sample_runs) :], strict=True)}
        overview = overview_html(digests, comparisons, baseline_id, run_jobs) if len(digests) > 1 else ""
    sections = [section for section, _digest, _chosen in results[: len(sample_runs)]]
    chosen = [c for _section, _digest, c in results[: len(sample_runs)]]
    labels = distinct_labels(sample_runs) + [
        f"{label} (histogram)" for label in distinct_labels(histogram_runs)
    ]
    nav = " ".join(f'<a href="#run{i}">{_esc(label)}</a>' for i, label in enumerate(labels))
    parts = [
        page_head(title),
        f"<h1>{_esc(title)}</h1><div class='muted'>{counted(len(runs), 'run')} · generated "
        f"{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by jitterlab {__version__} · "
        "<a href='#understanding'>how to read this report</a></div>",
        _context_html(runs),
    ]
    parts.append(preface_html)
    parts.append(replication_section(runs))  # empty unless runs of `repl bench` are among them
    if len(digests) > 1:
        summaries = [d.summary.to_dict() for d in digests]
        headers, rows = table1_layout([d.run for d in digests], summaries)
        parts.append(
            "<h2>Overview</h2><div class='card'><h3>Max, mean and median per policy (layout of Stauffert "
            "et al. 2016, Table 1)</h3>" + html_table(headers, [[_esc(cell) for cell in row] for row in rows])
        )
        if covers_several_collectors([d.run for d in digests]):
            headers, rows = collector_table_layout([d.run for d in digests], summaries)
            parts.append(
                "<h3>Garbage collector × scheduler (layout of Stauffert et al. 2016, Tables 2–3)</h3>"
                + html_table(
                    headers, [[_esc(cell) for cell in row] for row in rows], cls="three-text-columns"
                )
            )
        parts.append(_chosen_overview([d.run for d in digests], chosen) + overview + "</div>")
    if united:
        parts.append(f"<h2>Union</h2>{united}")
    parts.append(f"<h2>Runs</h2><nav class='muted'>{nav}</nav>")
    parts.extend(sections)
    parts.extend(
        _histogram_section(r, f"run{len(sections) + i}", bool(ps)) for i, r in enumerate(histogram_runs)
    )
    parts.append(UNDERSTANDING + PAGE_END)
    return "\n".join(parts)


def _context_html(runs: Sequence[Run]) -> str:
    """The context block heading the report: each distinct machine the runs came from."""
    lines = [" · ".join(_esc(line) for line in context_lines(block)) for block in contexts(runs)]
    return "<div class='muted'>" + "<br>".join(f"context: {line}" for line in lines) + "</div>"


def write_report(
    runs: Sequence[Run],
    out: Path,
    title: str,
    preface_html: str = "",
    baseline_id: str | None = None,
    percentiles: Sequence[float] | None = None,
    union: bool = False,
    engine: Engine | None = None,
) -> int:
    """Build the report and write it to ``out`` atomically; returns its size in bytes."""
    page = build_report(runs, title, preface_html, baseline_id, percentiles, union, engine).encode()
    try:
        atomic_write_bytes(out, page)
    except OSError as e:
        raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
    return len(page)
