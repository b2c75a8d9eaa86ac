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

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from jitterlab.store.rawfile import CHUNK_RECORDS, RawSamples


def _chunks(raws: Sequence[RawSamples], rows: int) -> Iterator[np.ndarray]:
    """Every record of ``raws`` in order, ``rows`` at a time (the last chunk may be shorter):
    small files (a stream's parts, about a second each) are joined, so the sort writes about
    records / ``rows`` scratch files, not one per part (a long stream has thousands)."""
    pending: list[np.ndarray] = []
    held = 0
    for raw in raws:
        for chunk in raw.chunks(rows):
            while chunk.size:
                take = chunk[: rows - held]
                pending.append(take)
                held += take.size
                chunk = chunk[take.size :]
                if held == rows:
                    yield pending[0] if len(pending) == 1 else np.concatenate(pending)
                    pending, held = [], 0
    if pending:
        yield pending[0] if len(pending) == 1 else np.concatenate(pending)


def _order(pair: np.ndarray, seq: np.ndarray) -> np.ndarray | None:
    """The stable (pair, seq) order of records; None when they are in it already (an agent's
    records mostly are: one pair, sequence numbers rising, a few reordered)."""
    p, q = pair.astype(np.int64), seq
    if p.size < 2 or bool(np.all((p[1:] > p[:-1]) | ((p[1:] == p[:-1]) & (q[1:] >= q[:-1])))):
        return None
    return np.lexsort((seq, pair))


def _sort(records: np.ndarray) -> np.ndarray:
    order = _order(records["pair"], records["seq"])
    return records if order is None else records[order]


def sorted_records(
    raws: Sequence[RawSamples], scratch: Path, rows: int = CHUNK_RECORDS
) -> Iterator[np.ndarray]:
    """The records of ``raws`` (one layout) in (pair, seq) order, at most about ``rows`` at a
    time; memory about ``3 * rows`` records whatever their number. Sorted chunks are
    written to ``scratch-N`` files, each with ``scratch-N.index`` (every record's place
    among all records: equal keys keep their order across chunks); removed when done,
    also on an error."""
    total = sum(raw.rows for raw in raws)
    if total == 0:
        return
    if total <= rows:
        yield _sort(np.concatenate(list(_chunks(raws, rows))))
        return
    first = next(raw for raw in raws if raw.rows)
    dtype = first.loaded.dtype if first.loaded is not None else first.dtype
    files: list[tuple[Path, Path, int]] = []
    try:
        start = 0
        for chunk in _chunks(raws, rows):
            order = _order(chunk["pair"], chunk["seq"])
            index = np.arange(start, start + len(chunk), dtype=np.int64)
            start += len(chunk)
            path = scratch.with_name(f"{scratch.name}-{len(files)}")
            where = path.with_name(path.name + ".index")
            (chunk if order is None else chunk[order]).tofile(path)
            (index if order is None else index[order]).tofile(where)
            files.append((path, where, len(chunk)))
        yield from _merge(files, dtype, rows)
    finally:
        for path, where, _ in files:
            path.unlink(missing_ok=True)
            where.unlink(missing_ok=True)


class _Slice:
    """The part of one sorted file in memory: its records, their keys as contiguous arrays
    (binary searches need them), and how many were taken already."""

    def __init__(self, records: np.ndarray, index: np.ndarray) -> None:
        self.records = records
        self.pair = np.ascontiguousarray(records["pair"])
        self.seq = np.ascontiguousarray(records["seq"])
        self.index = index
        self.taken = 0

    @property
    def left(self) -> int:
        return self.records.size - self.taken

    def last(self) -> tuple[int, int, int]:
        return int(self.pair[-1]), int(self.seq[-1]), int(self.index[-1])

    def upto(self, pair: int, seq: int, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Take the records not taken yet whose key is <= (pair, seq, index), with their
        keys: three binary searches, not a pass over them."""
        lo = int(np.searchsorted(self.pair, pair, "left"))
        hi = int(np.searchsorted(self.pair, pair, "right"))
        at = lo + int(np.searchsorted(self.seq[lo:hi], seq, "left"))
        past = lo + int(np.searchsorted(self.seq[lo:hi], seq, "right"))
        end = max(at + int(np.searchsorted(self.index[at:past], index, "right")), self.taken)
        taken = slice(self.taken, end)
        self.taken = end
        return self.records[taken], self.pair[taken], self.seq[taken], self.index[taken]


def _merge(files: list[tuple[Path, Path, int]], dtype: np.dtype, rows: int) -> Iterator[np.ndarray]:
    """The sorted files merged: each round takes, from every file's slice, the records up
    to the smallest last key of the slices (all of them sort before any record not read
    yet), sorts them together and yields them. Each round empties one slice at least, so
    there are about (records / slice) + files rounds."""
    step = max(rows // len(files), 1024)
    handles = [(open(path, "rb"), open(where, "rb")) for path, where, _ in files]  # noqa: SIM115
    try:
        unread = [count for _, _, count in files]
        slices = [_Slice(np.zeros(0, dtype), np.zeros(0, np.int64)) for _ in files]

        def refill(k: int) -> None:
            if slices[k].left == 0 and unread[k]:
                n = min(step, unread[k])
                records, index = (
                    np.fromfile(handles[k][0], dtype, count=n),
                    np.fromfile(handles[k][1], np.int64, count=n),
                )
                slices[k] = _Slice(records, index)
                unread[k] -= n

        for k in range(len(files)):
            refill(k)
        while any(s.left for s in slices):
            frontier = min(s.last() for s in slices if s.left)
            taken = []
            for k, s in enumerate(slices):
                if s.left:
                    taken.append(s.upto(*frontier))
                    refill(k)
            pieces = [t for t in taken if t[0].size]
            if len(pieces) == 1:  # in order already
                yield pieces[0][0]
            elif pieces:
                records, pair, seq, index = (np.concatenate([t[i] for t in pieces]) for i in range(4))
                yield records[np.lexsort((index, seq, pair))]
    finally:
        for data_file, index_file in handles:
            data_file.close()
            index_file.close()
