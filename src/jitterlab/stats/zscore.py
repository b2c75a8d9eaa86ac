"""Modified z-score (Iglewicz & Hoaglin 1993) and the stacked test (Stauffert et al. 2016).

    Z_i = 0.6745 (x_i - median) / MAD,    MAD = median |x_i - median|

A sample is an outlier when Z_i > 3.5 (high side, the default for latency) or |Z_i| > 3.5
(two-sided). Quantised latencies often give MAD = 0; then the mean absolute deviation
form is used instead of flagging everything above the median:

    Z_i = (x_i - median) / (1.253314 * MeanAD),    MeanAD = mean |x_i - median|

(1.253314 = sqrt(pi/2) makes MeanAD consistent with the standard deviation of a normal
distribution, as 1/0.6745 = 1.4826 does for MAD.) When MeanAD is 0 too, every value is
the median and nothing is an outlier.

The stacked test applies the high-side test to the outliers again and again until none
remain: the main cluster, then outlier categories 1..k. Because every level cuts at
``center + threshold * scale`` the categories are contiguous value ranges separated by
increasing thresholds, so a later run can be classified with a reference run's thresholds
(baseline mode, VRST'16 eqs. 4-5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jitterlab.stats.categories import StackedResult, build_result

MAD_CONSISTENCY = 0.6745  # Phi^-1(0.75): MAD / 0.6745 estimates sigma for normal data
MEANAD_CONSISTENCY = 1.253314  # sqrt(pi / 2): 1.253314 * MeanAD estimates sigma
DEFAULT_THRESHOLD = 3.5
MAX_LEVELS = 64  # a safety bound; real data stops after a handful


@dataclass(frozen=True)
class RobustScale:
    """Center and scale of one level: z = (x - center) / scale."""

    center: float
    scale: float  # MAD / 0.6745, or 1.253314 * MeanAD when MAD is 0; 0 when all values are equal
    mad: float
    fallback: bool  # True when the MeanAD form was used


def _median_of(work: np.ndarray) -> float:
    """Median of ``work``, partially sorting it in place."""
    n = work.size
    mid = n // 2
    if n % 2:
        work.partition(mid)
        return float(work[mid])
    work.partition([mid - 1, mid])
    return float((work[mid - 1] + work[mid]) / 2.0)


def robust_scale(values: npt.ArrayLike) -> RobustScale:
    """Median, MAD and the scale used by the modified z-score (MeanAD fallback when MAD = 0).

    Uses one float64 working copy (partially sorted twice), so peak memory stays near
    twice the input.
    """
    work = np.array(values, dtype=np.float64)
    if work.size == 0:
        raise ValueError("robust_scale of an empty sample")
    center = _median_of(work)
    np.subtract(work, center, out=work)
    np.abs(work, out=work)
    mad = _median_of(work)
    if mad > 0:
        return RobustScale(center, mad / MAD_CONSISTENCY, mad, fallback=False)
    mean_ad = float(work.mean())
    return RobustScale(center, MEANAD_CONSISTENCY * mean_ad, 0.0, fallback=True)


def modified_z_scores(values: npt.ArrayLike, scale: RobustScale | None = None) -> np.ndarray:
    """Modified z-score of every value (against ``scale``, by default the sample's own).

    Where the scale is 0 (all values equal) every score is 0.
    """
    x = np.asarray(values, dtype=np.float64)
    s = scale or robust_scale(x)
    if s.scale == 0:
        return np.zeros_like(x)
    return np.asarray((x - s.center) / s.scale)


def modified_z_outliers(
    values: npt.ArrayLike,
    threshold: float = DEFAULT_THRESHOLD,
    two_sided: bool = False,
    scale: RobustScale | None = None,
) -> np.ndarray:
    """Boolean mask of outliers: Z > threshold, or |Z| > threshold when two-sided."""
    z = modified_z_scores(values, scale)
    return np.asarray(np.abs(z) > threshold if two_sided else z > threshold)


def stacked_z_test(
    values: npt.ArrayLike,
    threshold: float = DEFAULT_THRESHOLD,
    two_sided: bool = False,
    baseline: StackedResult | None = None,
) -> StackedResult:
    """The stacked modified z-score test.

    Parameters
    ----------
    values
        Latency sample.
    threshold
        Z above which a value is an outlier (3.5, Iglewicz & Hoaglin).
    two_sided
        Also flag low outliers of the first level (|Z| > threshold) as category -1; only
        the high side is stacked.
    baseline
        Thresholds from a reference run (baseline mode): they are applied as they are
        instead of being estimated from ``values``.

    Returns
    -------
    StackedResult
        Thresholds, the levels they came from, and categories with value range, count and
        share. Categories partition the sample; empty categories of a baseline are kept so
        that runs line up.
    """
    x = np.asarray(values)
    if x.size == 0:
        raise ValueError("stacked test of an empty sample")
    if baseline is not None:
        return build_result(
            x, baseline.thresholds, baseline.low_threshold, baseline.levels, baseline.threshold, True
        )
    thresholds: list[float] = []
    levels: list[RobustScale] = []
    low = None
    current = x
    for _ in range(MAX_LEVELS):
        level = robust_scale(current)
        if level.scale == 0:
            break
        cut = level.center + threshold * level.scale
        if two_sided and not levels:
            low = level.center - threshold * level.scale
        outliers = current[current > cut]
        if outliers.size == 0:
            break
        thresholds.append(cut)
        levels.append(level)
        current = outliers
    return build_result(x, tuple(thresholds), low, tuple(levels), threshold, False)
