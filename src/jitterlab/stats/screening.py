"""Trial screening against a baseline (seed 003 §4.3; the stacked test's baseline mode,
§5.1 eqs. 4–5): is a trial's latency *contaminated* by spikes the reference run did not have?

A baseline run gives the stacked modified z-score thresholds t_0 < … < t_(k−1) and its
outlier share p0 (samples above t_0). A trial of n samples with x of them above t_0 is
contaminated when either

1. its outlier share exceeds the baseline's by a one-sided exact binomial test,
   P(X ≥ x | n, p0) < alpha (default 0.01); p0 = 0 is replaced by 0.5 / n_baseline (half a
   sample: a baseline with no outlier does not make every single outlier decisive), or
2. any sample exceeds the baseline's *top cut*: the cut the stacked test would make above
   the baseline's top category, center + threshold·scale of that category (its largest
   value when its scale is 0). No baseline sample lies above it.

Both the live monitor (``monitor trials``) and ``describe --baseline`` call :func:`screen`,
so their verdicts agree by construction; a test checks that they do on the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab.stats.categories import StackedResult, categorize
from jitterlab.stats.zscore import robust_scale_sorted

DEFAULT_ALPHA = 0.01
MIN_BASELINE_SAMPLES = 100


@dataclass(frozen=True)
class Baseline:
    """What screening needs of a reference run."""

    thresholds: tuple[float, ...]
    outlier_share: float
    top_cut: float
    samples: int


@dataclass(frozen=True)
class Verdict:
    samples: int
    outliers: int
    share: float
    category_counts: tuple[int, ...]
    max_value: float
    p_value: float
    contaminated: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "outliers": self.outliers,
            "outlier_share": self.share,
            "category_counts": list(self.category_counts),
            "max_ns": self.max_value,
            "p_value": self.p_value,
            "contaminated": self.contaminated,
            "reason": self.reason,
        }


def baseline_of(values: np.ndarray, result: StackedResult) -> Baseline:
    """The screening baseline of a reference run's sorted-or-not values and its stacked test."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    if not result.thresholds:
        raise ValueError("the baseline has no outlier categories (all its values are equal)")
    top = ordered[ordered > result.thresholds[-1]]
    if top.size == 0:
        top = ordered[-1:]
    level = robust_scale_sorted(top)
    cut = level.center + result.threshold * level.scale if level.scale > 0 else float(top[-1])
    outliers = int((ordered > result.thresholds[0]).sum())
    return Baseline(result.thresholds, outliers / ordered.size, max(cut, float(top[-1])), int(ordered.size))


def screen(values: np.ndarray, baseline: Baseline, alpha: float = DEFAULT_ALPHA) -> Verdict:
    """The verdict on one trial's latencies."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return screen_counts((), float("nan"), baseline, alpha)
    labels = categorize(v, baseline.thresholds)
    counts = np.bincount(labels.astype(np.int64), minlength=len(baseline.thresholds) + 1)
    return screen_counts(tuple(int(c) for c in counts), float(v.max()), baseline, alpha)


def screen_counts(
    counts: tuple[int, ...], max_value: float, baseline: Baseline, alpha: float = DEFAULT_ALPHA
) -> Verdict:
    """The verdict from a trial's category counts and largest value (what a live monitor
    keeps instead of the values)."""
    n = int(sum(counts))
    if n == 0:
        return Verdict(0, 0, 0.0, counts, max_value, 1.0, False, "no samples")
    outliers = n - counts[0]
    p0 = baseline.outlier_share or 0.5 / baseline.samples
    from scipy.stats import binom  # here, not at import: scipy costs `show` a second

    p_value = float(binom.sf(outliers - 1, n, p0)) if outliers else 1.0
    reasons = []
    if max_value > baseline.top_cut:
        reasons.append(f"a sample above the baseline's top cut ({max_value:.0f} > {baseline.top_cut:.0f} ns)")
    if p_value < alpha:
        reasons.append(
            f"outlier share {outliers / n:.2%} vs baseline {baseline.outlier_share:.2%} (binomial p = {p_value:.2g})"
        )
    return Verdict(
        n, outliers, outliers / n, counts, max_value, p_value, bool(reasons), "; ".join(reasons) or "clean"
    )
