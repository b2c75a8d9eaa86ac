"""What `describe` and `report` compute for a run: the statistics, gathered in one place.

Both commands call :func:`describe_run`, so the report never recomputes a statistic in a
different way from the terminal output.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from jitterlab.core.errors import JitterlabError
from jitterlab.core.percentiles import percentile_key
from jitterlab.core.warnings import CodedWarning
from jitterlab.describe.attribution import spike_attribution
from jitterlab.describe.options import TESTS
from jitterlab.stats import (
    StackedResult,
    Summary,
    Verdict,
    WindowTable,
    baseline_of,
    percentiles,
    screen,
    stacked_gesd,
    stacked_walsh,
    stacked_z_test,
    summarize,
    time_windows,
)
from jitterlab.stats.extremes import stacked_gesd_result, stacked_walsh_result
from jitterlab.stats.outofcore import (
    baseline_scan,
    categories_scan,
    screen_scan,
    stacked_z_scan,
    time_windows_scan,
)
from jitterlab.stats.quantile_ci import (
    CONFIDENCE,
    RESOLVE_BEYOND,
    QuantileInterval,
    intervals_of_sample,
    intervals_of_scan,
    is_resolved,
    resolvable_level,
)
from jitterlab.stats.scan import Scan
from jitterlab.stats.summary import SUMMARY_PERCENTILES, extent_by, percentiles_of_scan
from jitterlab.stats.twopass import (
    categories_table,
    describe_two_pass,
    stacked_z_table,
)
from jitterlab.stats.valuetable import ValueTable
from jitterlab.store import Run
from jitterlab.store.hdr.streams import corrected_figures
from jitterlab.store.reader import (
    ACTUAL_SEND,
    LOCAL,
    Engine,
    Span,
    has_column,
    latency_chunks,
    send_time_extent,
)
from jitterlab.store.runs import verified_samples_path
from jitterlab.store.schema import SAMPLES_FILE, summary_fields
from jitterlab.store.span import no_samples_sent, time_span
from jitterlab.store.writer import stored_intervals, stored_summary

DESCRIBED_LEVELS = (*SUMMARY_PERCENTILES, 100.0)  # the levels describe gives intervals for
BASELINE_NEEDS_Z = "--baseline works with --test stacked-z (its thresholds come from median and MAD)"


@dataclass(frozen=True)
class RunDescription:
    run: Run
    summary: Summary
    test: str
    categories: StackedResult
    windows: WindowTable
    baseline_id: str | None
    attribution: dict[str, Any] | None  # spike causes under this test (traced runs), else None
    screening: Verdict | None = None  # with a baseline: contaminated against it (stats/screening.py)
    ordered: np.ndarray | None = None  # the latencies sorted (for percentiles at any point)
    # the summary's percentiles and the maximum, each with its interval (stats/quantile_ci.py)
    intervals: tuple[QuantileInterval, ...] = ()


def run_test(
    latency: np.ndarray,
    test: str,
    two_sided: bool = False,
    threshold: float = 3.5,
    alpha: float = 0.05,
    baseline: StackedResult | None = None,
    ordered: np.ndarray | None = None,
) -> StackedResult:
    """The outlier categories of ``latency`` under the chosen stacked test (``ordered``:
    the sample sorted, when the caller has it)."""
    if test == "stacked-z":
        return stacked_z_test(
            latency, threshold=threshold, two_sided=two_sided, baseline=baseline, ordered=ordered
        )
    if baseline is not None:
        raise JitterlabError(BASELINE_NEEDS_Z)
    if test == "gesd":
        return stacked_gesd(latency, alpha=alpha)
    if test == "walsh":
        if latency.size <= 60:
            raise JitterlabError(f"the Walsh test needs more than 60 samples (this run has {latency.size})")
        return stacked_walsh(latency)
    raise JitterlabError(f"unknown test '{test}' (choose from {', '.join(TESTS)})")


def describe_run(
    run: Run,
    test: str = "stacked-z",
    window_ns: int = 1_000_000_000,
    baseline: Run | None = None,
    two_sided: bool = False,
    threshold: float = 3.5,
    alpha: float = 0.05,
    engine: Engine | None = None,
    span: Span | None = None,
) -> RunDescription:
    """Summary, outlier categories and time windows of one run; ``engine``: where the
    passes over the samples run (a cluster's, jitterlab.cluster; default: here);
    ``span``: only the samples sent in it (``--from``/``--to``, a filter of the reader)."""
    if run.meta.get("samples") is None:
        raise JitterlabError(
            f"run {run.id} holds a histogram only: outlier tests and windows by sample need raw "
            "samples (show and export work on it)"
        )
    if engine is not None:
        refuse_on_cluster(run.loaded or (baseline is not None and baseline.loaded))
        return _describe_streamed(run, test, window_ns, baseline, two_sided, threshold, alpha, engine, span)
    if not run.loaded and (baseline is None or not baseline.loaded):
        return _describe_streamed(run, test, window_ns, baseline, two_sided, threshold, alpha, LOCAL, span)
    latency = run.latency_ns
    if latency.size == 0:
        raise JitterlabError(f"run {run.id} has no samples")
    reference = None
    screening = None
    if baseline is not None:
        reference = stacked_z_test(baseline.latency_ns, threshold=threshold, two_sided=two_sided)
        if reference.thresholds:
            screening = screen(latency, baseline_of(baseline.latency_ns, reference))
    ordered = np.sort(latency)  # one sort serves the summary and the stacked test
    categories = run_test(latency, test, two_sided, threshold, alpha, reference, ordered=ordered)
    windows = time_windows(run.t_send_ns, latency, window_ns, categories)
    return RunDescription(
        run,
        summarize(latency, ordered),
        test,
        categories,
        windows,
        baseline.id if baseline else None,
        spike_attribution(run, categories),
        screening,
        ordered,
        tuple(intervals_of_sample(latency, DESCRIBED_LEVELS, run.t_send_ns, ordered=ordered)),
    )


def refuse_on_cluster(loaded: bool) -> None:
    """What describe cannot run on a cluster, refused in one line (before one is started):
    a run already held in memory here (a traced run's --from/--to range). Every test and a
    stored run's --from/--to run there."""
    if loaded:
        raise JitterlabError(
            "--cluster describes stored runs read by its workers, not a run held here: drop --cluster"
        )


def _describe_streamed(
    run: Run,
    test: str,
    window_ns: int,
    baseline: Run | None,
    two_sided: bool,
    threshold: float,
    alpha: float,
    engine: Engine = LOCAL,
    span: Span | None = None,
) -> RunDescription:
    """:func:`describe_run` read in row groups (memory independent of the run's size;
    identical results: stats/outofcore.py for the stacked z-score test, stats/extremes.py
    for GESD and Walsh), here or on a cluster's workers; ``engine`` reads only the span's
    samples when there is one."""
    if test not in TESTS:
        raise JitterlabError(f"unknown test '{test}' (choose from {', '.join(TESTS)})")
    path = verified_samples_path(run)
    summary = file_summary(run, path, recompute=span is not None, engine=engine, where=span)
    if summary.count == 0:
        raise JitterlabError(f"run {run.id} has no samples")
    if test != "stacked-z":
        if baseline is not None:
            raise JitterlabError(BASELINE_NEEDS_Z)
        categories, windows = _categories_and_windows(
            path,
            summary,
            window_ns,
            engine,
            span,
            lambda _table: _other_test_streamed(engine.latency(path, where=span), test, alpha, summary.count),
        )
        return RunDescription(
            run,
            summary,
            test,
            categories,
            windows,
            None,
            spike_attribution(run, categories, span),
            intervals=tuple(run_intervals(run, DESCRIBED_LEVELS, engine, span)),
        )
    reference = None
    screening = None
    if baseline is not None:
        base_path = verified_samples_path(baseline)
        # the span is the run's, not the baseline's: the baseline is read whole
        if file_summary(baseline, base_path, engine=engine).count == 0:
            raise JitterlabError(f"baseline run {baseline.id} has no samples")
        reference = stacked_z_scan(engine.latency(base_path), threshold, two_sided)
        if reference.thresholds:
            screening = screen_scan(
                engine.latency(path, where=span), baseline_scan(engine.latency(base_path), reference)
            )

    def categories_of(table: ValueTable | None) -> StackedResult:
        if reference is not None:  # the baseline's thresholds
            cuts = (reference.thresholds, reference.low_threshold, reference.levels, reference.threshold)
            if table is not None:
                return categories_table(table, *cuts, keep_empty=True)
            return categories_scan(engine.latency(path, where=span), *cuts, True)
        if table is not None:
            return stacked_z_table(table, threshold, two_sided)
        return stacked_z_scan(engine.latency(path, where=span), threshold, two_sided)

    categories, windows = _categories_and_windows(path, summary, window_ns, engine, span, categories_of)
    return RunDescription(
        run,
        summary,
        "stacked-z",
        categories,
        windows,
        baseline.id if baseline else None,
        spike_attribution(run, categories, span),
        screening,
        intervals=tuple(run_intervals(run, DESCRIBED_LEVELS, engine, span)),
    )


def _other_test_streamed(scan: Scan, test: str, alpha: float, count: int) -> StackedResult:
    """The stacked GESD or Walsh test of a sample read by ``scan`` (``count`` values);
    its refusals as :func:`run_test`'s, in one line."""
    if test == "walsh" and count <= 60:
        raise JitterlabError(f"the Walsh test needs more than 60 samples (this run has {count})")
    try:
        return stacked_gesd_result(scan, alpha) if test == "gesd" else stacked_walsh_result(scan)
    except ValueError as e:
        raise JitterlabError(f"--test {test}: {e}") from None


def restrict(run: Run, from_s: float | None, to_s: float | None) -> tuple[Run, Span | None]:
    """``--from``/``--to`` of a sample run for ``describe``: the run and the span its
    analyses read through the reader's filter (:mod:`jitterlab.store.span`; a traced run's spike
    attribution too), or, for a run in memory, the run restricted by :func:`time_range`
    and no span."""
    if from_s is None and to_s is None:
        return run, None
    if run.loaded:
        return time_range(run, from_s, to_s), None
    return run, time_span(run, from_s, to_s)


def _categories_and_windows(
    path: Path,
    summary: Summary,
    window_ns: int,
    engine: Engine,
    span: Span | None,
    categories_of: Callable[[ValueTable | None], StackedResult],
) -> tuple[StackedResult, WindowTable]:
    """A test's categories (``categories_of``, given the sample's value table when there is
    one) and the time windows under them: in two passes (stats/twopass.py; here when the
    kernels are installed, or on a cluster's workers: cluster/twopass.py) when the
    windows fit its histograms, else by the radix passes of stats/outofcore.py (over a
    --from/--to span, or when the kernels cannot take the sample); identical results."""
    reader = engine.two_pass(path, where=span)
    # the stored summary's extremes size the kernels' arrays (a wrong one only sends the
    # work to the radix passes; run.json is not covered by the samples' SHA-256): used only
    # when they are int64 values in order (a minimum above the maximum, or 1e308, was an
    # internal error: found by the long fuzz run, issue 24)
    if reader is not None and _int64_extremes(summary.min, summary.max):
        extent = send_time_extent(path)
        if extent is not None:
            found = describe_two_pass(
                reader,
                int(summary.min),
                int(summary.max),
                *extent,
                window_ns,
                categories_of,
            )
            if found is not None:
                return found
    categories = categories_of(None)
    return categories, time_windows_scan(engine.timed(path, where=span), window_ns, categories)


def _int64_extremes(lowest: float, highest: float) -> bool:
    """True when ``lowest <= highest`` are finite and both fit an int64."""
    return (
        math.isfinite(lowest)
        and math.isfinite(highest)
        and -(2**63) <= int(lowest) <= int(highest) <= 2**63 - 1
    )


def time_range(run: Run, from_s: float | None, to_s: float | None) -> Run:
    """The run restricted to the samples sent from ``from_s`` to ``to_s`` seconds after its
    first send (``--from/--to``, as HistogramLogProcessor's -start/-end on a log)."""
    if from_s is None and to_s is None:
        return run
    t = run.t_send_ns
    t0 = int(t.min()) if t.size else 0
    keep = np.ones(t.size, dtype=bool)
    if from_s is not None:
        keep &= t >= t0 + round(from_s * 1e9)
    if to_s is not None:
        keep &= t <= t0 + round(to_s * 1e9)
    if not keep.any():
        raise no_samples_sent(run, from_s, to_s)
    return dataclasses.replace(run, _table=run.table.filter(pa.array(keep)))


def latency_views(
    run: Run, expected_interval_ns: int | None = None, engine: Engine = LOCAL, span: Span | None = None
) -> dict[str, dict[str, Any]]:
    """Other views of a sample run's latency, each a summary beside the run's own:

    - ``corrected``: the samples recorded with HdrHistogram's recordValueWithExpectedInterval
      (coordinated omission corrected for the expected interval; Java's figures);
    - ``from_actual_send``: an open-loop run measures from when each message *should* have
      left (its intended time, the default); this is from when it actually left, the
      figure a closed-loop tool would report.

    ``span``: only the samples sent in it (read in row groups).
    """
    views: dict[str, dict[str, Any]] = {}
    if run.loaded:
        if expected_interval_ns:
            views["corrected"] = corrected_figures(run.latency_ns, expected_interval_ns)
        if ACTUAL_SEND in run.table.column_names:
            views["from_actual_send"] = summarize(run.t_recv_ns - run.column(ACTUAL_SEND)).to_dict()
        return views
    # not read yet: in row groups (summarize_chunks equals summarize to the last bit)
    path = verified_samples_path(run)
    if expected_interval_ns:
        views["corrected"] = corrected_figures(latency_chunks(path, where=span), expected_interval_ns)
    if has_column(path, ACTUAL_SEND):
        views["from_actual_send"] = engine.summary(path, since=ACTUAL_SEND, where=span).to_dict()
    return views


def run_summary(run: Run, recompute: bool = False) -> dict[str, Any]:
    """The summary of a run: of its samples (file verified; see :func:`file_summary`), or the
    stored one of a histogram-only import (HdrHistogram's percentile definition)."""
    if run.histogram_only:
        return dict(run.meta["summary"]["latency_ns"])
    if not recompute and stored_summary(run.meta) is not None:
        return file_summary(run, verified_samples_path(run)).to_dict()
    return _summary_while_verified(run).to_dict()


def _summary_while_verified(run: Run) -> Summary:
    """:func:`summarize_file` of the run's samples file while a thread checks it against
    run.json (SHA-256: a fifth of show --recompute's time at 10^8 when done first); nothing
    is returned before the check passes, and a file that fails it raises its
    CorruptRunError, not whatever reading it raised."""
    info = run.meta.get("samples") or {}
    path = run.path / str(info.get("file", SAMPLES_FILE))
    if not path.is_file():  # missing, or a FIFO or device that a read would block on
        verified_samples_path(run)  # raises, naming it
    with ThreadPoolExecutor(1) as pool:
        checked = pool.submit(verified_samples_path, run)
        try:
            summary = LOCAL.summary(path)
        except Exception:
            checked.result()  # a corrupt or missing file says so first
            raise
        checked.result()
    return summary


def file_summary(
    run: Run, path: Path, recompute: bool = False, engine: Engine = LOCAL, where: Span | None = None
) -> Summary:
    """The summary of a run's verified samples file ``path``: the one stored at commit when
    it was computed as this version computes it (the file's SHA-256 was just checked against
    run.json), else read in row groups by ``engine`` (only the samples ``where`` keeps) —
    never whole: exact and equal to summarize(run.latency_ns) to the last bit."""
    stored = None if recompute or where is not None else stored_summary(run.meta)
    return stored if stored is not None else engine.summary(path, where=where)


def run_percentiles(
    run: Run, ps: tuple[float, ...], engine: Engine = LOCAL, span: Span | None = None
) -> dict[str, float]:
    """Chosen type-7 percentiles of a sample run (``--percentiles``), exact, read in row
    groups (only the samples sent in ``span`` when given); keys as
    ``core.percentiles.percentile_key`` writes them."""
    if run.histogram_only:
        raise JitterlabError(
            f"run {run.id} holds a histogram only: its percentiles at chosen levels are in "
            f"'jitterlab export {run.id} --format hgrm --percentiles …' (HdrHistogram's definition)"
        )
    if run.loaded:  # a time range of it (--from/--to): the samples in memory
        values = percentiles(run.latency_ns, ps)
    else:
        path = verified_samples_path(run)
        values = percentiles_of_scan(engine.latency(path, where=span), ps)
    return {percentile_key(p): float(v) for p, v in zip(ps, values, strict=True)}


def run_intervals(
    run: Run,
    levels: tuple[float, ...] = SUMMARY_PERCENTILES,
    engine: Engine = LOCAL,
    span: Span | None = None,
    confidence: float = CONFIDENCE,
    stored: bool = True,
) -> list[QuantileInterval]:
    """Each level's type-7 value with its interval and whether the run resolves it
    (stats/quantile_ci.py): in memory for a run held (or a --from/--to range of it), else
    from run.json when it holds them (the summary's levels, computed at publish from the
    same file by the same function; ``stored=False``: compute them again), else by passes
    over the samples file (``engine``; only the samples sent in ``span``), exact and never
    holding the run. A histogram-only run: binomial on its counts
    (:func:`jitterlab.describe.histograms.histogram_intervals`)."""
    if run.histogram_only:
        from jitterlab.describe.histograms import histogram_intervals

        return histogram_intervals(run, levels, confidence)
    if run.loaded:
        return intervals_of_sample(run.latency_ns, levels, run.t_send_ns, confidence)
    path = verified_samples_path(run)
    if span is None and stored and confidence == CONFIDENCE:
        kept = stored_intervals(run.meta, levels)  # computed at publish from this very file
        if kept is not None:
            return kept
    count, lowest, highest, _ = extent_by(engine.latency(path, where=span))
    if count == 0:
        return intervals_of_sample(np.zeros(0, np.int64), levels, confidence=confidence)
    times = send_time_extent(path) if span is None else None
    return intervals_of_scan(
        engine.latency(path, where=span),
        engine.timed(path, where=span),
        levels,
        (count, lowest, highest),
        times,
        confidence,
    )


def asked_values(ps: tuple[float, ...], intervals: list[QuantileInterval]) -> dict[str, float | None]:
    """``--percentiles``' values by key, taken from ``intervals`` (which hold every level of
    ``ps``: their type-7 values are :func:`run_percentiles`' own), with None for a level the
    run does not resolve (the ``percentiles`` block says what it is at least)."""
    by_level = {q.level: q for q in intervals}
    return {percentile_key(p): (by_level[p].value if by_level[p].resolved else None) for p in ps}


def resolution_warning(run: Run, levels: tuple[float, ...] = SUMMARY_PERCENTILES) -> CodedWarning | None:
    """``tail-unresolved`` when the run's sample cannot resolve some of the ``levels`` it
    will be shown at (stats/quantile_ci.py's rule), naming them and the highest it resolves;
    None when it resolves them all."""
    count = int(((run.meta.get("summary") or {}).get("latency_ns") or {}).get("count") or 0)
    missing = [p for p in levels if p < 100 and not is_resolved(count, p)]
    if not count or not missing:
        return None
    names = ", ".join(percentile_key(p) for p in missing)
    top = resolvable_level(count)
    upto = f"up to p{top:.6g}" if top > 0 else "none of the percentiles"
    return CodedWarning(
        "tail-unresolved",
        f"run {run.id}: {count:,} samples resolve {upto} (at least {RESOLVE_BEYOND} samples beyond a "
        f"level); {names} are shown as lower bounds (≥), not values",
    )


def intervals_json(intervals: list[QuantileInterval]) -> list[dict[str, Any]]:
    """The ``percentiles`` block of ``describe --json`` / ``show --json``: per level
    {level, value, ci_low, ci_high, resolved, method, confidence, …} (value null when the
    level is not resolved: ci_low is then the bound it is at least)."""
    return [q.to_dict() for q in intervals]


def description_json(d: RunDescription) -> dict[str, Any]:
    w = d.windows
    return {
        "id": d.run.id,
        "label": d.run.label,
        "status": d.run.meta.get("status"),
        **summary_fields(d.summary.to_dict()),
        "percentiles": intervals_json(list(d.intervals)),
        "test": d.test,
        "baseline": d.baseline_id,
        "screening": d.screening.to_dict() if d.screening else None,
        "thresholds_ns": list(d.categories.thresholds),
        "attribution": d.attribution,
        "low_threshold_ns": d.categories.low_threshold,
        "categories": [
            {
                "category": c.index,
                "lower_ns": c.lower,
                "upper_ns": c.upper,
                "count": c.count,
                "share": c.share,
            }
            for c in d.categories.categories
        ],
        "windows": {
            "width_ns": w.width_ns,
            "categories": list(w.categories),
            "rows": [
                {
                    "start_ns": int(w.start_ns[i]),
                    "count": int(w.count[i]),
                    "mean_ns": _num(w.mean[i]),
                    "p50_ns": _resolved_num(w.p50[i], int(w.count[i]), 50.0),
                    "p99_ns": _resolved_num(w.p99[i], int(w.count[i]), 99.0),
                    "max_ns": _num(w.max[i]),
                    "category_counts": [int(v) for v in w.category_counts[i]],
                }
                for i in range(w.start_ns.size)
            ],
        },
    }


def _num(v: float) -> float | None:
    return None if not np.isfinite(v) else float(v)


def _resolved_num(v: float, count: int, level: float) -> float | None:
    """A window's percentile for JSON: None where its ``count`` samples do not resolve the
    level (as ``percentiles_ns`` gives an unresolved level), else :func:`_num`."""
    return _num(v) if is_resolved(count, level) else None


def pauses_in_run(run: Run) -> list[dict[str, Any]]:
    """The JVM's GC and safepoint pauses stored with the run (``jvm.pause_events``) that
    overlap its samples (send time span)."""
    events = (run.meta.get("jvm") or {}).get("pause_events") or []
    if not events:
        return []
    t_send = run.t_send_ns
    first, last = int(t_send.min()), int(t_send.max())
    return [e for e in events if e["end_ns"] >= first and e["start_ns"] <= last]
