"""``jitterlab model``: build a latency model from a run or from parameters, show, sample."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    Parser,
    cluster_engine,
    cluster_option,
    integer,
    load,
    note,
    number,
    positive_int,
    print_json,
    rate_hz,
    seed,
    store_option,
    warn,
)
from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_json, check_writable_file
from jitterlab.core.options import duration_text
from jitterlab.core.render import render
from jitterlab.core.units import parse_duration_ns
from jitterlab.core.warnings import CodedWarning

MAX_SAMPLE = 100_000_000  # delays held in memory at once


def add_parser(sub: Any) -> None:
    p = sub.add_parser("model", help="latency models: build from a run, design from parameters, show, sample")
    models = p.add_subparsers(dest="model_command", required=True, parser_class=Parser)
    q = models.add_parser("build", help="a model from a measured run (stacked z-test categories)")
    q.add_argument("run")
    q.add_argument("-o", "--output", required=True)
    q.add_argument(
        "--points",
        type=integer(2, 1_000_000),
        default=256,
        help="points of each sampled quantile function (default 256)",
    )
    q.add_argument(
        "--kde", action="store_true", help="smooth each distribution with a log-space Gaussian KDE"
    )
    q.add_argument(
        "--min-category",
        type=integer(1, 1_000_000),
        default=2,
        help="leave out categories with fewer spikes (default 2)",
    )
    q.add_argument(
        "--scale",
        type=number(0, 1e6, low_open=True),
        default=1.0,
        help="multiply spike durations (a more pathogenic system)",
    )
    cluster_option(q, "the categories and quantile functions (not with --kde)")
    store_option(q)
    q = models.add_parser("make", help="a model from parameters, for designing conditions without a run")
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--constant", type=duration_text(unit="ms"), help="constant delay, e.g. 20ms")
    q.add_argument("--normal", help="MEAN,SD, e.g. 20ms,2ms (clipped at 0)")
    q.add_argument("--uniform", help="LOW,HIGH, e.g. 10ms,30ms")
    q.add_argument("--sine", help="MEAN,AMPLITUDE,PERIOD, e.g. 50ms,20ms,1s (St. Pierre et al.)")
    q.add_argument(
        "--spikes", action="append", help="DURATION@RATE_HZ Poisson spikes, e.g. 40ms@0.5 (repeatable)"
    )
    q.add_argument(
        "--points", type=integer(2, 1_000_000), default=256, help="points of the quantile function"
    )
    q = models.add_parser("show", help="categories, rates and quantiles of a model")
    q.add_argument("model")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    q = models.add_parser("sample", help="seeded per-item delays (ns, one a line) the injector would add")
    q.add_argument("model")
    q.add_argument(
        "-n", type=positive_int, default=1000, help=f"items (default 1000, at most {MAX_SAMPLE:,})"
    )
    q.add_argument("--rate", type=rate_hz, default=1000.0, help="item arrival rate in Hz (default 1000)")
    q.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0)")
    q.add_argument("--reorder", action="store_true", help="independent delays instead of the in-order queue")


def cmd_model(args: argparse.Namespace) -> int:
    import numpy as np  # the models (numpy, scipy) load now, not with the parser or --help

    from jitterlab.simulate import model as m

    if args.model_command in ("build", "make"):
        return _write_model(args)
    loaded = m.load_model(Path(args.model))
    if args.model_command == "show":
        if args.json:
            print_json(m.model_to_json(loaded))
            return 0
        print(m.base_line(loaded))
        print(render(m.MODEL_HEADERS, m.category_rows(loaded), "rrrrrr"))
        source = loaded.source
        if "run" in source:
            note(
                f"built from run {source['run']} ({source.get('label')}), scale {source.get('scale')}, "
                f"kde {source.get('kde')}"
            )
        return 0
    if args.n > MAX_SAMPLE:
        raise JitterlabError(
            f"-n {args.n:,} is more than {MAX_SAMPLE:,} items; sample in parts (--seed differs)"
        )
    if not args.rate > 0 or not np.isfinite(args.rate):
        raise JitterlabError("sample needs --rate > 0")
    arrivals = np.arange(args.n) * (1e9 / args.rate)
    delays = m.simulate_delays(loaded, arrivals, args.seed, args.reorder)
    shift = m.replay_shift(loaded, args.rate, delays)
    if shift is not None:
        warn(CodedWarning("replay-rate", shift.message()))
    for delay in delays:
        print(round(delay))
    return 0


def _write_model(args: argparse.Namespace) -> int:
    from jitterlab.simulate import model as m

    check_writable_file(Path(args.output), "-o")
    if args.points < 2:
        raise JitterlabError("--points must be at least 2")
    if args.model_command == "build":
        if args.scale <= 0:
            raise JitterlabError("--scale must be positive")
        run = load(args.run, args)
        if args.cluster and args.kde:
            raise JitterlabError(m.CLUSTER_NEEDS_STREAMED)  # before a cluster is started
        with contextlib.ExitStack() as stack:
            engine = cluster_engine(args, stack)
            built = m.build_model(run, args.points, args.kde, args.min_category, args.scale, engine)
        for problem in m.thin_parts(built):
            warn(CodedWarning("model-thin", problem))
    else:
        built = m.parametric_model(
            constant_ns=parse_duration_ns(args.constant, "ms") if args.constant else None,
            normal=m.parse_durations(args.normal, 2, "--normal") if args.normal else None,  # type: ignore[arg-type]
            uniform=m.parse_durations(args.uniform, 2, "--uniform") if args.uniform else None,  # type: ignore[arg-type]
            sine=m.parse_durations(args.sine, 3, "--sine") if args.sine else None,  # type: ignore[arg-type]
            spikes=[m.parse_spike(x) for x in args.spikes or []],
            points=args.points,
        )
    out = Path(args.output)
    try:
        atomic_write_json(out, m.model_to_json(built))
    except OSError as e:
        raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
    note(f"wrote {out}: {len(built.categories)} spike categories")
    return 0


COMMANDS = {"model": cmd_model}
