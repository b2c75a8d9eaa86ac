"""A sample read in chunks, pass by pass, wherever the chunks are read.

The out-of-core statistics (:mod:`jitterlab.stats.summary`, :mod:`jitterlab.stats.outofcore`)
are written as passes: each pass applies one pure function to every chunk and folds the
small results in the caller. A :class:`Scan` runs such a pass. :class:`LocalScan` reads the
chunks in this process; ``jitterlab.cluster.scan.ClusterScan`` has a Dask cluster's workers
read them (one Parquet row group per task) and sends back only the per-chunk results.

A chunk is a one-dimensional integer array of latencies, or for a timed scan a pair
``(t_send_ns, latency_ns)`` of equal-length arrays. The functions given to :meth:`Scan.map`
and :meth:`Scan.then` must be module-level functions (they travel to other processes by
name) whose results do not depend on how the sample is cut into chunks once folded: every
fold in jitterlab's statistics is an integer sum, a minimum, a maximum or a concatenation
that is sorted after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

Step = tuple[Callable[..., Any], tuple[Any, ...]]


class Scan(Protocol):
    """One pass at a time over a sample's chunks, in the chunks' order."""

    def map(self, fn: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """``fn(chunk, *args)`` of every chunk (after the steps of :meth:`then`), in order."""
        ...

    def then(self, step: Callable[..., Any], *args: Any) -> Scan:
        """The scan of ``step(chunk, *args)`` of every chunk: a filter or a transform."""
        ...


def apply_steps(chunk: Any, steps: tuple[Step, ...]) -> Any:
    """``chunk`` through every step, in order."""
    for step, args in steps:
        chunk = step(chunk, *args)
    return chunk


class LocalScan:
    """A :class:`Scan` over chunks read in this process: each call of ``chunks`` reads the
    sample again, in the same order."""

    def __init__(self, chunks: Callable[[], Iterable[Any]], steps: tuple[Step, ...] = ()) -> None:
        self.chunks = chunks
        self.steps = steps

    def map(self, fn: Callable[..., Any], *args: Any) -> Iterator[Any]:
        for chunk in self.chunks():
            yield fn(apply_steps(chunk, self.steps), *args)

    def then(self, step: Callable[..., Any], *args: Any) -> LocalScan:
        return LocalScan(self.chunks, (*self.steps, (step, args)))


def identity(chunk: Any) -> Any:
    """The chunk itself (a pass that gathers the values)."""
    return chunk


def latency_of(chunk: tuple[Any, Any]) -> Any:
    """The latencies of a timed chunk (a step: a timed scan read as a latency scan)."""
    return chunk[1]
