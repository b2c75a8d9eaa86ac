"""A run's latencies as a :class:`jitterlab.stats.compare.OrderedSample` read by a Dask
cluster's workers (``compare --cluster``).

The single-process path holds a run of at most 2^24 samples and sorts it, and reads a larger
one in row groups (:class:`jitterlab.stats.compare.ChunkedSample`, ranks by radix
refinement). :class:`ClusterSample` never reads the samples in the client: the count,
extremes and exact sum in one pass on the workers, every value counted in a second (the
shares of :func:`jitterlab.cluster.twopass.value_counts`, added into a
:class:`~jitterlab.stats.valuetable.ValueCounter`) whose table gives any rank with no more
reading, and one pass per draw of positions (a bootstrap subsample in file order). The
values at ranks and positions are those of the sorted and the stored sample, so the
comparison equals the single-process one to the last bit (tests/store/test_cluster.py).
Its :meth:`ClusterSample.intervals` are the local samples' (blocks by position in the
file), the block counts one pass on the workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.cluster.scan import ClusterScan, map_groups
from jitterlab.cluster.twopass import add_counts, value_counts
from jitterlab.stats import quantile_ci
from jitterlab.stats.quantile_ci import QuantileInterval
from jitterlab.stats.summary import extent_by, order_statistics_by
from jitterlab.stats.valuetable import ValueCounter, ValueTable
from jitterlab.store.reader import RECV, SEND, read_row_group, send_ranges


class ClusterSample:
    """The latencies of the samples file ``path``, read on the cluster of ``client``."""

    def __init__(self, client: Any, path: Path) -> None:
        self.client = client
        self.scan = ClusterScan(client, path)
        rows = [n for n, _ in send_ranges(path)]
        self.offsets = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])
        self.size, self.lowest, self.highest, _ = extent_by(self.scan)
        self._table: ValueTable | None = None
        self._counted = False

    def table(self) -> ValueTable | None:
        """Every value counted (one pass, the first time); None without the kernels on a
        worker or with too many distinct values (then ranks by radix refinement)."""
        if not self._counted:
            self._counted = True
            counter: ValueCounter | None = ValueCounter(self.lowest, self.highest)
            for counted in self.scan.map(value_counts, self.lowest, self.highest):
                if counted is None:
                    counter = None
                elif counter is not None:
                    add_counts(counter, counted)
            self._table = counter.table() if counter is not None else None
        return self._table

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        r = np.asarray(ranks, np.int64)
        table = self.table() if self.size else None
        if table is not None:
            return np.asarray(table.at_ranks(r.ravel()).astype(np.float64).reshape(r.shape))
        wanted = sorted({int(v) for v in r.ravel()})
        found = order_statistics_by(self.scan, wanted, self.lowest, self.highest, self.size)
        values = np.array([found[k] for k in wanted], dtype=np.float64)
        return np.asarray(values[np.searchsorted(wanted, r)])

    def intervals(self, levels: tuple[float, ...], confidence: float) -> list[QuantileInterval]:
        """Each level's interval (stats/quantile_ci.py), blocks by position in the file, as
        :class:`jitterlab.stats.compare.ChunkedSample` gives them: the order statistics
        from :meth:`at_ranks`, the block counts in one pass on the workers."""

        def stats(ranks: list[int]) -> dict[int, float]:
            if not ranks:
                return {}
            values = self.at_ranks(np.asarray(ranks, np.int64))
            return {r: float(v) for r, v in zip(ranks, values, strict=True)}

        def counts(cuts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
            blocks = quantile_ci.block_count(self.size)
            width = quantile_ci.time_blocks(0, self.size - 1, blocks)
            total = np.zeros((len(cuts) + 1, blocks), np.int64)
            for share in map_groups(
                self.client,
                self.scan.path,
                self.scan.groups,
                _block_counts_task,
                "block_counts",
                (),
                (self.offsets, width, blocks, tuple(cuts)),
            ):
                total += share
            return total[0], total[1:]

        return quantile_ci.quantile_intervals(self.size, levels, stats, counts, confidence)

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        p = np.asarray(positions, np.int64)
        order = np.argsort(p, kind="stable")
        ordered = p[order]
        shares = map_groups(
            self.client,
            self.scan.path,
            self.scan.groups,
            _positions_task,
            "positions",
            (),
            (ordered, self.offsets),
        )
        out = np.empty(p.size, np.float64)
        out[order] = np.concatenate([np.zeros(0, np.float64), *shares])
        return out


def _positions_task(path: str, group: int, args: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """On a worker: the latencies of row group ``group`` at the wanted file positions in it."""
    ordered, offsets = args
    lo, hi = np.searchsorted(ordered, [offsets[group], offsets[group + 1]])
    if lo == hi:
        return np.zeros(0, np.float64)
    send, recv = read_row_group(Path(path), group, [SEND, RECV])
    latency = recv - send
    return np.asarray(latency[ordered[lo:hi] - offsets[group]], np.float64)


def _block_counts_task(
    path: str, group: int, args: tuple[np.ndarray, int, int, tuple[float, ...]]
) -> np.ndarray:
    """On a worker: row group ``group``'s share of the block pass, its samples placed by
    their position in the file."""
    offsets, width, blocks, cuts = args
    send, recv = read_row_group(Path(path), group, [SEND, RECV])
    position = np.arange(offsets[group], offsets[group] + send.size, dtype=np.int64)
    return quantile_ci.block_counts_chunk((position, recv - send), 0, width, blocks, cuts)
