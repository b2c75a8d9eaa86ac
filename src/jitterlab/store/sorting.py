"""Records of raw sample files in (pair, seq) order, in memory independent of their number.

``jitterlab net bench`` stores its agents' records sorted by pair, then sequence number (an
agent records them in arrival order: UDP reorders, a frame-sync client interleaves its
render nodes). :func:`sorted_records` gives the same order as ``np.lexsort((seq, pair))``
of every record at once (a stable sort: equal keys keep their order in the blocks), as an
external merge sort: the records are read ``rows`` at a time, each chunk sorted and written
to a scratch file beside them, then the sorted chunks are merged a slice of each at a time.
Records that fit in one chunk are sorted in memory, as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from jitterlab.store.rawfile import CHUNK_RECORDS, RawSamples

INDEX = "_index"  # the record's place among all records: makes every key unique (stability)


def _keyed(dtype: np.dtype) -> np.dtype:
    return np.dtype([*((name, dtype[name]) for name in dtype.names or ()), (INDEX, np.int64)])


def _chunks(raws: Sequence[RawSamples], rows: int) -> Iterator[np.ndarray]:
    """Every record of ``raws`` in order, at most ``rows`` at a time."""
    for raw in raws:
        yield from raw.chunks(rows)


def _sort(records: np.ndarray) -> np.ndarray:
    return records[np.lexsort((records["seq"], records["pair"]))]


def sorted_records(
    raws: Sequence[RawSamples], scratch: Path, rows: int = CHUNK_RECORDS
) -> Iterator[np.ndarray]:
    """The records of ``raws`` (one layout) in (pair, seq) order, at most about ``rows`` at a
    time; memory about ``3 * rows`` records whatever their number. Sorted chunks are
    written to ``scratch-N`` files (removed when done, also on an error)."""
    total = sum(raw.rows for raw in raws)
    if total == 0:
        return
    if total <= rows:
        yield _sort(np.concatenate(list(_chunks(raws, rows))))
        return
    first = next(raw for raw in raws if raw.rows)
    dtype = _keyed(first.loaded.dtype if first.loaded is not None else first.dtype)
    files: list[tuple[Path, int]] = []
    try:
        start = 0
        for chunk in _chunks(raws, rows):
            keyed = np.empty(len(chunk), dtype)
            for name in chunk.dtype.names or ():
                keyed[name] = chunk[name]
            keyed[INDEX] = np.arange(start, start + len(chunk))
            start += len(chunk)
            path = scratch.with_name(f"{scratch.name}-{len(files)}")
            _sort(keyed).tofile(path)
            files.append((path, len(chunk)))
        yield from _merge(files, dtype, rows)
    finally:
        for path, _ in files:
            path.unlink(missing_ok=True)


class _Slice:
    """The part of one sorted file in memory: its records, their keys as contiguous arrays
    (binary searches need them), and how many were taken already."""

    def __init__(self, records: np.ndarray) -> None:
        self.records = records
        self.pair = np.ascontiguousarray(records["pair"])
        self.seq = np.ascontiguousarray(records["seq"])
        self.index = np.ascontiguousarray(records[INDEX])
        self.taken = 0

    @property
    def left(self) -> int:
        return self.records.size - self.taken

    def last(self) -> tuple[int, int, int]:
        return int(self.pair[-1]), int(self.seq[-1]), int(self.index[-1])

    def upto(self, pair: int, seq: int, index: int) -> np.ndarray:
        """Take the records not taken yet whose key is <= (pair, seq, index): three binary
        searches, not a pass over them."""
        lo = int(np.searchsorted(self.pair, pair, "left"))
        hi = int(np.searchsorted(self.pair, pair, "right"))
        at = lo + int(np.searchsorted(self.seq[lo:hi], seq, "left"))
        past = lo + int(np.searchsorted(self.seq[lo:hi], seq, "right"))
        end = max(at + int(np.searchsorted(self.index[at:past], index, "right")), self.taken)
        out = self.records[self.taken : end]
        self.taken = end
        return out


def _merge(files: list[tuple[Path, int]], dtype: np.dtype, rows: int) -> Iterator[np.ndarray]:
    """The sorted files merged: each round takes, from every file's slice, the records up
    to the smallest last key of the slices (all of them sort before any record not read
    yet), sorts them together and yields them without the index column. Each round empties
    one slice at least, so there are about (records / slice) + files rounds."""
    out = np.dtype([(name, dtype[name]) for name in dtype.names or () if name != INDEX])
    step = max(rows // len(files), 1024)
    handles = [open(path, "rb") for path, _ in files]  # noqa: SIM115 (closed below)
    try:
        unread = [count for _, count in files]
        slices = [_Slice(np.zeros(0, dtype)) for _ in files]

        def refill(k: int) -> None:
            if slices[k].left == 0 and unread[k]:
                slices[k] = _Slice(np.fromfile(handles[k], dtype, count=min(step, unread[k])))
                unread[k] -= slices[k].records.size

        for k in range(len(files)):
            refill(k)
        while any(s.left for s in slices):
            frontier = min(s.last() for s in slices if s.left)
            taken = []
            for k, s in enumerate(slices):
                if s.left:
                    taken.append(s.upto(*frontier))
                    refill(k)
            merged = _sort_keyed(np.concatenate(taken))
            result = np.empty(merged.size, out)
            for name in out.names or ():
                result[name] = merged[name]
            yield result
    finally:
        for f in handles:
            f.close()


def _sort_keyed(records: np.ndarray) -> np.ndarray:
    return records[np.lexsort((records[INDEX], records["seq"], records["pair"]))]


def remove_scratch(scratch: Path) -> None:
    """Scratch files a killed sort left beside ``scratch`` (``scratch-N``)."""
    for path in scratch.parent.glob(f"{scratch.name}-*"):
        os.unlink(path)
