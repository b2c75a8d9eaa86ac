"""Confidence intervals for percentiles, and when a percentile is resolved at all (pure).

docs/statistics.md, "Intervals on percentiles", states the rules, their reasons and the
references; in short:

- **Resolution.** Level p (percent) of n samples is *resolved* when at least
  :data:`RESOLVE_BEYOND` samples are expected beyond it: n·(1 − p/100) ≥ 10. Below that the
  type-7 value is an interpolation between the last few order statistics (p99.9 of 10
  samples is their maximum) and no interval bounds it from above: the output gives the
  interval's lower bound only ("≥ x").
- **Binomial (order-statistic) interval**, for independent samples: the number B of
  samples at or below the true quantile q_p is Binomial(n, p), so the order statistics
  x₍ₗ₎ ≤ q_p < x₍ᵤ₎ (1-based) hold with probability P(l ≤ B ≤ u − 1) ≥ confidence when
  l is the largest rank with P(B ≤ l − 1) ≤ α/2 and u the smallest with P(B ≥ u) ≤ α/2
  (Hahn & Meeker, *Statistical Intervals*, §5.2; David & Nagaraja, *Order Statistics*,
  §7.1). Distribution-free; it needs two order statistics per level, found by the same exact
  rank machinery as the percentiles (stats/summary.py), never by loading the sample.
- **Block interval**, valid under serial dependence: the sample, in its time order, is cut
  into B = ⌊√n⌋ blocks of equal duration (about √n samples each; batch means, Carlstein
  1986; Flegal & Jones 2010 for the √n batch size). Each block's count of samples at or
  below the estimate gives the variance of the empirical CDF there by the batch-means
  (ratio) estimator, and the interval is Woodruff's (1952): the order statistics at the
  probabilities p ± t_(B−1)·se. It needs one pass of per-block counts and two more order
  statistics per level.
- **Which one**: the index-of-dispersion test of the per-block counts (under independence
  D = Σ (c_j − p̂ m_j)² / (p̂ (1 − p̂) m_j) is χ² with B − 1 degrees of freedom; Cochran
  1954): dependence shown at the 5 % level gives the block interval, else the binomial one.
  Spikes that come in bursts make the counts over-dispersed (that is what the binomial
  interval cannot see: it undercovers, tests/stats/test_quantile_ci.py shows by how much).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from jitterlab.core.percentiles import RESOLVE_BEYOND as RESOLVE_BEYOND  # re-exported: the rule lives in core
from jitterlab.core.percentiles import is_resolved as is_resolved
from jitterlab.stats.scan import Scan
from jitterlab.stats.type7 import type7_interpolate, type7_ranks
from jitterlab.stats.valuetable import ValueTable

CONFIDENCE = 0.95
DEPENDENCE_ALPHA = 0.05  # level of the dispersion test that picks the block method
MIN_BLOCKS = 10  # fewer blocks than this: no block method (too few to estimate a variance)

BINOMIAL = "binomial"  # order statistics of independent samples
BLOCK = "block"  # batch means over time blocks (Woodruff interval)
BINOMIAL_COUNTS = "binomial-counts"  # a histogram's counts: binomial, no order, no block method
MAXIMUM = "observed"  # the maximum: one sample, no interval

OrderStatistics = Callable[[list[int]], dict[int, float]]  # 0-based ranks → values
BlockCounts = Callable[[Sequence[float]], tuple[np.ndarray, np.ndarray]]  # cuts → (sizes, counts ≤ cut)


@dataclass(frozen=True)
class QuantileInterval:
    """One percentile with its interval.

    ``value`` is the type-7 estimate (None when the level is not resolved: then only
    ``ci_low`` is given, "≥ ci_low"); ``ci_low`` / ``ci_high`` None where the interval is
    unbounded on that side; ``blocks`` and ``block_length`` (samples per block, on
    average) for the block method; ``dispersion`` the dependence test's D / (B − 1) (1 for
    independent samples) when it ran.
    """

    level: float
    value: float | None
    ci_low: float | None
    ci_high: float | None
    resolved: bool
    method: str
    confidence: float = CONFIDENCE
    blocks: int | None = None
    block_length: int | None = None
    dispersion: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: level, value, ci_low, ci_high, resolved, method, confidence and
        (block method) blocks, block_length; dispersion when the test ran."""
        out: dict[str, Any] = {
            "level": self.level,
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "resolved": self.resolved,
            "method": self.method,
            "confidence": self.confidence,
        }
        if self.blocks is not None:
            out["blocks"] = self.blocks
            out["block_length"] = self.block_length
        if self.dispersion is not None:
            out["dispersion"] = self.dispersion
        return out


def resolvable_level(n: int) -> float:
    """The highest percentile ``n`` samples resolve (0 when none)."""
    return max(0.0, 100.0 * (1.0 - RESOLVE_BEYOND / n)) if n > 0 else 0.0


def _binomial_cdf(n: int, p: float) -> tuple[int, np.ndarray]:
    """(k0, c) with c[i] = P(B ≤ k0 + i) for B ~ Binomial(n, p), over the window of k within
    9 standard deviations (and 10) of the mean, where all but a negligible share of the
    mass lies: the pmf by its ratio recursion P(k + 1) / P(k) = (n − k) p / ((k + 1)(1 − p))
    in logarithms, normalised over the window (no special functions, no scipy)."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo = max(0, math.floor(mean - 9 * sd - 10))
    hi = min(n, math.ceil(mean + 9 * sd + 10))
    k = np.arange(lo, hi, dtype=np.float64)
    steps = np.log((n - k) / (k + 1)) + math.log(p / (1 - p))
    log_pmf = np.concatenate([[0.0], np.cumsum(steps)])
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf = np.cumsum(pmf)
    return lo, cdf / cdf[-1]


@functools.lru_cache(maxsize=256)
def binomial_ranks(n: int, level: float, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """0-based ranks (lo, hi) of the distribution-free interval [x₍lo₎, x₍hi₎] for the
    ``level`` percentile of ``n`` independent samples (see the module docs); lo = −1: no
    lower bound, hi = n: no upper bound. Equal to scipy.stats.quantile_test's interval
    (tests/stats/test_quantile_ci.py)."""
    half = (1.0 - confidence) / 2.0
    k0, cdf = _binomial_cdf(n, level / 100.0)
    # 1-based l: the largest with P(B <= l - 1) <= half, i.e. the first k with cdf(k) > half
    first_over = k0 + int(np.searchsorted(cdf, half, side="right"))
    # 1-based u: the smallest with P(B >= u) = 1 - cdf(u - 1) <= half
    k_upper = k0 + int(np.searchsorted(cdf, 1.0 - half, side="left"))
    upper = n + 1 if k_upper >= n else k_upper + 1
    return first_over - 1, min(upper - 1, n)


def _student_t(df: int, probability: float) -> float:
    """Student's t quantile by the Cornish–Fisher expansion of the normal one (accurate to
    about 1e-3 from 10 degrees of freedom; the block method needs at least that)."""
    z = _normal_quantile(probability)
    nu = float(df)
    return z + (z**3 + z) / (4 * nu) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)


def _normal_quantile(probability: float) -> float:
    return NormalDist().inv_cdf(probability)


def dispersion_test(sizes: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """(D / (B − 1), p-value) of the index-of-dispersion test of per-block counts
    ``counts`` out of ``sizes`` (empty blocks left out): large D means the indicator is
    serially dependent (over-dispersed between blocks). The χ² tail by the Wilson–Hilferty
    approximation."""
    keep = sizes > 0
    m, c = sizes[keep].astype(np.float64), counts[keep].astype(np.float64)
    df = int(m.size) - 1
    p = float(c.sum() / m.sum()) if m.size else 0.0
    if df < 1 or p <= 0.0 or p >= 1.0:
        return 1.0, 1.0
    d = float(np.sum((c - p * m) ** 2 / m) / (p * (1 - p)))
    ratio = d / df
    z = (ratio ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return ratio, 1.0 - _normal_cdf(z)


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def block_se(sizes: np.ndarray, counts: np.ndarray) -> float:
    """The batch-means (ratio-estimator) standard error of the proportion Σc / Σm from
    per-block counts: √(B / (B − 1) · Σ (c_j − p̂ m_j)²) / Σm over the B non-empty blocks."""
    keep = sizes > 0
    m, c = sizes[keep].astype(np.float64), counts[keep].astype(np.float64)
    blocks = m.size
    if blocks < 2:
        return math.inf
    p = c.sum() / m.sum()
    return float(math.sqrt(blocks / (blocks - 1) * float(np.sum((c - p * m) ** 2))) / m.sum())


def block_count(n: int) -> int:
    """Blocks for the block method: ⌊√n⌋ (about √n samples each)."""
    return math.isqrt(max(n, 0))


def block_ranks(
    n: int, level: float, se: float, blocks: int, confidence: float = CONFIDENCE
) -> tuple[int, int]:
    """0-based ranks (lo, hi) of Woodruff's interval: the order statistics at the
    probabilities level/100 ∓ t·se (−1 / n where that leaves the sample)."""
    t = _student_t(blocks - 1, 1 - (1 - confidence) / 2)
    q = level / 100.0
    lo_p, hi_p = q - t * se, q + t * se
    lo = math.ceil(n * lo_p) - 1 if lo_p > 0 else -1
    hi = math.ceil(n * hi_p) if hi_p < 1 else n  # the next order statistic above n·hi_p
    return max(lo, -1), min(hi, n)


def quantile_intervals(
    n: int,
    levels: Sequence[float],
    order_statistics: OrderStatistics,
    block_counts: BlockCounts | None,
    confidence: float = CONFIDENCE,
    method: str | None = None,
) -> list[QuantileInterval]:
    """Every level's type-7 value and interval from the sample's exact order statistics
    (``order_statistics``: 0-based ranks → values, in one call per round) and, for the
    dependence test and the block method, ``block_counts`` (cuts → the samples per time
    block and, per cut, how many are ≤ it; None: no order, binomial only — a histogram's
    counts). Levels are percentiles in (0, 100]; 100 is the maximum (no interval).
    ``method`` forces ``binomial`` or ``block`` on every resolved level (the coverage
    benchmark's comparison); None: the dependence test decides."""
    if n <= 0:
        return [QuantileInterval(lv, None, None, None, False, BINOMIAL, confidence) for lv in levels]
    lo7, hi7, weight = type7_ranks(n, levels)
    binom = [binomial_ranks(n, lv, confidence) if lv < 100 else (n - 1, n) for lv in levels]
    wanted = {*lo7.tolist(), *hi7.tolist()} | {r for pair in binom for r in pair if 0 <= r < n}
    wanted.add(n - 1)
    values = order_statistics(sorted(wanted))

    def at(rank: int) -> float | None:
        return float(values[rank]) if 0 <= rank < n else None

    at_lo, at_hi = ([values[r] for r in ranks.tolist()] for ranks in (lo7, hi7))
    estimates: list[float] = type7_interpolate(at_lo, at_hi, weight).tolist()
    independent = BINOMIAL if block_counts is not None else BINOMIAL_COUNTS
    chosen: list[QuantileInterval | None] = [None] * len(levels)
    tested: dict[int, tuple[int, float, float]] = {}  # level index → (blocks, se, dispersion)
    # the dependence test and the block method for resolved levels, when the order is known
    nblocks = block_count(n)
    candidates = [i for i, lv in enumerate(levels) if is_resolved(n, lv)]
    if block_counts is not None and candidates and nblocks >= MIN_BLOCKS:
        sizes, counts = block_counts([estimates[i] for i in candidates])
        for j, i in enumerate(candidates):
            ratio, pvalue = dispersion_test(sizes, counts[j])
            if method == BLOCK or (method is None and pvalue < DEPENDENCE_ALPHA):
                tested[i] = (int((sizes > 0).sum()), block_se(sizes, counts[j]), ratio)
            else:
                low, high = at(binom[i][0]), at(binom[i][1])
                chosen[i] = _interval(
                    levels[i], estimates[i], low, high, True, independent, confidence, ratio
                )
    if tested:
        ranks = {i: block_ranks(n, levels[i], se, b, confidence) for i, (b, se, _) in tested.items()}
        extra = sorted({r for pair in ranks.values() for r in pair if 0 <= r < n} - set(values))
        if extra:
            values = {**values, **order_statistics(extra)}
        for i, (b, _, ratio) in tested.items():
            lo, hi = ranks[i]
            chosen[i] = QuantileInterval(
                levels[i], estimates[i], at(lo), at(hi), True, BLOCK, confidence, b, -(-n // b), ratio
            )
    out = []
    for i, lv in enumerate(levels):
        if chosen[i] is not None:
            out.append(chosen[i])
        elif lv >= 100:
            top = float(values[n - 1])
            out.append(QuantileInterval(lv, top, None, None, True, MAXIMUM, confidence))
        else:
            ok = is_resolved(n, lv)
            low, high = at(binom[i][0]), at(binom[i][1])
            out.append(_interval(lv, estimates[i], low, high, ok, independent, confidence, None))
    return [q for q in out if q is not None]


def _interval(
    level: float,
    estimate: float,
    low: float | None,
    high: float | None,
    resolved: bool,
    method: str,
    confidence: float,
    dispersion: float | None,
) -> QuantileInterval:
    if not resolved:  # "≥ low": no value, no upper bound
        return QuantileInterval(level, None, low, None, False, method, confidence, dispersion=dispersion)
    return QuantileInterval(level, estimate, low, high, True, method, confidence, dispersion=dispersion)


# --- the sample's own passes -----------------------------------------------------------


def time_blocks(t0: int, t_last: int, blocks: int) -> int:
    """The width in ns of ``blocks`` equal time blocks covering [t0, t_last]."""
    return max(1, -(-(t_last - t0 + 1) // max(blocks, 1)))


def block_counts_chunk(
    chunk: tuple[np.ndarray, np.ndarray], t0: int, width: int, blocks: int, cuts: tuple[float, ...]
) -> np.ndarray:
    """One timed chunk's share of the block pass (a map step): row 0 the samples per time
    block, row k + 1 those at or below ``cuts[k]``; shares add."""
    t, x = chunk
    b = np.clip((np.asarray(t, np.int64) - t0) // width, 0, blocks - 1)
    out = np.zeros((len(cuts) + 1, blocks), np.int64)
    out[0] = np.bincount(b, minlength=blocks)
    for k, cut in enumerate(cuts):
        out[k + 1] = np.bincount(b[x <= cut], minlength=blocks)
    return out


def intervals_of_sample(
    latency: np.ndarray,
    levels: Sequence[float],
    t: np.ndarray | None = None,
    confidence: float = CONFIDENCE,
    ordered: np.ndarray | None = None,
    method: str | None = None,
) -> list[QuantileInterval]:
    """:func:`quantile_intervals` of a sample held in memory; ``t``: when each sample was
    taken (its send time; default: its position), ``ordered``: the sample sorted, when the
    caller has it; ``method``: forced (see :func:`quantile_intervals`)."""
    x = np.asarray(latency)
    n = int(x.size)
    times = np.arange(n, dtype=np.int64) if t is None else np.asarray(t, np.int64)

    def stats(ranks: list[int]) -> dict[int, float]:
        s = ordered if ordered is not None else np.partition(x, ranks)
        return {r: float(s[r]) for r in ranks}

    def counts(cuts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        blocks = block_count(n)
        t0, t_last = int(times.min()), int(times.max())
        share = block_counts_chunk((times, x), t0, time_blocks(t0, t_last, blocks), blocks, tuple(cuts))
        return share[0], share[1:]

    return quantile_intervals(n, levels, stats, counts, confidence, method)


def time_extent_chunk(chunk: tuple[np.ndarray, np.ndarray]) -> tuple[int, int] | None:
    """(first, last) send time of a timed chunk (a map step; None for an empty one)."""
    t = chunk[0]
    return (int(t.min()), int(t.max())) if len(t) else None


def intervals_of_scan(
    latency: Scan,
    timed: Scan,
    levels: Sequence[float],
    extent: tuple[int, int, int],
    times: tuple[int, int] | None = None,
    confidence: float = CONFIDENCE,
    table: ValueTable | None = None,
) -> list[QuantileInterval]:
    """:func:`quantile_intervals` of a sample read in chunks (here or on a cluster), never
    held: its order statistics by the exact radix refinement of stats/summary.py (the
    binomial ranks in the same passes as the percentiles' own), or read off ``table`` (the
    sample's every value counted, as the summary pass builds it: no pass), the block counts
    in one pass of ``timed`` (chunks (t_send_ns, latency)); ``extent`` its (count, min,
    max), ``times`` its first and last send time when known (else one more pass finds them)."""
    from jitterlab.stats.summary import order_statistics_by

    count, lowest, highest = extent

    def stats(ranks: list[int]) -> dict[int, float]:
        if table is not None:
            return {
                r: float(v) for r, v in zip(ranks, table.at_ranks(np.asarray(ranks, np.int64)), strict=True)
            }
        return {r: float(v) for r, v in order_statistics_by(latency, ranks, lowest, highest, count).items()}

    def counts(cuts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        first_last = times
        if first_last is None:
            found = [e for e in timed.map(time_extent_chunk) if e is not None]
            first_last = (min(e[0] for e in found), max(e[1] for e in found))
        t0, t_last = first_last
        blocks = block_count(count)
        width = time_blocks(t0, t_last, blocks)
        total = np.zeros((len(cuts) + 1, blocks), np.int64)
        for share in timed.map(block_counts_chunk, t0, width, blocks, tuple(cuts)):
            total += share
        return total[0], total[1:]

    return quantile_intervals(count, levels, stats, counts, confidence)
