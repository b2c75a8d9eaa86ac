"""The distribution-free interval of a percentile from two order statistics.

For n independent samples, the number B of samples below the true p-quantile is
Binomial(n, p); with ranks l = F⁻¹(α/2) and u = F⁻¹(1 − α/2) + 1 of that binomial
(1-based), P(x₍ₗ₎ ≤ ξₚ ≤ x₍ᵤ₎) ≥ 1 − α (Hahn & Meeker, *Statistical Intervals*, 2nd ed.,
§5.2; ``scipy.stats.quantile_test(...).confidence_interval()`` gives the same ranks).
When u > n the sample holds too few values beyond the level: the upper end is open and
the level is *unresolved*.

Latency samples are not independent (spikes cluster), so this interval is too narrow
where they do; the block methods of the honest-numbers work (issue 38) replace it there.
A pure function: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

CONFIDENCE = 0.95
METHOD = "binomial order statistics (distribution-free, independent samples)"


@dataclass(frozen=True)
class Ranks:
    """0-based ranks of the interval's ends in the sorted sample; ``high`` None: open."""

    low: int
    high: int | None


def interval_ranks(n: int, p: float, confidence: float = CONFIDENCE) -> Ranks | None:
    """The ranks of the ``confidence`` interval of the ``p`` quantile (0 < p < 1) of ``n``
    samples; None for an empty sample."""
    from scipy.stats import binom  # here, not at import: scipy costs a command's start

    if n <= 0:
        return None
    alpha = 1 - confidence
    low = int(binom.ppf(alpha / 2, n, p))  # 1-based rank l (0 would be unbounded below)
    high = int(binom.ppf(1 - alpha / 2, n, p)) + 1  # 1-based rank u
    return Ranks(max(low, 1) - 1, high - 1 if high <= n else None)
