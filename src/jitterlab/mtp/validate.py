"""``mtp validate``: synthetic videos and sensor logs with known latency, analysed, errors
and outcomes tabulated.

The video matrix covers what the thesis' method gets wrong or leaves out: frame rates (30,
60, 240 fps), latencies (0, 8.3, 33.3, 100 ms), noise, a 15 % third harmonic, ±30 %
variable frame rate, the rendered object lost for 1 s, a rolling shutter with and without
its correction, a sample-and-hold display, the KCF tracker; and what issue 27 found wrong:
both objects on one row with a 15 % and 30 % harmonic (automatic regions that took in the
other object's path), a latency above half a period with and without the motion's start,
a latency beyond ``--max-latency``, a sample-and-hold display filmed with motion blur at
60, 120 and 240 fps, a file cut short, noisy H.264 at a phone's bitrate. Some cases must be
refused or marked untrusted: their expected outcome is part of the check. The sensor-log
matrix round-trips every option of ``synth-log`` through ``ingest``.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import make_dir, write_file
from jitterlab.mtp import analyze, framelog, synth
from jitterlab.mtp.estimate import ESTIMATORS, HEADLINE


@dataclass(frozen=True)
class Case:
    name: str
    group: str  # the target this case is held to
    spec: synth.SynthSpec
    options: analyze.AnalyzeOptions = dataclasses.field(default_factory=analyze.AnalyzeOptions)
    expect: str = "ok"  # ok, partial, untrusted:<code>, refused:<words of the message>
    suffix: str = ".mp4"
    cut: float = 1.0  # keep this share of the file's bytes (a file cut short)


# group -> (mean |error| limit, max |error| limit) in ms, on the headline estimator
TARGETS: dict[str, tuple[float, float]] = {
    "centroid": (0.1, 0.25),
    "hold+blur": (0.1, 0.25),
    "kcf": (1.0, 1.0),
    "hard": (0.5, 0.5),
}
MIN_FRAMES_PER_SECOND = 300.0  # 640×480, faster than real time for a 240 fps camera


def cases(quick: bool) -> list[Case]:
    size = (320, 240) if quick else (640, 480)
    duration = 6.0 if quick else 10.0
    base = synth.SynthSpec(width=size[0], height=size[1], duration_s=duration, noise=2.0)
    rates = (60.0, 240.0) if quick else (30.0, 60.0, 240.0)
    latencies = (0.0, 33.3) if quick else (0.0, 8.3, 33.3, 100.0)
    out = []
    for i, (fps, latency) in enumerate((f, lat) for f in rates for lat in latencies):
        group = "centroid" if fps >= 60 else "centroid-30fps"
        spec = dataclasses.replace(base, fps=fps, latency_s=latency / 1e3, seed=i)
        out.append(Case(f"{fps:g} fps, {latency:g} ms", group, spec))
    hard = dataclasses.replace(base, fps=60.0, latency_s=0.0333, seed=100)
    readout = 0.020
    shutter = dataclasses.replace(hard, rolling_shutter_s=readout, seed=104)
    slow = dataclasses.replace(hard, freq_hz=0.8, latency_s=0.7, seed=110)
    wide = analyze.AnalyzeOptions(max_latency_s=1.0)
    out += [
        Case("noise σ=8", "centroid", dataclasses.replace(hard, noise=8.0, seed=101)),
        Case("15 % 3rd harmonic", "hard", dataclasses.replace(hard, harmonic=0.15, seed=102)),
        Case("±30 % VFR", "hard", dataclasses.replace(hard, vfr=0.30, seed=103)),
        Case("lost 1 s", "hard", dataclasses.replace(hard, lose=(2.0, 3.0), seed=105)),
        Case(
            "rolling shutter 20 ms, corrected",
            "hard",
            shutter,
            analyze.AnalyzeOptions(rolling_shutter_s=readout),
        ),
        Case("rolling shutter 20 ms, not corrected", "shown", shutter),
        Case("90 Hz display (hold)", "centroid", dataclasses.replace(hard, display_hz=90.0, seed=106)),
        Case("KCF 60 fps", "kcf", dataclasses.replace(hard, seed=107), analyze.AnalyzeOptions(tracker="kcf")),
        # issue 27 item 1: automatic regions beside each other
        *(
            Case(
                f"same row, {h:.0%} 3rd harmonic",
                "hard",
                dataclasses.replace(hard, layout="same-row", harmonic=h, seed=111 + k),
            )
            for k, h in enumerate((0.15, 0.30))
        ),
        # item 2: a latency above half a period (625 ms at 0.8 Hz)
        Case(
            "700 ms at 0.8 Hz, from the release",
            "hard",
            dataclasses.replace(slow, release_s=1.0, duration_s=duration + 2),
            wide,
        ),
        Case("700 ms at 0.8 Hz, no release", "shown", slow, wide, expect="untrusted:latency-ambiguous"),
        Case(
            "33.3 ms, --max-latency 10ms",
            "shown",
            dataclasses.replace(hard, seed=113),
            analyze.AnalyzeOptions(max_latency_s=0.010),
            expect="refused:beyond the search limit",
        ),
        Case(
            "latency drifts 33→43 ms",
            "shown",
            dataclasses.replace(hard, drift_s=0.010, seed=114),
            expect="untrusted:windows-disagree",
        ),
        # item 3: a sample-and-hold display filmed with the shutter open half a frame
        *(
            Case(
                f"90 Hz hold + blur, {fps:g} fps",
                "hold+blur",
                dataclasses.replace(hard, fps=fps, display_hz=90.0, shutter=0.5, seed=120 + k),
            )
            for k, fps in enumerate((60.0, 120.0, 240.0))
        ),
        # item 5: a file cut short
        Case(
            "MKV cut at 60 %",
            "hard",
            dataclasses.replace(hard, duration_s=duration + 2, seed=115),
            expect="partial",
            suffix=".mkv",
            cut=0.6,
        ),
    ]
    if not quick:
        kcf240 = dataclasses.replace(hard, fps=240.0, latency_s=0.0083, seed=108)
        out.append(Case("KCF 240 fps", "kcf", kcf240, analyze.AnalyzeOptions(tracker="kcf")))
        # item 4: noisy H.264 at a phone's bitrate (CABAC, B-frames): the decoder's worst case
        phone = dataclasses.replace(
            base, fps=240.0, latency_s=0.0333, noise=6.0, preset="medium", bitrate_kbps=12_000, seed=130
        )
        out.append(Case("phone-like H.264, 240 fps, σ=6, 12 Mbit/s", "centroid", phone))
    return out


@dataclass
class Outcome:
    case: Case
    expected_ms: float
    errors_ms: dict[str, float]  # empty when refused
    window_sd_ms: float
    frames_per_second: float
    status: str  # ok, partial, untrusted:<codes>, refused:<message>

    @property
    def as_expected(self) -> bool:
        want = self.case.expect
        if want.startswith("refused:"):
            return self.status.startswith("refused:") and want.split(":", 1)[1] in self.status
        if want.startswith("untrusted:"):
            return self.status.startswith("untrusted:") and want.split(":", 1)[1] in self.status
        return self.status == want


def _cut(path: Path, share: float) -> Path:
    cut = path.with_name(f"{path.stem}-cut{path.suffix}")
    data = path.read_bytes()
    write_file(cut, data[: int(len(data) * share)])
    return cut


def _status(result: analyze.Analysis) -> str:
    if result.untrusted:
        return "untrusted:" + ",".join(c["code"] for c in result.untrusted)
    return "partial" if result.truncated else "ok"


def run(
    quick: bool, keep: Path | None = None, progress: Callable[[str], None] = lambda _: None
) -> list[Outcome]:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="jitterlab-mtp-") as scratch:
        folder = keep or Path(scratch)
        make_dir(folder)
        made: dict[tuple[synth.SynthSpec, str], tuple[Path, dict[str, Any]]] = {}
        all_cases = cases(quick)
        for i, case in enumerate(all_cases):
            progress(f"[{i + 1}/{len(all_cases)}] {case.name}")
            key = (case.spec, case.suffix)
            if key not in made:
                path = folder / f"case{i:02d}{case.suffix}"
                made[key] = (path, synth.write_video(path, case.spec))
            path, truth = made[key]
            if case.cut < 1:
                path = _cut(path, case.cut)
            expected = float(truth["expected_ms"])
            try:
                result = analyze.analyze(path, case.options)
            except JitterlabError as e:
                outcomes.append(Outcome(case, expected, {}, math.nan, math.nan, f"refused:{e}"))
                continue
            outcomes.append(
                Outcome(
                    case,
                    expected,
                    {k: v * 1e3 - expected for k, v in result.estimates.latency_s.items()},
                    float(np.std(result.window_latencies, ddof=1)) * 1e3
                    if len(result.window_latencies) > 1
                    else 0.0,
                    result.frames_per_second,
                    _status(result),
                )
            )
    return outcomes


HEADERS = ["case", "target", "truth", *(f"{e} err" for e in ESTIMATORS), "windows SD", "frames/s", "outcome"]


def _outcome_cell(o: Outcome) -> str:
    shown = o.status if len(o.status) < 48 else o.status[:45] + "..."
    return shown + ("" if o.as_expected else f"  (expected {o.case.expect})")


def rows(outcomes: list[Outcome]) -> list[list[str]]:
    return [
        [
            o.case.name,
            o.case.group,
            f"{o.expected_ms:.3f} ms",
            *(f"{o.errors_ms[e]:+.4f}" if o.errors_ms else "-" for e in ESTIMATORS),
            f"{o.window_sd_ms:.4f}" if o.errors_ms else "-",
            f"{o.frames_per_second:.0f}" if o.errors_ms else "-",
            _outcome_cell(o),
        ]
        for o in outcomes
    ]


def verdicts(outcomes: list[Outcome], quick: bool) -> list[tuple[bool, str]]:
    """(met, line) per target: mean and max |error| of the headline per group, the expected
    outcomes (refused, untrusted, partial), speed."""
    out = []
    for group, (mean_limit, max_limit) in TARGETS.items():
        errors = np.abs([o.errors_ms[HEADLINE] for o in outcomes if o.case.group == group and o.errors_ms])
        if len(errors) == 0:
            continue
        mean, worst = float(errors.mean()), float(errors.max())
        met = mean <= mean_limit and worst <= max_limit
        out.append(
            (
                met,
                f"{group}: mean |error| {mean:.4f} ms (≤ {mean_limit}), max {worst:.4f} ms (≤ {max_limit}), {len(errors)} cases",
            )
        )
    unexpected = [o.case.name for o in outcomes if not o.as_expected]
    out.append(
        (
            not unexpected,
            "outcomes: every case analysed, refused or marked as expected"
            if not unexpected
            else f"outcomes: not as expected for {', '.join(unexpected)}",
        )
    )
    large = [
        o
        for o in outcomes
        if o.case.spec.width >= 640 and o.case.spec.fps >= 240 and o.case.group == "centroid" and o.errors_ms
    ]
    if large:
        speed = min(o.frames_per_second for o in large)
        out.append(
            (
                speed >= MIN_FRAMES_PER_SECOND,
                f"speed: {speed:.0f} frames/s analysed at 640x480, 240 fps, phone-like H.264 included (≥ {MIN_FRAMES_PER_SECOND:.0f})",
            )
        )
    elif quick:
        out.append((True, "speed: not checked by --quick (it uses 320x240 videos)"))
    return out


# --- sensor logs: every option of synth-log through ingest -----------------------------


@dataclass(frozen=True)
class LogCase:
    name: str
    spec: framelog.LogSpec
    rig: framelog.Rig = field(default_factory=framelog.Rig)


@dataclass
class LogOutcome:
    case: LogCase
    frames: int
    truth_ms: float  # the mean of the true latencies
    measured_ms: float  # what ingest gives
    quantised_error_ms: float  # against the truth quantised to whole steps: exactly 0
    limit_ms: float  # the measured mean may differ from the true one by the steps' rounding

    @property
    def met(self) -> bool:
        return abs(self.quantised_error_ms) <= 1e-6 and abs(self.measured_ms - self.truth_ms) <= self.limit_ms


def log_cases(quick: bool) -> list[LogCase]:
    base = framelog.LogSpec(duration_s=10.0 if quick else 30.0)
    return [
        LogCase("defaults (56 ms, 90 Hz, 400 steps, 2 rev/s)", base),
        LogCase("--offset-steps 7 --modulus 256", base, framelog.Rig(offset_steps=7, modulus=256)),
        LogCase("--offset-steps -5", base, framelog.Rig(offset_steps=-5)),
        LogCase("--steps-per-rev 200 --rev-per-s 3", base, framelog.Rig(steps_per_rev=200, rev_per_s=3.0)),
        LogCase(
            "--fps 144 --latency 20ms --jitter 2ms",
            dataclasses.replace(base, fps=144.0, latency_s=0.02, jitter_s=0.002),
        ),
        LogCase("--drop-every 16 --drop-frames 2", dataclasses.replace(base, drop_every=16, drop_frames=2)),
        LogCase("--load 0.02 --spike 10ms", dataclasses.replace(base, load=0.02, spike_s=0.010, seed=3)),
        LogCase("--runup 4s (ingest --warmup 4s)", dataclasses.replace(base, runup_s=4.0, seed=4)),
        LogCase("--tick-wrap 16777216", dataclasses.replace(base, tick_wrap=1 << 24, seed=5)),
        LogCase("--raw (motor and photodiode logs)", dataclasses.replace(base, seed=6)),
    ]


def run_logs(quick: bool) -> list[LogOutcome]:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="jitterlab-mtp-logs-") as scratch:
        for i, case in enumerate(log_cases(quick)):
            folder = Path(scratch) / f"log{i:02d}"
            raw = case.name.startswith("--raw")
            truth = framelog.write_synth_logs(folder, case.spec, case.rig, raw=raw)
            rig = dataclasses.replace(case.rig, warmup_s=case.spec.runup_s, tick_wrap=case.spec.tick_wrap)
            if raw:
                result = framelog.from_raw_logs(folder / "motor.csv", folder / "photo.csv", None, rig)
            else:
                result = framelog.from_frames_csv(folder / "frames.csv", rig)
            measured = float(result.latency_ns.mean()) / 1e6
            outcomes.append(
                LogOutcome(
                    case,
                    len(result.latency_ns),
                    truth["latency_mean_ms"],
                    measured,
                    measured - truth["quantised_mean_ms"],
                    4 * truth["quantised_se_ms"],
                )
            )
    return outcomes


LOG_HEADERS = [
    "synth-log → ingest",
    "frames",
    "true mean",
    "measured",
    "error",
    "limit",
    "vs quantised truth",
]


def log_rows(outcomes: list[LogOutcome]) -> list[list[str]]:
    return [
        [
            o.case.name,
            str(o.frames),
            f"{o.truth_ms:.4f} ms",
            f"{o.measured_ms:.4f} ms",
            f"{o.measured_ms - o.truth_ms:+.4f}",
            f"±{o.limit_ms:.4f}",
            f"{o.quantised_error_ms:+.1e}" + ("" if o.met else "  MISSED"),
        ]
        for o in outcomes
    ]


def validation_json(
    outcomes: list[Outcome], logs: list[LogOutcome], verdicts: list[tuple[bool, str]]
) -> dict[str, Any]:
    """``mtp validate --json`` (docs/schemas/mtp-validate.schema.json): every case, every log
    case and every target's verdict."""
    return {
        "cases": [
            {
                "case": o.case.name,
                "target": o.case.group,
                "expected_ms": o.expected_ms,
                "errors_ms": o.errors_ms or None,
                "window_sd_ms": o.window_sd_ms if o.errors_ms else None,
                "frames_per_second": o.frames_per_second if o.errors_ms else None,
                "outcome": o.status,
                "expected_outcome": o.case.expect,
            }
            for o in outcomes
        ],
        "logs": [
            {
                "case": o.case.name,
                "frames": o.frames,
                "true_mean_ms": o.truth_ms,
                "measured_mean_ms": o.measured_ms,
                "limit_ms": o.limit_ms,
                "quantised_error_ms": o.quantised_error_ms,
            }
            for o in logs
        ],
        "targets": [{"met": met, "detail": line} for met, line in verdicts],
    }


def log_verdict(outcomes: list[LogOutcome]) -> tuple[bool, str]:
    missed = [o.case.name for o in outcomes if not o.met]
    if missed:
        return False, f"sensor logs: round trip off for {', '.join(missed)}"
    return True, (
        f"sensor logs: {len(outcomes)} option sets round-trip (quantised truth exactly; the true mean "
        "within 4 standard errors of the steps' rounding)"
    )
