"""Points of a huge run reduced to what a plot can show, without losing a spike.

A scatter of latency over time has a few thousand pixel columns; a run may hold 10⁹
samples. A random subsample of N points misses a lone 10 ms spike with probability
1 − N/n, so the one event a latency plot exists for disappears. M4 aggregation (Jugel et
al., "M4: A Visualization-Oriented Time Series Data Aggregation", PVLDB 7(10), 2014) keeps,
per pixel column, the samples with the first and last time and the smallest and largest
value: a plot of those points is pixel-identical in its extremes to a plot of all of them.
Here the key is (pixel column, group) — the group is the outlier category a point is
coloured by — so each category keeps its own extremes in every column:

    column(t) = clip(⌊(t − start) · pixels / (stop − start)⌋, 0, pixels − 1)
    kept = ⋃ over keys k of {argmin_t, argmax_t, argmin_v, argmax_v} of the points with key k

At most 4 · pixels · groups points remain, whatever the run's size. M4 of a union equals M4
of the union of the parts' M4 sets (each extreme of the whole is an extreme of its part),
so :func:`m4_fold` reduces a run read in row groups chunk by chunk in bounded memory and
gives the same points as :func:`m4_select` over the whole run. Ties are broken by time,
then value, so the result does not depend on how the run was chunked.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def pixel_columns(t: np.ndarray, start: int, stop: int, pixels: int) -> np.ndarray:
    """The pixel column of each time ``t`` on an axis from ``start`` to ``stop`` (integers)."""
    span = max(int(stop) - int(start), 1)
    # integer arithmetic: (t − start) · pixels fits int64 for spans below 2^63 / pixels ns
    # (about 88 days at 10⁵ pixels)
    col = (np.asarray(t, np.int64) - int(start)) * int(pixels) // span
    return np.clip(col, 0, pixels - 1)


def m4_select(
    t: np.ndarray, v: np.ndarray, group: np.ndarray, start: int, stop: int, pixels: int
) -> np.ndarray:
    """Indices (ascending) of the points M4 keeps: per (pixel column, group) the first and
    last in time and the smallest and largest value (see the module docs).

    Parameters
    ----------
    t, v
        Times and values (integers, same length).
    group
        Non-negative small integers (e.g. the category a point is drawn in).
    start, stop, pixels
        The time axis and its width in pixels.
    """
    t = np.asarray(t, np.int64)
    v = np.asarray(v)
    if t.size == 0:
        return np.zeros(0, np.int64)
    g = np.asarray(group, np.int64)
    key = pixel_columns(t, start, stop, pixels) * (int(g.max()) + 1) + g
    by_value = np.lexsort((t, v, key))  # by key, then value, then time
    by_time = np.lexsort((v, t, key))  # by key, then time, then value
    sorted_key = key[by_value]  # both orders sort by key first: the same group boundaries
    first = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    last = np.r_[first[1:], sorted_key.size] - 1
    kept = np.concatenate([by_value[first], by_value[last], by_time[first], by_time[last]])
    return np.unique(kept)


def m4_fold(
    chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], start: int, stop: int, pixels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`m4_select` of a run read as (t, v, group) chunks, in memory bounded by
    4 · pixels · groups points plus one chunk; returns the kept (t, v, group), by time."""
    kept_t, kept_v, kept_g = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    for t, v, g in chunks:
        t = np.concatenate([kept_t, np.asarray(t, np.int64)])
        v = np.concatenate([kept_v, np.asarray(v)]) if kept_v.size else np.asarray(v)
        g = np.concatenate([kept_g, np.asarray(g, np.int64)])
        keep = m4_select(t, v, g, start, stop, pixels)
        kept_t, kept_v, kept_g = t[keep], v[keep], g[keep]
    order = np.lexsort((kept_v, kept_t))
    return kept_t[order], kept_v[order], kept_g[order]
