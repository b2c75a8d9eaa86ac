"""An integer sample held exactly as its distinct values and their counts.

Latencies in nanoseconds take far fewer distinct values than there are samples: 10⁹ samples
of a run span a few hundred thousand values around the body and a sparse tail. Counting
each value gives the whole sample in bounded memory, and every order statistic of it with
no further reading: the sorted sample is the values, each repeated its count.

The counter keeps a dense array of counts from the sample's minimum (``DENSE_VALUES`` of
them, 32 MiB), or, when the extremes are not known before the pass (:meth:`ValueCounter.around`),
from a little below the first chunk's minimum, and counts the values beyond it (on either side) apart (sorted and folded every ``FOLD_AT``
values); past ``BEYOND_AT_MOST`` distinct values beyond, it gives up (``table()`` is None)
and the caller falls back on radix selection (:mod:`jitterlab.stats.summary`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitterlab.stats import kernels
from jitterlab.stats.type7 import type7_percentiles

DENSE_VALUES = 1 << 22  # exact counts of the values from the minimum up (32 MiB)
BEYOND_AT_MOST = 1 << 22  # distinct values beyond the dense range kept in the table
FOLD_AT = 1 << 20  # values beyond the dense range gathered before they are counted


@dataclass(frozen=True)
class ValueTable:
    """A sample as its distinct values (sorted) and how often each occurs."""

    values: np.ndarray
    counts: np.ndarray

    def cumulative(self) -> np.ndarray:
        return np.cumsum(self.counts)

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        """The values at these 0-based ranks of the sorted sample."""
        return np.asarray(self.values[np.searchsorted(self.cumulative(), ranks, side="right")])

    def percentiles(self, ps: tuple[float, ...]) -> np.ndarray:
        """Type-7 percentiles of the sample (:mod:`jitterlab.stats.type7`: the same float
        operations on the same order statistics as every other path)."""
        return type7_percentiles(int(self.counts.sum()), ps, self.at_ranks)


def _merge(values: np.ndarray, counts: np.ndarray, more: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table (values, counts) with the raw values ``more`` counted in."""
    u, c = np.unique(more, return_counts=True)
    v = np.concatenate([values, u])
    n = np.concatenate([counts, c.astype(np.int64)])
    order = np.argsort(v, kind="stable")
    v, n = v[order], n[order]
    if v.size == 0:
        return v, n
    starts = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
    return v[starts], np.add.reduceat(n, starts)


class ValueCounter:
    """Counts the values of an integer sample whose minimum is ``lowest`` and maximum
    ``highest``, chunk by chunk (see the module docs)."""

    def __init__(self, lowest: int, highest: int) -> None:
        self.base = lowest
        self.dense = np.zeros(min(highest - lowest + 1, DENSE_VALUES), np.int64)
        self._values = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._pending: list[np.ndarray] = []
        self._waiting = 0
        self.exact = True
        self._buffer = np.zeros(0, np.int64)

    @classmethod
    def around(cls, lowest: int, highest: int) -> ValueCounter:
        """A counter for a sample whose extremes are not known yet, sized from a first
        chunk's: dense counts from a little below its minimum, four times its span wide
        (at least 2^16, at most DENSE_VALUES); values on either side are counted apart."""
        span = highest - lowest + 1
        width = min(DENSE_VALUES, max(1 << 16, 4 * span))
        base = lowest - max(width - span, 0) // 4
        return cls(base, base + width - 1)

    def give_up(self) -> None:
        """Stop counting (a chunk could not be counted): ``table()`` is None from now on."""
        self.exact = False
        self._values = self._counts = np.zeros(0, np.int64)
        self._pending, self._waiting = [], 0

    def buffer(self, size: int) -> np.ndarray:
        """Room for a chunk's values beyond the dense range (reused between chunks)."""
        if self._buffer.size < size:
            self._buffer = np.empty(size, np.int64)
        return self._buffer

    def add(self, x: np.ndarray) -> None:
        """Count one chunk."""
        self.add_beyond(
            kernels.count_values(
                np.ascontiguousarray(x, np.int64), self.base, self.dense, self.buffer(x.size)
            )
        )

    def add_beyond(self, beyond: np.ndarray) -> None:
        """Count values the dense array does not reach (a kernel's ``beyond``)."""
        if not self.exact or beyond.size == 0:
            return
        self._pending.append(beyond.copy())
        self._waiting += beyond.size
        if self._waiting >= FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        if self._pending:
            self._values, self._counts = _merge(self._values, self._counts, np.concatenate(self._pending))
        self._pending, self._waiting = [], 0
        if self._values.size > BEYOND_AT_MOST:
            self.give_up()

    def table(self) -> ValueTable | None:
        """The sample counted so far, or None when it had too many distinct values."""
        if self.exact:
            self._fold()
        if not self.exact:
            return None
        at = np.flatnonzero(self.dense)
        split = int(np.searchsorted(self._values, self.base))  # values below the dense range come first
        return ValueTable(
            np.concatenate([self._values[:split], at + self.base, self._values[split:]]),
            np.concatenate([self._counts[:split], self.dense[at], self._counts[split:]]),
        )
