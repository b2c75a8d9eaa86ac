"""Intervals on percentiles and the resolution rule (stats/quantile_ci.py; issue 38 items 3–4).

The coverage simulation runs here at a budget size with fixed seeds; the full size is
benchmarks/quantile_coverage.py (docs/results/quantile-coverage.md has its table).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from jitterlab.stats import quantile_ci as qc
from jitterlab.stats.scan import LocalScan

_spec = importlib.util.spec_from_file_location(
    "quantile_coverage", Path(__file__).parents[2] / "benchmarks" / "quantile_coverage.py"
)
assert _spec is not None and _spec.loader is not None
coverage_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage_bench)


def test_the_resolution_rule_needs_ten_samples_beyond_a_level() -> None:
    assert qc.is_resolved(200_000, 99.99)  # 20 beyond
    assert qc.is_resolved(200_000, 99.995)  # exactly 10 beyond
    assert not qc.is_resolved(200_000, 99.996)
    assert not qc.is_resolved(200_000, 99.99999)
    assert not qc.is_resolved(10, 99.9)
    assert qc.is_resolved(10_000, 99.9) and not qc.is_resolved(9_999, 99.9)
    assert not qc.is_resolved(10**9, 100.0)  # the maximum is a sample, not an estimate
    assert qc.resolvable_level(200_000) == pytest.approx(99.995)


@pytest.mark.parametrize(
    ("n", "level"), [(25, 50.0), (1_000, 90.0), (5_000, 99.0), (20_000, 99.9), (97, 10.0)]
)
def test_binomial_interval_equals_scipys_quantile_test(n: int, level: float) -> None:
    from scipy import stats

    x = np.random.default_rng(n).standard_normal(n)
    ordered = np.sort(x)
    lo, hi = qc.binomial_ranks(n, level)
    ci = stats.quantile_test(x, q=0.0, p=level / 100).confidence_interval(0.95)
    assert ordered[lo] == ci.low
    assert ordered[hi] == ci.high


def test_binomial_ranks_cover_at_least_the_confidence() -> None:
    from scipy.special import bdtr

    for n, level in [(10_000, 99.9), (200_000, 99.99), (1_000, 50.0)]:
        lo, hi = qc.binomial_ranks(n, level)
        p = level / 100
        # x(lo) <= q < x(hi) (0-based) ⟺ lo + 1 <= B <= hi, B ~ Binomial(n, p)
        covered = bdtr(hi, n, p) - bdtr(lo, n, p)
        assert 0.95 <= covered < 0.98  # conservative by the discreteness of B only


def test_an_unresolved_level_is_a_lower_bound_never_a_value() -> None:
    x = np.random.default_rng(3).lognormal(10, 0.5, 200_000)
    q99_99999, q99_99, top = qc.intervals_of_sample(x, (99.99999, 99.99, 100.0))
    assert not q99_99999.resolved and q99_99999.value is None and q99_99999.ci_high is None
    assert q99_99999.ci_low == x.max()  # "≥ the maximum of 200 000"
    assert q99_99.resolved and q99_99.ci_low is not None and q99_99.ci_high is not None
    assert q99_99.ci_low <= q99_99.value <= q99_99.ci_high  # type: ignore[operator]
    assert top.method == qc.MAXIMUM and top.value == x.max() and top.ci_low is None
    tiny = qc.intervals_of_sample(np.array([5.0, 1, 2, 3, 4, 6, 7, 8, 9, 10]), (99.9,))[0]
    assert not tiny.resolved and tiny.ci_low == 10.0 and tiny.value is None


def test_the_method_is_decided_by_the_data() -> None:
    iid = coverage_bench.iid(100_000, np.random.default_rng(7))
    spikes = coverage_bench.spikes(100_000, np.random.default_rng(7))
    ar1 = coverage_bench.ar1(100_000, np.random.default_rng(7))
    assert iid.size == 100_000
    # independent samples: the test (at 5 %) picks the block method about one time in 20
    chosen = [
        q.method
        for seed in range(40)
        for q in qc.intervals_of_sample(
            coverage_bench.iid(20_000, np.random.default_rng(seed)), (50.0, 99.0, 99.9)
        )
    ]
    assert chosen.count("block") <= 12 and chosen.count("binomial") + chosen.count("block") == 120
    assert [q.method for q in qc.intervals_of_sample(ar1, (50.0, 99.0, 99.9))] == ["block"] * 3
    dependent = qc.intervals_of_sample(spikes, (99.9,))[0]
    assert dependent.method == "block" and dependent.blocks == 316 and dependent.dispersion > 1.5  # type: ignore[operator]
    # the same sample shuffled has no order left: binomial
    shuffled = np.random.default_rng(1).permutation(spikes)
    assert qc.intervals_of_sample(shuffled, (99.9,))[0].method == "binomial"


def test_in_chunks_equals_in_memory() -> None:
    """The streamed path (exact order statistics by refinement, block counts in one pass of
    per-chunk bincounts) gives the in-memory intervals to the last bit, however it is cut."""
    rng = np.random.default_rng(11)
    x = np.round(coverage_bench.spikes(60_000, rng)).astype(np.int64)
    t = 1_000_000_000 + np.cumsum(rng.integers(5_000, 15_000, x.size))
    levels = (50.0, 99.0, 99.9, 99.99, 100.0)
    whole = qc.intervals_of_sample(x, levels, t)
    for size in (7_001, 60_000):
        cuts = range(0, x.size, size)

        def latency(cuts: range = cuts, size: int = size) -> list[np.ndarray]:
            return [x[i : i + size] for i in cuts]

        def timed(cuts: range = cuts, size: int = size) -> list[tuple[np.ndarray, np.ndarray]]:
            return [(t[i : i + size], x[i : i + size]) for i in cuts]

        extent = (x.size, int(x.min()), int(x.max()))
        streamed = qc.intervals_of_scan(LocalScan(latency), LocalScan(timed), levels, extent)
        assert streamed == whole
    assert {q.method for q in whole[:3]} == {"block"}


LEVELS = coverage_bench.LEVELS


@pytest.fixture(scope="module")
def coverage() -> dict[str, dict[str, dict[float, float]]]:
    """The suite's coverage simulation: 400 replicates of 20 000 samples per process (fixed
    seeds; about 10 s on a quiet machine): the method the data decide, and the binomial
    interval forced."""
    methods = ("auto", "binomial")
    return {
        p: coverage_bench.coverage(p, 20_000, 400, seed=1, methods=methods) for p in coverage_bench.PROCESSES
    }


@pytest.mark.slow  # a benchmark-like simulation (benchmarks/quantile_coverage.py at a budget size)
@pytest.mark.parametrize("process", ["iid", "ar1", "spikes"])
def test_nominal_95_percent_covers_93_to_97_percent(
    coverage: dict[str, dict[str, dict[float, float]]], process: str
) -> None:
    for level in LEVELS:
        share = coverage[process]["auto"][level]
        assert 0.93 <= share <= 0.97, f"{process} p{level:g}: {share:.1%}"


@pytest.mark.slow
@pytest.mark.parametrize("process", ["ar1", "spikes"])
def test_the_binomial_interval_undercovers_dependent_samples(
    coverage: dict[str, dict[str, dict[float, float]]], process: str
) -> None:
    forced = coverage[process]["binomial"]
    assert min(forced.values()) < 0.85, forced  # why the block method exists
    assert all(forced[lv] < coverage[process]["auto"][lv] for lv in LEVELS)


def test_the_true_quantiles_of_the_spike_process() -> None:
    """The mixture's quantile function against a large sample of the process itself."""
    x = coverage_bench.spikes(2_000_000, np.random.default_rng(5))
    for level in LEVELS:
        truth = coverage_bench.true_quantile("spikes", level)
        share = float(np.mean(x <= truth))
        assert math.isclose(share, level / 100, abs_tol=0.004 if level < 99 else 0.0006)
