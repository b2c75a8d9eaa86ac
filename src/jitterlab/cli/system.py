"""System jitter: ``jitterlab doctor`` and ``jitterlab hiccup``."""

from __future__ import annotations

import argparse
import platform
from dataclasses import fields
from pathlib import Path
from typing import Any

from jitterlab.cli.common import (
    integer,
    note,
    print_context,
    print_json,
    store_option,
    warn,
    writable_store,
)
from jitterlab.cli.measuring import check_report, report_option, write_runs_report
from jitterlab.core.options import duration_text
from jitterlab.core.render import render
from jitterlab.core.tidy import counted
from jitterlab.core.units import format_ns


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check what on this machine shapes latency, with the fix for each")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    p.add_argument("--root", default="/", help="read /proc and /sys under this folder (a recorded tree)")
    p = sub.add_parser(
        "hiccup", help="per-CPU OS-noise meter: every interruption of a busy loop, stored as a run"
    )
    p.add_argument(
        "--duration",
        type=duration_text(low_open=True),
        default="10s",
        help="how long to measure (default 10s)",
    )
    p.add_argument("--cpus", default="all", help="CPU list such as 0,1 or 0-3 (default: every CPU)")
    p.add_argument(
        "--threshold",
        type=duration_text(unit="ns", words=("auto",)),
        default="auto",
        help="smallest gap recorded, e.g. 1us, or auto (default)",
    )
    p.add_argument(
        "--auto-multiple",
        type=integer(1, 1_000_000),
        default=10,
        help="auto threshold = this × the smallest gap (default 10)",
    )
    p.add_argument("--policy", default="other", help="other, fifo or rr (default other)")
    p.add_argument("--priority", type=integer(0, 99), default=0, help="priority for fifo/rr (default 90)")
    p.add_argument("--no-mlock", action="store_true")
    p.add_argument("--load", help="run stress-ng alongside: cpu, memory, io or mixed, optionally :WORKERS")
    p.add_argument(
        "--trace", action="store_true", help="record scheduler/IRQ events with perf and attribute each hiccup"
    )
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    report_option(p)
    store_option(p, named=True)


def cmd_doctor(args: argparse.Namespace) -> int:
    from jitterlab.measure.doctor import run_checks

    checks = run_checks(Path(args.root))
    if args.json:
        print_json([c.to_dict() for c in checks])
        return 0
    marks = {"ok": "ok  ", "warn": "WARN", "info": "info"}
    for c in checks:
        print(f"[{marks[c.status]}] {c.name}: {c.finding}")
        if c.fix and c.status != "ok":
            print(f"       fix: {c.fix}")
    warned = sum(c.status == "warn" for c in checks)
    print(
        f"\n{counted(len(checks), 'check')}: {counted(warned, 'warning')}. Every run stores these findings in run.json (doctor)."
    )
    return 0


def cmd_hiccup(args: argparse.Namespace) -> int:
    # the room's libraries (numpy, pyarrow) load now, not with the parser or --help
    from jitterlab.describe.attribution import spike_attribution
    from jitterlab.describe.context import command_context
    from jitterlab.describe.tables import HICCUP_HEADERS, hiccup_per_cpu, hiccup_rows
    from jitterlab.describe.text import attribution_text
    from jitterlab.measure.plans import HiccupRequest, hiccup_plan
    from jitterlab.measure.runner import run_plan

    request = HiccupRequest(**{f.name: getattr(args, f.name) for f in fields(HiccupRequest)})
    plan = hiccup_plan(request)
    check_report(args)
    outcome = run_plan(plan, writable_store(args), warn)
    for run in outcome.runs:
        per_cpu = hiccup_per_cpu(run)
        info = run.meta["hiccup"]
        if args.json:
            print_json(
                {
                    "context": command_context([run]),
                    "id": run.id,
                    "threshold_ns": info["threshold_ns"],
                    "per_cpu": per_cpu,
                }
            )
            continue
        note(
            f"stored {run.id}: interruptions longer than {format_ns(info['threshold_ns'])} "
            f"({info['threshold_mode']}) over {format_ns(run.config['duration_ns'])}"
        )
        print_context([run])
        print(render(HICCUP_HEADERS, hiccup_rows(per_cpu), "r" * len(HICCUP_HEADERS)))
        out, unavailable = attribution_text(spike_attribution(run))
        if out:
            print(out)
        if unavailable:
            note(unavailable)
    write_runs_report(outcome.runs, args.report, f"jitterlab hiccup on {platform.node()}")
    return outcome.exit_code


COMMANDS = {"doctor": cmd_doctor, "hiccup": cmd_hiccup}
