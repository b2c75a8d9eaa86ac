"""The commands over stored runs: ``runs``, ``show``, ``report``, ``recover`` (``compare`` is in
cli/compare.py, ``import`` and ``export`` in cli/interop.py)."""

from __future__ import annotations

import argparse
import contextlib
import functools
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    load,
    note,
    percentile_list,
    print_json,
    store_option,
    warn,
    writable_store,
)
from jitterlab.core.errors import CorruptRunError, JitterlabError
from jitterlab.core.fileio import check_writable_file
from jitterlab.core.percentiles import percentile_key
from jitterlab.core.tidy import counted
from jitterlab.core.warnings import CodedWarning, from_stored, normalized
from jitterlab.describe.run_filter import add_filter_options, select_runs  # light: run.json only


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("runs", help="list stored runs")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    p.add_argument("--strict", action="store_true", help="exit 1 when a run is damaged")
    every = "these percentiles of every run instead of p50/p99/max, exact (reads every run's samples)"
    p.add_argument("--percentiles", type=percentile_list, help=every)
    add_filter_options(p)
    store_option(p)
    p = sub.add_parser("show", help="summary of one run")
    p.add_argument("run", metavar="RUN", help="run id, name, unique part of an id, or run folder")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    also = "also these percentiles, exact (e.g. 50,90,99,99.9,99.99,99.999,max)"
    p.add_argument("--percentiles", type=percentile_list, help=also)
    cluster_option(p, "the summary (with --recompute) and --percentiles")
    again = "read every sample, not the summary stored at commit"
    p.add_argument("--recompute", action="store_true", help=again)
    store_option(p)
    p = sub.add_parser("report", help="write one self-contained HTML report of runs")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids, names or folders (default: every run)")
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default report.html)")
    p.add_argument("--title", default="jitterlab report")
    p.add_argument(
        "--baseline",
        help="judge every run against this one (default: like with like, same technique and pairs)",
    )
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when a run is damaged (it is left out either way)"
    )
    p.add_argument(
        "--percentiles", type=percentile_list, help="also a table of these exact percentiles per run"
    )
    union_help = "first the runs described as one (exact, as merge would give, nothing stored), split by run"
    p.add_argument("--union", action="store_true", help=union_help)
    cluster_option(p, "every number of the runs' sections and comparisons (not with --union)")
    store_option(p)
    p = sub.add_parser(
        "recover", help="store what killed measurements left in the store's .staging/ as partial runs"
    )
    store_option(p)


def report_damage(damaged: list[tuple[Path, str]]) -> None:
    for directory, reason in damaged:
        warn(CodedWarning("run-damaged", f"damaged run {directory.name} left out: {reason}"))


def cmd_runs(args: argparse.Namespace) -> int:
    from jitterlab.describe.tables import resolved_values, runs_table, summary_row
    from jitterlab.store.runs import ResultsStore, verified_runs

    store = ResultsStore(args.store)
    runs, damaged = store.scan()
    runs = verified_runs(runs, damaged) if args.strict else runs  # the SHA-256, not only the size
    runs, damaged = select_runs(runs, damaged, args)
    chosen: dict[str, dict[str, float]] | None = None
    if args.percentiles:
        from jitterlab.describe.analysis import run_percentiles

        chosen = {}
        for r in [r for r in runs if not r.histogram_only]:
            try:
                chosen[r.id] = run_percentiles(r, args.percentiles)  # exact, in row groups
            except CorruptRunError as e:
                damaged.append((r.path, str(e)))
        runs = [r for r in runs if r.histogram_only or r.id in chosen]
        if any(r.histogram_only for r in runs):
            note("note: histogram-only runs show — ('export RUN --format hgrm --percentiles …' has them)")
    if args.json:
        rows = [
            summary_row(r)
            | ({"percentiles_ns": resolved_values(chosen.get(r.id), r)} if chosen is not None else {})
            for r in runs
        ]
        rows += [{"id": d.name, "status": "damaged", "reason": why} for d, why in damaged]
        print_json(rows)
    elif runs or damaged:
        keys = [percentile_key(p) for p in args.percentiles or ()]
        print(runs_table(runs, damaged, chosen, keys))
    else:
        note(f"no runs in {store.root}")
    report_damage(damaged)
    leftovers = store.leftovers()
    if leftovers:
        warn(
            CodedWarning(
                "unfinished-measurements",
                f"{counted(len(leftovers), 'unfinished measurement')} in {store.root / '.staging'}: 'jitterlab recover' stores them",
            )
        )
    return 1 if args.strict and damaged else 0


def cmd_recover(args: argparse.Namespace) -> int:
    from jitterlab.measure.jobs import recover

    store = writable_store(args)
    runs = recover(store, warn)
    for run in runs:
        note(f"recovered {run.id}: {run.meta['samples']['rows']:,} samples ({run.meta['partial_reason']})")
    if not runs:
        note(f"nothing to recover in {store.root}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from jitterlab.describe.description import ShowRequest, show
    from jitterlab.describe.text import shown_text

    run = load(args.run, args)
    if run.histogram_only:
        note("note: histogram-only run (imported); percentiles use HdrHistogram's definition")
    with contextlib.ExitStack() as stack:
        shown = show(
            ShowRequest(
                run=run,
                percentiles=args.percentiles,
                recompute=args.recompute,
                # the one helper that builds the engine, called for a sample run only
                engine=functools.partial(cluster_engine, args, stack) if args.cluster else None,
            )
        )
    if args.json:
        print_json(shown.to_json())
        return 0
    print(shown_text(shown))
    for w in normalized((run.meta.get("obtained") or {}).get("warnings")):
        warn(from_stored(w))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from jitterlab.describe.report import write_report
    from jitterlab.store.runs import ResultsStore, load_run, verified_runs

    check_writable_file(Path(args.output), "-o")
    store = ResultsStore(args.store)
    damaged: list[tuple[Path, str]] = []
    if args.runs:
        runs = [load_run(ref, store) for ref in args.runs]
    else:
        runs, damaged = store.scan()
        runs = verified_runs(runs, damaged)  # a damaged run is left out, named: the rest reported
        # an empty run (a monitor stopped before any sample) never blocks the store's report
        empty = [r for r in runs if (r.meta.get("samples") or {}).get("rows", 1) == 0]
        for run in empty:
            warn(CodedWarning("nothing-recorded", f"run {run.id} holds no samples: left out of the report"))
        runs = [r for r in runs if r not in empty]
    report_damage(damaged)
    if not runs:
        raise JitterlabError(f"no runs to report (none given and none readable in {store.root})")
    baseline_id = None
    if args.baseline:
        baseline = load_run(args.baseline, store)
        if baseline.histogram_only:
            raise JitterlabError(
                f"--baseline {baseline.id} holds a histogram only: verdicts need raw samples"
            )
        baseline_id = baseline.id
        if all(r.id != baseline_id for r in runs):
            runs = [baseline, *runs]
    if args.union:
        if args.cluster:
            raise JitterlabError("--union describes the runs as one here: drop --union or --cluster")
        from jitterlab.describe.sources import open_union

        open_union(runs)  # refused in one line before any work (units, clocks, histograms)
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack)  # reached (one line if not) before the note
        note(f"writing the report of {counted(len(runs), 'run')}…")
        out, ps = Path(args.output), args.percentiles
        size = write_report(runs, out, args.title, "", baseline_id, ps, args.union, engine)
    note(f"wrote {args.output} ({size / 1e6:.1f} MB)")
    return 1 if args.strict and damaged else 0


COMMANDS = {
    "runs": cmd_runs,
    "show": cmd_show,
    "report": cmd_report,
    "recover": cmd_recover,
}
