"""Replication scaling targets (issue 15), measured in one run.

Contenders:
- ``jitterlab repl bench`` (the native server and client fleet) at N = 2, 5, 10, 25 and 125,
  90 Hz, server tick 120 Hz, 144-byte poses;
- a plain Python load generator (one thread, ``time.sleep`` pacing, 125 UDP sockets at
  90 Hz to a sink that nobody reads, so it does strictly less work than the native fleet):
  its schedule lag beside the native pacer's, the reason the generator is native.

Targets:
- N ≤ 25 at 90 Hz: mean update interval within 5 % of 1000/90 ms, and server-in bytes/s
  within 2 % of Table 1 (payload × rate × N);
- N = 125 at 90 Hz: generator lag p99 < 1 ms;
- the knee (first N whose server ticks/s fall below 98 % of the tick rate) and its cause.

Usage: python benchmarks/repl_scaling.py [--duration 10] [--store DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import tempfile
import time
from pathlib import Path

import numpy as np

from jitterlab.describe.replication import describe_replication, find_knee, replication_text
from jitterlab.measure.runner import run_plan
from jitterlab.repl.bench import ReplOptions, scaling_plan
from jitterlab.store import ResultsStore

RATE_HZ = 90.0
PAYLOAD = 144


def python_generator_lag(clients: int, seconds: float) -> np.ndarray:
    """Schedule lag (ns) of a straightforward Python generator: the same even schedule as
    the native pacer, one ``sendto`` per pose."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    address = sink.getsockname()
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(clients)]
    pose = bytes(PAYLOAD)
    events = int(seconds * RATE_HZ * clients)
    lag = np.empty(events, np.int64)
    step = 1e9 / (RATE_HZ * clients)
    t0 = time.monotonic_ns() + 50_000_000
    try:
        for j in range(events):
            due = t0 + int(j * step)
            wait = due - time.monotonic_ns()
            if wait > 0:
                time.sleep(wait / 1e9)
            now = time.monotonic_ns()
            with contextlib.suppress(BlockingIOError):  # a full buffer: the pose is dropped, as UDP would
                sockets[j % clients].sendto(pose, address)
            lag[j] = now - due
    finally:
        for s in sockets:
            s.close()
        sink.close()
    return lag


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per N (10)")
    parser.add_argument("--store", type=Path, help="results store (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultsStore(args.store or Path(tmp) / "results")
        o = ReplOptions(
            clients=(2, 5, 10, 25, 125), rate_hz=RATE_HZ, payload=PAYLOAD, duration_s=args.duration
        )
        outcome = run_plan(scaling_plan(o), store)
        if outcome.interrupted:
            return outcome.exit_code
        runs = outcome.runs
        print(replication_text(runs))
        rows = {r.clients: r for r in (describe_replication(run) for run in runs)}
        python_lag = python_generator_lag(125, args.duration)

    print("\ntargets")
    ok = True
    expected_interval = 1000.0 / RATE_HZ
    for n in (2, 5, 10, 25):
        r = rows[n]
        interval_error = r.interval_ms.mean / expected_interval - 1
        in_error = r.rates["server_in"] / r.predicted["server_in"] - 1
        good = abs(interval_error) <= 0.05 and abs(in_error) <= 0.02
        ok &= good
        print(
            f"  N={n:>3}: mean update interval {r.interval_ms.mean:.2f} ms ({interval_error:+.1%} of "
            f"{expected_interval:.2f}, target ±5 %); server in {r.rates['server_in'] / 1000:.1f} KB/s "
            f"({in_error:+.2%} of Table 1, target ±2 %)  {'met' if good else 'MISSED'}"
        )
    native_p99 = rows[125].lag_p99_ms
    python_p99 = float(np.percentile(python_lag, 99)) / 1e6
    good = native_p99 < 1.0
    ok &= good
    print(
        f"  N=125: native generator lag p99 {native_p99:.3f} ms (target < 1 ms)  {'met' if good else 'MISSED'}; "
        f"plain Python generator p99 {python_p99:.3f} ms, max {python_lag.max() / 1e6:.1f} ms "
        f"(ratio {python_p99 / max(native_p99, 1e-9):.0f}×)"
    )
    knee = find_knee(list(rows.values()))
    print(f"  knee: {knee.clients if knee.clients else 'none'}; causes: {'; '.join(knee.causes) or '-'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
