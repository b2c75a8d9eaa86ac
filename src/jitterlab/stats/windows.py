"""Non-overlapping time windows by send time, with per-window summary and category counts.

Window w holds the samples with floor((t_send - t_first) / width) = w. Percentiles are
exact (the same type-7 definition as the run summary). Data sorted by send time is sliced
directly; otherwise a stable sort orders it first (cheap for harness runs, which are
already sorted within each pair).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.categories import StackedResult, category_edges
from jitterlab.stats.summary import exact_sum, percentiles_sorted

# The most windows an analysis holds (each a row of per-window state: count, sum, extremes,
# category counts, percentiles; about 100 bytes, so 10^6 windows are ~100 MB), checked
# before anything per window is allocated (issue 42 item 13: --window 1ns on a 1.8 s run
# asked for 24 GB)
MAX_WINDOWS = 1_000_000


class TooManyWindows(JitterlabError):
    """A window width that would split the sends into more than :data:`MAX_WINDOWS`."""


def window_count(t_first: int, t_last: int, width_ns: int) -> int:
    """How many windows of ``width_ns`` the sends from ``t_first`` to ``t_last`` fill,
    refused in one line naming the bound and the narrowest width that fits when more than
    :data:`MAX_WINDOWS` (before any per-window array exists)."""
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    span = int(t_last) - int(t_first)  # below 0 (extents that do not hold the sends): no window
    n = max(span // width_ns + 1, 0)
    if n > MAX_WINDOWS:
        fits = span // (MAX_WINDOWS - 1) + 1  # the narrowest width giving at most MAX_WINDOWS
        raise TooManyWindows(
            f"--window {_ns_text(width_ns)} splits these {_ns_text(span)} of sends into {n:,} windows; "
            f"at most {MAX_WINDOWS:,} are held: give --window {_ns_text(fits)} or wider"
        )
    return int(n)


def _ns_text(ns: int) -> str:
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            return f"{ns / scale:.4g}{unit}"
    return f"{ns}ns"


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


def is_sorted(values: np.ndarray, chunk: int = 1 << 20) -> bool:
    """Whether ``values`` is non-decreasing, checked in chunks (no full-size temporary)."""
    for start in range(0, max(values.size - 1, 0), chunk):
        part = values[start : start + chunk + 1]
        if not bool(np.all(part[1:] >= part[:-1])):
            return False
    return True


def time_windows(
    t_send_ns: npt.ArrayLike,
    latency: npt.ArrayLike,
    width_ns: int = 1_000_000_000,
    categories: StackedResult | None = None,
) -> WindowTable:
    """Split a run into windows of ``width_ns`` by send time and summarise each.

    ``categories`` (the run's outlier test) gives the thresholds whose per-window counts
    are reported; each window is sorted once for its percentiles, so those counts are
    binary searches. Empty windows (a stall with no sends) are kept with count 0 and NaN
    statistics.
    """
    t = np.asarray(t_send_ns)
    x = np.asarray(latency)
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    if t.size == 0:
        empty = np.zeros(0)
        return WindowTable(
            width_ns,
            empty,
            empty.astype(np.int64),
            empty,
            empty,
            empty,
            empty,
            indices,
            np.zeros((0, len(indices)), dtype=np.int64),
        )
    if not is_sorted(t):
        order = np.argsort(t, kind="stable")
        t, x = t[order], x[order]
    t0 = int(t[0])
    n_windows = window_count(t0, int(t[-1]), width_ns)
    edges = np.searchsorted(t, t0 + width_ns * np.arange(n_windows + 1), side="left")
    counts = np.diff(edges)
    mean = np.full(n_windows, np.nan)
    p50 = np.full(n_windows, np.nan)
    p99 = np.full(n_windows, np.nan)
    mx = np.full(n_windows, np.nan)
    cat_counts = np.zeros((n_windows, len(indices)), dtype=np.int64)
    filled = np.flatnonzero(counts)
    first = -1 if categories is not None and categories.low_threshold is not None else 0
    slots = np.asarray(indices, dtype=np.int64) - first  # category index -> position in category_edges

    def summarise(w: int) -> None:
        # A sort of each window beats a two-point partition at these sizes, and gives the
        # maximum and the category counts (binary searches) for free.
        ordered = np.sort(x[edges[w] : edges[w + 1]])
        p50[w], p99[w] = percentiles_sorted(ordered, (50.0, 99.0))
        mx[w] = float(ordered[-1])
        # integers: the exact sum over the count (as stats/outofcore.py computes it streamed)
        mean[w] = (
            exact_sum(ordered) / ordered.size
            if ordered.dtype.kind in "iu"
            else float(ordered.sum(dtype=np.float64)) / ordered.size
        )
        if categories is not None:
            bounds = np.diff(category_edges(ordered, categories.thresholds, categories.low_threshold))
            cat_counts[w] = bounds[slots]

    # numpy releases the GIL while sorting, so windows use every CPU; each writes its own rows.
    workers = min(os.cpu_count() or 1, 8)
    if workers > 1 and filled.size >= 4 * workers and x.size >= 1_000_000:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(summarise, filled.tolist()))
    else:
        for w in filled.tolist():
            summarise(w)
    return WindowTable(
        width_ns, width_ns * np.arange(n_windows), counts, mean, p50, p99, mx, indices, cat_counts
    )
