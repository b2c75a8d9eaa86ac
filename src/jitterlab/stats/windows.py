"""Non-overlapping time windows by send time, with per-window summary and category counts.

Window w holds the samples with floor((t_send - t_first) / width) = w. Percentiles are
exact (the same type-7 definition as the run summary). Data sorted by send time is sliced
directly; otherwise a stable sort orders it first (cheap for harness runs, which are
already sorted within each pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.stats.summary import percentiles


@dataclass(frozen=True)
class WindowTable:
    """One row per window; ``category_counts[w, j]`` counts category ``categories[j]``."""

    width_ns: int
    start_ns: np.ndarray  # window start, relative to the first send
    count: np.ndarray
    mean: np.ndarray
    p50: np.ndarray
    p99: np.ndarray
    max: np.ndarray
    categories: tuple[int, ...]
    category_counts: np.ndarray


def time_windows(
    t_send_ns: npt.ArrayLike,
    latency: npt.ArrayLike,
    width_ns: int = 1_000_000_000,
    labels: npt.ArrayLike | None = None,
) -> WindowTable:
    """Split a run into windows of ``width_ns`` by send time and summarise each.

    Empty windows (a stall with no sends) are kept with count 0 and NaN statistics.
    """
    t = np.asarray(t_send_ns)
    x = np.asarray(latency)
    lab = None if labels is None else np.asarray(labels)
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    if t.size == 0:
        empty = np.zeros(0)
        return WindowTable(
            width_ns, empty, empty.astype(np.int64), empty, empty, empty, empty, (), np.zeros((0, 0))
        )
    if t.size > 1 and not bool(np.all(t[1:] >= t[:-1])):
        order = np.argsort(t, kind="stable")
        t, x = t[order], x[order]
        lab = None if lab is None else lab[order]
    t0 = int(t[0])
    n_windows = int((int(t[-1]) - t0) // width_ns) + 1
    edges = np.searchsorted(t, t0 + width_ns * np.arange(n_windows + 1), side="left")
    categories: tuple[int, ...] = tuple(int(c) for c in np.unique(lab)) if lab is not None else ()
    offset = min(categories) if categories else 0
    counts = np.diff(edges)
    mean = np.full(n_windows, np.nan)
    p50 = np.full(n_windows, np.nan)
    p99 = np.full(n_windows, np.nan)
    mx = np.full(n_windows, np.nan)
    cat_counts = np.zeros((n_windows, len(categories)), dtype=np.int64)
    for w in range(n_windows):
        lo, hi = edges[w], edges[w + 1]
        if hi == lo:
            continue
        chunk = x[lo:hi]
        mean[w] = float(chunk.mean())
        mx[w] = float(chunk.max())
        p50[w], p99[w] = percentiles(chunk, (50.0, 99.0))
        if lab is not None:
            full = np.bincount(lab[lo:hi].astype(np.int64) - offset, minlength=max(categories) - offset + 1)
            cat_counts[w] = full[np.asarray(categories) - offset]
    return WindowTable(
        width_ns, width_ns * np.arange(n_windows), counts, mean, p50, p99, mx, categories, cat_counts
    )
