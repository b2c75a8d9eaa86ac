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

from jitterlab import bench as bench_mod
from jitterlab._version import __version__
from jitterlab.errors import JitterlabError
from jitterlab.load import parse_load, running_load
from jitterlab.store import ResultsStore, Run, load_run
from jitterlab.tables import histogram_interval_rows, render, table1
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
        help="comma list of mutex,spin,spsc,futex,pipe,unix,caf,c2c or 'all' (default: all available)",
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
    _store_option(p)


def _bench_plan(args: argparse.Namespace) -> tuple[bench_mod.BenchPlan, list[str]]:
    techniques, warnings = bench_mod.resolve_techniques(
        [t.strip() for t in args.technique.split(",") if t.strip()]
    )
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
    pins = [
        bench_mod.single_cpu(v, flag)
        for v, flag in (
            (args.pin_producer, "--pin-producer"),
            (args.pin_accumulator, "--pin-accumulator"),
            (args.pin_journaller, "--pin-journaller"),
        )
    ]
    options = PipelineOptions(
        messages=args.samples,
        warmup=args.warmup,
        interval_ns=parse_duration_ns(args.interval, "ns"),
        pin_producer=pins[0],
        pin_accumulator=pins[1],
        pin_journaller=pins[2],
        policy=args.policy,
        priority=priority,
        mlock=not args.no_mlock,
    )
    store = ResultsStore(args.store)
    store.ensure_writable()
    with running_load(parse_load(args.load)) as load:
        run, interrupted = run_hiccup(
            store,
            options,
            lambda m: print(f"warning: {m}", file=sys.stderr),
            {"load": load} if load else None,
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
    return bench_mod.EXIT_INTERRUPTED if interrupted else 0


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
