"""``mtp analyze``: a video in, motion-to-photon latency out, stored as a run.

Decode once (each frame's own timestamp; the first seconds are kept to find the regions
and backgrounds, then tracked with the rest) → regions (given, or from the temporal
variance, kept off the other object's path) → track each object → rolling-shutter
correction of each sample's time → PCA to 1-D → the correlation against lag over the
search range and half a period beyond it (signs, the period branch, whether the motion
tells the branches apart) → three estimators on the whole video → the cross-correlation
estimator in sliding windows, which become the run's samples (one per window) → the checks
that the result is what the noise allows (``untrusted`` otherwise).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.progress import ProgressBar
from jitterlab.core.warnings import CodedWarning, Warn
from jitterlab.measure.runner import Plan, analysis_plan, run_plan
from jitterlab.mtp import estimate as est
from jitterlab.mtp import tracking, video
from jitterlab.mtp.storing import store_latencies
from jitterlab.store.runs import ResultsStore, Run

LOST_REFUSED, LOST_WARNED = 0.20, 0.02  # share of frames an object may be lost
FREQUENCY_TOLERANCE = 0.01
PREFIX_S = 2.5  # regions and backgrounds come from the first seconds of the video ...
PREFIX_BYTES = 384 << 20  # ... or as many of their frames as this much memory holds
# A rival period branch fits as well as the best when its unexplained variance (1 − r²) is
# less than this many times the best one's: the motion does not tell them apart. (Periodic
# synthetic motion gives ratios of 0.95–2.4 between branches, a motion onset 10⁶.)
BRANCH_RATIO = 10.0
# The checks of the result: an estimator, or the windows, further from the headline than
# this many SDs of what tracking noise alone gives (docs/mtp.md, "When a result is untrusted").
ESTIMATOR_SDS = 6.0
WINDOW_SDS = 6.0
NOISE_FLOOR_PX = 1e-3  # a tracked position is never known better than this


@dataclass(frozen=True)
class AnalyzeOptions:
    roi_physical: str | None = None
    roi_rendered: str | None = None
    tracker: str = "centroid"
    capture_fps: float | None = None
    rolling_shutter_s: float = 0.0
    window_s: float = 2.5
    step_s: float | None = None
    max_latency_s: float = 0.300


@dataclass
class Checks:
    """What the noise allows, and how far the result is from it."""

    noise_px: dict[str, float]  # tracking noise SD per object
    delay_sd_s: float  # SD of the whole-video delay from tracking noise alone
    fit_deviation_s: dict[str, float]  # each sine fit against itself on an exact delayed copy
    estimator_sds: dict[str, float]  # |deviation| in units of delay_sd
    window_sds: float  # RMS of (window − mean) / its own noise SD
    repeat_s: float  # the motion repeats every half period (with the axis sign unknown)
    branches: str  # "waveform": the motion tells the branches apart; "bound": --max-latency does
    rivals_s: list[float]  # other lags within --max-latency that match as well (ambiguous)


@dataclass
class Analysis:
    """Everything an analysed video yields: the numbers, and what the report draws."""

    path: Path
    info: video.VideoInfo
    options: AnalyzeOptions
    regions: dict[str, tracking.Region]
    auto_regions: bool
    times: np.ndarray
    tracks: dict[str, tracking.Track]
    signals: dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (t, x), NaN where lost
    estimates: est.Estimates
    windows: est.Windows
    lost: dict[str, float]
    seconds: float
    snapshot: np.ndarray
    variance: np.ndarray | None
    checks: Checks
    second_pass: str = ""  # why the video was decoded a second time ("" when once was enough)
    truncated: str = ""  # why the video was cut short ("" when it was not)
    warnings: list[dict[str, str]] = field(default_factory=list)
    untrusted: list[dict[str, str]] = field(default_factory=list)  # each code, detail, fix

    @property
    def frames_per_second(self) -> float:
        return len(self.times) / self.seconds if self.seconds else 0.0

    @property
    def window_centres(self) -> np.ndarray:
        return self.windows.centres_s

    @property
    def window_latencies(self) -> np.ndarray:
        return self.windows.latencies_s

    @property
    def trusted(self) -> bool:
        return not self.untrusted


# --- decoding once -------------------------------------------------------------------


class _Frames:
    """One pass over the video: the first seconds are kept (copies) to find the regions and
    backgrounds before tracking starts; every frame is tracked once; a thin sample of the
    whole video is kept to check, at the end, that the first seconds showed the whole paths."""

    def __init__(self, path: Path, info: video.VideoInfo, scale: float) -> None:
        self.decoded = video.Decoded()
        self.source = video.frames(path, scale, self.decoded)
        self.prefix: list[tuple[float, np.ndarray]] = []
        budget = max(16, PREFIX_BYTES // max(1, info.width * info.height))
        for t, luma in self.source:
            self.prefix.append((t, luma.copy()))
            if len(self.prefix) >= budget or (t >= PREFIX_S and len(self.prefix) >= 16):
                break
        expected = max(info.frames, len(self.prefix))
        self.every = max(1, expected // tracking.MAX_SAMPLED_FRAMES)
        self.sample: list[np.ndarray] = []
        self.count = 0

    def prefix_stack(self) -> np.ndarray:
        every = max(1, len(self.prefix) // tracking.MAX_SAMPLED_FRAMES)
        return np.stack([luma for _, luma in self.prefix[::every]])

    def all(self, bar: ProgressBar) -> Iterator[tuple[float, np.ndarray]]:
        for t, luma in itertools.chain(self.prefix, self.source):
            if self.count % self.every == 0:
                self.sample.append(luma.copy())
                if len(self.sample) > 2 * tracking.MAX_SAMPLED_FRAMES:
                    self.sample, self.every = self.sample[::2], self.every * 2
            if self.count % 32 == 0:
                bar.update(self.count)
            self.count += 1
            yield t, luma
        self.prefix = []  # the first seconds are tracked: let them go


def _given_regions(options: AnalyzeOptions, w: int, h: int) -> dict[str, tracking.Region] | None:
    given = (options.roi_physical, options.roi_rendered)
    if all(r and r != "auto" for r in given):
        return {
            "physical": tracking.parse_region(str(options.roi_physical), w, h, "--roi-physical"),
            "rendered": tracking.parse_region(str(options.roi_rendered), w, h, "--roi-rendered"),
        }
    if any(r and r != "auto" for r in given):
        raise JitterlabError("give both --roi-physical and --roi-rendered, or neither (auto)")
    return None


def _auto_regions(motion: tracking.Motion, w: int, h: int) -> tuple[dict[str, tracking.Region], bool]:
    (first, second), cut = tracking.motion_regions(motion, w, h)
    # which is which is decided by the lag later (the rendered one follows)
    return {"physical": first, "rendered": second}, cut


def _regions_hold_paths(regions: dict[str, tracking.Region], motion: tracking.Motion) -> bool:
    """Whether regions found on the first seconds still hold each object's whole path, and
    nothing of the other's, as the whole video shows them."""
    if len(motion.paths) < 2:
        return False
    (_, a), (_, b) = motion.paths[0], motion.paths[1]
    for own, other in ((a, b), (b, a)):
        holders = [
            r for r in regions.values() if tracking.exclude_path(r, own, other) == r and _inside(own, r)
        ]
        if not holders:
            return False
    return True


def _inside(inner: tracking.Region, outer: tracking.Region) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def _signal(
    times: np.ndarray, track: tracking.Track, readout_s: float, height: int
) -> tuple[np.ndarray, np.ndarray]:
    """(sample times, 1-D position): a rolling shutter reads row y at t + readout·y/H."""
    t = times + readout_s * np.nan_to_num(track.y) / height if readout_s else times.copy()
    x = tracking.project(track)
    order = np.argsort(t, kind="stable")  # a row-time correction may swap neighbouring frames
    return t[order], x[order]


ONSET_SHARE = 0.05  # an object has started to move once it is this share of its range away
ONSET_MARGIN_S = 0.25  # the still part kept before the first onset (the onset stays whole)
STILL_LEAD_S = 1.0  # a still lead-in shorter than this is left in


def _from_motion_start(
    signals: dict[str, tuple[np.ndarray, np.ndarray]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Both signals from just before the first of the two objects starts to move.

    A pendulum held before its release is a long still part: its step dominates the
    spectrum and the sine fits (a 1 Hz motion held for 2.5 s of 6 s came out at 0.15 Hz and
    was refused as "--window shorter than one period"). The onset itself stays in: it is
    what tells the period branches apart."""
    onsets = []
    for t, x in signals.values():
        ok = np.isfinite(x)
        tv, xv = t[ok], x[ok]
        if len(xv) < 16:
            return signals
        lo, hi = np.percentile(xv, [1, 99])
        moved = np.flatnonzero(np.abs(xv - np.median(xv[:5])) > ONSET_SHARE * (hi - lo))
        if len(moved) == 0:
            return signals
        onsets.append(float(tv[moved[0]]))
    start = min(onsets) - ONSET_MARGIN_S
    if start - min(float(t[0]) for t, _ in signals.values()) < STILL_LEAD_S:
        return signals
    return {name: (t[t >= start], x[t >= start]) for name, (t, x) in signals.items()}


def _track_all(
    frames: Iterable[tuple[float, np.ndarray]],
    trackers: dict[str, Any],
    label: str,
    total: int,
) -> tuple[np.ndarray, dict[str, tracking.Track]]:
    bar = ProgressBar(label, total, unit=" frames")
    try:
        return tracking.track(frames, trackers)
    finally:
        bar.close()


def analyze(path: Path, options: AnalyzeOptions, warn: Warn = lambda _: None) -> Analysis:
    """Analyse ``path``; :class:`JitterlabError` with one line for every unusable input."""
    if options.tracker not in ("centroid", "kcf"):
        raise JitterlabError(f"--tracker is centroid or kcf, not '{options.tracker}'")
    if options.window_s <= 0 or options.max_latency_s <= 0:
        raise JitterlabError("--window and --max-latency must be greater than 0")
    started = time.monotonic()
    info = video.probe(path)
    scale = video.time_scale(info, options.capture_fps)
    given = _given_regions(options, info.width, info.height)
    source = _Frames(path, info, scale)
    if len(source.prefix) < 16:
        raise JitterlabError(
            f"{path}: only {len(source.prefix)} frames decoded; a latency needs several periods of motion"
        )
    stack = source.prefix_stack()
    bar = ProgressBar(f"tracking {path.name}", max(info.frames, len(source.prefix)), unit=" frames")
    second_pass = ""
    try:
        regions, cut = (
            (given, False) if given else _auto_regions(tracking.find_motion(stack), info.width, info.height)
        )
        trackers = tracking.make_trackers(regions, stack, options.tracker)
    except JitterlabError:
        # nothing (or one thing) moves in the first seconds: sample the whole video first
        second_pass = "the first seconds showed too little motion to find the objects"
        for _ in source.all(bar):
            pass
    try:
        if not second_pass:
            times, tracks = tracking.track(source.all(bar), trackers)
    finally:
        bar.close()
    # the first seconds stood in for the whole video: check that against a sample of it
    full = np.stack(source.sample) if len(source.sample) >= 2 else stack
    whole = tracking.find_motion(full)
    if given:
        tracking.check_given_regions(whole, regions)
    elif second_pass or not _regions_hold_paths(regions, whole):
        regions, cut = _auto_regions(whole, info.width, info.height)
        second_pass = second_pass or "the first seconds did not show the objects' whole paths"
    if not second_pass and not tracking.backgrounds_hold(trackers, full):
        second_pass = "an object rested in its region during the first seconds"
    if second_pass:
        stack = full
        trackers = tracking.make_trackers(regions, stack, options.tracker)
        times, tracks = _track_all(
            video.frames(path, scale), trackers, f"tracking {path.name} again", source.count
        )
    warnings: list[dict[str, str]] = []

    def warning(code: str, detail: str) -> None:
        w = CodedWarning(code, detail)
        warnings.append(w.as_dict())
        warn(w)

    truncated = video.truncation(info, source.decoded)
    if truncated:
        warning("video-truncated", truncated + "; the result covers the decoded part (stored as partial)")
    if cut:
        warning(
            "regions-shrunk",
            "an automatic region was cut back so that it does not take in the other object's path",
        )
    lost = {name: float(track.lost.mean()) for name, track in tracks.items()}
    for name, share in lost.items():
        if share > LOST_REFUSED:
            raise JitterlabError(
                f"the {name} object was lost in {share:.0%} of the frames (more than {LOST_REFUSED:.0%}); "
                "give a larger region or improve its contrast"
            )
        if share > LOST_WARNED:
            warning("object-lost", f"the {name} object was lost in {share:.1%} of the frames (left out)")
    signals = {
        name: _signal(times, track, options.rolling_shutter_s, info.height) for name, track in tracks.items()
    }
    result = _estimate(_from_motion_start(signals), options, auto=given is None)
    if result.swapped:
        regions = {"physical": regions["rendered"], "rendered": regions["physical"]}
        tracks = {"physical": tracks["rendered"], "rendered": tracks["physical"]}
        lost = {"physical": lost["rendered"], "rendered": lost["physical"]}
    analysis = Analysis(
        path=path,
        info=info,
        options=options,
        regions=regions,
        auto_regions=given is None,
        times=times,
        tracks=tracks,
        signals=result.signals,
        estimates=result.estimates,
        windows=result.windows,
        lost=lost,
        seconds=time.monotonic() - started,
        snapshot=stack[len(stack) // 2],
        variance=None if given else whole.std,
        checks=result.checks,
        second_pass=second_pass,
        truncated=truncated,
        warnings=warnings,
    )
    for cause in _untrusted(analysis):
        analysis.untrusted.append(cause)
        warning(cause["code"], f"{cause['detail']}: {cause['fix']}")
    return analysis


# --- estimating ---------------------------------------------------------------------


@dataclass
class _Result:
    signals: dict[str, tuple[np.ndarray, np.ndarray]]
    estimates: est.Estimates
    windows: est.Windows
    checks: Checks
    swapped: bool


def _estimate(
    signals: dict[str, tuple[np.ndarray, np.ndarray]], options: AnalyzeOptions, auto: bool
) -> _Result:
    (tp, xp), (tr, xr) = signals["physical"], signals["rendered"]
    f0 = est.dominant_frequency(tp, xp)
    repeat = 0.5 / f0
    bound = options.max_latency_s
    dt = float(np.median(np.diff(tp)))
    step = dt / 2
    # the correlation against lag, over the search range and half a period beyond it: a
    # better match out there means the latency is above --max-latency
    lags = est.lag_grid(bound + repeat, step)
    physical = est.Interpolated(tp, xp)
    corr = est.scan(tr, xr, physical, lags)
    found = [est.refine_peak(tr, xr, physical, p, step) for p in est.peaks(lags, corr)]
    found.sort(key=lambda p: p.residual)
    inside = [p for p in found if abs(p.lag_s) <= bound]
    outside = [p for p in found if abs(p.lag_s) > bound]
    if not inside or any(p.residual * BRANCH_RATIO < inside[0].residual for p in outside):
        beyond = min(outside, key=lambda p: p.residual) if outside else None
        where = f" (they match best at {abs(beyond.lag_s) * 1e3:.0f} ms)" if beyond else ""
        raise JitterlabError(
            f"the latency is beyond the search limit --max-latency {bound * 1e3:g}ms{where}; raise it"
        )
    best = inside[0]
    rivals = [p.lag_s for p in inside[1:] if p.residual < BRANCH_RATIO * best.residual]
    alike_outside = [p for p in outside if p.residual < BRANCH_RATIO * best.residual]
    sign = 1 if best.r > 0 else -1
    xr = sign * xr
    lag = best.lag_s
    swapped = auto and lag < 0
    if swapped:
        # automatic regions: the rendered object is the one that follows
        (tp, xp), (tr, xr) = (tr, xr), (tp, xp)
        lag, rivals = -lag, [-r for r in rivals]
    if abs(lag) > bound:
        raise JitterlabError(
            f"the latency reaches the search limit --max-latency {bound * 1e3:g}ms; raise it"
        )
    estimates = est.estimate(tp, xp, tr, xr, bound, around_s=lag)
    copy = est.against_copy(tp, xp, tr, xr, estimates.headline_s)
    _check_frequencies(copy)
    if options.window_s * estimates.freq_hz < 1:
        raise JitterlabError(
            f"--window {options.window_s:g}s is shorter than one period ({1 / estimates.freq_hz:.2f} s)"
        )
    noise = (
        max(est.tracking_noise(tp, xp), NOISE_FLOOR_PX),
        max(est.tracking_noise(tr, xr), NOISE_FLOOR_PX),
    )
    windows = est.windowed(
        tp,
        xp,
        tr,
        xr,
        options.window_s,
        options.step_s or options.window_s / 5,
        estimates.headline_s,
        0.24 / estimates.freq_hz,
        noise,
    )
    if len(windows.centres_s) == 0:
        raise JitterlabError(f"the video is shorter than one --window ({options.window_s:g}s) of motion")
    sd = est.delay_sd(tp, xp, tr, xr, estimates.headline_s, noise)
    deviations = copy.deviations_s
    estimator_sds = {k: abs(d) / sd for k, d in deviations.items()}
    w = windows.latencies_s
    window_sds = float(np.sqrt(np.mean(((w - w.mean()) / windows.noise_sd_s) ** 2))) if len(w) > 1 else 0.0
    checks = Checks(
        noise_px={"physical": noise[0], "rendered": noise[1]},
        delay_sd_s=sd,
        fit_deviation_s=deviations,
        estimator_sds=estimator_sds,
        window_sds=window_sds,
        repeat_s=repeat,
        branches="bound" if alike_outside else "waveform",
        rivals_s=rivals,
    )
    return _Result({"physical": (tp, xp), "rendered": (tr, xr)}, estimates, windows, checks, swapped)


def _check_frequencies(copy: est.CopyCheck) -> None:
    """The rendered motion's frequency against that of the physical motion delayed (fitted
    over the same samples, so a motion that starts part-way biases both alike)."""
    fr, fp = copy.freq_hz, copy.copy_freq_hz
    if abs(fp - fr) > FREQUENCY_TOLERANCE * 0.5 * (fp + fr):
        raise JitterlabError(
            f"the two objects move at different frequencies ({fp:.3f} Hz and {fr:.3f} Hz, more than "
            f"{FREQUENCY_TOLERANCE:.0%} apart): they are not the same motion"
        )


REGION_FIX = (
    "look at the regions and traces in --report; if a region takes in something else (the other "
    "object's path, a hand), give --roi-physical and --roi-rendered"
)


def _untrusted(a: Analysis) -> list[dict[str, str]]:
    """The causes for which the headline cannot be trusted, each with the fix (docs/mtp.md)."""
    c = a.checks
    out = []
    noise_ms = c.delay_sd_s * 1e3
    worst = max(c.estimator_sds, key=lambda k: c.estimator_sds[k])
    if c.estimator_sds[worst] > ESTIMATOR_SDS:
        values = ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in a.estimates.latency_s.items())
        out.append(
            {
                "code": "estimators-disagree",
                "detail": f"the estimators disagree ({values}): {worst} is "
                f"{c.estimator_sds[worst]:.0f} noise SDs ({noise_ms:.4f} ms each) from what it gives on an "
                "exact delayed copy of the physical motion",
                "fix": REGION_FIX,
            }
        )
    if c.window_sds > WINDOW_SDS:
        w = a.window_latencies
        out.append(
            {
                "code": "windows-disagree",
                "detail": f"the latency over {a.options.window_s:g} s windows varies by SD "
                f"{float(np.std(w, ddof=1)) * 1e3:.3f} ms, {c.window_sds:.0f} times what tracking noise explains",
                "fix": "if the latency really changed during the video, the windows show how (the headline is "
                "their mean); otherwise " + REGION_FIX,
            }
        )
    if c.rivals_s:
        head = a.estimates.headline_s
        rivals = ", ".join(f"{abs(r) * 1e3:.1f} ms" for r in c.rivals_s)
        out.append(
            {
                "code": "latency-ambiguous",
                "detail": f"the motion repeats every {c.repeat_s * 1e3:.0f} ms (half a period, with the axis "
                f"sign unknown), so {head * 1e3:.1f} ms and {rivals} match equally well within "
                f"--max-latency {a.options.max_latency_s * 1e3:g}ms",
                "fix": f"give --max-latency below {_bound_hint(head, c) * 1e3:.0f}ms if the latency is known to "
                "be shorter, or film the motion from its start (the release of the pendulum), or a slower motion",
            }
        )
    return out


def _bound_hint(head: float, c: Checks) -> float:
    nearest = min(abs(r) for r in c.rivals_s)
    return max(abs(head), nearest) if abs(head) > nearest else 0.5 * (abs(head) + nearest)


def headline_rows(analysis: Analysis) -> list[list[str]]:
    """One row per estimator: latency, and how it differs from the headline."""
    head = analysis.estimates.headline_s
    rows = []
    for name in est.ESTIMATORS:
        value = analysis.estimates.latency_s[name]
        mark = "headline" if name == est.HEADLINE else f"{(value - head) * 1e3:+.3f} ms"
        rows.append([name, f"{value * 1e3:.3f} ms", mark])
    return rows


def ambiguity_note(analysis: Analysis) -> str:
    """One line on what the latency is known modulo, and what decided the branch."""
    c = analysis.checks
    if c.rivals_s:
        return "ambiguous: see the warning"
    if c.branches == "waveform":
        return (
            f"the motion repeats every {c.repeat_s * 1e3:.0f} ms, but not exactly: the branch is "
            "decided by the motion itself"
        )
    bound = analysis.options.max_latency_s * 1e3
    alias = abs(analysis.estimates.headline_s) * 1e3 + c.repeat_s * 1e3
    return (
        f"assumes the latency is below --max-latency {bound:g}ms: the motion repeats every "
        f"{c.repeat_s * 1e3:.0f} ms, so {alias:.0f} ms would look the same (film the motion's start to tell)"
    )


def summary(analysis: Analysis) -> dict[str, Any]:
    """The machine-readable result (``--json`` and the run's ``mtp`` block)."""
    e = analysis.estimates
    w = analysis.window_latencies
    c = analysis.checks
    return {
        "method": "video-sine",
        "video": str(analysis.path.resolve()),
        "latency_ms": e.headline_s * 1e3,
        "headline": est.HEADLINE,
        "trust": "trusted" if analysis.trusted else "untrusted",
        "untrusted": analysis.untrusted,
        "estimators_ms": {k: v * 1e3 for k, v in e.latency_s.items()},
        "spread_ms": e.spread_s * 1e3,
        "freq_hz": e.freq_hz,
        "decay_per_s": e.fits["joint"].decay,
        "windows": {
            "window_s": analysis.options.window_s,
            "step_s": analysis.options.step_s or analysis.options.window_s / 5,
            "count": len(w),
            "mean_ms": float(w.mean()) * 1e3,
            "sd_ms": float(w.std(ddof=1)) * 1e3 if len(w) > 1 else 0.0,
        },
        "checks": {
            "tracking_noise_px": c.noise_px,
            "noise_sd_ms": c.delay_sd_s * 1e3,
            "fit_deviation_ms": {k: v * 1e3 for k, v in c.fit_deviation_s.items()},
            "estimator_noise_sds": c.estimator_sds,
            "window_noise_sds": c.window_sds,
            "limits_noise_sds": {"estimators": ESTIMATOR_SDS, "windows": WINDOW_SDS},
        },
        "ambiguity": {
            "repeats_every_ms": c.repeat_s * 1e3,
            "decided_by": "ambiguous" if c.rivals_s else c.branches,
            "max_latency_ms": analysis.options.max_latency_s * 1e3,
            "rivals_ms": [abs(r) * 1e3 for r in c.rivals_s],
            "note": ambiguity_note(analysis),
        },
        "regions": {k: list(v) for k, v in analysis.regions.items()},
        "regions_found": "auto" if analysis.auto_regions else "given",
        "tracker": analysis.options.tracker,
        "lost_share": analysis.lost,
        "frames": len(analysis.times),
        "decode_passes": 2 if analysis.second_pass else 1,
        "second_pass": analysis.second_pass or None,
        "truncated": analysis.truncated or None,
        "duration_s": float(analysis.times[-1] - analysis.times[0]),
        "size": [analysis.info.width, analysis.info.height],
        "stored_fps": analysis.info.stored_fps,
        "capture_fps": analysis.options.capture_fps,
        "rolling_shutter_ms": analysis.options.rolling_shutter_s * 1e3,
        "frames_per_second_analysed": analysis.frames_per_second,
        "note": "a sample-and-hold display's mean hold (about half a refresh) is part of this latency",
    }


def store_run(analysis: Analysis, store: ResultsStore) -> Run:
    """The windows as a run: t_recv = window centre, t_send = centre − latency."""
    centres = np.round(analysis.window_centres * 1e9).astype(np.int64)
    latencies = np.round(analysis.window_latencies * 1e9).astype(np.int64)
    return store_latencies(
        store,
        name=analysis.path.stem,
        technique="mtp-video",
        source=analysis.path,
        source_format="video",
        t_send_ns=centres - latencies,
        t_recv_ns=centres,
        warnings=analysis.warnings,
        mtp=summary(analysis),
        partial_reason=analysis.truncated,
    )


def plan(path: Path, options: AnalyzeOptions) -> Plan:
    """``mtp analyze``: the video analysed and stored as a run."""
    return analysis_plan("mtp analyze", path.name, lambda warn: analyze(path, options, warn), store_run)


def analyze_and_store(
    path: Path, options: AnalyzeOptions, store: ResultsStore | None, warn: Warn
) -> tuple[Analysis, Run | None] | int:
    """The analysis and its stored run (through the runner; none when ``store`` is None),
    or the runner's exit code when a stop signal ended it before anything was stored."""
    if store is None:
        return analyze(path, options, warn), None
    outcome = run_plan(plan(path, options), store, warn)
    return (outcome.results[0], outcome.runs[0]) if outcome.runs else outcome.exit_code
