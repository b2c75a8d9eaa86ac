"""What ``bench`` and ``hiccup`` are asked to do, checked and turned into plans before any
work starts. The CLI hands the option strings over as a :class:`BenchRequest`; every check
of a policy, a priority, a list or a CPU happens here, once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jitterlab.core.errors import JitterlabError
from jitterlab.core.tidy import counted
from jitterlab.core.units import parse_duration_ns
from jitterlab.core.warnings import CodedWarning
from jitterlab.measure import jvm
from jitterlab.measure.bench import BenchPlan, bench_points, resolve_techniques
from jitterlab.measure.environment import parse_cpu_list
from jitterlab.measure.hiccup import HiccupOptions, hiccup_job
from jitterlab.measure.jobs import native_point
from jitterlab.measure.load import parse_load
from jitterlab.measure.pipeline import PipelineOptions, pipeline_points
from jitterlab.measure.policy import DEFAULT_RT_PRIORITY, POLICIES, THREAD_POLICIES, priority_for
from jitterlab.measure.runner import Plan, Point


def check_priority(priority: int | None) -> int | None:
    if priority is not None and not 1 <= priority <= 99:
        raise JitterlabError("--priority must be between 1 and 99")
    return priority


def comma_choices(text: str, choices: tuple[str, ...], flag: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    for item in items:
        if item not in choices:
            raise JitterlabError(f"{flag} expects a comma list of {', '.join(choices)}; got '{item}'")
    if not items:
        raise JitterlabError(f"{flag} is empty")
    return items


def int_list(text: str, low: int, high: int, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise JitterlabError(f"{what}: '{text}' is not a comma-separated list of integers") from None
    if not values or any(not low <= v <= high for v in values):
        raise JitterlabError(f"{what}: values must be between {low} and {high}, got '{text}'")
    return values


# Bytes one sample costs at its peak: the harness's buffer (16) and raw file (32), then the
# reader's records (32) and the Parquet table (24).
NATIVE_BYTES_PER_SAMPLE = 104


def available_memory_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (None where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(samples: int, bytes_per_sample: int, what: str) -> None:
    """Refuse a run whose samples cannot fit in memory before it starts (not after minutes)."""
    available = available_memory_bytes()
    need = samples * bytes_per_sample
    if available is not None and need > available:
        most = available // bytes_per_sample
        raise JitterlabError(
            f"{samples:,} samples need about {need / 2**30:.1f} GiB for {what}, but {available / 2**30:.1f} GiB "
            f"is available: at most {most:,} samples per run here (lower --samples or --pairs)"
        )


def existing_cpus() -> set[int]:
    return set(range(os.cpu_count() or 1))


def check_pin(pin: str, flag: str = "--pin") -> str:
    """none, spread, compact or a list of CPUs this machine has (0,1 or 0-3)."""
    if pin in ("none", "spread", "compact"):
        return pin
    try:
        cpus = parse_cpu_list(pin)
    except ValueError:
        cpus = []
    if not cpus or any(c < 0 for c in cpus):
        raise JitterlabError(f"{flag}: '{pin}' is not none, spread, compact or a CPU list like 0,1 or 0-3")
    missing = sorted(set(cpus) - existing_cpus())
    if missing:
        raise JitterlabError(f"{flag}: CPU {missing[0]} does not exist here (CPUs 0-{max(existing_cpus())})")
    return pin


def single_cpu(text: str, flag: str) -> int:
    """A CPU number for a per-thread pin (-1: not pinned)."""
    try:
        cpu = int(text)
    except ValueError:
        raise JitterlabError(f"{flag}: '{text}' is not a CPU number (or -1)") from None
    if cpu < -1:
        raise JitterlabError(f"{flag}: '{text}' is not a CPU number (or -1)")
    if cpu >= 0 and cpu not in existing_cpus():
        raise JitterlabError(f"{flag}: CPU {cpu} does not exist here (CPUs 0-{max(existing_cpus())})")
    return cpu


@dataclass(frozen=True)
class BenchRequest:
    """``jitterlab bench``'s options as given (strings where the user typed a list)."""

    technique: str = "all"
    runtime: str = "auto"
    pairs: str = "1"
    policy: str = "other"
    priority: int | None = None
    dl_runtime: str | None = None
    dl_deadline: str | None = None
    dl_period: str | None = None
    samples: int = 1_000_000
    warmup: int = 1_000
    block_ints: int = 256 * 1024
    pin: str = "none"
    no_mlock: bool = False
    pause: str = "0"
    seed: int = 1
    caf_scheduler: str = "stealing"
    caf_threads: int = 0
    trace: bool = False
    gc: str = "g1"
    jdk: str = "auto"
    wait_strategy: str = "blocking"
    dispatcher: str = "default"
    heap: str = "1g"
    interval: str = "10us"
    pin_producer: str = "-1"
    pin_accumulator: str = "-1"
    pin_journaller: str = "-1"
    scenario: str = "pairs"
    load: str | None = None


def split_techniques(r: BenchRequest) -> tuple[list[str], list[str]]:
    """(native, jvm) techniques of the request under its runtime."""
    requested = [t.strip() for t in r.technique.split(",") if t.strip()]
    if not requested:
        raise JitterlabError("no technique to run")
    if r.runtime == "both":
        raise JitterlabError(
            "--runtime both is for --scenario pipeline (the seed 002 pipeline on each runtime)"
        )
    if r.runtime == "jvm":
        if requested == ["all"]:
            return [], list(jvm.TECHNIQUES)
        wrong = [t for t in requested if t not in jvm.TECHNIQUES]
        if wrong:
            raise JitterlabError(f"--runtime jvm: '{wrong[0]}' is not one of {', '.join(jvm.TECHNIQUES)}")
        return [], requested
    on_jvm = [t for t in requested if t in jvm.TECHNIQUES]
    if on_jvm and r.runtime == "native":
        raise JitterlabError(
            f"--runtime native: '{on_jvm[0]}' is a JVM technique (use --runtime auto or jvm)"
        )
    return [t for t in requested if t not in jvm.TECHNIQUES], on_jvm


def native_plan(r: BenchRequest, requested: list[str]) -> tuple[BenchPlan, list[CodedWarning]]:
    """The native harness's plan and the warnings of resolving its techniques."""
    techniques, warnings = resolve_techniques(requested)
    if not techniques:
        raise JitterlabError("no technique to run")
    policies = comma_choices(r.policy, POLICIES, "--policy")
    check_priority(r.priority)
    dl = [parse_duration_ns(v, "ns") if v else 0 for v in (r.dl_runtime, r.dl_deadline, r.dl_period)]
    if "deadline" in policies and not (0 < dl[0] <= dl[1] <= dl[2]):
        raise JitterlabError("--policy deadline needs 0 < --dl-runtime <= --dl-deadline <= --dl-period")
    if r.samples < 1:
        raise JitterlabError("--samples must be at least 1")
    check_memory(
        r.samples * max(int_list(r.pairs, 1, 64, "--pairs")), NATIVE_BYTES_PER_SAMPLE, "the native harness"
    )
    plan = BenchPlan(
        techniques=tuple(techniques),
        pairs=int_list(r.pairs, 1, 64, "--pairs"),
        policies=policies,
        samples=r.samples,
        warmup=r.warmup,
        block_ints=r.block_ints,
        priority=r.priority,
        dl_runtime_ns=dl[0],
        dl_deadline_ns=dl[1],
        dl_period_ns=dl[2],
        pin=check_pin(r.pin),
        mlock=not r.no_mlock,
        pause_ns=parse_duration_ns(r.pause, "s"),
        seed=r.seed,
        caf_scheduler=r.caf_scheduler,
        caf_threads=r.caf_threads,
        trace=r.trace,
    )
    return plan, warnings


def jvm_plan(r: BenchRequest, techniques: list[str]) -> tuple[jvm.JvmPlan, list[CodedWarning]]:
    """The JVM harness's plan and the warnings about flags it ignores."""
    if techniques == list(jvm.TECHNIQUES) and r.technique == "all" and jvm.choose_jdk(r.jdk).feature < 21:
        techniques = [t for t in techniques if t != "java-vthread"]
    ignored = [
        flag
        for flag, unset in (
            ("--pin", r.pin == "none"),
            ("--pause", parse_duration_ns(r.pause, "s") == 0),
            ("--trace", not r.trace),
            ("--no-mlock", not r.no_mlock),
            ("--caf-scheduler", r.caf_scheduler == "stealing"),
        )
        if not unset
    ]
    warnings = (
        [CodedWarning("options-ignored", f"the JVM harness ignores {', '.join(ignored)}")] if ignored else []
    )
    policies = comma_choices(r.policy, THREAD_POLICIES, "--policy for JVM techniques")
    check_priority(r.priority)
    plan = jvm.JvmPlan(
        techniques=tuple(techniques),
        collectors=comma_choices(r.gc, tuple(jvm.COLLECTORS), "--gc"),
        pairs=int_list(r.pairs, 1, 64, "--pairs"),
        policies=policies,
        priority=r.priority or DEFAULT_RT_PRIORITY,
        samples=r.samples,
        warmup=r.warmup,
        block_ints=r.block_ints,
        seed=r.seed,
        wait_strategies=comma_choices(r.wait_strategy, jvm.WAIT_STRATEGIES, "--wait-strategy"),
        dispatchers=comma_choices(r.dispatcher, jvm.DISPATCHERS, "--dispatcher"),
        jdk=r.jdk,
        heap=r.heap,
    )
    return plan, warnings


def single_policy(policy: str, priority: int | None, flag: str = "--policy") -> tuple[str, int]:
    """One policy of other, fifo or rr for a single tool, with the priority it runs at."""
    if policy not in THREAD_POLICIES:
        raise JitterlabError(f"{flag} expects other, fifo or rr")
    return policy, priority_for(policy, check_priority(priority))


def pipeline_options(r: BenchRequest) -> PipelineOptions:
    policy, priority = single_policy(r.policy, r.priority, "--scenario pipeline: --policy")
    return PipelineOptions(
        messages=r.samples,
        warmup=r.warmup,
        interval_ns=parse_duration_ns(r.interval, "ns"),
        pin_producer=single_cpu(r.pin_producer, "--pin-producer"),
        pin_accumulator=single_cpu(r.pin_accumulator, "--pin-accumulator"),
        pin_journaller=single_cpu(r.pin_journaller, "--pin-journaller"),
        policy=policy,
        priority=priority,
        mlock=not r.no_mlock,
    )


RUNTIMES = {"auto": ("native",), "native": ("native",), "jvm": ("jvm",), "both": ("native", "jvm")}


def pipeline_plan(r: BenchRequest) -> Plan:
    """``bench --scenario pipeline``: seed 002's pipeline on each runtime asked for."""
    options = pipeline_options(r)
    runtimes = RUNTIMES[r.runtime]
    gcs = [g.strip() for g in r.gc.split(",") if g.strip()]
    if "jvm" in runtimes and len(gcs) != 1:
        raise JitterlabError("--scenario pipeline --runtime jvm takes one --gc")
    points = pipeline_points(options, runtimes, r.jdk, gcs[0] if gcs else "g1", r.heap)
    return Plan("pipeline", points, load=parse_load(r.load))


def bench_plan(r: BenchRequest) -> Plan:
    """``jitterlab bench``: the native matrix, then the JVM's (or the pipeline scenario),
    checked before anything runs."""
    if r.scenario == "pipeline":
        return pipeline_plan(r)
    native_techniques, jvm_techniques = split_techniques(r)
    points: list[Point] = []
    warnings: list[CodedWarning] = []
    if native_techniques:
        plan, planned = native_plan(r, native_techniques)
        points += bench_points(plan)
        warnings += planned
    if jvm_techniques:
        plan_jvm, planned = jvm_plan(r, jvm_techniques)
        jvm_points, skipped = jvm.jvm_points(plan_jvm)
        points += jvm_points
        warnings += planned + skipped
    about = f"{counted(len(points), 'run')}, {counted(r.samples, 'sample')} per pair"
    return Plan("bench", points, tuple(warnings), load=parse_load(r.load), trace=r.trace, about=about)


@dataclass(frozen=True)
class HiccupRequest:
    """``jitterlab hiccup``'s options as given."""

    duration: str = "10s"
    cpus: str = "all"
    threshold: str = "auto"
    auto_multiple: int = 10
    policy: str = "other"
    priority: int = 0
    no_mlock: bool = False
    load: str | None = None
    trace: bool = False


def hiccup_plan(r: HiccupRequest) -> Plan:
    """``jitterlab hiccup``: one run of the OS-noise meter."""
    duration = parse_duration_ns(r.duration, "s")
    if duration < 1_000_000:
        raise JitterlabError("--duration must be at least 1ms")
    if r.cpus != "all":
        check_pin(r.cpus, "--cpus")
    threshold = 0 if r.threshold == "auto" else parse_duration_ns(r.threshold, "ns")
    policy, priority = single_policy(r.policy, r.priority or None)
    options = HiccupOptions(duration, r.cpus, threshold, r.auto_multiple, policy, priority, not r.no_mlock)
    return Plan("hiccup", [native_point(hiccup_job(options))], load=parse_load(r.load), trace=r.trace)
