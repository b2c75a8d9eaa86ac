"""The stacked GESD and Walsh tests (stats/extremes.py, written once as passes over chunks;
a sample in memory is one chunk) equal their definition exactly, in memory and read in
chunks: each level's sorted sample given to the single-level test (generalized_esd, checked
against scikit-posthocs, and walsh_test, checked on the worked example, in test_stats.py),
stacked; thresholds to the bit, categories sample for sample."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from conftest import heavy_tail, latency_clusters
from jitterlab.stats import extremes
from jitterlab.stats.categories import SortedLevel, StackedResult, build_result, stack_levels
from jitterlab.stats.extremes import (
    extremes_of,
    stacked_gesd,
    stacked_gesd_result,
    stacked_walsh,
    stacked_walsh_result,
)
from jitterlab.stats.gesd import generalized_esd, gesd_critical_values, gesd_cut
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import exact_squares, exact_sum
from jitterlab.stats.walsh import walsh_cut, walsh_test


def scan_of(x: np.ndarray, size: int) -> LocalScan:
    return LocalScan(lambda: (x[i : i + size] for i in range(0, x.size, size)))


def reference_gesd(x: np.ndarray, alpha: float = 0.05, max_outliers: int | None = None) -> StackedResult:
    """The stacked GESD test by its definition: generalized_esd of each level's sorted sample."""
    ordered = np.sort(x)
    cuts = stack_levels(SortedLevel(ordered, lambda s: gesd_cut(s, alpha, max_outliers)))
    return build_result(ordered, cuts, None, (), alpha, False)


def reference_walsh(x: np.ndarray) -> StackedResult:
    """The stacked Walsh test by its definition: walsh_test of each level's sorted sample."""
    ordered = np.sort(x)
    return build_result(ordered, stack_levels(SortedLevel(ordered, walsh_cut)), None, (), 0.05, False)


SAMPLES = {
    "heavy tail": heavy_tail(1, 400_000),
    "ties": heavy_tail(2, 300_000) // 1000 * 1000,
    "five values": np.random.default_rng(3).integers(0, 5, 250_000),
    "all equal": np.full(200_000, 12_345),
}


def test_exact_sums_equal_python_integers() -> None:
    rng = np.random.default_rng(0)
    for bound in (10, 1 << 31, 1 << 40, 1 << 52, 1 << 62):
        x = rng.integers(-bound, bound, 20_000)
        assert exact_sum(x) == sum(int(v) for v in x)
        assert exact_squares(x) == sum(int(v) ** 2 for v in x)
    ends = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0, 1], np.int64)
    assert exact_sum(ends) == sum(int(v) for v in ends)
    assert exact_squares(ends) == sum(int(v) ** 2 for v in ends)
    assert exact_sum(np.zeros(0, np.int64)) == exact_squares(np.zeros(0, np.int64)) == 0


def test_one_pass_keeps_the_ends_whatever_the_chunks() -> None:
    x = heavy_tail(4, 100_003)
    e = extremes.extremes_by(scan_of(x, 7_919), 50, 70)
    ordered = np.sort(x)
    assert e.count == x.size and e.total == int(x.sum()) and e.squares == sum(int(v) ** 2 for v in x)
    assert e.lowest.tolist() == ordered[:50].tolist() and e.highest.tolist() == ordered[-70:].tolist()
    small = extremes_of(x[:30], 50, 70)
    assert small.lowest.tolist() == small.highest.tolist() == np.sort(x[:30]).tolist()


@pytest.mark.parametrize("name", list(SAMPLES))
@pytest.mark.parametrize("size", [1 << 16, 65_537, 100_003])
def test_stacked_gesd_in_memory_and_streamed_equal_the_definition(name: str, size: int) -> None:
    x = SAMPLES[name]
    streamed = stacked_gesd_result(scan_of(x, size))
    assert streamed == stacked_gesd(x) == reference_gesd(x)
    if name == "heavy tail":
        assert len(streamed.thresholds) >= 2


@pytest.mark.parametrize("name", ["heavy tail", "ties", "five values"])
@pytest.mark.parametrize("max_outliers", [3, 40, 2_000])
def test_stacked_gesd_streamed_level_by_level(name: str, max_outliers: int) -> None:
    """Few extremes gathered: upper levels read again through the chunks, ties at the
    boundary of the gathered values, the median found exactly when a removed value ties it."""
    x = SAMPLES[name]
    for alpha in (0.05, 0.2):
        streamed = stacked_gesd_result(scan_of(x, 65_537), alpha, max_outliers)
        assert streamed == stacked_gesd(x, alpha, max_outliers) == reference_gesd(x, alpha, max_outliers)


def test_gesd_outliers_tied_past_the_kept_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 equal spikes, 20 outliers tested for (40 largest kept): the smallest removed value
    ties the 40th largest, so whether it lies above the median takes a counting pass, and
    the next level (all 100 spikes) is read again from the chunks."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(1_000, 10, 10_000).astype(np.int64), np.full(100, 5_000)])
    rng.shuffle(x)
    counted = []
    count_below = extremes.count_below_chunk
    monkeypatch.setattr(extremes, "count_below_chunk", lambda c, v: counted.append(v) or count_below(c, v))
    streamed = stacked_gesd_result(scan_of(x, 999), max_outliers=20)
    assert streamed == reference_gesd(x, max_outliers=20)
    assert streamed.thresholds == (np.nextafter(5_000.0, -np.inf),) and counted and set(counted) == {5_000}


@pytest.mark.parametrize("name", list(SAMPLES))
@pytest.mark.parametrize("size", [1 << 16, 100_003])
def test_stacked_walsh_in_memory_and_streamed_equal_the_definition(name: str, size: int) -> None:
    x = SAMPLES[name]
    assert stacked_walsh_result(scan_of(x, size)) == stacked_walsh(x) == reference_walsh(x)


def test_walsh_with_few_largest_values_reads_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the largest values gathered do not decide the k search, a pass gathers 4× more:
    the same answer; past the bound, one clear refusal."""
    x = np.concatenate([np.arange(1, 96), [300, 600, 1200, 2400, 4800]] * 1)
    x = np.concatenate([x, np.arange(10_000, 10_000 + 3_000) * 7 + 10_000])  # 3 000 spread high values
    monkeypatch.setattr(extremes, "WALSH_FIRST_TOP", 64)
    assert stacked_walsh_result(scan_of(x, 777)) == reference_walsh(x)
    spread = 2 ** np.arange(40, dtype=np.int64)  # every k positive: Walsh needs them all
    sample = np.concatenate([np.zeros(2_000, np.int64), spread]) + np.arange(2_040)
    assert stacked_walsh_result(scan_of(sample, 500)) == stacked_walsh(sample) == reference_walsh(sample)
    with pytest.raises(ValueError, match="largest"):
        extremes.stacked_walsh_scan(scan_of(sample, 500), max_top=64)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 60, 61, 500])
def test_tiny_samples(n: int) -> None:
    x = heavy_tail(5, n)
    assert stacked_gesd_result(scan_of(x, 7)) == stacked_gesd(x) == reference_gesd(x)
    assert stacked_walsh_result(scan_of(x, 7)) == stacked_walsh(x) == reference_walsh(x)


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        stacked_gesd_result(scan_of(np.zeros(0, np.int64), 10))


def test_gesd_steps_are_exact() -> None:
    """R_i from exact integers: equal to the exact rational computed with Fractions, even
    when nearly every value is removed (where running floating-point sums lose the few
    values left: the form before this one found 151 outliers here, not 1 995)."""
    whole = latency_clusters(1, 300_000)
    x = np.sort(whole[whole > 30_514])  # a second cluster near 30 µs and spikes near 1 ms
    assert x.size == 2_000
    r = x.size - 2
    result = generalized_esd(x, r)
    values = x.tolist()
    lo, hi, m, s1, s2 = 0, x.size - 1, x.size, sum(values), sum(v * v for v in values)
    exact = []
    for _ in range(r):
        if m * (values[hi] + values[lo]) >= 2 * s1:
            v, hi = values[hi], hi - 1
        else:
            v, lo = values[lo], lo + 1
        q = m * s2 - s1 * s1
        exact.append(Fraction((m * v - s1) ** 2 * (m - 1), m * q) if q else Fraction(0))
        s1, s2, m = s1 - v, s2 - v * v, m - 1
    # rounded once (the ratio), then the square root: as math.sqrt of the exact ratio
    assert result.statistics.tolist() == [math.sqrt(e) for e in exact]
    critical = gesd_critical_values(x.size, r, 0.05)
    hits = [i for i in range(r) if exact[i] > Fraction(float(critical[i])) ** 2]
    assert result.n_outliers == hits[-1] + 1 == 1_995


def test_float_samples_keep_their_answers() -> None:
    """Floats are scaled to integers by a power of two: the same steps as for the integers."""
    x = heavy_tail(6, 5_000)
    ints = generalized_esd(x, 100)
    floats = generalized_esd(x.astype(np.float64) / 1024.0, 100)
    assert ints.n_outliers == floats.n_outliers > 0
    assert np.array_equal(ints.statistics, floats.statistics)
    assert np.array_equal(ints.outlier_values / 1024.0, floats.outlier_values)
    assert walsh_test(x).n_outliers == walsh_test(x / 1024.0).n_outliers


def test_float_samples_are_refused_by_the_stacked_tests() -> None:
    """The stacked tests are passes over integer chunks: a float sample is refused in one
    line, not truncated."""
    for test in (stacked_gesd, stacked_walsh):
        with pytest.raises(ValueError, match="integer"):
            test(np.linspace(0.5, 100.5, 200))
