from __future__ import annotations

import numpy as np
import pytest

from jitterlab.core.errors import JitterlabError
from jitterlab.core.render import render
from jitterlab.core.units import format_count, format_ns, parse_duration_ns
from jitterlab.stats import percentiles, summarize


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("1ms", 1_000_000),
        ("250us", 250_000),
        ("1.5s", 1_500_000_000),
        ("2", 2_000_000_000),
        ("500ns", 500),
        ("10µs", 10_000),
    ],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


def test_parse_duration_rejects_garbage() -> None:
    with pytest.raises(JitterlabError):
        parse_duration_ns("soon")


def test_format_ns_picks_a_readable_unit() -> None:
    assert format_ns(512) == "512 ns"
    assert format_ns(12_345) == "12.3 µs"
    assert format_ns(4_560_000) == "4.56 ms"
    assert format_ns(2.5e9) == "2.5 s"
    assert format_ns(float("nan")) == "n/a"
    assert format_count(1_000_000) == "1M"
    assert format_count(50_000) == "50k"


def test_percentiles_match_numpy_linear() -> None:
    rng = np.random.default_rng(7)
    x = rng.lognormal(8, 1, 10_001).astype(np.int64)
    ps = [0, 1, 50, 90, 99, 99.9, 99.99, 100]
    assert np.allclose(percentiles(x, ps), np.percentile(x, ps, method="linear"))


def test_summary_known_answer() -> None:
    s = summarize(np.array([1, 2, 3, 4, 100]))
    assert (s.count, s.min, s.max, s.p50) == (5, 1, 100, 3)
    assert s.mean == pytest.approx(22.0)
    assert s.std == pytest.approx(np.std([1, 2, 3, 4, 100]))
    assert s.p90 == pytest.approx(np.percentile([1, 2, 3, 4, 100], 90))


def test_render_aligns_columns() -> None:
    text = render(["a", "bb"], [["x", 1], ["yy", 22]])
    assert text.splitlines()[2] == "x    1"
