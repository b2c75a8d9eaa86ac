"""Non-overlapping time windows by send time, with per-window summary and category counts.

Window w holds the samples with floor((t_send - t_first) / width) = w. Percentiles are
exact (the same type-7 definition as the run summary). Data sorted by send time is sliced
directly; otherwise a stable sort orders it first (cheap for harness runs, which are
already sorted within each pair).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.categories import StackedResult, category_edges
from jitterlab.stats.summary import exact_sum
from jitterlab.stats.type7 import type7_interpolate, type7_ranks

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


def window_ranks(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window: the type-7 weights of p50 and p99 (:func:`jitterlab.stats.type7.type7_ranks`)
    and the four 0-based ranks whose values make them (lo50, lo99, hi50, hi99)."""
    lo_rank, hi_rank, weight = type7_ranks(counts[:, None], (50.0, 99.0))
    return weight, np.concatenate([lo_rank, hi_rank], axis=1)


def window_table(
    width_ns: int,
    counts: np.ndarray,
    sums: np.ndarray,
    highest: np.ndarray,
    weight: np.ndarray,
    value: np.ndarray,
    by_slot: np.ndarray | None,
    categories: StackedResult | None,
    first: int,
) -> WindowTable:
    """The :class:`WindowTable` from per-window counts, exact sums, maxima, the values at
    :func:`window_ranks`'s ranks and the (window × slot) category counts."""
    n_windows = counts.size
    filled = counts > 0
    p = type7_interpolate(value[:, :2], value[:, 2:], weight)
    nan = np.full(n_windows, np.nan)
    mean = np.array([int(s) / int(c) if c else math.nan for s, c in zip(sums, counts, strict=True)])
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    slots = np.asarray(indices, dtype=np.int64) - first
    category_counts = by_slot[:, slots] if by_slot is not None else np.zeros((n_windows, 0), np.int64)
    return WindowTable(
        width_ns,
        width_ns * np.arange(n_windows),
        counts,
        mean,
        np.where(filled, p[:, 0], nan),
        np.where(filled, p[:, 1], nan),
        np.where(filled, highest.astype(np.float64), nan),
        indices,
        category_counts,
    )


def no_windows(width_ns: int, indices: tuple[int, ...]) -> WindowTable:
    """The window table of a sample with no values."""
    empty = np.zeros(0)
    return WindowTable(
        width_ns, empty, empty.astype(np.int64), empty, empty, empty, empty, indices,
        np.zeros((0, len(indices)), dtype=np.int64),
    )  # fmt: skip


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
    are reported. Empty windows (a stall with no sends) are kept with count 0 and NaN
    statistics. Integer latencies (ns). The table is :func:`window_table`'s, as for a run
    read in chunks (stats/outofcore.py) or in two passes (stats/twopass.py); only the
    order statistics at :func:`window_ranks`'s ranks are found in memory's own way: each
    window's slice is sorted once, so they, its maximum and its category counts (binary
    searches) are indexes. (Reading them by refinement passes over one chunk, as the
    streamed windows do, is 5–15× slower.)
    """
    t = np.asarray(t_send_ns)
    x = np.asarray(latency)
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    if x.size and x.dtype.kind not in "iu":
        raise ValueError("time windows take integer latencies (ns)")
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    if t.size == 0:
        return no_windows(width_ns, indices)
    if not is_sorted(t):
        order = np.argsort(t, kind="stable")
        t, x = t[order], x[order]
    t0 = int(t[0])
    n_windows = window_count(t0, int(t[-1]), width_ns)
    edges = np.searchsorted(t, t0 + width_ns * np.arange(n_windows + 1), side="left")
    counts = np.diff(edges).astype(np.int64)
    weight, ranks = window_ranks(counts)
    value = np.zeros(ranks.shape, np.int64)
    sums = np.zeros(n_windows, np.int64)  # exact: a window's latencies sum far below 2^63
    highest = np.zeros(n_windows, np.int64)
    first = -1 if categories is not None and categories.low_threshold is not None else 0
    by_slot = None
    if categories is not None:
        by_slot = np.zeros((n_windows, len(categories.thresholds) + 1 - first), np.int64)

    def summarise(w: int) -> None:
        ordered = np.sort(x[edges[w] : edges[w + 1]])
        value[w] = ordered[ranks[w]]
        sums[w] = exact_sum(ordered)
        highest[w] = ordered[-1]
        if categories is not None and by_slot is not None:
            by_slot[w] = np.diff(category_edges(ordered, categories.thresholds, categories.low_threshold))

    # numpy releases the GIL while sorting, so windows use every CPU; each writes its own rows.
    filled = np.flatnonzero(counts)
    workers = min(os.cpu_count() or 1, 8)
    if workers > 1 and filled.size >= 4 * workers and x.size >= 1_000_000:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(summarise, filled.tolist()))
    else:
        for w in filled.tolist():
            summarise(w)
    return window_table(width_ns, counts, sums, highest, weight, value, by_slot, categories, first)
