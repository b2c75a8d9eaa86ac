"""Runs the native harness over a matrix of techniques x pairs x policies and stores runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning
from jitterlab.measure.jobs import NativeJob, native_point
from jitterlab.measure.policy import id_label, is_realtime, policy_label, priority_for
from jitterlab.measure.runner import Point
from jitterlab.measure.techniques import native_techniques, technique_kind


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
            for pairs in (1,) if technique_kind(technique) == "floor" else self.pairs:
                for policy in self.policies:
                    out.append((technique, pairs, policy))
        return out


def resolve_techniques(requested: list[str]) -> tuple[list[str], list[CodedWarning]]:
    """Expand ``all`` and check names against the harness. Returns (techniques, warnings).

    ``all`` means every available technique except the c2c floor (which every run
    measures anyway); an explicitly requested but unavailable technique is an error.
    """
    offered = {t.name: t for t in native_techniques()}
    names: list[str] = []
    warnings: list[CodedWarning] = []
    for item in requested:
        if item == "all":
            for t in offered.values():
                if t.kind == "floor":  # every run measures the floor anyway
                    continue
                if t.available:
                    names.append(t.name)
                else:
                    warnings.append(
                        CodedWarning("technique-skipped", f"technique {t.name} skipped: {t.description}")
                    )
            continue
        if item not in offered:
            raise JitterlabError(f"unknown technique '{item}' (available: {', '.join(offered)})")
        if not offered[item].available:
            raise JitterlabError(f"technique '{item}' is unavailable: {offered[item].description}")
        names.append(item)
    return list(dict.fromkeys(names)), warnings


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
    if is_realtime(policy):
        args += ["--priority", str(priority_for(policy, plan.priority))]
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


def bench_job(plan: BenchPlan, technique: str, pairs: int, policy: str) -> NativeJob:
    """One configuration of the matrix as a job of the native harness."""
    label_policy = policy_label(policy, plan.priority)
    config = {
        "runtime": "native",
        "technique": technique,
        "pairs": pairs,
        "samples": plan.samples,
        "warmup": plan.warmup,
        "block_ints": plan.block_ints,
        "policy": policy,
        "priority": priority_for(policy, plan.priority),
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
    return NativeJob(
        program="jitterlab-bench",
        args=harness_args(plan, technique, pairs, policy),
        config=config,
        id_parts=(technique, f"p{pairs}", id_label(policy, plan.priority)),
        label=f"{technique} ×{pairs} {label_policy}",
        total=plan.samples * (1 if technique_kind(technique) == "floor" else pairs),
        spike_cpus=spike_cpus,
    )


def spike_cpus(meta: dict[str, Any]) -> dict[str, Any]:
    """How a spike's CPU is found: the receiver's, which only pinned runs know."""
    receivers = {p["pair"]: p["cpus"] for p in meta["obtained"]["placements"] if p["role"] == "receiver"}
    if not receivers or any(len(cpus) != 1 for cpus in receivers.values()):
        return {
            "spike_cpu": {
                "available": False,
                "reason": "receivers were not pinned to one CPU each (use --pin spread or a CPU list): "
                "a spike's CPU is unknown",
            }
        }
    cpu_of_pair = [-1] * (max(receivers) + 1)
    for pair, cpus in receivers.items():
        cpu_of_pair[pair] = cpus[0]
    return {"spike_cpu": {"available": True, "from": "receiver", "cpu_of_pair": cpu_of_pair}}


def bench_points(plan: BenchPlan) -> list[Point]:
    """Every point of the matrix, in order."""
    return [native_point(bench_job(plan, *point)) for point in plan.points()]
