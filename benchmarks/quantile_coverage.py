"""Coverage of the percentile intervals (stats/quantile_ci.py) by simulation.

Three processes with known quantiles, each replicate seeded:

- ``iid``: independent log-normal latencies (median 20 µs, σ_log 0.5);
- ``ar1``: the same log-normal marginal with AR(1) log latency (φ = 0.9): dependence at
  every level;
- ``spikes``: a two-state Markov chain (normal / spike; spikes 2 % of the time in bursts
  of 10 samples on average), log-normal latencies in each state (20 µs, σ 0.3; 500 µs,
  σ 0.5): the marginal is their mixture, its quantiles found by bisection.

For each process, replicate and level (p50, p99, p99.9) the table counts how often the
nominal 95 % interval covers the true quantile: ``auto`` (the method the data decide, as
every output uses), ``binomial`` (the independent-samples interval forced: it undercovers
on the dependent processes) and ``block`` (forced).

    python benchmarks/quantile_coverage.py                  # full size: n = 10^5, 1000 replicates
    python benchmarks/quantile_coverage.py --n 20000 --replicates 400   # the suite's size

The suite (tests/stats/test_quantile_ci.py) runs the same functions at a budget size with
fixed seeds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from jitterlab.stats import quantile_ci as qc

LEVELS = (50.0, 99.0, 99.9)
MU = math.log(20_000.0)
SIGMA = 0.5
PHI = 0.9
SPIKE_SHARE = 0.02
BURST = 10.0  # mean samples per spike burst
BASE = (math.log(20_000.0), 0.3)
SPIKE = (math.log(500_000.0), 0.5)


def iid(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.exp(MU + SIGMA * rng.standard_normal(n))


def ar1(n: int, rng: np.random.Generator) -> np.ndarray:
    from scipy.signal import lfilter

    e = rng.standard_normal(n) * SIGMA * math.sqrt(1 - PHI**2)
    y0 = rng.standard_normal() * SIGMA
    y, _ = lfilter([1.0], [1.0, -PHI], e, zi=[PHI * y0])
    return np.asarray(np.exp(MU + y))


def spikes(n: int, rng: np.random.Generator) -> np.ndarray:
    leave_spike = 1.0 / BURST
    enter_spike = SPIKE_SHARE * leave_spike / (1 - SPIKE_SHARE)
    state = np.zeros(n, dtype=bool)
    pos, spiking = 0, bool(rng.random() < SPIKE_SHARE)
    while pos < n:
        length = int(rng.geometric(leave_spike if spiking else enter_spike))
        if spiking:
            state[pos : pos + length] = True
        pos += length
        spiking = not spiking
    z = rng.standard_normal(n)
    return np.exp(np.where(state, SPIKE[0] + SPIKE[1] * z, BASE[0] + BASE[1] * z))


def true_quantile(process: str, level: float) -> float:
    q = level / 100.0
    if process in ("iid", "ar1"):
        return math.exp(MU + SIGMA * NormalDist().inv_cdf(q))
    normal = NormalDist()

    def cdf(log_x: float) -> float:
        return (1 - SPIKE_SHARE) * normal.cdf((log_x - BASE[0]) / BASE[1]) + SPIKE_SHARE * normal.cdf(
            (log_x - SPIKE[0]) / SPIKE[1]
        )

    lo, hi = BASE[0] - 10, SPIKE[0] + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return math.exp((lo + hi) / 2)


PROCESSES: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "iid": iid,
    "ar1": ar1,
    "spikes": spikes,
}
METHODS = ("auto", "binomial", "block")


def forced(x: np.ndarray, method: str) -> list[qc.QuantileInterval]:
    """The intervals of ``x`` with the method the data decide (``auto``) or one forced."""
    return qc.intervals_of_sample(x, LEVELS, method=None if method == "auto" else method)


def coverage(
    process: str, n: int, replicates: int, seed: int = 1, methods: tuple[str, ...] = METHODS
) -> dict[str, dict[float, float]]:
    """Per method and level, the share of ``replicates`` whose interval covers the true
    quantile (replicate i seeded ``seed``·10^6 + i)."""
    truth = {lv: true_quantile(process, lv) for lv in LEVELS}
    hits = {m: dict.fromkeys(LEVELS, 0) for m in methods}
    for i in range(replicates):
        x = PROCESSES[process](n, np.random.default_rng(seed * 1_000_000 + i))
        for m in methods:
            for q in forced(x, m):
                lo = -math.inf if q.ci_low is None else q.ci_low
                hi = math.inf if q.ci_high is None else q.ci_high
                hits[m][q.level] += int(lo <= truth[q.level] <= hi)
    return {m: {lv: h / replicates for lv, h in per.items()} for m, per in hits.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="samples per replicate")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"# nominal 95 % intervals, n = {args.n:,}, {args.replicates:,} replicates, seed {args.seed}")
    print("| method | process | p50 | p99 | p99.9 |")
    print("|---|---|---|---|---|")
    for process in PROCESSES:
        start = time.perf_counter()
        table = coverage(process, args.n, args.replicates, args.seed)
        for m, per in table.items():
            cells = " | ".join(f"{100 * per[lv]:.1f} %" for lv in LEVELS)
            print(f"| {m} | {process} | {cells} |")
        print(f"# {process}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
