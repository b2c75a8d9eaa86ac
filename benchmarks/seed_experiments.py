"""The seeds' experiments as benchmarks (issue 27 item 12): one run of each, its headline figures printed.

Each ``--seed`` runs the command its page in docs/results/ documents, into a temporary store,
and prints the figures that page quotes, one per line, for benchmarks/all.py to read
(benchmarks/figures.toml: ``seed_000``, ``seed_003``, ``seed_004``). all.py repeats it (3 times
by default) and publishes the median and range of every figure. ``--quick`` keeps the
experiment's shape at a smaller size (fewer pairs and samples, shorter runs): minutes, not a
quarter of an hour.

- ``000`` (docs/results/seed-000.md): ``jitterlab bench`` of mutex, caf, java-lock and pekko
  under SCHED_OTHER and SCHED_RR 90 (pairs 1..16, 100 000 samples per pair), then java-lock and
  pekko at 16 pairs under every collector. Figures: the median latency at 16 pairs of each
  technique and policy, and of java-lock under each collector (SCHED_OTHER). Maxima are printed
  but not figures: on a shared VM a maximum is a property of the run, not of the technique.
- ``003`` (docs/results/repl-seed-003.md): ``jitterlab repl bench --preset seed-003``. Figures:
  update latency p50 and mean update interval at N = 2, 25 and 100, server ticks/s at N = 125,
  the knee (0: none).
- ``004`` (docs/results/net-seed-004.md, root): ``jitterlab net bench --preset seed-004``.
  Figures: ping round trip p50 per transport, inter-node stream msg/s per transport, and
  frames/s of synchronised and unsynchronised rendering with 100 ms on the link.

Usage: python benchmarks/seed_experiments.py --seed 000|003|004 [--quick] [--store DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jitterlab.stats import percentiles
from jitterlab.store import ResultsStore, Run

# what each seed runs: the documented command (full) and its smaller shape (quick)
SEED_000_MAIN = [
    "bench",
    "--technique",
    "mutex,caf,java-lock,pekko",
    "--policy",
    "other,rr",
    "--priority",
    "90",
]
SEED_000_GC = ["bench", "--policy", "other,rr", "--priority", "90", "--pairs", "16"]
SIZES: dict[str, dict[str, list[list[str]]]] = {
    "000": {
        "full": [
            [*SEED_000_MAIN, "--pairs", "1,2,4,8,16", "--samples", "100000"],
            [
                *SEED_000_GC,
                *("--technique", "java-lock,pekko", "--gc", "serial,parallel,g1,zgc-gen,shenandoah"),
                *("--samples", "100000"),
            ],
        ],
        "quick": [
            [*SEED_000_MAIN, "--pairs", "1,16", "--samples", "20000"],
            [*SEED_000_GC, "--technique", "java-lock", "--gc", "serial,g1", "--samples", "20000"],
        ],
    },
    "003": {
        "full": [["repl", "bench", "--preset", "seed-003"]],
        "quick": [["repl", "bench", "--preset", "seed-003", "--duration", "3s", "--warmup", "0.5s"]],
    },
    "004": {
        "full": [["net", "bench", "--preset", "seed-004"]],
        "quick": [["net", "bench", "--preset", "seed-004", "--duration", "1s", "--warmup", "0.5s"]],
    },
}


def jitterlab() -> str:
    """This interpreter's ``jitterlab`` (the one benchmarks/all.py puts first on PATH)."""
    here = Path(sys.executable).parent / "jitterlab"
    return str(here) if here.exists() else (shutil.which("jitterlab") or "jitterlab")


def run_cli(words: list[str], store: Path) -> None:
    shown = " ".join(["jitterlab", *words])
    print(f"running: {shown}", file=sys.stderr, flush=True)
    done = subprocess.run([jitterlab(), *words, "--store", str(store)], stdout=subprocess.DEVNULL)
    # 1: it ran and warned (a generator-limited run, a missed floor): its runs still count
    if done.returncode not in (0, 1):
        raise SystemExit(f"{shown}: exit {done.returncode}")


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.3f} µs"


def label(run: Run) -> str:
    c = run.config
    gc = f"[{c['gc']}]" if c.get("gc") else ""
    return f"{c['technique']}{gc} x{c['pairs']} {c.get('policy', 'other')}"


def seed_000(runs: Sequence[Run]) -> None:
    """Median, p99 and max of every run; the figures are the medians."""
    for run in sorted(runs, key=lambda r: (label(r).split(" x")[0], int(r.config["pairs"]))):
        lat = run.latency_ns.astype(np.float64)
        if lat.size == 0:
            continue
        p50, p99 = percentiles(lat, (50.0, 99.0))
        print(f"seed-000 {label(run)}: median {_us(p50)}, p99 {_us(p99)}, max {_us(lat.max())}")


def seed_003(runs: Sequence[Run]) -> None:
    from jitterlab.describe.replication import find_knee, replication_rows

    rows = replication_rows(runs)
    for row in rows:
        print(
            f"seed-003 N={row.clients}: latency p50 {row.latency_ms.p50:.3f} ms, "
            f"update interval mean {row.interval_ms.mean:.3f} ms, server ticks/s {row.server_fps:.1f}"
        )
    knee = find_knee(rows)
    print(f"seed-003 knee N {knee.clients or 0}")


def seed_004(runs: Sequence[Run]) -> None:
    from jitterlab.describe.network import is_net_run

    net = [r for r in runs if is_net_run(r)]
    for run in net:
        c = run.config
        scenario = c.get("scenario")
        if scenario == "ping" and run.latency_ns.size:
            p50 = float(np.median(run.latency_ns))
            print(f"seed-004 ping {c['transport']}: round trip p50 {p50 / 1e6:.4f} ms")
        elif scenario == "stream":
            where = "intra-node" if c.get("intra_node") else "inter-node"
            print(f"seed-004 stream {c['transport']} {where}: {run.meta['net']['msg_per_s']:,.0f} msg/s")
        elif scenario == "frame-sync":
            where = "intra-node" if c.get("intra_node") else "inter-node"
            sync = "sync" if c.get("sync") else "no-sync"
            delay = f" {c['impaired']}" if c.get("impaired") else ""
            nodes = run.meta["net"].get("render_nodes")
            print(
                f"seed-004 frames {sync} {where} {nodes} render nodes{delay}: {run.meta['net']['fps']:.1f} fps"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", choices=sorted(SIZES), required=True)
    parser.add_argument("--quick", action="store_true", help="the experiment's smaller shape")
    parser.add_argument("--store", type=Path, help="results store (default: a temporary folder)")
    args = parser.parse_args()
    if args.seed == "004" and os.geteuid() != 0:
        print("error: seed 004 makes network namespaces: run as root", file=sys.stderr)
        return 2
    commands = SIZES[args.seed]["quick" if args.quick else "full"]
    with tempfile.TemporaryDirectory(prefix="jl-seed-") as tmp:
        store = args.store or Path(tmp) / "results"
        for words in commands:
            run_cli(words, store)
        runs = ResultsStore(store).runs()
        print(f"seed {args.seed}, {'quick' if args.quick else 'full'} size: {len(runs)} runs")
        for words in commands:
            print("  jitterlab " + " ".join(words))
        {"000": seed_000, "003": seed_003, "004": seed_004}[args.seed](runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
