"""A progress bar on stderr, shown only on a terminal (hyperfine's habit)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _compact(n: float) -> str:
    """1234567 -> 1.23M, 25551 -> 25.6k: short and steady for a line that redraws."""
    for suffix, scale in (("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:.3g}"


class ProgressBar:
    """Redraws one line on a TTY; silent elsewhere so logs and pipes stay clean."""

    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        width: int = 28,
        scale: float = 1.0,
        unit: str = "",
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.total = max(total, 1)
        self.width = width
        self.started = time.monotonic()
        self.scale = scale  # progress in nanoseconds shows as seconds with scale 1e9, unit "s"
        self.unit = unit

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        fraction = min(done / self.total, 1.0)
        filled = int(fraction * self.width)
        elapsed = time.monotonic() - self.started
        eta = f"{elapsed / fraction - elapsed:4.0f}s" if fraction > 0.01 else "   ?"
        bar = "█" * filled + "·" * (self.width - filled)
        self.stream.write(
            f"\r{self.label:<28} {bar} {fraction:6.1%} {_compact(done / self.scale):>6}/{_compact(self.total / self.scale)}{self.unit} eta {eta}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
