"""Runs in and out in the field's formats: ``import`` (HdrHistogram logs, CSV) and ``export``
(hgrm, hlog, CSV, Parquet)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    expected_interval_ns,
    expected_interval_option,
    load,
    note,
    percentile_list,
    positive_int,
    positive_seconds,
    store_option,
    time_range_options,
    warn,
    writable_store,
)
from jitterlab.core.errors import JitterlabError
from jitterlab.core.units import UNITS_NS
from jitterlab.describe.options import FORMATS


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("export", help="write a run as HdrHistogram (hgrm, hlog), CSV or Parquet")
    p.add_argument("run", metavar="RUN", help="run id, name, unique part of an id, or run folder")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("-o", "--output", help="output file, - for standard output (default RUN_ID.FORMAT)")
    p.add_argument(
        "--window", type=positive_seconds, default=1.0, help="interval of the hlog histograms (default 1s)"
    )
    p.add_argument(
        "--unit",
        choices=tuple(UNITS_NS),
        help="the unit of the values: hgrm's (default us), the latency column of csv and parquet "
        "(latency_<unit>; default ns; times stay in ns); hlog is in ns",
    )
    p.add_argument(
        "--ticks",
        type=positive_int,
        default=5,
        help="hgrm: percentile rows per half distance to 100 %% (Java's outputPercentileDistribution; default 5)",
    )
    p.add_argument(
        "--percentiles",
        type=percentile_list,
        help="hgrm: rows at these percentiles instead (e.g. 50,90,99,99.9,99.99,99.999,max)",
    )
    p.add_argument(
        "--tag", help="imported HdrHistogram log: export this tag's intervals (default: the run's)"
    )
    time_range_options(p)
    cluster_option(p, "the histograms of hgrm and hlog (refused for csv and parquet: copies)")
    store_option(p)
    p = sub.add_parser("import", help="store an HdrHistogram log (.hlog) or a CSV of samples as a run")
    p.add_argument("file")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="leave out damaged log lines or CSV rows that are not latencies, count them (the run is partial)",
    )
    p.add_argument(
        "--unit",
        choices=tuple(UNITS_NS),
        help="the file's values are in this unit (default: what its header names, else ns; YCSB and wrk2 log us)",
    )
    p.add_argument("--tag", help="hlog: keep only the intervals of this tag (default: every tag, kept apart)")
    time_range_options(p)
    p.add_argument(
        "--time-column",
        metavar="NAME[:UNIT]",
        help="CSV: the column of send times beside a latency column, with its unit (e.g. time:s)",
    )
    p.add_argument(
        "--latency-column",
        metavar="NAME[:UNIT]",
        help="CSV: the column of latencies, any name, with its unit (e.g. 'response time:ms'; "
        "default: latency_ns or a latency column with a unit suffix)",
    )
    expected_interval_option(p)
    store_option(p, named=True)


def cmd_export(args: argparse.Namespace) -> int:
    from jitterlab.describe.export import (  # numpy, pyarrow: now
        ExportOptions,
        export_run,
        refuse_export_on_cluster,
    )

    window = round(args.window * 1e9)
    if window <= 0:
        raise JitterlabError("--window must be a positive duration such as 1s or 100ms")
    if args.format != "hgrm" and (args.percentiles is not None or args.ticks != 5):
        raise JitterlabError("--percentiles and --ticks shape an hgrm export (--format hgrm)")
    if args.format == "hlog" and args.unit not in (None, "ns"):
        raise JitterlabError("--unit: an hlog export is in ns (its readers take the unit from its header)")
    options = ExportOptions(
        window_ns=window,
        unit=args.unit or "us",
        latency_unit=args.unit or "ns",
        ticks=args.ticks,
        percentiles=args.percentiles,
        tag=args.tag,
        from_s=args.from_s,
        to_s=args.to_s,
    )
    run = load(args.run, args)
    out = Path(args.output or f"{run.id}.{args.format}")
    if args.cluster and not run.histogram_only:  # a stored log is read here, as show reads it
        refuse_export_on_cluster(args.format)
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack) if not run.histogram_only else None
        export_run(run, args.format, out, dataclasses.replace(options, engine=engine))  # "-": stdout
    if args.output != "-":
        note(f"wrote {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from jitterlab.describe.analysis import resolution_warning
    from jitterlab.measure.imports import import_plan  # numpy, pyarrow: now
    from jitterlab.measure.runner import run_plan
    from jitterlab.store.ingest import ImportOptions

    options = ImportOptions(
        skip_invalid=args.skip_invalid,
        unit=args.unit,
        tag=args.tag,
        from_s=args.from_s,
        to_s=args.to_s,
        expected_interval_ns=expected_interval_ns(args),
        time_column=args.time_column,
        latency_column=args.latency_column,
    )
    outcome = run_plan(import_plan(Path(args.file), options), writable_store(args), warn)
    for run in outcome.runs:
        kind = "histogram-only run" if run.histogram_only else "run"
        named = f" as {run.name}" if run.name else ""
        note(f"stored {run.id}{named} ({kind}, {run.meta['summary']['latency_ns']['count']:,} values)")
        unresolved = resolution_warning(run)  # the levels show and describe print
        if unresolved is not None:
            warn(unresolved)
        print(run.id)
    return outcome.exit_code


COMMANDS = {"export": cmd_export, "import": cmd_import}
