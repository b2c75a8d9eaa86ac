"""Report speed: `jitterlab report` today against the code before the speed-up, one run.

The store is the shape of the main job's (7 techniques × pairs 1, 2 × policies other,
rr = 28 runs of 200 000 samples per pair), filled with synthetic latencies (a main
cluster, a second cluster and rare spikes, different per run) so that it needs no
harness. Both contenders render the report of the same store, each in its own process
(peak memory = the peak RSS of its whole process tree, benchmarks/treemem.py): the
current package, and the package as it was at ``--before`` (default 35a9699: the report
as the issue found it), extracted from git.

Targets: ≤ 10 s and ≤ 300 MB PSS of the whole process tree for the 28 runs (PSS: each
shared page divided among the processes that map it, from /proc/PID/smaps_rollup; the
tree's RSS, which counts the workers' shared pages once per worker, is printed beside it),
≥ 7× faster than before. Each contender renders ``--repeats`` times (median and range).

``--store DIR`` renders an existing store instead (the main job's ./jitterlab-results).

``--cli`` measures the whole command a user runs, ``jitterlab report --store STORE -o OUT``
(interpreter start and imports included: about 0.8 s of CPU and 20 MB of PSS more than the
child), which is what the target counts. The CPU seconds of the tree (workers included) are
printed beside the wall time: on a shared machine the wall time is the CPU time plus the wait
for a CPU, so they say what the code costs when the load average is far above the CPU count.

Usage: python benchmarks/report_speed.py [--before COMMIT] [--runs 28] [--samples 200000] [--store DIR]
       [--repeats 3] [--skip-before] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

from treemem import median_range, run_measured

REPO = Path(__file__).resolve().parents[1]
TECHNIQUES = ("mutex", "futex", "spin", "spsc", "pipe", "unix", "caf")
BEFORE = "35a9699"


def make_store(root: Path, runs: int, samples_per_pair: int) -> None:
    import datetime as dt

    from jitterlab.store import ResultsStore
    from jitterlab.store.rawfile import RECORD_DTYPE, RawSamples
    from jitterlab.store.schema import run_meta

    store = ResultsStore(root)
    rng = np.random.default_rng(7)
    plans = [(t, p, pol) for t in TECHNIQUES for p in (1, 2) for pol in ("other", "rr")][:runs]
    for technique, pairs, policy in plans:
        n = samples_per_pair * pairs
        scale = rng.uniform(2_000, 40_000)
        latency = rng.normal(scale, scale / 20, n)
        second = rng.choice(n, n // 50, replace=False)
        latency[second] *= 3
        spikes = rng.choice(n, n // 2000, replace=False)
        latency[spikes] = rng.normal(1_000_000, 50_000, spikes.size)
        records = np.zeros(n, dtype=RECORD_DTYPE)
        records["pair"] = np.arange(n) % pairs
        records["seq"] = np.arange(n) // pairs
        records["t_send_ns"] = 1_000_000_000 + np.arange(n) * 20_000
        records["t_recv_ns"] = records["t_send_ns"] + np.abs(latency).astype(np.int64) + 100
        meta = run_meta(
            store.new_run_id(technique, f"p{pairs}", policy),
            dt.datetime.now(dt.timezone.utc),
            environment=None,
            doctor=None,
            config={
                "runtime": "native",
                "technique": technique,
                "pairs": pairs,
                "policy": policy,
                "priority": 90 if policy == "rr" else 0,
                "samples_per_pair": samples_per_pair,
            },
            timing={"t_start_ns": 1_000_000_000, "t_end_ns": int(records["t_recv_ns"].max())},
        )
        store.commit(store.staging_dir(meta["id"]), RawSamples(records, False, False, ""), meta)


def extract_before(commit: str, target: Path) -> Path:
    """The Python package as it was at ``commit`` (the report is pure Python)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src/jitterlab"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    installed = Path(__import__("jitterlab").__file__).parent
    # the old package finds its build facts beside it, as the installed one does
    for name in ("_build_info.json",):
        if (installed / name).exists():
            (target / "src" / "jitterlab" / name).write_bytes((installed / name).read_bytes())
    return target / "src"


def child(store: Path, out: Path) -> None:
    from jitterlab.describe.report import write_report
    from jitterlab.store import ResultsStore

    started = time.perf_counter()
    cpu_at_start = sum(
        (r.ru_utime + r.ru_stime)
        for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )
    runs = ResultsStore(store).runs()
    size = write_report(runs, out, "report speed")
    elapsed = time.perf_counter() - started
    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = own.ru_maxrss * 1024
    # CPU seconds of the render, workers included: what the load of a shared machine inflates least
    cpu = own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime - cpu_at_start
    print(
        json.dumps(
            {"seconds": elapsed, "cpu_seconds": cpu, "peak_bytes": peak, "bytes": size, "runs": len(runs)}
        )
    )


def run_child(store: Path, out: Path, pythonpath: Path | None) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = run_measured([sys.executable, __file__, "--child", str(store), str(out)], env=env, pss=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    # the report may start workers: the figure is the whole tree's peak, not the parent's ru_maxrss
    result["peak_bytes"] = max(done.peak_tree_rss_bytes, result["peak_bytes"])
    result["peak_pss_bytes"] = done.peak_tree_pss_bytes
    return result


def run_cli(store: Path, out: Path, pythonpath: Path | None) -> dict[str, float]:
    """``jitterlab report --store STORE -o OUT`` as a user runs it: the whole command (interpreter
    start, imports, the report) and its whole process tree; CPU seconds from the waited tree."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    cmd = [sys.executable, "-m", "jitterlab", "report", "--store", str(store), "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_measured(cmd, env=env, pss=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "seconds": done.seconds,
        "cpu_seconds": cpu,
        "peak_bytes": done.peak_tree_rss_bytes,
        "peak_pss_bytes": done.peak_tree_pss_bytes,
        "bytes": out.stat().st_size,
        "runs": sum(1 for p in store.iterdir() if (p / "run.json").is_file()),
    }


def median_of(results: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the repeats, with its range as KEY_min and KEY_max."""
    out: dict[str, float] = {}
    for key in ("seconds", "cpu_seconds", "peak_bytes", "peak_pss_bytes", "bytes", "runs"):
        values = [r.get(key, float("nan")) for r in results]
        out[key], out[key + "_min"], out[key + "_max"] = median_range(values)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE, help=f"commit of the code to compare with ({BEFORE})")
    parser.add_argument("--runs", type=int, default=28)
    parser.add_argument("--samples", type=int, default=200_000, help="samples per pair (200000)")
    parser.add_argument("--store", type=Path, help="render this store instead of a synthetic one")
    parser.add_argument("--repeats", type=int, default=3, help="renders of each contender (median and range)")
    parser.add_argument("--skip-before", action="store_true", help="render today's code only (no speed-up)")
    parser.add_argument(
        "--cli",
        action="store_true",
        help="measure the whole command `jitterlab report --store STORE -o OUT` (interpreter start and "
        "imports included) instead of write_report in a child process",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = args.store
        if store is None:
            print(f"making a store of {args.runs} runs…", file=sys.stderr)
            store = root / "store"
            make_store(store, args.runs, args.samples)
        print(f"rendering with today's code ({args.repeats}×)…", file=sys.stderr)
        render = run_cli if args.cli else run_child
        now = median_of([render(store, root / "now.html", None) for _ in range(args.repeats)])
        before = None
        if not args.skip_before:
            old_src = extract_before(args.before, root / "before")
            print(f"rendering with the code at {args.before} ({args.repeats}×)…", file=sys.stderr)
            before = median_of([render(store, root / "before.html", old_src) for _ in range(args.repeats)])
    what = f"{args.store}" if args.store else f"synthetic, {args.samples:,} samples per pair"
    what += "; the whole `jitterlab report` command" if args.cli else "; write_report in a child process"
    print(f"report of {now['runs']:.0f} runs ({what}), medians of {args.repeats}")
    print(f"{'contender':<22}{'time':>9}{'cpu':>8}{'tree peak':>11}{'tree PSS':>10}{'size':>9}")
    contenders = [("jitterlab now", now)] + ([(f"before ({args.before})", before)] if before else [])
    for name, r in contenders:
        print(
            f"{name:<22}{r['seconds']:>8.1f}s{r['cpu_seconds']:>7.1f}s{r['peak_bytes'] / 1e6:>9.0f}MB"
            f"{r['peak_pss_bytes'] / 1e6:>8.0f}MB{r['bytes'] / 1e6:>7.1f}MB"
        )
    fast, small = now["seconds"] <= 10, now["peak_pss_bytes"] <= 300e6
    print(
        f"time {now['seconds']:.1f} s ({now['seconds_min']:.1f}–{now['seconds_max']:.1f}) "
        f"(target ≤ 10 s) {'met' if fast else 'MISSED'}"
    )
    print(
        f"cpu time {now['cpu_seconds']:.1f} s ({now['cpu_seconds_min']:.1f}–{now['cpu_seconds_max']:.1f}), "
        f"workers included (on a shared machine the wall time is this plus waiting for a CPU)"
    )
    print(
        f"peak memory {now['peak_bytes'] / 1e6:.0f} MB ({now['peak_bytes_min'] / 1e6:.0f}–"
        f"{now['peak_bytes_max'] / 1e6:.0f}), RSS of the tree (shared pages counted per process)"
    )
    print(
        f"peak PSS {now['peak_pss_bytes'] / 1e6:.0f} MB ({now['peak_pss_bytes_min'] / 1e6:.0f}–"
        f"{now['peak_pss_bytes_max'] / 1e6:.0f}) (target ≤ 300 MB) {'met' if small else 'MISSED'}"
    )
    if before is None:
        return 0 if fast and small else 1
    ratio = before["seconds"] / now["seconds"]
    ahead = ratio >= 7
    print(f"speed-up {ratio:.1f}× (target ≥ 7×) {'met' if ahead else 'MISSED'}")
    return 0 if fast and small and ahead else 1


if __name__ == "__main__":
    raise SystemExit(main())
