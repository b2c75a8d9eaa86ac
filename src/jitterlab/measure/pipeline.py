"""`jitterlab bench --scenario pipeline`: the System Jitter Utility pipeline (seed 002).

A producer busy-spins between publications into one shared ring; an accumulator and a
journaller (which writes every transit latency to a journal file) consume every message.
Four series are stored as four runs: transit and inter-message time for each consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.measure import jvm
from jitterlab.measure.jobs import NativeJob, native_point, policy_args
from jitterlab.measure.policy import is_realtime
from jitterlab.measure.runner import Point

SERIES = (
    "accumulator-transit",
    "accumulator-inter-message",
    "journaller-transit",
    "journaller-inter-message",
)


@dataclass(frozen=True)
class PipelineOptions:
    messages: int = 500_000
    warmup: int = 1_000
    interval_ns: int = 10_000
    pin_producer: int = -1
    pin_accumulator: int = -1
    pin_journaller: int = -1
    policy: str = "other"
    priority: int = 0
    mlock: bool = True


def native_pipeline_job(o: PipelineOptions) -> NativeJob:
    """The native pipeline (native/tools/pipeline.cpp): four linked runs."""
    args = [
        "--samples",
        str(o.messages),
        "--warmup",
        str(o.warmup),
        "--interval-ns",
        str(o.interval_ns),
        "--pin-producer",
        str(o.pin_producer),
        "--pin-accumulator",
        str(o.pin_accumulator),
        "--pin-journaller",
        str(o.pin_journaller),
        *policy_args(o.policy, o.priority, o.mlock),
    ]
    config = {
        "runtime": "native",
        "technique": "pipeline",
        "pairs": 1,
        "samples": o.messages,
        "warmup": o.warmup,
        "interval_ns": o.interval_ns,
        "policy": o.policy,
        "priority": o.priority,
        "pin": {"producer": o.pin_producer, "accumulator": o.pin_accumulator, "journaller": o.pin_journaller},
        "mlock": o.mlock,
    }

    def extra(harness: dict[str, Any]) -> dict[str, Any]:
        keys = ("interval_ns", "journal_bytes", "journal_error", "series")
        return {"pipeline": {k: harness.get(k) for k in keys}}

    return NativeJob(
        program="jitterlab-pipeline",
        args=args,
        config=config,
        id_parts=("pipeline", o.policy),
        label="pipeline",
        total=o.messages,
        extra_meta=extra,
        series=SERIES,
    )


# Seed 002 runs with -XX:GuaranteedSafepointInterval=0 where the JDK allows: no safepoint
# every second just because one is due (a diagnostic flag, so it must be unlocked).
NO_GUARANTEED_SAFEPOINTS = ["-XX:+UnlockDiagnosticVMOptions", "-XX:GuaranteedSafepointInterval=0"]


def jvm_pipeline_job(
    o: PipelineOptions, jdk_spec: str = "auto", gc: str = "g1", heap: str = "1g"
) -> NativeJob:
    """The same pipeline on the JVM with the LMAX Disruptor (jvm/ PipelineBenchmark): four
    linked runs like the native one, with the JVM's GC and safepoint log on their clock."""
    if o.pin_producer >= 0 or o.pin_accumulator >= 0 or o.pin_journaller >= 0:
        raise JitterlabError(
            "--runtime jvm: the JVM pipeline's threads cannot be pinned one by one (taskset the JVM)"
        )
    jdk = jvm.choose_jdk(jdk_spec)
    flags, why = jvm.collector_flags(jdk, gc)
    if flags is None:
        raise JitterlabError(f"--gc {gc}: {why}")
    flags = [*flags, *NO_GUARANTEED_SAFEPOINTS]
    args = ["--technique", "pipeline", "--samples", str(o.messages), "--warmup", str(o.warmup)]
    args += ["--interval-ns", str(o.interval_ns)]
    config = {
        "runtime": "jvm",
        "technique": "pipeline",
        "gc": gc,
        "jdk_feature": jdk.feature,
        "pairs": 1,
        "samples": o.messages,
        "warmup": o.warmup,
        "interval_ns": o.interval_ns,
        "policy": o.policy,
        "priority": o.priority if is_realtime(o.policy) else 0,
        "heap": heap,
        "wait_strategy": "busy-spin",
        "safepoint_bias": "GuaranteedSafepointInterval=0",
    }

    def extra(harness: dict[str, Any]) -> dict[str, Any]:
        keys = ("interval_ns", "journal_bytes", "journal_error", "series")
        return jvm.java_block(harness) | {"pipeline": {k: harness.get(k) for k in keys}}

    return NativeJob(
        program="jitterlab-jvm",
        args=args,
        config=config,
        id_parts=("pipeline", "jvm", gc, o.policy),
        label=f"pipeline jvm {gc}",
        total=o.messages,
        extra_meta=extra,
        finish_meta=jvm.jvm_block(jdk, gc, flags),
        command=jvm.jvm_command(jdk, jvm.harness_jar(), heap, flags, o.policy, o.priority),
        series=SERIES,
    )


def pipeline_points(
    o: PipelineOptions, runtimes: tuple[str, ...], jdk_spec: str = "auto", gc: str = "g1", heap: str = "1g"
) -> list[Point]:
    """The pipeline on each runtime asked for (``native``, ``jvm``), side by side."""
    return [
        native_point(
            native_pipeline_job(o) if runtime == "native" else jvm_pipeline_job(o, jdk_spec, gc, heap)
        )
        for runtime in runtimes
    ]
