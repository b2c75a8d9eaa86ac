"""Runs the native harness over a matrix of techniques x pairs x policies and stores runs."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitterlab import environment
from jitterlab._version import __version__, build_info
from jitterlab.errors import JitterlabError
from jitterlab.native import native_program, native_techniques
from jitterlab.progress import ProgressBar
from jitterlab.rawfile import read_raw_samples
from jitterlab.store import ResultsStore, Run

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


def harness_argv(plan: BenchPlan, technique: str, pairs: int, policy: str, out_dir: Path) -> list[str]:
    argv = [
        str(native_program("jitterlab-bench")),
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
        "--out",
        str(out_dir),
    ]
    if policy in ("fifo", "rr"):
        argv += ["--priority", str(plan.priority if plan.priority is not None else DEFAULT_RT_PRIORITY)]
    if policy == "deadline":
        argv += ["--dl-runtime", str(plan.dl_runtime_ns), "--dl-deadline", str(plan.dl_deadline_ns)]
        argv += ["--dl-period", str(plan.dl_period_ns)]
    if plan.caf_threads:
        argv += ["--caf-threads", str(plan.caf_threads)]
    if not plan.mlock:
        argv.append("--no-mlock")
    if not plan.record:
        argv.append("--no-record")
    return argv


def _run_harness(argv: list[str], progress: ProgressBar) -> tuple[int, str, bool]:
    """Run the harness, feeding the progress bar. Returns (exit code, stderr, interrupted)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    interrupted = False
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for line in proc.stdout:
            if line.startswith("progress "):
                progress.update(int(line.split()[1]))
    except KeyboardInterrupt:
        interrupted = True
        proc.send_signal(signal.SIGINT)  # it may not share our terminal's process group
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
    progress.close()
    return proc.returncode, proc.stderr.read(), interrupted


def _obtained(harness: dict[str, Any]) -> dict[str, Any]:
    placements = harness.get("placements", [])
    return {
        "policies": sorted({p["policy"] for p in placements}),
        "placements": placements,
        "spin_mode": harness.get("spin_mode"),
        "spin_fallback_reason": harness.get("spin_fallback_reason", ""),
        "mlock": harness.get("mlock"),
        "warnings": harness.get("warnings", []),
    }


def run_point(
    store: ResultsStore, plan: BenchPlan, technique: str, pairs: int, policy: str, warn: Callable[[str], None]
) -> tuple[Run | None, bool]:
    """Run one configuration and store it. Returns (run or None, interrupted)."""
    label_policy = (
        policy if policy not in ("fifo", "rr") else f"{policy}{plan.priority or DEFAULT_RT_PRIORITY}"
    )
    run_id = store.new_run_id(technique, f"p{pairs}", label_policy)
    staging = store.staging_dir(run_id)
    argv = harness_argv(plan, technique, pairs, policy, staging)
    total = plan.samples * (1 if technique == "c2c" else pairs)
    started = dt.datetime.now(dt.timezone.utc)
    code, stderr, interrupted = _run_harness(argv, ProgressBar(f"{technique} ×{pairs} {label_policy}", total))
    raw_path = staging / "samples.jlraw"
    if not raw_path.exists() and (staging / "samples.jlraw.tmp").exists():
        raw_path = staging / "samples.jlraw.tmp"  # the harness died before its footer
    harness_json = staging / "harness.json"
    if not raw_path.exists():
        store.discard_staging(staging)
        last = (stderr.strip().splitlines() or [f"exit code {code}"])[-1]
        if code == 2:
            raise JitterlabError(last.removeprefix("jitterlab-bench: error: "))
        if interrupted:
            return None, True
        warn(f"{technique} ×{pairs} {policy}: harness failed before writing samples: {last}")
        return None, interrupted
    raw = read_raw_samples(raw_path)
    harness: dict[str, Any] = json.loads(harness_json.read_text()) if harness_json.exists() else {}
    for w in harness.get("warnings", []):
        warn(w)
    reasons = [r for r in (harness.get("partial_reason"), raw.note) if r]
    if not harness:
        reasons.append("harness.json missing (harness died)")
    if interrupted and not reasons:
        reasons.append("interrupted")
    partial = raw.partial or bool(reasons) or harness.get("status") == "partial"
    info = build_info()
    meta: dict[str, Any] = {
        "schema_version": 1,
        "kind": "run",
        "id": run_id,
        "created_utc": started.isoformat(timespec="milliseconds"),
        "status": "partial" if partial else "complete",
        "partial_reason": "; ".join(reasons),
        "config": {
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
        },
        "obtained": _obtained(harness),
        "environment": environment.collect(),
        "tool": {
            "name": "jitterlab",
            "version": __version__,
            "git_commit": info.get("git_commit"),
            "compiler": info.get("compiler"),
        },
        "floor": harness.get("floor", {}),
        "timing": {
            "started_realtime_ns": harness.get("started_realtime_ns"),
            "t_start_ns": harness.get("t_start_ns"),
            "t_end_ns": harness.get("t_end_ns"),
        },
        "harness": {
            "program": "jitterlab-bench",
            "argv": argv[1:],
            "exit_code": code,
            "version": harness.get("harness_version"),
        },
    }
    raw_path.unlink()
    harness_json.unlink(missing_ok=True)
    run = store.commit(staging, raw, meta)
    return run, interrupted


def run_plan(plan: BenchPlan, store: ResultsStore, warn: Callable[[str], None] | None = None) -> BenchOutcome:
    """Run every point of the plan in order; stop at the first interruption."""
    seen: set[str] = set()

    def warn_once(message: str) -> None:
        if message not in seen:
            seen.add(message)
            (warn or (lambda m: print(f"warning: {m}", file=sys.stderr)))(message)

    outcome = BenchOutcome([], False, [])
    for technique, pairs, policy in plan.points():
        run, interrupted = run_point(store, plan, technique, pairs, policy, warn_once)
        if run is not None:
            outcome.runs.append(run)
        else:
            outcome.failures.append(f"{technique} ×{pairs} {policy}")
        if interrupted:
            outcome.interrupted = True
            break
    return outcome
