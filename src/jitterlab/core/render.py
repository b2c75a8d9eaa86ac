"""Plain-text tables for the terminal: aligned columns, no colour codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


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
