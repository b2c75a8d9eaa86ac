"""Paper speed: `jitterlab paper` beside `jitterlab report` of the same store, one run each.

The store is the shape of the main job's (benchmarks/report_speed.py's synthetic store:
7 techniques × pairs 1, 2 × policies other, rr = 28 runs of 200 000 samples per pair), or
``--store DIR``. Each command runs whole, as a user runs it (``python -m jitterlab paper
--store STORE -o DIR`` and ``… report --store STORE -o OUT``), in turns, ``--repeats``
times; printed: wall seconds, CPU seconds of the tree (user + system of every process),
peak RSS / PSS of the whole process tree (benchmarks/treemem.py) and the most processes
at once, median and range, with the load average before and after each command.

The memory of the tree is judged by its PSS (each shared page divided among the
processes mapping it): the forked drawing child shares the parent's pages copy-on-write,
which the RSS sum counts twice. On a loaded machine wall time is noise: CPU seconds are
the figure to compare. The CPU seconds of the busiest process bound the wall on an idle
machine with a CPU per process from below (the processes overlap at best), and the
tree's CPU bounds it from above.

Target (issue 39): the paper of the 28 runs ≤ 15 s and ≤ 400 MB for the process tree.

Usage: python benchmarks/paper_speed.py [--runs 28] [--samples 200000] [--store DIR] [--repeats 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

from report_speed import make_store
from treemem import median_range, run_measured


def measure(cmd: list[str]) -> dict[str, float]:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_measured(cmd, pss=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return {
        "load": load,
        "load_after": os.getloadavg()[0],
        "processes": done.peak_processes,
        "longest_cpu": done.longest_process_cpu_s,
        "seconds": done.seconds,
        "cpu_seconds": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "rss_mb": done.peak_tree_rss_bytes / 1e6,
        "pss_mb": done.peak_tree_pss_bytes / 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=28)
    parser.add_argument("--samples", type=int, default=200_000, help="samples per pair (200000)")
    parser.add_argument("--store", type=Path, help="this store instead of a synthetic one")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, help="keep the last paper written here (a new folder or a paper's)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = args.store
        if store is None:
            print(
                f"making a store of {args.runs} runs of {args.samples:,} samples per pair…", file=sys.stderr
            )
            store = root / "store"
            make_store(store, args.runs, args.samples)
        commands = {
            "paper": [
                sys.executable,
                "-m",
                "jitterlab",
                "paper",
                "--store",
                str(store),
                "-o",
                str(args.out or root / "paper"),
            ],
            "report": [
                sys.executable,
                "-m",
                "jitterlab",
                "report",
                "--store",
                str(store),
                "-o",
                str(root / "r.html"),
            ],
        }
        results: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
        for i in range(args.repeats):
            for name, cmd in commands.items():
                results[name].append(measure(cmd))
                r = results[name][-1]
                print(
                    f"  {name} #{i + 1}: {r['seconds']:.1f} s wall, {r['cpu_seconds']:.1f} s CPU, "
                    f"{r['rss_mb']:.0f} MB RSS, {r['pss_mb']:.0f} MB PSS, {r['processes']:.0f} processes "
                    f"(busiest {r['longest_cpu']:.1f} s CPU), "
                    f"load {r['load']:.1f} → {r['load_after']:.1f}",
                    file=sys.stderr,
                )
        for name, rs in results.items():
            line = [f"{name:>6}:"]
            for key, unit in (
                ("seconds", "s wall"),
                ("cpu_seconds", "s CPU"),
                ("rss_mb", "MB RSS"),
                ("pss_mb", "MB PSS"),
                ("processes", "processes"),
                ("longest_cpu", "s CPU of the busiest process"),
            ):
                med, lo, hi = median_range([r[key] for r in rs])
                line.append(f"{med:.1f} {unit} ({lo:.1f}–{hi:.1f})")
            loads = [x for r in rs for x in (r["load"], r["load_after"])]
            line.append(f"load {min(loads):.1f}–{max(loads):.1f}")
            print(" ".join(line))
        paper = median_range([r["seconds"] for r in results["paper"]])[0]
        cpu = median_range([r["cpu_seconds"] for r in results["paper"]])[0]
        pss = median_range([r["pss_mb"] for r in results["paper"]])[0]
        print(
            f"target ≤ 15 s and ≤ 400 MB (PSS): {'met' if paper <= 15 and pss <= 400 else 'missed'} "
            f"({paper:.1f} s wall, {cpu:.1f} s CPU, {pss:.0f} MB PSS)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
