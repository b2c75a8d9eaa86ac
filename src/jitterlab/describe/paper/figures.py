"""The paper's figures: vector PDF and SVG, one column (3.5 in) and page wide (7 in).

Text stays text (SVG ``svg.fonttype`` ``none``; PDF TrueType fonts embedded, ``pdf.fonttype``
42); colours are the Okabe–Ito palette of core/palette.py (safe for the common colour-vision deficiencies),
and every series also differs by marker and dash so that a grayscale print keeps them
apart. Every number drawn comes from :class:`jitterlab.describe.paper.build.PaperData`,
the same description the tables are made of.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import math
import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from jitterlab.core.palette import BLUE, GREY, PAUSE_COLOURS, category_colour, series_colour
from jitterlab.describe.paper.build import PaperData, RunData, style_key
from jitterlab.describe.paper.tables import UNIT_NS, unit_for
from jitterlab.describe.tables import category_name
from jitterlab.stats.compare import MAX_ROW

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DASHES: list[Any] = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3))]
WIDTHS = {"column": 3.5, "page": 7.0}
RC: Any = {
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
    "font.size": 7,
    "axes.titlesize": 7,
    "axes.labelsize": 7,
    "legend.fontsize": 6,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.0,
    "axes.linewidth": 0.6,
    "savefig.dpi": 300,
    "svg.hashsalt": "jitterlab",  # the same SVG for the same data
    "pdf.compression": 6,
    # titles at the top of their axes (every tick is below or left): matplotlib's automatic
    # place measured every axis's ticks of every panel again at each save to find none above
    "axes.titley": 1.0,
}
MAX_COLUMN_PANELS = 3  # runs whose per-run panels are also drawn one column wide (one above the other)
SPECTRUM_TICKS = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)


class _LogInView(LogLocator):
    """LogLocator's ticks, only those inside the view: matplotlib makes a tick (two lines
    and two texts) for every location a locator gives, visible or not, and LogLocator gives
    a decade beyond each end (28 panels: a third of the ticks made were never drawn)."""

    def tick_values(self, vmin: float, vmax: float) -> Any:
        ticks = np.asarray(super().tick_values(vmin, vmax))
        lo, hi = sorted((vmin, vmax))
        return ticks[(ticks >= lo * (1 - 1e-10)) & (ticks <= hi * (1 + 1e-10))]


def _plain_log(axis: Any) -> None:
    """Ticks at 1, 2 and 5 of each decade (a narrow range still gets them), plain numbers;
    over more than two decades only the powers of ten are numbered (the labels of 2 and 5
    ran into each other at one column)."""

    def label(v: float, _pos: int | None) -> str:
        lo, hi = sorted(axis.get_view_interval())
        if v > 0 and lo > 0 and hi / lo > 150 and round(v / 10 ** math.floor(math.log10(v))) != 1:
            return ""
        return f"{v:g}"

    axis.set_major_locator(_LogInView(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_locator(NullLocator())


class Styles:
    """Colour per technique, marker per number of pairs, dash per policy; a run whose three
    repeat an earlier run's gets the next dash as well, so no two runs look alike."""

    def __init__(self, runs: Sequence[RunData]) -> None:
        techniques = sorted({style_key(r.run)[0] for r in runs})
        pairs = sorted({str(r.run.config.get("pairs")) for r in runs})
        policies = sorted({style_key(r.run)[1] for r in runs})
        self.by_id: dict[str, dict[str, Any]] = {}
        used: dict[tuple[int, int, int], int] = {}
        for r in runs:
            t, p = style_key(r.run)
            key = (techniques.index(t), pairs.index(str(r.run.config.get("pairs"))), policies.index(p))
            repeat = used.get(key, 0)
            used[key] = repeat + 1
            self.by_id[r.run.id] = {
                "color": series_colour(key[0]),
                "marker": MARKERS[key[1] % len(MARKERS)],
                # a dash per pairs × policy (and repeat): in grey, runs of one technique that
                # differ only in pairs were one solid line each, told apart by a marker alone
                "linestyle": DASHES[
                    (key[1] * len(policies) + key[2] + repeat * len(pairs) * len(policies)) % len(DASHES)
                ],
            }

    def of(self, r: RunData) -> dict[str, Any]:
        return self.by_id[r.run.id]


def _save(fig: Any, folder: Path, stem: str, written: list[Path]) -> None:
    """The figure as PDF, then SVG: laid out once (the PDF's draw places every axes; the
    SVG keeps those places instead of running the layout again, a third of its cost)."""
    for ext in ("pdf", "svg"):
        path = folder / f"{stem}.{ext}"
        metadata = {"Creator": "jitterlab", "CreationDate": None} if ext == "pdf" else {"Date": None}
        fig.savefig(path, format=ext, metadata=metadata)
        fig.set_layout_engine("none")
        written.append(path)
    plt.close(fig)


def _unit(values_ns: Sequence[float]) -> tuple[str, float]:
    unit = unit_for(list(values_ns))
    return unit, UNIT_NS[unit]


def spectrum(runs: Sequence[RunData], width: float) -> Any | None:
    """Every run's percentile spectrum on a log 1/(1−p) axis (HdrHistogram's plot)."""
    drawn = [r for r in runs if r.panels is not None]
    if not drawn:
        return None
    unit, scale = _unit([r.summary.p50 for r in drawn])
    styles = Styles(drawn)
    fig, ax = plt.subplots(figsize=(width, 2.6 if width < 5 else 3.2), layout="constrained")
    top = 0.0
    for r in drawn:
        p = r.panels
        assert p is not None
        s = styles.of(r)
        x = 1 / (1 - p.spectrum_ps)
        marks = np.unique(
            np.searchsorted(p.spectrum_ps, [q for q in SPECTRUM_TICKS if q <= p.spectrum_ps[-1]])
        )
        marks = marks[marks < p.spectrum_ps.size]
        # one line with its markers, so the legend shows both (marker: pairs; dash: pairs × policy)
        ax.plot(
            x, p.spectrum / scale, color=s["color"], linestyle=s["linestyle"], label=r.name,
            marker=s["marker"], markevery=[int(m) for m in marks], ms=3, mfc="white", mew=0.8,
        )  # fmt: skip
        top = max(top, float(p.spectrum_ps[-1]))
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    ax.xaxis.set_minor_locator(NullLocator())
    ticks = [q for q in SPECTRUM_TICKS if q <= top]
    ax.set_xticks([1 / (1 - q) for q in ticks], [f"{q * 100:g}" for q in ticks])
    ax.set_xlabel("percentile (%), axis 1/(1 − p)")
    ax.set_ylabel(f"latency ({unit})")
    ax.grid(True, which="major", lw=0.3, color="#bbbbbb")
    ncol = 1 if width < 5 else 2
    fig.legend(
        loc="outside lower center", ncol=ncol * (2 if len(drawn) > 8 else 1), frameon=False, fontsize=5
    )
    _fit_height(fig, len(drawn), ncol * (2 if len(drawn) > 8 else 1))
    return fig


def _fit_height(fig: Any, entries: int, ncol: int) -> None:
    """Grow the figure so that a legend of ``entries`` below the axes leaves the axes room."""
    rows = -(-entries // ncol)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + rows * 0.09)


def _histogram_on(ax: Any, r: RunData, scale: float, unit: str) -> None:
    """The run's histogram (log-log) with the outlier test's category cuts."""
    p = r.panels
    assert p is not None
    ax.stairs(p.counts, p.edges / scale, fill=True, color=GREY, edgecolor="#000000", lw=0.4)
    for k, t in enumerate(r.categories.thresholds):
        ax.axvline(t / scale, color=category_colour(k + 1), ls=DASHES[(k + 1) % len(DASHES)], lw=0.9)
        ax.annotate(
            f"{k + 1}", (t / scale, 1), xytext=(1, 1), textcoords="offset points", fontsize=5, va="bottom"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.8)
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlabel(f"latency ({unit})")
    ax.set_ylabel("samples per bin")
    ax.set_title(f"{r.name} (n = {r.summary.count:,})", fontsize=6)


def _timeline_on(ax: Any, r: RunData, scale: float, unit: str, legend: bool) -> None:
    """Samples above median + 2σ over the run, marker per category; GC pauses where recorded."""
    p = r.panels
    assert p is not None
    for cat in np.unique(p.labels):
        j = int(cat) + 1  # category -1 (low) … k: one marker and colour each
        ax.scatter(
            (p.t[p.labels == cat] - p.start_ns) / 1e9,
            p.v[p.labels == cat] / scale,
            s=5,
            marker=MARKERS[j % len(MARKERS)],
            facecolors="none" if j % 2 else category_colour(int(cat)),
            edgecolors=category_colour(int(cat)),
            linewidths=0.5,
            label=f"category {category_name(int(cat))}",
            rasterized=False,
        )
    ax.axhline(r.summary.p50 / scale, color="#000000", ls="--", lw=0.7, label="median")
    gc = [e for e in r.pauses if e.get("kind") == "gc-pause"]
    for e in gc:
        ax.axvspan(
            (e["start_ns"] - p.start_ns) / 1e9,
            (e["end_ns"] - p.start_ns) / 1e9,
            color=PAUSE_COLOURS["gc-pause"],
            alpha=0.35,
            lw=0,
        )
    if gc:
        ax.plot([], [], color=PAUSE_COLOURS["gc-pause"], alpha=0.5, lw=4, label=f"GC pause ({len(gc):,})")
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    ax.set_xlim(0, max(p.stop_ns - p.start_ns, 1) / 1e9)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel(f"latency ({unit})")
    # short enough for a third of the page: "above median + 2σ" is said once, in the legend
    drawn = "" if p.t.size >= p.above else f" ({p.t.size:,} of {p.above:,}, M4)"
    ax.set_title(f"{r.name}{drawn}", fontsize=6)
    if legend:
        ax.legend(loc="upper right", fontsize=5, frameon=True, framealpha=0.85, ncol=2)


def per_run(runs: Sequence[RunData], width: float, kind: str) -> Any | None:
    """Small multiples: one panel per run (histogram with cuts, or timeline), a shared unit."""
    drawn = [r for r in runs if r.panels is not None]
    if not drawn:
        return None
    unit, scale = _unit([r.summary.p50 for r in drawn])
    ncols = min(len(drawn), 1 if width < 5 else 3)
    nrows = -(-len(drawn) // ncols)
    height = (2.2 if width < 5 else 1.9) * nrows
    # one latency axis for every panel (and one count axis for the histograms), labelled on
    # the outer panels only, and fixed margins in inches instead of a layout engine: the
    # runs read against each other, and 28 panels draw in half the time (the constrained
    # layout measured every tick label of every panel once more before drawing)
    histogram = kind == "histogram"
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(width, height), squeeze=False, sharex=histogram, sharey=True
    )
    for ax, r in zip(axes.flat, drawn, strict=False):
        if histogram:
            _histogram_on(ax, r, scale, unit)
        else:
            _timeline_on(ax, r, scale, unit, legend=False)
    xlabel = axes.flat[0].get_xlabel()
    for k, ax in enumerate(axes.flat):
        last = k + ncols >= len(drawn)  # no panel below it
        if k % ncols:  # the shared latency (and count) axis is named on the first column
            ax.tick_params(axis="y", labelleft=False)
            ax.set_ylabel("")
        if not last:  # times differ per run: a timeline keeps its ticks, only the name goes
            ax.set_xlabel("")
            if histogram:
                ax.tick_params(axis="x", labelbottom=False)
        else:
            ax.set_xlabel(xlabel)
    for ax in axes.flat[len(drawn) :]:
        ax.set_visible(False)
    below = 0.0
    if kind == "timeline":  # one legend below every panel: inside one, it hides the spikes it explains
        seen: dict[str, Any] = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(label, handle)
        labels = sorted(seen, key=lambda t: (not t.startswith("category"), t))
        ncol = min(len(labels), 5 if width > 5 else 3)
        below = 0.22 + 0.13 * -(-len(labels) // ncol)
        fig.legend(
            [seen[t] for t in labels],
            labels,
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=ncol,
            frameon=False,
            title="samples above median + 2σ over each run (M4: the extremes of every time column kept)",
            title_fontsize=6,
        )
    _fixed_grid(fig, nrows, ncols, gap=0.2 if histogram else 0.34, below=below)
    return fig


def _fixed_grid(fig: Any, nrows: int, ncols: int, gap: float, below: float, wgap: float = 0.12) -> None:
    """Margins and gaps in inches (ticks, names and titles at the rc sizes): left 0.55 for
    the latency ticks and name, bottom 0.42 for the last row's ticks and name plus
    ``below`` (a legend), ``gap`` between rows (a title, and a timeline's time ticks),
    ``wgap`` between columns (0.12: their inner latency ticks hidden)."""
    w, h = fig.get_size_inches()
    h += below
    fig.set_size_inches(w, h)
    left, right, top, bottom = 0.55, 0.1, 0.18, 0.42 + below
    panel_h = (h - top - bottom - gap * (nrows - 1)) / nrows
    panel_w = (w - left - right - wgap * (ncols - 1)) / ncols
    fig.subplots_adjust(
        left=left / w,
        right=1 - right / w,
        top=1 - top / h,
        bottom=bottom / h,
        hspace=gap / panel_h,
        wspace=wgap / panel_w,
    )


def qq(data: PaperData, width: float) -> Any | None:
    """Per comparison, B's quantiles against A's (the comparison's QQ points)."""
    shown = data.comparisons[:12]
    if not shown:
        return None
    ncols = min(len(shown), 2 if width < 5 else 4)
    nrows = -(-len(shown) // ncols)
    panel = width / ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, panel * nrows * 1.05 + 0.2), squeeze=False)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for ax, rc in zip(axes.flat, shown, strict=False):
        c = rc.result
        unit, scale = _unit([float(np.median(c.qq_a))])
        a, b = np.asarray(c.qq_a) / scale, np.asarray(c.qq_b) / scale
        lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
        ax.plot([lo, hi], [lo, hi], color="#777777", ls="--", lw=0.6)
        ax.plot(a, b, ".", color=BLUE, ms=2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log(ax.xaxis)
        _plain_log(ax.yaxis)
        name_a, name_b = data.comparison_names(rc)
        ax.set_xlabel(f"A: {name_a} ({unit})", fontsize=5)
        ax.set_ylabel(f"B: {name_b} ({unit})", fontsize=5)
        ax.set_title(f"{name_b.split()[0]} vs {name_a.split()[0]}: {c.verdict}", fontsize=6)
    _fixed_grid(fig, nrows, ncols, gap=0.5, below=0.0, wgap=0.45)  # every panel its own axes, named
    return fig


def scaling(runs: Sequence[RunData], width: float) -> Any | None:
    """Median and p99 over the number of pairs, per technique and policy: every run a point,
    the line through the median of the runs at each number of pairs."""
    pairs = {r.run.config.get("pairs") for r in runs}
    if len(pairs) < 2 or not all(isinstance(p, int) for p in pairs):
        return None
    unit, scale = _unit([r.summary.p50 for r in runs])
    styles = Styles(runs)
    series: dict[tuple[str, str], list[RunData]] = {}
    for r in runs:
        series.setdefault(style_key(r.run), []).append(r)
    fig, axes = plt.subplots(
        1, 2, figsize=(width, 2.4 if width < 5 else 3.0), layout="constrained", sharex=True
    )
    techniques = sorted({t for t, _ in series})
    for (technique, policy), members in series.items():
        # x is the pairs here: the marker tells the techniques apart instead (in grey the
        # seven colours were seven greys with one marker)
        s = {**styles.of(members[0]), "marker": MARKERS[techniques.index(technique) % len(MARKERS)]}
        x = sorted({int(r.run.config["pairs"]) for r in members})
        for ax, key in zip(axes, ("p50", "p99"), strict=True):

            def value(r: RunData, key: str = key) -> float:
                return (r.levels[key].value if key in r.levels else float(getattr(r.summary, key))) / scale

            ax.plot(
                [int(r.run.config["pairs"]) for r in members], [value(r) for r in members],
                s["marker"], color=s["color"], ms=3, mfc="white",
            )  # fmt: skip
            line = [
                float(np.median([value(r) for r in members if int(r.run.config["pairs"]) == k])) for k in x
            ]
            ax.plot(
                x,
                line,
                color=s["color"],
                linestyle=s["linestyle"],
                marker=s["marker"],
                ms=3,
                label=f"{technique} {policy}",
            )
    for ax, name in zip(axes, ("median", "p99"), strict=True):
        ax.set_yscale("log")
        _plain_log(ax.yaxis)
        ax.set_xticks(sorted(p for p in pairs if isinstance(p, int)))
        ax.set_xlabel("sender/receiver pairs (count)")
        ax.set_ylabel(f"{name} latency ({unit})")
    handles, labels = axes[0].get_legend_handles_labels()
    ncol = 2 if width < 5 else 4
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=5)
    _fit_height(fig, len(labels), ncol)
    return fig


def effects(data: PaperData, width: float) -> Any | None:
    """Each comparison's relative change per percentile with its interval."""
    if not data.comparisons:
        return None
    levels = [p for p in data.comparisons[0].result.percentiles if p.percentile != MAX_ROW]
    names = [f"p{d.percentile:g}" for d in levels]
    n = len(data.comparisons)
    fig, ax = plt.subplots(figsize=(width, 1.4 + 0.28 * n), layout="constrained")
    offsets = np.linspace(-0.3, 0.3, len(names)) if len(names) > 1 else np.zeros(1)
    for k, name in enumerate(names):
        ys, xs, lo, hi = [], [], [], []
        for i, rc in enumerate(data.comparisons):
            d = next((d for d in rc.result.percentiles if f"p{d.percentile:g}" == name), None)
            if d is None or not all(
                isinstance(v, float) and np.isfinite(v) for v in (d.relative, d.ci_low, d.ci_high)
            ):
                continue  # a level not judged (not resolved): no point, no bar
            ys.append(i + offsets[k])
            xs.append(d.relative * 100)
            # the interval bounds the change from the runs' own intervals; where rounding of ranks
            # leaves the point just outside it, the bar starts at the point
            lo.append(max(d.relative - d.ci_low, 0.0) * 100)
            hi.append(max(d.ci_high - d.relative, 0.0) * 100)
        ax.errorbar(
            xs, ys, xerr=[lo, hi], fmt=MARKERS[k % len(MARKERS)], color=series_colour(k),
            ms=3, lw=0.8, capsize=1.5, label=name, mfc="white" if k % 2 else None,
        )  # fmt: skip
    noise = data.comparisons[0].result.noise_threshold * 100
    ax.axvspan(-noise, noise, color="#dddddd", lw=0, zorder=0, label=f"±{noise:g} % noise")
    ax.axvline(0, color="#000000", lw=0.5)
    pair_names = [data.comparison_names(rc) for rc in data.comparisons]
    ax.set_yticks(range(n), [f"{b.split()[0]} vs {a.split()[0]}" for a, b in pair_names], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel(f"change of B vs A (%), {data.comparisons[0].result.confidence:.0%} CI")
    ax.set_ylabel("runs (Table 1)")
    fig.legend(loc="outside upper center", ncol=min(len(names) + 1, 6), fontsize=5, frameon=False)
    return fig


@dataclass(frozen=True)
class FigureJob:
    """One figure at one size: its file stem, how to draw it (None: nothing to draw), the
    line for paper.md when it is not drawn, and its rough cost (panels) for the split."""

    stem: str
    draw: Callable[[], Any | None]
    not_drawn: str | None
    cost: float


def figure_jobs(data: PaperData) -> list[FigureJob]:
    """Every figure the paper may draw, in the order paper.md lists them."""
    jobs: list[FigureJob] = []
    groups: dict[str, list[RunData]] = {}
    for r in data.runs:
        groups.setdefault(r.group, []).append(r)
    for g, (group, runs) in enumerate(groups.items()):
        suffix = "" if g == 0 else f"-{g + 1}"
        for name, draw in (("spectrum", spectrum), ("scaling", scaling)):
            for size, width in WIDTHS.items():
                why = f"{name}{suffix} ({group}): not drawn ({_why(name)})" if size == "column" else None
                job = functools.partial(draw, runs, width)
                jobs.append(FigureJob(f"{name}{suffix}-{size}", job, why, 2.0))
    for name, draw_all in (("qq", qq), ("effects", effects)):
        for size, width in WIDTHS.items():
            why = (
                f"{name}: not drawn (no like-with-like comparison among the runs)"
                if size == "column"
                else None
            )
            cost = min(len(data.comparisons), 12) if name == "qq" else 2.0
            jobs.append(FigureJob(f"{name}-{size}", functools.partial(draw_all, data, width), why, cost))
    for g, runs in enumerate(groups.values()):
        suffix = "" if g == 0 else f"-{g + 1}"
        for kind in ("histogram", "timeline"):
            for size, width in WIDTHS.items():
                if size == "column" and len(runs) > MAX_COLUMN_PANELS:
                    continue  # one panel per run at one column: only for a few runs
                job = functools.partial(per_run, runs, width, kind)
                jobs.append(FigureJob(f"{kind}s{suffix}-{size}", job, None, float(len(runs))))
    return jobs


def _draw(jobs: Sequence[FigureJob], folder: Path) -> list[bool]:
    """Draw ``jobs`` into ``folder``; per job, whether it was drawn."""
    drawn = []
    with plt.rc_context(RC):
        for job in jobs:
            fig = job.draw()
            if fig is not None:
                _save(fig, folder, job.stem, [])
            drawn.append(fig is not None)
    return drawn


def _split(jobs: Sequence[FigureJob]) -> tuple[list[int], list[int]]:
    """The jobs' indices in two halves of about equal cost (greedy, costliest first)."""
    halves: tuple[list[int], list[int]] = ([], [])
    load = [0.0, 0.0]
    for i in sorted(range(len(jobs)), key=lambda i: -jobs[i].cost):
        k = 0 if load[0] <= load[1] else 1
        halves[k].append(i)
        load[k] += jobs[i].cost
    return halves


def _give_back_memory() -> None:
    """Free pages the description left to the allocators (pyarrow's pool, glibc's heap),
    so the fork copies fewer page tables and the tree's RSS counts fewer pages twice."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _draw_in_two(jobs: Sequence[FigureJob], folder: Path) -> list[bool]:
    """Draw half the jobs (by cost) in a forked child and half here, at once: matplotlib
    draws in one thread, and the figures are independent. The child shares this process's
    pages (imports, the description) copy-on-write and sends back which it drew; it exits
    without running this process's clean-ups. An error in it is raised here."""
    mine, theirs = _split(jobs)
    _give_back_memory()  # the child maps every resident page of this process at the fork
    read_end, write_end = os.pipe()
    gc.freeze()  # a collection in the child would write to every object's header (PSS)
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
            os.close(read_end)
            reply: Any = _draw([jobs[i] for i in theirs], folder)
        except BaseException as e:  # sent to the parent, which raises it
            reply, code = e, 1
        try:
            with os.fdopen(write_end, "wb") as pipe:
                try:
                    pickle.dump(reply, pipe)
                except Exception:  # an error that does not pickle: its words
                    pickle.dump(
                        RuntimeError(f"drawing a figure failed: {type(reply).__name__}: {reply}"), pipe
                    )
        finally:
            os._exit(code)
    os.close(write_end)
    gc.unfreeze()
    try:
        here = _draw([jobs[i] for i in mine], folder)
        with os.fdopen(read_end, "rb") as pipe:
            reply = pickle.load(pipe)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        raise
    finally:
        os.waitpid(pid, 0)
    if isinstance(reply, BaseException):
        raise reply
    drawn = [False] * len(jobs)
    for i, ok in zip([*mine, *theirs], [*here, *reply], strict=True):
        drawn[i] = ok
    return drawn


def write_figures(
    data: PaperData, folder: Path, progress: Callable[[str], None] | None = None
) -> tuple[list[Path], list[str]]:
    """Draw every figure into ``folder`` (created); returns the files and one line per
    figure not drawn (and why). With two CPUs or more the figures are drawn by two
    processes (:func:`_draw_in_two`)."""
    folder.mkdir(exist_ok=True)
    jobs = figure_jobs(data)
    two = len(os.sched_getaffinity(0)) > 1 and len(jobs) > 1
    drawn = _draw_in_two(jobs, folder) if two else _draw(jobs, folder)
    written = [
        folder / f"{job.stem}.{ext}"
        for job, ok in zip(jobs, drawn, strict=True)
        if ok
        for ext in ("pdf", "svg")
    ]
    skipped = [job.not_drawn for job, ok in zip(jobs, drawn, strict=True) if not ok and job.not_drawn]
    for r in data.runs:
        if r.panels is None:
            skipped.append(
                f"run {r.run.id}: not in the histograms and timelines (too large to hold, or --cluster)"
            )
    return written, skipped


def _why(name: str) -> str:
    return "the runs cover one number of pairs" if name == "scaling" else "no run held in memory"
