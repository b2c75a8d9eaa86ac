"""`jitterlab bench --runtime jvm`: the JVM harness (jvm/, Maven) over collectors and JDKs.

The jar is built with Maven on first use into a cache keyed by the sources' hash. One JVM
runs per collector, with unified logging of GC and safepoint pauses decorated with ``tn``
(the value of System.nanoTime(), i.e. CLOCK_MONOTONIC, the samples' clock), so every pause
can be placed on the latency timeline. A collector the chosen JDK lacks is reported and
skipped.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import PACKAGE_ROOT
from jitterlab.core.warnings import CodedWarning
from jitterlab.measure.jobs import NativeJob, native_point
from jitterlab.measure.policy import is_realtime, priority_for
from jitterlab.measure.runner import Point
from jitterlab.store.rawfile import RawSamples

TECHNIQUES = ("java-monitor", "java-lock", "disruptor", "java-vthread", "pekko")
WAIT_STRATEGIES = ("blocking", "yielding", "busy-spin")
DISPATCHERS = ("default", "throughput-1", "pinned", "affinity")
COLLECTORS: dict[str, list[str]] = {
    "serial": ["-XX:+UseSerialGC"],
    "parallel": ["-XX:+UseParallelGC"],
    "g1": ["-XX:+UseG1GC"],
    "zgc": ["-XX:+UseZGC"],
    "zgc-gen": ["-XX:+UseZGC", "-XX:+ZGenerational"],
    "shenandoah": ["-XX:+UseShenandoahGC"],
    "epsilon": ["-XX:+UnlockExperimentalVMOptions", "-XX:+UseEpsilonGC"],
}
JVM_ROOTS = (Path("/usr/lib/jvm"),)
GC_LOG = "gc.log"
MAX_EVENTS = 50_000


@dataclass(frozen=True)
class Jdk:
    home: Path
    feature: int
    version: str

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"


def _probe_jdk(home: Path) -> Jdk | None:
    java = home / "bin" / "java"
    if not java.is_file():
        return None
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False).stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?[^"]*"', out)
    if not m:
        return None
    feature = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    return Jdk(home.resolve(), feature, out.splitlines()[0] if out else "")


def find_jdks() -> list[Jdk]:
    """The JDKs installed under /usr/lib/jvm (one per real folder), newest first."""
    found: dict[Path, Jdk] = {}
    for root in JVM_ROOTS:
        for home in sorted(root.glob("*")) if root.is_dir() else []:
            jdk = _probe_jdk(home)
            if jdk:
                found.setdefault(jdk.home, jdk)
    return sorted(found.values(), key=lambda j: -j.feature)


def choose_jdk(spec: str) -> Jdk:
    if spec != "auto":
        jdk = _probe_jdk(Path(spec))
        if jdk is None:
            raise JitterlabError(f"--jdk {spec}: no bin/java there that answers -version")
        return jdk
    jdks = find_jdks()
    if not jdks:
        raise JitterlabError(
            "no JDK found under /usr/lib/jvm; install one (for example openjdk-17-jdk) or pass --jdk"
        )
    return jdks[0]


def collector_flags(jdk: Jdk, gc: str) -> tuple[list[str] | None, str]:
    """The JVM flags of a collector on ``jdk``, or (None, why) when that JDK lacks it."""
    if gc not in COLLECTORS:
        raise JitterlabError(f"--gc expects a comma list of {', '.join(COLLECTORS)}; got '{gc}'")
    flags = list(COLLECTORS[gc])
    if gc == "zgc-gen" and jdk.feature < 21:
        return None, f"generational ZGC needs JDK 21 or later (JDK {jdk.feature})"
    if gc == "zgc-gen" and jdk.feature >= 23:
        flags = ["-XX:+UseZGC"]  # generational is ZGC's only mode from JDK 23/24 on
    # from JDK 23 on ZGC is generational only and -XX:+UseZGC selects it: `zgc` means the
    # JDK's ZGC, whichever mode that is (zgc_generational() records which)
    check = subprocess.run([str(jdk.java), *flags, "-version"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        first = (check.stderr.strip().splitlines() or ["refused"])[0]
        return None, f"JDK {jdk.feature} refuses it: {first}"
    return flags, ""


def zgc_generational(jdk: Jdk, gc: str) -> bool | None:
    """Whether a ZGC run was generational (None for other collectors): zgc-gen always; zgc
    from JDK 23 on, where -XX:+UseZGC selects generational mode (JEP 474 made it the
    default and deprecated the other mode; JEP 490 removed that in JDK 24)."""
    if gc not in ("zgc", "zgc-gen"):
        return None
    return gc == "zgc-gen" or jdk.feature >= 23


def _sources_hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted([root / "pom.xml", *root.glob("src/main/**/*.java")]):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def jvm_sources() -> Path:
    """The Maven module: installed with the package, or the checkout's jvm/ folder."""
    for candidate in (PACKAGE_ROOT / "jvm", PACKAGE_ROOT.parents[1] / "jvm"):
        if (candidate / "pom.xml").is_file():
            return candidate
    raise JitterlabError("the JVM harness sources (jvm/pom.xml) are missing; reinstall jitterlab")


@lru_cache(maxsize=1)
def harness_jar() -> Path:
    """Build the harness jar with Maven once per source version; later calls reuse it."""
    sources = jvm_sources()
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "jitterlab"
        / f"jvm-{_sources_hash(sources)}"
    )
    jar = cache / "target" / "jitterlab-jvm.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JitterlabError(
            "the JVM harness needs Maven (mvn) to build once; install the Debian package maven"
        )
    build = cache.with_name(cache.name + ".build")
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(sources, build, ignore=shutil.ignore_patterns("target"))
    print("building the JVM harness with Maven (once)…", file=sys.stderr)
    done = subprocess.run(
        [mvn, "-q", "-B", "package", "-DskipTests"], cwd=build, capture_output=True, text=True
    )
    if done.returncode != 0:
        last = (done.stdout + done.stderr).strip().splitlines()[-5:]
        raise JitterlabError("building the JVM harness failed: " + " | ".join(last))
    shutil.rmtree(cache, ignore_errors=True)
    build.rename(cache)
    return jar


# ---------------------------------------------------------------- GC and safepoint log

_LINE = re.compile(r"^\[(\d+)ns\]\[(\w+)\s*\]\[([\w,+ ]+?)\s*\]\s(.*)$")
_GC_PAUSE = re.compile(r"^GC\((\d+)\) (Pause .*?) (\d+(?:\.\d+)?)ms$")
_SAFEPOINT = re.compile(r'^Safepoint "([^"]+)".*?Reaching safepoint: (\d+) ns.*?Total: (\d+) ns')


def parse_gc_log(text: str) -> list[dict[str, Any]]:
    """Pause events of a ``-Xlog:gc,safepoint:...:tn,level,tags`` log: each with start and
    end in CLOCK_MONOTONIC ns, kind (``gc-pause`` or ``safepoint``) and cause. The JVM
    logs a pause when it ends, so start = end − duration."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        end, tags, message = int(m.group(1)), m.group(3), m.group(4)
        if tags == "gc" and (g := _GC_PAUSE.match(message)):
            duration = round(float(g.group(3)) * 1e6)
            events.append(
                {
                    "kind": "gc-pause",
                    "start_ns": end - duration,
                    "end_ns": end,
                    "cause": g.group(2),
                    "gc_id": int(g.group(1)),
                }
            )
        elif tags == "safepoint" and (s := _SAFEPOINT.match(message)):
            total = int(s.group(3))
            events.append(
                {
                    "kind": "safepoint",
                    "start_ns": end - total,
                    "end_ns": end,
                    "cause": s.group(1),
                    "reaching_ns": int(s.group(2)),
                }
            )
        if len(events) >= MAX_EVENTS:
            break
    return events


def pause_summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("gc-pause", "safepoint"):
        d = np.array([e["end_ns"] - e["start_ns"] for e in events if e["kind"] == kind], dtype=np.float64)
        out[kind] = {
            "count": int(d.size),
            "max_ns": float(d.max()) if d.size else 0.0,
            "total_ns": float(d.sum()),
        }
    return out


# ---------------------------------------------------------------- running


@dataclass(frozen=True)
class JvmPlan:
    techniques: tuple[str, ...]
    collectors: tuple[str, ...]
    pairs: tuple[int, ...]
    policies: tuple[str, ...]
    priority: int
    samples: int
    warmup: int
    block_ints: int
    seed: int
    wait_strategies: tuple[str, ...] = ("blocking",)
    dispatchers: tuple[str, ...] = ("default",)
    jdk: str = "auto"
    heap: str = "1g"

    def variants(self, technique: str) -> tuple[str | None, ...]:
        """The settings a technique is run under: wait strategies for the Disruptor,
        dispatchers for Pekko, none for the others."""
        if technique == "disruptor":
            return self.wait_strategies
        if technique == "pekko":
            return self.dispatchers
        return (None,)


def jvm_points(plan: JvmPlan) -> tuple[list[Point], list[CodedWarning]]:
    """One JVM per technique × variant × collector × pairs × policy, and the warnings of
    planning them (a collector the JDK lacks is skipped). Checks the JDK and builds the
    harness jar now, before anything runs."""
    for technique in plan.techniques:
        if technique not in TECHNIQUES:
            raise JitterlabError(
                f"--technique for --runtime jvm expects {', '.join(TECHNIQUES)}; got '{technique}'"
            )
    jdk = choose_jdk(plan.jdk)
    if "java-vthread" in plan.techniques and jdk.feature < 21:
        raise JitterlabError(f"java-vthread needs JDK 21 or later; --jdk {jdk.home} is JDK {jdk.feature}")
    usable: list[tuple[str, list[str]]] = []
    warnings: list[CodedWarning] = []
    for gc in plan.collectors:
        flags, why = collector_flags(jdk, gc)
        if flags is None:
            warnings.append(CodedWarning("collector-skipped", f"collector {gc} skipped: {why}"))
        else:
            usable.append((gc, flags))
    jar = harness_jar()
    points = [
        native_point(_job(plan, jdk, jar, (technique, variant), (gc, flags), pairs, policy))
        for technique in plan.techniques
        for variant in plan.variants(technique)
        for gc, flags in usable
        for pairs in plan.pairs
        for policy in plan.policies
    ]
    return points, warnings


def _job(
    plan: JvmPlan,
    jdk: Jdk,
    jar: Path,
    technique_variant: tuple[str, str | None],
    collector: tuple[str, list[str]],
    pairs: int,
    policy: str,
) -> NativeJob:
    technique, variant = technique_variant
    gc, flags = collector
    config = {
        "runtime": "jvm",
        "technique": technique,
        "gc": gc,
        "jdk_feature": jdk.feature,
        "pairs": pairs,
        "samples": plan.samples,
        "warmup": plan.warmup,
        "block_ints": plan.block_ints,
        "policy": policy,
        "priority": priority_for(policy, plan.priority),
        "seed": plan.seed,
        "wait_strategy": variant if technique == "disruptor" else None,
        "dispatcher": variant if technique == "pekko" else None,
        "variant": variant,
        "heap": plan.heap,
    }
    args = ["--technique", technique, "--pairs", str(pairs), "--samples", str(plan.samples)]
    args += ["--warmup", str(plan.warmup), "--block-ints", str(plan.block_ints), "--seed", str(plan.seed)]
    if technique == "disruptor":
        args += ["--wait-strategy", str(variant)]
    if technique == "pekko":
        args += ["--dispatcher", str(variant)]
    name = f"{technique}/{variant}" if variant else technique
    return NativeJob(
        program="jitterlab-jvm",
        args=args,
        config=config,
        id_parts=(technique, *([variant] if variant else []), gc, f"p{pairs}", policy),
        label=f"{name} {gc} ×{pairs} {policy}",
        total=plan.samples,
        extra_meta=java_block,
        finish_meta=jvm_block(jdk, gc, flags),
        command=jvm_command(jdk, jar, plan.heap, flags, policy, plan.priority),
    )


def jvm_command(
    jdk: Jdk, jar: Path, heap: str, flags: list[str], policy: str, priority: int
) -> Callable[[Path], list[str]]:
    """staging folder -> the java command line: heap, collector flags, the GC and safepoint
    log on the samples' clock (``tn``: System.nanoTime), under chrt for fifo/rr."""

    def command(staging: Path) -> list[str]:
        prefix = ["chrt", f"--{policy}", str(priority)] if is_realtime(policy) else []
        log = f"-Xlog:gc,safepoint:file={staging / GC_LOG}:tn,level,tags"
        return [*prefix, str(jdk.java), f"-Xms{heap}", f"-Xmx{heap}", *flags, log, "-jar", str(jar)]

    return command


def jvm_block(
    jdk: Jdk, gc: str, flags: list[str]
) -> Callable[[RawSamples, dict[str, Any], Path], dict[str, Any]]:
    """A finish hook: the run's ``jvm`` block (JDK, collector, the pauses of its log)."""

    def finish(_raw: RawSamples, _meta: dict[str, Any], staging: Path) -> dict[str, Any]:
        log = staging / GC_LOG
        events = parse_gc_log(log.read_text(errors="replace")) if log.exists() else []
        return {
            "jvm": {
                "jdk": str(jdk.home),
                "jdk_feature": jdk.feature,
                "gc": gc,
                "gc_flags": flags,
                "zgc_generational": zgc_generational(jdk, gc),
                "gc_log": GC_LOG,
                "pauses": pause_summary(events),
                "pause_events": events,
            }
        }

    return finish


def java_block(harness: dict[str, Any]) -> dict[str, Any]:
    """The run's ``java`` block: what the JVM said about itself in harness.json."""
    return {"java": harness.get("java", {})}
