"""Comparison of two runs: QQ data, distribution tests, percentile differences, a verdict.

- two-sample Kolmogorov-Smirnov (scipy.stats.ks_2samp), k-sample Anderson-Darling
  (scipy.stats.anderson_ksamp) and Mann-Whitney U (scipy.stats.mannwhitneyu) on at most
  ``max_test_samples`` values per run (a seeded random subsample above that);
- for each percentile, the relative difference (Q_B - Q_A) / Q_A with a bootstrap
  confidence interval: m-out-of-n resampling (m = min(n, bootstrap_size)) whose
  deviations are rescaled by sqrt(m / n) (Bickel, Götze & van Zwet 1997), percentile
  method;
- verdict per percentile against the noise threshold (default 5 %): "regressed" when the
  whole interval lies above +threshold, "improved" when it lies below -threshold, else
  "within noise". The percentiles go to p99.99, as ``show`` does; the maximum is shown
  with its change but judged by no verdict (it is one sample: no interval can be had). The overall verdict is "regressed" if any percentile regressed,
  "improved" if any improved and none regressed, else "within noise" (criterion.rs).

With millions of samples every p-value is tiny; the verdict therefore rests on effect
size (the percentile differences), not on the tests.

Every step needs the sample only through two questions — the values at chosen positions (the
test subsample) and the values at chosen ranks of the sorted sample (percentiles, the
bootstrap's order statistics, the QQ points) — so one code path, :func:`compare_ordered`,
serves a sample held in memory (:class:`SortedSample`) and one read in row groups
(:class:`ChunkedSample`: exact order statistics by radix refinement, positions gathered in
one pass), with identical results: the random draws depend on the sizes only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from jitterlab.stats.summary import order_statistics_of, sample_extent

COMPARE_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 99.99)
MAX_ROW = 100.0  # the maximum, shown after the percentiles without a verdict
NO_VERDICT = "not judged (one sample)"
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

    def sorted(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.sort(self.values)
        return self._sorted

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        return np.asarray(self.sorted()[ranks])

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        return np.asarray(self.values[positions])


class ChunkedSample:
    """An integer sample read as chunks (each call of ``chunks`` reads it again, in the same
    order), never held: ranks are found by radix refinement
    (:func:`jitterlab.stats.summary.order_statistics_of`), positions gathered in one pass."""

    def __init__(self, chunks: Callable[[], Iterable[np.ndarray]]) -> None:
        self.chunks = chunks
        self.size, self.lowest, self.highest, _ = sample_extent(chunks)

    def at_ranks(self, ranks: np.ndarray) -> np.ndarray:
        r = np.asarray(ranks, np.int64)
        wanted = sorted({int(v) for v in r.ravel()})
        found = order_statistics_of(self.chunks, wanted, (self.size, self.lowest, self.highest))
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


def _subsample(x: OrderedSample, m: int, rng: np.random.Generator) -> np.ndarray:
    positions = np.arange(x.size) if x.size <= m else rng.choice(x.size, size=m, replace=False)
    return x.at_positions(positions)


def percentiles_at(x: OrderedSample, ps: tuple[float, ...] | list[float]) -> np.ndarray:
    """Type-7 percentiles of a non-empty sample (as ``stats.summary.percentiles_sorted``)."""
    h = (x.size - 1) * np.asarray(ps, dtype=np.float64) / 100.0
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, x.size - 1)
    values = x.at_ranks(np.concatenate([lo, hi]))
    a, b = values[: lo.size], values[lo.size :]
    return np.asarray(a + (h - lo) * (b - a))


def resampled_percentiles(
    ordered: OrderedSample | np.ndarray,
    ps: tuple[float, ...],
    m: int,
    resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Type-7 percentiles of ``resamples`` bootstrap resamples of size m (with replacement)
    of the sorted sample ``ordered``, drawn without building the resamples.

    The k-th smallest of m draws from the empirical distribution is ordered[⌊n·U₍ₖ₎⌋], where
    U₍ₖ₎ ~ Beta(k, m − k + 1) is the k-th order statistic of m uniforms, and the next one is
    U₍ₖ₊₁₎ = U₍ₖ₎ + (1 − U₍ₖ₎)·Beta(1, m − k) (the smallest of the m − k uniforms above it).
    Each type-7 percentile interpolates between those two order statistics, so a resample
    costs two Beta draws per percentile instead of m draws and a partition: the same
    bootstrap distribution, O(resamples × percentiles) after one sort.
    """
    sample = SortedSample._of_sorted(ordered) if isinstance(ordered, np.ndarray) else ordered
    n = sample.size
    h = (m - 1) * np.asarray(ps, dtype=np.float64) / 100.0
    lo = np.floor(h).astype(np.int64)
    k = lo + 1  # 1-based rank of the lower order statistic in the resample
    u_lo = rng.beta(k, m - k + 1, size=(resamples, len(ps)))
    gap = rng.beta(1.0, np.maximum(m - k, 1), size=(resamples, len(ps)))
    u_hi = np.where(k < m, u_lo + (1 - u_lo) * gap, u_lo)
    r_lo = np.minimum((u_lo * n).astype(np.int64), n - 1)
    r_hi = np.minimum((u_hi * n).astype(np.int64), n - 1)
    values = sample.at_ranks(np.stack([r_lo, r_hi]))  # one refinement for both sets of ranks
    v_lo, v_hi = values[0], values[1]
    return np.asarray(v_lo + (h - lo) * (v_hi - v_lo))


def bootstrap_percentile_ratio(
    a: OrderedSample,
    b: OrderedSample,
    ps: tuple[float, ...],
    rng: np.random.Generator,
    resamples: int,
    size: int,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence bounds of (Q_b(p) - Q_a(p)) / Q_a(p) for each p (see module docs)."""
    qa, qb = percentiles_at(a, ps), percentiles_at(b, ps)
    point = (qb - qa) / qa
    ma, mb = min(a.size, size), min(b.size, size)
    ra = resampled_percentiles(a, ps, ma, resamples, rng)
    rb = resampled_percentiles(b, ps, mb, resamples, rng)
    draws = (rb - ra) / ra
    # Rescale the m-out-of-n deviations to the full sample sizes.
    scale = np.sqrt(min(ma / a.size, mb / b.size))
    spread = point + (draws - point) * scale
    tail = (1 - confidence) / 2 * 100
    return np.percentile(spread, tail, axis=0), np.percentile(spread, 100 - tail, axis=0)


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov distance D = sup |F_a(x) - F_b(x)| of two non-empty
    samples, computed as scipy.stats.ks_2samp computes its statistic (both empirical CDFs
    at every value of the pooled sample, right-continuous), so equal to it to the last bit,
    without importing scipy."""
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
    resamples: int = 100,
    bootstrap_size: int = 50_000,
    max_test_samples: int = 200_000,
    seed: int = 0,
    distribution_tests: bool = True,
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
        resamples,
        bootstrap_size,
        max_test_samples,
        seed,
        distribution_tests,
    )


def compare_ordered(
    xa: OrderedSample,
    xb: OrderedSample,
    noise_threshold: float = 0.05,
    ps: tuple[float, ...] = COMPARE_PERCENTILES,
    confidence: float = 0.95,
    resamples: int = 100,
    bootstrap_size: int = 50_000,
    max_test_samples: int = 200_000,
    seed: int = 0,
    distribution_tests: bool = True,
) -> Comparison:
    """:func:`compare_samples` of samples held or read in chunks (identical results)."""
    if xa.size < 2 or xb.size < 2:
        raise ValueError("each sample needs at least 2 values to compare")
    rng = np.random.default_rng(seed)
    ta, tb = _subsample(xa, max_test_samples, rng), _subsample(xb, max_test_samples, rng)
    nan = float("nan")
    ad_statistic = ad_pvalue = mw_statistic = mw_pvalue = ks_pvalue = nan
    if not distribution_tests:
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
    lo, hi = bootstrap_percentile_ratio(xa, xb, ps, rng, resamples, bootstrap_size, confidence)
    qa, qb = percentiles_at(xa, ps), percentiles_at(xb, ps)
    diffs = []
    for i, p in enumerate(ps):
        if lo[i] > noise_threshold:
            verdict = "regressed"
        elif hi[i] < -noise_threshold:
            verdict = "improved"
        else:
            verdict = "within noise"
        rel = float((qb[i] - qa[i]) / qa[i])
        diffs.append(PercentileDiff(p, float(qa[i]), float(qb[i]), rel, float(lo[i]), float(hi[i]), verdict))
    verdicts = {d.verdict for d in diffs}
    top_a = float(xa.at_ranks(np.array([xa.size - 1]))[0])
    top_b = float(xb.at_ranks(np.array([xb.size - 1]))[0])
    diffs.append(PercentileDiff(MAX_ROW, top_a, top_b, (top_b - top_a) / top_a, nan, nan, NO_VERDICT))
    overall = (
        "regressed" if "regressed" in verdicts else "improved" if "improved" in verdicts else "within noise"
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
        qq_a=percentiles_at(xa, tuple(probs * 100)),
        qq_b=percentiles_at(xb, tuple(probs * 100)),
    )
