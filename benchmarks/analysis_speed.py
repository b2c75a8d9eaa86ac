"""Analysis speed: jitterlab against a straightforward pandas/scipy version and DuckDB, in
one run.

On N synthetic latency samples (default 100 M: a main cluster, a cluster of larger
values and rare spikes, 10 µs apart in send time) every contender computes the same three
things (jitterlab by the path ``describe`` takes over a stored run's row groups: the summary in
one pass, the stacked test and windows in two, C++ kernels inside): the summary (count, min, max, mean, std, p50..p99.999), the stacked modified
z-score test (categories with range and count) and 1 s windows by send time (count, mean,
p50, p99, max and category counts). Each runs in its own process so that its peak
memory (ru_maxrss) is its own; the input arrays are generated once and loaded by all.
DuckDB (the tool a data person would pick) runs the same as SQL over the arrays, zero-copy
through Arrow, with its own quantile_cont (numpy's linear definition) and mad aggregates,
on all cores as it does by default.

Prints time, peak memory and the ratios. Targets: ≥ 10× faster than the straightforward
version, ≥ 5× faster than DuckDB (issue 25), ahead of the best contender, 100 M samples in ≤ 30 s, peak memory ≤ 3× the
latency array.

Usage: python benchmarks/analysis_speed.py [--samples N] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from jitterlab.stats import stacked_z_test
from jitterlab.stats.summary import summarize_differences
from jitterlab.stats.twopass import describe_two_pass, stacked_z_table


def make_data(n: int, directory: Path) -> None:
    rng = np.random.default_rng(42)
    latency = rng.normal(10_000, 400, n)
    k2, k3 = n // 40, n // 20_000
    idx = rng.choice(n, k2 + k3, replace=False)
    latency[idx[:k2]] = rng.normal(30_000, 1_500, k2)
    latency[idx[k2:]] = rng.normal(2_000_000, 300_000, k3)
    np.save(directory / "latency.npy", latency.astype(np.int64))
    del latency
    np.save(directory / "t_send.npy", 1_000_000_000 + np.arange(n, dtype=np.int64) * 10_000)


def jitterlab_version(latency: np.ndarray, t_send: np.ndarray) -> dict[str, object]:
    """What ``jitterlab describe`` does with a run's samples: the summary in one pass, then the
    stacked test and the windows in two (stats/twopass.py), over (t_send, t_recv) chunks of a
    row group's size; t_recv is made a chunk at a time, as a row group is decoded."""
    step = 1 << 20

    def pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for i in range(0, latency.size, step):
            send = t_send[i : i + step]
            yield send, send + latency[i : i + step]

    summary = summarize_differences(
        pairs, lambda: (latency[i : i + step] for i in range(0, latency.size, step))
    )
    found = describe_two_pass(
        pairs,
        int(summary.min),
        int(summary.max),
        int(t_send.min()),
        int(t_send.max()),
        1_000_000_000,
        lambda table: stacked_z_table(table, 3.5, False) if table is not None else stacked_z_test(latency),
    )
    assert found is not None, "the two-pass path refused the sample"
    stacked, windows = found
    return {
        "p99": summary.p99,
        "categories": [c.count for c in stacked.categories],
        "windows": int(windows.count.size),
    }


def straightforward_version(latency: np.ndarray, t_send: np.ndarray) -> dict[str, object]:
    s = pd.Series(latency)
    summary = s.describe(percentiles=[0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999])
    # stacked modified z-score, written the obvious way
    thresholds = []
    current = s
    while True:
        median = current.median()
        mad = stats.median_abs_deviation(current.to_numpy())
        if mad == 0:
            break
        z = 0.6745 * (current - median) / mad
        outliers = current[z > 3.5]
        if outliers.empty:
            break
        thresholds.append(median + 3.5 * mad / 0.6745)
        current = outliers
    category = pd.cut(s, bins=[-np.inf, *thresholds, np.inf], labels=False)
    counts = category.value_counts().sort_index()
    frame = pd.DataFrame(
        {"latency": s, "window": (t_send - t_send[0]) // 1_000_000_000, "category": category}
    )
    grouped = frame.groupby("window")["latency"]
    table = grouped.agg(["count", "mean", "max"])
    table["p50"] = grouped.quantile(0.5)
    table["p99"] = grouped.quantile(0.99)
    per_window = frame.groupby(["window", "category"]).size().unstack(fill_value=0)
    return {
        "p99": float(summary["99%"]),
        "categories": counts.tolist(),
        "windows": int(len(table) + 0 * per_window.size),
    }


def duckdb_version(latency: np.ndarray, t_send: np.ndarray) -> dict[str, object]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("t", pa.table({"x": latency, "w": (t_send - t_send[0]) // 1_000_000_000}))
    summary = con.execute(
        "SELECT count(x), min(x), max(x), avg(x), stddev_pop(x), "
        "quantile_cont(x, [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]) FROM t"
    ).fetchone()
    assert summary is not None
    # the stacked modified z-score test: median and MAD of what lies above the last cut
    thresholds: list[float] = []
    while True:
        where = f"WHERE x > {thresholds[-1]}" if thresholds else ""
        median, mad, n = con.execute(f"SELECT median(x), mad(x), count(x) FROM t {where}").fetchone() or (
            0,
            0,
            0,
        )
        if not n or not mad:
            break
        cut = float(median) + 3.5 * float(mad) / 0.6745
        if con.execute(f"SELECT count(x) FROM t WHERE x > {cut}").fetchone() == (0,):
            break
        thresholds.append(cut)
    category = " + ".join(f"(x > {c})::INT" for c in thresholds) or "0"
    counts = con.execute(f"SELECT {category} AS c, count(*) FROM t GROUP BY c ORDER BY c").fetchall()
    per_category = ", ".join(f"count_if({category} = {k})" for k in range(len(thresholds) + 1))
    windows = con.execute(
        f"SELECT w, count(x), avg(x), quantile_cont(x, 0.5), quantile_cont(x, 0.99), max(x), {per_category} "
        "FROM t GROUP BY w ORDER BY w"
    ).fetchall()
    return {
        "p99": float(summary[5][2]),
        "categories": [int(c) for _k, c in counts],
        "windows": len(windows),
    }


def current_rss_kb() -> int:
    """Resident memory now (ru_maxrss is the peak so far, which imports inflate)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def child(which: str, directory: Path) -> None:
    before_load_kb = current_rss_kb()  # libraries imported, no data yet (the import peak may be higher)
    latency = np.load(directory / "latency.npy")
    t_send = np.load(directory / "t_send.npy")
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    versions = {
        "jitterlab": jitterlab_version,
        "straightforward": straightforward_version,
        "duckdb": duckdb_version,
    }
    result = versions[which](latency, t_send)
    elapsed = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "peak_bytes": peak_kb * 1024,
                "loaded_bytes": base_kb * 1024,
                "before_load_bytes": before_load_kb * 1024,
                "latency_bytes": latency.nbytes,
                "result": result,
            }
        )
    )


def run_child(which: str, directory: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100_000_000)
    parser.add_argument("--skip-baseline", action="store_true", help="time jitterlab only")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        print(f"generating {args.samples:,} samples…", file=sys.stderr)
        make_data(args.samples, directory)
        results = {"jitterlab": run_child("jitterlab", directory)}
        if not args.skip_baseline:
            print("running the straightforward pandas/scipy version…", file=sys.stderr)
            results["pandas/scipy"] = run_child("straightforward", directory)
            print("running DuckDB…", file=sys.stderr)
            results["duckdb"] = run_child("duckdb", directory)
    latency_bytes = float(results["jitterlab"]["latency_bytes"])  # type: ignore[arg-type]
    print(f"analysis of {args.samples:,} samples: summary + stacked z-test + 1 s windows")
    print("peak RSS counts from the resident size after the imports; the two input arrays are in it")
    print(f"{'contender':<14}{'time':>10}{'peak RSS':>12}{'÷ latency array':>17}{'categories':>26}")
    for name, r in results.items():
        peak = float(r["peak_bytes"]) - float(r["before_load_bytes"])  # type: ignore[arg-type]
        cats = r["result"]["categories"]  # type: ignore[index]
        print(
            f"{name:<14}{float(r['seconds']):>9.1f}s{peak / 1e9:>10.2f}GB{peak / latency_bytes:>16.2f}×{cats!s:>26}"
        )  # type: ignore[arg-type]
    j = results["jitterlab"]
    seconds = float(j["seconds"])  # type: ignore[arg-type]
    scaled = seconds * 100_000_000 / args.samples
    print(
        f"jitterlab time for 100 M samples (scaled): {scaled:.1f} s  target ≤ 30 s  {'ok' if scaled <= 30 else 'MISSED'}"
    )
    ratio_mem = (float(j["peak_bytes"]) - float(j["before_load_bytes"])) / latency_bytes  # type: ignore[arg-type]
    print(
        f"jitterlab peak memory ÷ latency array: {ratio_mem:.2f}  target ≤ 3  {'ok' if ratio_mem <= 3 else 'MISSED'}"
        f"  (the input arrays, latency and send times, are 2× of it; ÷ both inputs: {ratio_mem / 2:.2f})"
    )
    if "pandas/scipy" in results:
        speedup = float(results["pandas/scipy"]["seconds"]) / seconds  # type: ignore[arg-type]
        print(
            f"speed-up over pandas/scipy: {speedup:.1f}×  target ≥ 10×  {'ok' if speedup >= 10 else 'MISSED'}"
        )
        duck = float(results["duckdb"]["seconds"]) / seconds  # type: ignore[arg-type]
        print(f"speed-up over DuckDB: {duck:.1f}×  target ≥ 5×  {'ok' if duck >= 5 else 'MISSED'}")
        agree = len({str(r["result"]["categories"]) for r in results.values()}) == 1  # type: ignore[index]
        print(f"categories agree: {'yes' if agree else 'NO'}")
        others = {k: float(r["seconds"]) for k, r in results.items() if k != "jitterlab"}  # type: ignore[arg-type]
        best = min(others, key=others.__getitem__)
        ratio = others[best] / seconds
        print(
            f"speed-up over the best contender ({best}): {ratio:.1f}×  target > 1×  {'ok' if ratio > 1 else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
