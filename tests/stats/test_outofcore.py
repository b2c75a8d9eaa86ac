"""The stacked z-score test, its categories, baseline screening and time windows read in
chunks (stats/outofcore.py, issue 25 item 1) equal the in-memory functions exactly."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from conftest import heavy_tail
from jitterlab.stats import stacked_z_test, time_windows
from jitterlab.stats.outofcore import (
    categories_of_chunks,
    robust_scale_chunks,
    stacked_z_chunks,
    time_windows_chunks,
)
from jitterlab.stats.screening import baseline_of, baseline_of_chunks, screen, screen_chunks
from jitterlab.stats.zscore import robust_scale

N = 1_000_000


def chunked(x: np.ndarray, size: int) -> Callable[[], Iterator[np.ndarray]]:
    return lambda: (x[i : i + size] for i in range(0, x.size, size))


def timed(t: np.ndarray, x: np.ndarray, size: int) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    return lambda: ((t[i : i + size], x[i : i + size]) for i in range(0, x.size, size))


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
    got = categories_of_chunks(
        chunked(trial, 65_537), ref.thresholds, ref.low_threshold, ref.levels, ref.threshold, True
    )
    assert got == expected
    base = baseline_of(reference, ref)
    assert baseline_of_chunks(chunked(reference, 100_003), ref) == base
    verdict = screen_chunks(chunked(trial, 100_003), base)
    assert verdict == screen(trial, base)
    assert verdict.contaminated


@pytest.mark.parametrize("width_ns", [1_000_000_000, 37_000_000])
def test_windows_streamed_equal_in_memory_for_several_pairs(width_ns: int) -> None:
    """Four pairs stored pair after pair: send times are not in order across the file."""
    rng = np.random.default_rng(6)
    pairs = 4
    per_pair = N // pairs
    t = np.concatenate(
        [np.sort(rng.integers(0, 20_000_000_000, per_pair)) + 1_000_000_000 for _ in range(pairs)]
    )
    t[t.size // 2 : t.size // 2 + 1000] += 40_000_000_000  # a gap: empty windows between
    x = heavy_tail(7, t.size)
    x[:50] = x[50]  # ties inside a window
    categories = stacked_z_test(x, two_sided=True)
    expected = time_windows(t, x, width_ns, categories)
    got = time_windows_chunks(timed(t, x, 100_003), width_ns, categories)
    assert (expected.count == 0).any()
    for field in ("start_ns", "count", "mean", "p50", "p99", "max", "category_counts"):
        a, b = getattr(expected, field), getattr(got, field)
        assert a.shape == b.shape and np.array_equal(a, b, equal_nan=True), field
    assert (got.width_ns, got.categories) == (expected.width_ns, expected.categories)
    plain = time_windows_chunks(timed(t, x, 1 << 16), width_ns)
    assert np.array_equal(plain.p99, expected.p99, equal_nan=True) and plain.category_counts.shape[1] == 0


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError):
        stacked_z_chunks(chunked(np.zeros(0, np.int64), 10))
    assert time_windows_chunks(timed(np.zeros(0, np.int64), np.zeros(0, np.int64), 10)).count.size == 0
