"""compare in bounded memory: a sample read in chunks gives the same comparison as the
whole columns, to the last bit (issue 25 item 1)."""

from __future__ import annotations

import dataclasses

import numpy as np

from jitterlab.stats import compare_samples
from jitterlab.stats.compare import ChunkedSample, SortedSample, compare_ordered


def _mixture(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.lognormal(np.log(4_000), 0.3, n)
    spikes = rng.choice(n, n // 1000, replace=False)
    x[spikes] = rng.uniform(50_000, 20_000_000, spikes.size)
    return x.astype(np.int64)


def _chunked(x: np.ndarray, size: int) -> ChunkedSample:
    return ChunkedSample(lambda: (x[i : i + size] for i in range(0, x.size, size)))


def _same(c1: object, c2: object, where: str = "") -> None:
    """Equal field by field, to the last bit (NaN equal to NaN)."""
    if dataclasses.is_dataclass(c1):
        for field in dataclasses.fields(c1):
            _same(getattr(c1, field.name), getattr(c2, field.name), f"{where}.{field.name}")
    elif isinstance(c1, tuple):
        assert len(c1) == len(c2), where  # type: ignore[arg-type]
        for i, (v1, v2) in enumerate(zip(c1, c2, strict=True)):  # type: ignore[call-overload]
            _same(v1, v2, f"{where}[{i}]")
    elif isinstance(c1, np.ndarray):
        assert np.array_equal(c1, c2, equal_nan=True), where  # type: ignore[arg-type]
    elif isinstance(c1, float) and np.isnan(c1):
        assert np.isnan(c2), where  # type: ignore[arg-type]
    else:
        assert c1 == c2, where


def test_chunked_comparison_equals_the_whole_columns() -> None:
    a = _mixture(1, 600_000)  # more than the 200 000 tested: the subsample is drawn, not all
    b = (_mixture(2, 450_001) * 1.1).astype(np.int64)
    whole = compare_samples(a, b)
    for size in (65_536, 100_003):
        _same(compare_ordered(_chunked(a, size), _chunked(b, size)), whole)


def test_small_samples_and_ties_compare_the_same_read_either_way() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(1_000, 1_010, 5_000)  # ten values: every rank a tie
    b = rng.integers(1_000, 1_012, 3_000)
    _same(compare_ordered(_chunked(a, 999), _chunked(b, 1)), compare_samples(a, b))


def test_positions_and_ranks_of_a_chunked_sample() -> None:
    x = np.random.default_rng(6).integers(-5, 10**12, 70_001)
    s = _chunked(x, 4_097)
    positions = np.array([70_000, 0, 4_096, 4_097, 12, 12])
    assert np.array_equal(s.at_positions(positions), x[positions].astype(np.float64))
    ranks = np.array([[0, 70_000], [35_000, 1]])
    assert np.array_equal(s.at_ranks(ranks), SortedSample(x).at_ranks(ranks))


def test_ks_distance_equals_scipys_statistic_to_the_last_bit() -> None:
    """The report's KS distance (no scipy) is scipy's statistic: sizes on both sides of
    scipy's exact mode (10 000), unequal sizes, ties, integers."""
    from scipy import stats

    from jitterlab.stats.compare import ks_distance

    rng = np.random.default_rng(1)
    for n1, n2 in [(2, 2), (5, 7), (100, 100), (3000, 9000), (10_000, 10_001), (200_000, 150_000)]:
        for shift, tied in ((0.0, False), (0.05, False), (0.1, True)):
            a, b = rng.normal(0, 1, n1), rng.normal(shift, 1, n2)
            if tied:
                a, b = np.round(a * 3), np.round(b * 3)
            for x, y in ((a, b), (a.astype(np.int64), b.astype(np.int64))):
                assert ks_distance(x, y) == stats.ks_2samp(x, y).statistic, (n1, n2, shift, tied)


def test_the_reports_comparison_differs_from_the_full_one_only_in_the_tests_it_leaves_out() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.lognormal(10, 0.3, 30_000), rng.lognormal(10.02, 0.3, 25_000)
    full = compare_samples(a, b)
    lean = compare_samples(a, b, distribution_tests=False)
    assert lean.ks_statistic == full.ks_statistic
    assert np.isnan(lean.ks_pvalue) and np.isnan(lean.ad_statistic) and np.isnan(lean.mw_pvalue)
    assert repr(lean.percentiles) == repr(full.percentiles) and lean.verdict == full.verdict  # NaN ≠ NaN
    assert np.array_equal(lean.qq_a, full.qq_a) and np.array_equal(lean.qq_b, full.qq_b)
