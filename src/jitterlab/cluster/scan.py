"""A pass over a samples file run by a Dask cluster's workers, one task per row group
(:class:`ClusterScan`, :func:`map_groups`): what :mod:`jitterlab.cluster.engine` (the
engine), :mod:`jitterlab.cluster.twopass` and :mod:`jitterlab.cluster.sample`
build on, so that none of them imports another in a circle. The workers read their row
group through :mod:`jitterlab.store.reader`. Dask itself is not imported here: the client
is handed in.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.stats.scan import Step, apply_steps
from jitterlab.store.reader import RECV, Filter, groups_meeting, read_row_group, row_group_count


class ClusterScan:
    """A :class:`~jitterlab.stats.scan.Scan` of a samples file whose passes run on a Dask
    cluster: one task per Parquet row group reads it on a worker, applies the scan's steps
    and the pass's function, and sends back only the function's result; the client folds
    the results in row-group order (the file order, as the single-process path reads it).
    ``where``: only the samples that filter keeps, each task reading its row group through
    the reader with it; a row group it cannot meet gets no task, and one whose chunk it
    empties gives no result (as the single-process reader yields no empty chunk)."""

    def __init__(
        self,
        client: Any,
        path: Path,
        timed: bool = False,
        since: str = "t_send_ns",
        steps: tuple[Step, ...] = (),
        groups: Sequence[int] | None = None,
        where: Filter | None = None,
    ) -> None:
        self.client = client
        self.path = str(Path(path).resolve())
        self.timed = timed
        self.since = since
        self.steps = steps
        self.where = where
        if groups is None:
            groups = range(row_group_count(path)) if where is None else groups_meeting(path, where)
        self.groups = groups

    def then(self, step: Any, *args: Any) -> ClusterScan:
        return ClusterScan(
            self.client,
            Path(self.path),
            self.timed,
            self.since,
            (*self.steps, (step, args)),
            self.groups,
            self.where,
        )

    def map(self, fn: Any, *args: Any) -> Iterator[Any]:
        """``fn`` of every row group on the workers, results in row-group order; a worker
        that dies, a file a worker cannot read or a scheduler that goes away is one line."""
        head = (self.timed, self.since, self.where, self.steps, fn)
        results = map_groups(self.client, self.path, self.groups, _scan_task, fn.__name__, head, args)
        return (r for r in results if not isinstance(r, Emptied))


class Emptied:
    """A task's answer when the filter left its row group no sample (no chunk, no result)."""


def map_groups(
    client: Any,
    path: str,
    groups: Sequence[int],
    task: Any,
    name: str,
    head: tuple[Any, ...],
    args: tuple[Any, ...],
) -> Iterator[Any]:
    """``task(path, group, *head, args)`` of every row group on the workers (task keys
    ``jitterlab-NAME-…``), results in row-group order; ``args`` travel to every worker once
    per pass. A worker that dies, a file a worker cannot read or a scheduler that goes away
    is one line."""
    futures: list[Any] = []
    try:
        # the pass's arguments (window intervals: arrays) travel once, not once per task
        [packed] = client.scatter([args], broadcast=True, hash=False)
        pass_id = uuid.uuid4().hex[:12]
        futures = [
            client.submit(task, path, group, *head, packed, key=f"jitterlab-{name}-{pass_id}-{group}")
            for group in groups
        ]
        for i in range(len(futures)):
            result = futures[i].result()
            futures[i] = None  # the worker may forget it
            yield result
    except JitterlabError:
        raise
    except (OSError, TimeoutError) as e:
        raise JitterlabError(f"--cluster: a worker could not read the run ({_cause(e)})") from None
    except Exception as e:  # KilledWorker, CommClosedError, CancelledError: dask's own types
        raise JitterlabError(f"--cluster: the analysis failed on the cluster ({_cause(e)})") from None
    finally:
        live = [f for f in futures if f is not None]
        if live:
            with contextlib.suppress(Exception):
                client.cancel(live)


def _scan_task(
    path: str,
    group: int,
    timed: bool,
    since: str,
    where: Filter | None,
    steps: tuple[Step, ...],
    fn: Any,
    args: tuple[Any, ...],
) -> Any:
    """On a worker: one row group's chunk (latencies, or send times and latencies; only
    those ``where`` keeps) through the scan's steps and the pass's function."""
    send, recv = read_row_group(Path(path), group, [since, RECV], where)
    if where is not None and send.size == 0:
        return Emptied()
    latency = recv - send
    return fn(apply_steps((send, latency) if timed else latency, steps), *args)


def _cause(e: BaseException) -> str:
    text = " ".join(str(e).split())  # one line
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__
