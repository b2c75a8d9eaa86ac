"""``jitterlab compare A B``: run B judged against run A, a verdict per percentile."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    load,
    non_negative_float,
    percentile_list,
    print_json,
    store_option,
    warn,
)
from jitterlab.core.render import render


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
    from jitterlab.describe import compare as cmp
    from jitterlab.describe.context import context_header

    HEADERS, comparison_rows, tests_line = cmp.HEADERS, cmp.comparison_rows, cmp.tests_line
    a, b = load(args.a, args), load(args.b, args)
    with contextlib.ExitStack() as stack:
        engine = cluster_engine(args, stack)
        rc = cmp.compare_runs(a, b, args.noise, engine)
        chosen = cmp.chosen_percentiles(rc, args.percentiles, engine) if args.percentiles else None
    for w in rc.warnings:
        warn(w)
    c = rc.result
    if args.json:
        print_json(cmp.comparison_json(rc) | (chosen.to_dict() if chosen else {}))
    else:
        print(context_header([rc.a, rc.b]))
        print(f"A  {rc.a.id}  ({rc.a.label})\nB  {rc.b.id}  ({rc.b.label})")
        headers = [*HEADERS[:4], f"{c.confidence:.0%} CI", HEADERS[5]]
        print(render(headers, comparison_rows(c), "lrrrrl"))
        print(tests_line(c))
        if chosen:
            print(render(["percentile", "A", "B", "B/A"], cmp.chosen_rows(chosen), "lrrr"))
        print(f"verdict: {c.verdict} (noise threshold ±{c.noise_threshold:.0%})")
    return 1 if args.fail_on_regression and c.verdict == "regressed" else 0


COMMANDS = {"compare": cmd_compare}
