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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab.stats.categories import StackedResult, categorize
from jitterlab.stats.scan import LocalScan, Scan
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
    """The screening baseline of a reference run's sorted-or-not values and its stacked test
    (:func:`baseline_scan` of them as one chunk)."""
    return baseline_scan(LocalScan(lambda: [np.asarray(values)]), result)


def screen(values: np.ndarray, baseline: Baseline, alpha: float = DEFAULT_ALPHA) -> Verdict:
    """The verdict on one trial's latencies (:func:`screen_scan` of them as one chunk)."""
    return screen_scan(LocalScan(lambda: [np.asarray(values)]), baseline, alpha)


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


def baseline_chunk(x: np.ndarray, first_cut: float, top_cut: float) -> tuple[np.ndarray, int, int, float]:
    """One chunk's share of a baseline: its values above ``top_cut``, how many lie above
    ``first_cut``, its size and its largest value (−inf when empty)."""
    v = x.astype(np.float64)
    return v[v > top_cut], int((v > first_cut).sum()), int(v.size), float(v.max()) if v.size else -math.inf


def baseline_scan(scan: Scan, result: StackedResult) -> Baseline:
    """The screening baseline of a reference sample read by ``scan`` and its stacked test
    ``result``: its thresholds, outlier share and top cut (the module docs). Holds only the
    values above the last threshold (the stack's top category: the values the stacked test
    could not split further, a handful in practice)."""
    if not result.thresholds:
        raise ValueError("the baseline has no outlier categories (all its values are equal)")
    tops, count, outliers, highest = [], 0, 0, -math.inf
    for top_part, above, size, largest in scan.map(
        baseline_chunk, result.thresholds[0], result.thresholds[-1]
    ):
        tops.append(top_part)
        outliers += above
        count += size
        highest = max(highest, largest)
    top = np.sort(np.concatenate(tops)) if tops else np.zeros(0)
    if top.size == 0:
        top = np.array([highest])
    level = robust_scale_sorted(top)
    cut = level.center + result.threshold * level.scale if level.scale > 0 else float(top[-1])
    return Baseline(result.thresholds, outliers / count, max(cut, float(top[-1])), count)


def screen_chunk(x: np.ndarray, thresholds: tuple[float, ...]) -> tuple[np.ndarray, float]:
    """One chunk's category counts under a baseline's thresholds and its largest value."""
    counts = np.zeros(len(thresholds) + 1, np.int64)
    if x.size == 0:
        return counts, -math.inf
    v = x.astype(np.float64)
    counts += np.bincount(categorize(v, thresholds).astype(np.int64), minlength=counts.size)
    return counts, float(v.max())


def screen_scan(scan: Scan, baseline: Baseline, alpha: float = DEFAULT_ALPHA) -> Verdict:
    """The verdict on a trial's latencies read by ``scan`` against ``baseline``, in one pass
    (its category counts and largest value, then :func:`screen_counts`)."""
    counts = np.zeros(len(baseline.thresholds) + 1, np.int64)
    highest = -math.inf
    for c, largest in scan.map(screen_chunk, baseline.thresholds):
        counts += c
        highest = max(highest, largest)
    if not counts.any():
        return screen_counts((), math.nan, baseline, alpha)
    return screen_counts(tuple(int(c) for c in counts), highest, baseline, alpha)
