"""Harness floor: how close the harness gets to the machine's own limits, in one run.

Prints, side by side:
- spsc one-way p50 ÷ core-to-core (cache-line ping-pong) one-way p50   (target ≤ 1.3)
- cost per sample with recording on ÷ recording off                     (target ≤ 1.05)
- the clock-read overhead

spsc runs in pure-channel mode (``--block-ints 0``: no shared-block access, which would
add cache misses by design) with sender and receiver on different CPUs, like the c2c
ping-pong. The c2c floor is the one each spsc run measures at its start (same process, same vCPUs),
and the ratio is the median over repeats. Recording on/off runs alternate so drift hits
both alike; the medians of the repeats are compared.

Usage: python benchmarks/harness_floor.py [--samples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.programs import native_program
from jitterlab.store.rawfile import read_raw_samples


def run_harness(*args: str) -> tuple[dict[str, Any], np.ndarray]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [str(native_program("jitterlab-bench")), *args, "--out", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        meta = json.loads((Path(out) / "harness.json").read_text())
        records = read_raw_samples(Path(out) / "samples.jlraw").records
        return meta, records["t_recv_ns"] - records["t_send_ns"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    common = ["--technique", "spsc", "--pairs", "1", "--block-ints", "0", "--pin", "spread"]

    # Each spsc run measures the c2c floor itself at its start, in the same process and on
    # the same vCPUs; a separate c2c run can land on other host cores and differ by 50 %.
    ratios, spsc_p50s, c2c_p50s = [], [], []
    for _ in range(args.repeats):
        meta, spsc = run_harness(*common, "--samples", str(args.samples), "--floor-round-trips", "100000")
        spsc_p50s.append(float(np.median(spsc)))
        c2c_p50s.append(float(meta["floor"]["c2c_one_way_ns"]["median"]))
        ratios.append(spsc_p50s[-1] / c2c_p50s[-1])
    _, c2c_alone = run_harness("--technique", "c2c", "--samples", str(args.samples))
    spsc_meta = meta
    c2c_p50 = statistics.median(c2c_p50s)
    spsc_p50 = statistics.median(spsc_p50s)

    per_sample: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeats):
        for record in (True, False):
            meta, _ = run_harness(
                *common, "--samples", str(args.samples), *([] if record else ["--no-record"])
            )
            rounds = args.samples + int(meta["warmup"])
            per_sample[record].append((meta["t_end_ns"] - meta["t_start_ns"]) / rounds)
    on = statistics.median(per_sample[True])
    off = statistics.median(per_sample[False])
    clock = spsc_meta["floor"]["clock_overhead_ns"]

    print(f"harness floor on this machine ({args.samples} samples, {args.repeats} repeats of on/off)")
    print(f"  core-to-core one-way p50 (floor of each run, median)  {c2c_p50:8.0f} ns")
    print(f"  core-to-core one-way p50 (separate c2c run)           {float(np.median(c2c_alone)):8.0f} ns")
    print(f"  spsc one-way p50 (pure channel, spread, median)       {spsc_p50:8.0f} ns")
    print(
        f"  clock read (back-to-back) median          {clock['median']:8.0f} ns   min {clock['min']:.0f} ns"
    )
    print(f"  cost per sample, recording on             {on:8.1f} ns")
    print(f"  cost per sample, recording off            {off:8.1f} ns   (difference {on - off:+.1f} ns)")
    print(f"  spsc/c2c per repeat: {', '.join(f'{r:.2f}' for r in ratios)}")
    ratio_c2c = statistics.median(ratios)
    ratio_rec = on / off
    print(
        f"spsc/c2c one-way p50 ratio       {ratio_c2c:5.2f}  target ≤ 1.30  {'ok' if ratio_c2c <= 1.3 else 'MISSED'}"
    )
    print(
        f"recording on/off cost ratio      {ratio_rec:5.3f}  target ≤ 1.05  {'ok' if ratio_rec <= 1.05 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
