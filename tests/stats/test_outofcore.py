"""The stacked z-score test (written once over a sample's order statistics: stats/zscore.py),
its categories and baseline screening, read in chunks (stats/outofcore.py), held as a
table of value counts (stats/twopass.py) and in memory, equal a reference written from the
definition with numpy, and each other, exactly. (Categories and windows on every feed:
test_windows_categories.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from conftest import heavy_tail
from jitterlab.stats import stacked_z_test
from jitterlab.stats.categories import Category, StackedResult
from jitterlab.stats.outofcore import (
    categories_scan,
    robust_scale_chunks,
    stacked_z_chunks,
)
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.screening import (
    Baseline,
    Verdict,
    baseline_of,
    baseline_scan,
    screen,
    screen_counts,
    screen_scan,
)
from jitterlab.stats.twopass import stacked_z_table
from jitterlab.stats.valuetable import ValueTable
from jitterlab.stats.zscore import RobustScale, robust_scale

N = 1_000_000


def chunked(x: np.ndarray, size: int) -> Callable[[], Iterator[np.ndarray]]:
    return lambda: (x[i : i + size] for i in range(0, x.size, size))


def reference_baseline(values: np.ndarray, result: StackedResult) -> Baseline:
    """The screening baseline by numpy, the whole sample sorted (seed 003 §4.3; the module
    docs of stats/screening.py): outlier share above t_0, the top category's cut."""
    ordered = np.sort(values.astype(np.float64))
    top = ordered[ordered > result.thresholds[-1]]
    if top.size == 0:
        top = ordered[-1:]
    level = robust_scale(top)
    cut = level.center + result.threshold * level.scale if level.scale > 0 else float(top[-1])
    outliers = int((ordered > result.thresholds[0]).sum())
    return Baseline(result.thresholds, outliers / ordered.size, max(cut, float(top[-1])), int(ordered.size))


def reference_verdict(values: np.ndarray, baseline: Baseline) -> Verdict:
    """A trial's verdict from its category counts by numpy (np.digitize, right-closed)."""
    v = values.astype(np.float64)
    counts = np.bincount(
        np.digitize(v, baseline.thresholds, right=True), minlength=len(baseline.thresholds) + 1
    )
    return screen_counts(tuple(int(c) for c in counts), float(v.max()), baseline)


def reference_scale(x: np.ndarray) -> RobustScale:
    """Iglewicz & Hoaglin's scale by numpy: median, MAD, MeanAD when MAD is 0 (its sum exact)."""
    center = float(np.median(x))
    mad = float(np.median(np.abs(x - center)))
    if mad > 0:
        return RobustScale(center, mad / 0.6745, mad, fallback=False)
    doubled = int(np.abs(2 * x - round(2 * center)).sum())
    return RobustScale(center, 1.253314 * (doubled / (2 * x.size)), 0.0, fallback=True)


def reference_stacked_z(x: np.ndarray, threshold: float = 3.5, two_sided: bool = False) -> StackedResult:
    """The stacked test by its definition (Stauffert et al. 2016): cut at center + 3.5 scale,
    test the values above again, until a level has no spread or its cut leaves all or none."""
    cuts: list[float] = []
    scales: list[RobustScale] = []
    level = x
    while level.size and len(cuts) < 64:
        s = reference_scale(level)
        if s.scale == 0:
            break
        scales.append(s)
        cut = s.center + threshold * s.scale
        upper = level[level > cut]
        if upper.size in (0, level.size):
            break
        cuts.append(cut)
        level = upper
    low = scales[0].center - threshold * scales[0].scale if two_sided and scales else None
    labels = (x[:, None] > np.asarray(cuts)[None, :]).sum(axis=1) if cuts else np.zeros(x.size, np.int64)
    if low is not None:
        labels[x < low] = -1
    categories = tuple(
        Category(int(c), float(x[labels == c].min()), float(x[labels == c].max()), int((labels == c).sum()),
                 int((labels == c).sum()) / x.size)
        for c in np.unique(labels)
    )  # fmt: skip
    return StackedResult(tuple(cuts), tuple(scales[: len(cuts)]), categories, low, threshold)


@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize("sample", ["heavy tail", "quantised"])
def test_stacked_z_in_memory_streamed_and_table_equal_the_reference(two_sided: bool, sample: str) -> None:
    if sample == "heavy tail":
        x = heavy_tail(8, 200_001)
    else:
        rng = np.random.default_rng(9)
        x = np.full(200_000, 1_000, np.int64)
        x[rng.random(x.size) < 0.3] = 1_001  # MAD = 0: the MeanAD form
        x[rng.random(x.size) < 0.001] = 5_000
    expected = reference_stacked_z(x, two_sided=two_sided)
    assert expected.thresholds
    assert stacked_z_test(x, two_sided=two_sided) == expected
    assert stacked_z_chunks(chunked(x, 65_537), two_sided=two_sided, in_memory_at=1000) == expected
    values, counts = np.unique(x, return_counts=True)
    table = ValueTable(values, counts.astype(np.int64))
    assert stacked_z_table(table, two_sided=two_sided, in_memory_at=10) == expected


# 2^16 lines up with summary's blocks and the selection's buckets; 65_537 and 100_003 do not
@pytest.mark.parametrize("size", [1 << 16, 65_537, 100_003])
@pytest.mark.parametrize("two_sided", [False, True])
def test_stacked_z_streamed_equals_in_memory(size: int, two_sided: bool) -> None:
    x = heavy_tail(1, N)
    expected = stacked_z_test(x, two_sided=two_sided)
    # in_memory_at=1000: every level is selected from the chunks, none gathered
    got = stacked_z_chunks(chunked(x, size), two_sided=two_sided, in_memory_at=1000)
    assert len(expected.thresholds) >= 2
    assert got == expected
    # the default hands the small upper levels to the in-memory stack
    assert stacked_z_chunks(chunked(x, size), two_sided=two_sided) == expected
    assert (expected.low_threshold is not None) == two_sided


def test_ties_and_the_meanad_fallback() -> None:
    rng = np.random.default_rng(2)
    x = np.full(N, 1_000, np.int64)
    x[rng.random(N) < 0.3] = 1_001  # quantised: MAD = 0, the MeanAD form is used
    x[rng.random(N) < 0.001] = 5_000
    expected = stacked_z_test(x)
    assert expected.levels and expected.levels[0].fallback  # type: ignore[attr-defined]
    assert stacked_z_chunks(chunked(x, 70_001), in_memory_at=10) == expected
    equal = np.full(1000, 7, np.int64)  # every value equal: no level, one category
    assert stacked_z_chunks(chunked(equal, 99), in_memory_at=10) == stacked_z_test(equal)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1001, 1002])
def test_robust_scale_small_and_even_sizes(n: int) -> None:
    x = heavy_tail(3, n)
    got = robust_scale_chunks(chunked(x, 7), n, int(x.min()), int(x.max()))
    assert got == robust_scale(x)


def test_baseline_categories_and_screening_streamed() -> None:
    reference, trial = heavy_tail(4, N), heavy_tail(5, N)
    trial[::500] += 3_000_000  # contaminated: more spikes than the baseline
    ref = stacked_z_test(reference)
    expected = stacked_z_test(trial, baseline=ref)
    got = categories_scan(
        LocalScan(chunked(trial, 65_537)), ref.thresholds, ref.low_threshold, ref.levels, ref.threshold, True
    )
    assert got == expected
    base = baseline_of(reference, ref)
    assert base == reference_baseline(reference, ref)
    assert baseline_scan(LocalScan(chunked(reference, 100_003)), ref) == base
    verdict = screen_scan(LocalScan(chunked(trial, 100_003)), base)
    assert verdict == screen(trial, base) == reference_verdict(trial, base)
    assert verdict.contaminated


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError):
        stacked_z_chunks(chunked(np.zeros(0, np.int64), 10))
