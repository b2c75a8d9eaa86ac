"""Latency statistics: pure functions over numpy arrays (no I/O, no plotting, no state).

Every estimator here is documented with its formula and reference in docs/statistics.md.
"""

from typing import TYPE_CHECKING, Any

# each name from its module, imported on first use (PEP 562): scipy comes only with compare
_HOME = {
    "Baseline": "screening",
    "Category": "categories",
    "Comparison": "compare",
    "GesdResult": "gesd",
    "RobustScale": "zscore",
    "SUMMARY_PERCENTILES": "summary",
    "StackedResult": "categories",
    "Summary": "summary",
    "Verdict": "screening",
    "WalshResult": "walsh",
    "WindowTable": "windows",
    "baseline_of": "screening",
    "categorize": "categories",
    "compare_samples": "compare",
    "generalized_esd": "gesd",
    "modified_z_outliers": "zscore",
    "modified_z_scores": "zscore",
    "percentiles": "summary",
    "robust_scale": "zscore",
    "screen": "screening",
    "screen_counts": "screening",
    "stacked_gesd": "extremes",
    "stacked_walsh": "extremes",
    "stacked_z_test": "zscore",
    "summarize": "summary",
    "time_windows": "windows",
    "walsh_test": "walsh",
}

if TYPE_CHECKING:
    from jitterlab.stats.categories import Category, StackedResult, categorize
    from jitterlab.stats.compare import Comparison, compare_samples
    from jitterlab.stats.extremes import stacked_gesd, stacked_walsh
    from jitterlab.stats.gesd import GesdResult, generalized_esd
    from jitterlab.stats.screening import Baseline, Verdict, baseline_of, screen, screen_counts
    from jitterlab.stats.summary import SUMMARY_PERCENTILES, Summary, percentiles, summarize
    from jitterlab.stats.walsh import WalshResult, walsh_test
    from jitterlab.stats.windows import WindowTable, time_windows
    from jitterlab.stats.zscore import (
        RobustScale,
        modified_z_outliers,
        modified_z_scores,
        robust_scale,
        stacked_z_test,
    )


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(f"jitterlab.stats.{_HOME[name]}"), name)
    raise AttributeError(f"module 'jitterlab.stats' has no attribute {name!r}")


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
