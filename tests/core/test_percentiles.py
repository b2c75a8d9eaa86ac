"""`--percentiles` entries (core/percentiles.py): the dotted spelling and the summary keys'
underscored one name the same percentile; no other underscore slips through float()."""

from __future__ import annotations

import pytest

from jitterlab.core.errors import JitterlabError
from jitterlab.core.percentiles import parse_percentiles, percentile_key


def test_the_summary_key_spelling_is_the_dotted_percentile() -> None:
    assert (
        parse_percentiles("p99_9,p99_999,50") == parse_percentiles("99.9,p99.999,p50") == (50.0, 99.9, 99.999)
    )
    assert [percentile_key(p) for p in parse_percentiles("p99_9,max")] == ["p99.9", "max"]
    assert parse_percentiles("9_9") == (9.9,)  # float("9_9") is 99.0: the key's spelling wins


@pytest.mark.parametrize("text", ["1_0_0", "99_", "_99", "p99__9", "99.9_9"])
def test_an_underscore_that_is_not_a_decimal_point_is_refused(text: str) -> None:
    # float("1_0_0") is 100.0 and float("99.9_9") 99.99: taken as they stand, these would be
    # percentiles nobody wrote, without a word
    with pytest.raises(JitterlabError, match="is not a percentile"):
        parse_percentiles(text)
