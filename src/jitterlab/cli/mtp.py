"""``jitterlab mtp``: motion-to-photon latency from a video or from per-frame sensor logs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from jitterlab.cli import mtp_logs
from jitterlab.cli.common import (
    Parser,
    duration,
    note,
    number,
    print_json,
    seed,
    store_option,
    warn,
    writable_store,
)
from jitterlab.cli.measuring import check_report, write_runs_report
from jitterlab.core.fileio import check_writable_file
from jitterlab.core.options import DAY_S
from jitterlab.core.render import render
from jitterlab.mtp.options import LAYOUTS

EXIT_UNTRUSTED = 3  # the result is stored, but the checks say it cannot be trusted (docs/mtp.md)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not WIDTHxHEIGHT (for example 640x480)") from None
    return w, h


def _span(text: str) -> tuple[float, float]:
    try:
        start, end = (float(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not START:END in seconds (for example 2:3)") from None
    return start, end


READOUT = duration(0, 1.0, unit="ms")  # a frame's readout, a latency: bare numbers are ms
SPAN = duration(0, DAY_S, low_open=True)
FPS = number(1, 100_000, unit="Hz")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mtp", help="motion-to-photon latency: from a video, or from per-frame sensor logs")
    mtp = p.add_subparsers(dest="mtp_command", required=True, parser_class=Parser)
    q = mtp.add_parser("synth", help="a validation video with a known latency (and its truth JSON beside it)")
    q.add_argument("output", type=Path)
    q.add_argument("--fps", type=FPS, default=60.0, help="frames per second of the video (default 60)")
    q.add_argument(
        "--latency", type=READOUT, default=0.050, help="e.g. 33.3ms (a bare number is refused: give a unit)"
    )
    q.add_argument("--duration", type=SPAN, default=10.0, help="length of the video, e.g. 10s (default 10s)")
    q.add_argument("--size", type=_size, default=(640, 480), help="WIDTHxHEIGHT (default 640x480)")
    q.add_argument("--noise", type=number(0, 255), default=2.0, help="sensor noise SD in grey levels")
    q.add_argument(
        "--freq", type=number(0.01, 1000, unit="Hz"), default=1.0, help="motion frequency in Hz (1)"
    )
    q.add_argument("--decay", type=number(0, 1000), default=0.05, help="damping d of e^(-dt), 1/s")
    q.add_argument("--harmonic", type=number(0, 1), default=0.0, help="third-harmonic share (0.15 = 15 %%)")
    q.add_argument("--vfr", type=number(0, 90), default=0.0, help="frame-interval jitter in %% (30 = ±30 %%)")
    q.add_argument(
        "--rolling-shutter", type=READOUT, default=0.0, help="row readout time of a frame, e.g. 20ms"
    )
    q.add_argument("--display-hz", type=FPS, help="sample-and-hold display refresh rate")
    q.add_argument("--lose", type=_span, help="START:END seconds where the rendered object is not shown")
    q.add_argument("--stored-fps", type=FPS, help="claim this rate in the file (a slow-motion file)")
    q.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="apart",
        help="apart (default): the objects on different rows; same-row: side by side, their swings close",
    )
    q.add_argument(
        "--shutter", type=number(0, 1), default=0.0, help="exposure / frame interval (blur; 0: none)"
    )
    q.add_argument("--release", type=SPAN, help="hold the object still until then, then let it go")
    q.add_argument("--drift", type=READOUT, default=0.0, help="the latency grows by this much over the video")
    q.add_argument("--bitrate", type=number(1, 1e7), help="encode at this bitrate in kbit/s (as phones do)")
    q.add_argument(
        "--preset", default="ultrafast", help="libx264 preset (medium: CABAC, B-frames, as phones)"
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the generated data (default 0)")
    q = mtp.add_parser("analyze", help="motion-to-photon latency of a video (stored as a run)")
    q.add_argument("video", type=Path)
    q.add_argument("--roi-physical", help="x,y,w,h of the physical object's region, or auto (default)")
    q.add_argument("--roi-rendered", help="x,y,w,h of the rendered object's region, or auto (default)")
    q.add_argument("--tracker", choices=("centroid", "kcf"), default="centroid")
    q.add_argument("--capture-fps", type=FPS, help="true capture rate of a slow-motion file")
    q.add_argument(
        "--rolling-shutter", type=READOUT, default=0.0, help="the camera's frame readout time, e.g. 15ms"
    )
    q.add_argument("--window", type=SPAN, default=2.5, help="sliding window for latency over time (2.5s)")
    q.add_argument("--step", type=SPAN, help="window step (default a fifth of a window)")
    q.add_argument("--max-latency", type=READOUT, default=0.300, help="search range (default 300ms)")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    q.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="end by writing the HTML report of the run (as `jitterlab report`), the check of the "
        "analysis by eye first (--no-store: that check alone)",
    )
    q.add_argument("--no-store", action="store_true", help="do not store the windows as a run")
    store_option(q, named=True)
    q = mtp.add_parser("validate", help="synthetic videos with known latency: every estimator's error")
    q.add_argument("--quick", action="store_true", help="fewer, smaller videos (for a first check)")
    q.add_argument("--keep", type=Path, help="keep the generated videos in this folder")
    q.add_argument("--json", action="store_true", help="print JSON (machine-readable) instead of text")
    mtp_logs.add_parsers(mtp)


def cmd_mtp(args: argparse.Namespace) -> int:
    if args.mtp_command == "synth":
        return _synth(args)
    if args.mtp_command == "analyze":
        return _analyze(args)
    if args.mtp_command == "validate":
        return _validate(args)
    return mtp_logs.run(args)


def _synth(args: argparse.Namespace) -> int:
    from jitterlab.mtp import synth  # numpy and the video writer: now, not with --help

    check_writable_file(args.output, "output")
    spec = synth.SynthSpec(
        fps=args.fps,
        latency_s=args.latency,
        duration_s=args.duration,
        width=args.size[0],
        height=args.size[1],
        noise=args.noise,
        freq_hz=args.freq,
        decay=args.decay,
        harmonic=args.harmonic,
        vfr=args.vfr / 100,
        rolling_shutter_s=args.rolling_shutter,
        display_hz=args.display_hz,
        lose=args.lose,
        stored_fps=args.stored_fps,
        layout=args.layout,
        shutter=args.shutter,
        release_s=args.release,
        drift_s=args.drift,
        bitrate_kbps=args.bitrate,
        preset=args.preset,
        seed=args.seed,
    )
    truth = synth.write_video(args.output, spec)
    note(
        f"wrote {args.output} ({truth['frames']} frames) and {synth.truth_path(args.output).name}: "
        f"expected latency {truth['expected_ms']:.3f} ms"
    )
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from jitterlab.describe.context import command_context, header_of, source_context
    from jitterlab.mtp import analyze  # numpy, scipy, the tracker: now, not with --help

    store = None if args.no_store else writable_store(args)
    check_report(args)
    options = analyze.AnalyzeOptions(
        roi_physical=args.roi_physical,
        roi_rendered=args.roi_rendered,
        tracker=args.tracker,
        capture_fps=args.capture_fps,
        rolling_shutter_s=args.rolling_shutter,
        window_s=args.window,
        step_s=args.step,
        max_latency_s=args.max_latency,
    )
    if isinstance(analysed := analyze.analyze_and_store(args.video, options, store, warn), int):
        return analysed  # interrupted before anything was stored
    result, run = analysed
    if args.report:  # the shared report of the run, the analysis' own check first
        from jitterlab.mtp import report  # matplotlib only when a report is asked for

        if run:
            title = f"jitterlab mtp analyze {args.video.name}"
            write_runs_report([run], args.report, title, report.section(result, run.id))
        else:  # --no-store: the check alone
            report.write(result, args.report, None)
            note(f"wrote {args.report}")
    code = 0 if result.trusted else EXIT_UNTRUSTED
    s = analyze.summary(result)
    context = command_context([run]) if run else source_context(args.video.resolve(), "video")
    if args.json:
        print_json({"context": context} | s | {"run": run.id if run else None})
        return code
    mark = "" if result.trusted else f"  UNTRUSTED ({', '.join(c['code'] for c in result.untrusted)})"
    print(
        f"{header_of([context])}\nmotion-to-photon latency: {s['latency_ms']:.3f} ms{mark}  "
        f"({args.video.name}, {s['frames']} frames, {s['freq_hz']:.3f} Hz)"
    )
    print(render(["estimator", "latency", "vs headline"], analyze.headline_rows(result), "lrr"))
    windows = s["windows"]
    print(
        f"over time: {windows['count']} windows of {windows['window_s']:g} s, "
        f"mean {windows['mean_ms']:.3f} ms, SD {windows['sd_ms']:.3f} ms"
    )
    print(f"period branch: {s['ambiguity']['note']}")
    for cause in result.untrusted:
        print(f"untrusted: {cause['detail']}; fix: {cause['fix']}")
    passes = f", decoded twice: {result.second_pass}" if result.second_pass else ""
    note(f"analysed {s['frames']} frames at {s['frames_per_second_analysed']:.0f} frames/s{passes}")
    if run:
        partial = " as partial" if result.truncated else ""
        untrusted = ", marked untrusted" if not result.trusted else ""
        note(f"stored {run.id}{partial}{untrusted} (describe, report and compare read it)")
    return code


def _validate(args: argparse.Namespace) -> int:
    from jitterlab.mtp import validate

    outcomes = validate.run(args.quick, args.keep, progress=note)
    logs = validate.run_logs(args.quick)
    verdicts = [*validate.verdicts(outcomes, args.quick), validate.log_verdict(logs)]
    if args.json:
        print_json(validate.validation_json(outcomes, logs, verdicts))
    else:
        print("errors in ms against the truth (analysed − expected):")
        print(render(validate.HEADERS, validate.rows(outcomes), "llrrrrrrl"))
        print()
        print(render(validate.LOG_HEADERS, validate.log_rows(logs), "lrrrrrr"))
        for met, line in verdicts:
            print(f"{'met   ' if met else 'MISSED'} {line}")
    return 0 if all(met for met, _ in verdicts) else 1


COMMANDS = {"mtp": cmd_mtp}
