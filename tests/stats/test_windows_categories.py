"""Categories and time windows written once (stats/categories.py: one per-chunk function of
each value range's count and extremes, folded; stats/windows.py: one per-chunk window
table, one function reading a window's order statistics) equal a numpy reference written
from the definition on every feed: a sorted array in memory, unsorted chunks streamed, a
table of value counts, and for windows the run in memory (one chunk), streamed with and
without refinement passes, and describe's two passes. (The cluster feeds the same chunk
functions to its workers: tests/store/test_cluster.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise

import numpy as np
import pytest

from conftest import heavy_tail
from jitterlab.stats import kernels, stacked_z_test
from jitterlab.stats.categories import StackedResult, build_result, categories_scan
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.twopass import categories_table, describe_two_pass
from jitterlab.stats.type7 import type7_interpolate, type7_ranks
from jitterlab.stats.valuetable import ValueTable
from jitterlab.stats.windows import WindowTable, time_windows, time_windows_chunks, time_windows_scan

N = 300_000
T0 = 1_000_000_000


def chunked(x: np.ndarray, size: int) -> Callable[[], Iterator[np.ndarray]]:
    return lambda: (x[i : i + size] for i in range(0, x.size, size))


def timed(t: np.ndarray, x: np.ndarray, size: int) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    return lambda: ((t[i : i + size], x[i : i + size]) for i in range(0, x.size, size))


def reference_ranges(
    x: np.ndarray, cuts: tuple[float, ...], low: float | None
) -> list[tuple[int, float, float]]:
    """(count, smallest, largest) of each category by its definition: category j holds
    t_(j-1) < x <= t_j, category -1 (with a low threshold) x < low."""
    bounds = [-np.inf, *cuts, np.inf]
    ranges = []
    if low is not None:
        member = x[x < low]
        ranges.append(member)
    for lower, upper in pairwise(bounds):
        member = x[(x > lower) & (x <= upper) & ((x >= low) if low is not None else True)]
        ranges.append(member)
    return [(m.size, float(m.min()), float(m.max())) if m.size else (0, np.nan, np.nan) for m in ranges]


def assert_categories(result: StackedResult, x: np.ndarray, keep_empty: bool) -> None:
    expected = reference_ranges(x, result.thresholds, result.low_threshold)
    first = -1 if result.low_threshold is not None else 0
    kept = [(first + k, *r) for k, r in enumerate(expected) if r[0] or (keep_empty and first + k != -1)]
    got = [(c.index, c.count, c.lower, c.upper) for c in result.categories]
    assert len(got) == len(kept)
    for g, e in zip(got, kept, strict=True):
        assert g[:2] == e[:2] and np.array_equal(g[2:], e[2:], equal_nan=True)
    assert [c.share for c in result.categories] == [c.count / x.size for c in result.categories]


@pytest.mark.parametrize("two_sided", [False, True])
def test_categories_on_every_feed_equal_the_reference(two_sided: bool) -> None:
    x = heavy_tail(21, N)
    x[:40] = 5  # far below the body: a low-side category when two-sided
    test = stacked_z_test(x, two_sided=two_sided)
    assert len(test.thresholds) >= 2 and (test.low_threshold is not None) == two_sided
    # a baseline's cuts with an empty category kept: a threshold above every value
    cuts = (*test.thresholds, float(x.max()) + 10.0)
    args = (cuts, test.low_threshold, test.levels, test.threshold)
    values, counts = np.unique(x, return_counts=True)
    for keep_empty in (False, True):
        feeds = {
            "sorted in memory": build_result(np.sort(x), *args, keep_empty),
            "streamed": categories_scan(LocalScan(chunked(x, 65_537)), *args, keep_empty),
            "one unsorted chunk": categories_scan(LocalScan(lambda: [x]), *args, keep_empty),
            "value table": categories_table(ValueTable(values, counts.astype(np.int64)), *args, keep_empty),
        }
        for name, result in feeds.items():
            assert result.thresholds == cuts, name
            assert_categories(result, x, keep_empty)
    assert stacked_z_test(x, two_sided=two_sided).categories == test.categories


def reference_windows(t: np.ndarray, x: np.ndarray, width_ns: int, categories: StackedResult | None) -> dict:
    """Each window's count, mean, p50, p99 (type 7 of the sorted window), max and category
    counts, window by window from their definition."""
    w = (t - t.min()) // width_ns
    n_windows = int(w.max()) + 1
    rows: dict[str, list] = {k: [] for k in ("count", "mean", "p50", "p99", "max", "category_counts")}
    for k in range(n_windows):
        v = np.sort(x[w == k])
        rows["count"].append(v.size)
        if v.size == 0:
            rows["mean"].append(np.nan)
            rows["p50"].append(np.nan)
            rows["p99"].append(np.nan)
            rows["max"].append(np.nan)
        else:
            rows["mean"].append(int(v.astype(object).sum()) / v.size)
            lo, hi, weight = type7_ranks(v.size, (50.0, 99.0))
            p = type7_interpolate(v[lo], v[hi], weight)
            assert np.allclose(p, np.percentile(v, [50.0, 99.0]), rtol=1e-12)
            rows["p50"].append(p[0])
            rows["p99"].append(p[1])
            rows["max"].append(float(v[-1]))
        if categories is not None:
            ranges = reference_ranges(v, categories.thresholds, categories.low_threshold)
            first = -1 if categories.low_threshold is not None else 0
            rows["category_counts"].append([ranges[c.index - first][0] for c in categories.categories])
    return rows


def assert_windows(got: WindowTable, expected: dict, width_ns: int) -> None:
    for field, values in expected.items():
        want = np.asarray(values)
        have = getattr(got, field)
        if field == "category_counts" and not values:
            assert have.shape == (got.count.size, 0)
            continue
        assert have.shape == want.shape and np.array_equal(have, want, equal_nan=True), field
    assert got.start_ns.tolist() == [width_ns * k for k in range(got.count.size)]


def pairs_with_a_gap(seed: int, pairs: int = 4) -> np.ndarray:
    """Send times of ``pairs`` pairs, each in order, stored one pair after the other, and a
    gap that leaves empty windows."""
    rng = np.random.default_rng(seed)
    t = np.concatenate([np.sort(rng.integers(0, 20_000_000_000, N // pairs)) + T0 for _ in range(pairs)])
    t[t.size // 2 : t.size // 2 + 1000] += 40_000_000_000
    return t


@pytest.mark.parametrize("width_ns", [1_000_000_000, 37_000_000])
@pytest.mark.parametrize("two_sided", [False, True])
def test_windows_on_every_feed_equal_the_reference(width_ns: int, two_sided: bool) -> None:
    t = pairs_with_a_gap(6)
    x = heavy_tail(7, t.size)
    x[:50] = x[50]  # ties inside a window
    categories = stacked_z_test(x, two_sided=two_sided)
    expected = reference_windows(t, x, width_ns, categories)
    assert 0 in expected["count"]
    feeds = {
        "in memory": time_windows(t, x, width_ns, categories),
        "in memory, sorted by send time": time_windows(*(a[np.argsort(t, kind="stable")] for a in (t, x)), width_ns, categories),
        "streamed, gathered at once": time_windows_chunks(timed(t, x, 100_003), width_ns, categories),
        # a small bound on gathered values: refinement passes narrow what is gathered
        "streamed, refined first": time_windows_scan(LocalScan(timed(t, x, 65_536)), width_ns, categories, gather_at=5_000),
        "streamed, refined to single values": time_windows_scan(LocalScan(timed(t, x, 65_536)), width_ns, categories, gather_at=0),
    }  # fmt: skip
    if kernels.available():
        recv = t + x
        found = describe_two_pass(
            lambda: ((t[i : i + 100_003], recv[i : i + 100_003]) for i in range(0, t.size, 100_003)),
            int(x.min()), int(x.max()), int(t.min()), int(t.max()), width_ns, lambda table: categories,
        )  # fmt: skip
        assert found is not None
        feeds["two passes"] = found[1]
    for name, table in feeds.items():
        assert table.categories == tuple(c.index for c in categories.categories), name
        assert_windows(table, expected, width_ns)
    plain = time_windows_scan(LocalScan(timed(t, x, 1 << 16)), width_ns, gather_at=2_000)
    assert_windows(plain, {**reference_windows(t, x, width_ns, None), "category_counts": []}, width_ns)


def test_windows_of_no_sample_and_of_equal_values() -> None:
    assert time_windows_chunks(timed(np.zeros(0, np.int64), np.zeros(0, np.int64), 10)).count.size == 0
    t = np.arange(1000, dtype=np.int64) * 1_000_000
    equal = np.full(1000, 7, np.int64)
    for table in (
        time_windows(t, equal, 10**8),
        time_windows_scan(LocalScan(timed(t, equal, 77)), 10**8, gather_at=0),
    ):
        assert table.p50.tolist() == [7.0] * 10 and table.p99.tolist() == [7.0] * 10
