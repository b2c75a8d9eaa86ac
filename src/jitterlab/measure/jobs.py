"""Runs a native tool into a staging folder and stores what it wrote as a run.

Every native program (bench, hiccup, pipeline) writes the same two files: the raw sample
file and harness.json. This module runs one, shows its progress, forwards Ctrl-C, and
turns the output into a stored run with the common metadata (environment, doctor facts,
tool version, floor, timing, load), salvaging what a dying program left behind.
"""

from __future__ import annotations

import copy
import ctypes
import datetime as dt
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.faults import kill_point
from jitterlab.core.programs import native_program
from jitterlab.core.progress import ProgressBar
from jitterlab.core.signals import last_signal
from jitterlab.core.warnings import Warn, from_stored, normalized
from jitterlab.measure import environment
from jitterlab.measure.doctor import doctor_facts
from jitterlab.measure.policy import is_realtime
from jitterlab.measure.runner import Context, Done, Point
from jitterlab.measure.tracing import trace_block
from jitterlab.store import ResultsStore, Run, recovery
from jitterlab.store.fsops import staging_fd, work_path
from jitterlab.store.rawfile import RECORD_DTYPE, RawSamples, read_raw_samples
from jitterlab.store.recovery import drop_metadata
from jitterlab.store.schema import SAMPLES_FILE, read_harness_json, run_meta
from jitterlab.store.writer import SampleWriter

PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass
class NativeJob:
    """One invocation of a native tool and what to record about it."""

    program: str
    args: list[str]
    config: dict[str, Any]
    id_parts: tuple[str, ...]
    label: str
    total: int  # progress units the tool reports (samples, or nanoseconds with unit "s")
    progress_unit: str = ""
    extra_meta: Callable[[dict[str, Any]], dict[str, Any]] | None = (
        None  # harness.json -> extra run.json blocks
    )
    meta: dict[str, Any] = field(default_factory=dict)  # further blocks of this job
    finish_meta: Callable[[RawSamples, dict[str, Any], Path], dict[str, Any]] | None = (
        None  # (samples, meta, staging folder) -> blocks; files it leaves in staging join the run
    )
    command: Callable[[Path], list[str]] | None = (
        None  # staging folder -> argv prefix, for programs that are not native (the JVM harness)
    )
    series: tuple[str, ...] = ()  # the output holds one series per pair value, stored as runs of their own
    spike_cpus: Callable[[dict[str, Any]], dict[str, Any]] | None = (
        None  # run metadata -> how --trace finds a spike's CPU (None: this tool is not traced)
    )


def native_point(job: NativeJob) -> Point:
    """``job`` as a point of a plan."""
    return Point(job.label, lambda ctx: run_native_job(ctx, job))


def policy_args(policy: str, priority: int, mlock: bool) -> list[str]:
    """The --policy/--priority/--no-mlock arguments every measuring tool takes."""
    args = ["--policy", policy]
    if is_realtime(policy):
        args += ["--priority", str(priority)]
    if not mlock:
        args.append("--no-mlock")
    return args


def _stop_with_parent() -> None:
    """In the child, before exec: SIGTERM when jitterlab dies, even by SIGKILL, so the tool
    writes what it recorded and exits instead of running on unwatched."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _run(argv: list[str], progress: ProgressBar, pass_fds: tuple[int, ...] = ()) -> tuple[int, str, bool]:
    """Run the tool, feeding the progress bar (``pass_fds``: descriptors it inherits).
    Returns (exit code, stderr, interrupted)."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_stop_with_parent,
        pass_fds=pass_fds,
    )
    interrupted = False
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for line in proc.stdout:
            if line.startswith("progress "):
                progress.update(int(line.split()[1]))
    except KeyboardInterrupt:
        interrupted = True
        proc.send_signal(last_signal())  # the same signal: it may not share our process group
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
    progress.close()
    return proc.returncode, proc.stderr.read(), interrupted


def obtained(harness: dict[str, Any]) -> dict[str, Any]:
    """What the kernel granted, as the tool read it back."""
    placements = harness.get("placements", [])
    return {
        "policies": sorted({p["policy"] for p in placements}),
        "placements": placements,
        "spin_mode": harness.get("spin_mode"),
        "spin_fallback_reason": harness.get("spin_fallback_reason", ""),
        "mlock": harness.get("mlock"),
        "warnings": normalized(harness.get("warnings", [])),
    }


def common_meta(run_id: str, started: dt.datetime) -> dict[str, Any]:
    """The blocks every measured run carries: the store's common ones plus the machine's
    environment and the doctor's findings, read now."""
    return run_meta(run_id, started, environment=environment.collect(), doctor=doctor_facts())


def measured_meta(run_id: str, started: dt.datetime, load_before: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`common_meta` of a measurement that has just ended: its environment holds the
    load average read before it started (``load_before``, ``environment.loadavg()``) and now."""
    meta = common_meta(run_id, started)
    meta["environment"]["load_average"] = environment.load_during(load_before)
    return meta


def _execute(
    ctx: Context, job: NativeJob, staging: Path
) -> tuple[tuple[Path, RawSamples, dict[str, Any]] | None, bool, str]:
    """Run ``job`` into ``staging`` (named by the run's id); returns ((staging folder,
    samples, run metadata) or None, interrupted, why nothing was stored)."""
    store, warn = ctx.store, ctx.warn
    run_id = staging.name
    # every tool (native, the JVM harness and its GC log, a coordinator) writes into the
    # staging folder through the descriptor this process opened when it made it (inherited;
    # /proc/self/fd/N), never by its name in .staging: a .staging/ID swapped for a link
    # meanwhile leads the tool nowhere (issue 42 item 1, and its leftover for the JVM)
    fd = staging_fd(staging)
    work = work_path(staging) if fd is not None else staging
    prefix = job.command(work) if job.command else [str(native_program(job.program))]
    argv = [*prefix, *job.args, "--out", str(work)]
    started = dt.datetime.now(dt.timezone.utc)
    load_before = environment.loadavg()
    scale, unit = (1e9, "s") if job.progress_unit == "s" else (1.0, "")
    code, stderr, interrupted = _run(
        argv, ProgressBar(job.label, job.total, scale=scale, unit=unit), () if fd is None else (fd,)
    )
    raw_path = work / "samples.jlraw"
    if not raw_path.exists() and (work / "samples.jlraw.tmp").exists():
        raw_path = work / "samples.jlraw.tmp"  # the tool died before its footer
    harness_json = work / "harness.json"
    if not raw_path.exists():
        store.discard_staging(staging)
        last = (stderr.strip().splitlines() or [f"exit code {code}"])[-1]
        if code == 2:
            raise JitterlabError(last.split(": error: ", 1)[-1])
        return None, interrupted, f"{job.program} failed before writing samples: {last}"
    raw = read_raw_samples(raw_path)
    harness, set_aside = read_harness_json(harness_json)
    for w in normalized(harness.get("warnings", [])):
        warn(from_stored(w))
    reasons = [r for r in (harness.get("partial_reason"), raw.note, set_aside) if r]
    if interrupted and not reasons:
        reasons.append("interrupted")
    partial = raw.partial or bool(reasons) or harness.get("status") == "partial"
    meta = measured_meta(run_id, started, load_before) | {
        "status": "partial" if partial else "complete",
        "partial_reason": "; ".join(reasons),
        "config": job.config,
        "obtained": obtained(harness),
        "floor": harness.get("floor", {}),
        "timing": {
            "started_realtime_ns": harness.get("started_realtime_ns"),
            "t_start_ns": harness.get("t_start_ns"),
            "t_end_ns": harness.get("t_end_ns"),
        },
        "harness": {
            "program": job.program,
            "argv": argv[1:],
            "exit_code": code,
            "version": harness.get("harness_version"),
        },
    }
    if job.extra_meta and harness:
        meta |= job.extra_meta(harness)
    meta |= ctx.meta | job.meta
    if job.finish_meta is not None:  # after the tool ended: for example stop the proxy, read its files
        meta |= job.finish_meta(raw, meta, work)
    if job.spike_cpus is not None:  # --trace: stop perf, keep its events with the run
        meta |= trace_block(ctx.trace, work, job.spike_cpus(meta))
    # harness.json and the journal stay until the run is published (drop_metadata): a bench
    # killed during the commit is recovered with its technique and policy (issue 42 item 9)
    return (staging, raw, meta), interrupted, ""


def run_native_job(ctx: Context, job: NativeJob) -> Done:
    """Run ``job`` and store its output: one run, or one per series (``job.series``)."""
    store = ctx.store
    # its name is the run's id; locked from the moment it exists (recover leaves it alone)
    staging = store.staging_dir(store.new_run_id(*job.id_parts), lock=True)
    with store.staging_lock(staging.name):
        try:
            result, interrupted, failure = _execute(ctx, job, staging)
            if result is None:
                return Done([], interrupted, failure)
            if job.series:
                return Done(_store_series(store, job, result), interrupted)
            staging, raw, meta = result
            return Done([drop_metadata(store.commit(staging, raw, meta))], interrupted)
        except (JitterlabError, CorruptRunError, OSError) as e:
            # a harness that could not write its samples leaves a file with a bad header, a
            # commit a path under /proc/self/fd: a full disk is said as such (issue 42 item 10)
            full = full_disk_text(store, staging, job)
            if full is None:
                raise
            raise JitterlabError(full) from e


FULL_DISK_BYTES = 1 << 20  # less than this free on the store's disk after a failure: it was full


def full_disk_text(store: ResultsStore, staging: Path, job: NativeJob) -> str | None:
    """One line for a job that failed on a full disk, naming the store, the space free and
    about the space the samples need; None when the store's disk is not (nearly) full."""
    try:
        free = shutil.disk_usage(store.root).free
    except OSError:
        return None
    if free >= FULL_DISK_BYTES:
        return None
    # the raw file and its Parquet copy (about half as large) are on the disk together
    needed = (
        ""
        if job.progress_unit == "s"
        else f", about {job.total * RECORD_DTYPE.itemsize * 1.5 / 1e6:.3g} MB needed"
    )
    kept = f"; what was recorded is kept in .staging/{staging.name} for `jitterlab recover`"
    return (
        f"no space left in results store {store.root}: {free / 1e6:.3g} MB free{needed} "
        f"(free space there, or use --store on a larger disk){kept if staging.exists() else ''}"
    )


def _store_series(
    store: ResultsStore, job: NativeJob, result: tuple[Path, RawSamples, dict[str, Any]]
) -> list[Run]:
    """One run per series (``config.series`` names it, ``config.scenario_run`` links them),
    streamed: each chunk of the raw file is split among the series' samples files."""
    staging, raw, meta = result
    metas, writers, folders = [], [], []
    try:
        for name in job.series:
            part = copy.deepcopy(meta)
            folder = store.staging_dir(store.new_run_id(*job.id_parts, name), lock=True)
            folders.append(folder)
            part["id"] = folder.name
            part["config"] = part["config"] | {"series": name, "pairs": 1, "scenario_run": meta["id"]}
            metas.append(part)
            # through the descriptor of the folder made, never its path (issue 42)
            writers.append(SampleWriter(work_path(folder) / SAMPLES_FILE, part["id"]))
        for parts in raw.chunks_by_pair(len(writers)):
            for writer, (seq, t_send, t_recv) in zip(writers, parts, strict=True):
                writer.write(0, seq, t_send, t_recv)
        for writer in writers:
            writer.close()
        # every series described in its own staging folder before any is published: a kill
        # from here on leaves each one recover publishes as the series it is (issue 42)
        metas = [store.stage_described(f, m, w) for f, m, w in zip(folders, metas, writers, strict=True)]
    except BaseException:
        for writer in writers:
            writer.abort()
        for folder in folders:
            store.discard_staging(folder)
        raise
    # the source's raw file is dropped only now: until here a kill leaves it to recover whole
    store.discard_staging(staging)
    kill_point("series-staged")
    return [store.publish_staged(f, m) for f, m in zip(folders, metas, strict=True)]


def recover(store: ResultsStore, warn: Warn) -> list[Run]:
    """Store what killed measurements left in ``.staging/`` as partial runs
    (store/recovery.py), each described from its harness.json and this machine."""
    return recovery.recover(store, warn, _recovered_meta)


def _recovered_meta(
    staging: Path, harness: dict[str, Any], started: dt.datetime, pairs: int, note: str, why: str = ""
) -> dict[str, Any]:
    """The run.json of a leftover: what its harness.json said (technique, policy, timing)."""
    return common_meta(staging.name, started) | {
        "status": "partial",
        "partial_reason": "; ".join(
            r for r in (why or "recovered from .staging: the measuring process did not finish", note) if r
        ),
        "config": {
            "runtime": harness.get("harness", "unknown"),
            "technique": harness.get("technique") or harness.get("tool") or "unknown",
            "pairs": pairs,
            "samples": harness.get("samples", harness.get("samples_requested")),
            "policy": (harness.get("policy_requested") or {}).get("policy", "unknown"),
            "recovered": True,
        },
        "obtained": obtained(harness),
        "floor": harness.get("floor", {}),
        "timing": {k: harness.get(k) for k in ("started_realtime_ns", "t_start_ns", "t_end_ns")},
    }
