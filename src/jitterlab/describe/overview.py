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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

from jitterlab.core.html import esc, figure_img, html_table
from jitterlab.describe.analysis import RunDescription
from jitterlab.stats import compare_samples, percentiles
from jitterlab.store import Run

PALETTE = [
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860",
    "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd", "#1b1b1b", "#a6761d",
]  # fmt: skip
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
LINESTYLES = ["-", "--", ":", "-."]
SPECTRUM_TICKS = (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)
MAX_QQ_PANELS = 12


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
    """One colour per technique, one marker and line style per policy (by run id)."""
    techniques = sorted({technique_of(r) for r in runs})
    policies = sorted({r.policy_label for r in runs})
    out = {}
    for r in runs:
        t, p = techniques.index(technique_of(r)), policies.index(r.policy_label)
        out[r.id] = Style(
            PALETTE[t % len(PALETTE)], MARKERS[p % len(MARKERS)], LINESTYLES[p % len(LINESTYLES)]
        )
    return out


def comparison_key(run: Run) -> tuple[str, str, str, str]:
    c = run.config
    return (
        str(c.get("runtime", "native")),
        str(c.get("technique", "?")),
        str(c.get("series") or c.get("variant") or ""),
        str(c.get("pairs", "?")),
    )


def comparison_groups(
    descriptions: Sequence[RunDescription], baseline_id: str | None = None
) -> list[tuple[RunDescription, list[RunDescription]]]:
    """(baseline, the runs judged against it) for every group of like runs with two or
    more members, the first of each group its baseline; with ``baseline_id``, one group of
    every run against that one."""
    if baseline_id is not None:
        base = next(d for d in descriptions if d.run.id == baseline_id)
        return [(base, [d for d in descriptions if d is not base])]
    groups: dict[tuple[str, ...], list[RunDescription]] = defaultdict(list)
    for d in descriptions:
        groups[comparison_key(d.run)].append(d)
    return [(members[0], members[1:]) for members in groups.values() if len(members) > 1]


def verdicts_html(groups: list[tuple[RunDescription, list[RunDescription]]]) -> str:
    rows = []
    for base, others in groups:
        for d in others:
            c = compare_samples(base.run.latency_ns, d.run.latency_ns)
            diffs = {p.percentile: p for p in c.percentiles}
            cells = [
                f"{diffs[p].relative:+.1%} [{diffs[p].ci_low:+.1%}, {diffs[p].ci_high:+.1%}]"
                for p in (50.0, 99.0)
            ]
            # Name the percentiles behind a verdict: one regressed far-tail percentile makes
            # the whole run "regressed" even when p50 and p99, shown here, improved.
            behind = [f"p{p.percentile:g}" for p in c.percentiles if p.verdict == c.verdict]
            reason = f" ({', '.join(behind)})" if c.verdict != "within noise" else ""
            rows.append(
                [
                    esc(d.run.label),
                    esc(base.run.label),
                    *cells,
                    f"{c.ks_statistic:.3f}",
                    f'<span class="verdict-{c.verdict.split()[0]}">{c.verdict}</span>'
                    f"<span class='muted'>{esc(reason)}</span>",
                ]
            )
    return html_table(
        ["run", "against", "p50 change [95 % CI]", "p99 change [95 % CI]", "KS distance", "verdict"], rows
    )


def qq_figure(groups: list[tuple[RunDescription, list[RunDescription]]], style: dict[str, Style]) -> str:
    """Small multiples: one QQ panel per comparison group, its baseline on x."""
    shown = groups[:MAX_QQ_PANELS]
    cols = min(3, len(shown))
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 4.0 * rows), squeeze=False)
    probs = tuple(np.concatenate([np.linspace(1, 99, 99), [99.5, 99.9, 99.95, 99.99]]))
    for ax, (base, others) in zip(axes.flat, shown, strict=False):
        qa = percentiles(base.run.latency_ns, probs) / 1000
        lo, hi = qa.min(), qa.max()
        for d in others:
            qb = percentiles(d.run.latency_ns, probs) / 1000
            s = style[d.run.id]
            ax.plot(qa, qb, s.marker, ms=3, color=s.colour, mfc="none", label=_what_differs(d.run))
            lo, hi = min(lo, qb.min()), max(hi, qb.max())
        ax.plot([lo, hi], [lo, hi], color="#333", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"{base.run.label} (µs)", fontsize=8)
        ax.set_ylabel("run quantiles (µs)", fontsize=8)
        ax.set_title(technique_of(base.run) + f" ×{base.run.config.get('pairs', '?')}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return figure_img(fig, "QQ plots, one per group of like runs")


def scaling_figure(descriptions: Sequence[RunDescription], style: dict[str, Style]) -> str | None:
    """p50, p99 and max against pairs: a line per technique and policy measured at several
    pair counts; colour = technique, marker and line style = policy."""
    series: dict[tuple[str, str], list[RunDescription]] = defaultdict(list)
    for d in descriptions:
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
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("pairs")
        ax.set_title(stat, fontsize=10)
    axes[0].set_ylabel("latency (µs)")
    axes[2].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return figure_img(fig, "scaling: pairs against p50, p99 and max")


def spectrum_overlay(descriptions: Sequence[RunDescription], style: dict[str, Style]) -> str:
    """Every run's percentile spectrum on one 1/(1-p) axis (HdrHistogram's plotter view)."""
    fig, ax = plt.subplots(figsize=(11, 5.2))
    deepest = 0.5
    for d in descriptions:
        n = d.summary.count
        top = 1 - 1 / max(n, 2)
        ps = np.clip(1 - np.geomspace(1, 1 / max(n, 2), 120), 0, top)
        values = percentiles(d.run.latency_ns, tuple(ps * 100)) / 1000
        s = style[d.run.id]
        ax.plot(1 / (1 - ps), values, color=s.colour, ls=s.linestyle, lw=1.2, label=d.run.label)
        deepest = max(deepest, top)
    ticks = [p for p in SPECTRUM_TICKS if p <= deepest]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1 / (1 - p) for p in ticks], [f"{p * 100:g}%" for p in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (µs)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=1 + len(descriptions) // 24)
    fig.tight_layout()
    return figure_img(fig, "percentile spectrum of every run")


def overview_html(descriptions: Sequence[RunDescription], baseline_id: str | None = None) -> str:
    """The figures and verdicts of the overview card (the tables are the caller's)."""
    style = styles([d.run for d in descriptions])
    parts = ["<h3>Percentile spectrum of every run</h3>" + spectrum_overlay(descriptions, style)]
    scaling = scaling_figure(descriptions, style)
    if scaling:
        parts.append("<h3>Scaling with the number of pairs</h3>" + scaling)
    groups = comparison_groups(descriptions, baseline_id)
    if baseline_id is not None:
        parts.append(f"<h3>Against the baseline {esc(groups[0][0].run.label)}</h3>")
    else:
        parts.append(
            "<h3>Like with like</h3><div class='muted'>Each run against the first run of the same runtime, "
            "technique and pairs (what differs is the policy, collector or load). Runs of different "
            "techniques are not judged against each other; <code>jitterlab report --baseline RUN</code> "
            "compares every run with one you name.</div>"
        )
    if groups:
        parts.append(verdicts_html(groups) + qq_figure(groups, style))
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
