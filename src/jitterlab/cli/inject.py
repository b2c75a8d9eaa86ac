"""``jitterlab inject``: the delaying proxy, and ``inject validate`` of it against its model."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    deprecated_alias,
    integer,
    non_negative_int,
    note,
    number,
    positive_int,
    print_context,
    print_json,
    seconds,
    seed,
    store_option,
    warn,
    writable_store,
)
from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import check_writable_file
from jitterlab.core.options import duration_text
from jitterlab.core.render import render
from jitterlab.core.units import format_ns, parse_duration_ns


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "inject",
        help="delay a live UDP/TCP stream with a model (proxy), or 'inject validate' the proxy against it",
    )
    p.add_argument(
        "action", nargs="?", choices=("validate",), help="validate: measure the proxy against the model"
    )
    p.add_argument("--model", help="latency model file (jitterlab model build/make)")
    p.add_argument("--zero", action="store_true", help="proxy: no model, a pass-through stage")
    p.add_argument("--listen", help="proxy: [HOST:]PORT to receive on (a bare PORT binds 127.0.0.1)")
    p.add_argument("--forward", help="proxy: HOST:PORT to forward to")
    p.add_argument(
        "--tcp", action="store_true", help="proxy: one TCP stream at a time instead of UDP datagrams"
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the injector's draws (default 0)")
    p.add_argument("--reorder", action="store_true", help="independent delays instead of the in-order queue")
    p.add_argument(
        "--busy-poll", action="store_true", help="never sleep: µs-accurate for µs-scale models, costs a core"
    )
    p.add_argument(
        "--queue-limit", type=non_negative_int, default=65_536, help="proxy: most items held (default 65536)"
    )
    p.add_argument(
        "--stats-interval",
        type=duration_text(),
        default="10s",
        help="proxy: print statistics this often (0: only at exit)",
    )
    p.add_argument(
        "--duration", type=seconds, default=0.0, help="proxy: stop after this long (default: until Ctrl-C)"
    )
    p.add_argument("--queue-bytes", type=positive_int, help="proxy: most bytes held (default 64 MiB)")
    p.add_argument(
        "--spin-us",
        type=non_negative_int,
        help="proxy: spin, not sleep, this long before an item is due (60)",
    )
    p.add_argument("--stats-json", metavar="FILE", help="proxy: write the final statistics as JSON here")
    p.add_argument(
        "--record", metavar="FILE", help="proxy: record each item's arrival and release (raw file)"
    )
    p.add_argument(
        "--samples",
        type=integer(1, 100_000_000),
        default=10_000,
        help="validate: datagrams per setting (default 10000)",
    )
    deprecated_alias(p, "--count", "--samples", type=integer(1, 100_000_000))
    p.add_argument(
        "--rate",
        type=number(1, 10_000_000, unit="Hz"),
        default=1_000,
        help="validate: datagrams per second (default 1000)",
    )
    p.add_argument(
        "--payload", type=integer(0, 65_000), default=64, help="validate: datagram bytes (default 64)"
    )
    deprecated_alias(p, "--size", "--payload", type=integer(0, 65_000))
    p.add_argument("--report", type=Path, help="validate: write an HTML report with the QQ plots here")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    store_option(p)


def cmd_inject(args: argparse.Namespace) -> int:
    # the model and the proxy's wrapper (numpy, scipy) load now, not with the parser or --help
    from jitterlab.simulate import proxy
    from jitterlab.simulate.model import load_model

    if args.model is None and not args.zero:
        raise JitterlabError("inject needs --model FILE (or --zero for a pass-through proxy)")
    if args.model is not None and args.zero:
        raise JitterlabError("inject takes --model FILE or --zero, not both")
    if args.model is not None:
        load_model(Path(args.model))  # a bad model is a one-line error before anything starts
    if args.seed < 0:
        raise JitterlabError("--seed must be ≥ 0")
    proxy_only = [
        f
        for f, v in (
            ("--listen", args.listen),
            ("--forward", args.forward),
            ("--tcp", args.tcp),
            ("--stats-json", args.stats_json),
            ("--record", args.record),
        )
        if v
    ]
    validate_only = [f for f, v in (("--report", args.report), ("--json", args.json)) if v]
    if args.action == "validate":
        if proxy_only:
            raise JitterlabError(f"inject validate does not take {proxy_only[0]} (a proxy option)")
        return _validate(args)
    if validate_only:
        raise JitterlabError(f"the proxy does not take {validate_only[0]} (an 'inject validate' option)")
    if not args.listen or not args.forward:
        raise JitterlabError("inject needs --listen [HOST:]PORT and --forward HOST:PORT")
    extra = ["--queue-limit", str(args.queue_limit)] + (["--busy-poll"] if args.busy_poll else [])
    extra += ["--stats-interval", str(round(parse_duration_ns(args.stats_interval, "s") / 1e9))]
    extra += ["--duration", str(round(args.duration))]
    for flag, value in (
        ("--queue-bytes", args.queue_bytes),
        ("--spin-us", args.spin_us),
        ("--stats-json", args.stats_json),
        ("--record", args.record),
    ):
        if value is not None:
            extra += [flag, str(value)]
    argv = proxy.proxy_argv(
        Path(args.model) if args.model else None,
        args.listen,
        args.forward,
        args.tcp,
        args.seed,
        args.reorder,
        extra,
    )
    # Become the proxy: a SIGINT or SIGTERM sent to this process (by a terminal, a script, a
    # supervisor) reaches the proxy itself, which prints its summary and frees its port.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def _validate(args: argparse.Namespace) -> int:
    from jitterlab.describe.context import command_context
    from jitterlab.describe.validation import SETTINGS_HEADERS, settings_rows, validation_html
    from jitterlab.simulate import proxy
    from jitterlab.simulate.validation import judge

    if args.model is None:
        raise JitterlabError("inject validate needs --model FILE")
    if args.report:
        check_writable_file(Path(args.report), "--report")
    if not float(args.rate).is_integer():
        raise JitterlabError(f"inject validate --rate {args.rate:g}: the probe paces whole Hz (e.g. 1000)")
    store = writable_store(args)
    options = proxy.ValidateOptions(
        Path(args.model), args.samples, int(args.rate), args.payload, args.seed, args.reorder, args.busy_poll
    )
    outcome, results, v = proxy.validate(store, options, warn)
    if v is None:
        return outcome.exit_code or 1
    verdict = judge(v, args.busy_poll)
    runs = {k: r.run for k, r in results.items()}
    if args.json:
        print_json(
            {
                "context": command_context(list(runs.values())),
                "runs": {k: r.id for k, r in runs.items()},
                "injected_runs": {k: r.injected.id for k, r in results.items() if r.injected},
                "ks_injected": v.ks,
                "ks_end_to_end": v.ks_end_to_end,
                "quantile_error_ns": v.quantile_error_ns,
                "proxy": {k: r.proxy_stats for k, r in results.items() if r.proxy_stats},
                "verdict": dataclasses.asdict(verdict),
            }
        )
    else:
        print_context(list(runs.values()))
        print(render(SETTINGS_HEADERS, settings_rows(runs), "llrrrr"))
        errors = ", ".join(f"{k} {format_ns(e)}" for k, e in v.quantile_error_ns.items())
        print(f"KS distance, injected delay (proxy's record) vs the model: {v.ks:.4f}; error {errors}")
        print(f"KS distance end to end, vs the model + the pass-through floor: {v.ks_end_to_end:.4f}")
        print(f"verdict: {'reproduced' if verdict.reproduced else 'NOT reproduced'}: {verdict.reason}")
    if args.report:
        preface = validation_html(runs, {k: r.proxy_stats for k, r in results.items()}, v, Path(args.model))
        from jitterlab.describe.report import write_report  # matplotlib only for a report

        write_report(list(runs.values()), Path(args.report), "jitterlab injection validation", preface)
        note(f"wrote {args.report}")
    return 0


COMMANDS = {"inject": cmd_inject}
