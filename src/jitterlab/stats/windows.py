"""Non-overlapping time windows by send time, with per-window summary and category counts.

Window w holds the samples with floor((t_send - t_first) / width) = w. Percentiles are
exact (the same type-7 definition as the run summary). Written once, as passes over
(send time, latency) chunks run by any :class:`~jitterlab.stats.scan.Scan`: a run in
memory is one chunk, a stored run is read in row groups, here or on a cluster's workers.

- :func:`window_chunk`: one chunk's count, exact sum, extremes and category counts of each
  window it touches (folded by sums, minima and maxima);
- :func:`window_order_statistics`: the one place a window's order statistics (its p50 and
  p99 ranks) are read, from the window's values;
- between them, only when the values are not in memory and too many to gather
  (:data:`GATHER_AT`), refinement passes (:func:`window_refine_chunk`, :func:`narrow`)
  narrow each (window, rank) to an interval of values holding it; one pass then gathers the
  values inside the intervals (:func:`window_values_chunk`). In memory nothing is narrowed:
  each window's values go whole to :func:`window_order_statistics`.

describe's two passes over a samples file (stats/twopass.py) narrow the same intervals
with :func:`narrow` in its C++ refine pass, down to one value each, so nothing is gathered
there; all three paths build the table with :func:`window_table`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.categories import StackedResult
from jitterlab.stats.scan import LocalScan, Scan
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


Chunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]  # (t_send_ns, latency_ns)

GATHER_AT = 1 << 22  # values gathered for the windows' order statistics at most (32 MiB)
_WINDOW_BUCKETS = 1 << 8  # buckets per window and rank in one refinement pass, at least
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def time_windows(
    t_send_ns: npt.ArrayLike,
    latency: npt.ArrayLike,
    width_ns: int = 1_000_000_000,
    categories: StackedResult | None = None,
) -> WindowTable:
    """Split a run into windows of ``width_ns`` by send time and summarise each.

    ``categories`` (the run's outlier test) gives the thresholds whose per-window counts
    are reported. Empty windows (a stall with no sends) are kept with count 0 and NaN
    statistics. Integer latencies (ns). This is :func:`time_windows_scan` of the run held
    as one chunk: the sample is in memory, so no refinement pass narrows what each
    window's order statistics are read from; each window's values go whole to
    :func:`window_order_statistics`.
    """
    t = np.asarray(t_send_ns)
    x = np.asarray(latency)
    if x.size and x.dtype.kind not in "iu":
        raise ValueError("time windows take integer latencies (ns)")
    return time_windows_scan(LocalScan(lambda: [(t, x)]), width_ns, categories, gather_at=None)


def time_windows_chunks(
    chunks: Chunks, width_ns: int = 1_000_000_000, categories: StackedResult | None = None
) -> WindowTable:
    """:func:`time_windows` of (send time, latency) chunks, in any order; identical results.
    Memory: a few arrays per window and at most :data:`GATHER_AT` gathered values."""
    return time_windows_scan(LocalScan(chunks), width_ns, categories)


def time_extent_chunk(chunk: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """(count, first, last send time) of a timed chunk (0, 0, 0 when empty)."""
    t = chunk[0]
    return (int(t.size), int(t.min()), int(t.max())) if t.size else (0, 0, 0)


def _by_window(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w`` and ``x`` ordered by window (stable; as they are when already in order)."""
    if w.size < 2 or bool(np.all(w[1:] >= w[:-1])):
        return w, x
    order = np.argsort(w, kind="stable")
    return w[order], x[order]


def _starts(ws: np.ndarray) -> np.ndarray:
    """Where each run of equal windows begins in ``ws`` (ordered by window)."""
    if ws.size == 0:
        return np.zeros(0, np.intp)
    first, last = int(ws[0]), int(ws[-1])
    if last - first < ws.size // 64:  # few windows: binary searches, no pass over ws
        edges = np.searchsorted(ws, np.arange(first, last + 2))
        return edges[:-1][np.diff(edges) > 0]
    return np.flatnonzero(np.concatenate([[True], ws[1:] != ws[:-1]]))


def _per_window(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """How many of ``mask`` are true in each window (windows ``bounds`` apart)."""
    return np.diff(np.searchsorted(np.flatnonzero(mask), bounds)).astype(np.int64)


def window_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    t0: int,
    width_ns: int,
    thresholds: tuple[float, ...] | None,
    low: float | None,
    n_slots: int,
) -> tuple[np.ndarray, ...]:
    """One timed chunk's share of the window table, for the windows it touches only:
    (windows, count, exact sum, min, max of each; (window, slot) keys and their counts)."""
    t, x = chunk
    w = (t - t0) // width_ns
    ws, xs = _by_window(w, x)
    starts = _starts(ws)
    at = ws[starts]
    counts = np.diff(np.append(starts, ws.size)).astype(np.int64)
    if ws.size:  # exact integer sums
        sums = np.add.reduceat(xs.astype(np.int64, copy=False), starts)
        lows, highs = np.minimum.reduceat(xs, starts), np.maximum.reduceat(xs, starts)
    else:
        sums = lows = highs = np.zeros(0, np.int64)
    keys = slot_counts = np.zeros(0, np.int64)
    if thresholds is not None and ws.size:
        # per window, how many values lie above each threshold (and below the low one):
        # the slots' counts are their differences (thresholds increase, the low one first)
        bounds = np.append(starts, ws.size)
        tails = [_per_window(xs > t, bounds) for t in thresholds]
        per_slot = [counts - tails[0] if tails else counts]
        per_slot += [upper - above for upper, above in pairwise(tails)]
        per_slot += tails[-1:]
        if low is not None:
            under = _per_window(xs < low, bounds)
            per_slot = [under, per_slot[0] - under, *per_slot[1:]]
        keys = (at[:, None] * n_slots + np.arange(n_slots)).ravel()
        slot_counts = np.stack(per_slot, axis=1).ravel()
    return at, counts, sums, lows, highs, keys, slot_counts


def time_windows_scan(
    scan: Scan,
    width_ns: int = 1_000_000_000,
    categories: StackedResult | None = None,
    gather_at: int | None = GATHER_AT,
) -> WindowTable:
    """:func:`time_windows` of a timed sample read by ``scan``: a pass for the send times'
    extent, one for the window table's counts, sums, extremes and category counts, then
    each window's order statistics by :func:`window_order_statistics_by` (``gather_at``:
    its bound on gathered values; None when the sample is already in memory)."""
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    t0, t_last, n = 0, 0, 0
    for size, lo, hi in scan.map(time_extent_chunk):
        if size:
            t0, t_last = (lo, hi) if n == 0 else (min(t0, lo), max(t_last, hi))
            n += size
    if n == 0:
        return no_windows(width_ns, indices)
    n_windows = window_count(t0, t_last, width_ns)
    first = -1 if categories is not None and categories.low_threshold is not None else 0
    n_slots = (len(categories.thresholds) + 1 - first) if categories is not None else 0
    counts = np.zeros(n_windows, np.int64)
    sums = np.zeros(n_windows, np.int64)  # exact: a window's latencies sum far below 2^63
    lowest = np.full(n_windows, _INT64_MAX)
    highest = np.full(n_windows, _INT64_MIN)
    by_slot = np.zeros(n_windows * max(n_slots, 1), np.int64)
    cuts = categories.thresholds if categories is not None else None
    low = categories.low_threshold if categories is not None else None
    for at, c, s, lo, hi, keys, slot_counts in scan.map(window_chunk, t0, width_ns, cuts, low, n_slots):
        counts[at] += c
        sums[at] += s
        lowest[at] = np.minimum(lowest[at], lo)
        highest[at] = np.maximum(highest[at], hi)
        by_slot[keys] += slot_counts
    weight, ranks = window_ranks(counts)
    value = window_order_statistics_by(scan, ranks, lowest, highest, counts, t0, width_ns, gather_at)
    slots = by_slot.reshape(n_windows, max(n_slots, 1)) if categories is not None else None
    return window_table(width_ns, counts, sums, highest, weight, value, slots, categories, first)


def window_order_statistics(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The values at the 0-based ``ranks`` of one window's ``values`` (in any order) once
    sorted: the one place a window's order statistics are read, whatever holds the run
    (the refinement passes only narrow which of a window's values reach it)."""
    if ranks.size == 0:
        return np.zeros(0, values.dtype)
    return np.asarray(np.partition(values, ranks)[ranks])


WindowIntervals = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # per window: a, b, step, open


def window_refine_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    t0: int,
    width_ns: int,
    intervals: list[WindowIntervals],
    nb: int,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One timed chunk's bucket counts of a window refinement pass, per set of intervals
    (one per window): the (window × nb + bucket) keys it touches and their counts."""
    t, x = chunk
    w = (t - t0) // width_ns
    shares = []
    for a, b, step, open_ in intervals:
        lower = a[w]
        inside = (x >= lower) & (x <= b[w])  # one mask and one compaction: no per-array copies
        if not open_.all():
            inside &= open_[w]
        counts = np.bincount((w * nb + (x - lower) // step[w])[inside], minlength=a.size * nb)
        keys = np.flatnonzero(counts)
        shares.append((keys, counts[keys]))
    return shares


def window_values_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    t0: int,
    width_ns: int,
    intervals: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One timed chunk's values that lie in each window's interval, per set of intervals
    ((a, b, open) per window; None: every value of every window): (windows, values),
    ordered by window."""
    t, x = chunk
    w = (t - t0) // width_ns
    found = []
    for interval in intervals:
        if interval is None:
            found.append(_by_window(w, x))
            continue
        a, b, open_ = interval
        inside = (x >= a[w]) & (x <= b[w]) & open_[w]
        found.append(_by_window(w[inside], x[inside]))
    return found


def window_order_statistics_by(
    scan: Scan,
    ranks: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    counts: np.ndarray,
    t0: int,
    width_ns: int,
    gather_at: int | None = GATHER_AT,
) -> np.ndarray:
    """The value at ``ranks[w, r]`` (0-based) of each window's sorted latencies. Every
    (window, rank) keeps a closed interval of values holding it, from the window's extremes;
    while the values inside the open intervals are more than ``gather_at`` (None: no bound,
    the sample is in memory; a bound from :data:`GATHER_AT` up is raised to the counters a
    refinement pass holds, since gathering as many values takes no more memory; a smaller
    one is taken as given), a refinement pass splits each interval into buckets (counts
    only) and keeps the one holding the rank. Then one pass gathers the values inside the
    intervals and :func:`window_order_statistics` reads each window's ranks among them
    (an interval one value wide is its value, nothing to gather)."""
    n_windows, n_ranks = ranks.shape
    filled = counts > 0
    a = np.where(filled, lowest, 0)[:, None].repeat(n_ranks, axis=1)
    b = np.where(filled, highest, 0)[:, None].repeat(n_ranks, axis=1)
    below = np.zeros_like(a)
    inside = np.where(filled, counts, 0)[:, None].repeat(n_ranks, axis=1)
    # buckets per window and rank: as many as 2^18 counters over all windows allow (2 MiB
    # per rank), at least 2^8
    nb = max(_WINDOW_BUCKETS, min(1 << 16, (1 << 18) // n_windows))
    if gather_at is not None and gather_at >= GATHER_AT:
        # gathering no more values than a refinement pass holds counters costs no more memory
        gather_at = max(gather_at, n_ranks * n_windows * nb)
    narrowed = False
    while bool((a < b).any()) and gather_at is not None and int(inside[a < b].sum()) > gather_at:
        _refine(scan, ranks, a, b, below, inside, t0, width_ns, nb)
        narrowed = True
    open_ = a < b
    if not open_.any():
        return a
    groups = _groups(a, b, open_)
    intervals = [
        None if not narrowed else (a[:, rs[0]].copy(), b[:, rs[0]].copy(), open_[:, rs[0]].copy())
        for rs in groups
    ]
    gathered: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in groups]
    for found in scan.map(window_values_chunk, t0, width_ns, intervals):
        for g, part in enumerate(found):
            gathered[g].append(part)
    jobs = []
    for rs, parts in zip(groups, gathered, strict=True):
        ws, xs = (
            parts[0]
            if len(parts) == 1
            else _by_window(*(np.concatenate(p) for p in zip(*parts, strict=True)))
        )
        starts = _starts(ws)
        ends = np.append(starts[1:], ws.size)
        cols = np.asarray(rs)
        for w, lo, hi in zip(ws[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
            jobs.append((w, cols[open_[w, cols]], xs[lo:hi]))
    value = a

    def read(batch: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        for w, cols, xs in batch:
            value[w, cols] = window_order_statistics(xs, ranks[w, cols] - below[w, cols])

    # numpy releases the GIL while partitioning, so large windows use every CPU (each
    # batch of windows writes its own cells); small windows are read in this thread
    workers = min(os.cpu_count() or 1, 8)
    gathered_values = sum(j[2].size for j in jobs)
    if workers > 1 and len(jobs) >= 4 * workers and gathered_values >= max(1 << 20, len(jobs) << 14):
        per = -(-len(jobs) // (4 * workers))
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(read, [jobs[i : i + per] for i in range(0, len(jobs), per)]))
    else:
        read(jobs)
    return value


def _groups(a: np.ndarray, b: np.ndarray, open_: np.ndarray) -> list[list[int]]:
    """The rank columns with open intervals, grouped where their intervals are the same in
    every window (a percentile's two neighbouring ranks, mostly): counted or gathered once."""
    groups: dict[bytes, list[int]] = {}
    for r in range(a.shape[1]):
        if open_[:, r].any():
            key = a[:, r].tobytes() + b[:, r].tobytes() + open_[:, r].tobytes()
            groups.setdefault(key, []).append(r)
    return list(groups.values())


def _refine(
    scan: Scan,
    ranks: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    below: np.ndarray,
    inside: np.ndarray,
    t0: int,
    width_ns: int,
    nb: int,
) -> None:
    """One refinement pass: every open (window, rank) interval split into ``nb`` buckets,
    narrowed to the one holding the rank. In place."""
    n_windows, n_ranks = ranks.shape
    step = -(-(b - a + 1) // nb)
    open_ = a < b
    groups = _groups(a, b, open_)
    intervals = [tuple(m[:, rs[0]].copy() for m in (a, b, step, open_)) for rs in groups]
    hist = np.zeros((n_ranks, n_windows * nb), np.int64)
    for shares in scan.map(window_refine_chunk, t0, width_ns, intervals, nb):
        for rs, (keys, found) in zip(groups, shares, strict=True):
            hist[rs[0]][keys] += found
    for rs in groups:
        hist[rs[1:]] = hist[rs[0]]
    for r in range(n_ranks):
        rows = np.flatnonzero(open_[:, r])
        if rows.size:
            narrow(hist[r].reshape(n_windows, nb)[rows], rows, r, ranks, a, b, below, step[rows, r], inside)


def narrow(
    counts: np.ndarray,
    rows: np.ndarray,
    r: int,
    ranks: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    below: np.ndarray,
    step: np.ndarray,
    inside: np.ndarray | None = None,
) -> None:
    """Narrow rank column ``r``'s interval [a, b] in the windows ``rows`` to the bucket that
    holds the rank, from those windows' bucket counts (rows × buckets, buckets ``step`` wide
    from a); ``below`` gains the values of the buckets before it, ``inside`` (when given)
    becomes the values in the bucket. In place."""
    cumulative = np.cumsum(counts, axis=1)
    target = ranks[rows, r] - below[rows, r]
    j = (cumulative <= target[:, None]).sum(axis=1)
    before = np.where(j > 0, cumulative[np.arange(rows.size), np.maximum(j - 1, 0)], 0)
    start = a[rows, r] + j * step
    b[rows, r] = np.minimum(start + step - 1, b[rows, r])
    a[rows, r] = start
    below[rows, r] += before
    if inside is not None:
        inside[rows, r] = cumulative[np.arange(rows.size), j] - before
