"""``jitterlab repl bench``: N clients through one server (seed 003 §7.3)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    Parser,
    integer,
    link_shape,
    non_negative_int,
    note,
    positive_float,
    positive_int,
    print_context,
    print_json,
    rate_hz,
    seconds,
    store_option,
    warn,
    writable_store,
)
from jitterlab.cli.measuring import announce, check_report, report_option, write_runs_report
from jitterlab.core.errors import JitterlabError
from jitterlab.repl.options import PRESETS, ReplOptions


def client_counts(text: str) -> tuple[int, ...]:
    """``2,5,10,25``: the numbers of clients, one run each."""
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers of clients like 2,5,10,25, got '{text}'"
        ) from None
    if not counts:
        raise argparse.ArgumentTypeError("expected at least one number of clients")
    return counts


def add_parser(sub: Any) -> None:
    p = sub.add_parser("repl", help="multi-user replication scaling: N clients through one server (seed 003)")
    repl = p.add_subparsers(dest="repl_command", required=True, parser_class=Parser)
    q = repl.add_parser("bench", help="one run per N; the seed's Tables 3-4 with the knee and its cause")
    q.add_argument(
        "--preset", choices=sorted(PRESETS), help="seed-003: N = 2..125 at 90 Hz, tick 120 Hz, 30 s"
    )
    q.add_argument(
        "--clients", type=client_counts, help="numbers of clients, one run each (default 2,5,10,25)"
    )
    q.add_argument("--rate", type=rate_hz, help="pose updates per second per client (default 90)")
    q.add_argument("--server-tick", type=positive_float, help="server ticks per second (default 120)")
    q.add_argument("--payload", type=positive_int, help="pose bytes, header included (default 144)")
    q.add_argument("--observers", type=positive_int, help="clients that record every update (default 2)")
    q.add_argument("--duration", type=seconds, help="measured time per N (default 30s)")
    q.add_argument("--warmup", type=seconds, help="unmeasured time first (default 1s)")
    q.add_argument("--port", type=non_negative_int, help="server port (default: any free one)")
    q.add_argument(
        "--nodes",
        type=integer(2, 64),
        help="network namespaces: the server on the first, the clients split over the others "
        "(default: one host's loopback)",
    )
    q.add_argument("--router", action="store_true", help="join the nodes through a router namespace")
    q.add_argument(
        "--shape",
        type=link_shape,
        help="rate-limit every link with tbf, e.g. rate=10mbit (namespaces; --hosts only if they are namespaces here)",
    )
    q.add_argument(
        "--impair",
        help="delay=5ms | model=m.json | loss=0.1%% on the router's links (needs --router; with --hosts, "
        "the router of the topology those hosts are namespaces of)",
    )
    q.add_argument(
        "--topo",
        help="run on an existing topology (from `net topo up`); with --hosts and --impair/--shape: "
        "the topology those hosts are namespaces of",
    )
    q.add_argument(
        "--hosts",
        type=Path,
        help="run on real hosts listed in a TOML file (as net bench): the server on the first, "
        "the clients split over the others, started over ssh",
    )
    report_option(q)
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    store_option(q, named=True)


def options(args: argparse.Namespace) -> ReplOptions:
    base = PRESETS[args.preset] if args.preset else ReplOptions()
    given = {
        "clients": args.clients,
        "rate_hz": args.rate,
        "server_tick_hz": args.server_tick,
        "payload": args.payload,
        "observers": args.observers,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "port": args.port,
        "client_nodes": args.nodes - 1 if args.nodes else None,
        "topo": args.topo,
        "router": args.router or None,
        "shape": args.shape,
        "impair": args.impair,
        "hosts": args.hosts,
    }
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def cmd_repl(args: argparse.Namespace) -> int:
    # the bench and the tables (numpy, scipy, matplotlib) load now, not with the parser or --help
    from jitterlab.describe.context import command_context
    from jitterlab.describe.replication import replication_json, replication_text
    from jitterlab.measure.runner import run_plan
    from jitterlab.repl.bench import scaling_plan

    o = options(args)
    check_report(args)
    if o.port and len(o.clients) > 1:
        raise JitterlabError("--port with several N: each run binds it again; give one N or leave --port out")
    plan = scaling_plan(o)
    store = writable_store(args)
    if sys.stderr.isatty():  # on a terminal only: in a log, bad input stays one line (as net bench)
        note(f"repl: {plan.about}")
    outcome = run_plan(plan, store, warn, on_stored=announce)
    runs = outcome.runs
    if not runs:
        return outcome.exit_code
    if args.json:
        print_json({"context": command_context(runs)} | replication_json(runs))
    else:
        print_context(runs)
        print(replication_text(runs))
    write_runs_report(runs, args.report, "jitterlab replication scaling")
    return outcome.exit_code


COMMANDS = {"repl": cmd_repl}
