"""describe's two passes against the radix passes they replaced, on one stored run of N
samples: every figure compared (thresholds, levels, categories, and each window's count,
mean, p50, p99, max and category counts), and the time of each path, in this process.

The radix path (stats/outofcore.py) is the reference the two-pass path (stats/twopass.py,
docs/statistics.md "describe in two passes") must equal to the last bit; the tests check it
on small samples, this script at the benchmark's sizes. The run is generated as
benchmarks/scale.py generates it (16 pairs, the heavy-tailed mixture).

Usage: python benchmarks/describe_paths.py [--samples 1e7] [--window 1s] [--two-sided] [--repeats 1]
       [--store DIR --run ID]   (an existing run instead of a generated one)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scale import generate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=float, default=1e7)
    parser.add_argument("--window", type=float, default=1.0, help="window width in seconds")
    parser.add_argument("--two-sided", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--store", help="an existing store (with --run)")
    parser.add_argument("--run", help="a run id in --store")
    args = parser.parse_args()

    from jitterlab.describe.analysis import file_summary
    from jitterlab.stats.outofcore import stacked_z_scan, time_windows_scan
    from jitterlab.stats.twopass import describe_two_pass, stacked_z_table
    from jitterlab.store.reader import LOCAL, send_recv_chunks, send_time_extent
    from jitterlab.store.runs import load_run, verified_samples_path

    temp = None
    if args.store and args.run:
        store, run_id = Path(args.store), args.run
    else:
        temp = Path(tempfile.mkdtemp(prefix="jl-paths-"))
        store, run_id = temp / "store", generate(temp / "store", int(args.samples))
    try:
        run = load_run(run_id, store)
        path = verified_samples_path(run)
        summary = file_summary(run, path)
        extent = send_time_extent(path)
        assert extent is not None
        width = round(args.window * 1e9)
        two, radix = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            found = describe_two_pass(
                lambda: send_recv_chunks(path), int(summary.min), int(summary.max), *extent, width,
                lambda table: stacked_z_table(table, 3.5, args.two_sided),  # type: ignore[arg-type]
            )  # fmt: skip
            two.append(time.perf_counter() - start)
            start = time.perf_counter()
            categories = stacked_z_scan(LOCAL.latency(path), 3.5, args.two_sided)
            windows = time_windows_scan(LOCAL.timed(path), width, categories)
            radix.append(time.perf_counter() - start)
        assert found is not None, "the two-pass path gave no answer (its bounds)"
        same = found[0] == categories and all(
            np.array_equal(getattr(found[1], f), getattr(windows, f), equal_nan=True)
            for f in ("start_ns", "count", "mean", "p50", "p99", "max", "category_counts")
        )
        print(
            f"run of {summary.count:,} samples, {windows.count.size} windows of {args.window:g} s, "
            f"{len(categories.thresholds)} thresholds"
        )
        print(f"two passes: {statistics.median(two):.2f} s ({min(two):.2f}–{max(two):.2f})")
        print(f"radix passes: {statistics.median(radix):.2f} s ({min(radix):.2f}–{max(radix):.2f})")
        print(f"ratio radix/two-pass {statistics.median(radix) / statistics.median(two):.1f}")
        print(f"every figure equal: {'yes' if same else 'NO'}")
        return 0 if same else 1
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
