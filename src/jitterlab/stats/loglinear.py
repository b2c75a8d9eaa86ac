"""A mergeable log-linear histogram of integer latencies (HdrHistogram's bucket layout):
what the report draws the histogram, spectrum and QQ panels of a run too large to hold
from (issue 25 item 2).

Buckets: values below 2·M (M = 2^SUB_BITS = 128) have a bucket each; above, every octave
[2^k, 2^(k+1)) is cut into M buckets of width 2^(k − SUB_BITS). A bucket is therefore at
most 1/M = 0.78 % of its lower edge wide, whatever the value's magnitude, and at most
64 · M buckets cover int64. Histograms of chunks add (integer counts), so one built in row
groups, in any order or on any worker, equals the histogram of the whole sample, and every
sample — a lone rare cluster among 10⁹ included — is counted in its bucket (nothing is
subsampled). Negative values (clocks of two hosts) are counted in bucket 0.

Quantiles from the histogram interpolate as type 7 does between the values at ranks ⌊h⌋
and ⌊h⌋ + 1 (h = (n − 1) p), each taken as the midpoint of the bucket holding it, clamped
to the sample's exact extremes: within half a bucket (0.39 %) of the exact value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterlab.stats.type7 import type7_percentiles

SUB_BITS = 7
M = 1 << SUB_BITS
BUCKETS = (64 - SUB_BITS) * M  # enough for every non-negative int64


def bucket_index(x: np.ndarray) -> np.ndarray:
    """The bucket of each value (see the module docs)."""
    v = np.maximum(np.asarray(x, np.int64), 0)
    _, exp = np.frexp(v.astype(np.float64))
    bits = exp.astype(np.int64)  # bit length of v (float rounding may add one near 2^k)
    too_long = (bits > 0) & ((v >> np.maximum(bits - 1, 0)) == 0)
    bits = bits - too_long
    e = np.maximum(bits - SUB_BITS - 1, 0)
    index: np.ndarray = np.where(v < 2 * M, v, (e + 1) * M + (v >> e) - M)
    return index


def bucket_lower(index: np.ndarray) -> np.ndarray:
    """The smallest value of each bucket."""
    return layout_bounds(np.asarray(index, np.int64), SUB_BITS + 1)[0]


def bucket_width(index: np.ndarray) -> np.ndarray:
    """How many integers each bucket holds."""
    return layout_bounds(np.asarray(index, np.int64), SUB_BITS + 1)[1]


def layout_count(highest: int, significant_bits: int) -> int:
    """How many buckets of the layout with ``significant_bits`` (s) cover 0..``highest``:
    below 2^s a bucket per value, above 2^(s−1) buckets per octave (this module's layout is
    s = SUB_BITS + 1; describe's two passes choose s to fit their counters)."""
    k = int(highest).bit_length() - significant_bits
    return int(highest) + 1 if k <= 0 else (k << (significant_bits - 1)) + (int(highest) >> k) + 1


def layout_bounds(index: np.ndarray, significant_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The smallest value and the width of each bucket of the layout (see :func:`layout_count`)."""
    k = np.maximum((index >> (significant_bits - 1)) - 1, 0)
    linear = index < (1 << significant_bits)
    first = np.where(linear, index, (index - (k << (significant_bits - 1))) << k)
    width = np.where(linear, 1, np.int64(1) << k)
    return first, width


def histogram_chunk(x: np.ndarray) -> np.ndarray:
    """The bucket counts of one chunk (a pass's step; counts add)."""
    return np.bincount(bucket_index(x), minlength=BUCKETS).astype(np.int64)


@dataclass(frozen=True)
class LogLinear:
    """Bucket counts with the sample's exact extremes."""

    counts: np.ndarray
    lowest: int
    highest: int

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def quantiles(self, ps: np.ndarray | tuple[float, ...]) -> np.ndarray:
        """Percentiles ``ps`` (0–100) from the buckets (see the module docs)."""
        cumulative = np.cumsum(self.counts)
        return type7_percentiles(
            self.total, ps, lambda ranks: self._midpoint(np.searchsorted(cumulative, ranks, side="right"))
        )

    def _midpoint(self, index: np.ndarray) -> np.ndarray:
        mid = bucket_lower(index) + (bucket_width(index) - 1) / 2.0
        return np.asarray(np.clip(mid, self.lowest, self.highest), np.float64)

    def rebinned(self, edges: np.ndarray) -> np.ndarray:
        """The counts summed into the bins ``edges`` (each bucket goes whole to the bin that
        holds its midpoint; buckets outside go to the first or last bin)."""
        filled = np.flatnonzero(self.counts)
        mid = bucket_lower(filled) + (bucket_width(filled) - 1) / 2.0
        mid = np.clip(mid, self.lowest, self.highest)
        where = np.clip(np.searchsorted(edges, mid, side="right") - 1, 0, edges.size - 2)
        return np.bincount(where, weights=self.counts[filled], minlength=edges.size - 1).astype(np.int64)
