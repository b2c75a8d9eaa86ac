"""Latency statistics: pure functions over numpy arrays (no I/O, no plotting, no state).

Every estimator here is documented with its formula and reference in docs/statistics.md.
"""

from jitterlab.stats.categories import Category, StackedResult, categorize
from jitterlab.stats.compare import Comparison, compare_samples
from jitterlab.stats.gesd import GesdResult, generalized_esd, stacked_gesd
from jitterlab.stats.screening import Baseline, Verdict, baseline_of, screen, screen_counts
from jitterlab.stats.summary import SUMMARY_PERCENTILES, Summary, percentiles, summarize
from jitterlab.stats.walsh import WalshResult, stacked_walsh, walsh_test
from jitterlab.stats.windows import WindowTable, time_windows
from jitterlab.stats.zscore import (
    RobustScale,
    modified_z_outliers,
    modified_z_scores,
    robust_scale,
    stacked_z_test,
)

__all__ = [
    "SUMMARY_PERCENTILES",
    "Baseline",
    "Category",
    "Comparison",
    "GesdResult",
    "RobustScale",
    "StackedResult",
    "Summary",
    "Verdict",
    "WalshResult",
    "WindowTable",
    "baseline_of",
    "categorize",
    "compare_samples",
    "generalized_esd",
    "modified_z_outliers",
    "modified_z_scores",
    "percentiles",
    "robust_scale",
    "screen",
    "screen_counts",
    "stacked_gesd",
    "stacked_walsh",
    "stacked_z_test",
    "summarize",
    "time_windows",
    "walsh_test",
]
