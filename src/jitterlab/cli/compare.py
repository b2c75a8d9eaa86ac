"""``jitterlab compare A B``: run B judged against run A, a verdict per percentile."""

from __future__ import annotations

import argparse
import contextlib
import functools
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    non_negative_float,
    percentile_list,
    print_json,
    store_option,
    warn,
)


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("compare", help="compare run B against run A: verdict per percentile")
    p.add_argument("a", metavar="RUN_A", help="baseline run (id, name, unique part of an id, or folder)")
    p.add_argument("b", metavar="RUN_B", help="run to judge (id, name, unique part of an id, or folder)")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    p.add_argument(
        "--noise", type=non_negative_float, default=0.05, help="noise threshold as a fraction (default 0.05)"
    )
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when the verdict is 'regressed'")
    p.add_argument("--percentiles", type=percentile_list, help="also these exact percentiles of A and B, B/A")
    cluster_option(p, "the comparison's passes over both runs")
    store_option(p)


def cmd_compare(args: argparse.Namespace) -> int:
    from jitterlab.describe.compare import CompareRequest, compare, comparison_text
    from jitterlab.store import ResultsStore

    with contextlib.ExitStack() as stack:
        d = compare(
            CompareRequest(
                args.a,
                args.b,
                ResultsStore(args.store),
                args.noise,
                args.percentiles,
                # the one helper that builds the engine, called once both runs are found
                functools.partial(cluster_engine, args, stack) if args.cluster else None,
            )
        )
    for w in d.comparison.warnings:
        warn(w)
    if args.json:
        print_json(d.to_json())
    else:
        print(comparison_text(d))
    return 1 if args.fail_on_regression and d.verdict == "regressed" else 0


COMMANDS = {"compare": cmd_compare}
