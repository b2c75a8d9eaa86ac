"""The type-7 percentile written once (stats/type7.py): known answers, numpy's type 7, and
every path that reads order statistics giving the same figures to the last bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jitterlab.stats.groups import group_extent, group_percentiles
from jitterlab.stats.loglinear import LogLinear, histogram_chunk
from jitterlab.stats.quantile_ci import quantile_intervals
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import percentiles, percentiles_of_scan, percentiles_sorted, summarize_chunks
from jitterlab.stats.type7 import type7_interpolate, type7_percentiles, type7_ranks
from jitterlab.stats.valuetable import ValueCounter

LEVELS = (0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0)


def test_ranks_and_weights_are_the_definition() -> None:
    lo, hi, w = type7_ranks(4, (0.0, 50.0, 100.0))
    assert lo.tolist() == [0, 1, 3] and hi.tolist() == [1, 2, 3] and w.tolist() == [0.0, 0.5, 0.0]
    lo, hi, w = type7_ranks(1, (50.0, 99.9))
    assert lo.tolist() == [0, 0] and hi.tolist() == [0, 0] and w.tolist() == [0.0, 0.0]
    lo, hi, w = type7_ranks(1001, (99.9,))
    assert (lo.tolist(), hi.tolist()) == ([999], [1000]) and w[0] == pytest.approx(0.0, abs=1e-9)


def test_ranks_broadcast_over_many_samples_and_empty_ones_stay_in_range() -> None:
    counts = np.array([0, 1, 2, 101])
    lo, hi, w = type7_ranks(counts[:, None], (50.0, 99.0))
    assert lo.shape == hi.shape == w.shape == (4, 2)
    assert hi.min() >= 0 and (hi <= np.maximum(counts - 1, 0)[:, None]).all()
    assert lo[3].tolist() == [50, 99] and hi[3].tolist() == [51, 100]


def test_interpolation_is_a_plus_weight_times_the_difference() -> None:
    assert type7_interpolate([2], [6], [0.25]).tolist() == [3.0]
    assert type7_interpolate(np.array([7], np.int64), np.array([7], np.int64), [0.9]).tolist() == [7.0]


def test_an_empty_sample_gives_nan_at_every_level() -> None:
    assert np.isnan(type7_percentiles(0, LEVELS, lambda r: r)).all()
    assert np.isnan(percentiles(np.zeros(0, np.int64), LEVELS)).all()


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 12_345])
def test_numpy_type7_known_answer(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.lognormal(8, 1.5, n).astype(np.int64)
    ours = percentiles(x, LEVELS)
    theirs = np.percentile(x, LEVELS, method="linear")  # numpy's type 7 (its weight rounds apart)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=0)  # h − ⌊h⌋ rounds apart
    s = np.sort(x)
    for level, q in zip(LEVELS, ours, strict=True):  # the definition in Python floats
        h = (n - 1) * level / 100.0
        lo = math.floor(h)
        a, b = float(s[lo]), float(s[min(lo + 1, n - 1)])
        assert q == a + (h - lo) * (b - a)


def test_every_path_gives_the_same_figures_to_the_last_bit() -> None:
    rng = np.random.default_rng(7)
    x = rng.lognormal(9, 1.2, 50_001).astype(np.int64)
    x[rng.integers(0, x.size, 40)] = rng.integers(10**7, 10**9, 40)
    chunks = lambda: (x[i : i + 4096] for i in range(0, x.size, 4096))  # noqa: E731
    want = percentiles_sorted(np.sort(x), LEVELS)
    assert percentiles(x, LEVELS).tolist() == want.tolist()
    assert percentiles_of_scan(LocalScan(chunks), LEVELS).tolist() == want.tolist()
    counter = ValueCounter(int(x.min()), int(x.max()))
    for c in chunks():
        counter.add(c)
    table = counter.table()
    assert table is not None and table.percentiles(LEVELS).tolist() == want.tolist()
    grouped = LocalScan(lambda: ((c, np.zeros(c.size, np.int64)) for c in chunks()))
    assert group_percentiles(grouped, group_extent(grouped, 1), LEVELS)[0].tolist() == want.tolist()
    s = np.sort(x)
    intervals = quantile_intervals(x.size, LEVELS[1:], lambda r: {k: s[k] for k in r}, None)
    resolved = {q.level: q.value for q in intervals if q.value is not None}
    assert len(resolved) >= 6
    for level, value in resolved.items():
        assert value == want[LEVELS.index(level)]
    summary = summarize_chunks(chunks)
    assert [summary.p50, summary.p99, summary.p99_999] == [want[3], want[5], want[8]]


def test_the_histogram_estimate_interpolates_as_type7_between_bucket_midpoints() -> None:
    x = np.arange(1, 101, dtype=np.int64)  # below 2·128: a bucket per value, midpoints exact
    hist = LogLinear(histogram_chunk(x), 1, 100)
    assert hist.quantiles(LEVELS).tolist() == percentiles(x, LEVELS).tolist()
