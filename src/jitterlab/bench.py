"""Runs the native harness over a matrix of techniques x pairs x policies and stores runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab import environment
from jitterlab.errors import JitterlabError
from jitterlab.native import native_techniques
from jitterlab.native_run import NativeJob, run_native_job
from jitterlab.stats import stacked_z_test
from jitterlab.store import ResultsStore, Run
from jitterlab.tracing import PerfTrace, attribution_block, tracing

POLICIES = ("other", "fifo", "rr", "deadline")
CAF_SCHEDULERS = ("stealing", "sharing", "detached")
DEFAULT_RT_PRIORITY = 90  # the seeds' SCHED_RR priority
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class BenchPlan:
    """What to run: the matrix and the settings shared by every point of it."""

    techniques: tuple[str, ...]
    pairs: tuple[int, ...] = (1,)
    policies: tuple[str, ...] = ("other",)
    samples: int = 1_000_000
    warmup: int = 1_000
    block_ints: int = 256 * 1024
    priority: int | None = None
    dl_runtime_ns: int = 0
    dl_deadline_ns: int = 0
    dl_period_ns: int = 0
    pin: str = "none"
    mlock: bool = True
    pause_ns: int = 0
    seed: int = 1
    caf_scheduler: str = "stealing"
    caf_threads: int = 0
    record: bool = True
    trace: bool = False

    def points(self) -> list[tuple[str, int, str]]:
        out = []
        for technique in self.techniques:
            for pairs in (1,) if technique == "c2c" else self.pairs:
                for policy in self.policies:
                    out.append((technique, pairs, policy))
        return out


@dataclass
class BenchOutcome:
    runs: list[Run]
    interrupted: bool
    failures: list[str]


def resolve_techniques(requested: list[str]) -> tuple[list[str], list[str]]:
    """Expand ``all`` and check names against the harness. Returns (techniques, warnings).

    ``all`` means every available technique except the c2c floor (which every run
    measures anyway); an explicitly requested but unavailable technique is an error.
    """
    offered = {t.name: t for t in native_techniques()}
    names: list[str] = []
    warnings: list[str] = []
    for item in requested:
        if item == "all":
            for t in offered.values():
                if t.name == "c2c":
                    continue
                if t.available:
                    names.append(t.name)
                else:
                    warnings.append(f"technique {t.name} skipped: {t.description}")
            continue
        if item not in offered:
            raise JitterlabError(f"unknown technique '{item}' (available: {', '.join(offered)})")
        if not offered[item].available:
            raise JitterlabError(f"technique '{item}' is unavailable: {offered[item].description}")
        names.append(item)
    return list(dict.fromkeys(names)), warnings


def single_cpu(text: str, flag: str) -> int:
    """A CPU number for a per-thread pin (-1: not pinned)."""
    try:
        cpu = int(text)
    except ValueError:
        raise JitterlabError(f"{flag}: '{text}' is not a CPU number (or -1)") from None
    if cpu < -1:
        raise JitterlabError(f"{flag}: '{text}' is not a CPU number (or -1)")
    return cpu


def validate_pin(pin: str) -> str:
    """Check a --pin value: none, spread, compact or a CPU list such as 0,1 or 0-3."""
    if pin in ("none", "spread", "compact"):
        return pin
    try:
        cpus = environment.parse_cpu_list(pin)
    except ValueError:
        cpus = []
    if not cpus or any(c < 0 for c in cpus):
        raise JitterlabError(f"--pin: '{pin}' is not none, spread, compact or a CPU list like 0,1 or 0-3")
    return pin


def harness_args(plan: BenchPlan, technique: str, pairs: int, policy: str) -> list[str]:
    """Arguments of jitterlab-bench for one point of the plan (the store adds --out)."""
    args = [
        "--technique",
        technique,
        "--pairs",
        str(pairs),
        "--samples",
        str(plan.samples),
        "--warmup",
        str(plan.warmup),
        "--block-ints",
        str(plan.block_ints),
        "--policy",
        policy,
        "--pin",
        plan.pin,
        "--pause-ns",
        str(plan.pause_ns),
        "--seed",
        str(plan.seed),
        "--caf-scheduler",
        plan.caf_scheduler,
    ]
    if policy in ("fifo", "rr"):
        args += ["--priority", str(plan.priority if plan.priority is not None else DEFAULT_RT_PRIORITY)]
    if policy == "deadline":
        args += ["--dl-runtime", str(plan.dl_runtime_ns), "--dl-deadline", str(plan.dl_deadline_ns)]
        args += ["--dl-period", str(plan.dl_period_ns)]
    if plan.caf_threads:
        args += ["--caf-threads", str(plan.caf_threads)]
    if not plan.mlock:
        args.append("--no-mlock")
    if not plan.record:
        args.append("--no-record")
    return args


def run_point(
    store: ResultsStore,
    plan: BenchPlan,
    technique: str,
    pairs: int,
    policy: str,
    warn: Callable[[str], None],
    extra_meta: dict[str, Any] | None = None,
    trace: PerfTrace | dict[str, Any] | None = None,
) -> tuple[Run | None, bool]:
    """Run one configuration and store it. Returns (run or None, interrupted)."""
    label_policy = (
        policy if policy not in ("fifo", "rr") else f"{policy}{plan.priority or DEFAULT_RT_PRIORITY}"
    )
    config = {
        "runtime": "native",
        "technique": technique,
        "pairs": pairs,
        "samples_per_pair": plan.samples,
        "warmup": plan.warmup,
        "block_ints": plan.block_ints,
        "policy": policy,
        "priority": (plan.priority or DEFAULT_RT_PRIORITY) if policy in ("fifo", "rr") else 0,
        "deadline_ns": {
            "runtime": plan.dl_runtime_ns,
            "deadline": plan.dl_deadline_ns,
            "period": plan.dl_period_ns,
        }
        if policy == "deadline"
        else None,
        "pin": plan.pin,
        "mlock": plan.mlock,
        "pause_ns": plan.pause_ns,
        "seed": plan.seed,
        "caf_scheduler": plan.caf_scheduler if technique == "caf" else None,
        "caf_threads": plan.caf_threads if technique == "caf" else None,
    }
    job = NativeJob(
        program="jitterlab-bench",
        args=harness_args(plan, technique, pairs, policy),
        config=config,
        id_parts=(technique, f"p{pairs}", label_policy),
        label=f"{technique} ×{pairs} {label_policy}",
        total=plan.samples * (1 if technique == "c2c" else pairs),
        meta=extra_meta or {},
        finish_meta=(lambda records, meta: spike_attribution(trace, records, meta))
        if trace is not None
        else None,
    )
    return run_native_job(store, job, warn)


def spike_attribution(
    trace: PerfTrace | dict[str, Any], records: np.ndarray, meta: dict[str, Any]
) -> dict[str, Any]:
    """Attribute the samples above the run's main cluster to traced events on the receiver's CPU.

    Only pinned runs know that CPU; otherwise the block says so.
    """
    receivers = {p["pair"]: p["cpus"] for p in meta["obtained"]["placements"] if p["role"] == "receiver"}
    if not receivers or any(len(cpus) != 1 for cpus in receivers.values()):
        if not isinstance(trace, dict):
            trace.stop()
        return {
            "attribution": {
                "available": False,
                "reason": "receivers were not pinned to one CPU each (use --pin "
                "spread or a CPU list): a spike's CPU is unknown",
            }
        }
    latency = records["t_recv_ns"] - records["t_send_ns"]
    cut = stacked_z_test(latency).thresholds
    spikes = latency > cut[0] if cut else np.zeros(latency.size, dtype=bool)
    cpu_of_pair = np.zeros(int(records["pair"].max(initial=0)) + 1, dtype=np.int64)
    for pair, cpus in receivers.items():
        cpu_of_pair[pair] = cpus[0]
    return attribution_block(
        trace,
        cpu_of_pair[records["pair"][spikes]],
        records["t_send_ns"][spikes],
        records["t_recv_ns"][spikes],
    )


def run_plan(
    plan: BenchPlan,
    store: ResultsStore,
    warn: Callable[[str], None] | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> BenchOutcome:
    """Run every point of the plan in order; stop at the first interruption."""
    seen: set[str] = set()

    def warn_once(message: str) -> None:
        if message not in seen:
            seen.add(message)
            (warn or (lambda m: print(f"warning: {m}", file=sys.stderr)))(message)

    outcome = BenchOutcome([], False, [])
    for technique, pairs, policy in plan.points():
        with tracing(plan.trace) as trace:
            run, interrupted = run_point(store, plan, technique, pairs, policy, warn_once, extra_meta, trace)
        if run is not None:
            outcome.runs.append(run)
        else:
            outcome.failures.append(f"{technique} ×{pairs} {policy}")
        if interrupted:
            outcome.interrupted = True
            break
    return outcome
