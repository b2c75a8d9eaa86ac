"""Scale: `jitterlab show` and `describe` of one stored run of N samples against DuckDB's
exact quantiles and pandas on the same Parquet file, side by side, N = 10⁶ → 10⁸ (10⁹ with
--full); issue 25's Targets.

The run is generated here in bounded memory, chunk by chunk, straight into a store through
``store.writer.SampleWriter`` and ``ResultsStore.publish_samples`` (the path every producer
takes): 16 pairs, one sample per pair every 10 µs, latencies from a heavy-tailed mixture like
the harness's — a lognormal body near 4 µs (97 %), a cluster near 25 µs (2.9 %) and spikes
log-uniform from 50 µs to 30 ms (0.1 %) — with a fixed seed per chunk.

Contenders, each run as its own process (``benchmarks/treemem.py``: wall time and the peak
RSS of the whole process tree), ``--repeats`` times (median and range):

- ``jitterlab show RUN --json``: count, min, max, mean, std and p50…p99.999 (exact, type 7),
  as users get it: the samples file checked against run.json (size, SHA-256), then the
  summary stored at commit;
- ``jitterlab show RUN --json --recompute``: the same figures computed again from every
  sample, in row groups (the streamed exact path that describe, compare and export use);
- ``jitterlab describe RUN --json``: stacked-z categories and 1 s windows;
- DuckDB: the same statistics in one SQL statement over the same file — ``quantile_cont``
  is type-7 linear interpolation, ``stddev_pop`` the population deviation — so the values
  must agree with ``show``'s (checked and printed: ``values agree``);
- pandas (N ≤ 10⁷ unless ``--pandas-up-to``: it holds the columns): ``read_parquet`` of the two time columns,
  ``quantile`` (linear), ``mean``, ``std(ddof=0)``.

Printed: a line per contender and size, the ratios DuckDB/show and pandas/show, the scale
curve as a table (seconds and peak MB per size: time should grow linearly, memory stay
flat) and as a plot (PNG, ``--plot``). ``--json`` prints one object of named figures.
Targets (issue 25): at 10⁹ show ≤ 10 s, describe ≤ 60 s, tree peak ≤ 2 GB, ≥ 5× DuckDB;
at 10⁸ ≥ 5× DuckDB and ≥ 10× pandas (pandas is only run to 10⁷ here, and the ratio at 10⁷
is printed).

Disk: about 2.2 bytes per sample (delta-packed Parquet): 10⁸ → 220 MB, 10⁹ → 2.2 GB; the
store is deleted at the end unless ``--keep``. ``--reuse DIR`` keeps each size's run in
``DIR/scale-1eN`` (a store) and reuses it the next time (the 10⁹ run takes minutes to make);
benchmarks/engine_against.py reads the same folders.

Usage: python benchmarks/scale.py [--quick] [--full] [--sizes 1e6,1e7] [--repeats 3] [--reuse DIR] [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from treemem import median_range, run_measured

PAIRS = 16
PERIOD_NS = 10_000  # one sample per pair every 10 µs
CHUNK = 1 << 20
PS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
SUMMARY_KEYS = ("p50", "p90", "p99", "p99_9", "p99_99", "p99_999")
PANDAS_UP_TO = 10_000_000

DUCKDB_SCRIPT = """
import json, sys, duckdb
con = duckdb.connect()
con.execute("SET threads TO 2")
con.execute("SET enable_progress_bar = false")
row = con.execute(
    "SELECT count(*), min(l), max(l), avg(l), stddev_pop(l), quantile_cont(l, [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]) "
    "FROM (SELECT t_recv_ns - t_send_ns AS l FROM read_parquet(?))",
    [sys.argv[1]],
).fetchone()
print(json.dumps({"count": row[0], "min": row[1], "max": row[2], "mean": row[3], "std": row[4], "ps": list(row[5])}))
"""

PANDAS_SCRIPT = """
import json, sys
import pandas as pd
df = pd.read_parquet(sys.argv[1], columns=["t_send_ns", "t_recv_ns"])
l = df["t_recv_ns"] - df["t_send_ns"]
q = l.quantile([0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]).tolist()
print(json.dumps({"count": int(l.size), "min": int(l.min()), "max": int(l.max()), "mean": float(l.mean()),
                  "std": float(l.std(ddof=0)), "ps": q}))
"""


def latencies(rng: np.random.Generator, n: int) -> np.ndarray:
    """n latencies (ns) of the heavy-tailed mixture (see the module docs)."""
    u = rng.random(n)
    body = rng.lognormal(np.log(4_000), 0.25, n)
    cluster = rng.normal(25_000, 3_000, n)
    spikes = np.exp(rng.uniform(np.log(50_000), np.log(30_000_000), n))
    out = np.where(u < 0.97, body, np.where(u < 0.999, cluster, spikes))
    return np.maximum(out, 200).astype(np.int64)


def generate(store_root: Path, n: int, seed: int = 2025) -> str:
    """Store a run of n samples (bounded memory: one chunk at a time); returns its id."""
    from jitterlab.store import ResultsStore
    from jitterlab.store.schema import SAMPLES_FILE, run_meta
    from jitterlab.store.writer import SampleWriter

    store = ResultsStore(store_root)
    run_id = store.new_run_id("scale", f"n{n}", f"s{seed}")
    staging = store.staging_dir(run_id)
    t0 = 1_000_000_000
    with SampleWriter(staging / SAMPLES_FILE, run_id) as writer:
        for index, start in enumerate(range(0, n, CHUNK)):
            rng = np.random.default_rng([seed, index])
            i = np.arange(start, min(start + CHUNK, n), dtype=np.int64)
            pair = (i % PAIRS).astype(np.int32)
            seq = i // PAIRS
            t_send = t0 + seq * PERIOD_NS + pair * (PERIOD_NS // PAIRS)
            writer.write(pair, seq, t_send, t_send + latencies(rng, i.size))
    last = t0 + (n // PAIRS + 1) * PERIOD_NS
    meta = run_meta(
        run_id,
        dt.datetime.now(dt.timezone.utc),
        environment=None,
        doctor=None,
        config={"runtime": "synthetic", "technique": "scale", "pairs": PAIRS, "samples": n // PAIRS},
        timing={"t_start_ns": t0, "t_end_ns": last},
    )
    store.publish_samples(staging, meta, writer)
    return run_id


def size_name(n: int) -> str:
    """1e9 for 10⁹, the number itself otherwise (the folder names under ``--reuse``)."""
    digits = str(n)
    return f"1e{len(digits) - 1}" if digits.strip("0") == "1" else digits


def kept(store_root: Path, n: int, seed: int = 2025) -> str:
    """The run of n samples made with ``seed`` in the store at ``store_root``, made there (and
    kept) the first time: a 10⁹ run takes minutes to generate and 2.2 GB of disk, so later
    runs of the benchmark reuse it. A run is only reused once committed (a generation that was
    interrupted leaves nothing in the store but its staging folder)."""
    for run_json in sorted(store_root.glob(f"*-scale-n{n}-s{seed}-*/run.json")):
        return run_json.parent.name
    return generate(store_root, n, seed)


def measure(cmd: list[str], repeats: int, env: dict[str, str]) -> tuple[list[float], list[float], str]:
    """Seconds and peak tree MB of ``repeats`` runs of cmd, and the last run's stdout."""
    seconds, peaks, out = [], [], ""
    for _ in range(repeats):
        m = run_measured(cmd, env=env)
        if m.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:3])}… failed ({m.returncode}): {m.stderr.strip()[-400:]}")
        seconds.append(m.seconds)
        peaks.append(m.peak_tree_rss_bytes / 1e6)
        out = m.stdout
    return seconds, peaks, out


def agree(ours: dict[str, float], theirs: dict[str, object]) -> bool:
    """The contender's values equal show's: count and extremes exactly; percentiles, mean and
    std to 1e-9 relative (the same order statistics, but the interpolation weight is
    (n − 1)·p/100 here and (n − 1)·q there, and sums are added in another order)."""
    ps = [float(v) for v in theirs["ps"]]  # type: ignore[attr-defined]
    pairs = [(ours[k], v) for k, v in zip(SUMMARY_KEYS, ps, strict=True)]
    pairs += [(ours["mean"], float(theirs["mean"])), (ours["std"], float(theirs["std"]))]  # type: ignore[arg-type]
    exact = all(ours[k] == theirs[k] for k in ("count", "min", "max"))
    return exact and all(abs(a - b) <= 1e-9 * abs(a) for a, b in pairs)


def last_json(out: str) -> dict[str, object]:
    """The JSON object a contender printed last (DuckDB may print progress before it)."""
    text = out.strip()
    try:
        return dict(json.loads(text))
    except json.JSONDecodeError:
        return dict(json.loads(text.splitlines()[-1]))


def fmt(values: list[float], digits: int = 2) -> str:
    mid, lo, hi = median_range(values)
    return f"{mid:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 10⁶ and 10⁷ only")
    parser.add_argument("--full", action="store_true", help="up to 10⁹ (13 GB of disk, announce it first)")
    parser.add_argument("--sizes", help="comma-separated sample counts (e.g. 1e6,1e7)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--no-describe", action="store_true", help="leave describe out (it may not stream yet)"
    )
    parser.add_argument(
        "--describe-up-to", type=float, default=None, help="run describe only up to this size (e.g. 1e8)"
    )
    parser.add_argument(
        "--pandas-up-to",
        type=float,
        default=PANDAS_UP_TO,
        help="run pandas up to this size (it holds the columns)",
    )
    parser.add_argument("--plot", default=None, help="PNG of the scale curve (default: in the temp folder)")
    parser.add_argument("--dir", default=None, help="where the generated store goes (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated store")
    parser.add_argument(
        "--reuse",
        type=Path,
        metavar="DIR",
        help="keep each size's run in DIR/scale-1eN and reuse it next time (10⁹: 2.2 GB, minutes to make)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object of named figures")
    args = parser.parse_args()
    if args.sizes:
        sizes = [int(float(s)) for s in args.sizes.split(",")]
    elif args.quick:
        sizes = [10**6, 10**7]
    else:
        sizes = [10**6, 10**7, 10**8] + ([10**9] if args.full else [])
    if args.repeats < 1 or any(n < PAIRS for n in sizes):
        print(f"scale.py: --repeats must be ≥ 1 and every size ≥ {PAIRS}", file=sys.stderr)
        return 2

    root = Path(tempfile.mkdtemp(prefix="jl-scale-", dir=args.dir))
    env = dict(os.environ, JITTERLAB_STORE=str(root / "store"))
    jl = [sys.executable, "-m", "jitterlab"]
    rows: list[dict[str, object]] = []
    figures: dict[str, float] = {}
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    try:
        for n in sizes:
            store_root = args.reuse / f"scale-{size_name(n)}" if args.reuse else root / "store"
            run_id = kept(store_root, n) if args.reuse else generate(store_root, n)
            from jitterlab.store import ResultsStore

            path = ResultsStore(store_root).resolve(run_id) / "samples.parquet"
            store_args = ["--store", str(store_root)]
            row: dict[str, object] = {"n": n, "file_mb": path.stat().st_size / 1e6}
            s_show, m_show, out = measure([*jl, "show", run_id, "--json", *store_args], args.repeats, env)
            ours = json.loads(out)["summary_ns"]
            row["show"] = (s_show, m_show)
            say(f"N {n:.0e} show      {fmt(s_show)} s, peak {fmt(m_show, 0)} MB")
            s_again, m_again, out = measure(
                [*jl, "show", run_id, "--json", "--recompute", *store_args], args.repeats, env
            )
            if json.loads(out)["summary_ns"] != ours:
                say(f"N {n:.0e} show --recompute DIFFERS from the stored summary")
            row["recompute"] = (s_again, m_again)
            say(f"N {n:.0e} recompute {fmt(s_again)} s, peak {fmt(m_again, 0)} MB (show --recompute)")
            if not args.no_describe and (args.describe_up_to is None or n <= args.describe_up_to):
                s_desc, m_desc, _ = measure(
                    [*jl, "describe", run_id, "--json", "--window", "1s", *store_args], args.repeats, env
                )
                row["describe"] = (s_desc, m_desc)
                say(f"N {n:.0e} describe  {fmt(s_desc)} s, peak {fmt(m_desc, 0)} MB")
            s_duck, m_duck, out = measure([sys.executable, "-c", DUCKDB_SCRIPT, str(path)], args.repeats, env)
            row["duckdb"] = (s_duck, m_duck)
            duck_same = agree(ours, last_json(out))
            say(
                f"N {n:.0e} duckdb    {fmt(s_duck)} s, peak {fmt(m_duck, 0)} MB, values agree: {'yes' if duck_same else 'NO'}"
            )
            ratio = statistics.median(s_duck) / statistics.median(s_show)
            ratio_again = statistics.median(s_duck) / statistics.median(s_again)
            say(f"N {n:.0e} ratio duckdb/show {ratio:.2f}×, duckdb/recompute {ratio_again:.2f}×")
            figures[f"duckdb_over_show_{n:.0e}"] = ratio
            figures[f"duckdb_over_recompute_{n:.0e}"] = ratio_again
            figures[f"show_s_{n:.0e}"] = statistics.median(s_show)
            figures[f"show_peak_mb_{n:.0e}"] = statistics.median(m_show)
            if n <= args.pandas_up_to:
                s_pd, m_pd, out = measure([sys.executable, "-c", PANDAS_SCRIPT, str(path)], args.repeats, env)
                row["pandas"] = (s_pd, m_pd)
                pd_same = agree(ours, last_json(out))
                ratio_pd = statistics.median(s_pd) / statistics.median(s_show)
                say(
                    f"N {n:.0e} pandas    {fmt(s_pd)} s, peak {fmt(m_pd, 0)} MB, values agree: {'yes' if pd_same else 'NO'}"
                )
                say(f"N {n:.0e} ratio pandas/show {ratio_pd:.2f}×")
                figures[f"pandas_over_show_{n:.0e}"] = ratio_pd
            rows.append(row)
            if not args.reuse:
                shutil.rmtree(ResultsStore(store_root).resolve(run_id))  # disk: one size at a time
        say("")
        say(table(rows))
        plot_path = Path(args.plot) if args.plot else root.parent / f"{root.name}-curve.png"
        draw(rows, plot_path)
        say(f"scale curve plot: {plot_path}")
        if args.json:
            print(json.dumps({"figures": figures, "rows": rows, "plot": str(plot_path)}, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def table(rows: list[dict[str, object]]) -> str:
    """The scale curve: median seconds and peak MB per contender and size."""
    names = ["show", "recompute", "describe", "duckdb", "pandas"]
    head = f"{'N':>8} {'file MB':>8} " + " ".join(f"{n + ' s':>12} {n + ' MB':>12}" for n in names)
    lines = [head]
    for r in rows:
        cells = []
        for name in names:
            if name in r:
                s, m = r[name]  # type: ignore[misc]
                cells.append(f"{statistics.median(s):12.2f} {statistics.median(m):12.0f}")
            else:
                cells.append(f"{'—':>12} {'—':>12}")
        lines.append(f"{r['n']:>8.0e} {r['file_mb']:>8.0f} " + " ".join(cells))  # type: ignore[str-format]
    return "\n".join(lines)


def draw(rows: list[dict[str, object]], path: Path) -> None:
    """Seconds and peak MB against N, log-log, one line per contender."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for name in ("show", "recompute", "describe", "duckdb", "pandas"):
        pts = [(r["n"], r[name]) for r in rows if name in r]
        if not pts:
            continue
        ns = [p[0] for p in pts]
        ax_t.plot(ns, [statistics.median(p[1][0]) for p in pts], "o-", label=name)  # type: ignore[index]
        ax_m.plot(ns, [statistics.median(p[1][1]) for p in pts], "o-", label=name)  # type: ignore[index]
    for ax, label in ((ax_t, "seconds (median)"), (ax_m, "peak tree memory (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("samples in the run")
        ax.set_ylabel(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=96)


if __name__ == "__main__":
    raise SystemExit(main())
