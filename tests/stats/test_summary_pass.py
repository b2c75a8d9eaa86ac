"""The summary in one pass (stats/summary.py ``summarize_differences``; the C++ kernel
``jl_summary_pass``): exact integer moments and value counts, equal to the in-memory summary
to the last bit whatever the chunking, and to independent Python integer arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from jitterlab.stats import kernels
from jitterlab.stats.summary import (
    exact_squares,
    integer_moments,
    summarize,
    summarize_chunks,
    summarize_differences,
)
from jitterlab.stats.valuetable import ValueCounter

pytestmark = pytest.mark.skipif(not kernels.available(), reason="the C++ kernels are not built")


def _sample(seed: int, n: int = 200_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.lognormal(8, 1.2, n).astype(np.int64) - 500
    x[rng.choice(n, 50, replace=False)] = rng.integers(-(2**40), 2**40, 50)  # far on both sides
    return x


def _chunks(x: np.ndarray, size: int):
    return lambda: (x[i : i + size] for i in range(0, x.size, size))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_moments_equal_python_integers_and_the_std_is_the_exact_one(seed: int) -> None:
    x = _sample(seed, 20_000)
    python = [int(v) for v in x]
    count, lowest, highest, total, squares = integer_moments(x)
    assert (count, lowest, highest) == (len(python), min(python), max(python))
    assert total == sum(python) and squares == sum(v * v for v in python) == exact_squares(x)
    exact = Fraction(len(python) * squares - total * total, len(python) ** 2)
    assert summarize(x).std == math.sqrt(exact)  # one rounding of the exact variance, then sqrt


@pytest.mark.parametrize("size", [1_000, 2_048, 65_536, 150_001])
def test_one_pass_equals_in_memory_to_the_last_bit(size: int) -> None:
    x = _sample(7)
    assert summarize_chunks(_chunks(x, size)).to_dict() == summarize(x).to_dict()


def test_differences_are_read_without_making_them() -> None:
    x = _sample(8)
    send = np.cumsum(np.random.default_rng(8).integers(1, 10_000, x.size))
    recv = send + x
    pairs = lambda: ((send[i : i + 70_000], recv[i : i + 70_000]) for i in range(0, x.size, 70_000))  # noqa: E731
    assert summarize_differences(pairs, _chunks(x, 70_000)) == summarize(x)


def test_a_first_chunk_far_from_the_rest_still_counts_every_value_exactly() -> None:
    # the counter is sized from the first chunk: here every later value lies below or far above it
    rng = np.random.default_rng(9)
    x = np.concatenate([np.full(1000, 10**9), rng.integers(0, 10**6, 300_000), [-5, 2**45]]).astype(np.int64)
    assert summarize_chunks(_chunks(x, 1000)) == summarize(x)


def test_a_chunk_the_kernel_refuses_falls_back_to_the_radix_percentiles() -> None:
    # b - a overflows int64 in the second chunk: the moments come from numpy (wrapping as the
    # samples file's reader does) and the percentiles from radix refinement of ``chunks``
    a = np.zeros(4, np.int64)
    b = np.array([5, 7, 9, 11], np.int64)
    a2 = np.array([-(2**62)], np.int64)
    b2 = np.array([2**62], np.int64)
    x = np.concatenate([b - a, b2 - a2])  # numpy wraps to -2^63
    pairs = lambda: iter([(a, b), (a2, b2)])  # noqa: E731
    assert summarize_differences(pairs, _chunks(x, 4)) == summarize(x)


def test_counter_around_puts_values_below_its_range_first() -> None:
    counter = ValueCounter.around(100, 110)
    assert counter.base < 100 and counter.base + counter.dense.size > 110
    low = counter.base - 3
    counter.add_beyond(np.array([low, 10**8, low], np.int64))
    counter.dense[105 - counter.base] = 2
    table = counter.table()
    assert table is not None
    assert table.values.tolist() == [low, 105, 10**8] and table.counts.tolist() == [2, 2, 1]


@pytest.mark.parametrize("readers", [1, 2, 3, 16])
def test_row_groups_decoded_side_by_side_come_in_file_order(tmp_path, readers: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jitterlab.store.reader import send_recv_chunks, summarize_file

    x = _sample(10, 50_000)
    send = np.cumsum(np.random.default_rng(10).integers(1, 10_000, x.size))
    path = tmp_path / "samples.parquet"
    pq.write_table(pa.table({"t_send_ns": send, "t_recv_ns": send + x}), path, row_group_size=4_000)
    chunks = list(send_recv_chunks(path, readers))
    assert len(chunks) == 13
    assert np.array_equal(np.concatenate([a for a, _ in chunks]), send)
    assert np.array_equal(np.concatenate([b for _, b in chunks]), send + x)
    assert summarize_file(path) == summarize(x)
