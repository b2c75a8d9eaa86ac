"""Known-answer and property tests of the statistics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scikit_posthocs as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from conftest import latency_clusters
from jitterlab.stats import (
    categorize,
    compare_samples,
    generalized_esd,
    modified_z_outliers,
    modified_z_scores,
    robust_scale,
    stacked_z_test,
    time_windows,
    walsh_test,
)
from jitterlab.stats.categories import build_result


def test_modified_z_score_matches_the_direct_formula() -> None:
    x = np.array([12.0, 15, 11, 14, 13, 40, 12, 16, 13, 90])
    median = np.median(x)
    mad = np.median(np.abs(x - median))
    assert np.allclose(modified_z_scores(x), 0.6745 * (x - median) / mad)
    assert modified_z_outliers(x).tolist() == (0.6745 * (x - median) / mad > 3.5).tolist()


def test_mad_zero_falls_back_to_mean_absolute_deviation() -> None:
    x = np.array([100] * 90 + [101] * 5 + [500] * 5)
    scale = robust_scale(x)
    assert scale.mad == 0 and scale.fallback
    mean_ad = np.mean(np.abs(x - 100))
    assert scale.scale == pytest.approx(1.253314 * mean_ad)
    flagged = x[modified_z_outliers(x)]
    assert set(flagged.tolist()) == {500}, "quantised data must not flag everything above the median"


def test_all_equal_values_have_no_outliers() -> None:
    assert not modified_z_outliers(np.full(100, 7)).any()
    assert stacked_z_test(np.full(100, 7)).thresholds == ()


def test_two_sided_flags_low_values_too() -> None:
    x = np.concatenate([np.random.default_rng(1).normal(100, 1, 1000), [50.0, 150.0]])
    assert modified_z_outliers(x, two_sided=True)[-2:].tolist() == [True, True]
    assert modified_z_outliers(x)[-2:].tolist() == [False, True]
    result = stacked_z_test(x, two_sided=True)
    low = [c for c in result.categories if c.index == -1]
    assert low and low[0].count >= 1 and low[0].upper < result.levels[0].center


def test_stacked_test_separates_the_clusters() -> None:
    x = latency_clusters(3)
    result = stacked_z_test(x)
    assert list(result.thresholds) == sorted(result.thresholds)
    main = result.categories[0]
    assert main.index == 0 and main.upper < 20_000
    labels = result.labels(x)
    top = result.categories[-1].index
    assert (labels[x > 500_000] == top).all(), "the rare spikes form the top category"
    second = labels[(x > 25_000) & (x < 35_000)]
    assert np.mean(second == 1) > 0.95, "the 30 µs cluster is category 1"
    assert sum(c.count for c in result.categories) == x.size


def test_baseline_mode_applies_the_reference_thresholds() -> None:
    reference = stacked_z_test(latency_clusters(1))
    later = latency_clusters(2) + 5_000  # a slower system
    result = stacked_z_test(later, baseline=reference)
    assert result.thresholds == reference.thresholds
    counts = np.bincount(categorize(later, reference.thresholds), minlength=len(reference.thresholds) + 1)
    assert [c.count for c in result.categories] == counts.tolist()
    # shifted by half a main-cluster width, many more samples leave the reference's main cluster
    assert result.categories[0].share < stacked_z_test(later).categories[0].share


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.integers(2, 400), elements=st.integers(0, 10_000_000)))
def test_stacked_categories_partition_the_data_in_order(x: np.ndarray) -> None:
    result = stacked_z_test(x)
    cats = result.categories
    assert sum(c.count for c in cats) == x.size
    assert sum(c.share for c in cats) == pytest.approx(1.0)
    for lower, upper in itertools.pairwise(cats):
        assert lower.index < upper.index
        assert lower.upper < upper.lower
    labels = result.labels(x)
    for c in cats:
        members = x[labels == c.index]
        assert members.size == c.count
        assert members.min() == c.lower and members.max() == c.upper


@pytest.mark.parametrize("seed", range(8))
def test_gesd_matches_scikit_posthocs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(10, 2, 60)
    x[: seed % 4] = rng.normal(40, 5, seed % 4)  # 0..3 planted outliers
    ours = generalized_esd(x, max_outliers=8, alpha=0.05)
    mask = sp.outliers_gesd(x, outliers=8, alpha=0.05, hypo=True)
    assert ours.n_outliers == int(mask.sum())
    assert sorted(ours.outlier_values.tolist()) == sorted(x[mask].tolist())


def test_walsh_worked_example() -> None:
    # docs/statistics.md works this example by hand: n = 100, c = 15, alpha = 0.10,
    # a = 0.72246; k = 1..5 test positive (727.5, 393.7, 226.5, 142.5, 194.9), k = 6 fails (-9.1).
    x = np.concatenate([np.arange(1, 96), [300, 600, 1200, 2400, 4800]])
    result = walsh_test(x)
    assert (result.c, result.alpha) == (15, 0.10)
    assert result.a == pytest.approx(0.7224555, abs=1e-6)
    assert result.n_outliers == 5
    assert result.threshold == 300


def test_walsh_dense_extremes_hide_themselves() -> None:
    x = np.concatenate([np.arange(1, 96), [200, 210, 220, 230, 240]])
    assert walsh_test(x).n_outliers == 0


def test_walsh_needs_more_than_60_values() -> None:
    with pytest.raises(ValueError, match="60"):
        walsh_test(np.arange(60))


def test_windows_count_and_order_independence() -> None:
    t = np.array([0, 1, 2, 10, 11, 25]) * 100_000_000 + 5  # 0.1 s steps
    lat = np.array([1, 2, 3, 4, 5, 6])
    cats = build_result(np.sort(lat), (2.5, 4.5), None, (), 3.5, False)  # 1, 2 | 3, 4 | 5, 6
    table = time_windows(t, lat, 1_000_000_000, cats)
    assert table.count.tolist() == [3, 2, 1]
    assert table.max.tolist() == [3, 5, 6]
    assert table.categories == (0, 1, 2)
    assert table.category_counts.tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    shuffled = np.random.default_rng(0).permutation(6)
    again = time_windows(t[shuffled], lat[shuffled], 1_000_000_000, cats)
    assert again.count.tolist() == table.count.tolist()
    assert again.category_counts.tolist() == table.category_counts.tolist()


def test_window_category_counts_add_up_with_a_low_category() -> None:
    x = latency_clusters(9, 20_000)
    x[:50] = 10  # far below the main cluster
    result = stacked_z_test(x, two_sided=True)
    assert result.categories[0].index == -1
    table = time_windows(np.arange(x.size) * 1_000_000, x, 1_000_000_000, result)
    assert table.category_counts.sum(axis=0).tolist() == [c.count for c in result.categories]
    assert table.category_counts.sum(axis=1).tolist() == table.count.tolist()


def test_windows_keep_empty_windows() -> None:
    table = time_windows(np.array([0, 3_500_000_000]), np.array([1, 2]), 1_000_000_000)
    assert table.count.tolist() == [1, 0, 0, 1]
    assert np.isnan(table.p50[1])


def test_compare_verdicts() -> None:
    rng = np.random.default_rng(5)
    a = rng.lognormal(9, 0.2, 100_000)
    same = rng.lognormal(9, 0.2, 100_000)
    assert compare_samples(a, same).verdict == "within noise"
    slower = compare_samples(a, a * 1.2)
    assert slower.verdict == "regressed"
    *judged, top = slower.percentiles
    assert all(d.ci_low > 0.05 for d in judged)
    # the max: its change, but no interval and no verdict (one sample)
    assert top.percentile == 100.0 and top.verdict == "not judged (one sample)"
    assert top.relative == pytest.approx(0.2) and np.isnan(top.ci_low)
    assert compare_samples(a, a * 0.8).verdict == "improved"
    c = compare_samples(a, same)
    assert 0 <= c.ks_statistic < 0.02
    assert np.allclose(c.qq_a, c.qq_b, rtol=0.05)


def test_windows_refuse_float_latencies() -> None:
    """The window table sums latencies exactly as integers: floats are refused, not truncated."""
    with pytest.raises(ValueError, match="integer"):
        time_windows(np.array([0, 1]), np.array([1.5, 2.5]), 1_000_000_000)
