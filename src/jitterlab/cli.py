"""The ``jitterlab`` command line: progress and warnings on stderr, data on stdout."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from jitterlab import bench as bench_mod
from jitterlab import jvm
from jitterlab._version import __version__
from jitterlab.errors import JitterlabError
from jitterlab.load import parse_load, running_load
from jitterlab.store import ResultsStore, Run, load_run
from jitterlab.tables import (
    collector_table,
    covers_several_collectors,
    histogram_interval_rows,
    render,
    table1,
)
from jitterlab.tracing import tracing
from jitterlab.units import format_count, format_ns, parse_duration_ns

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error our CLI promises (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def _int_list(text: str, low: int, high: int, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise JitterlabError(f"{what}: '{text}' is not a comma-separated list of integers") from None
    if not values or any(not low <= v <= high for v in values):
        raise JitterlabError(f"{what}: values must be between {low} and {high}, got '{text}'")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must not be negative")
    return value


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="results store folder (default ./jitterlab-results or $JITTERLAB_STORE)",
    )


def _add_bench(sub: Any) -> None:
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
        "--pairs", default="1", help="comma list of pair counts, 1..64 (a list gives a scaling series)"
    )
    p.add_argument("--policy", default="other", help="comma list of other,fifo,rr,deadline (default other)")
    p.add_argument("--priority", type=int, default=None, help="priority for fifo/rr, 1..99 (default 90)")
    p.add_argument("--dl-runtime", default=None, help="SCHED_DEADLINE runtime, e.g. 200us")
    p.add_argument("--dl-deadline", default=None, help="SCHED_DEADLINE deadline, e.g. 1ms")
    p.add_argument("--dl-period", default=None, help="SCHED_DEADLINE period, e.g. 1ms")
    p.add_argument(
        "--samples", type=_positive_int, default=1_000_000, help="recorded samples per pair (default 1000000)"
    )
    p.add_argument(
        "--warmup", type=_positive_int, default=1_000, help="unrecorded samples per pair first (default 1000)"
    )
    p.add_argument(
        "--block-ints",
        type=_positive_int,
        default=256 * 1024,
        help="ints in the shared block (default 262144; 0 skips the memory step: pure channel latency)",
    )
    p.add_argument("--pin", default="none", help="none, spread, compact or a CPU list such as 0,1 or 0-3")
    p.add_argument("--no-mlock", action="store_true", help="do not lock memory (mlockall)")
    p.add_argument("--pause", default="0", help="sender pause between samples, e.g. 1ms (the seeds' variant)")
    p.add_argument("--seed", type=_positive_int, default=1, help="seed of the per-thread index generators")
    p.add_argument("--caf-scheduler", default="stealing", choices=bench_mod.CAF_SCHEDULERS)
    p.add_argument(
        "--caf-threads", type=_positive_int, default=0, help="CAF worker threads (default: one per CPU)"
    )
    p.add_argument("--json", action="store_true", help="print the stored runs' summaries as JSON")
    p.add_argument("--report", metavar="FILE", help="end by writing the HTML report of the runs just made")
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
        "--interval", default="10us", help="pipeline: producer busy-spin between publications (10us)"
    )
    p.add_argument("--pin-producer", default="-1", help="pipeline: CPU of the producer (-1: not pinned)")
    p.add_argument("--pin-accumulator", default="-1", help="pipeline: CPU of the accumulator")
    p.add_argument("--pin-journaller", default="-1", help="pipeline: CPU of the journaller")
    p.add_argument(
        "--runtime",
        choices=("auto", "native", "jvm"),
        default="auto",
        help="auto: each technique on its own runtime, 'all' meaning the native ones (default); "
        "native (C++); jvm (jvm/ Maven harness)",
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
    _store_option(p)


def _split_techniques(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(native, jvm) techniques of --technique under --runtime."""
    requested = [t.strip() for t in args.technique.split(",") if t.strip()]
    if not requested:
        raise JitterlabError("no technique to run")
    if args.runtime == "jvm":
        if requested == ["all"]:
            return [], list(jvm.TECHNIQUES)
        wrong = [t for t in requested if t not in jvm.TECHNIQUES]
        if wrong:
            raise JitterlabError(f"--runtime jvm: '{wrong[0]}' is not one of {', '.join(jvm.TECHNIQUES)}")
        return [], requested
    on_jvm = [t for t in requested if t in jvm.TECHNIQUES]
    if on_jvm and args.runtime == "native":
        raise JitterlabError(
            f"--runtime native: '{on_jvm[0]}' is a JVM technique (use --runtime auto or jvm)"
        )
    return [t for t in requested if t not in jvm.TECHNIQUES], on_jvm


def _bench_plan(args: argparse.Namespace, requested: list[str]) -> tuple[bench_mod.BenchPlan, list[str]]:
    techniques, warnings = bench_mod.resolve_techniques(requested)
    if not techniques:
        raise JitterlabError("no technique to run")
    policies = tuple(p.strip() for p in args.policy.split(",") if p.strip())
    for policy in policies:
        if policy not in bench_mod.POLICIES:
            raise JitterlabError(f"--policy: '{policy}' is not one of {', '.join(bench_mod.POLICIES)}")
    if args.priority is not None and not 1 <= args.priority <= 99:
        raise JitterlabError("--priority must be between 1 and 99")
    dl = [parse_duration_ns(v, "ns") if v else 0 for v in (args.dl_runtime, args.dl_deadline, args.dl_period)]
    if "deadline" in policies and not (0 < dl[0] <= dl[1] <= dl[2]):
        raise JitterlabError("--policy deadline needs 0 < --dl-runtime <= --dl-deadline <= --dl-period")
    if args.samples < 1:
        raise JitterlabError("--samples must be at least 1")
    plan = bench_mod.BenchPlan(
        techniques=tuple(techniques),
        pairs=_int_list(args.pairs, 1, 64, "--pairs"),
        policies=policies,
        samples=args.samples,
        warmup=args.warmup,
        block_ints=args.block_ints,
        priority=args.priority,
        dl_runtime_ns=dl[0],
        dl_deadline_ns=dl[1],
        dl_period_ns=dl[2],
        pin=bench_mod.validate_pin(args.pin),
        mlock=not args.no_mlock,
        pause_ns=parse_duration_ns(args.pause, "s"),
        seed=args.seed,
        caf_scheduler=args.caf_scheduler,
        caf_threads=args.caf_threads,
        trace=args.trace,
    )
    return plan, warnings


def _summary_row(run: Run) -> dict[str, Any]:
    s = run.meta.get("summary", {}).get("latency_ns", {})
    return {
        "id": run.id,
        "label": run.label,
        "status": run.meta.get("status"),
        "count": s.get("count"),
        "p50_ns": s.get("p50"),
        "p99_ns": s.get("p99"),
        "max_ns": s.get("max"),
    }


def cmd_pipeline(args: argparse.Namespace) -> int:
    from jitterlab.pipeline import PipelineOptions, hdr_table, run_pipeline

    if args.policy not in ("other", "fifo", "rr"):
        raise JitterlabError("--scenario pipeline: --policy expects other, fifo or rr")
    priority = args.priority or (bench_mod.DEFAULT_RT_PRIORITY if args.policy != "other" else 0)
    options = PipelineOptions(
        messages=args.samples,
        warmup=args.warmup,
        interval_ns=parse_duration_ns(args.interval, "ns"),
        pin_producer=bench_mod.single_cpu(args.pin_producer, "--pin-producer"),
        pin_accumulator=bench_mod.single_cpu(args.pin_accumulator, "--pin-accumulator"),
        pin_journaller=bench_mod.single_cpu(args.pin_journaller, "--pin-journaller"),
        policy=args.policy,
        priority=priority,
        mlock=not args.no_mlock,
    )
    store = ResultsStore(args.store)
    store.ensure_writable()
    with running_load(parse_load(args.load)) as load:
        runs, interrupted = run_pipeline(
            store,
            options,
            lambda m: print(f"warning: {m}", file=sys.stderr),
            {"load": load} if load else None,
        )
    for run in runs:
        print(f"stored {run.id}", file=sys.stderr)
    if runs:
        headers, rows = hdr_table(runs)
        print(render(headers, rows, "l" + "r" * (len(headers) - 1)))
        if args.report:
            write_report(runs, Path(args.report), f"jitterlab pipeline on {platform.node()}")
    if interrupted:
        return bench_mod.EXIT_INTERRUPTED
    return 0 if runs else 1


def cmd_bench(args: argparse.Namespace) -> int:
    if args.scenario == "pipeline":
        return cmd_pipeline(args)
    native_techniques, jvm_techniques = _split_techniques(args)
    native_plan = _bench_plan(args, native_techniques) if native_techniques else None
    jvm_plan = _jvm_plan(args, jvm_techniques) if jvm_techniques else None
    store = ResultsStore(args.store)
    store.ensure_writable()
    runs: list[Run] = []
    interrupted = failed = False
    with running_load(parse_load(args.load)) as load:
        extra = {"load": load} if load else None
        if native_plan is not None:
            plan, warnings = native_plan
            for w in warnings:
                print(f"warning: {w}", file=sys.stderr)
            print(
                f"jitterlab bench: {len(plan.points())} native run(s), {format_count(plan.samples)} samples "
                f"per pair, store {store.root}",
                file=sys.stderr,
            )
            outcome = bench_mod.run_plan(plan, store, extra_meta=extra)
            runs += outcome.runs
            interrupted, failed = outcome.interrupted, bool(outcome.failures)
        if jvm_plan is not None and not interrupted:
            jvm_runs, interrupted = jvm.run_jvm_plan(
                jvm_plan, store, lambda m: print(f"warning: {m}", file=sys.stderr), extra
            )
            runs += jvm_runs
            failed = failed or not jvm_runs
    if load and not load.get("stopped_cleanly", True):
        print("warning: stress-ng had to be killed", file=sys.stderr)
    for run in runs:
        print(f"stored {run.id}  {_stored_line(run)}", file=sys.stderr)
    if args.json:
        print(json.dumps([_summary_row(r) for r in runs], indent=2))
    elif runs:
        print(table1(runs))
        if covers_several_collectors(runs):
            print("\ngarbage collector × scheduler (Stauffert et al. 2016, Tables 2–3)")
            print(collector_table(runs))
    if args.report and runs:
        write_report(runs, Path(args.report), f"jitterlab bench on {platform.node()}")
    if interrupted:
        print("interrupted: the samples recorded so far are stored and marked partial", file=sys.stderr)
        return bench_mod.EXIT_INTERRUPTED
    return 1 if failed else 0


def _stored_line(run: Run) -> str:
    s = run.meta["summary"]["latency_ns"]
    line = f"p50 {format_ns(s['p50'])}  p99 {format_ns(s['p99'])}  max {format_ns(s['max'])}"
    if "jvm" in run.meta:
        gc = [e["end_ns"] - e["start_ns"] for e in jvm.pauses_in_run(run) if e["kind"] == "gc-pause"]
        line += f"  GC pauses during the samples {len(gc)}" + (f" (max {format_ns(max(gc))})" if gc else "")
    if run.partial:
        line += f"  PARTIAL ({run.meta.get('partial_reason')})"
    return line


def _comma_choices(text: str, choices: tuple[str, ...], flag: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    for item in items:
        if item not in choices:
            raise JitterlabError(f"{flag} expects a comma list of {', '.join(choices)}; got '{item}'")
    if not items:
        raise JitterlabError(f"{flag} is empty")
    return items


def _jvm_plan(args: argparse.Namespace, techniques: list[str]) -> jvm.JvmPlan:
    if (
        techniques == list(jvm.TECHNIQUES)
        and args.technique == "all"
        and jvm.choose_jdk(args.jdk).feature < 21
    ):
        techniques = [t for t in techniques if t != "java-vthread"]
    ignored = [
        flag
        for flag, unset in (
            ("--pin", args.pin == "none"),
            ("--pause", parse_duration_ns(args.pause, "s") == 0),
            ("--trace", not args.trace),
            ("--no-mlock", not args.no_mlock),
            ("--caf-scheduler", args.caf_scheduler == "stealing"),
        )
        if not unset
    ]
    if ignored:
        print(f"warning: the JVM harness ignores {', '.join(ignored)}", file=sys.stderr)
    policies = tuple(p.strip() for p in args.policy.split(",") if p.strip())
    for policy in policies:
        if policy not in ("other", "fifo", "rr"):
            raise JitterlabError(f"--policy for JVM techniques expects other, fifo or rr; got '{policy}'")
    if args.priority is not None and not 1 <= args.priority <= 99:
        raise JitterlabError("--priority must be between 1 and 99")
    return jvm.JvmPlan(
        techniques=tuple(techniques),
        collectors=_comma_choices(args.gc, tuple(jvm.COLLECTORS), "--gc"),
        pairs=_int_list(args.pairs, 1, 64, "--pairs"),
        policies=policies,
        priority=args.priority or bench_mod.DEFAULT_RT_PRIORITY,
        samples=args.samples,
        warmup=args.warmup,
        block_ints=args.block_ints,
        seed=args.seed,
        wait_strategies=_comma_choices(args.wait_strategy, jvm.WAIT_STRATEGIES, "--wait-strategy"),
        dispatchers=_comma_choices(args.dispatcher, jvm.DISPATCHERS, "--dispatcher"),
        jdk=args.jdk,
        heap=args.heap,
    )


def cmd_runs(args: argparse.Namespace) -> int:
    runs = ResultsStore(args.store).runs()
    if args.json:
        print(
            json.dumps([_summary_row(r) | {"created_utc": r.meta.get("created_utc")} for r in runs], indent=2)
        )
        return 0
    rows = []
    for r in runs:
        s = r.meta.get("summary", {}).get("latency_ns", {})
        c = r.config
        rows.append(
            [
                r.id,
                str(r.meta.get("created_utc", ""))[:19].replace("T", " "),
                r.technique_label,
                c.get("pairs", "?"),
                r.policy_label,
                format_count(int(s.get("count", 0))),
                format_ns(s.get("p50")),
                format_ns(s.get("p99")),
                format_ns(s.get("max")),
                "" if not r.partial else "partial",
            ]
        )
    if not rows:
        print(f"no runs in {ResultsStore(args.store).root}", file=sys.stderr)
        return 0
    print(
        render(
            ["id", "time (UTC)", "technique", "pairs", "policy", "samples", "p50", "p99", "max", ""],
            rows,
            "llllrrrrrl",
        )
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    run = load_run(args.run, ResultsStore(args.store))
    from jitterlab.stats import summarize

    if run.histogram_only:
        summary = dict(run.meta["summary"]["latency_ns"])
        print(
            "note: histogram-only run (imported); percentiles use HdrHistogram's definition", file=sys.stderr
        )
    else:
        summary = summarize(run.latency_ns).to_dict()  # reads and verifies the samples
    if args.json:
        print(
            json.dumps(
                {
                    "id": run.id,
                    "status": run.meta.get("status"),
                    "partial_reason": run.meta.get("partial_reason"),
                    "config": run.config,
                    "summary_ns": summary,
                    "floor": run.meta.get("floor"),
                },
                indent=2,
            )
        )
        return 0
    c = run.config
    print(f"run      {run.id}")
    print(
        f"what     {run.label}, {format_count(int(c.get('samples_per_pair', 0)))} samples per pair"
        f"{'  [PARTIAL: ' + str(run.meta.get('partial_reason')) + ']' if run.partial else ''}"
    )
    rows = [["count", f"{summary['count']:,}"]]
    for key, name in (
        ("min", "min"),
        ("mean", "mean"),
        ("p50", "median"),
        ("p90", "p90"),
        ("p99", "p99"),
        ("p99_9", "p99.9"),
        ("p99_99", "p99.99"),
        ("max", "max"),
        ("std", "std"),
    ):
        rows.append([name, format_ns(summary[key])])
    print(render(["latency", "value"], rows))
    floor = run.meta.get("floor") or {}
    clock = floor.get("clock_overhead_ns") or {}
    c2c = floor.get("c2c_one_way_ns") or {}
    if clock:
        c2c_text = (
            f"core-to-core one-way p50 {format_ns(c2c.get('median'))} (CPUs {c2c.get('cpu_a')}↔{c2c.get('cpu_b')})"
            if c2c.get("measured")
            else f"core-to-core not measured ({c2c.get('skipped_reason')})"
        )
        print(f"floor    clock read {format_ns(clock.get('median'))}; {c2c_text}")
    obtained = run.meta.get("obtained") or {}
    if obtained.get("policies"):
        print(f"obtained policy {', '.join(obtained['policies'])}; spin mode {obtained.get('spin_mode')}")
    for w in obtained.get("warnings", []):
        print(f"warning: {w}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jitterlab", description="Measure, describe and simulate latency jitter.")
    parser.add_argument("--version", action="version", version=f"jitterlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_bench(sub)
    p = sub.add_parser("runs", help="list stored runs")
    p.add_argument("--json", action="store_true")
    _store_option(p)
    p = sub.add_parser("show", help="summary of one run")
    p.add_argument("run", help="run id (or unique prefix) or run folder")
    p.add_argument("--json", action="store_true")
    _store_option(p)
    p = sub.add_parser("describe", help="summary, outlier categories and time windows of a run")
    p.add_argument("run")
    p.add_argument("--json", action="store_true")
    p.add_argument("--window", default="1s", help="window width by send time (default 1s)")
    p.add_argument("--baseline", help="classify with the stacked-z thresholds of this reference run")
    p.add_argument("--test", default="stacked-z", choices=("stacked-z", "gesd", "walsh"))
    p.add_argument("--two-sided", action="store_true", help="also flag low outliers (stacked-z)")
    p.add_argument("--threshold", type=float, default=3.5, help="modified z-score threshold (default 3.5)")
    p.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the GESD test (default 0.05)"
    )
    _store_option(p)
    p = sub.add_parser("report", help="write one self-contained HTML report of runs")
    p.add_argument("runs", nargs="*", help="run ids or folders (default: every run in the store)")
    p.add_argument("-o", "--output", default="report.html")
    p.add_argument("--title", default="jitterlab report")
    _store_option(p)
    p = sub.add_parser("compare", help="compare run B against run A: verdict per percentile")
    p.add_argument("a", help="baseline run")
    p.add_argument("b", help="run to judge")
    p.add_argument("--json", action="store_true")
    p.add_argument("--noise", type=float, default=0.05, help="noise threshold as a fraction (default 0.05)")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when the verdict is 'regressed'")
    _store_option(p)
    p = sub.add_parser("export", help="write a run as HdrHistogram (hgrm, hlog), CSV or Parquet")
    p.add_argument("run")
    p.add_argument("--format", required=True, choices=("hgrm", "hlog", "csv", "parquet"))
    p.add_argument("-o", "--output", help="output file (default RUN_ID.FORMAT)")
    p.add_argument("--window", default="1s", help="interval of the hlog histograms (default 1s)")
    _store_option(p)
    p = sub.add_parser("doctor", help="check what on this machine shapes latency, with the fix for each")
    p.add_argument("--json", action="store_true")
    p.add_argument("--root", default="/", help="read /proc and /sys under this folder (a recorded tree)")
    p = sub.add_parser(
        "hiccup", help="per-CPU OS-noise meter: every interruption of a busy loop, stored as a run"
    )
    p.add_argument("--duration", default="10s", help="how long to measure (default 10s)")
    p.add_argument("--cpus", default="all", help="CPU list such as 0,1 or 0-3 (default: every CPU)")
    p.add_argument("--threshold", default="auto", help="smallest gap recorded, e.g. 1us, or auto (default)")
    p.add_argument(
        "--auto-multiple", type=int, default=10, help="auto threshold = this × the smallest gap (default 10)"
    )
    p.add_argument("--policy", default="other", help="other, fifo or rr")
    p.add_argument("--priority", type=int, default=0, help="priority for fifo/rr (default 90)")
    p.add_argument("--no-mlock", action="store_true")
    p.add_argument("--load", help="run stress-ng alongside: cpu, memory, io or mixed, optionally :WORKERS")
    p.add_argument(
        "--trace", action="store_true", help="record scheduler/IRQ events with perf and attribute each hiccup"
    )
    p.add_argument("--json", action="store_true")
    _store_option(p)
    p = sub.add_parser("model", help="latency models: build from a run, design from parameters, show, sample")
    models = p.add_subparsers(dest="model_command", required=True, parser_class=_Parser)
    q = models.add_parser("build", help="a model from a measured run (stacked z-test categories)")
    q.add_argument("run")
    q.add_argument("-o", "--output", required=True)
    q.add_argument(
        "--points", type=int, default=256, help="points of each sampled quantile function (default 256)"
    )
    q.add_argument(
        "--kde", action="store_true", help="smooth each distribution with a log-space Gaussian KDE"
    )
    q.add_argument(
        "--min-category", type=int, default=2, help="leave out categories with fewer spikes (default 2)"
    )
    q.add_argument(
        "--scale", type=float, default=1.0, help="multiply spike durations (a more pathogenic system)"
    )
    _store_option(q)
    q = models.add_parser("make", help="a model from parameters, for designing conditions without a run")
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--constant", help="constant delay, e.g. 20ms")
    q.add_argument("--normal", help="MEAN,SD, e.g. 20ms,2ms (clipped at 0)")
    q.add_argument("--uniform", help="LOW,HIGH, e.g. 10ms,30ms")
    q.add_argument("--sine", help="MEAN,AMPLITUDE,PERIOD, e.g. 50ms,20ms,1s (St. Pierre et al.)")
    q.add_argument(
        "--spikes", action="append", help="DURATION@RATE_HZ Poisson spikes, e.g. 40ms@0.5 (repeatable)"
    )
    q.add_argument("--points", type=int, default=256)
    q = models.add_parser("show", help="categories, rates and quantiles of a model")
    q.add_argument("model")
    q.add_argument("--json", action="store_true")
    q = models.add_parser("sample", help="seeded per-item delays (ns, one a line) the injector would add")
    q.add_argument("model")
    q.add_argument("-n", type=int, default=1000, help="items (default 1000)")
    q.add_argument("--rate", type=float, default=1000.0, help="item arrival rate in Hz (default 1000)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--reorder", action="store_true", help="independent delays instead of the in-order queue")
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
    p.add_argument("--seed", type=int, default=0, help="seed of the injector's draws (default 0)")
    p.add_argument("--reorder", action="store_true", help="independent delays instead of the in-order queue")
    p.add_argument(
        "--busy-poll", action="store_true", help="never sleep: µs-accurate for µs-scale models, costs a core"
    )
    p.add_argument(
        "--queue-limit", type=_positive_int, default=65_536, help="proxy: most items held (default 65536)"
    )
    p.add_argument(
        "--stats-interval", default="10s", help="proxy: print statistics this often (0: only at exit)"
    )
    p.add_argument("--duration", default="0", help="proxy: stop after this long (default: until Ctrl-C)")
    p.add_argument("--count", type=_positive_int, default=10_000, help="validate: datagrams per setting")
    p.add_argument(
        "--rate", type=_positive_int, default=1_000, help="validate: datagrams per second (default 1000)"
    )
    p.add_argument("--size", type=_positive_int, default=64, help="validate: datagram bytes (default 64)")
    p.add_argument("--report", help="validate: write an HTML report with the QQ plots here")
    p.add_argument("--json", action="store_true")
    _store_option(p)
    p = sub.add_parser("import", help="store an HdrHistogram log (.hlog) or a CSV of samples as a run")
    p.add_argument("file")
    _store_option(p)
    return parser


def _load(ref: str, args: argparse.Namespace) -> Run:
    return load_run(ref, ResultsStore(args.store))


def cmd_describe(args: argparse.Namespace) -> int:
    from jitterlab.analysis import category_name, describe_run, description_json

    run = _load(args.run, args)
    if run.histogram_only:
        return _describe_histogram(run, args)
    baseline = _load(args.baseline, args) if args.baseline else None
    width = parse_duration_ns(args.window, "s")
    if width <= 0:
        raise JitterlabError("--window must be a positive duration such as 1s or 100ms")
    d = describe_run(run, args.test, width, baseline, args.two_sided, args.threshold, args.alpha)
    if args.json:
        print(json.dumps(description_json(d) | {"attribution": run.meta.get("attribution")}, indent=2))
        return 0
    s = d.summary
    print(f"run      {run.id}  ({run.label}{', PARTIAL' if run.partial else ''})")
    print(
        render(
            ["count", "min", "mean", "median", "p90", "p99", "p99.9", "p99.99", "p99.999", "max", "std"],
            [
                [
                    f"{s.count:,}",
                    *(
                        format_ns(v)
                        for v in (
                            s.min,
                            s.mean,
                            s.p50,
                            s.p90,
                            s.p99,
                            s.p99_9,
                            s.p99_99,
                            s.p99_999,
                            s.max,
                            s.std,
                        )
                    ),
                ]
            ],
            "r" * 11,
        )
    )
    against = f", thresholds of baseline {d.baseline_id}" if d.baseline_id else ""
    print(f"\noutlier categories ({d.test}{against}):")
    rows = []
    for c in d.categories.categories:
        value_range = "—" if c.count == 0 else f"{format_ns(c.lower)} – {format_ns(c.upper)}"
        rows.append([category_name(c.index), value_range, f"{c.count:,}", f"{c.share:.4%}"])
    print(render(["category", "range", "count", "share"], rows, "lrrr"))
    w = d.windows
    print(f"\nwindows of {format_ns(w.width_ns)} by send time: {w.start_ns.size}")
    show = (
        range(w.start_ns.size)
        if w.start_ns.size <= 20
        else [*range(10), *range(w.start_ns.size - 10, w.start_ns.size)]
    )
    rows = []
    for i in show:
        cats = " ".join(
            f"{category_name(c)}:{int(n)}"
            for c, n in zip(w.categories, w.category_counts[i], strict=True)
            if c != 0 and n
        )
        rows.append(
            [
                format_ns(w.start_ns[i]),
                f"{int(w.count[i]):,}",
                format_ns(w.p50[i]),
                format_ns(w.p99[i]),
                format_ns(w.max[i]),
                cats or "-",
            ]
        )
    print(render(["start", "samples", "p50", "p99", "max", "outliers by category"], rows, "rrrrrl"))
    if w.start_ns.size > 20:
        print(f"({w.start_ns.size - 20} windows in between not shown; --json has them all)")
    print_attribution(run)
    return 0


def _describe_histogram(run: Run, args: argparse.Namespace) -> int:
    """describe for an imported histogram: what needs no raw samples, and a word on the rest."""
    summary = run.meta["summary"]["latency_ns"]
    windows = run.meta["histogram"].get("windows", [])
    missing = "outlier categories (stacked-z, GESD, Walsh) and windows by send time need raw samples"
    if args.json:
        print(
            json.dumps(
                {
                    "id": run.id,
                    "histogram_only": True,
                    "summary_ns": summary,
                    "intervals": windows,
                    "not_available": missing,
                },
                indent=2,
            )
        )
        return 0
    print(f"run      {run.id}  (histogram-only import of {run.config.get('source')})")
    keys = ["count", "min", "mean", "p50", "p90", "p99", "p99_9", "p99_99", "p99_999", "max", "std"]
    print(render(keys, [[f"{summary['count']:,}", *(format_ns(summary[k]) for k in keys[1:])]], "r" * 11))
    rows = histogram_interval_rows(run)
    print(f"\nintervals of the log: {len(windows)}")
    print(render(["start", "count", "p50", "p99", "max"], rows, "rrrrr"))
    print(f"note: {missing}; this run has none", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from jitterlab.interop import export_run

    run = _load(args.run, args)
    out = Path(args.output or f"{run.id}.{args.format}")
    try:
        export_run(run, args.format, out, parse_duration_ns(args.window, "s"))
    except OSError as e:
        raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from jitterlab.interop import import_file

    store = ResultsStore(args.store)
    store.ensure_writable()
    run = import_file(Path(args.file), store)
    kind = "histogram-only run" if run.histogram_only else "run"
    print(f"stored {run.id} ({kind}, {run.meta['summary']['latency_ns']['count']:,} values)", file=sys.stderr)
    print(run.id)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from jitterlab.doctor import run_checks

    checks = run_checks(Path(args.root))
    if args.json:
        print(json.dumps([c.to_dict() for c in checks], indent=2))
        return 0
    marks = {"ok": "ok  ", "warn": "WARN", "info": "info"}
    for c in checks:
        print(f"[{marks[c.status]}] {c.name}: {c.finding}")
        if c.fix and c.status != "ok":
            print(f"       fix: {c.fix}")
    warned = sum(c.status == "warn" for c in checks)
    print(
        f"\n{len(checks)} checks: {warned} warning(s). Every run stores these findings in run.json (doctor)."
    )
    return 0


def print_attribution(run: Run) -> None:
    """The spike-cause table of a traced run, or why there is none."""
    block = run.meta.get("attribution")
    if block is None:
        return
    if not block.get("available"):
        print(f"spike attribution: unavailable ({block.get('reason')})", file=sys.stderr)
        return
    print(
        f"\nspike causes (perf tracepoints on the spike's CPU; {block['attributed']:,} of {block['spikes']:,} "
        "spikes overlap a guest event):"
    )
    rows = [
        [c["cause"], f"{c['spikes']:,}", f"{c['share']:.1%}", format_ns(c["time_ns"])]
        for c in block["causes"]
    ]
    print(render(["cause", "spikes", "share", "time in them"], rows, "lrrr"))


def cmd_hiccup(args: argparse.Namespace) -> int:
    from jitterlab.hiccup import HiccupOptions, per_cpu_summary, run_hiccup

    duration = parse_duration_ns(args.duration, "s")
    if duration < 1_000_000:
        raise JitterlabError("--duration must be at least 1ms")
    if args.cpus != "all":
        bench_mod.validate_pin(args.cpus)
    threshold = 0 if args.threshold == "auto" else parse_duration_ns(args.threshold, "ns")
    if args.policy not in ("other", "fifo", "rr"):
        raise JitterlabError("--policy expects other, fifo or rr")
    priority = args.priority or (bench_mod.DEFAULT_RT_PRIORITY if args.policy != "other" else 0)
    options = HiccupOptions(
        duration, args.cpus, threshold, args.auto_multiple, args.policy, priority, not args.no_mlock
    )
    store = ResultsStore(args.store)
    store.ensure_writable()
    with running_load(parse_load(args.load)) as load, tracing(args.trace) as trace:
        run, interrupted = run_hiccup(
            store,
            options,
            lambda m: print(f"warning: {m}", file=sys.stderr),
            {"load": load} if load else None,
            trace,
        )
    if run is None:
        return bench_mod.EXIT_INTERRUPTED if interrupted else 1
    rows = per_cpu_summary(run)
    info = run.meta["hiccup"]
    if args.json:
        print(json.dumps({"id": run.id, "threshold_ns": info["threshold_ns"], "per_cpu": rows}, indent=2))
    else:
        print(
            f"stored {run.id}: interruptions longer than {format_ns(info['threshold_ns'])} "
            f"({info['threshold_mode']}) over {format_ns(duration)}",
            file=sys.stderr,
        )
        table = [
            [
                r["cpu"],
                f"{r['interruptions']:,}",
                f"{r['rate_per_s']:.1f}",
                f"{r['time_lost_fraction']:.3%}",
                format_ns(r["p50_ns"]),
                format_ns(r["p99_ns"]),
                format_ns(r["p99_9_ns"]),
                format_ns(r["max_ns"]),
            ]
            for r in rows
        ]
        print(
            render(
                ["cpu", "interruptions", "per s", "time lost", "p50", "p99", "p99.9", "max"], table, "r" * 8
            )
        )
        print_attribution(run)
    return bench_mod.EXIT_INTERRUPTED if interrupted else 0


def _durations(text: str, count: int, flag: str) -> tuple[float, ...]:
    parts = [p for p in text.split(",") if p.strip()]
    if len(parts) != count:
        raise JitterlabError(f"{flag} expects {count} comma-separated durations, got '{text}'")
    return tuple(float(parse_duration_ns(p.strip(), "ms")) for p in parts)


def _spike(text: str) -> tuple[float, float]:
    duration, _, rate = text.partition("@")
    try:
        return float(parse_duration_ns(duration, "ms")), float(rate)
    except ValueError:
        raise JitterlabError(f"--spikes expects DURATION@RATE_HZ such as 20ms@0.5, got '{text}'") from None


def cmd_model(args: argparse.Namespace) -> int:
    from jitterlab import model as m
    from jitterlab.fileio import atomic_write_json

    if args.model_command in ("build", "make"):
        if args.points < 2:
            raise JitterlabError("--points must be at least 2")
        if args.model_command == "build":
            if args.scale <= 0:
                raise JitterlabError("--scale must be positive")
            built = m.build_model(_load(args.run, args), args.points, args.kde, args.min_category, args.scale)
        else:
            built = m.parametric_model(
                constant_ns=parse_duration_ns(args.constant, "ms") if args.constant else None,
                normal=_durations(args.normal, 2, "--normal") if args.normal else None,  # type: ignore[arg-type]
                uniform=_durations(args.uniform, 2, "--uniform") if args.uniform else None,  # type: ignore[arg-type]
                sine=_durations(args.sine, 3, "--sine") if args.sine else None,  # type: ignore[arg-type]
                spikes=[_spike(x) for x in args.spikes or []],
                points=args.points,
            )
        out = Path(args.output)
        try:
            atomic_write_json(out, m.model_to_json(built))
        except OSError as e:
            raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
        print(f"wrote {out}: {len(built.categories)} spike categories", file=sys.stderr)
        return 0
    loaded = m.load_model(Path(args.model))
    if args.model_command == "show":
        if args.json:
            print(json.dumps(m.model_to_json(loaded), indent=2))
            return 0
        if loaded.sine is not None:
            mean, amplitude, period = loaded.sine
            print(
                f"base: sine, mean {format_ns(mean)}, amplitude {format_ns(amplitude)}, period {format_ns(period)}"
            )
        else:
            assert loaded.base is not None
            q = loaded.base.values
            print(
                f"base: {q.size} quantiles, min {format_ns(q[0])}, median {format_ns(float(np.median(q)))}, "
                f"max {format_ns(q[-1])}"
            )
        rows = []
        for c in loaded.categories:
            d, g = c.duration.values, c.interarrival.values
            rows.append(
                [
                    c.index,
                    f"{c.rate_hz:.3g}",
                    format_ns(float(np.median(d))),
                    format_ns(d[-1]),
                    format_ns(float(np.median(g))),
                    f"{c.count:,}",
                ]
            )
        print(
            render(
                ["category", "rate (Hz)", "duration p50", "duration max", "inter-arrival p50", "spikes"],
                rows,
                "rrrrrr",
            )
        )
        source = loaded.source
        if "run" in source:
            print(
                f"built from run {source['run']} ({source.get('label')}), scale {source.get('scale')}, "
                f"kde {source.get('kde')}",
                file=sys.stderr,
            )
        return 0
    if args.n < 1 or args.rate <= 0:
        raise JitterlabError("sample needs -n ≥ 1 and --rate > 0")
    arrivals = np.arange(args.n) * (1e9 / args.rate)
    for delay in m.simulate_delays(loaded, arrivals, args.seed, args.reorder):
        print(round(delay))
    return 0


def cmd_inject(args: argparse.Namespace) -> int:
    from jitterlab import inject
    from jitterlab.model import load_model

    if args.model is None and not args.zero:
        raise JitterlabError("inject needs --model FILE (or --zero for a pass-through proxy)")
    if args.model is not None:
        load_model(Path(args.model))  # a bad model is a one-line error before anything starts
    if args.seed < 0:
        raise JitterlabError("--seed must be ≥ 0")
    if args.action == "validate":
        return _inject_validate(args)
    if not args.listen or not args.forward:
        raise JitterlabError("inject needs --listen [HOST:]PORT and --forward HOST:PORT")
    extra = ["--queue-limit", str(args.queue_limit)] + (["--busy-poll"] if args.busy_poll else [])
    extra += ["--stats-interval", str(round(parse_duration_ns(args.stats_interval, "s") / 1e9))]
    extra += ["--duration", str(round(parse_duration_ns(args.duration, "s") / 1e9))]
    argv = inject.proxy_argv(
        Path(args.model) if args.model else None,
        args.listen,
        args.forward,
        args.tcp,
        args.seed,
        args.reorder,
        extra,
    )
    import subprocess

    proc = subprocess.Popen(argv)  # Ctrl-C reaches it too (same process group); it prints its summary
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def _inject_validate(args: argparse.Namespace) -> int:
    from jitterlab import inject
    from jitterlab.fileio import atomic_write_bytes
    from jitterlab.report import build_report

    if args.model is None:
        raise JitterlabError("inject validate needs --model FILE")
    store = ResultsStore(args.store)
    store.ensure_writable()
    options = inject.ValidateOptions(
        Path(args.model), args.count, args.rate, args.size, args.seed, args.reorder, args.busy_poll
    )
    results, v = inject.validate(store, options, lambda m: print(f"warning: {m}", file=sys.stderr))
    if args.json:
        doc = {
            "runs": {k: r.run.id for k, r in results.items()},
            "injected_runs": {k: r.injected.id for k, r in results.items() if r.injected},
            "ks_injected": v.ks,
            "ks_end_to_end": v.ks_end_to_end,
            "quantile_error_ns": v.quantile_error_ns,
            "proxy": {k: r.proxy_stats for k, r in results.items() if r.proxy_stats},
        }
        print(json.dumps(doc, indent=2))
    else:
        rows = []
        for setting, r in results.items():
            x = r.run.latency_ns
            rows.append(
                [
                    setting,
                    r.run.id,
                    f"{x.size:,}",
                    format_ns(float(np.median(x))),
                    format_ns(float(np.percentile(x, 99))),
                    format_ns(float(x.max())),
                ]
            )
        print(render(["setting", "run", "datagrams", "p50", "p99", "max"], rows, "llrrrr"))
        errors = ", ".join(f"{k} {format_ns(e)}" for k, e in v.quantile_error_ns.items())
        print(f"KS distance, injected delay (proxy's record) vs the model: {v.ks:.4f}; error {errors}")
        print(f"KS distance end to end, vs the model + the pass-through floor: {v.ks_end_to_end:.4f}")
    if args.report:
        out = Path(args.report)
        page = build_report(
            [r.run for r in results.values()],
            "jitterlab injection validation",
            inject.validation_html(results, v, Path(args.model)),
        )
        try:
            atomic_write_bytes(out, page.encode())
        except OSError as e:
            raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
        print(f"wrote {out}", file=sys.stderr)
    return 0


def write_report(runs: list[Run], out: Path, title: str) -> None:
    from jitterlab.fileio import atomic_write_bytes
    from jitterlab.report import build_report

    print(f"writing the report of {len(runs)} run(s)…", file=sys.stderr)
    try:
        atomic_write_bytes(out, build_report(runs, title).encode())
    except OSError as e:
        raise JitterlabError(f"cannot write {out}: {e.strerror or e}") from e
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    store = ResultsStore(args.store)
    refs = args.runs or [r.id for r in store.runs()]
    if not refs:
        raise JitterlabError(f"no runs to report (none given and none in {store.root})")
    write_report([load_run(ref, store) for ref in refs], Path(args.output), args.title)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from jitterlab.stats import compare_samples

    a, b = _load(args.a, args), _load(args.b, args)
    c = compare_samples(a.latency_ns, b.latency_ns, noise_threshold=args.noise)
    if args.json:
        print(
            json.dumps(
                {
                    "a": a.id,
                    "b": b.id,
                    "verdict": c.verdict,
                    "noise_threshold": c.noise_threshold,
                    "confidence": c.confidence,
                    "tests": {
                        "ks": {"statistic": c.ks_statistic, "pvalue": c.ks_pvalue},
                        "anderson_darling": {"statistic": c.ad_statistic, "pvalue": c.ad_pvalue},
                        "mann_whitney": {"statistic": c.mw_statistic, "pvalue": c.mw_pvalue},
                        "samples_tested": [c.tested_a, c.tested_b],
                    },
                    "percentiles": [
                        {
                            "percentile": d.percentile,
                            "a_ns": d.a,
                            "b_ns": d.b,
                            "relative": d.relative,
                            "ci_low": d.ci_low,
                            "ci_high": d.ci_high,
                            "verdict": d.verdict,
                        }
                        for d in c.percentiles
                    ],
                    "qq": {
                        "probabilities": c.qq_probabilities.tolist(),
                        "a_ns": c.qq_a.tolist(),
                        "b_ns": c.qq_b.tolist(),
                    },
                },
                indent=2,
            )
        )
    else:
        print(f"A  {a.id}  ({a.label})\nB  {b.id}  ({b.label})")
        rows = [
            [
                f"p{d.percentile:g}",
                format_ns(d.a),
                format_ns(d.b),
                f"{d.relative:+.1%}",
                f"[{d.ci_low:+.1%}, {d.ci_high:+.1%}]",
                d.verdict,
            ]
            for d in c.percentiles
        ]
        print(render(["percentile", "A", "B", "change", f"{c.confidence:.0%} CI", "verdict"], rows, "lrrrrl"))
        tested = (
            ""
            if c.tested_a == c.n_a and c.tested_b == c.n_b
            else f" (on {c.tested_a:,} / {c.tested_b:,} samples)"
        )
        print(
            f"KS D = {c.ks_statistic:.4f} (p = {c.ks_pvalue:.3g}); Anderson-Darling = {c.ad_statistic:.2f} "
            f"(p ≈ {c.ad_pvalue:.3g}); Mann-Whitney p = {c.mw_pvalue:.3g}{tested}"
        )
        print(f"verdict: {c.verdict} (noise threshold ±{c.noise_threshold:.0%})")
    return 1 if args.fail_on_regression and c.verdict == "regressed" else 0


COMMANDS = {
    "bench": cmd_bench,
    "runs": cmd_runs,
    "show": cmd_show,
    "describe": cmd_describe,
    "report": cmd_report,
    "compare": cmd_compare,
    "export": cmd_export,
    "import": cmd_import,
    "doctor": cmd_doctor,
    "hiccup": cmd_hiccup,
    "model": cmd_model,
    "inject": cmd_inject,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except JitterlabError as e:
        print(f"jitterlab: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("jitterlab: interrupted", file=sys.stderr)
        return bench_mod.EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: one line by default, the traceback on request
        if os.environ.get("JITTERLAB_DEBUG"):
            raise
        print(
            f"jitterlab: internal error: {type(e).__name__}: {e} (set JITTERLAB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
