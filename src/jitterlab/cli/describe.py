"""``jitterlab describe``: summary, outlier categories, windows and spike causes of a run."""

from __future__ import annotations

import argparse
import contextlib
import functools
from typing import Any

from jitterlab.cli.common import (
    cluster_engine,
    cluster_option,
    expected_interval_ns,
    expected_interval_option,
    note,
    percentile_list,
    positive_float,
    positive_seconds,
    print_json,
    probability,
    store_option,
    time_range_options,
)
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
    from jitterlab.describe.description import DescribeRequest, describe
    from jitterlab.describe.text import description_text
    from jitterlab.store import ResultsStore

    with contextlib.ExitStack() as stack:
        d = describe(
            DescribeRequest(
                runs=tuple(args.runs),
                store=ResultsStore(args.store),
                test=args.test,
                window_ns=round(args.window * 1e9),
                baseline=args.baseline,
                two_sided=args.two_sided,
                threshold=args.threshold,
                alpha=args.alpha,
                percentiles=args.percentiles,
                from_s=args.from_s,
                to_s=args.to_s,
                tag=args.tag,
                expected_interval_ns=expected_interval_ns(args),
                union=args.union,
                # the one helper that builds the engine, called once the request is checked
                engine=functools.partial(cluster_engine, args, stack) if args.cluster else None,
            )
        )
    if args.json:
        print_json(d.to_json())
        return 0
    text, notes = description_text(d)
    print(text)
    for line in notes:
        note(line)
    return 0


COMMANDS = {"describe": cmd_describe}
