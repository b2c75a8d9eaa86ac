"""The tables of runs, each row layout defined once: text for the terminal, the same rows for
the HTML report and JSON for machines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.core.percentiles import (  # no numpy: `runs` starts fast
    SUMMARY_KEY_LEVELS,
    is_resolved,
    unresolved_keys,
)
from jitterlab.core.render import render
from jitterlab.core.units import format_ns
from jitterlab.store import Run

if TYPE_CHECKING:  # numpy and the statistics are imported by the tables that compute, so
    # that `jitterlab runs` (stored figures only) starts fast (issue 28 item 3)
    from jitterlab.stats import StackedResult
    from jitterlab.stats.quantile_ci import QuantileInterval


SUMMARY_LEVELS = SUMMARY_KEY_LEVELS  # a summary's percentile keys and their levels


def distinct_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's :attr:`Run.label`, with its id added where several runs share the label,
    so that no two runs read alike ("mutex ×1 other (ID)")."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.label] = counts.get(run.label, 0) + 1
    return [f"{r.label} ({r.id})" if counts[r.label] > 1 else r.label for r in runs]


def table1_layout(
    runs: Sequence[Run], summaries: Sequence[Mapping[str, float]]
) -> tuple[list[str], list[list[str]]]:
    """Seed 000, Table 1: one row per runtime/technique × pairs, then max, mean and median
    for each policy. Every run is in the table: when several runs share a row and policy,
    that row is split into one row per run, each named by its run's id."""
    policies = list(dict.fromkeys(r.policy_label for r in runs))
    groups: dict[str, list[tuple[Run, Mapping[str, float]]]] = {}
    for run, summary in zip(runs, summaries, strict=True):
        c = run.config
        label = f"{run.technique_label} ×{c.get('pairs', '?')}"
        if c.get("runtime", "native") != "native":
            label = f"{c.get('runtime')}/{label}"
        groups.setdefault(label, []).append((run, summary))
    rows: list[tuple[str, dict[str, Mapping[str, float]]]] = []
    for label, members in groups.items():
        shared = len({r.policy_label for r, _ in members}) < len(members)
        if shared:  # one row per run, so that none hides another
            rows += [(f"{label} ({run.id})", {run.policy_label: summary}) for run, summary in members]
        else:
            rows.append((label, {run.policy_label: summary for run, summary in members}))
    headers = ["", *[f"{stat} {p}" for stat in ("max", "mean", "median") for p in policies]]
    body = []
    for label, cells in rows:
        row = [label]
        for stat in ("max", "mean", "p50"):
            for p in policies:
                cell = cells.get(p)
                row.append(_stat_cell(cell, stat) if cell else "—")
        body.append(row)
    return headers, body


def _stat_cell(summary: Mapping[str, float], stat: str) -> str:
    """max, mean or the median (``p50``) of a stored summary in Tables 1–3: the median "not
    resolved" when the run holds too few samples (fewer than 20)."""
    if stat == "p50":
        return level_cell(summary.get("p50"), int(summary.get("count") or 0), 50.0)
    return format_ns(summary[stat])


def covers_several_collectors(runs: Sequence[Run]) -> bool:
    return len({r.config["gc"] for r in runs if r.config.get("gc")}) > 1


def collector_table_layout(
    runs: Sequence[Run], summaries: Sequence[Mapping[str, float]]
) -> tuple[list[str], list[list[str]]]:
    """Seed 000, Tables 2–3: for each JVM technique × pairs, one row per collector ×
    scheduler with max, mean and median. Runs without a collector are left out (the caller
    says so); when several runs share a row, each is a row of its own named by its id."""
    keyed: list[tuple[tuple[str, str, str], Run, Mapping[str, float]]] = []
    for run, summary in zip(runs, summaries, strict=True):
        c = run.config
        if not c.get("gc"):
            continue
        what = str(c.get("technique", "?")) + (f"/{c['variant']}" if c.get("variant") else "")
        keyed.append(((f"{what} ×{c.get('pairs', '?')}", str(c["gc"]), run.policy_label), run, summary))
    counts: dict[tuple[str, str, str], int] = {}
    for key, _run, _summary in keyed:
        counts[key] = counts.get(key, 0) + 1
    cells: dict[tuple[str, str, str], Mapping[str, float]] = {}
    for (group, gc, policy), run, summary in keyed:
        cells[(group, gc, f"{policy} ({run.id})" if counts[(group, gc, policy)] > 1 else policy)] = summary
    body: list[list[str]] = []
    shown: set[str] = set()
    for (group, gc, policy), cell in sorted(cells.items()):
        first = group not in shown
        shown.add(group)
        body.append(
            [group if first else "", gc, policy, *(_stat_cell(cell, stat) for stat in ("max", "mean", "p50"))]
        )
    return ["", "GC", "scheduler", "max", "mean", "median"], body


def collector_table(runs: Sequence[Run]) -> str:
    """The Tables 2–3 layout as text, from the summaries stored with the runs."""
    headers, rows = collector_table_layout(runs, [r.meta["summary"]["latency_ns"] for r in runs])
    return render(headers, rows, "lll" + "r" * 3)


def table1(runs: Sequence[Run]) -> str:
    """The Table-1 layout as text, from the summaries stored with the runs."""
    headers, rows = table1_layout(runs, [r.meta["summary"]["latency_ns"] for r in runs])
    return render(headers, rows)


INTERVAL_HEADERS = ["start", "count", "p50", "p99", "max"]


def histogram_interval_rows(
    windows: Sequence[Mapping[str, Any]], limit: int | None = None
) -> list[list[str]]:
    """start (from the log's StartTime), count, p50, p99, max of each interval of an
    imported HdrHistogram log; with a correction for coordinated omission, its p99 and max
    beside; a level an interval's count does not resolve is "not resolved"."""
    shown = list(windows)[:limit]
    first = shown[0]["start_ms"] if shown else 0
    rows = []
    for w in shown:
        start = w["offset_s"] if "offset_s" in w else (w["start_ms"] - first) / 1000
        row = [
            f"{start:.3f} s",
            f"{int(w['count']):,}",
            level_cell(w["p50"], int(w["count"]), 50.0),
            level_cell(w["p99"], int(w["count"]), 99.0),
            format_ns(w["max"]),
        ]
        if "corrected" in w:
            c = w["corrected"]
            row += [level_cell(c["p99"], int(c.get("count") or w["count"]), 99.0), format_ns(c["max"])]
        rows.append(row)
    return rows


def stream_rows(
    streams: Sequence[Mapping[str, Any]], which: str = "summary", untagged: str = "(untagged)"
) -> tuple[list[str], list[list[str]]]:
    """One row per tag of an imported log (its whole-log figures), side by side; a merged
    histogram run's untagged stream is the union of its sources (``untagged="(union)"``),
    each tag one source: the table split by source."""
    headers: list[str] = []
    rows = []
    for s in streams:
        if which not in s:
            continue
        headers, values = summary_cells(s[which])
        name = untagged if s["tag"] is None else str(s["tag"])
        rows.append([name, f"{int(s['intervals']):,}", *values])
    return ["stream", "intervals", *headers], rows


def untagged_name(run: Run) -> str:
    """What a histogram run's untagged stream is: a merged run's union, else the log's untagged lines."""
    return "(union)" if run.meta.get("merge") else "(untagged)"


def summary_row(run: Run) -> dict[str, Any]:
    """A run in one JSON row: id, label, status and the stored summary's headline figures."""
    s = run.meta.get("summary", {}).get("latency_ns", {})
    return {
        "id": run.id,
        "name": run.name,
        "label": run.label,
        "status": run.meta.get("status"),
        "created_utc": run.meta.get("created_utc"),
        "count": s.get("count"),
        "p50_ns": s.get("p50"),
        "p99_ns": s.get("p99"),
        "max_ns": s.get("max"),
        "unresolved": unresolved_keys(s, ("p50", "p99")),
    }


def resolved_values(values: Mapping[str, float] | None, run: Run) -> dict[str, float | None] | None:
    """``--percentiles``' values by key (``p99.9``, ``max``) with None for a level the run's
    stored count does not resolve, as ``show --json`` gives them."""
    if values is None:
        return None
    count = int(((run.meta.get("summary") or {}).get("latency_ns") or {}).get("count") or 0)
    return {k: v if _level_cell(v, count, k) != NOT_RESOLVED else None for k, v in values.items()}


RUNS_HEADERS = [
    "id",
    "name",
    "time (UTC)",
    "technique",
    "pairs",
    "policy",
    "samples",
    "p50",
    "p99",
    "max",
    "status",
]


def runs_rows(
    runs: Sequence[Run], chosen: dict[str, dict[str, float]] | None = None, keys: Sequence[str] = ()
) -> list[list[str]]:
    """``jitterlab runs``: one row per run, one format per column; ``chosen``: run id ->
    the ``--percentiles`` values (columns ``keys``), shown instead of p50, p99 and max
    (— for a run without them)."""
    rows = []
    for r in runs:
        s = r.meta.get("summary", {}).get("latency_ns", {})
        count = int(s.get("count") or 0)
        if chosen is None:
            figures = [_level_cell(s.get(k), count, k) for k in ("p50", "p99")] + [format_ns(s.get("max"))]
        else:
            values = chosen.get(r.id)
            figures = [_level_cell(values[k], count, k) for k in keys] if values else ["—"] * len(keys)
        rows.append(
            [
                r.id,
                r.name or "",
                str(r.meta.get("created_utc", ""))[:19].replace("T", " "),
                r.technique_label,
                str(r.config.get("pairs", "?")),
                r.policy_label,
                f"{int(s.get('count') or 0):,}",  # every count in full: 2,000,000 beside 111,614
                *figures,
                str(r.meta.get("status", "")),
            ]
        )
    return rows


def _level_cell(value: float | None, count: int, key: str) -> str:
    """A stored percentile in a table (:func:`level_cell` of a summary key)."""
    level = 100.0 if key == "max" else float(key[1:].replace("_", "."))
    return level_cell(value, count, level)


NOT_RESOLVED = "not resolved"


def level_cell(
    value: float | None,
    count: int | None,
    level: float,
    interval: QuantileInterval | None = None,
    with_interval: bool = False,
) -> str:
    """One percentile in a table cell, by the one rule (core/percentiles.py ``is_resolved``):
    where ``count`` samples do not resolve ``level``, "≥ x" (the lower bound of its
    ``interval``) or "not resolved" when no interval is at hand, never a bare number; else the
    value, and with ``with_interval`` its interval beside ("20 µs [19.9 µs, 20.1 µs]"). With
    ``interval``, its ``resolved`` flag decides (the same rule, on the run's own count)."""
    if interval is not None:  # its flag is the rule's verdict on the run's own count
        unresolved = not interval.resolved
    else:
        unresolved = (
            level < 100 and bool(count) and value is not None and not is_resolved(int(count or 0), level)
        )
    if unresolved:
        if interval is not None and interval.ci_low is not None:
            return f"≥ {format_ns(interval.ci_low)}"
        return NOT_RESOLVED
    if interval is not None and interval.resolved and with_interval and interval.method != "observed":
        shown, lower, upper = _distinct_ns(value, interval.ci_low, interval.ci_high)
        return f"{shown} [{lower or '−∞'}, {upper or '∞'}]"
    return format_ns(value)


def runs_table(
    runs: Sequence[Run],
    damaged: Sequence[tuple[Path, str]] = (),
    chosen: dict[str, dict[str, float]] | None = None,
    keys: Sequence[str] = (),
) -> str:
    """The runs, then the damaged ones (status ``damaged``; the reason goes to stderr);
    with ``chosen`` (``--percentiles``) columns ``keys`` instead of p50, p99 and max."""
    headers = RUNS_HEADERS if chosen is None else [*RUNS_HEADERS[:7], *keys, "status"]
    rows = runs_rows(runs, chosen, keys) + [
        [d.name, *([""] * (len(headers) - 2)), "damaged"] for d, _ in damaged
    ]
    return render(headers, rows, "lllll" + "r" * (len(headers) - 6) + "l")


# --- category, attribution and summary rows: the text and the HTML show these same rows ---


def category_name(index: int) -> str:
    return "main" if index == 0 else "low" if index == -1 else str(index)


def distinct_digits(values: Sequence[float], digits: int = 3) -> int:
    """The fewest significant digits (at least ``digits``, at most 9) at which values that
    differ also print differently in :func:`format_ns`: so that ranges that do not touch are
    never shown touching ("30.1 µs – 30.1 µs")."""
    while digits < 9:
        shown: dict[str, float] = {}
        if all(shown.setdefault(format_ns(v, digits), v) == v for v in values):
            return digits
        digits += 1
    return digits


def category_rows(categories: StackedResult) -> list[list[str]]:
    """Each category: its name, value range, count and share; the ranges with as many digits
    as tell every bound from its neighbours."""
    present = [c for c in categories.categories if c.count]
    digits = distinct_digits([float(v) for c in present for v in (c.lower, c.upper)])
    rows = []
    for c in categories.categories:
        value_range = "—" if c.count == 0 else f"{format_ns(c.lower, digits)} – {format_ns(c.upper, digits)}"
        rows.append([category_name(c.index), value_range, f"{c.count:,}", f"{c.share:.4%}"])
    return rows


def window_start(start_ns: float, width_ns: float) -> str:
    """A window's start, in seconds from the run's first send, with as many decimals as tell
    windows of ``width_ns`` apart ("10.0001 s" for 100 µs windows, never "10 s" ten times;
    0 is "0 s", not "0 ns")."""
    import math

    decimals = max(0, -math.floor(math.log10(width_ns / 1e9))) if width_ns > 0 else 9
    return f"{start_ns / 1e9:.{min(decimals, 9)}f} s"


CATEGORY_HEADERS = ["category", "range", "count", "share"]
ATTRIBUTION_HEADERS = ["cause", "spikes", "share", "time in them"]


def attribution_rows(block: dict[str, Any]) -> list[list[str]]:
    return [
        [c["cause"], f"{c['spikes']:,}", f"{c['share']:.1%}", format_ns(c["time_ns"])]
        for c in block["causes"]
    ]


def attribution_caption(block: dict[str, Any]) -> str:
    return (
        f"spike causes (perf tracepoints on the spike's CPU during the spike; {block['attributed']:,} of "
        f"{block['spikes']:,} spikes overlap a guest event)"
    )


SUMMARY_FIELDS = (
    ("count", "count"),
    ("min", "min"),
    ("mean", "mean"),
    ("p50", "median"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p99_9", "p99.9"),
    ("p99_99", "p99.99"),
    ("p99_999", "p99.999"),
    ("max", "max"),
    ("std", "std"),
)


def summary_cells(
    summary: Mapping[str, Any], intervals: Sequence[QuantileInterval] | None = None
) -> tuple[list[str], list[str]]:
    """Headers and formatted values of a summary (``Summary.to_dict()`` or a stored one). A
    percentile the sample does not resolve (stats/quantile_ci.py) is never a bare number:
    "≥ x" with the lower bound of its interval when ``intervals`` has it, else "not resolved"."""
    count = summary.get("count")
    bounds = {q.level: q for q in intervals or ()}
    headers, values = [], []
    for key, name in SUMMARY_FIELDS:
        value = summary.get(key)
        headers.append(name)
        level = SUMMARY_LEVELS.get(key)
        if level is not None and count and value is not None and not is_resolved(int(count), level):
            q = bounds.get(level)
            values.append(level_cell(value, int(count), level, q))
            continue
        values.append(f"{int(value):,}" if key == "count" and value is not None else format_ns(value))
    return headers, values


INTERVAL_TABLE_HEADERS = ["percentile", "value", "interval", "method"]


def interval_rows(intervals: Sequence[QuantileInterval], count: int) -> list[list[str]]:
    """Rows of the percentile-interval table (show, describe, report): each level's value
    and interval with its method; a level the sample does not resolve as "≥ lower bound"
    and "not resolved" (docs/statistics.md, "Intervals on percentiles")."""
    from jitterlab.core.percentiles import percentile_key
    from jitterlab.stats.quantile_ci import BLOCK, MAXIMUM, RESOLVE_BEYOND

    rows = []
    for q in intervals:
        name = percentile_key(q.level)
        if q.method == MAXIMUM:
            rows.append([name, format_ns(q.value), "—", "observed (one sample: no interval)"])
            continue
        method = q.method
        if q.method == BLOCK:
            method = f"block ({q.blocks:,} time blocks of ~{q.block_length:,} samples)"
        if not q.resolved:
            beyond = count * (100.0 - q.level) / 100.0
            low = f"≥ {format_ns(q.ci_low)}" if q.ci_low is not None else "—"
            rows.append(
                [name, low, f"not resolved: {beyond:.3g} samples beyond it (< {RESOLVE_BEYOND})", method]
            )
            continue
        shown, lower, upper = _distinct_ns(q.value, q.ci_low, q.ci_high)
        rows.append([name, shown or "n/a", f"[{lower or '−∞'}, {upper or '∞'}]", method])
    return rows


def _distinct_ns(*values: float | None) -> list[str | None]:
    """``format_ns`` of each value in the unit of the first, with as many significant digits
    (3 to 7) as it takes to tell unequal values apart (an interval of ±0.3 % around 20 µs
    would otherwise read "[20 µs, 20 µs]"); None stays None."""
    given = [v for v in values if v is not None]
    magnitude = abs(float(given[0])) if given else 0.0
    unit, scale = next(
        ((u, s) for u, s in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)) if magnitude >= s), ("ns", 1.0)
    )
    for digits in range(3, 8):
        texts = [None if v is None else f"{v / scale:.{digits}g} {unit}" for v in values]
        shown = [t for t in texts if t is not None]
        if len(set(shown)) == len(set(given)):
            break
    return texts


def interval_caption(intervals: Sequence[QuantileInterval]) -> str:
    """The line above the interval table: the confidence and what decides the method."""
    confidence = intervals[0].confidence if intervals else 0.95
    return (
        f"percentiles with {confidence:.0%} intervals (binomial: independent samples; block: "
        "serially dependent, as the dispersion of per-block counts shows; docs/statistics.md):"
    )


HDR_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


def pipeline_table(runs: Sequence[Run]) -> tuple[list[str], list[list[str]]]:
    """The HdrHistogram-style table of the seed: mean, min, 50 … 99.9999 %, max, count; a
    level the run does not resolve is "≥ x", the lower bound of its interval
    (stats/quantile_ci.py), never a bare number."""
    headers = ["series", "mean", "min", *[f"{p:g}%" for p in HDR_PERCENTILES], "max", "count"]
    from jitterlab.stats.quantile_ci import intervals_of_sample

    several = len({run.config.get("runtime") for run in runs}) > 1  # native and JVM side by side
    rows = []
    for run in runs:
        x = run.latency_ns
        runtime = f"{run.config.get('runtime')} " if several else ""
        if x.size == 0:
            rows.append([f"{runtime}{run.config.get('series')}", *["n/a"] * (len(headers) - 2), "0"])
            continue
        intervals = intervals_of_sample(x, HDR_PERCENTILES, run.t_send_ns)
        rows.append(
            [
                f"{runtime}{run.config.get('series')}",
                format_ns(float(x.mean())),
                format_ns(float(x.min())),
                *[level_cell(q.value, x.size, q.level, q) for q in intervals],
                format_ns(float(x.max())),
                f"{x.size:,}",
            ]
        )
    return headers, rows


HICCUP_LEVELS = {"p50": 50.0, "p99": 99.0, "p99_9": 99.9}
HICCUP_HEADERS = ["cpu", "interruptions", "per s", "time lost", "p50", "p99", "p99.9", "max"]


def hiccup_per_cpu(run: Run) -> list[dict[str, Any]]:
    """Interruptions, rate, share of time lost, gap percentiles and max for each CPU; a
    percentile the CPU's gaps do not resolve is None, its key listed in ``unresolved``."""
    import numpy as np

    from jitterlab.stats import summarize

    info = run.meta.get("hiccup") or {}
    gaps = run.latency_ns
    cpus = run.pair
    rows = []
    for cpu_info in info.get("per_cpu", []):
        cpu = int(cpu_info["cpu"])
        mine = gaps[cpus == cpu]
        span = max(int(cpu_info["t_end_ns"]) - int(cpu_info["t_begin_ns"]), 1)
        s = summarize(mine)
        unresolved = [
            key for key, level in HICCUP_LEVELS.items() if mine.size and not is_resolved(mine.size, level)
        ]
        figures = {f"{key}_ns": None if key in unresolved else getattr(s, key) for key in HICCUP_LEVELS}
        rows.append(
            {
                "cpu": cpu,
                "interruptions": int(mine.size) + int(cpu_info.get("gaps_dropped", 0)),
                "rate_per_s": (mine.size + int(cpu_info.get("gaps_dropped", 0))) / (span / 1e9),
                "time_lost_fraction": float(np.sum(mine)) / span,
                **figures,
                "unresolved": unresolved,
                "max_ns": s.max,
                "min_gap_ns": cpu_info.get("min_gap_ns"),
                "loops": cpu_info.get("loops"),
            }
        )
    return rows


def hiccup_rows(per_cpu: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            str(r["cpu"]),
            f"{r['interruptions']:,}",
            f"{r['rate_per_s']:.1f}",
            f"{r['time_lost_fraction']:.3%}",
            *(NOT_RESOLVED if key in r["unresolved"] else format_ns(r[f"{key}_ns"]) for key in HICCUP_LEVELS),
            format_ns(r["max_ns"]),
        ]
        for r in per_cpu
    ]
