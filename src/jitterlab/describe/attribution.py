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
from typing import Any

import numpy as np

from jitterlab.stats import StackedResult
from jitterlab.store import Run
from jitterlab.store.trace import TRACE_FILE, TraceEvents, read_trace_events


def attribute(
    events: TraceEvents, cpus: np.ndarray, starts: np.ndarray, ends: np.ndarray, in_vm: bool
) -> dict[str, Any]:
    """Causes of each spike (cpu, [start, end]) and their totals."""
    nothing = "no guest event (host or hypervisor)" if in_vm else "no traced event"
    gaps: Counter[str] = Counter()
    time_ns: Counter[str] = Counter()
    attributed = 0
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
    total = int(cpus.size)
    causes = [
        {"cause": c, "spikes": n, "share": n / max(total, 1), "time_ns": int(time_ns[c])}
        for c, n in gaps.most_common(25)
    ]
    return {"spikes": total, "attributed": attributed, "causes": causes}


def spike_attribution(run: Run, categories: StackedResult | None = None) -> dict[str, Any] | None:
    """The attribution block of a traced run (None when the run was not traced).

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
    latency = run.latency_ns
    if trace.get("spikes") == "all":
        spikes = np.ones(latency.size, dtype=bool)
    else:
        cut = categories.thresholds if categories is not None else ()
        spikes = latency > cut[0] if cut else np.zeros(latency.size, dtype=bool)
    pair = run.pair[spikes]
    if where.get("from") == "pair":
        cpus = pair.astype(np.int64)
    else:
        cpus = np.asarray(where["cpu_of_pair"], dtype=np.int64)[pair]
    events = read_trace_events(run.path / str(trace.get("file", TRACE_FILE)), trace.get("events", {}))
    result = attribute(events, cpus, run.t_send_ns[spikes], run.t_recv_ns[spikes], bool(trace.get("in_vm")))
    return {
        "available": True,
        "tool": trace.get("tool"),
        "tracepoints": trace.get("tracepoints"),
        "events": trace.get("events"),
        **result,
    }
