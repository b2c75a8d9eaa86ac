"""Plain-text tables for the terminal (data on stdout, aligned, no colour codes)."""

from __future__ import annotations

from collections.abc import Sequence
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


def policy_label(run: Run) -> str:
    c = run.config
    policy = str(c.get("policy", "other"))
    return f"{policy} {c['priority']}" if policy in ("fifo", "rr") and c.get("priority") else policy


def row_label(run: Run, key: str = "technique") -> str:
    c = run.config
    return f"{c.get(key, '?')} ×{c.get('pairs', '?')}"


def table1(runs: Sequence[Run], row_key: str = "technique") -> str:
    """Seed 000, Table 1: one row per technique (× pairs), Max | Mean | Median per policy.

    When several runs share a cell the newest wins (runs are given oldest first).
    """
    policies = list(dict.fromkeys(policy_label(r) for r in runs))
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    rows: list[str] = []
    for run in runs:
        label = row_label(run, row_key)
        if label not in rows:
            rows.append(label)
        cells[(label, policy_label(run))] = run.meta["summary"]["latency_ns"]
    headers = [
        "",
        *[f"max {p}" for p in policies],
        *[f"mean {p}" for p in policies],
        *[f"median {p}" for p in policies],
    ]
    body = []
    for label in rows:
        row: list[str] = [label]
        for stat in ("max", "mean", "p50"):
            for p in policies:
                s = cells.get((label, p))
                row.append(format_ns(s[stat]) if s else "—")
        body.append(row)
    return render(headers, body)
