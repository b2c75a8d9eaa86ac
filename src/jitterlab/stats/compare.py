"""Comparison of two runs: QQ data, distribution tests, percentile differences, a verdict.

- two-sample Kolmogorov-Smirnov (scipy.stats.ks_2samp), k-sample Anderson-Darling
  (scipy.stats.anderson_ksamp) and Mann-Whitney U (scipy.stats.mannwhitneyu) on at most
  ``max_test_samples`` values per run (a seeded random subsample above that);
- for each percentile, the relative difference (Q_B - Q_A) / Q_A with a confidence
  interval built from each run's own percentile interval (stats/quantile_ci.py: binomial
  for independent samples, block for dependent ones, as describe and show print them),
  each at level sqrt(confidence): the runs are independent, so both hold together with
  probability ≥ confidence, and then (Q_B − Q_A) / Q_A lies in
  [low_B / high_A − 1, high_B / low_A − 1];
- a level either run does not resolve (fewer than 10 samples expected beyond it) gets no
  verdict;
- verdict per percentile against the noise threshold (default 5 %): "regressed" when the
  whole interval lies above +threshold, "improved" when it lies below -threshold, else
  "within noise". The percentiles go to p99.99, as ``show`` does; the maximum is shown
  with its change but judged by no verdict (it is one sample: no interval can be had). The overall verdict is "regressed" if any percentile regressed,
  "improved" if any improved and none regressed, else "within noise" (criterion.rs).

With millions of samples every p-value is tiny; the verdict therefore rests on effect
size (the percentile differences), not on the tests.

Every step needs the sample only through two questions — the values at chosen positions (the
test subsample) and the values at chosen ranks of the sorted sample (percentiles, the
intervals' order statistics, the QQ points) — so one code path, :func:`compare_ordered`,
serves a sample held in memory (:class:`SortedSample`) and one read in row groups
(:class:`ChunkedSample`: exact order statistics by radix refinement, positions gathered in
one pass), with identical results: the random draws depend on the sizes only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from jitterlab.stats import quantile_ci
from jitterlab.stats.quantile_ci import QuantileInterval
from jitterlab.stats.scan import LocalScan
from jitterlab.stats.summary import extent_by, order_statistics_by
from jitterlab.stats.type7 import type7_percentiles

COMPARE_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 99.99)
MAX_ROW = 100.0  # the maximum, shown after the percentiles without a verdict
NO_VERDICT = "not judged (one sample)"
NOT_RESOLVED = "not judged (not resolved)"
QQ_PROBABILITIES = np.concatenate([np.linspace(0.01, 0.99, 99), [0.995, 0.999, 0.9995, 0.9999]])


@dataclass(frozen=True)
class PercentileDiff:
    percentile: float
    a: float
    b: float
    relative: float  # (b - a) / a
    ci_low: float
    ci_high: float
    verdict: str
    a_interval: QuantileInterval | None = None  # each run's own interval (at sqrt(confidence))
    b_interval: QuantileInterval | None = None


@dataclass(frozen=True)
class Comparison:
    n_a: int
    n_b: int
    tested_a: int
    tested_b: int
    ks_statistic: float
    ks_pvalue: float
    ad_statistic: float
    ad_pvalue: float
    mw_statistic: float
    mw_pvalue: float
    percentiles: tuple[PercentileDiff, ...]
    verdict: str
    noise_threshold: float
    confidence: float
    qq_probabilities: np.ndarray
    qq_a: np.ndarray
    qq_b: np.ndarray


class OrderedSample(Protocol):
    """A sample as the comparison asks about it (see the module docs)."""

    size: int

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        """float64 values at 0-based ranks of the sorted sample (any shape)."""
        ...

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        """float64 values at 0-based positions in the sample's own order."""
        ...

    def intervals(self, levels: tuple[float, ...], confidence: float) -> list[QuantileInterval]:
        """Each level's interval (stats/quantile_ci.py), blocks by position in the sample."""
        ...


class SortedSample:
    """A sample held in memory (sorted once, on the first rank asked for)."""

    def __init__(self, values: npt.ArrayLike) -> None:
        self.values = np.asarray(values, dtype=np.float64)
        self.size = int(self.values.size)
        self._sorted: np.ndarray | None = None

    @classmethod
    def _of_sorted(cls, ordered: np.ndarray) -> SortedSample:
        """A sample already sorted (no second sort)."""
        sample = cls(ordered)
        sample._sorted = sample.values
        return sample

    @classmethod
    def held(cls, values: npt.ArrayLike, ordered: np.ndarray) -> SortedSample:
        """A sample whose sort the caller has (``ordered``: ``values`` sorted): not sorted
        again; its positions are still those of ``values`` (a subsample is the same)."""
        sample = cls(values)
        sample._sorted = np.asarray(ordered, dtype=np.float64)
        return sample

    def sorted(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.sort(self.values)
        return self._sorted

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        return np.asarray(self.sorted()[ranks])

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        return np.asarray(self.values[positions])

    def intervals(self, levels: tuple[float, ...], confidence: float) -> list[QuantileInterval]:
        return quantile_ci.intervals_of_sample(self.values, levels, None, confidence, self.sorted())


class ChunkedSample:
    """An integer sample read as chunks (each call of ``chunks`` reads it again, in the same
    order), never held: ranks are found by radix refinement
    (:func:`jitterlab.stats.summary.order_statistics_by`), positions gathered in one pass."""

    def __init__(self, chunks: Callable[[], Iterable[np.ndarray]]) -> None:
        self.chunks = chunks
        self.size, self.lowest, self.highest, _ = extent_by(LocalScan(chunks))

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        r = np.asarray(ranks, np.int64)
        wanted = sorted({int(v) for v in r.ravel()})
        found = order_statistics_by(LocalScan(self.chunks), wanted, self.lowest, self.highest, self.size)
        table = np.array([found[k] for k in wanted], dtype=np.float64)
        return np.asarray(table[np.searchsorted(wanted, r)])

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        p = np.asarray(positions, np.int64)
        order = np.argsort(p, kind="stable")
        ordered = p[order]
        out = np.empty(p.size, np.float64)
        offset = 0
        for x in self.chunks():
            lo, hi = np.searchsorted(ordered, [offset, offset + x.size])
            out[order[lo:hi]] = x[ordered[lo:hi] - offset]
            offset += x.size
        return out

    def intervals(self, levels: tuple[float, ...], confidence: float) -> list[QuantileInterval]:
        def stats(ranks: list[int]) -> dict[int, float]:
            found = order_statistics_by(LocalScan(self.chunks), ranks, self.lowest, self.highest, self.size)
            return {r: float(v) for r, v in found.items()}

        def counts(cuts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
            blocks = quantile_ci.block_count(self.size)
            width = quantile_ci.time_blocks(0, self.size - 1, blocks)
            total = np.zeros((len(cuts) + 1, blocks), np.int64)
            offset = 0
            for x in self.chunks():
                position = np.arange(offset, offset + x.size, dtype=np.int64)
                total += quantile_ci.block_counts_chunk((position, x), 0, width, blocks, tuple(cuts))
                offset += x.size
            return total[0], total[1:]

        return quantile_ci.quantile_intervals(self.size, levels, stats, counts, confidence)


def _subsample(x: OrderedSample, m: int, rng: np.random.Generator) -> np.ndarray:
    positions = np.arange(x.size) if x.size <= m else rng.choice(x.size, size=m, replace=False)
    return x.at_positions(positions)


def interval_confidence(confidence: float) -> float:
    """The level of each run's interval whose pair holds with probability ``confidence``
    (independent runs): sqrt(confidence)."""
    return math.sqrt(confidence)


def ratio_interval(a: QuantileInterval, b: QuantileInterval) -> tuple[float, float]:
    """Bounds of (Q_B − Q_A) / Q_A from the runs' intervals: [low_B / high_A − 1,
    high_B / low_A − 1] (latencies positive; an unbounded side, or a bound ≤ 0, gives ±inf);
    NaN when either level is not resolved (no interval to judge by)."""
    if not (a.resolved and b.resolved):
        return math.nan, math.nan
    inf = math.inf
    low = b.ci_low / a.ci_high - 1 if b.ci_low is not None and a.ci_high and a.ci_high > 0 else -inf
    high = b.ci_high / a.ci_low - 1 if b.ci_high is not None and a.ci_low and a.ci_low > 0 else inf
    return float(low), float(high)


def ks_distance(a: np.ndarray, b: np.ndarray, ordered: bool = False) -> float:
    """The two-sample Kolmogorov-Smirnov distance D = sup |F_a(x) - F_b(x)| of two non-empty
    samples, computed as scipy.stats.ks_2samp computes its statistic (both empirical CDFs
    at every value of the pooled sample, right-continuous), so equal to it to the last bit,
    without importing scipy; ``ordered``: both are sorted already."""
    if not ordered:
        a, b = np.sort(a), np.sort(b)
    pooled = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, pooled, side="right") / a.size
    cdf_b = np.searchsorted(b, pooled, side="right") / b.size
    diffs = cdf_a - cdf_b
    below = float(np.clip(-diffs[np.argmin(diffs)], 0, 1))
    above = float(diffs[np.argmax(diffs)])
    d = below if below > above else above
    if max(a.size, b.size) <= 10_000:  # scipy's exact mode puts D on the grid of 1/lcm(n_a, n_b)
        lcm = (a.size // math.gcd(a.size, b.size)) * b.size
        d = int(np.round(d * lcm)) * 1.0 / lcm
    return d


def compare_samples(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    noise_threshold: float = 0.05,
    ps: tuple[float, ...] = COMPARE_PERCENTILES,
    confidence: float = 0.95,
    max_test_samples: int = 200_000,
    seed: int = 0,
    distribution_tests: bool = True,
    intervals: tuple[Sequence[QuantileInterval], Sequence[QuantileInterval]] | None = None,
) -> Comparison:
    """Compare sample B (new) with sample A (baseline); see the module docs.
    ``distribution_tests=False`` leaves out Anderson–Darling, Mann–Whitney and the KS
    p-value (NaN), for callers that show only the KS distance and the verdict (the report):
    the distance is then :func:`ks_distance`, equal to scipy's, and scipy is not imported."""
    return compare_ordered(
        SortedSample(a),
        SortedSample(b),
        noise_threshold,
        ps,
        confidence,
        max_test_samples,
        seed,
        distribution_tests,
        intervals,
    )


def compare_ordered(
    xa: OrderedSample,
    xb: OrderedSample,
    noise_threshold: float = 0.05,
    ps: tuple[float, ...] = COMPARE_PERCENTILES,
    confidence: float = 0.95,
    max_test_samples: int = 200_000,
    seed: int = 0,
    distribution_tests: bool = True,
    intervals: tuple[Sequence[QuantileInterval], Sequence[QuantileInterval]] | None = None,
) -> Comparison:
    """:func:`compare_samples` of samples held or read in chunks (identical results);
    ``intervals``: each run's intervals at the levels ``ps`` and level sqrt(confidence)
    (:func:`interval_confidence`) when the caller has them (a stored run's, with blocks by
    send time), else the samples' own (blocks by position)."""
    if xa.size < 2 or xb.size < 2:
        raise ValueError("each sample needs at least 2 values to compare")
    rng = np.random.default_rng(seed)
    ta, tb = _subsample(xa, max_test_samples, rng), _subsample(xb, max_test_samples, rng)
    nan = float("nan")
    ad_statistic = ad_pvalue = mw_statistic = mw_pvalue = ks_pvalue = nan
    if not distribution_tests:
        whole = ta.size == xa.size and tb.size == xb.size
        if whole and isinstance(xa, SortedSample) and isinstance(xb, SortedSample):
            # the whole samples: their sorts serve (the percentiles sort them anyway)
            ks_statistic = ks_distance(xa.sorted(), xb.sorted(), ordered=True)
        else:
            ks_statistic = ks_distance(ta, tb)
    else:
        from scipy import stats  # here, not at import: scipy costs the report a second per process

        ks = stats.ks_2samp(ta, tb)
        ks_statistic, ks_pvalue = float(ks.statistic), float(ks.pvalue)
        with warnings.catch_warnings():  # anderson_ksamp warns when its p-value is capped
            warnings.simplefilter("ignore")
            ad = stats.anderson_ksamp([ta, tb])
        mw = stats.mannwhitneyu(ta, tb, alternative="two-sided")
        ad_statistic, ad_pvalue = float(ad.statistic), float(ad.pvalue)
        mw_statistic, mw_pvalue = float(mw.statistic), float(mw.pvalue)
    if intervals is None:
        level = interval_confidence(confidence)
        intervals = (xa.intervals(tuple(ps), level), xb.intervals(tuple(ps), level))
    if any([q.level for q in side] != list(ps) for side in intervals):
        raise ValueError("the intervals given are not at the compared levels")
    qa, qb = type7_percentiles(xa.size, ps, xa.at_ranks), type7_percentiles(xb.size, ps, xb.at_ranks)
    diffs = []
    for i, p in enumerate(ps):
        ia, ib = intervals[0][i], intervals[1][i]
        lo, hi = ratio_interval(ia, ib)
        if not (ia.resolved and ib.resolved):
            verdict = NOT_RESOLVED
        elif lo > noise_threshold:
            verdict = "regressed"
        elif hi < -noise_threshold:
            verdict = "improved"
        else:
            verdict = "within noise"
        rel = float((qb[i] - qa[i]) / qa[i])
        diffs.append(PercentileDiff(p, float(qa[i]), float(qb[i]), rel, lo, hi, verdict, ia, ib))
    verdicts = {d.verdict for d in diffs}
    top_a = float(xa.at_ranks(np.array([xa.size - 1]))[0])
    top_b = float(xb.at_ranks(np.array([xb.size - 1]))[0])
    diffs.append(PercentileDiff(MAX_ROW, top_a, top_b, (top_b - top_a) / top_a, nan, nan, NO_VERDICT))
    overall = (
        "regressed"
        if "regressed" in verdicts
        else "improved"
        if "improved" in verdicts
        else NOT_RESOLVED
        if verdicts == {NOT_RESOLVED}  # no level both runs resolve: nothing was judged
        else "within noise"
    )
    probs = QQ_PROBABILITIES
    return Comparison(
        n_a=int(xa.size),
        n_b=int(xb.size),
        tested_a=int(ta.size),
        tested_b=int(tb.size),
        ks_statistic=ks_statistic,
        ks_pvalue=ks_pvalue,
        ad_statistic=ad_statistic,
        ad_pvalue=ad_pvalue,
        mw_statistic=mw_statistic,
        mw_pvalue=mw_pvalue,
        percentiles=tuple(diffs),
        verdict=overall,
        noise_threshold=noise_threshold,
        confidence=confidence,
        qq_probabilities=probs,
        qq_a=type7_percentiles(xa.size, probs * 100, xa.at_ranks),
        qq_b=type7_percentiles(xb.size, probs * 100, xb.at_ranks),
    )
