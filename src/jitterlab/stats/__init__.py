"""Latency statistics: pure functions over numpy arrays (no I/O, no plotting, no state).

Every estimator here is documented with its formula and reference in docs/statistics.md.
"""

from jitterlab.stats.summary import SUMMARY_PERCENTILES, Summary, percentiles, summarize

__all__ = ["SUMMARY_PERCENTILES", "Summary", "percentiles", "summarize"]
