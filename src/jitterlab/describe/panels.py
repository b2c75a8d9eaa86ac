"""What the four panels of a run's figure in the report are drawn from (issue 25 item 2).

A run the report holds in memory (at most 2^24 samples) is drawn from its samples, as
before. A larger run is never held: one streamed pass over its row groups
(:func:`streamed_panels`) gives

* the **histogram** panel from a log-linear histogram (:mod:`jitterlab.stats.loglinear`,
  buckets 0.78 % wide) of every sample, summed into the panel's bins: every sample is
  counted, so a lone rare cluster in the tail stays a bar (a subsample of 20 000 of 10⁹
  would keep it with probability 2·10⁻⁵ per sample);
* the **timeline** from the samples above median + 2σ reduced by M4 per pixel column and
  category (:mod:`jitterlab.describe.decimate`): every extreme is kept;
* the **percentile spectrum** (and the overview's QQ plots) from the same histogram's
  quantiles, within half a bucket (0.39 %) of the exact values; the exact percentiles of
  the summary are marked on it;
* the **windows** panel from the exact per-window category counts of the streamed
  describe.

Each panel's title says which it was drawn from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from jitterlab.describe.decimate import m4_select
from jitterlab.stats import StackedResult, Summary
from jitterlab.stats.loglinear import BUCKETS, LogLinear, histogram_chunk
from jitterlab.stats.outofcore import time_extent_chunk
from jitterlab.stats.scan import Scan

HISTOGRAM_BINS = 120
SPECTRUM_POINTS = 200


@dataclass(frozen=True)
class Panels:
    """The data of a run's four panels, however it was obtained."""

    start_ns: int  # the time axis: first and last send
    stop_ns: int
    t: np.ndarray  # the timeline's points (above median + 2σ), their values and categories
    v: np.ndarray
    labels: np.ndarray
    above: int  # how many samples lie above the cut (drawn or not)
    counts: np.ndarray  # the histogram panel's bars
    edges: np.ndarray
    spectrum_ps: np.ndarray  # fractions, 0 … 1 − 1/n
    spectrum: np.ndarray  # ns
    drawn_from: str  # "samples" or "histogram"


def histogram_edges(lowest: float, highest: float) -> np.ndarray:
    """The histogram panel's bins: geometric from the smallest value (at least 1 ns) to the largest."""
    lo, hi = max(float(lowest), 1.0), max(float(highest), 2.0)
    return np.geomspace(lo, hi * 1.0001, HISTOGRAM_BINS)


def spectrum_levels(n: int) -> np.ndarray:
    """The spectrum's percentile levels (fractions) for a sample of ``n``."""
    top = 1 - 1 / max(n, 2)
    return np.clip(1 - np.geomspace(1, 1 / max(n, 2), SPECTRUM_POINTS), 0, top)


def memory_panels(
    latency: np.ndarray,
    t_send: np.ndarray,
    summary: Summary,
    categories: StackedResult,
    ordered: np.ndarray | None = None,
    max_points: int = 20_000,
    pixels: int = 600,
) -> Panels:
    """The panels of a run whose samples are in memory, drawn from the samples (``ordered``:
    them sorted, when the caller has it); the timeline M4-decimated above ``max_points``."""
    from jitterlab.stats import percentiles
    from jitterlab.stats.summary import percentiles_sorted

    start, stop = int(t_send.min()), int(t_send.max())
    above = np.flatnonzero(latency > summary.p50 + 2 * summary.std)
    labels = categories.labels(latency[above])
    count = above.size
    if above.size > max_points:
        # M4, not a random subsample: a lone spike among 10⁹ samples stays on the plot
        kept = m4_select(t_send[above], latency[above], labels, start, stop, pixels)
        above, labels = above[kept], labels[kept]
    edges = histogram_edges(latency.min(), latency.max())
    counts, _ = np.histogram(latency, bins=edges)
    ps = spectrum_levels(latency.size)
    # the same type-7 values either way; from the sorted sample, index arithmetic only
    values = (
        percentiles_sorted(ordered, tuple(ps * 100))
        if ordered is not None
        else percentiles(latency, tuple(ps * 100))
    )
    return Panels(
        start, stop, t_send[above], latency[above], labels, count, counts, edges, ps, values, "samples"
    )


def figure_chunk(
    chunk: tuple[np.ndarray, np.ndarray],
    cut: float,
    thresholds: tuple[float, ...],
    low: float | None,
    start: int,
    stop: int,
    pixels: int,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], int]:
    """One timed chunk's share of the streamed panels: its log-linear bucket counts, the M4
    points of its samples above ``cut`` (time, value, category slot) and how many those are."""
    from jitterlab.stats.categories import categorize

    t, x = chunk
    above = x > cut
    ta, va = t[above], x[above]
    first = -1 if low is not None else 0
    g = categorize(va, thresholds, low).astype(np.int64) - first if va.size else np.zeros(0, np.int64)
    keep = m4_select(ta, va, g, start, stop, pixels)
    return histogram_chunk(x), (ta[keep], va[keep], g[keep]), int(va.size)


def streamed_panels(
    timed: Scan,
    summary: Summary,
    categories: StackedResult,
    pixels: int,
    extent: tuple[int, int] | None = None,
) -> tuple[Panels, LogLinear]:
    """The panels of a sample read by a timed ``scan`` in one pass (the histogram and the
    timeline's points; one more for the time extent when ``extent``, the first and last
    send, is not known), memory independent of its size; with the log-linear histogram
    (for the overview's QQ plots)."""
    if extent is not None:
        start, stop = extent
    else:
        start, stop, n = 0, 0, 0
        for size, lo, hi in timed.map(time_extent_chunk):
            if size:
                start, stop = (lo, hi) if n == 0 else (min(start, lo), max(stop, hi))
                n += size
    cut = summary.p50 + 2 * summary.std
    counts = np.zeros(BUCKETS, np.int64)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    above = 0
    low = categories.low_threshold
    for c, points, k in timed.map(figure_chunk, cut, categories.thresholds, low, start, stop, pixels):
        counts += c
        parts.append(points)
        above += k
        if sum(p[0].size for p in parts) > 64 * pixels:
            parts = [_m4(parts, start, stop, pixels)]
    t, v, g = _m4(parts, start, stop, pixels)
    first = -1 if low is not None else 0
    hist = LogLinear(counts, int(summary.min), int(summary.max))
    edges = histogram_edges(summary.min, summary.max)
    ps = spectrum_levels(summary.count)
    counts_binned, spectrum = hist.rebinned(edges), hist.quantiles(ps * 100)
    panels = Panels(start, stop, t, v, g + first, above, counts_binned, edges, ps, spectrum, "histogram")
    return panels, hist


def _m4(
    parts: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]], start: int, stop: int, pixels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M4 of the union of chunks' M4 points (equal to M4 of all their samples), by time."""
    items = list(parts)
    if not items:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    t = np.concatenate([p[0] for p in items])
    v = np.concatenate([p[1] for p in items])
    g = np.concatenate([p[2] for p in items])
    keep = m4_select(t, v, g, start, stop, pixels)
    t, v, g = t[keep], v[keep], g[keep]
    order = np.lexsort((v, t))
    return t[order], v[order], g[order]
