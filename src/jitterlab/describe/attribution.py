"""Spike causes: each spike of a run attributed to the kernel events traced on its CPU
inside its time span (``jitterlab hiccup --trace``, ``bench --trace`` with pinned receivers).

The events are stored with the run, so attribution follows the outlier test the reader
chose: a spike is a sample above the main cluster (the first threshold) of that test, or,
for hiccup runs, every recorded gap. A spike with no event on its CPU is reported as
"no guest event (host or hypervisor)" in a virtual machine — the guest cannot see the host
preempting its vCPU — or "no traced event" on bare metal: never guessed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from jitterlab.stats import StackedResult
from jitterlab.store import Run
from jitterlab.store.reader import Span, pair_send_recv_chunks
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.trace import TRACE_FILE, TraceEvents, read_trace_events

Spikes = tuple[np.ndarray, np.ndarray, np.ndarray]  # cpu, start, end of each spike


def attribute(
    events: TraceEvents, cpus: np.ndarray, starts: np.ndarray, ends: np.ndarray, in_vm: bool
) -> dict[str, Any]:
    """Causes of each spike (cpu, [start, end]) and their totals."""
    return attribute_chunks(events, [(cpus, starts, ends)], in_vm)


def attribute_chunks(events: TraceEvents, chunks: Iterable[Spikes], in_vm: bool) -> dict[str, Any]:
    """:func:`attribute` of spikes that come chunk by chunk (a run read in row groups)."""
    nothing = "no guest event (host or hypervisor)" if in_vm else "no traced event"
    gaps: Counter[str] = Counter()
    time_ns: Counter[str] = Counter()
    attributed = 0
    total = 0
    for cpus, starts, ends in chunks:
        total += int(cpus.size)
        for cpu, start, end in zip(cpus.tolist(), starts.tolist(), ends.tolist(), strict=True):
            t = events.times.get(cpu)
            found: set[str] = set()
            if t is not None:
                lo, hi = np.searchsorted(t, start, "left"), np.searchsorted(t, end, "right")
                found = set(events.causes[cpu][lo:hi])
            attributed += bool(found)
            for cause in found or {nothing}:
                gaps[cause] += 1
                time_ns[cause] += end - start
    causes = [
        {"cause": c, "spikes": n, "share": n / max(total, 1), "time_ns": int(time_ns[c])}
        for c, n in gaps.most_common(25)
    ]
    return {"spikes": total, "attributed": attributed, "causes": causes}


def spike_attribution(
    run: Run, categories: StackedResult | None = None, span: Span | None = None
) -> dict[str, Any] | None:
    """The attribution block of a traced run (None when the run was not traced), its
    samples read in row groups unless the run is in memory (only the spikes' cpu and
    times are kept, chunk by chunk); ``span``: of the samples sent in it only.

    ``categories``: the outlier test's result for this run; samples above its first
    threshold are the spikes (ignored for runs whose every sample is a spike, like hiccup).
    The block has ``available`` and, when False, a ``reason``.
    """
    trace = run.meta.get("trace")
    if trace is None:
        return run.meta.get("attribution")  # runs stored before the events were kept
    if not trace.get("available"):
        return {"available": False, "reason": trace.get("reason")}
    where = trace.get("spike_cpu") or {}
    if not where.get("available"):
        return {"available": False, "reason": where.get("reason")}
    everything = trace.get("spikes") == "all"
    cut = categories.thresholds if categories is not None else ()
    cpu_of_pair = None if where.get("from") == "pair" else np.asarray(where["cpu_of_pair"], dtype=np.int64)

    def spikes() -> Iterator[Spikes]:
        for pair, send, recv in _columns(run, span):
            keep = (
                np.ones(send.size, dtype=bool)
                if everything
                else (recv - send > cut[0] if cut else np.zeros(send.size, dtype=bool))
            )
            pair = pair[keep].astype(np.int64)
            yield pair if cpu_of_pair is None else cpu_of_pair[pair], send[keep], recv[keep]

    events = read_trace_events(run.path / str(trace.get("file", TRACE_FILE)), trace.get("events", {}))
    result = attribute_chunks(events, spikes(), bool(trace.get("in_vm")))
    return {
        "available": True,
        "tool": trace.get("tool"),
        "tracepoints": trace.get("tracepoints"),
        "events": trace.get("events"),
        **result,
    }


def _columns(run: Run, span: Span | None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(pair, t_send_ns, t_recv_ns) of the run: its columns when it is in memory, else its
    file batch by batch (memory independent of the run's size), of the span when given."""
    if run.loaded:
        yield run.pair, run.t_send_ns, run.t_recv_ns
        return
    yield from pair_send_recv_chunks(verified_samples_path(run), where=span)
