"""A log-linear histogram of integer values that adds exactly (HdrHistogram's idea).

Every int64 value v maps to a bucket *key*, monotone in v:

    v >= 0:  key = (bits(float(v) + 1) >> (52 - m)) - (1023 << m)
    v <  0:  key = -1 - ((bits(float(-v)) >> (52 - m)) - (1023 << m))

where ``bits`` reads a float64 as its IEEE-754 bit pattern and m = ``mantissa_bits``. In
words: the octave of v + 1 and the first m bits after its leading one. Every octave
[2^e, 2^(e+1)) has 2^m buckets, so a bucket is at most 2^-m of its values wide, and every
integer below 2^(m+1) - 1 has a bucket of its own (the histogram is exact there). With
m = 15: exact below 65 535 ns, at most 0.003 % wide above.

Two histograms with the same m add bucket by bucket, so the histograms of row groups,
windows, runs or hosts merge into the histogram of their union without error; the
counts at bucket boundaries are exact, and an exact order statistic lies in a known
bucket, which a second pass over only that bucket's values then selects exactly (see
docs/statistics.md, "Exact statistics at any size").

The float conversion is exact below 2^53 and monotone above (rounding never reorders),
so the key function is monotone everywhere and the bucket of a key is one run of
consecutive integers; :func:`bucket_bounds` finds its ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MANTISSA_BITS = 15  # buckets per octave 2^15: exact below 65 535, 3.1e-5 relative width above
_EXPONENT_BIAS = 1023
_FLOAT_EXACT = 1 << 53


def bucket_keys(values: npt.ArrayLike, mantissa_bits: int = MANTISSA_BITS) -> np.ndarray:
    """The bucket key of every int64 value (see module docs)."""
    v = np.asarray(values, dtype=np.int64)
    shift = 52 - mantissa_bits
    base = _EXPONENT_BIAS << mantissa_bits
    if v.size == 0 or int(v.min()) >= 0:
        keys = ((v.astype(np.float64) + 1.0).view(np.int64) >> shift) - base
        return np.asarray(keys)
    keys = np.empty(v.shape, dtype=np.int64)
    negative = v < 0
    positive = ~negative
    keys[positive] = ((v[positive].astype(np.float64) + 1.0).view(np.int64) >> shift) - base
    magnitude = -(v[negative].astype(np.float64))  # float first: -INT64_MIN does not overflow
    keys[negative] = -1 - ((magnitude.view(np.int64) >> shift) - base)
    return keys


def bucket_key(value: int, mantissa_bits: int = MANTISSA_BITS) -> int:
    """The key of one value."""
    return int(bucket_keys(np.array([value], dtype=np.int64), mantissa_bits)[0])


def _edges(g: np.ndarray, mantissa_bits: int) -> np.ndarray:
    """The smallest integer u >= 1 whose positive key (bits(float(u)) >> (52 - m)) - bias
    is >= g, for g >= 0: the ceiling of the float whose bits start key g (exact while
    below 2^53; larger edges are settled by :func:`bucket_lower`)."""
    shift = 52 - mantissa_bits
    start = ((g + (_EXPONENT_BIAS << mantissa_bits)) << shift).view(np.float64)
    return np.ceil(np.minimum(start, 2.0**62)).astype(np.int64)


def _lowers(keys: np.ndarray, mantissa_bits: int) -> np.ndarray:
    """Vectorised :func:`bucket_lower` for keys whose edges lie below 2^53 in magnitude."""
    out = np.empty(keys.shape, dtype=np.int64)
    positive = keys >= 0
    out[positive] = _edges(keys[positive], mantissa_bits) - 1  # v + 1 reaches the edge
    g_next = -keys[~positive]  # -1 - key + 1: key(v) >= k  <=>  -v < edge(-1 - k + 1)
    out[~positive] = 1 - _edges(g_next, mantissa_bits)
    return out


def bucket_lower(key: int, mantissa_bits: int = MANTISSA_BITS) -> int:
    """The smallest int64 value whose key is >= ``key``: the first value of the bucket (or
    of the next one that holds integers), clamped to the int64 range."""
    lo_limit, hi_limit = -(1 << 63), (1 << 63) - 1
    if key <= bucket_key(lo_limit, mantissa_bits):
        return lo_limit
    if key > bucket_key(hi_limit, mantissa_bits):
        return hi_limit + 1  # past the last bucket (callers take lower(key + 1) - 1)
    guess = int(_lowers(np.array([key], dtype=np.int64), mantissa_bits)[0])
    if abs(guess) < _FLOAT_EXACT - 2:
        return guess
    # Beyond 2^53 the float rounding moves the edge by up to an ulp: binary search on the
    # (monotone) key function around the guess.
    step = 1 << max(abs(guess).bit_length() - 50, 0)
    low, high = max(guess - step, lo_limit), min(guess + step, hi_limit)
    while low > lo_limit and bucket_key(low, mantissa_bits) >= key:
        step *= 2
        low = max(low - step, lo_limit)
    while high < hi_limit and bucket_key(high, mantissa_bits) < key:
        step *= 2
        high = min(high + step, hi_limit)
    while low < high:
        mid = (low + high) // 2
        if bucket_key(mid, mantissa_bits) >= key:
            high = mid
        else:
            low = mid + 1
    return low


def bucket_bounds(keys: npt.ArrayLike, mantissa_bits: int = MANTISSA_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value of each key's bucket (inclusive, int64). A key that no
    integer maps to (most keys of the octaves below 2^m) gets lo > hi."""
    k = np.asarray(keys, dtype=np.int64)
    lo = _lowers(k, mantissa_bits)
    hi = _lowers(k + 1, mantissa_bits) - 1
    far = (np.abs(lo) >= _FLOAT_EXACT - 2) | (np.abs(hi) >= _FLOAT_EXACT - 2)
    for i in np.flatnonzero(far):
        lo[i] = bucket_lower(int(k[i]), mantissa_bits)
        hi[i] = bucket_lower(int(k[i]) + 1, mantissa_bits) - 1
    return lo, hi


@dataclass
class LogHistogram:
    """Counts of a log-linear histogram over a contiguous key range (dense from ``first``)."""

    mantissa_bits: int
    first: int  # key of counts[0]
    counts: np.ndarray  # int64

    @classmethod
    def empty(cls, mantissa_bits: int = MANTISSA_BITS) -> LogHistogram:
        return cls(mantissa_bits, 0, np.zeros(0, dtype=np.int64))

    @classmethod
    def of(cls, values: npt.ArrayLike, mantissa_bits: int = MANTISSA_BITS) -> LogHistogram:
        return cls.of_keys(bucket_keys(values, mantissa_bits), mantissa_bits)

    @classmethod
    def of_keys(cls, keys: np.ndarray, mantissa_bits: int = MANTISSA_BITS) -> LogHistogram:
        if keys.size == 0:
            return cls.empty(mantissa_bits)
        first = int(keys.min())
        return cls(mantissa_bits, first, np.bincount(keys - first).astype(np.int64, copy=False))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def add(self, other: LogHistogram) -> None:
        """Add ``other``'s counts to these (same ``mantissa_bits``)."""
        if other.mantissa_bits != self.mantissa_bits:
            raise ValueError("histograms of different precision do not add")
        if other.counts.size == 0:
            return
        if self.counts.size == 0:
            self.first, self.counts = other.first, other.counts.copy()
            return
        start = min(self.first, other.first)
        end = max(self.first + self.counts.size, other.first + other.counts.size)
        if start != self.first or end != self.first + self.counts.size:
            grown = np.zeros(end - start, dtype=np.int64)
            grown[self.first - start : self.first - start + self.counts.size] = self.counts
            self.first, self.counts = start, grown
        offset = other.first - self.first
        self.counts[offset : offset + other.counts.size] += other.counts

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, counts) of the buckets that hold values, ascending."""
        where = np.flatnonzero(self.counts)
        return where + self.first, self.counts[where]
