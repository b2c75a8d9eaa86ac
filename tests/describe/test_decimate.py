"""M4 decimation keeps a lone spike that random subsampling loses (issue 25 item 2)."""

from __future__ import annotations

import numpy as np

from jitterlab.describe.decimate import m4_fold, m4_select, pixel_columns

PIXELS = 1200


def _run(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """n samples 1 µs apart with a lognormal body near 5 µs and one 10 ms spike."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64) * 1000 + 10**12
    v = (rng.lognormal(np.log(5000), 0.3, n)).astype(np.int64)
    where = int(rng.integers(n))
    v[where] = 10_000_000
    return t, v, where


def test_a_lone_spike_survives_m4_but_not_a_random_subsample() -> None:
    n = 10_000_000
    t, v, where = _run(n, seed=11)
    start, stop = int(t[0]), int(t[-1])
    chunk = 1 << 20
    kt, kv, _ = m4_fold(
        (
            (t[i : i + chunk], v[i : i + chunk], np.zeros(min(chunk, n - i), np.int64))
            for i in range(0, n, chunk)
        ),
        start,
        stop,
        PIXELS,
    )
    assert kv.size <= 4 * PIXELS
    assert int(kv.max()) == 10_000_000
    assert int(kt[np.argmax(kv)]) == int(t[where])
    # what the report drew before: a random 20 000 of the points (the spike is almost surely lost)
    sub = np.random.default_rng(0).choice(n, 20_000, replace=False)
    assert v[sub].max() < 10_000_000


def test_fold_over_chunks_equals_one_selection_of_the_whole() -> None:
    rng = np.random.default_rng(3)
    n = 200_000
    t = np.sort(rng.integers(0, 10**9, n))
    v = rng.integers(1000, 5000, n)  # many ties: the tie rule must not depend on the chunking
    g = rng.integers(0, 3, n)
    whole = m4_select(t, v, g, 0, 10**9, 300)
    for chunk in (7_777, 65_536, n):
        parts = ((t[i : i + chunk], v[i : i + chunk], g[i : i + chunk]) for i in range(0, n, chunk))
        kt, kv, kg = m4_fold(parts, 0, 10**9, 300)
        order = np.lexsort((v[whole], t[whole]))
        assert np.array_equal(kt, t[whole][order])
        assert np.array_equal(kv, v[whole][order])
        assert np.array_equal(kg, g[whole][order])


def test_every_column_and_group_keeps_its_extremes() -> None:
    rng = np.random.default_rng(5)
    t = rng.integers(0, 1000, 50_000)
    v = rng.integers(0, 10**6, 50_000)
    g = rng.integers(0, 4, 50_000)
    kept = m4_select(t, v, g, 0, 1000, 50)
    col = pixel_columns(t, 0, 1000, 50)
    for c in range(50):
        for k in range(4):
            sel = (col == c) & (g == k)
            mine = kept[(col[kept] == c) & (g[kept] == k)]
            assert v[mine].max() == v[sel].max()
            assert v[mine].min() == v[sel].min()
            assert t[mine].min() == t[sel].min()
            assert t[mine].max() == t[sel].max()
    assert kept.size <= 4 * 50 * 4
