"""What ``jitterlab paper`` draws and tabulates, computed once from the runs' descriptions.

Each run is described by :func:`jitterlab.describe.description.describe` (the numbers of
``describe --json``: one request per run, the typed description rendered), its chosen percentiles are ``run_percentiles``' type-7 values and
each level's interval is :func:`jitterlab.stats.quantile_ci.intervals_of_sample` (the
one interval: binomial order statistics, or batch means over time blocks where the
dispersion test finds the samples dependent; ``describe --json`` gives the same), and each
comparison is :func:`jitterlab.describe.compare.compare_runs` (``compare --json``); the
tables and the figures are both drawn from the :class:`PaperData` built here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.percentiles import percentile_key
from jitterlab.describe.analysis import pauses_in_run, run_percentiles, time_range
from jitterlab.describe.compare import RunComparison, compare_runs
from jitterlab.describe.description import DescribeRequest, SampleDescription, describe
from jitterlab.describe.overview import comparison_groups, technique_of
from jitterlab.describe.panels import Panels, memory_panels
from jitterlab.describe.paper.tables import Estimate
from jitterlab.stats import StackedResult, Summary
from jitterlab.stats.quantile_ci import QuantileInterval, intervals_of_sample
from jitterlab.stats.summary import percentiles_sorted
from jitterlab.stats.windows import WindowTable
from jitterlab.store import Run
from jitterlab.store.memory import why_not_held
from jitterlab.store.reader import LOCAL, Engine

DEFAULT_PERCENTILES = (99.0, 99.9, 99.99)
MAX_TIMELINE_POINTS = 2_000  # a panel of a page-wide grid shows ~200 marker widths: M4 keeps every extreme
TIMELINE_COLUMNS = 200


@dataclass(frozen=True)
class RunData:
    """One run as the paper shows it."""

    run: Run  # without its samples
    summary: Summary
    test: str
    categories: StackedResult
    levels: dict[str, Estimate]  # "p50" and the chosen levels (percentile_key), ns
    panels: Panels | None  # None: too large to hold (its figures are not drawn)
    pauses: list[dict[str, Any]]
    group: str  # runs of one group share a table
    number: int = 0  # 1, 2, …: the run's row in runs.csv, Table 1 and the figures' legends
    windows: WindowTable | None = None  # describe's time windows (the MTP windows table)

    @property
    def name(self) -> str:
        """``#N label``: how the tables and figures name the run."""
        return f"#{self.number} {self.run.label}"


@dataclass(frozen=True)
class HistogramRun:
    """A histogram-only run (an imported HdrHistogram log): its own table, never beside
    sample runs (HdrHistogram's percentile definition; binomial intervals on its counts)."""

    run: Run
    summary: dict[str, Any]  # the stream's count, mean, max … (describe --json's "summary")
    levels: dict[str, QuantileInterval]  # "p50" and the chosen levels (percentile_key)
    number: int  # numbered after the sample runs

    @property
    def name(self) -> str:
        return f"#{self.number} {self.run.label}"


@dataclass(frozen=True)
class PaperData:
    runs: list[RunData]
    comparisons: list[RunComparison]
    levels: tuple[float, ...]  # the chosen percentiles
    left_out: list[str]  # one line each: runs not in the paper and why
    span: tuple[float | None, float | None]
    numbers: dict[tuple[str, str], tuple[int, int]]  # (A id, B id) of a comparison -> their run numbers
    histograms: list[HistogramRun] = dataclasses.field(default_factory=list)
    # run id -> its trials screened as `monitor trials --json` gives them (monitor/trials.py's
    # results_json), filled by the command (cli/paper.py): describe never imports monitor/
    trials: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def comparison_names(self, rc: RunComparison) -> tuple[str, str]:
        a, b = self.numbers.get((rc.a.id, rc.b.id), (0, 0))
        return f"#{a} {rc.a.label}", f"#{b} {rc.b.label}"


def group_of(run: Run) -> str:
    """Runs that may share a table: the same kind of run (what produced it) and the same
    unit of samples (percentiles of sample runs are all type 7 here)."""
    runtime = str(run.config.get("runtime", "native"))
    kind = runtime if runtime in ("mtp", "repl", "net", "monitor", "import", "hiccup") else "bench"
    if run.config.get("technique") == "repl" and isinstance(run.meta.get("repl"), dict):
        kind = "repl"  # `repl bench` stores native runs: never beside the n×(1:1) harness's
    elif "net" in run.meta:
        kind = "net"
    unit = str((run.meta.get("samples") or {}).get("unit", "ns"))
    return f"{kind} ({unit})"


def estimates(
    latency: np.ndarray,
    t_send: np.ndarray,
    ordered: np.ndarray,
    ps: Sequence[float],
    known: Sequence[QuantileInterval] = (),
) -> dict[str, Estimate]:
    """Type-7 percentiles of a sample, each with the interval ``describe --json`` gives it
    (:func:`jitterlab.stats.quantile_ci.intervals_of_sample`: binomial, or block where the
    samples are dependent); ``ordered``: the sample sorted; ``known``: intervals already
    computed (the description's), not computed again. An unresolved level keeps its
    type-7 value (flagged unresolved: the tables print "≥ x", x the interval's lower end)."""
    values = percentiles_sorted(ordered, tuple(ps))
    have = {q.level: q for q in known}
    missing = tuple(p for p in ps if p not in have)
    if missing:
        have.update((q.level, q) for q in intervals_of_sample(latency, missing, t_send, ordered=ordered))
    out = {}
    for p, v in zip(ps, values, strict=True):
        q = have[p]
        if p >= 100:
            out[percentile_key(p)] = Estimate(float(v))
            continue
        out[percentile_key(p)] = Estimate(float(v), q.ci_low, q.ci_high, q.resolved, q.method)
    return out


Held = tuple[Run, np.ndarray]  # a run held in memory (restricted to --from/--to) and its latencies sorted


def describe_for_paper(
    run: Run,
    ps: tuple[float, ...],
    from_s: float | None,
    to_s: float | None,
    engine: Engine | None,
) -> tuple[RunData, Held | None]:
    """One run's description (:func:`jitterlab.describe.description.describe`, as
    ``describe`` gives it), its levels and its figures' data; and, when the description held
    it in memory (the one memory rule, store/memory.py ``hold_in_memory``), the held run with
    its sorted latencies (for its comparisons: not read nor sorted again), else None."""
    levels = (50.0, *[p for p in ps if p != 50.0])
    described = describe(
        DescribeRequest(
            (run,),
            from_s=from_s,
            to_s=to_s,
            engine=(lambda: engine) if engine is not None else None,
            hold=True,
            views=False,
            sources=False,
        )
    )
    assert isinstance(described, SampleDescription)  # histogram-only runs are tabulated apart
    d = described.run
    run = d.run  # as described: held (restricted to --from/--to) or not
    held: Held | None = None
    if d.ordered is not None:  # held: one sort serves the description, the levels and the panels
        held = (run, d.ordered)
        chosen = estimates(run.latency_ns, run.t_send_ns, d.ordered, levels, described.intervals)
        panels = memory_panels(
            run.latency_ns,
            run.t_send_ns,
            d.summary,
            d.categories,
            d.ordered,
            MAX_TIMELINE_POINTS,
            TIMELINE_COLUMNS,
        )
        pauses = pauses_in_run(run)
    else:  # read in row groups (or on the cluster): exact values, no interval, no per-run figures
        values = run_percentiles(run, levels, engine or LOCAL, described.span)
        chosen = {k: Estimate(v) for k, v in values.items()}
        panels, pauses = None, []
    bare = Run(run.path, run.meta)
    return (
        RunData(
            bare, d.summary, d.test, d.categories, chosen, panels, pauses, group_of(run), windows=d.windows
        ),
        held,
    )


def build(
    runs: Sequence[Run],
    ps: tuple[float, ...] | None,
    baseline_id: str | None,
    from_s: float | None = None,
    to_s: float | None = None,
    engine: Engine | None = None,
    noise: float = 0.05,
) -> PaperData:
    """Describe every sample run and compare like with like (or every run with
    ``baseline_id``), as ``report`` does. Each comparison is made as soon as both its runs
    are described, from the runs as the description held them (one read and one sort per
    run); a run is dropped after its last comparison, so only the runs of comparisons not
    yet made are held. The comparisons leave out the distribution tests (KS p-value,
    Anderson–Darling, Mann–Whitney): the paper shows the verdicts and the percentiles'
    changes with their intervals, which do not use them."""
    left_out = [
        f"{r.id}: holds a histogram only: tabulated apart in tables/histograms (HdrHistogram's "
        "percentile definition, binomial intervals on the counts), never beside the type-7 tables, "
        "and in no figure or comparison"
        for r in runs
        if r.histogram_only
    ]
    sample_runs = [r for r in runs if not r.histogram_only]
    empty = [r for r in sample_runs if (r.meta.get("samples") or {}).get("rows", 1) == 0]
    left_out += [f"{r.id}: holds no samples" for r in empty]
    sample_runs = [r for r in sample_runs if r not in empty]
    if not sample_runs:
        raise JitterlabError("no run with samples to put in a paper (histogram-only or empty runs only)")
    levels = tuple(ps) if ps else DEFAULT_PERCENTILES
    pairs: list[tuple[int, int]] = []  # (A, B): indices in sample_runs
    if len(sample_runs) > 1:
        for base, others in comparison_groups(sample_runs, baseline_id):
            for other in others:
                if group_of(base) != group_of(other):
                    left_out.append(
                        f"comparison {base.id} → {other.id}: different kinds or units "
                        f"({group_of(base)} vs {group_of(other)}), not compared"
                    )
                    continue
                pairs.append((sample_runs.index(base), sample_runs.index(other)))
    described: dict[int, RunData] = {}
    held: dict[int, Held | None] = {}
    pending = [sum(i in pair for pair in pairs) for i in range(len(sample_runs))]

    def describe_at(i: int) -> None:
        if i in described:
            return
        data, kept = describe_for_paper(sample_runs[i], levels, from_s, to_s, engine)
        described[i] = dataclasses.replace(data, number=i + 1)
        if pending[i]:
            held[i] = kept

    comparisons: list[RunComparison] = []
    for a, b in pairs:  # the runs of each comparison first (in the order of the comparisons)
        describe_at(a)
        describe_at(b)
        comparisons.append(
            _compare(sample_runs[a], sample_runs[b], held[a], held[b], from_s, to_s, engine, noise)
        )
        for i in (a, b):
            pending[i] -= 1
            if not pending[i]:
                del held[i]
    for i in range(len(sample_runs)):
        describe_at(i)
    data = [described[i] for i in range(len(sample_runs))]
    numbers = {(sample_runs[a].id, sample_runs[b].id): (a + 1, b + 1) for a, b in pairs}
    histograms = [
        _histogram_run(r, levels, len(data) + i + 1)
        for i, r in enumerate(r for r in runs if r.histogram_only)
    ]
    return PaperData(data, comparisons, levels, left_out, (from_s, to_s), numbers, histograms)


def _compare(
    base: Run,
    other: Run,
    held_a: Held | None,
    held_b: Held | None,
    from_s: float | None,
    to_s: float | None,
    engine: Engine | None,
    noise: float,
) -> RunComparison:
    """B against A as ``compare --json`` judges them (verdicts, changes, intervals), from
    the runs held by their descriptions when both were (else read as a comparison reads
    them); kept without their samples: only the comparison's numbers are drawn."""
    if held_a is not None and held_b is not None:
        (a, ordered_a), (b, ordered_b) = held_a, held_b
        rc = compare_runs(a, b, noise, engine, ordered=(ordered_a, ordered_b), distribution_tests=False)
    else:
        a, b = (_held(r, from_s, to_s, engine) for r in (base, other))
        rc = compare_runs(a, b, noise, engine, distribution_tests=False)
    return dataclasses.replace(rc, a=Run(a.path, a.meta), b=Run(b.path, b.meta))


def _histogram_run(run: Run, ps: tuple[float, ...], number: int) -> HistogramRun:
    """A histogram-only run as ``describe --json`` gives it: its stream's summary and each
    level with the binomial interval on its counts (``binomial-counts``)."""
    from jitterlab.describe.analysis import run_intervals
    from jitterlab.describe.histograms import describe_histogram

    levels = (50.0, *[p for p in ps if p != 50.0])
    intervals = run_intervals(run, levels)
    chosen = {percentile_key(q.level): q for q in intervals}
    return HistogramRun(run, describe_histogram(run).summary, chosen, number)


def _held(run: Run, from_s: float | None, to_s: float | None, engine: Engine | None) -> Run:
    """The run as a comparison reads it: held in memory when it fits (one read and one
    sort, in place of the passes over its file that ``compare`` of a run not held makes:
    the same numbers, stats/quantile_ci.py and stats/compare.py are exact either way), and
    restricted to ``--from``/``--to``."""
    whole = from_s is None and to_s is None
    why = why_not_held(run)
    if whole and (engine is not None or why is not None):
        return run
    if why is not None:
        raise JitterlabError(
            f"run {run.id} is not held in memory ({why}): --from/--to with comparisons need a held run"
        )
    run = dataclasses.replace(run)
    run.table  # noqa: B018
    return time_range(run, from_s, to_s)


def style_key(run: Run) -> tuple[str, str]:
    """(technique, policy): one colour per technique, one dash and marker per policy."""
    return technique_of(run), run.policy_label
