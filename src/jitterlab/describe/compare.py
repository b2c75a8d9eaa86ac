"""``compare``: run B judged against run A, as JSON for machines and rows for people.

The statistics are :func:`jitterlab.stats.compare.compare_ordered` over the runs, read in
row groups above 2^24 samples (:class:`jitterlab.stats.compare.ChunkedSample`: memory
independent of the runs' sizes, results identical to :func:`jitterlab.stats.compare_samples` of the whole
columns); this module adds the runs' context and warns when A and B were measured on
different machines or kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import format_ns
from jitterlab.core.warnings import CodedWarning
from jitterlab.describe.context import context_block, differences
from jitterlab.stats import Comparison
from jitterlab.stats.compare import (
    COMPARE_PERCENTILES,
    MAX_ROW,
    ChunkedSample,
    OrderedSample,
    SortedSample,
    compare_ordered,
    interval_confidence,
)
from jitterlab.stats.quantile_ci import QuantileInterval
from jitterlab.store import ResultsStore, Run, load_run
from jitterlab.store.memory import hold_in_memory
from jitterlab.store.reader import LOCAL, Engine, latency_chunks
from jitterlab.store.runs import verified_samples_path

EngineOpener = Callable[[], Engine | None]  # opens where the passes run (a cluster's engine)

HEADERS = ["percentile", "A", "B", "change", "CI", "verdict"]


@dataclass(frozen=True)
class RunComparison:
    a: Run
    b: Run
    result: Comparison
    warnings: list[CodedWarning]


def compare_runs(
    a: Run,
    b: Run,
    noise: float = 0.05,
    engine: Engine | None = None,
    *,
    ordered: tuple[np.ndarray, np.ndarray] | None = None,
    distribution_tests: bool = True,
) -> RunComparison:
    """B against A, with the warnings a reader needs before trusting the verdict; ``engine``:
    where the passes over the samples run (a cluster's: jitterlab.cluster.engine);
    ``ordered``: both runs' latencies sorted by the caller (each run held: ``run.latency_ns``),
    not sorted again; ``distribution_tests``: False leaves out the KS p-value, Anderson–Darling
    and Mann–Whitney (the verdicts and percentiles do not use them)."""
    samples: list[OrderedSample] = []
    for k, run in enumerate((a, b)):
        if run.histogram_only:
            raise JitterlabError(f"run {run.id} holds a histogram only: compare needs raw samples")
        samples.append(
            run_sample(run, engine) if ordered is None else SortedSample.held(run.latency_ns, ordered[k])
        )
        if samples[-1].size == 0:
            raise JitterlabError(f"run {run.id} has no samples to compare")
    warnings = []
    differ = differences(a, b)
    if differ:
        warnings.append(
            CodedWarning(
                "machines-differ",
                "A and B were measured on different machines or kernels (" + "; ".join(differ) + ")",
            )
        )
    result = compare_ordered(
        samples[0],
        samples[1],
        noise_threshold=noise,
        intervals=comparison_intervals(a, b, engine),
        distribution_tests=distribution_tests,
    )
    return RunComparison(a, b, result, warnings)


def comparison_intervals(
    a: Run, b: Run, engine: Engine | None = None, confidence: float = 0.95
) -> tuple[list[QuantileInterval], list[QuantileInterval]]:
    """Each run's intervals at the compared levels, at the level whose pair holds with
    ``confidence`` (stats.compare.interval_confidence): the intervals describe and show
    print (blocks by send time), by passes over the samples (``engine``'s)."""
    from jitterlab.describe.analysis import run_intervals

    level = interval_confidence(confidence)
    passes = engine or LOCAL
    return (
        run_intervals(a, COMPARE_PERCENTILES, passes, confidence=level),
        run_intervals(b, COMPARE_PERCENTILES, passes, confidence=level),
    )


def run_sample(run: Run, engine: Engine | None = None) -> OrderedSample:
    """A run's latencies as a sample: held in memory when the one memory rule says so
    (:func:`jitterlab.store.memory.hold_in_memory`: one sort is ~6× faster than the
    refinement's passes), read in row groups otherwise
    (the file verified first); on a cluster, read by its workers whatever the size
    (cluster/sample.py). All give the same comparison to the last bit. Held, it is
    the latency column alone, read batch by batch (a run already in memory gives its own):
    the table's other columns are never read."""
    path = verified_samples_path(run)
    elsewhere = engine.sample(path) if engine is not None and not run.loaded else None
    if elsewhere is not None:
        return elsewhere
    if hold_in_memory(run):
        if run.loaded:
            return SortedSample(run.latency_ns)
        chunks = list(latency_chunks(path))
        return SortedSample(np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64))
    return ChunkedSample(lambda: latency_chunks(path))


def comparison_json(rc: RunComparison) -> dict[str, Any]:
    c = rc.result
    return {
        "a": rc.a.id,
        "b": rc.b.id,
        "context": {"a": context_block(rc.a), "b": context_block(rc.b)},
        "warnings": [w.as_dict() for w in rc.warnings],
        "verdict": c.verdict,
        "noise_threshold": c.noise_threshold,
        "confidence": c.confidence,
        "tests": {
            "ks": {"statistic": c.ks_statistic, "pvalue": c.ks_pvalue},
            "anderson_darling": {"statistic": c.ad_statistic, "pvalue": c.ad_pvalue},
            "mann_whitney": {"statistic": c.mw_statistic, "pvalue": c.mw_pvalue},
            "samples_tested": [c.tested_a, c.tested_b],
        },
        "percentiles": [
            {
                "percentile": d.percentile,
                "a_ns": d.a,
                "b_ns": d.b,
                "relative": d.relative,
                "ci_low": _finite(d.ci_low),
                "ci_high": _finite(d.ci_high),
                "verdict": d.verdict,
                "resolved": [d.a_interval.resolved, d.b_interval.resolved]
                if d.a_interval and d.b_interval
                else None,
                "intervals": [d.a_interval.to_dict(), d.b_interval.to_dict()]
                if d.a_interval and d.b_interval
                else None,
            }
            for d in c.percentiles
        ],
        "qq": {
            "probabilities": c.qq_probabilities.tolist(),
            "a_ns": c.qq_a.tolist(),
            "b_ns": c.qq_b.tolist(),
        },
    }


def _finite(v: float) -> float | None:
    """A bound for JSON: None for NaN (not judged) and ±inf (unbounded)."""
    return float(v) if math.isfinite(v) else None


def _side(value: float, q: QuantileInterval | None) -> str:
    """A run's value in the compare table: "≥ x" where the run does not resolve the level."""
    if q is not None and not q.resolved:
        return f"≥ {format_ns(q.ci_low)}" if q.ci_low is not None else "not resolved"
    return format_ns(value)


def _bound(v: float) -> str:
    return f"{v:+.1%}" if math.isfinite(v) else ("−∞" if v < 0 else "+∞")


def comparison_rows(c: Comparison) -> list[list[str]]:
    rows = []
    for d in c.percentiles:
        resolved = (
            d.a_interval is None or d.b_interval is None or (d.a_interval.resolved and d.b_interval.resolved)
        )
        rows.append(
            [
                "max" if d.percentile == MAX_ROW else f"p{d.percentile:g}",
                _side(d.a, d.a_interval),
                _side(d.b, d.b_interval),
                f"{d.relative:+.1%}" if resolved else "—",
                "—"
                if d.percentile == MAX_ROW or (not math.isfinite(d.ci_low + d.ci_high) and not resolved)
                else f"[{_bound(d.ci_low)}, {_bound(d.ci_high)}]",
                d.verdict,
            ]
        )
    return rows


def tests_line(c: Comparison) -> str:
    tested = (
        ""
        if c.tested_a == c.n_a and c.tested_b == c.n_b
        else f" (on {c.tested_a:,} / {c.tested_b:,} samples)"
    )
    return (
        f"KS D = {c.ks_statistic:.4f} (p = {c.ks_pvalue:.3g}); Anderson-Darling = {c.ad_statistic:.2f} "
        f"(p ≈ {c.ad_pvalue:.3g}); Mann-Whitney p = {c.mw_pvalue:.3g}{tested}"
    )


@dataclass(frozen=True)
class ChosenLevels:
    """``compare --percentiles``: each run's intervals at the asked levels."""

    a: list[QuantileInterval]
    b: list[QuantileInterval]

    def to_dict(self) -> dict[str, Any]:
        """``percentiles_ns`` (A's and B's values by key, None where the run does not resolve
        the level) and ``percentile_intervals`` (each level with its interval)."""
        from jitterlab.core.percentiles import percentile_key

        return {
            "percentiles_ns": {
                side: {percentile_key(q.level): q.value for q in qs}
                for side, qs in (("a", self.a), ("b", self.b))
            },
            "percentile_intervals": {"a": [q.to_dict() for q in self.a], "b": [q.to_dict() for q in self.b]},
        }


def chosen_rows(chosen: ChosenLevels) -> list[list[str]]:
    """Rows of ``compare --percentiles``: each asked level's A and B with their intervals
    ("≥ x" where a run does not resolve it) and B/A where both do."""
    from jitterlab.core.percentiles import percentile_key
    from jitterlab.describe.tables import level_cell

    rows = []
    for qa, qb in zip(chosen.a, chosen.b, strict=True):
        cells = [level_cell(q.value, None, q.level, q, with_interval=True) for q in (qa, qb)]
        both = qa.value is not None and qb.value is not None
        ratio = f"{qb.value / qa.value:.3f}" if both and qa.value else "—"  # type: ignore[operator]
        rows.append([percentile_key(qa.level), *cells, ratio])
    return rows


def chosen_percentiles(
    rc: RunComparison, ps: tuple[float, ...], engine: Engine | None = None
) -> ChosenLevels:
    """``compare --percentiles``: A's and B's exact percentiles at the chosen levels with
    their intervals (stats/quantile_ci.py, the same as describe's), read in row groups by
    ``engine`` (the verdict's rows keep their own levels)."""
    from jitterlab.describe.analysis import run_intervals, run_percentiles

    engine = engine or LOCAL
    for run in (rc.a, rc.b):
        if run.histogram_only:
            run_percentiles(run, ps)  # refuses, naming the export that has them
    return ChosenLevels(run_intervals(rc.a, ps, engine), run_intervals(rc.b, ps, engine))


@dataclass(frozen=True)
class CompareRequest:
    """What ``compare`` is asked: run B (``b``) judged against run A (``a``), references
    resolved in ``store`` (or runs already opened: a notebook's); ``noise`` the noise threshold (a fraction); ``percentiles`` levels
    asked beside the verdict's; ``engine`` opens where the passes run (a cluster's; None:
    here), called once, after both runs are found."""

    a: str | Run
    b: str | Run
    store: ResultsStore
    noise: float = 0.05
    percentiles: tuple[float, ...] | None = None
    engine: EngineOpener | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ComparedRuns:
    """Everything ``compare`` prints: the comparison (with its warnings) and the asked levels."""

    comparison: RunComparison
    chosen: ChosenLevels | None

    @property
    def verdict(self) -> str:
        return self.comparison.result.verdict

    def to_json(self) -> dict[str, Any]:
        """``compare --json``'s document."""
        return comparison_json(self.comparison) | (self.chosen.to_dict() if self.chosen else {})


def compare(request: CompareRequest) -> ComparedRuns:
    """``jitterlab compare A B`` as one call: B against A, and the asked levels of both.

    Parameters
    ----------
    request
        The two runs, the noise threshold, the asked levels and the engine's opener.

    Returns
    -------
    ComparedRuns
        The comparison with its warnings; ``to_json()`` is ``compare --json``,
        :func:`comparison_text` its text.
    """
    a, b = (r if isinstance(r, Run) else load_run(r, request.store) for r in (request.a, request.b))
    engine = request.engine() if request.engine is not None else None
    rc = compare_runs(a, b, request.noise, engine)
    chosen = chosen_percentiles(rc, request.percentiles, engine) if request.percentiles else None
    return ComparedRuns(rc, chosen)


def comparison_text(d: ComparedRuns) -> str:
    """``compare``'s terminal text of a comparison (its warnings are the caller's to print)."""
    from jitterlab.core.render import render
    from jitterlab.describe.context import context_header

    rc, c = d.comparison, d.comparison.result
    lines = [context_header([rc.a, rc.b]), f"A  {rc.a.id}  ({rc.a.label})\nB  {rc.b.id}  ({rc.b.label})"]
    headers = [*HEADERS[:4], f"{c.confidence:.0%} CI", HEADERS[5]]
    lines += [render(headers, comparison_rows(c), "lrrrrl"), tests_line(c)]
    if d.chosen:
        lines.append(render(["percentile", "A", "B", "B/A"], chosen_rows(d.chosen), "lrrr"))
    lines.append(f"verdict: {c.verdict} (noise threshold ±{c.noise_threshold:.0%})")
    return "\n".join(lines)
