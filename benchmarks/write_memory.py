"""Writes stream (issue 25 item 3): peak memory of the whole process tree while a large
recording becomes a stored run.

- ``jitterlab import`` of a CSV of ``--rows`` samples (``t_send_ns,t_recv_ns``; default
  100 M rows, about 3.6 GB), generated here chunk by chunk.
- The stop path of ``monitor serve`` holding ``--monitor-samples`` samples (default 28 M):
  its rolling parts merged into the run's samples file and summarised. Measured as
  ``jitterlab recover`` of a staging folder laid out as a killed serve leaves it (a draft
  run.json and one-second parts of 1 M samples), which runs the same code as the stop
  (``ResultsStore.commit_parts``) in a process of its own, so the figure is that path's
  alone, not the serve's drain loop.
- ``jitterlab net bench --scenario stream`` (udp, namespaces: needs root) of ``--net-samples``
  messages at each of two sizes (default 4 M and 16 M, in 4 steps: both past the 1 M records
  the sort holds in memory, so flat means flat beyond 4 M): the receiving agent hands
  its records over as parts about every second (protocol 3: it keeps none it handed over),
  the coordinator writes them to staging, and parts and final blocks are stored by the
  external merge sort. The tree includes the agents; the coordinator's own peak RSS is
  printed beside it, and the stored rows (a receiver that dropped records fails the case).
  ``--net-samples ""`` skips it.
- ``jitterlab export --format csv`` and ``--format parquet --from 0.1`` of a stored run of
  ``--export-samples`` samples (default 1 M and 4 M) to /dev/null: streamed, row group by
  row group.

Each is run ``--repeats`` times (default 3) and measured with ``treemem.run_measured``
(the sum of the RSS of the command and all its descendants, sampled every 20 ms); the
median and range are printed. Targets: ≤ 1 GB each. The stored run's summary is checked
against the generated data's (the count, and the exact p50/max).

    python benchmarks/write_memory.py [--rows 100000000] [--monitor-samples 28000000]
        [--net-samples 4000000,16000000] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).parent))
from jitterlab.store import ResultsStore
from jitterlab.store.recovery import recover_parts
from jitterlab.store.schema import run_meta
from treemem import median_range, run_measured

CHUNK = 1_000_000
# `python -m jitterlab ARGS` that prints its own peak RSS (the coordinator alone, no agent)
COORDINATOR = (
    "import atexit, resource, runpy, sys; "
    "atexit.register(lambda: print('coordinator maxrss kB', "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
    "sys.argv = ['jitterlab', *sys.argv[1:]]; runpy.run_module('jitterlab', run_name='__main__')"
)
TARGET_MB = 1000


def latencies(rng: np.random.Generator, n: int) -> np.ndarray:
    """A heavy-tailed mixture like the harness's: a body, a cluster, rare spikes."""
    body = rng.lognormal(np.log(2_000), 0.3, n)
    cluster = rng.random(n) < 0.01
    body[cluster] = rng.normal(50_000, 5_000, int(cluster.sum()))
    spikes = rng.random(n) < 1e-5
    body[spikes] = rng.uniform(1e6, 3e7, int(spikes.sum()))
    return np.maximum(body, 1).astype(np.int64)


def write_csv(path: Path, rows: int, seed: int) -> tuple[int, int]:
    """The CSV, chunk by chunk; (rows, the largest latency)."""
    rng = np.random.default_rng(seed)
    largest = 0
    with pacsv.CSVWriter(path, pa.schema([("t_send_ns", pa.int64()), ("t_recv_ns", pa.int64())])) as w:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            t_send = 1_000_000_000 + (start + np.arange(n, dtype=np.int64)) * 1_000
            latency = latencies(rng, n)
            largest = max(largest, int(latency.max()))
            w.write_table(pa.table({"t_send_ns": t_send, "t_recv_ns": t_send + latency}))
    return rows, largest


def monitor_staging(store: Path, samples: int, seed: int) -> int:
    """A staging folder as a killed ``monitor serve`` leaves it; returns the largest latency."""
    rs = ResultsStore(store)
    run_id = rs.new_run_id("monitor", "bench")
    staging = rs.staging_dir(run_id)
    rng = np.random.default_rng(seed)
    largest = 0
    for index, start in enumerate(range(0, samples, CHUNK)):
        n = min(CHUNK, samples - start)
        t_send = (start + np.arange(n, dtype=np.int64)) * 1_000
        latency = latencies(rng, n)
        largest = max(largest, int(latency.max()))
        rs.write_part(staging, index, t_send, t_send + latency, start)
    draft = run_meta(
        run_id,
        dt.datetime.now(dt.timezone.utc),
        environment=None,
        doctor=None,
        config={"runtime": "monitor", "technique": "bench", "pairs": 1, "policy": "other"},
        obtained={"warnings": []},
        floor={},
        timing={},
    )
    (staging / "run.draft.json").write_text(json.dumps(draft))
    return largest


def measure(label: str, cmd: list[str], repeats: int, prepare: object) -> list[tuple[float, int]]:
    out = []
    for _ in range(repeats):
        if callable(prepare):
            prepare()
        m = run_measured(cmd)
        if m.returncode != 0:
            raise SystemExit(f"{label} failed ({m.returncode}): {m.stderr.strip()[-500:]}")
        out.append((m.seconds, m.peak_tree_rss_bytes))
    return out


def report(label: str, results: list[tuple[float, int]]) -> None:
    t, t_lo, t_hi = median_range([s for s, _ in results])
    mb, mb_lo, mb_hi = median_range([b / 1e6 for _, b in results])
    print(f"{label}: time {t:.1f} s (range {t_lo:.1f}–{t_hi:.1f}), ", end="")
    print(f"peak tree RSS {mb:.0f} MB (range {mb_lo:.0f}–{mb_hi:.0f}), target ≤ {TARGET_MB} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--monitor-samples", type=int, default=28_000_000)
    parser.add_argument("--net-samples", default="4000000,16000000", help="stream sizes ('' skips)")
    parser.add_argument("--export-samples", default="1000000,4000000", help="export sizes ('' skips)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="import,monitor,net,export", help="which cases (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="2 M rows and 2 M monitor samples, once")
    parser.add_argument("--json", action="store_true", help="one object of the figures on the last line")
    args = parser.parse_args()
    if args.quick:  # all.py repeats the whole script
        args.rows, args.monitor_samples, args.repeats = 2_000_000, 2_000_000, 1
        args.net_samples = args.export_samples = "200000,400000"
    exe = [sys.executable, "-m", "jitterlab"]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="jl-write-memory-", dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        only = set(args.only.split(","))
        if "import" in only:
            csv_path = root / "samples.csv"
            rows, largest = write_csv(csv_path, args.rows, seed=1)
            print(f"CSV: {rows:,} rows, {csv_path.stat().st_size / 1e9:.2f} GB")
            stores = iter(range(args.repeats))
            import_results = []
            for _ in range(args.repeats):
                store = root / f"import-{next(stores)}"
                import_results += measure(
                    "import", [*exe, "import", str(csv_path), "--store", str(store)], 1, None
                )
                run = ResultsStore(store).runs()[0]
                summary = run.meta["summary"]["latency_ns"]
                assert summary["count"] == rows and summary["max"] == largest, summary
            csv_path.unlink()
            report(f"import of a {rows / 1e6:g} M-row CSV", import_results)
            figures["import_peak_mb"] = float(np.median([b / 1e6 for _, b in import_results]))
            figures["import_s"] = float(np.median([s for s, _ in import_results]))

        if "monitor" in only:
            store = root / "monitor"

            def prepare() -> None:
                monitor_staging(store, args.monitor_samples, seed=2)

            stop_results = measure("recover", [*exe, "recover", "--store", str(store)], args.repeats, prepare)
            runs = ResultsStore(store).runs()
            assert len(runs) == args.repeats and all(
                r.meta["summary"]["latency_ns"]["count"] == args.monitor_samples for r in runs
            )
            report(f"monitor stop with {args.monitor_samples / 1e6:g} M samples (parts → run)", stop_results)
            figures["monitor_stop_peak_mb"] = float(np.median([b / 1e6 for _, b in stop_results]))
            figures["monitor_stop_s"] = float(np.median([s for s, _ in stop_results]))
        for n in [int(x) for x in args.net_samples.split(",") if x and "net" in only]:
            net_results = []
            own = []
            stored = []
            for k in range(args.repeats):
                store = root / f"net-{n}-{k}"
                argv = ["net", "bench", "--scenario", "stream", "--transport", "udp", "--store", str(store)]
                argv += ["--samples", str(n // 4), "--steps", "4"]
                m = run_measured([sys.executable, "-c", COORDINATOR, *argv])
                if m.returncode != 0:
                    raise SystemExit(f"net bench failed ({m.returncode}): {m.stderr.strip()[-500:]}")
                net_results.append((m.seconds, m.peak_tree_rss_bytes))
                own.append(int(m.stderr.rsplit("coordinator maxrss kB ", 1)[1].split()[0]) * 1e3)
                run = ResultsStore(store).runs()[0]
                # every message the receiver got is stored: before protocol 3 a receiver kept
                # at most 4 M records and dropped the rest (counted, the run still "complete")
                dropped = run.meta["net"].get("receiver_records_dropped", 0)
                assert run.meta["samples"]["rows"] > 0 and dropped == 0, run.meta["net"]
                stored.append(run.meta["samples"]["rows"])
            label = f"net bench stream of {n / 1e6:g} M messages (blocks → run)"
            report(label, net_results)
            print(f"{label}: stored rows {min(stored):,}–{max(stored):,}, load {os.getloadavg()[0]:.2f}")
            mb, lo, hi = median_range([b / 1e6 for b in own])
            print(f"{label}: coordinator peak RSS {mb:.0f} MB (range {lo:.0f}–{hi:.0f})")
            figures[f"net_stream_{n}_peak_mb"] = float(np.median([b / 1e6 for _, b in net_results]))
            figures[f"net_stream_{n}_coordinator_mb"] = mb
        for n in [int(x) for x in args.export_samples.split(",") if x and "export" in only]:
            store = root / f"export-{n}"
            rs = ResultsStore(store)
            monitor_staging(store, n, seed=3)
            run = recover_parts(rs, rs.leftovers()[0])
            assert run is not None
            for fmt, extra in (("csv", []), ("parquet", ["--from", "0.1"])):
                cmd = [
                    *exe,
                    "export",
                    run.id,
                    "--format",
                    fmt,
                    *extra,
                    "-o",
                    os.devnull,
                    "--store",
                    str(store),
                ]
                label = f"export --format {fmt}{' --from 0.1' if extra else ''} of {n / 1e6:g} M samples"
                results = measure(label, cmd, args.repeats, None)
                report(label, results)
                figures[f"export_{fmt}_{n}_peak_mb"] = float(np.median([b / 1e6 for _, b in results]))
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
