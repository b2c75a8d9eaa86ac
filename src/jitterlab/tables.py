"""Plain-text tables for the terminal (data on stdout, aligned, no colour codes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jitterlab.store import Run
from jitterlab.units import format_ns


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Render rows under headers; ``align`` has one 'l' or 'r' per column (default: first left)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    align = align or "l" + "r" * (len(headers) - 1)
    lines = []
    for n, row in enumerate(cells):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=True)]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


def table1_layout(
    runs: Sequence[Run], summaries: Sequence[Mapping[str, float]]
) -> tuple[list[str], list[list[str]]]:
    """Seed 000, Table 1: one row per runtime/technique × pairs, then max, mean and median
    for each policy. When several runs share a cell the later one wins."""
    policies = list(dict.fromkeys(r.policy_label for r in runs))
    cells: dict[tuple[str, str], Mapping[str, float]] = {}
    rows: list[str] = []
    for run, summary in zip(runs, summaries, strict=True):
        c = run.config
        label = f"{run.technique_label} ×{c.get('pairs', '?')}"
        if c.get("runtime", "native") != "native":
            label = f"{c.get('runtime')}/{label}"
        if label not in rows:
            rows.append(label)
        cells[(label, run.policy_label)] = summary
    headers = ["", *[f"{stat} {p}" for stat in ("max", "mean", "median") for p in policies]]
    body = []
    for label in rows:
        row = [label]
        for stat in ("max", "mean", "p50"):
            for p in policies:
                cell = cells.get((label, p))
                row.append(format_ns(cell[stat]) if cell else "—")
        body.append(row)
    return headers, body


def covers_several_collectors(runs: Sequence[Run]) -> bool:
    return len({r.config["gc"] for r in runs if r.config.get("gc")}) > 1


def collector_table_layout(
    runs: Sequence[Run], summaries: Sequence[Mapping[str, float]]
) -> tuple[list[str], list[list[str]]]:
    """Seed 000, Tables 2–3: for each JVM technique × pairs, one row per collector ×
    scheduler with max, mean and median. Runs without a collector are left out; when
    several runs share a row the later one wins."""
    cells: dict[tuple[str, str, str], Mapping[str, float]] = {}
    for run, summary in zip(runs, summaries, strict=True):
        c = run.config
        if not c.get("gc"):
            continue
        what = str(c.get("technique", "?")) + (f"/{c['variant']}" if c.get("variant") else "")
        cells[(f"{what} ×{c.get('pairs', '?')}", str(c["gc"]), run.policy_label)] = summary
    body: list[list[str]] = []
    shown: set[str] = set()
    for (group, gc, policy), cell in sorted(cells.items()):
        first = group not in shown
        shown.add(group)
        body.append(
            [group if first else "", gc, policy, *(format_ns(cell[stat]) for stat in ("max", "mean", "p50"))]
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


def histogram_interval_rows(run: Run, limit: int | None = None) -> list[list[str]]:
    """start, count, p50, p99, max of each interval of an imported HdrHistogram log."""
    windows = run.meta["histogram"].get("windows", [])[:limit]
    first = windows[0]["start_ms"] if windows else 0
    return [
        [
            f"{(w['start_ms'] - first) / 1000:.3f} s",
            f"{int(w['count']):,}",
            format_ns(w["p50"]),
            format_ns(w["p99"]),
            format_ns(w["max"]),
        ]
        for w in windows
    ]
