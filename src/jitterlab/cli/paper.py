"""``jitterlab paper``: tables, figures, methods and a checklist of runs for a paper."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    note,
    percentile_list,
    store_option,
    time_range_options,
    warn,
)
from jitterlab.core.errors import JitterlabError
from jitterlab.core.warnings import CodedWarning

if TYPE_CHECKING:
    from jitterlab.describe.paper.build import PaperData


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "paper", help="tables (LaTeX, Markdown, CSV), PDF/SVG figures, methods and a checklist of runs"
    )
    p.add_argument(
        "runs", nargs="*", metavar="RUN", help="run ids or folders (default: every run in the store)"
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="the folder to write (new, empty or a paper's)"
    )
    p.add_argument(
        "--baseline",
        help="compare every run with this one (default: like with like, same technique and pairs)",
    )
    p.add_argument(
        "--percentiles",
        type=percentile_list,
        help="the percentiles of the tables, exact, with intervals (default 99,99.9,99.99; the median always)",
    )
    time_range_options(p)
    cluster_option(p, "the descriptions and comparisons (no intervals or per-run figures then)")
    store_option(p)


def cmd_paper(args: argparse.Namespace) -> int:
    from jitterlab.describe.paper import check_output, write_paper
    from jitterlab.describe.paper.build import build
    from jitterlab.store import ResultsStore, load_run

    out = Path(args.output)
    check_output(out)  # before any work
    store = ResultsStore(args.store)
    if args.runs:
        runs = [load_run(ref, store) for ref in args.runs]
    else:
        runs, damaged = store.scan()
        for directory, reason in damaged:
            warn(CodedWarning("run-damaged", f"damaged run {directory.name} left out: {reason}"))
    if not runs:
        raise JitterlabError(f"no runs for a paper (none given and none readable in {store.root})")
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
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack)
        note(f"describing {len(runs)} run(s) for the paper…")
        data = build(runs, args.percentiles, baseline_id, args.from_s, args.to_s, engine)
        data = dataclasses.replace(data, trials=screened_trials(data))
    command = shlex.join(["jitterlab", *sys.argv[1:]]) if sys.argv[1:2] == ["paper"] else "jitterlab paper"
    written, notes = write_paper(data, out, command)
    for line in notes:
        note(f"note: {line}")
    note(f"wrote {len(written)} files to {out} (index: {out / 'paper.md'})")
    return 0


def screened_trials(data: PaperData) -> dict[str, list[dict[str, Any]]]:
    """Each monitor run's trials screened against its stored baseline, as ``monitor trials
    --json`` gives them (the paper's monitor-trials table; describe/ never imports monitor/)."""
    from jitterlab.monitor.trials import results_json, trial_results
    from jitterlab.store import Run

    out = {}
    for r in data.runs:
        block = r.run.meta.get("monitor")
        if isinstance(block, dict) and block.get("trials") and block.get("thresholds_ns"):
            out[r.run.id] = results_json(trial_results(Run(r.run.path, r.run.meta)))
    return out


COMMANDS = {"paper": cmd_paper}
