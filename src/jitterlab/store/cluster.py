"""The exact summary of a run on a Dask distributed cluster (``--cluster local:N|ADDRESS``).

Workers read the run's row groups from the shared store (the same path on every host) and
compute each row group's share of every pass of
:func:`jitterlab.stats.summary.summarize_chunks`: count, extremes and exact integer sum;
the squared deviations from the mean; the bucket counts and gathered values of each radix
refinement pass. The client adds the shares (integers: in any order; the squares in row
group order, as the single-process path adds them), so every number equals the
single-process path's. Dask is imported only here, and only when asked for
(``pip install 'jitterlab[cluster]'``).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.summary import (
    SQUARES_BLOCK,
    SUMMARY_PERCENTILES,
    Interval,
    Summary,
    block_squares,
    percentiles_by,
    refine_chunk,
    sample_extent,
    summarize_chunks,
    summary_of,
)
from jitterlab.store.writer import latency_chunks

MISSING = "--cluster needs the optional package dask[distributed]: pip install 'jitterlab[cluster]'"


@contextlib.contextmanager
def connect(spec: str) -> Iterator[Any]:
    """A Dask client: ``local:N`` starts N worker processes here, anything else is the
    address of a running scheduler (``tcp://host:8786``)."""
    try:  # typed as Any: the extra may be missing where mypy runs
        distributed = importlib.import_module("dask.distributed")
    except ImportError:
        raise JitterlabError(MISSING) from None
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    if spec.startswith("local:"):
        try:
            n = int(spec.removeprefix("local:"))
        except ValueError:
            n = 0
        if n < 1:
            raise JitterlabError(f"--cluster {spec}: give local:N with N ≥ 1 worker processes")
        with (
            LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    try:
        client = Client(spec, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise JitterlabError(f"--cluster {spec}: no scheduler answers ({e})") from None
    try:
        yield client
    finally:
        client.close()


def _latency(path: str, group: int) -> np.ndarray:
    with pq.ParquetFile(path) as f:
        t = f.read_row_group(group, columns=["t_send_ns", "t_recv_ns"])
    latency: np.ndarray = t.column(1).to_numpy() - t.column(0).to_numpy()
    return latency


def _extent_task(path: str, group: int) -> tuple[int, int, int, int]:
    return sample_extent(lambda: [_latency(path, group)])


def _squares_task(path: str, group: int, mean: float) -> list[float]:
    return block_squares(_latency(path, group), mean)


def _refine_task(
    path: str, group: int, gather: set[Interval], widths: dict[Interval, int]
) -> tuple[dict[Interval, np.ndarray], dict[Interval, np.ndarray]]:
    return refine_chunk(_latency(path, group), gather, widths)


def _run(client: Any, fn: Any, parts: list[tuple[str, int]], *args: Any) -> list[Any]:
    """``fn`` of every row group on the workers, results in row-group order; a worker that
    dies or a file a worker cannot read is one line."""
    try:
        futures = [client.submit(fn, path, group, *args, pure=False) for path, group in parts]
        return list(client.gather(futures))
    except (OSError, TimeoutError) as e:
        raise JitterlabError(f"--cluster: a worker could not read the run ({e})") from None
    except Exception as e:  # KilledWorker, CommClosedError: dask's own types
        raise JitterlabError(
            f"--cluster: the analysis failed on the cluster ({type(e).__name__}: {e})"
        ) from None


def summarize_on_cluster(client: Any, path: Path) -> Summary:
    """:func:`jitterlab.store.writer.summarize_file` of ``path`` computed by the cluster's workers."""
    with pq.ParquetFile(path) as f:
        sizes = [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
    aligned = all(n % SQUARES_BLOCK == 0 for n in sizes[:-1])
    if not aligned or not sizes:  # an older file's row groups: the single-process path
        return summarize_chunks(lambda: latency_chunks(path))
    parts = [(str(path.resolve()), g) for g in range(len(sizes))]
    extents = _run(client, _extent_task, parts)
    live = [e for e in extents if e[0]]
    count = sum(e[0] for e in live)
    if count == 0:
        return summarize_chunks(lambda: iter(()))
    lowest, highest = min(e[1] for e in live), max(e[2] for e in live)
    mean = sum(e[3] for e in live) / count
    squares = 0.0
    for sums in _run(client, _squares_task, parts, mean):
        for block in sums:  # one after the other, as the single-process path adds them
            squares += block

    def refine(
        gather: set[Interval], widths: dict[Interval, int]
    ) -> tuple[dict[Interval, np.ndarray], dict[Interval, np.ndarray]]:
        shares = _run(client, _refine_task, parts, gather, widths)
        gathered = {ab: np.concatenate([s[0][ab] for s in shares]) for ab in gather}
        counts = {ab: np.sum([s[1][ab] for s in shares], axis=0) for ab in widths}
        return gathered, counts

    p = percentiles_by(refine, SUMMARY_PERCENTILES, (count, lowest, highest))
    return summary_of(count, lowest, highest, mean, squares, p)
