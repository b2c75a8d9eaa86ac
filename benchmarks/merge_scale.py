"""Merge across hosts (issue 25 Targets): `jitterlab merge` of 100 HdrHistogram logs (one per
simulated host) and of 16 stored runs, each checked exact against a merge done with the whole
data in memory, with its time and the peak memory of its whole process tree.

- **100 hlogs**: each host's log holds ``--intervals`` one-second histograms (3 significant
  digits) of a heavy-tailed mixture, its own start time; the reference adds every interval
  histogram of every host into one histogram in this process. Exact means the merged run's
  stored figures (count, min, max, mean, std, p50…p99.999, HdrHistogram's definition) are
  equal, and so are each host's own figures (the log keeps the host as its tag).
- **16 stored runs**: each ``--samples`` samples of the mixture of benchmarks/scale.py (16
  pairs); the reference concatenates every run's latencies in memory and summarises them
  (exact type-7 percentiles, docs/statistics.md). Exact means the merged run's stored
  summary equals it to the last bit, and so does ``show --recompute`` of the merged run.

Each merge runs ``--repeats`` times as its own process (benchmarks/treemem.py): median and
range of the seconds and of the tree's peak RSS.

Usage: python benchmarks/merge_scale.py [--hosts 100] [--intervals 60] [--runs 16]
       [--samples 1000000] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from scale import fmt, generate, measure


def write_host_log(path: Path, host: int, intervals: int, per_interval: int) -> list[object]:
    """One host's log; returns its interval histograms."""
    from jitterlab.store.hdr.histogram import Histogram
    from jitterlab.store.hdr.log import LogWriter

    rng = np.random.default_rng([7, host])
    out = io.StringIO()
    writer = LogWriter(out)
    writer.version()
    start_ms = 1_700_000_000_000 + host * 3_000  # every host started at its own time
    writer.start_time(start_ms)
    writer.legend()
    histograms = []
    for i in range(intervals):
        body = rng.lognormal(np.log(4_000), 0.25, per_interval)
        spikes = rng.pareto(1.5, max(1, per_interval // 200)) * 50_000 + 20_000
        values, counts = np.unique(np.concatenate([body, spikes]).astype(np.int64), return_counts=True)
        h = Histogram.auto(3)
        h.record(values, counts)
        writer.interval(start_ms / 1000 + i, start_ms / 1000 + i + 1, h)
        histograms.append(h)
    path.write_text(out.getvalue())
    return histograms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--intervals", type=int, default=60, help="one-second histograms per host log")
    parser.add_argument("--per-interval", type=int, default=10_000, help="values recorded per interval")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--samples", type=float, default=1e6, help="samples per stored run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="10 intervals per log, 10⁵ samples per run")
    args = parser.parse_args()
    if args.quick:
        args.intervals, args.samples = 10, 1e5
    from jitterlab.stats.summary import summarize
    from jitterlab.store import load_run
    from jitterlab.store.hdr.histogram import Histogram
    from jitterlab.store.hdr.streams import figures

    root = Path(tempfile.mkdtemp(prefix="jl-merge-"))
    store = root / "store"
    env = dict(os.environ, JITTERLAB_STORE=str(store))
    jl = [sys.executable, "-m", "jitterlab"]
    try:
        # 100 hlogs
        logs, union, alone = [], Histogram.auto(3), {}
        for host in range(args.hosts):
            path = root / f"host{host:03d}.hlog"
            hs = write_host_log(path, host, args.intervals, args.per_interval)
            own = Histogram.auto(3)
            for h in hs:
                union.add(h)
                own.add(h)
            alone[path.stem] = figures(own)
            logs.append(str(path))
        seconds, peaks, out = measure([*jl, "merge", *logs, "--as", "hosts"], args.repeats, env)
        run = load_run(out.split()[-1], store)  # merge prints the new run's id
        streams = {s["tag"]: s["summary"] for s in run.meta["histogram"]["streams"]}
        exact = run.meta["summary"]["latency_ns"] == figures(union) and all(
            streams.get(tag) == f for tag, f in alone.items()
        )
        print(
            f"merge of {args.hosts} hlogs ({args.intervals} intervals, {union.total:,} values): "
            f"{fmt(seconds)} s, peak {fmt(peaks, 0)} MB; exact against the in-memory merge: "
            f"{'yes' if exact else 'NO'}"
        )
        # 16 stored runs
        n = int(args.samples)
        ids = [generate(store, n, seed=3000 + i) for i in range(args.runs)]
        everything = np.concatenate([load_run(i, store).latency_ns for i in ids])
        expected = summarize(everything).to_dict()
        seconds, peaks, out = measure([*jl, "merge", *ids, "--as", "fleet"], args.repeats, env)
        run = load_run(out.split()[-1], store)
        stored_ok = run.meta["summary"]["latency_ns"] == expected
        shown = json.loads(measure([*jl, "show", run.id, "--json", "--recompute"], 1, env)[2])
        read_ok = shown["summary_ns"] == expected
        print(
            f"merge of {args.runs} stored runs ({everything.size:,} samples): {fmt(seconds)} s, "
            f"peak {fmt(peaks, 0)} MB; exact against the in-memory merge: "
            f"{'yes' if stored_ok and read_ok else 'NO'} (stored summary {'=' if stored_ok else '≠'}, "
            f"show --recompute {'=' if read_ok else '≠'})"
        )
        return 0 if exact and stored_ok and read_ok else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
