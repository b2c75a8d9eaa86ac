"""describe's two passes (stats/twopass.py) on a Dask cluster's workers.

:class:`ClusterPasses` is a :class:`jitterlab.stats.twopass.PassReader`: each pass is one
task per Parquet row group that reads the group's (t_send_ns, t_recv_ns) and runs the C++
kernel of the pass (stats/kernels.py) on it, into arrays that cover only the windows the
group's send times touch. It sends back those windows' counts, exact sums and extremes,
the nonzero histogram and refinement counts (index, count), the nonzero dense value counts
and the values beyond the dense range; the client adds them into the full arrays, as the
single-process path's kernel adds chunk after chunk. Counts, exact integer sums, minima and
maxima do not depend on how the sample is cut, so the arrays, the value table and every
number after them equal the single-process path's (docs/cluster.md).

A group whose samples fall outside the planned extents (a wrong stored summary) or a worker
without the kernels raises :class:`~jitterlab.stats.kernels.KernelRangeError`, as the kernel
does here: describe then takes the radix passes (stats/outofcore.py) on the cluster.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.cluster.scan import map_groups
from jitterlab.stats import kernels
from jitterlab.stats.valuetable import ValueCounter
from jitterlab.store.reader import RECV, SEND, read_row_group, row_group_count

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min
OUTSIDE = "outside"  # a worker's answer: a sample outside the plan, or no kernels there


class ClusterPasses:
    """The two passes over the samples file ``path``, one task per row group on the
    cluster of ``client`` (see the module docs)."""

    def __init__(self, client: Any, path: Path) -> None:
        self.client = client
        self.path = str(Path(path).resolve())
        self.groups = range(row_group_count(path))

    def _shares(self, task: Any, args: tuple[Any, ...]) -> Any:
        for share in map_groups(
            self.client, self.path, self.groups, _group_task, task.__name__, (task,), args
        ):
            if isinstance(share, str):
                raise kernels.KernelRangeError(f"{task.__name__}: {share} on a worker")
            if share is not None:
                yield share

    def first(self, spec: kernels.FirstSpec, arrays: dict[str, np.ndarray], counter: ValueCounter) -> None:
        hist = arrays["hist"]
        n_buckets = hist.shape[1]
        plan = (spec, arrays["count"].size, n_buckets, counter.dense.size)
        flat = hist.reshape(-1)
        for w, count, total, lowest, highest, at, added, dense_at, dense_n, beyond in self._shares(
            first_pass_group, plan
        ):
            rows = slice(w, w + count.size)
            arrays["count"][rows] += count
            arrays["sum"][rows] += total
            np.minimum(arrays["lowest"][rows], lowest, out=arrays["lowest"][rows])
            np.maximum(arrays["highest"][rows], highest, out=arrays["highest"][rows])
            flat[w * n_buckets + at] += added  # indices unique within a share
            counter.dense[dense_at] += dense_n
            counter.add_beyond(beyond)

    def refine(self, spec: kernels.RefineSpec, slot_counts: np.ndarray | None, hist: np.ndarray) -> None:
        n_slots = None if slot_counts is None else slot_counts.shape[1]
        n_windows, nb = spec.n_windows, spec.nb
        plan = (spec, n_slots)
        flat = hist.reshape(-1)
        for w, n, slots, at, added in self._shares(refine_group, plan):
            if slot_counts is not None:
                slot_counts[w : w + n] += slots
            g, rest = np.divmod(at, n * nb)
            flat[g * (n_windows * nb) + w * nb + rest] += added


def _group_task(path: str, group: int, task: Any, args: tuple[Any, ...]) -> Any:
    """On a worker: the row group's send and receive times through ``task``."""
    if not kernels.available():
        return f"{OUTSIDE} (no kernel library)"
    send, recv = (np.ascontiguousarray(c, np.int64) for c in read_row_group(Path(path), group, [SEND, RECV]))
    if send.size == 0:
        return None
    try:
        return task(send, recv, *args)
    except kernels.KernelRangeError as e:
        return f"{OUTSIDE} ({e})"


def _windows_of(send: np.ndarray, t0: int, width_ns: int, n_windows: int) -> tuple[int, int]:
    """The first window the chunk's sends touch and how many from it (a send outside the
    plan's windows: KernelRangeError, as the kernel would raise)."""
    lo, hi = int(send.min()), int(send.max())
    if lo < t0 or (hi - t0) // width_ns >= n_windows:
        raise kernels.KernelRangeError("a send time outside the windows")
    w = (lo - t0) // width_ns
    return w, (hi - t0) // width_ns - w + 1


def first_pass_group(
    send: np.ndarray,
    recv: np.ndarray,
    spec: kernels.FirstSpec,
    n_windows: int,
    n_buckets: int,
    dense_size: int,
) -> tuple[Any, ...]:
    """One row group's share of the first pass (see the module docs)."""
    w, n = _windows_of(send, spec.t0, spec.width_ns, n_windows)
    arrays = {
        "count": np.zeros(n, np.int64),
        "sum": np.zeros(n, np.int64),
        "lowest": np.full(n, _INT64_MAX),
        "highest": np.full(n, _INT64_MIN),
        "hist": np.zeros((n, n_buckets), np.int64),
    }
    dense = np.zeros(dense_size, np.int64)
    part = dataclasses.replace(spec, t0=spec.t0 + w * spec.width_ns)  # from the chunk's first window
    beyond = kernels.first_pass(send, recv, part, arrays, dense, np.empty(send.size, np.int64))
    flat = arrays["hist"].reshape(-1)
    at = np.flatnonzero(flat)
    dense_at = np.flatnonzero(dense)
    return (
        w, arrays["count"], arrays["sum"], arrays["lowest"], arrays["highest"],
        at, flat[at], dense_at, dense[dense_at], beyond.copy(),
    )  # fmt: skip


def refine_group(
    send: np.ndarray, recv: np.ndarray, spec: kernels.RefineSpec, n_slots: int | None
) -> tuple[Any, ...]:
    """One row group's share of a refinement pass (see the module docs)."""
    w, n = _windows_of(send, spec.t0, spec.width_ns, spec.n_windows)
    part = spec.windows(w, n)
    hist = np.zeros((part.a.shape[0], n, spec.nb), np.int64)
    slots = None if n_slots is None else np.zeros((n, n_slots), np.int64)
    kernels.refine_pass(send, recv, part, slots, hist)
    flat = hist.reshape(-1)
    at = np.flatnonzero(flat)
    return w, n, slots, at, flat[at]


def value_counts(
    x: np.ndarray, lowest: int, highest: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One row group's share of a :class:`~jitterlab.stats.valuetable.ValueCounter` whose
    sample spans [lowest, highest]: the nonzero dense counts (index, count) and the values
    beyond them; None without the kernels."""
    if not kernels.available():
        return None
    counter = ValueCounter(lowest, highest)
    beyond = kernels.count_values(
        np.ascontiguousarray(x, np.int64), lowest, counter.dense, counter.buffer(x.size)
    )
    at = np.flatnonzero(counter.dense)
    return at, counter.dense[at], beyond.copy()


def add_counts(counter: ValueCounter, counted: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """A :func:`value_counts` share added into the client's counter."""
    dense_at, dense_n, beyond = counted
    counter.dense[dense_at] += dense_n
    counter.add_beyond(beyond)
