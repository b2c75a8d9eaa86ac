"""The report's overview across runs: like-with-like verdicts, QQ plots per comparison
group, the scaling plot and every run's percentile spectrum on one axis.

Runs are compared only with runs that measure the same thing: the same runtime, technique
(with its series or variant) and number of pairs, differing in what the experiment varied
(scheduling policy, collector, load). Comparing a mutex with a spinning queue, or an
injection proxy with the bare loopback it is validated against, gives verdicts nobody
should act on, so none are drawn; ``--baseline`` names a run to compare everything with
instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, NullLocator

from jitterlab.core.html import esc, figure_img, html_table
from jitterlab.core.palette import series_colour
from jitterlab.describe.compare import run_sample
from jitterlab.describe.tables import distinct_labels
from jitterlab.stats import Comparison, Summary
from jitterlab.stats.compare import compare_ordered
from jitterlab.stats.loglinear import LogLinear
from jitterlab.stats.summary import percentiles_sorted
from jitterlab.store import Run
from jitterlab.store.reader import Engine

MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
LINESTYLES: list[Any] = [
    "-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 3)), (0, (3, 1, 1, 1, 1, 1, 1, 1)),
]  # fmt: skip
SPECTRUM_TICKS = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)
MAX_QQ_PANELS = 12
QQ_MARGIN_IN = (0.75, 0.15, 0.6, 0.35)  # left, right, bottom, top of the QQ figure (inches)
QQ_PERCENTILES = tuple(np.concatenate([np.linspace(1, 99, 99), [99.5, 99.9, 99.95, 99.99]]))
SPECTRUM_POINTS = 120


@dataclass(frozen=True)
class RunDigest:
    """What the overview needs of one run: small enough to travel between processes, so
    that no process holds every run's samples at once."""

    run: Run
    summary: Summary
    spectrum_p: np.ndarray  # percentiles (fractions) of the spectrum
    spectrum_ns: np.ndarray  # their values
    qq_ns: np.ndarray  # values at QQ_PERCENTILES


def digest(run: Run, summary: Summary, ordered: np.ndarray) -> RunDigest:
    """The overview's numbers of a run from its sorted latencies."""
    n = max(ordered.size, 2)
    ps = np.clip(1 - np.geomspace(1, 1 / n, SPECTRUM_POINTS), 0, 1 - 1 / n)
    bare = Run(run.path, run.meta)  # the samples stay behind
    return RunDigest(
        bare,
        summary,
        ps,
        percentiles_sorted(ordered, tuple(ps * 100)),
        percentiles_sorted(ordered, QQ_PERCENTILES),
    )


def digest_of_histogram(run: Run, summary: Summary, histogram: LogLinear) -> RunDigest:
    """The overview's numbers of a run too large to hold, from its log-linear histogram
    (:mod:`jitterlab.stats.loglinear`: every sample counted, each quantile within half a
    bucket, 0.39 %, of the exact one): the QQ plots and spectra of the overview."""
    n = max(summary.count, 2)
    ps = np.clip(1 - np.geomspace(1, 1 / n, SPECTRUM_POINTS), 0, 1 - 1 / n)
    return RunDigest(
        Run(run.path, run.meta),
        summary,
        ps,
        histogram.quantiles(ps * 100),
        histogram.quantiles(np.asarray(QQ_PERCENTILES)),
    )


def compare_runs_for_report(base: Run, other: Run, engine: Engine | None = None) -> Comparison:
    """The report's comparison of two runs (KS distance and the verdict; the other tests
    are not shown there, so not computed); ``engine``: a cluster's, which reads both runs."""
    from jitterlab.describe.compare import comparison_intervals

    return compare_ordered(
        run_sample(base, engine),
        run_sample(other, engine),
        distribution_tests=False,
        intervals=comparison_intervals(base, other, engine),
    )


def log_axis(axis: Any) -> None:
    """A log axis with plain numbers at the decades and no minor ticks: easier to read than
    10^k, and far cheaper to lay out (tick labels dominate the cost of drawing a figure)."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_locator(NullLocator())


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    linestyle: str


def technique_of(run: Run) -> str:
    """Runtime and technique with its series, variant and collector: one colour each."""
    runtime = run.config.get("runtime", "native")
    return ("" if runtime == "native" else f"{runtime}/") + run.technique_label


def styles(runs: Sequence[Run]) -> dict[str, Style]:
    """One colour per technique (core/palette.py: eight, then they repeat); within a technique, each run its own line style and marker
    (by run id), so that ×1 and ×2, or two runs of one policy, never draw alike (distinct
    for up to 56 runs of a technique)."""
    techniques = sorted({technique_of(r) for r in runs})
    members: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        members[technique_of(r)].append(r)
    out = {}
    for technique, group in members.items():
        t = techniques.index(technique)
        ordered = sorted(group, key=lambda r: (r.policy_label, int(r.config.get("pairs") or 0), r.id))
        for k, r in enumerate(ordered):
            out[r.id] = Style(series_colour(t), MARKERS[k % len(MARKERS)], LINESTYLES[k % len(LINESTYLES)])
    return out


def comparison_key(run: Run) -> tuple[str, str, str, str]:
    c = run.config
    return (
        str(c.get("runtime", "native")),
        str(c.get("technique", "?")),
        str(c.get("series") or c.get("variant") or ""),
        str(c.get("pairs", "?")),
    )


def comparison_groups(runs: Sequence[Run], baseline_id: str | None = None) -> list[tuple[Run, list[Run]]]:
    """(baseline, the runs judged against it) for every group of like runs with two or
    more members, the first of each group its baseline; with ``baseline_id``, one group of
    every run against that one."""
    if baseline_id is not None:
        base = next(r for r in runs if r.id == baseline_id)
        return [(base, [r for r in runs if r is not base])]
    groups: dict[tuple[str, ...], list[Run]] = defaultdict(list)
    for r in runs:
        groups[comparison_key(r)].append(r)
    return [(members[0], members[1:]) for members in groups.values() if len(members) > 1]


def verdicts_html(groups: list[tuple[Run, list[Run]]], comparisons: dict[tuple[str, str], Comparison]) -> str:
    rows = []
    for base, others in groups:
        for other in others:
            c = comparisons[(base.id, other.id)]
            diffs = {p.percentile: p for p in c.percentiles}
            cells = [
                f"{diffs[p].relative:+.1%} [{diffs[p].ci_low:+.1%}, {diffs[p].ci_high:+.1%}]"
                for p in (50.0, 99.0)
            ]
            # Name the percentiles behind a verdict: one regressed far-tail percentile makes
            # the whole run "regressed" even when p50 and p99, shown here, improved.
            behind = [f"p{p.percentile:g}" for p in c.percentiles if p.verdict == c.verdict]
            reason = f" ({', '.join(behind)})" if c.verdict != "within noise" else ""
            named, against = distinct_labels([other, base])
            rows.append(
                [
                    esc(named),
                    esc(against),
                    *cells,
                    f"{c.ks_statistic:.3f}",
                    f'<span class="verdict-{c.verdict.split()[0]}">{c.verdict}</span>'
                    f"<span class='muted'>{esc(reason)}</span>",
                ]
            )
    return html_table(
        ["run", "against", "p50 change [95 % CI]", "p99 change [95 % CI]", "KS distance", "verdict"], rows
    )


def qq_figure(
    groups: list[tuple[Run, list[Run]]], digests: dict[str, RunDigest], style: dict[str, Style]
) -> str:
    """Small multiples: one QQ panel per comparison group, its baseline on x."""
    shown = groups[:MAX_QQ_PANELS]
    cols = min(3, len(shown))
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 4.0 * rows), squeeze=False)
    for ax, (base, others) in zip(axes.flat, shown, strict=False):
        qa = digests[base.id].qq_ns / 1000
        lo, hi = qa.min(), qa.max()
        for other in others:
            qb = digests[other.id].qq_ns / 1000
            s = style[other.id]
            ax.plot(qa, qb, s.marker, ms=3, color=s.colour, mfc="none", label=_what_differs(other))
            lo, hi = min(lo, qb.min()), max(hi, qb.max())
        ax.plot([lo, hi], [lo, hi], color="#333", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_axis(ax.xaxis)
        log_axis(ax.yaxis)
        ax.set_xlabel(f"{base.label} (µs)", fontsize=8)
        ax.set_ylabel("run quantiles (µs)", fontsize=8)
        ax.set_title(technique_of(base) + f" ×{base.config.get('pairs', '?')}", fontsize=9, y=1.0)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    # Margins in inches, not fractions: one panel (4.4 in wide) keeps its tick labels and
    # axis titles as whole as twelve do.
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=QQ_MARGIN_IN[0] / width,
        right=1 - QQ_MARGIN_IN[1] / width,
        bottom=QQ_MARGIN_IN[2] / height,
        top=1 - QQ_MARGIN_IN[3] / height,
        hspace=0.45,
        wspace=0.28,
    )
    return figure_img(fig, "QQ plots, one per group of like runs")


def scaling_figure(digests: Sequence[RunDigest], style: dict[str, Style]) -> str | None:
    """p50, p99 and max against pairs: a line per technique and policy measured at several
    pair counts; colour = technique, marker and line style = policy."""
    series: dict[tuple[str, str], list[RunDigest]] = defaultdict(list)
    for d in digests:
        series[(technique_of(d.run), d.run.policy_label)].append(d)
    series = {k: v for k, v in series.items() if len({d.run.config.get("pairs") for d in v}) > 1}
    if not series:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), sharex=True)
    all_pairs: set[int] = set()
    for (technique, policy), ds in sorted(series.items()):
        ds = sorted(ds, key=lambda d: int(d.run.config.get("pairs", 0)))
        pairs = [int(d.run.config.get("pairs", 0)) for d in ds]
        all_pairs.update(pairs)
        s = style[ds[0].run.id]
        for ax, stat in zip(axes, ("p50", "p99", "max"), strict=True):
            values = [getattr(d.summary, stat) / 1000 for d in ds]
            ax.plot(
                pairs, values, marker=s.marker, ls=s.linestyle, color=s.colour, label=f"{technique} {policy}"
            )
    ticks = sorted(all_pairs)
    for ax, stat in zip(axes, ("p50", "p99", "max"), strict=True):
        ax.set_yscale("log")
        log_axis(ax.yaxis)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("pairs")
        ax.set_title(stat, fontsize=10, y=1.0)
    axes[0].set_ylabel("latency (µs)")
    axes[2].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.subplots_adjust(left=0.06, right=0.76, bottom=0.13, top=0.92, wspace=0.22)
    return figure_img(fig, "scaling: pairs against p50, p99 and max")


def spectrum_overlay(digests: Sequence[RunDigest], style: dict[str, Style]) -> str:
    """Every run's percentile spectrum on one 1/(1-p) axis (HdrHistogram's plotter view)."""
    fig, ax = plt.subplots(figsize=(12.5, 5.6))
    deepest = 0.5
    for d, label in zip(digests, distinct_labels([d.run for d in digests]), strict=True):
        s = style[d.run.id]
        ax.plot(
            1 / (1 - d.spectrum_p),
            d.spectrum_ns / 1000,
            color=s.colour,
            ls=s.linestyle,
            marker=s.marker,
            markevery=SPECTRUM_POINTS // 8,
            ms=3,
            lw=1.2,
            label=label,
        )
        deepest = max(deepest, float(d.spectrum_p[-1]))
    ticks = [p for p in SPECTRUM_TICKS if p <= deepest]
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.yaxis)
    ax.set_xticks([1 / (1 - p) for p in ticks], [f"{p * 100:g}%" for p in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (µs)")
    ax.grid(True, which="major", alpha=0.3)
    columns = 1 + len(digests) // 24
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=columns)
    fig.subplots_adjust(left=0.07, right=0.98 - 0.15 * columns, bottom=0.11, top=0.97)
    return figure_img(fig, "percentile spectrum of every run")


def overview_html(
    digests: Sequence[RunDigest],
    comparisons: dict[tuple[str, str], Comparison],
    baseline_id: str | None,
    run_jobs: Callable[[list[tuple[Any, tuple[Any, ...]]], Any], list[Any]],
) -> str:
    """The figures and verdicts of the overview card (the tables are the caller's);
    ``comparisons`` holds :func:`compare_runs_for_report` of every pair of
    :func:`comparison_groups`; ``run_jobs`` draws the figures (the report's worker pool)."""
    runs = [d.run for d in digests]
    by_id = {d.run.id: d for d in digests}
    style = styles(runs)
    groups = comparison_groups(runs, baseline_id)
    jobs: list[tuple[Any, tuple[Any, ...]]] = [
        (spectrum_overlay, (digests, style)),
        (scaling_figure, (digests, style)),
    ]
    if groups:
        jobs.append((qq_figure, (groups, by_id, style)))
    spectrum, scaling, *qq = run_jobs(jobs, None)
    parts = ["<h3>Percentile spectrum of every run</h3>" + spectrum]
    if scaling:
        parts.append("<h3>Scaling with the number of pairs</h3>" + scaling)
    if baseline_id is not None:
        parts.append(f"<h3>Against the baseline {esc(groups[0][0].label)}</h3>")
    else:
        parts.append(
            "<h3>Like with like</h3><div class='muted'>Each run against the first run of the same runtime, "
            "technique and pairs (what differs is the policy, collector or load). Runs of different "
            "techniques are not judged against each other; <code>jitterlab report --baseline RUN</code> "
            "compares every run with one you name.</div>"
        )
    if groups:
        shown = (
            ""
            if len(groups) <= MAX_QQ_PANELS
            else f" (the first {MAX_QQ_PANELS} of {len(groups)} groups; the other "
            f"{len(groups) - MAX_QQ_PANELS}: <code>jitterlab report</code> of their runs, or "
            "<code>jitterlab compare BASE RUN</code>)"
        )
        parts.append(verdicts_html(groups, comparisons) + f"<h3>QQ plots, one per group{shown}</h3>" + qq[0])
    else:
        parts.append("<p class='muted'>No two runs measure the same technique and pairs: no verdicts.</p>")
    return "".join(parts)


def _what_differs(run: Run) -> str:
    """What tells the runs of one group apart: policy, collector and load."""
    parts = [run.policy_label]
    if run.config.get("gc"):
        parts.append(str(run.config["gc"]))
    load: Any = run.meta.get("load")
    if isinstance(load, dict) and load.get("kind"):
        parts.append(f"load {load['kind']}")
    return " ".join(parts)
