"""``jitterlab merge``: one run from runs and HdrHistogram logs of several hosts or times."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from jitterlab.cli.common import cluster_engine, cluster_option, note, store_option, writable_store


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "merge", help="one run from runs and HdrHistogram logs of several hosts or times (source kept)"
    )
    p.add_argument(
        "sources", nargs="+", metavar="RUN|FILE.hlog", help="stored runs (id or folder) and .hlog files"
    )
    p.add_argument(
        "--as",
        "--name",
        dest="name",
        required=True,
        metavar="NAME",
        help="the merged run's name (unique in the store: it resolves wherever RUN is asked for)",
    )
    cluster_option(p, "the passes over the runs' samples (summary, interval histograms)")
    store_option(p)


def cmd_merge(args: argparse.Namespace) -> int:
    from jitterlab.store.merge import merge
    from jitterlab.store.reader import LOCAL

    store = writable_store(args)  # the name checked (one word, not taken) before any work
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack)
        run = merge(store, args.sources, args.name, note, engine or LOCAL)
    kind = "histogram-only run" if run.histogram_only else "run"
    sources = len(run.meta["merge"]["sources"])
    note(
        f"stored {run.id} as {run.name} ({kind}, {run.meta['summary']['latency_ns']['count']:,} values from {sources} sources)"
    )
    print(run.id)
    return 0


COMMANDS = {"merge": cmd_merge}
