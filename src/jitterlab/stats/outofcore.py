"""The stacked modified z-score test and the time windows of a sample read in chunks, in
memory independent of its size, with results identical to the in-memory functions
(:func:`jitterlab.stats.zscore.stacked_z_test`, :func:`jitterlab.stats.windows.time_windows`).

Nothing is estimated. Every median and MAD is the order statistic itself, found by radix
refinement over the chunks (:func:`jitterlab.stats.summary.percentiles_of`'s selection):

- level k's sample is the values above the previous level's cut (all values for level 1),
  read again as a filter of the chunks;
- its median from the order statistics at ranks floor((n-1)/2) and n/2;
- its MAD from the same ranks of the doubled deviations |2x - 2 median|, which are
  integers for integer samples (the median is a whole or a half number), halved after;
- the MeanAD fallback (MAD = 0) from the exact integer sum of those deviations;
- once a level's sample holds at most ``in_memory_at`` values it is gathered and the rest
  of the stack runs in memory on it (the same functions as the in-memory test).

Categories (count, smallest and largest member) and the per-window count, exact sum, max
and category counts are one pass each; each window's p50 and p99 are order statistics
found by refinement per window (2^18 / windows buckets, at least 2^8, per window and rank
per pass).

With a baseline, the screening (:mod:`jitterlab.stats.screening`) is a pass over the reference
for its outlier share and its top category, and one over the run for its category counts.

Samples are integers (latencies in ns) of magnitude below 2^52, so every comparison of a
value with a float cut and every halving is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from jitterlab.stats.categories import StackedResult, categories_of_ranges, categorize, stack
from jitterlab.stats.screening import DEFAULT_ALPHA, Baseline, Verdict, screen_counts
from jitterlab.stats.summary import exact_sum, extent_of, order_statistics
from jitterlab.stats.windows import WindowTable
from jitterlab.stats.zscore import (
    MAD_CONSISTENCY,
    MAX_LEVELS,
    MEANAD_CONSISTENCY,
    RobustScale,
    robust_scale_sorted,
)

Chunks = Callable[[], Iterable[np.ndarray]]
TimedChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]  # (t_send_ns, latency_ns)

IN_MEMORY_AT = 1 << 22  # values of a level gathered to finish the stack in memory (32 MiB)
_WINDOW_BUCKETS = 1 << 8  # buckets per window and rank in one refinement pass


def _above(chunks: Chunks, cut: float | None) -> Chunks:
    """The chunks' values above ``cut`` (all of them for None), as new chunks."""
    if cut is None:
        return chunks
    key = math.floor(cut)  # x > cut  <=>  x > floor(cut) for integers

    def filtered() -> Iterator[np.ndarray]:
        for x in chunks():
            yield x[x > key]

    return filtered


def robust_scale_chunks(chunks: Chunks, count: int, lowest: int, highest: int) -> RobustScale:
    """:func:`jitterlab.stats.zscore.robust_scale_sorted` of a non-empty integer sample read
    as chunks, equal to it to the last bit (see the module docs)."""
    mid = count // 2
    ranks = [mid] if count % 2 else [mid - 1, mid]
    v = order_statistics(chunks, ranks, lowest, highest, count)
    center = float(v[mid]) if count % 2 else (float(v[mid - 1]) + float(v[mid])) / 2.0
    twice = 2 * v[mid] if count % 2 else v[mid - 1] + v[mid]  # 2 * center, an integer

    def doubled() -> Iterator[np.ndarray]:
        for x in chunks():
            yield np.abs(2 * x - twice)

    k = (count - 1) // 2
    wanted = [k] if count % 2 else [k, count // 2]
    d = order_statistics(doubled, wanted, 0, max(2 * highest - twice, twice - 2 * lowest), count)
    mad = d[k] / 2.0
    if count % 2 == 0:
        mad = (mad + d[count // 2] / 2.0) / 2.0
    if mad > 0:
        return RobustScale(center, mad / MAD_CONSISTENCY, mad, fallback=False)
    total = sum(exact_sum(x) for x in doubled())
    return RobustScale(center, MEANAD_CONSISTENCY * (total / (2 * count)), 0.0, fallback=True)


def stacked_z_chunks(
    chunks: Chunks,
    threshold: float = 3.5,
    two_sided: bool = False,
    in_memory_at: int = IN_MEMORY_AT,
) -> StackedResult:
    """:func:`jitterlab.stats.zscore.stacked_z_test` of an integer sample read as chunks
    (each call of ``chunks`` reads it again in the same order); identical results."""
    levels: list[RobustScale] = []
    thresholds: list[float] = []

    def next_cut(sample: np.ndarray) -> float | None:  # the in-memory test's step
        level = robust_scale_sorted(sample)
        if level.scale == 0:
            return None
        levels.append(level)
        return level.center + threshold * level.scale

    cut: float | None = None
    for _ in range(MAX_LEVELS):
        current = _above(chunks, cut)
        count, lowest, highest, _ = extent_of(current)
        if count == 0:
            if cut is None:
                raise ValueError("stacked test of an empty sample")
            break
        if count <= in_memory_at:
            tail = np.sort(np.concatenate(list(current())))
            thresholds += stack(tail, next_cut, MAX_LEVELS - len(thresholds))
            break
        level = robust_scale_chunks(current, count, lowest, highest)
        if level.scale == 0:
            break
        levels.append(level)
        new_cut = level.center + threshold * level.scale
        above = extent_of(_above(current, new_cut))[0]
        if above in (0, count):
            break
        thresholds.append(new_cut)
        cut = new_cut
    low = None
    if two_sided and levels:
        low = levels[0].center - threshold * levels[0].scale
    return categories_of_chunks(
        chunks, tuple(thresholds), low, tuple(levels[: len(thresholds)]), threshold, False
    )


def categories_of_chunks(
    chunks: Chunks,
    thresholds: tuple[float, ...],
    low: float | None,
    levels: tuple[object, ...],
    threshold: float,
    keep_empty: bool,
) -> StackedResult:
    """:func:`jitterlab.stats.categories.build_result` of a sample read as chunks (one pass)."""
    first = -1 if low is not None else 0
    slots = len(thresholds) + 1 - first
    counts = np.zeros(slots, np.int64)
    lowest = np.full(slots, np.iinfo(np.int64).max)
    highest = np.full(slots, np.iinfo(np.int64).min)
    for x in chunks():
        labels = categorize(x, thresholds, low).astype(np.intp) - first
        counts += np.bincount(labels, minlength=slots)
        np.minimum.at(lowest, labels, x)
        np.maximum.at(highest, labels, x)
    ranges = [
        (int(c), float(a) if c else math.nan, float(b) if c else math.nan)
        for c, a, b in zip(counts, lowest, highest, strict=True)
    ]
    categories = categories_of_ranges(ranges, first, keep_empty, int(counts.sum()))
    return StackedResult(thresholds, levels, categories, low, threshold)


def time_windows_chunks(
    chunks: TimedChunks, width_ns: int = 1_000_000_000, categories: StackedResult | None = None
) -> WindowTable:
    """:func:`jitterlab.stats.windows.time_windows` of (send time, latency) chunks, in any
    order; identical results. Memory: a few arrays per window, none per sample."""
    if width_ns <= 0:
        raise ValueError("window width must be positive")
    indices = tuple(c.index for c in categories.categories) if categories is not None else ()
    t0, t_last, n = 0, 0, 0
    for t, _ in chunks():
        if t.size:
            lo, hi = int(t.min()), int(t.max())
            t0, t_last = (lo, hi) if n == 0 else (min(t0, lo), max(t_last, hi))
            n += t.size
    if n == 0:
        empty = np.zeros(0)
        return WindowTable(
            width_ns, empty, empty.astype(np.int64), empty, empty, empty, empty, indices,
            np.zeros((0, len(indices)), dtype=np.int64),
        )  # fmt: skip
    n_windows = (t_last - t0) // width_ns + 1
    first = -1 if categories is not None and categories.low_threshold is not None else 0
    n_slots = (len(categories.thresholds) + 1 - first) if categories is not None else 0
    counts = np.zeros(n_windows, np.int64)
    sums = np.zeros(n_windows, np.int64)  # exact: a window's latencies sum far below 2^63
    lowest = np.full(n_windows, np.iinfo(np.int64).max)
    highest = np.full(n_windows, np.iinfo(np.int64).min)
    by_slot = np.zeros(n_windows * max(n_slots, 1), np.int64)
    for t, x in chunks():
        w = (t - t0) // width_ns
        counts += np.bincount(w, minlength=n_windows)
        # per window sum, min and max by reductions over the chunk ordered by window (a
        # stable sort of nearly sorted keys: cheap); exact integer sums
        order = np.argsort(w, kind="stable")
        ws, xs = w[order], x[order]
        starts = np.flatnonzero(np.concatenate([[True], ws[1:] != ws[:-1]]))
        at = ws[starts]
        sums[at] += np.add.reduceat(xs, starts)
        lowest[at] = np.minimum(lowest[at], np.minimum.reduceat(xs, starts))
        highest[at] = np.maximum(highest[at], np.maximum.reduceat(xs, starts))
        if categories is not None:
            labels = categorize(x, categories.thresholds, categories.low_threshold).astype(np.int64)
            by_slot += np.bincount(w * n_slots + labels - first, minlength=by_slot.size)
    filled = counts > 0
    h = (counts - 1)[:, None] * np.array([50.0, 99.0]) / 100.0  # as percentiles_sorted computes it
    lo_rank = np.floor(h).astype(np.int64)
    hi_rank = np.minimum(lo_rank + 1, np.maximum(counts - 1, 0)[:, None])
    ranks = np.concatenate([lo_rank, hi_rank], axis=1)  # window x (lo50, lo99, hi50, hi99)
    value = _window_order_statistics(chunks, ranks, lowest, highest, filled, t0, width_ns)
    a, b = value[:, :2].astype(np.float64), value[:, 2:].astype(np.float64)
    p = a + (h - lo_rank) * (b - a)
    nan = np.full(n_windows, np.nan)
    mean = np.array([int(s) / int(c) if c else math.nan for s, c in zip(sums, counts, strict=True)])
    slots = np.asarray(indices, dtype=np.int64) - first
    category_counts = (
        by_slot.reshape(n_windows, n_slots)[:, slots]
        if categories is not None
        else np.zeros((n_windows, 0), np.int64)
    )
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


def _window_order_statistics(
    chunks: TimedChunks,
    ranks: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    filled: np.ndarray,
    t0: int,
    width_ns: int,
) -> np.ndarray:
    """The value at ``ranks[w, r]`` (0-based) of each window's sorted latencies: every
    (window, rank) keeps a closed interval of values holding it, split into 2^8 buckets
    per pass (counts only) until it is one value wide."""
    n_windows, n_ranks = ranks.shape
    # buckets per window and rank: as many as 2^18 counters over all windows allow (2 MiB
    # per rank), at least 2^8
    nb = max(_WINDOW_BUCKETS, min(1 << 16, (1 << 18) // n_windows))
    a = np.where(filled, lowest, 0)[:, None].repeat(n_ranks, axis=1)
    b = np.where(filled, highest, 0)[:, None].repeat(n_ranks, axis=1)
    below = np.zeros_like(a)
    while bool((a < b).any()):
        step = -(-(b - a + 1) // nb)
        open_ = a < b
        # ranks whose intervals are the same in every window (a percentile's two neighbouring
        # ranks, mostly) share one histogram: counted once per pass
        groups: dict[bytes, list[int]] = {}
        for r in range(n_ranks):
            if open_[:, r].any():
                key = a[:, r].tobytes() + b[:, r].tobytes() + open_[:, r].tobytes()
                groups.setdefault(key, []).append(r)
        shared: list[tuple[list[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = [
            (rs, a[:, rs[0]].copy(), b[:, rs[0]].copy(), step[:, rs[0]].copy(), open_[:, rs[0]].copy())
            for rs in groups.values()
        ]
        hist = np.zeros((n_ranks, n_windows * nb), np.int64)
        for t, x in chunks():
            w = (t - t0) // width_ns
            for rs, ar, br, sr, opr in shared:
                lower = ar[w]
                inside = (x >= lower) & (x <= br[w])
                if not opr.all():
                    inside &= opr[w]
                slot = w * nb + (x - lower) // sr[w]
                hist[rs[0]] += np.bincount(slot[inside], minlength=n_windows * nb)
        for rs, *_ in shared:
            hist[rs[1:]] = hist[rs[0]]
        for r in range(n_ranks):
            rows = np.flatnonzero(open_[:, r])
            if rows.size == 0:
                continue
            cumulative = np.cumsum(hist[r].reshape(n_windows, nb)[rows], axis=1)
            target = ranks[rows, r] - below[rows, r]
            j = (cumulative <= target[:, None]).sum(axis=1)
            before = np.where(j > 0, cumulative[np.arange(rows.size), np.maximum(j - 1, 0)], 0)
            start = a[rows, r] + j * step[rows, r]
            b[rows, r] = np.minimum(start + step[rows, r] - 1, b[rows, r])
            a[rows, r] = start
            below[rows, r] += before
    return a


def baseline_of_chunks(chunks: Chunks, result: StackedResult) -> Baseline:
    """:func:`jitterlab.stats.screening.baseline_of` of a reference sample read as chunks.

    Holds only the values above the last threshold (the stack's top category: the values
    the stacked test could not split further, a handful in practice)."""
    if not result.thresholds:
        raise ValueError("the baseline has no outlier categories (all its values are equal)")
    tops, count, outliers, highest = [], 0, 0, -math.inf
    for x in chunks():
        v = x.astype(np.float64)
        tops.append(v[v > result.thresholds[-1]])
        outliers += int((v > result.thresholds[0]).sum())
        count += v.size
        if v.size:
            highest = max(highest, float(v.max()))
    top = np.sort(np.concatenate(tops)) if tops else np.zeros(0)
    if top.size == 0:
        top = np.array([highest])
    level = robust_scale_sorted(top)
    cut = level.center + result.threshold * level.scale if level.scale > 0 else float(top[-1])
    return Baseline(result.thresholds, outliers / count, max(cut, float(top[-1])), count)


def screen_chunks(chunks: Chunks, baseline: Baseline, alpha: float = DEFAULT_ALPHA) -> Verdict:
    """:func:`jitterlab.stats.screening.screen` of a sample read as chunks (one pass)."""
    counts = np.zeros(len(baseline.thresholds) + 1, np.int64)
    highest = -math.inf
    for x in chunks():
        if x.size == 0:
            continue
        v = x.astype(np.float64)
        counts += np.bincount(categorize(v, baseline.thresholds).astype(np.int64), minlength=counts.size)
        highest = max(highest, float(v.max()))
    if not counts.any():
        return screen_counts((), math.nan, baseline, alpha)
    return screen_counts(tuple(int(c) for c in counts), highest, baseline, alpha)
