"""describe's two-pass path (stats/twopass.py and its C++ kernels, issue 25 item 1) equals
the in-memory stacked z-score test and time windows exactly, whatever the chunking, the
window count, the spread of the values or the bounds that force its fallbacks."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from conftest import heavy_tail
from jitterlab.stats import kernels, loglinear, stacked_z_test, time_windows, twopass, valuetable
from jitterlab.stats.loglinear import layout_bounds, layout_count
from jitterlab.stats.twopass import describe_two_pass, robust_scale_table, stacked_z_table
from jitterlab.stats.valuetable import ValueTable
from jitterlab.stats.zscore import robust_scale

pytestmark = pytest.mark.skipif(not kernels.available(), reason="the C++ core is not built")

N = 400_000
T0 = 1_000_000_000


def pairs_stored_pair_after_pair(seed: int, n: int = N, pairs: int = 4) -> np.ndarray:
    """Send times of ``pairs`` pairs, each in order, stored one pair after the other."""
    rng = np.random.default_rng(seed)
    per_pair = n // pairs
    t = np.concatenate([np.sort(rng.integers(0, 20_000_000_000, per_pair)) + T0 for _ in range(pairs)])
    t[t.size // 2 : t.size // 2 + 1000] += 40_000_000_000  # a gap: empty windows between
    return t


def send_recv(
    t: np.ndarray, x: np.ndarray, size: int
) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    recv = t + x
    return lambda: ((t[i : i + size], recv[i : i + size]) for i in range(0, t.size, size))


def two_pass(t: np.ndarray, x: np.ndarray, width_ns: int, two_sided: bool, size: int = 100_003, **kw: int):  # type: ignore[no-untyped-def]
    return describe_two_pass(
        send_recv(t, x, size), int(x.min()), int(x.max()), int(t.min()), int(t.max()), width_ns,
        lambda table: stacked_z_table(table, 3.5, two_sided, **kw) if table is not None else stacked_z_test(x, two_sided=two_sided),
    )  # fmt: skip


def assert_same_windows(got, expected) -> None:  # type: ignore[no-untyped-def]
    for field in ("start_ns", "count", "mean", "p50", "p99", "max", "category_counts"):
        a, b = getattr(expected, field), getattr(got, field)
        assert a.shape == b.shape and np.array_equal(a, b, equal_nan=True), field
    assert (got.width_ns, got.categories) == (expected.width_ns, expected.categories)


@pytest.mark.parametrize("width_ns", [1_000_000_000, 37_000_000, 1_000_000])
@pytest.mark.parametrize("two_sided", [False, True])
def test_two_pass_equals_in_memory(width_ns: int, two_sided: bool) -> None:
    t = pairs_stored_pair_after_pair(6)
    x = heavy_tail(7, t.size)
    x[:50] = x[50]  # ties inside a window
    expected_categories = stacked_z_test(x, two_sided=two_sided)
    expected = time_windows(t, x, width_ns, expected_categories)
    found = two_pass(t, x, width_ns, two_sided, in_memory_at=1000)  # every level from the table
    assert found is not None
    categories, windows = found
    assert len(expected_categories.thresholds) >= 2
    assert categories == expected_categories
    assert (expected.count == 0).any()
    assert_same_windows(windows, expected)


def test_values_beyond_the_dense_counts_and_several_refinement_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Few dense counters: most values are counted apart and folded; few window counters:
    the p99 of wide buckets needs more than one refinement pass."""
    monkeypatch.setattr(valuetable, "DENSE_VALUES", 5_000)
    monkeypatch.setattr(valuetable, "FOLD_AT", 10_000)
    monkeypatch.setattr(twopass, "COUNTERS", 1 << 14)
    t = pairs_stored_pair_after_pair(8)
    x = heavy_tail(9, t.size)
    expected_categories = stacked_z_test(x)
    found = two_pass(t, x, 1_000_000_000, False, size=65_536, in_memory_at=1000)
    assert found is not None
    assert found[0] == expected_categories
    assert_same_windows(found[1], time_windows(t, x, 1_000_000_000, expected_categories))


def test_too_many_distinct_values_leave_the_stacked_test_to_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(valuetable, "DENSE_VALUES", 1_000)
    monkeypatch.setattr(valuetable, "BEYOND_AT_MOST", 100)
    monkeypatch.setattr(valuetable, "FOLD_AT", 1_000)
    t = pairs_stored_pair_after_pair(10, 50_000)
    x = heavy_tail(11, t.size)
    tables: list[ValueTable | None] = []

    def stacked(table: ValueTable | None):  # type: ignore[no-untyped-def]
        tables.append(table)
        return stacked_z_test(x)

    found = describe_two_pass(
        send_recv(t, x, 7_001), int(x.min()), int(x.max()), int(t.min()), int(t.max()), 10**9, stacked
    )
    assert tables == [None] and found is not None
    assert_same_windows(found[1], time_windows(t, x, 10**9, stacked_z_test(x)))


def test_ties_negative_latencies_and_the_meanad_fallback() -> None:
    rng = np.random.default_rng(2)
    x = np.full(N, -1_000, np.int64)  # a clock offset: negative latencies are values like any other
    x[rng.random(N) < 0.3] = -999  # quantised: MAD = 0, the MeanAD form is used
    x[rng.random(N) < 0.001] = 5_000
    t = np.arange(N, dtype=np.int64) * 10_000 + T0
    expected = stacked_z_test(x)
    assert expected.levels and expected.levels[0].fallback  # type: ignore[attr-defined]
    found = two_pass(t, x, 1_000_000_000, False, in_memory_at=10)
    assert found is not None and found[0] == expected
    assert_same_windows(found[1], time_windows(t, x, 1_000_000_000, expected))
    equal = np.full(1000, 7, np.int64)  # every value equal: no level, one category
    found = two_pass(t[:1000], equal, 1_000_000, False)
    assert found is not None and found[0] == stacked_z_test(equal)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1001, 1002])
def test_robust_scale_of_a_table_small_and_even_sizes(n: int) -> None:
    x = heavy_tail(3, n)
    values, counts = np.unique(x, return_counts=True)
    assert robust_scale_table(ValueTable(values, counts.astype(np.int64))) == robust_scale(x)


def test_extents_that_do_not_hold_the_samples_give_no_answer() -> None:
    """A wrong first send time or minimum (a file changed behind run.json): None, so the
    caller takes the radix path, never a wrong table."""
    t = np.arange(10_000, dtype=np.int64) * 1000 + T0
    x = heavy_tail(12, t.size)
    stacked = lambda table: stacked_z_test(x)  # noqa: E731
    chunks = send_recv(t, x, 999)
    assert describe_two_pass(chunks, int(x.min()), int(x.max()), T0 + 5, int(t.max()), 10**9, stacked) is None
    assert describe_two_pass(chunks, int(x.min()) + 1, int(x.max()), T0, int(t.max()), 10**9, stacked) is None
    assert (
        describe_two_pass(chunks, int(x.min()), int(x.max()), T0, int(t.max()) - 10**9, 10**9, stacked)
        is None
    )


def test_histogram_layout_is_contiguous_and_bounded() -> None:
    """The kernel's buckets (stats/loglinear.py's layout with s significant bits): no gap, no
    overlap, at most 2^(1-s) of their values wide, the report's layout at s = SUB_BITS + 1."""
    for sub_bits in (4, 8, 10, 11):
        n = layout_count(1 << 40, sub_bits)
        first, width = layout_bounds(np.arange(n, dtype=np.int64), sub_bits)
        assert first[0] == 0 and np.array_equal(first[1:], first[:-1] + width[:-1])
        assert (width[first >= 1 << sub_bits] <= first[first >= 1 << sub_bits] >> (sub_bits - 1)).all()
        assert first[-1] <= 1 << 40 < first[-1] + width[-1]
    values = np.array([0, 5, 255, 256, 257, 4095, 1 << 33, (1 << 40) + 12345], np.int64)
    index = loglinear.bucket_index(values)
    first, width = layout_bounds(index, loglinear.SUB_BITS + 1)
    assert ((first <= values) & (values < first + width)).all()
