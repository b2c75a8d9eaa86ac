"""``jitterlab net``: inter-node latency and throughput (seed 004) on namespaces or hosts.
The parser and ``net topo`` need only net.topo and net.options; numpy, scipy (net.impair),
the store and describe.network are imported inside the commands that measure."""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    Parser,
    deprecated_alias,
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
from jitterlab.core.render import render
from jitterlab.net import topo
from jitterlab.net.options import PRESETS, SCENARIOS, SEED_004_IMPAIRMENT, NetOptions, check_options


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def add_parser(sub: Any) -> None:
    p = sub.add_parser("net", help="latency and throughput across nodes: namespaces or hosts (seed 004)")
    net = p.add_subparsers(dest="net_command", required=True, parser_class=Parser)
    t = net.add_parser("topo", help="network namespaces joined by veth pairs, optionally through a router")
    tsub = t.add_subparsers(dest="topo_command", required=True, parser_class=Parser)
    up = tsub.add_parser("up", help="make K node namespaces (prints the topology's name)")
    up.add_argument("--nodes", type=integer(2, 64), default=2, help="network namespaces (default 2)")
    up.add_argument("--router", action="store_true", help="join the nodes through a router namespace")
    up.add_argument("--shape", type=link_shape, help="rate-limit every link with tbf, e.g. rate=10mbit")
    up.add_argument(
        "--subnet", default=topo.DEFAULT_RANGE, help=f"private range to use (default {topo.DEFAULT_RANGE})"
    )
    down = tsub.add_parser(
        "down", help="remove a topology, or every one with --all (leftovers of killed runs too)"
    )
    down.add_argument("name", nargs="?")
    down.add_argument("--all", action="store_true")
    down.add_argument(
        "--force",
        action="store_true",
        help="with --all: also topologies whose maker still runs or is unknown",
    )
    tsub.add_parser("list", help="topologies and leftover namespaces")

    c = net.add_parser("check-impair", help="ping without and with an impairment: is the model on the link?")
    c.add_argument("--impair", default="delay=5ms", help="the impairment to check (default delay=5ms)")
    c.add_argument("--transport", type=_words, help="udp or tcp (default udp)")
    c.add_argument("--duration", type=seconds, help="measured time per ping run (default 10s)")
    c.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    report_option(c)
    store_option(c)

    b = net.add_parser("bench", help="one run per scenario x transport; the seed's Tables 3-6")
    b.add_argument("--preset", choices=sorted(PRESETS), help="seed-004: every scenario, the seed's tables")
    b.add_argument("--scenario", type=_words, help=f"comma list of {', '.join(SCENARIOS)} (default ping)")
    b.add_argument(
        "--transport", type=_words, help="comma list of udp, tcp, caf-io, pekko-artery (default udp)"
    )
    b.add_argument(
        "--nodes", type=positive_int, help="nodes; frame-sync: the renderer plus render nodes (default 2)"
    )
    b.add_argument("--router", action="store_true", help="join the nodes through a router namespace")
    b.add_argument("--shape", type=link_shape, help="rate-limit every link with tbf, e.g. rate=10mbit")
    b.add_argument(
        "--impair", help="delay=5ms | model=m.json | loss=0.1%% on the router's link (needs --router)"
    )
    b.add_argument("--topo", help="run on an existing topology (from `net topo up`)")
    b.add_argument(
        "--hosts", type=Path, help="run on real hosts listed in a TOML file, agents started over ssh"
    )
    b.add_argument("--duration", type=seconds, help="measured time per run (default 10s)")
    b.add_argument("--warmup", type=seconds, help="unmeasured time first (default 1s)")
    b.add_argument("--payload", type=positive_int, help="message bytes, header included (default 64)")
    b.add_argument("--rate", type=rate_hz, help="open-loop messages per second (default 1000)")
    b.add_argument(
        "--samples", type=integer(1, 1_000_000_000), help="stream: messages per step (default 100000)"
    )
    deprecated_alias(b, "--messages", "--samples", type=integer(1, 1_000_000_000))
    b.add_argument("--steps", type=positive_int, help="stream: steps (default 5)")
    b.add_argument("--fps", type=positive_float, help="frame-sync: frames per second (default 60)")
    b.add_argument("--port", type=non_negative_int, help="server port (default: any free one)")
    b.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    report_option(b)
    store_option(b, named=True)


def options(args: argparse.Namespace) -> NetOptions:
    base = PRESETS[args.preset] if args.preset else NetOptions()
    given = {
        "scenarios": args.scenario,
        "transports": args.transport,
        "nodes": args.nodes,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "payload": args.payload,
        "rate_hz": args.rate,
        "messages": args.samples,
        "steps": args.steps,
        "fps": args.fps,
        "port": args.port,
    }
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def cmd_topo(args: argparse.Namespace) -> int:
    if args.topo_command == "up":
        started = time.monotonic()
        made = topo.up(args.nodes, router=args.router, shape=args.shape, subnet=args.subnet)
        note(
            f"up in {time.monotonic() - started:.2f} s: {len(made.nodes)} nodes{' and a router' if made.router else ''}"
        )
        print(made.name)
        return 0
    if args.topo_command == "down":
        if not args.name and not args.all:
            raise JitterlabError("net topo down: name a topology or give --all")
        started = time.monotonic()
        if args.all:
            removed, kept = topo.down_all(args.force)
            for name in kept:
                note(
                    f"kept {name}: the process that made it still runs, or it has no readable state file "
                    "(it may be in use; --force removes it too)"
                )
        else:
            removed = topo.down(args.name)
        note(f"removed {len(removed)} namespaces in {time.monotonic() - started:.2f} s")
        return 0
    rows = [
        [
            r["name"],
            r["nodes"],
            "yes" if r["router"] else "no",
            "alive" if r["owner_alive"] else "gone",
            r["state"],
        ]
        for r in topo.listing()
    ]
    print(render(["name", "nodes", "router", "made by", "state"], rows) if rows else "no topologies")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from jitterlab.describe.network import network_json, network_text
    from jitterlab.measure.runner import run_plan
    from jitterlab.net.bench import bench_plan, plan, seed_004_plan
    from jitterlab.net.impair import parse as parse_impairment
    from jitterlab.net.nodes import Nodes, from_hosts, namespace_nodes

    o = options(args)
    check_options(o)
    check_report(args)
    if args.hosts and (args.topo or args.router or args.impair or args.shape):
        raise JitterlabError(
            "--hosts runs on real hosts: --topo, --router, --shape and --impair are for namespaces"
        )
    impairment = parse_impairment(args.impair) if args.impair else None
    if impairment and not (args.router or args.preset or args.topo):
        raise JitterlabError("--impair needs a router between the nodes: add --router")
    if not args.hosts and not args.topo:
        topo.require_tools()
    store = writable_store(args)
    if args.preset:
        cases = seed_004_plan(o, impairment or parse_impairment(SEED_004_IMPAIRMENT))
        nodes_needed, router = 10, True
    else:
        cases = plan(o, impairment)
        nodes_needed, router = max(c.count for c in cases), bool(args.router)
    hosts = args.hosts
    nodes: Callable[[], AbstractContextManager[Nodes]] = (
        (lambda: nullcontext(from_hosts(hosts)))
        if hosts
        else (lambda: namespace_nodes(args.topo, nodes_needed, router, args.shape))
    )
    net_plan = bench_plan(o, cases, nodes)
    if sys.stderr.isatty():  # on a terminal only: in a log, bad input stays one line
        note(f"net: {net_plan.about}")
    outcome = run_plan(net_plan, store, warn, on_stored=announce)
    if outcome.runs and args.json:
        print_json(network_json(outcome.runs))
    elif outcome.runs:
        print_context(outcome.runs)
        print(network_text(outcome.runs))
    write_runs_report(outcome.runs, args.report, f"jitterlab net bench on {platform.node()}")
    return outcome.exit_code


def cmd_check_impair(args: argparse.Namespace) -> int:
    from jitterlab.describe.context import command_context
    from jitterlab.describe.network import network_text
    from jitterlab.net.bench import check_impairment
    from jitterlab.net.impair import parse as parse_impairment
    from jitterlab.net.nodes import namespace_nodes

    o = dataclasses.replace(
        NetOptions(),
        **{k: v for k, v in {"transports": args.transport, "duration_s": args.duration}.items() if v},
    )
    check_options(o)
    check_report(args)
    impairment = parse_impairment(args.impair)
    topo.require_tools()
    store = writable_store(args)
    with namespace_nodes(None, 2, True, None) as nodes:
        runs, verdict = check_impairment(store, o, nodes, impairment, warn)
    write_runs_report(runs, args.report, f"jitterlab net check-impair {args.impair} on {platform.node()}")
    if args.json:
        print_json({"context": command_context(runs)} | verdict)
        return 0 if verdict["passed"] else 1
    print_context(runs)
    print(network_text(runs))
    print(
        f"round trip added: {verdict['round_trip_added_ns'] / 1e6:.3f} ms, expected {verdict['round_trip_expected_ns'] / 1e6:.3f} ms "
        f"± 0.5 ms: {'ok' if verdict['round_trip_ok'] else 'OFF'}"
    )
    print(f"verdict: {'passed' if verdict['passed'] else 'FAILED'}")
    return 0 if verdict["passed"] else 1


def cmd_net(args: argparse.Namespace) -> int:
    if args.net_command == "check-impair":
        return cmd_check_impair(args)
    return cmd_topo(args) if args.net_command == "topo" else cmd_bench(args)


COMMANDS = {"net": cmd_net}
