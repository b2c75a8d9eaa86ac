"""Statistics of a sample split into groups (the sources of a merged run, the runs of a
union), read in chunks, with memory independent of the sample's size.

A grouped chunk is a pair ``(latency, group)`` of equal-length integer arrays; groups are
small non-negative integers (0 … ``groups`` − 1).

- Count, smallest and largest value and the category counts of every group: one pass
  (:func:`group_chunk`, folded by sums, minima and maxima).
- Type-7 percentiles of every group, exactly, with the passes shared by all groups: each
  value is mapped to the composite key ``group · span + (latency − lowest)``, where
  ``span = highest − lowest + 1``. Sorting the keys sorts by group, then by latency, so the
  value at rank r of group g is the composite order statistic at rank
  ``(values of the groups before g) + r``. The radix refinement of
  :func:`jitterlab.stats.summary.order_statistics_by` finds all of them in the same
  passes; each percentile is then interpolated exactly as
  :mod:`jitterlab.stats.type7` does, so a group's figures equal the
  in-memory figures of that group's values to the last bit. When ``groups · span`` would
  not fit 62 bits, each group is refined on its own (the same numbers, more passes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterlab.stats.categories import categorize
from jitterlab.stats.scan import Scan
from jitterlab.stats.summary import order_statistics_by
from jitterlab.stats.type7 import type7_interpolate, type7_ranks

GroupedChunk = tuple[np.ndarray, np.ndarray]  # (latency_ns, group)

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min
_COMPOSITE_AT_MOST = 1 << 62


@dataclass(frozen=True)
class GroupExtent:
    """Per group: count, smallest and largest value, and the count of every category slot
    (``by_slot[g, s]``; slot 0 is category −1 when the test had a low threshold)."""

    count: np.ndarray
    lowest: np.ndarray
    highest: np.ndarray
    by_slot: np.ndarray


def group_chunk(
    chunk: GroupedChunk, groups: int, thresholds: tuple[float, ...], low: float | None, slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One chunk's count, min, max and category-slot counts per group (a pass's step)."""
    x, g = chunk
    g = np.asarray(g, np.intp)
    counts = np.zeros(groups, np.int64)
    lowest = np.full(groups, _INT64_MAX)
    highest = np.full(groups, _INT64_MIN)
    by_slot = np.zeros((groups, slots), np.int64)
    if x.size == 0:
        return counts, lowest, highest, by_slot
    first = -1 if low is not None else 0
    labels = categorize(x, thresholds, low).astype(np.intp) - first
    if g[0] == g[-1] and g.min() == g.max():  # one source (merge writes them one by one)
        k = int(g[0])
        counts[k], lowest[k], highest[k] = x.size, x.min(), x.max()
        by_slot[k] = np.bincount(labels, minlength=slots)
        return counts, lowest, highest, by_slot
    order = np.argsort(g, kind="stable")
    gs, xs = g[order], x[order]
    starts = np.flatnonzero(np.concatenate([[True], gs[1:] != gs[:-1]]))
    at = gs[starts]
    counts[at] = np.diff(np.append(starts, gs.size))
    lowest[at] = np.minimum.reduceat(xs, starts)
    highest[at] = np.maximum.reduceat(xs, starts)
    by_slot += np.bincount(g * slots + labels, minlength=groups * slots).reshape(groups, slots)
    return counts, lowest, highest, by_slot


def group_extent(
    scan: Scan, groups: int, thresholds: tuple[float, ...] = (), low: float | None = None
) -> GroupExtent:
    """:func:`group_chunk` of every chunk of a grouped ``scan``, folded (one pass)."""
    slots = len(thresholds) + 1 + (1 if low is not None else 0)
    count = np.zeros(groups, np.int64)
    lowest = np.full(groups, _INT64_MAX)
    highest = np.full(groups, _INT64_MIN)
    by_slot = np.zeros((groups, slots), np.int64)
    for c, lo, hi, s in scan.map(group_chunk, groups, thresholds, low, slots):
        count += c
        np.minimum(lowest, lo, out=lowest)
        np.maximum(highest, hi, out=highest)
        by_slot += s
    return GroupExtent(count, lowest, highest, by_slot)


def composite_key(chunk: GroupedChunk, lowest: int, span: int) -> np.ndarray:
    """``group · span + (latency − lowest)`` of a grouped chunk (a step: sorts by group,
    then latency)."""
    x, g = chunk
    key: np.ndarray = np.asarray(g, np.int64) * span + (np.asarray(x, np.int64) - lowest)
    return key


def of_group(chunk: GroupedChunk, group: int) -> np.ndarray:
    """The latencies of one group in a grouped chunk (a step)."""
    x, g = chunk
    selected: np.ndarray = x[g == group]
    return selected


def group_percentiles(scan: Scan, extent: GroupExtent, ps: tuple[float, ...]) -> np.ndarray:
    """Type-7 percentiles ``ps`` of every group of a grouped ``scan``, exact
    (``[group, percentile]``; NaN for an empty group). See the module docs."""
    groups = extent.count.size
    out = np.full((groups, len(ps)), np.nan)
    filled = np.flatnonzero(extent.count > 0)
    if filled.size == 0:
        return out
    lowest = int(extent.lowest[filled].min())
    highest = int(extent.highest[filled].max())
    span = highest - lowest + 1
    plan = [(int(k), *type7_ranks(int(extent.count[k]), ps)) for k in filled]
    if groups * span <= _COMPOSITE_AT_MOST:
        before = np.concatenate([[0], np.cumsum(extent.count)])
        ranks = sorted({int(before[g] + r) for g, lo, hi, _ in plan for r in (*lo, *hi)})
        total = int(extent.count.sum())
        value = order_statistics_by(
            scan.then(composite_key, lowest, span), ranks, 0, groups * span - 1, total
        )
        for g, lo, hi, weight in plan:
            base = int(before[g])
            a = np.array([value[base + int(r)] - g * span + lowest for r in lo], np.int64)
            b = np.array([value[base + int(r)] - g * span + lowest for r in hi], np.int64)
            out[g] = type7_interpolate(a, b, weight)
        return out
    for g, lo, hi, weight in plan:  # too wide for composite keys: one refinement per group
        ranks = sorted({int(r) for r in (*lo, *hi)})
        one = scan.then(of_group, g)
        value = order_statistics_by(
            one, ranks, int(extent.lowest[g]), int(extent.highest[g]), int(extent.count[g])
        )
        a = np.array([value[int(r)] for r in lo], np.int64)
        b = np.array([value[int(r)] for r in hi], np.int64)
        out[g] = type7_interpolate(a, b, weight)
    return out
