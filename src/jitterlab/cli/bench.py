"""``jitterlab bench``: parse, build the plans (measure room), run them, print the tables."""

from __future__ import annotations

import argparse
import platform
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from jitterlab.cli.common import (
    deprecated_alias,
    integer,
    non_negative_int,
    note,
    print_context,
    print_json,
    seed,
    store_option,
    warn,
    writable_store,
)
from jitterlab.cli.measuring import announce, check_report, report_option, write_runs_report
from jitterlab.core.options import duration_text
from jitterlab.measure.techniques import CAF_SCHEDULERS

if TYPE_CHECKING:  # the plans, the runner and the tables bring numpy and pyarrow: imported to run
    from jitterlab.measure import plans
    from jitterlab.store import Run


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure message-passing latency (n sender/receiver pairs)",
        description="Run the n×(1:1) harness for every technique × pairs × policy and store each run.",
    )
    p.add_argument(
        "--technique",
        default="all",
        help="comma list of native (mutex,spin,spsc,futex,pipe,unix,caf,c2c) and JVM "
        "(java-monitor,java-lock,disruptor,java-vthread,pekko) techniques, or 'all' (default: all of --runtime)",
    )
    p.add_argument(
        "--pairs",
        default="1",
        help="comma list of pair counts, 1..64 (a list gives a scaling series; default 1)",
    )
    p.add_argument("--policy", default="other", help="comma list of other,fifo,rr,deadline (default other)")
    p.add_argument(
        "--priority", type=integer(0, 99), default=None, help="priority for fifo/rr, 1..99 (default 90)"
    )
    p.add_argument(
        "--dl-runtime", type=duration_text(unit="ns"), default=None, help="SCHED_DEADLINE runtime, e.g. 200us"
    )
    p.add_argument(
        "--dl-deadline", type=duration_text(unit="ns"), default=None, help="SCHED_DEADLINE deadline, e.g. 1ms"
    )
    p.add_argument(
        "--dl-period", type=duration_text(unit="ns"), default=None, help="SCHED_DEADLINE period, e.g. 1ms"
    )
    p.add_argument(
        "--samples",
        type=non_negative_int,
        default=1_000_000,
        help="recorded samples per pair (default 1000000)",
    )
    p.add_argument(
        "--warmup-samples",
        dest="warmup",
        type=non_negative_int,
        default=1_000,
        help="unrecorded samples per pair first (default 1000)",
    )
    deprecated_alias(p, "--warmup", "--warmup-samples", dest="warmup", type=non_negative_int)
    p.add_argument(
        "--block-ints",
        type=non_negative_int,
        default=256 * 1024,
        help="ints in the shared block (default 262144; 0 skips the memory step: pure channel latency)",
    )
    p.add_argument(
        "--pin", default="none", help="none, spread, compact or a CPU list such as 0,1 or 0-3 (default none)"
    )
    p.add_argument("--no-mlock", action="store_true", help="do not lock memory (mlockall)")
    p.add_argument(
        "--pause",
        type=duration_text(),
        default="0",
        help="sender pause between samples, e.g. 1ms (the seeds' variant)",
    )
    p.add_argument("--seed", type=seed, default=1, help="seed of the per-thread index generators (default 1)")
    p.add_argument("--caf-scheduler", default="stealing", choices=CAF_SCHEDULERS)
    p.add_argument(
        "--caf-threads", type=non_negative_int, default=0, help="CAF worker threads (default: one per CPU)"
    )
    p.add_argument("--json", action="store_true", help="print the stored runs' summaries as JSON")
    report_option(p)
    p.add_argument(
        "--trace",
        action="store_true",
        help="record scheduler/IRQ events with perf; attribute spikes (pinned runs)",
    )
    p.add_argument("--load", help="run stress-ng alongside: cpu, memory, io or mixed, optionally :WORKERS")
    p.add_argument(
        "--scenario",
        choices=("pairs", "pipeline"),
        default="pairs",
        help="pairs: the n×(1:1) matrix (default); pipeline: producer → accumulator + journaller (seed 002)",
    )
    p.add_argument(
        "--interval",
        type=duration_text(unit="ns"),
        default="10us",
        help="pipeline: producer busy-spin between publications (10us)",
    )
    p.add_argument("--pin-producer", default="-1", help="pipeline: CPU of the producer (-1: not pinned)")
    p.add_argument("--pin-accumulator", default="-1", help="pipeline: CPU of the accumulator")
    p.add_argument("--pin-journaller", default="-1", help="pipeline: CPU of the journaller")
    p.add_argument(
        "--runtime",
        choices=("auto", "native", "jvm", "both"),
        default="auto",
        help="auto: each technique on its own runtime, 'all' meaning the native ones (default); "
        "native (C++); jvm (jvm/ Maven harness); both: --scenario pipeline on each, side by side",
    )
    p.add_argument(
        "--gc",
        default="g1",
        help="jvm: comma list of serial,parallel,g1,zgc,zgc-gen,shenandoah,epsilon (one JVM each; default g1)",
    )
    p.add_argument("--jdk", default="auto", help="jvm: a JDK home, or auto (the newest under /usr/lib/jvm)")
    p.add_argument(
        "--wait-strategy",
        default="blocking",
        help="jvm disruptor: comma list of blocking,yielding,busy-spin (default blocking)",
    )
    p.add_argument(
        "--dispatcher",
        default="default",
        help="jvm pekko: comma list of default (fork-join, throughput 5), throughput-1, pinned, affinity",
    )
    p.add_argument("--heap", default="1g", help="jvm: -Xms/-Xmx (default 1g)")
    store_option(p, named=True)


def request(args: argparse.Namespace) -> plans.BenchRequest:
    from jitterlab.measure import plans

    return plans.BenchRequest(**{f.name: getattr(args, f.name) for f in fields(plans.BenchRequest)})


def print_tables(runs: list[Run], scenario: str) -> None:
    """The text output after the context block: the seed's table of the scenario."""
    from jitterlab.core.render import render
    from jitterlab.describe.tables import collector_table, covers_several_collectors, pipeline_table, table1
    from jitterlab.describe.text import floor_note

    if scenario == "pipeline":
        headers, rows = pipeline_table(runs)
        print(render(headers, rows, "l" + "r" * (len(headers) - 1)))
        return
    print(table1(runs))
    floor = floor_note(runs)
    if floor:
        note(floor)
    if covers_several_collectors(runs):
        print("\ngarbage collector × scheduler (Stauffert et al. 2016, Tables 2–3)")
        print(collector_table(runs))


def warn_unresolved(runs: list[Run], printed: tuple[float, ...]) -> None:
    """``tail-unresolved`` for each run whose sample cannot resolve a level ``printed`` (the
    stored line's p50 and p99, the pipeline table's 50 … 99.9999 %), docs/statistics.md's rule."""
    from jitterlab.describe.analysis import resolution_warning

    for run in runs:
        w = resolution_warning(run, printed)
        if w is not None:
            warn(w)


def cmd_bench(args: argparse.Namespace) -> int:
    from jitterlab.describe.context import command_context
    from jitterlab.describe.tables import HDR_PERCENTILES, summary_row
    from jitterlab.measure import plans
    from jitterlab.measure.runner import run_plan

    plan = plans.bench_plan(request(args))
    check_report(args)
    store = writable_store(args)
    if plan.about:
        note(f"jitterlab bench: {plan.about}, store {store.root}")
    outcome = run_plan(plan, store, warn, on_stored=announce)
    runs = outcome.runs
    warn_unresolved(runs, HDR_PERCENTILES if args.scenario == "pipeline" else (50.0, 99.0))
    if args.json:
        print_json([{"context": command_context([r])} | summary_row(r) for r in runs])
    elif runs:
        print_context(runs)
        print_tables(runs, args.scenario)
    write_runs_report(runs, args.report, f"jitterlab {plan.name} on {platform.node()}")
    if outcome.interrupted:
        note("interrupted: the samples recorded so far are stored and marked partial")
    return outcome.exit_code


COMMANDS = {"bench": cmd_bench}
