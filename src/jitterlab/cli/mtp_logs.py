"""``jitterlab mtp ingest`` and ``mtp synth-log``: per-frame sensor logs (seed 003 §4.3)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitterlab.cli.common import (
    deprecated_alias,
    duration,
    integer,
    millis,
    non_negative_int,
    note,
    number,
    positive_float,
    positive_int,
    print_context,
    print_json,
    probability,
    seconds,
    seed,
    store_option,
    warn,
    writable_store,
)
from jitterlab.core.options import DAY_S

if TYPE_CHECKING:  # the logs' reader brings numpy and pandas: imported to run
    from jitterlab.mtp import framelog


def _rig_options(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--steps-per-rev", type=integer(1, 1_000_000), default=400, help="motor steps per revolution (400)"
    )
    q.add_argument("--rev-per-s", type=number(0.01, 1000), default=2.0, help="revolutions per second (2)")
    q.add_argument(
        "--modulus", type=integer(2, 1_000_000), default=200, help="codes are sent modulo this (200)"
    )
    q.add_argument(
        "--offset-steps",
        type=integer(-1_000_000_000, 1_000_000_000),
        default=0,
        help="constant code offset of the rig's calibration",
    )


def add_parsers(mtp: Any) -> None:
    q = mtp.add_parser(
        "ingest", help="per-frame latency from sensor logs (frames.csv, or raw motor/photo logs)"
    )
    q.add_argument("frames", type=Path, nargs="?", help="frames.csv: t_us,motor_step,code[,valid]")
    q.add_argument("--motor", type=Path, help="raw log motor.csv: t_ns,step")
    q.add_argument("--photo", type=Path, help="raw log photo.csv: t_ns,code[,valid]")
    q.add_argument(
        "--tracker-log", type=Path, help="raw log tracker.csv: t_ns,qw,qx,qy,qz (checks the angles)"
    )
    deprecated_alias(q, "--tracker", "--tracker-log", type=Path)
    _rig_options(q)
    q.add_argument(
        "--warmup", type=duration(0, DAY_S), default=0.0, help="drop the first seconds (the thesis: 4s)"
    )
    q.add_argument("--tick-wrap", type=integer(2, 2**63), help="the timestamp counter wraps at this value")
    q.add_argument("--condition", help="name of the condition (baseline, jitter, load): the run's variant")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    store_option(q, named=True)
    q = mtp.add_parser("synth-log", help="sensor logs with a known latency series, to check the pipeline")
    q.add_argument("folder", type=Path)
    q.add_argument("--latency", type=millis, default=0.056, help="base latency (56ms)")
    q.add_argument("--duration", type=seconds, default=30.0, help="length of the logs (default 30s)")
    q.add_argument("--fps", type=positive_float, default=90.0, help="display refresh rate (90)")
    q.add_argument("--drop-every", type=non_negative_int, default=0, help="hold the pose every n-th frame")
    q.add_argument("--drop-frames", type=positive_int, default=2, help="... for this many frames (2)")
    q.add_argument(
        "--spike-probability", type=probability, help="probability per frame that a load spike starts"
    )
    deprecated_alias(q, "--load", "--spike-probability", type=probability)
    q.add_argument("--spike", type=millis, default=0.010, help="mean extra latency of a load spike (10ms)")
    q.add_argument("--jitter", type=millis, default=0.0005, help="frame-to-frame SD of the latency (0.5ms)")
    q.add_argument("--raw", action="store_true", help="also write motor.csv, photo.csv and tracker.csv")
    q.add_argument(
        "--runup",
        type=seconds,
        default=0.0,
        help="the motor's run-up, whose codes say nothing (ingest --warmup)",
    )
    q.add_argument(
        "--tick-wrap",
        type=positive_int,
        help="write frames.csv's t_us from a counter that wraps at this value",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the generated data (default 0)")
    _rig_options(q)


def _rig(args: argparse.Namespace) -> framelog.Rig:
    from jitterlab.mtp import framelog

    return framelog.Rig(
        steps_per_rev=args.steps_per_rev,
        rev_per_s=args.rev_per_s,
        modulus=args.modulus,
        offset_steps=args.offset_steps,
        warmup_s=getattr(args, "warmup", 0.0),
        tick_wrap=args.tick_wrap if args.mtp_command == "ingest" else None,
    )


def run(args: argparse.Namespace) -> int:
    from jitterlab.describe.context import command_context
    from jitterlab.measure.runner import run_plan
    from jitterlab.mtp import framelog

    if args.mtp_command == "synth-log":
        spec = framelog.LogSpec(
            latency_s=args.latency,
            duration_s=args.duration,
            fps=args.fps,
            drop_every=args.drop_every,
            drop_frames=args.drop_frames,
            load=args.spike_probability or 0.0,
            spike_s=args.spike,
            jitter_s=args.jitter,
            runup_s=args.runup,
            tick_wrap=args.tick_wrap,
            seed=args.seed,
        )
        truth = framelog.write_synth_logs(args.folder, spec, _rig(args), args.raw)
        note(
            f"wrote {args.folder}/frames.csv{' and raw logs' if args.raw else ''} ({truth['frames']} frames): "
            f"latency {truth['latency_mean_ms']:.2f} ± {truth['latency_sd_ms']:.2f} ms"
        )
        return 0
    store = writable_store(args)
    plan = framelog.plan(args.frames, args.motor, args.photo, args.tracker_log, _rig(args), args.condition)
    outcome = run_plan(plan, store, warn)
    if not outcome.runs:
        return outcome.exit_code
    result, run_ = outcome.results[0], outcome.runs[0]
    summary = framelog.describe_result(result)
    if args.json:
        print_json({"context": command_context([run_])} | summary | {"run": run_.id})
        return 0
    print_context([run_])
    print(
        f"{summary['frames']} frames: {summary['mean_ms']:.2f} ± {summary['sd_ms']:.2f} ms "
        f"(min {summary['min_ms']:.2f}, max {summary['max_ms']:.2f}; resolution {summary['step_ms']:g} ms per step)"
    )
    if summary["dropped_invalid"] or summary["dropped_warmup"]:
        note(
            f"left out: {summary['dropped_invalid']} invalid readings, {summary['dropped_warmup']} warm-up frames"
        )
    if result.tracker:
        t = result.tracker
        print(
            f"tracker: {t['samples']} samples, {t['rev_per_s_seen']:.3f} rev/s seen (rig {t['rev_per_s_rig']:g}); "
            f"the thesis' acos(w) after w ≥ 0 is the half angle: doubled, it is off by at most "
            f"{t['thesis_half_angle_max_error_deg']:.3g}°, undoubled by {t['thesis_uncorrected_max_error_deg']:.3g}°"
        )
    note(f"stored {run_.id}")
    return outcome.exit_code
