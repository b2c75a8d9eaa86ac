"""Spike causes: scheduler and IRQ tracepoints recorded with perf during a run.

With ``--trace``, ``perf record -k CLOCK_MONOTONIC`` records context switches,
migrations, hard and soft IRQs and frequency changes on every CPU while the tool runs.
The events are stored with the run (:mod:`jitterlab.store.trace`); the describe room
attributes each spike to the events on its CPU inside its time span
(:mod:`jitterlab.describe.attribution`). Where perf is missing or not permitted, that is
detected and recorded; nothing is made up.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.measure.environment import read_text, virtualization
from jitterlab.store.trace import TRACE_FILE, TraceEvents, write_trace_events

TRACEPOINTS = (
    "sched:sched_switch",
    "sched:sched_migrate_task",
    "irq:irq_handler_entry",
    "irq:softirq_entry",
    "power:cpu_frequency",
)
# x86 interrupt vectors (timer tick, IPIs) are not irq_handler_entry events; used where the kernel has them
OPTIONAL_TRACEPOINTS = (
    "irq_vectors:local_timer_entry",
    "irq_vectors:reschedule_entry",
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_single_entry",
)
OWN_COMM = "jitterlab-"  # our measuring threads; the kernel truncates comm to 15 characters
_LINE = re.compile(
    r"^\s*(?P<comm>.+?)\s+\d+/\d+\s+\[(?P<cpu>\d+)\]\s+(?P<s>\d+)\.(?P<ns>\d{9}):\s+(?P<event>[\w:]+):\s*(?P<trace>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S+)")


def tracing_status() -> tuple[bool, str]:
    """Whether perf may record tracepoints system-wide here, and if not, why."""
    if shutil.which("perf") is None:
        return False, "perf is not installed (Debian package linux-perf)"
    paranoid = read_text(Path("/"), "/proc/sys/kernel/perf_event_paranoid")
    if os.geteuid() != 0 and (paranoid is None or int(paranoid) > -1):
        return False, f"not root and kernel.perf_event_paranoid is {paranoid} (needs -1)"
    return True, ""


def _short(comm: str) -> str:
    """kworker/1:1 -> kworker, migration/0 -> migration: group per-CPU kernel threads."""
    return comm.split("/", 1)[0]


def cause_of(event: str, trace: str) -> str | None:
    """What a tracepoint says about a spike on its CPU (None: not a cause)."""
    fields = dict(_FIELD.findall(trace))
    if event == "irq:irq_handler_entry":
        return f"irq {fields.get('name', fields.get('irq', '?'))}"
    if event == "irq:softirq_entry":
        action = re.search(r"action=(\w+)", trace)
        return f"softirq {action.group(1) if action else fields.get('vec', '?')}"
    if event == "sched:sched_switch":
        if fields.get("prev_comm", "").startswith(OWN_COMM) and not fields.get("next_comm", "").startswith(
            OWN_COMM
        ):
            return f"task {_short(fields.get('next_comm', '?'))}"
        return None
    if event == "sched:sched_migrate_task":
        return "migration" if fields.get("comm", "").startswith(OWN_COMM) else None
    if event == "power:cpu_frequency":
        return "frequency change"
    if event.startswith("irq_vectors:"):
        vector = event.split(":", 1)[1].removesuffix("_entry")
        return {"local_timer": "timer tick", "reschedule": "IPI reschedule"}.get(vector, f"IPI {vector}")
    return None


def parse_perf_script(text: str) -> TraceEvents:
    per_cpu: dict[int, list[tuple[int, str]]] = {}
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        counts[m["event"]] += 1
        cause = cause_of(m["event"], m["trace"])
        if cause is not None:
            per_cpu.setdefault(int(m["cpu"]), []).append((int(m["s"]) * 1_000_000_000 + int(m["ns"]), cause))
    times, causes = {}, {}
    for cpu, items in per_cpu.items():
        items.sort()
        times[cpu] = np.array([t for t, _ in items], dtype=np.int64)
        causes[cpu] = [c for _, c in items]
    return TraceEvents(times, causes, dict(counts))


def available_tracepoints(names: tuple[str, ...]) -> list[str]:
    """The subset of ``names`` this kernel has (from tracefs, where perf reads them too)."""
    bases = [Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events")]
    return [n for n in names if any((base / n.replace(":", "/")).is_dir() for base in bases)]


class PerfTrace:
    """A running ``perf record`` of the tracepoints, system-wide."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="jitterlab-trace-")
        self.data = Path(self.dir.name) / "perf.data"
        args = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-a", "-o", str(self.data)]
        self.tracepoints = [*TRACEPOINTS, *available_tracepoints(OPTIONAL_TRACEPOINTS)]
        for tp in self.tracepoints:
            args += ["-e", tp]
        # perf's messages go to a file: a pipe nobody reads while it records could fill and stall it
        self.log = Path(self.dir.name) / "perf.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        time.sleep(0.5)  # perf sets up its buffers before the measurement starts
        self.error = ""
        if self.proc.poll() is not None:
            message = self.log.read_text(errors="replace").strip()
            self.error = (
                message.splitlines()[-1] if message else f"perf record exited with {self.proc.returncode}"
            )

    def stop(self) -> TraceEvents | None:
        """Stop recording and read the events (None when perf failed)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.error or not self.data.exists():
            self.error = self.error or "perf wrote no data"
            return None
        out = subprocess.run(
            ["perf", "script", "--ns", "-i", str(self.data), "-F", "comm,pid,tid,cpu,time,event,trace"],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            self.error = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "perf script failed"
            return None
        return parse_perf_script(out.stdout)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.dir.cleanup()


@contextmanager
def tracing(enabled: bool) -> Iterator[PerfTrace | dict[str, Any] | None]:
    """Yields a running PerfTrace, a metadata block saying why tracing is unavailable,
    or None when tracing was not asked for."""
    if not enabled:
        yield None
        return
    ok, reason = tracing_status()
    if not ok:
        yield {"available": False, "reason": reason}
        return
    trace = PerfTrace()
    try:
        yield trace if not trace.error else {"available": False, "reason": trace.error}
    finally:
        trace.close()


def trace_block(
    trace: PerfTrace | dict[str, Any] | None, staging: Path, spike_cpus: dict[str, Any]
) -> dict[str, Any]:
    """Stop ``trace`` and keep its events with the run: the run.json ``trace`` block, the
    events in ``staging``/trace-events.parquet. ``spike_cpus`` says how a spike's CPU is
    found when the run is described (``{"from": "pair"}``: the pair column is the CPU;
    ``{"from": "receiver", "cpu_of_pair": [...]}``; or ``{"available": False, "reason": …}``)."""
    if trace is None:
        return {}
    if isinstance(trace, dict):
        return {"trace": trace}
    events = trace.stop()
    if events is None:
        return {"trace": {"available": False, "reason": trace.error}}
    write_trace_events(staging / TRACE_FILE, events)
    return {
        "trace": {
            "available": True,
            "tool": "perf",
            "tracepoints": trace.tracepoints,
            "events": events.counts,
            "file": TRACE_FILE,
            "in_vm": virtualization(Path("/")) is not None,
            **spike_cpus,
        }
    }
