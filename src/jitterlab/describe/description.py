"""``describe`` as one call: a request in, one typed description out; renderers only format it.

:func:`describe` turns a :class:`DescribeRequest` (runs, levels, test and its options,
windows, baseline, union, time range, tag, engine) into one :class:`Description`: a sample
run's (:class:`SampleDescription`), a histogram-only import's
(:class:`HistogramRunDescription`) or a union's (:class:`UnionDescription`). Each holds
every number ``describe`` prints: the summary, the percentiles with their intervals and
resolution, the categories, the windows, the baseline's verdict, the per-source table and
the context block. ``to_json()`` is ``describe --json``'s document;
:func:`jitterlab.describe.text.description_text` is its terminal text. The HTML report's run
sections, ``paper`` and the notebook build a request too (a run they already opened, held
in memory where the one memory rule lets it) and render the same description.

:func:`show` does the same for ``show``: a :class:`ShowRequest` in, one :class:`ShownRun`
(the summary, the percentiles with their intervals, the chosen levels) out.

The numbers themselves come from :func:`jitterlab.describe.analysis.describe_run` and its
helpers; this module is the only one that calls ``describe_run`` (tests/test_architecture.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.describe.analysis import (
    RunDescription,
    asked_values,
    describe_run,
    description_json,
    file_summary,
    intervals_json,
    latency_views,
    refuse_on_cluster,
    restrict,
    run_intervals,
    run_percentiles,
    run_summary,
)
from jitterlab.describe.compare import EngineOpener
from jitterlab.describe.context import command_context, context_block
from jitterlab.describe.histograms import (
    HISTOGRAM_ONLY,
    HistogramDescription,
    describe_histogram,
    histogram_json,
)
from jitterlab.describe.sources import SourceTable, describe_union, open_union, source_table
from jitterlab.stats.quantile_ci import QuantileInterval
from jitterlab.stats.summary import SUMMARY_PERCENTILES
from jitterlab.store import ResultsStore, Run, load_run
from jitterlab.store.memory import hold_in_memory
from jitterlab.store.reader import LOCAL, Engine, Span
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.schema import summary_fields


@dataclass(frozen=True)
class DescribeRequest:
    """What ``describe`` is asked.

    Parameters
    ----------
    runs
        The runs' references (ids, names, folders), or runs already opened (the report's,
        the paper's, a notebook's: described as they are, held or not; the caller's objects
        keep none of the columns read here); several only with ``union``.
    store
        The store the references resolve in (None: the default store).
    test, two_sided, threshold, alpha
        The outlier test (``stacked-z``, ``gesd``, ``walsh``) and its options.
    window_ns
        Window width by send time, in nanoseconds.
    baseline
        A reference run whose stacked-z thresholds classify the run (None: its own).
    percentiles
        Levels asked for beside the described ones (``--percentiles``), or None.
    from_s, to_s
        Only the samples sent in this range, seconds after the first send.
    tag
        An imported HdrHistogram log's stream to list (None: the run's).
    expected_interval_ns
        HdrHistogram's expected interval (coordinated omission corrected beside).
    union
        Describe the runs as one, then each run.
    engine
        Opens where the passes run (a cluster's engine; None: here, in this process):
        called once, only after the request has been checked, so a refused request starts
        no cluster.
    hold
        Hold the run in memory when the one memory rule lets it
        (:func:`jitterlab.store.memory.hold_in_memory`; never with an engine): one read and
        one sort serve the summary, the test and the caller's figures (the report, the
        paper); else (``describe``) the run is read in row groups.
    views
        Also the latency's other summaries (from the actual send; corrected): False where
        only the run's own is shown (the report, the paper), which saves their pass.
    sources
        Also the per-source table of a merged run: False where it is not shown (the paper).
    """

    runs: tuple[str | Run, ...]
    store: ResultsStore | None = None
    test: str = "stacked-z"
    window_ns: int = 1_000_000_000
    baseline: str | None = None
    two_sided: bool = False
    threshold: float = 3.5
    alpha: float = 0.05
    percentiles: tuple[float, ...] | None = None
    from_s: float | None = None
    to_s: float | None = None
    tag: str | None = None
    expected_interval_ns: int | None = None
    union: bool = False
    engine: EngineOpener | None = field(default=None, compare=False)
    hold: bool = False
    views: bool = True
    sources: bool = True


@dataclass(frozen=True)
class SampleDescription:
    """A sample run described: everything ``describe RUN`` prints.

    ``run`` holds the summary, categories, windows, baseline verdict and attribution;
    ``intervals`` the percentiles with their intervals (``--percentiles``' levels added);
    ``chosen`` the ``--percentiles`` values (None where unresolved); ``views`` the other
    summaries of the latency; ``sources`` the per-source table of a merged run; ``span`` the
    reader's filter the run was read through (``--from/--to`` of a run not held), else None.
    ``run.run`` is the run as described: held in memory (and restricted to ``--from/--to``)
    or not.
    """

    run: RunDescription
    context: dict[str, Any]
    intervals: tuple[QuantileInterval, ...]
    views: dict[str, dict[str, Any]] | None = None
    chosen: dict[str, float | None] | None = None
    sources: SourceTable | None = None
    expected_interval_ns: int | None = None
    span: Span | None = None

    def to_json(self) -> dict[str, Any]:
        """``describe RUN --json``'s document."""
        extra: dict[str, Any] = {f"summary_{name}_ns": view for name, view in (self.views or {}).items()}
        if self.chosen is not None:
            extra["percentiles_ns"] = self.chosen
        extra["percentiles"] = intervals_json(list(self.intervals))  # with --percentiles' levels too
        if self.sources is not None:
            extra["sources"] = self.sources.to_dict()
        return (
            {"context": self.context}
            | description_json(self.run)
            | extra
            | {"expected_interval_ns": self.expected_interval_ns}
        )

    def member_json(self) -> dict[str, Any]:
        """The run's entry in a union's ``runs`` list."""
        return (
            description_json(self.run)
            | {"context": self.context, "expected_interval_ns": self.expected_interval_ns}
            | ({"sources": self.sources.to_dict()} if self.sources is not None else {})
        )


@dataclass(frozen=True)
class HistogramRunDescription:
    """A histogram-only import described: its streams, the chosen tag's intervals and, for
    the run's own stream whole, the percentiles' intervals (binomial on its counts)."""

    histogram: HistogramDescription
    context: dict[str, Any]
    intervals: tuple[QuantileInterval, ...] | None
    note: str = f"note: {HISTOGRAM_ONLY}; this run has none"

    def to_json(self) -> dict[str, Any]:
        """``describe RUN --json``'s document."""
        extra: dict[str, Any] = (
            {"percentiles": intervals_json(list(self.intervals))} if self.intervals is not None else {}
        )
        return histogram_json(self.histogram) | {"context": self.context} | extra


@dataclass(frozen=True)
class UnionDescription:
    """Several runs described as one (as merge would store them), split by run, then each run."""

    union: RunDescription
    table: SourceTable
    context: dict[str, Any]
    runs: tuple[SampleDescription, ...]

    def to_json(self) -> dict[str, Any]:
        """``describe RUN RUN… --union --json``'s document."""
        return (
            {"context": self.context}
            | description_json(self.union)
            | {
                "expected_interval_ns": None,
                "union_of": [d.run.run.id for d in self.runs],
                "sources": self.table.to_dict(),
            }
            | {"runs": [d.member_json() for d in self.runs]}
        )


Description = SampleDescription | HistogramRunDescription | UnionDescription


def describe(request: DescribeRequest) -> Description:
    """Everything ``describe`` says about the request's runs, as one typed description.

    Parameters
    ----------
    request
        The runs and what is asked of them (:class:`DescribeRequest`).

    Returns
    -------
    Description
        A sample run's, a histogram-only import's or a union's description: ``to_json()``
        is ``describe --json``, :func:`jitterlab.describe.text.description_text` its text.

    Raises
    ------
    JitterlabError
        A request that cannot be described (one line, named): refused before any cluster
        is started.
    """
    if request.union:
        return _describe_union(request)
    if len(request.runs) > 1:
        raise JitterlabError(
            f"describe takes one run ({len(request.runs)} given): add --union to describe them as one"
        )
    run = _open(request.runs[0], request.store)
    if run.histogram_only:
        return _describe_histogram(run, request)
    if request.tag is not None:
        raise JitterlabError("--tag selects a stream of an imported HdrHistogram log; this run has samples")
    if request.hold and request.engine is None and not run.loaded and hold_in_memory(run):
        _ = run.table  # read once here: describe_run then works on the columns in memory
    run, span = restrict(run, request.from_s, request.to_s)  # a span streams; a traced run is read
    baseline = load_run(request.baseline, request.store) if request.baseline else None
    _check_window(request.window_ns)
    if request.engine is not None:
        refuse_on_cluster(run.loaded)
    opened = request.engine() if request.engine is not None else None
    d = describe_run(
        run,
        request.test,
        request.window_ns,
        baseline,
        request.two_sided,
        request.threshold,
        request.alpha,
        opened,
        span,
    )
    passes = opened or LOCAL
    views = latency_views(run, request.expected_interval_ns, passes, span) if request.views else None
    intervals = list(d.intervals)
    if request.percentiles and not set(request.percentiles) <= {q.level for q in intervals}:
        levels = tuple(sorted({*(q.level for q in intervals), *request.percentiles}))
        intervals = run_intervals(run, levels, passes, span)
    # a time span is described whole, not split by source (the sources' rows would be of the whole run)
    return SampleDescription(
        d,
        context_block(run),
        tuple(intervals),
        views,
        asked_values(request.percentiles, intervals) if request.percentiles else None,
        source_table(run, d.summary, d.categories) if span is None and request.sources else None,
        request.expected_interval_ns,
        span,
    )


def _open(ref: str | Run, store: ResultsStore | None) -> Run:
    """A run reference resolved in ``store``, or a run already opened as a copy (what is
    read into it here goes with the description, not with the caller's object)."""
    return dataclasses.replace(ref) if isinstance(ref, Run) else load_run(ref, store)


def _check_window(window_ns: int) -> None:
    if window_ns <= 0:
        raise JitterlabError("--window must be a positive duration such as 1s or 100ms")


def _describe_histogram(run: Run, request: DescribeRequest) -> HistogramRunDescription:
    """A histogram-only import: its streams and intervals (``--percentiles`` refused,
    naming the export that has them)."""
    if request.percentiles:
        run_percentiles(run, request.percentiles)  # refuses
    h = describe_histogram(run, request.tag, request.from_s, request.to_s, request.expected_interval_ns)
    # the run's own stream, whole: binomial on its counts (no order: no block method)
    whole = request.tag is None and request.from_s is None and request.to_s is None
    return HistogramRunDescription(h, context_block(run), tuple(run_intervals(run)) if whole else None)


def _describe_union(request: DescribeRequest) -> UnionDescription:
    """``describe RUN RUN… --union``: the union (as merge would store it), split by run,
    then each run as ``describe RUN`` gives it (stacked z, whole runs, here)."""
    if (
        request.test != "stacked-z"
        or request.baseline
        or request.engine is not None
        or request.tag
        or request.percentiles
    ):
        raise JitterlabError(
            "--union describes with the stacked-z test, here: drop --test, --baseline, --cluster, "
            "--tag and --percentiles"
        )
    if request.from_s is not None or request.to_s is not None or request.expected_interval_ns is not None:
        raise JitterlabError("--union describes whole stored runs: drop --from/--to and --expected-interval")
    _check_window(request.window_ns)
    runs = [_open(ref, request.store) for ref in request.runs]
    union = open_union(runs)
    d, table = describe_union(union, request.window_ns, request.two_sided, request.threshold)
    each = [
        describe_run(run, "stacked-z", request.window_ns, None, request.two_sided, request.threshold)
        for run in runs
    ]
    described = tuple(
        SampleDescription(
            e,
            context_block(e.run),
            tuple(e.intervals),
            sources=source_table(e.run, e.summary, e.categories),  # a merged run among them
        )
        for e in each
    )
    return UnionDescription(d, table, command_context(runs), described)


@dataclass(frozen=True)
class ShowRequest:
    """What ``show`` is asked.

    Parameters
    ----------
    run
        The run's reference (id, name, folder) or a run already opened.
    store
        The store the reference resolves in (None: the default store).
    percentiles
        Levels asked beside the summary's (``--percentiles``), or None.
    recompute
        Read every sample, not the summary and intervals stored at commit.
    engine
        Opens where the passes run (a cluster's engine; None: here): called once, for a
        sample run only (a histogram-only import starts no cluster).
    """

    run: str | Run
    store: ResultsStore | None = None
    percentiles: tuple[float, ...] | None = None
    recompute: bool = False
    engine: EngineOpener | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ShownRun:
    """A run as ``show`` prints it: its summary (the stored one unless recomputed; a
    histogram-only import's by HdrHistogram's definition), the summary's percentiles and the
    asked levels with their intervals, and the asked levels' values (None where the run does
    not resolve them). ``to_json()`` is ``show --json``;
    :func:`jitterlab.describe.text.shown_text` its terminal text."""

    run: Run
    summary: dict[str, Any]
    intervals: tuple[QuantileInterval, ...]
    chosen: dict[str, float | None] | None = None

    def to_json(self) -> dict[str, Any]:
        """``show RUN --json``'s document."""
        run = self.run
        return {
            "id": run.id,
            "status": run.meta.get("status"),
            "partial_reason": run.meta.get("partial_reason"),
            "context": context_block(run),
            "config": run.config,
            **summary_fields(self.summary),
            "percentiles_ns": self.chosen,
            "floor": run.meta.get("floor"),
            "percentiles": [q.to_dict() for q in self.intervals],
        }


def show(request: ShowRequest) -> ShownRun:
    """Everything ``show`` says about one run, as one typed result.

    Parameters
    ----------
    request
        The run and what is asked of it (:class:`ShowRequest`).

    Returns
    -------
    ShownRun
        ``to_json()`` is ``show --json``, :func:`jitterlab.describe.text.shown_text` its text.

    Raises
    ------
    JitterlabError
        A run that cannot be shown (damaged, or ``--percentiles`` of a histogram-only import,
        naming the export that has them): one line.
    """
    run = _open(request.run, request.store)
    levels = tuple(sorted({*SUMMARY_PERCENTILES, *(request.percentiles or ())}))
    passes: Engine = LOCAL
    if request.engine is not None and not run.histogram_only:
        passes = request.engine() or LOCAL
        summary = file_summary(run, verified_samples_path(run), request.recompute, passes).to_dict()
    else:
        summary = run_summary(run, recompute=request.recompute)  # verifies the samples file
    if request.percentiles and run.histogram_only:
        run_percentiles(run, request.percentiles)  # refuses, naming the export that has them
    intervals = run_intervals(run, levels, passes, stored=not request.recompute)
    chosen = asked_values(request.percentiles, intervals) if request.percentiles else None
    return ShownRun(run, summary, tuple(intervals), chosen)
