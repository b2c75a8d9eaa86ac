"""``jitterlab describe``: summary, outlier categories, windows and spike causes of a run."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    expected_interval_ns,
    expected_interval_option,
    load,
    note,
    percentile_list,
    positive_float,
    positive_seconds,
    print_json,
    probability,
    store_option,
    time_range_options,
)
from jitterlab.core.errors import JitterlabError
from jitterlab.core.render import render
from jitterlab.describe.options import TESTS


def add_parser(sub: Any) -> None:
    p = sub.add_parser("describe", help="summary, outlier categories and time windows of a run")
    p.add_argument("runs", nargs="+", metavar="RUN", help="a run; several with --union")
    p.add_argument(
        "--union",
        action="store_true",
        help="describe the runs as one (exact, as merge would give, nothing stored), then each run",
    )
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    p.add_argument(
        "--window", type=positive_seconds, default=1.0, help="window width by send time (default 1s)"
    )
    p.add_argument("--baseline", help="classify with the stacked-z thresholds of this reference run")
    p.add_argument("--test", default="stacked-z", choices=TESTS, help="outlier test (default stacked-z)")
    p.add_argument("--two-sided", action="store_true", help="also flag low outliers (stacked-z)")
    p.add_argument(
        "--threshold", type=positive_float, default=3.5, help="modified z-score threshold (default 3.5)"
    )
    p.add_argument(
        "--alpha", type=probability, default=0.05, help="significance level of the GESD test (default 0.05)"
    )
    p.add_argument(
        "--percentiles",
        type=percentile_list,
        help="also these percentiles of the run, exact (e.g. 50,90,99,99.9,99.99,99.999,max)",
    )
    time_range_options(p)
    p.add_argument(
        "--tag", help="imported HdrHistogram log: list the intervals of this tag (default: the run's)"
    )
    expected_interval_option(p)
    cluster_option(p, "the outlier categories (any --test), windows and summary")
    store_option(p)


def cmd_describe(args: argparse.Namespace) -> int:
    # the analysis (numpy, pyarrow) loads now, not with the parser or --help
    from jitterlab.describe.analysis import (
        describe_run,
        description_json,
        intervals_json,
        latency_views,
        refuse_on_cluster,
        resolved_only,
        restrict,
        run_intervals,
        run_percentiles,
    )
    from jitterlab.describe.context import context_block
    from jitterlab.describe.histograms import HISTOGRAM_ONLY, describe_histogram, histogram_json
    from jitterlab.describe.sources import source_table
    from jitterlab.describe.tables import INTERVAL_TABLE_HEADERS, interval_caption, interval_rows
    from jitterlab.describe.text import attribution_text, describe_text, histogram_text
    from jitterlab.store.reader import LOCAL

    if args.union:
        return _describe_union(args)
    if len(args.runs) > 1:
        raise JitterlabError(
            f"describe takes one run ({len(args.runs)} given): add --union to describe them as one"
        )
    run = load(args.runs[0], args)
    expected = expected_interval_ns(args)
    if run.histogram_only:
        if args.percentiles:
            run_percentiles(run, args.percentiles)  # refuses, naming the export that has them
        h = describe_histogram(run, args.tag, args.from_s, args.to_s, expected)
        # the run's own stream, whole: binomial on its counts (no order: no block method)
        whole = args.tag is None and args.from_s is None and args.to_s is None
        intervals = run_intervals(run) if whole else None
        if args.json:
            extra: dict[str, Any] = (
                {"percentiles": intervals_json(intervals)} if intervals is not None else {}
            )
            print_json(histogram_json(h) | {"context": context_block(run)} | extra)
        else:
            print(histogram_text(h))
            if intervals is not None:
                print("\n" + interval_caption(intervals))
                print(
                    render(
                        INTERVAL_TABLE_HEADERS, interval_rows(intervals, h.summary.get("count") or 0), "lrll"
                    )
                )
            note(f"note: {HISTOGRAM_ONLY}; this run has none")
        return 0
    if args.tag is not None:
        raise JitterlabError("--tag selects a stream of an imported HdrHistogram log; this run has samples")
    run, span = restrict(run, args.from_s, args.to_s)  # a span streams; a traced run is read
    baseline = load(args.baseline, args) if args.baseline else None
    width = round(args.window * 1e9)
    if width <= 0:
        raise JitterlabError("--window must be a positive duration such as 1s or 100ms")
    if args.cluster:
        refuse_on_cluster(args.test, run.loaded)
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack)
        d = describe_run(
            run, args.test, width, baseline, args.two_sided, args.threshold, args.alpha, engine, span
        )
        passes = engine or LOCAL
        views = latency_views(run, expected, passes, span)
        asked = run_percentiles(run, args.percentiles, passes, span) if args.percentiles else None
        intervals = list(d.intervals)
        if args.percentiles and not set(args.percentiles) <= {q.level for q in intervals}:
            levels = tuple(sorted({*(q.level for q in intervals), *args.percentiles}))
            intervals = run_intervals(run, levels, passes, span)
    chosen = resolved_only(asked, intervals) if asked is not None else None
    # a time span is described whole, not split by source (the sources' rows would be of the whole run)
    sources = source_table(run, d.summary, d.categories) if span is None else None
    if args.json:
        extra = {f"summary_{name}_ns": view for name, view in views.items()}
        if chosen is not None:
            extra["percentiles_ns"] = chosen
        extra["percentiles"] = intervals_json(intervals)  # with --percentiles' levels too
        if sources is not None:
            extra["sources"] = sources.to_dict()
        print_json(
            {"context": context_block(run)} | description_json(d) | extra | {"expected_interval_ns": expected}
        )
        return 0
    print(describe_text(d, views, sources, intervals=intervals))
    _, unavailable = attribution_text(d.attribution)
    if unavailable:
        note(unavailable)
    return 0


def _describe_union(args: argparse.Namespace) -> int:
    """``describe RUN RUN… --union``: the union (as merge would store it), split by run,
    then each run as ``describe RUN`` gives it."""
    # the analysis loads now, not with the parser
    from jitterlab.describe.analysis import (
        describe_run,
        description_json,
    )
    from jitterlab.describe.context import command_context, context_block, context_header
    from jitterlab.describe.sources import describe_union, open_union, source_table
    from jitterlab.describe.text import describe_text

    if args.test != "stacked-z" or args.baseline or args.cluster or args.tag or args.percentiles:
        raise JitterlabError(
            "--union describes with the stacked-z test, here: drop --test, --baseline, --cluster, "
            "--tag and --percentiles"
        )
    if args.from_s is not None or args.to_s is not None or args.expected_interval is not None:
        raise JitterlabError("--union describes whole stored runs: drop --from/--to and --expected-interval")
    width = round(args.window * 1e9)
    if width <= 0:
        raise JitterlabError("--window must be a positive duration such as 1s or 100ms")
    runs = [load(ref, args) for ref in args.runs]
    union = open_union(runs)
    d, table = describe_union(union, width, args.two_sided, args.threshold)
    each = [describe_run(run, "stacked-z", width, None, args.two_sided, args.threshold) for run in runs]
    tables = [source_table(e.run, e.summary, e.categories) for e in each]  # a merged run among them
    if args.json:
        described = [
            description_json(e)
            | {"context": context_block(e.run), "expected_interval_ns": None}
            | ({"sources": t.to_dict()} if t is not None else {})
            for e, t in zip(each, tables, strict=True)
        ]
        print_json(
            {"context": command_context(runs)}
            | description_json(d)
            | {"expected_interval_ns": None, "union_of": [r.id for r in runs], "sources": table.to_dict()}
            | {"runs": described}
        )
        return 0
    header = [
        context_header(runs),
        f"union    {len(runs)} runs as one ({', '.join(r.id for r in runs)}); "
        "each run's times count from its own first send",
    ]
    print(describe_text(d, None, table, header, list(d.intervals)))
    for e, t in zip(each, tables, strict=True):
        print("\n" + describe_text(e, None, t, intervals=list(e.intervals)))
    return 0


COMMANDS = {"describe": cmd_describe}
