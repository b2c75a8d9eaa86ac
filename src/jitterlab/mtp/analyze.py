"""``mtp analyze``: a video in, motion-to-photon latency out, stored as a run.

Decode (each frame's own timestamp) → regions (given, or from the temporal variance) →
track each object → rolling-shutter correction of each sample's time → PCA to 1-D with the
signs aligned → three estimators on the whole video → the cross-correlation estimator in
sliding windows, which become the run's samples (one per window).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.progress import ProgressBar
from jitterlab.measure.runner import Plan, analysis_plan
from jitterlab.mtp import estimate as est
from jitterlab.mtp import tracking, video
from jitterlab.mtp.storing import store_latencies
from jitterlab.store.runs import ResultsStore, Run

LOST_REFUSED, LOST_WARNED = 0.20, 0.02  # share of frames an object may be lost
DISAGREEMENT_S = 1e-3  # estimators further apart than this get a warning
FREQUENCY_TOLERANCE = 0.01


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
    window_centres: np.ndarray
    window_latencies: np.ndarray
    lost: dict[str, float]
    seconds: float
    snapshot: np.ndarray
    variance: np.ndarray | None
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def frames_per_second(self) -> float:
        return len(self.times) / self.seconds if self.seconds else 0.0


def _sample_frames(path: Path, capture_fps: float | None, expected: int) -> tuple[np.ndarray, int]:
    """Every k-th frame (at most ~MAX_SAMPLED_FRAMES), for the regions and backgrounds."""
    every = max(1, expected // tracking.MAX_SAMPLED_FRAMES)
    kept: list[np.ndarray] = []
    count = 0
    for _, luma in video.frames(path, capture_fps):
        if count % every == 0:
            kept.append(luma.copy())
            if len(kept) > 2 * tracking.MAX_SAMPLED_FRAMES:
                kept, every = kept[::2], every * 2
        count += 1
    if count < 16:
        raise JitterlabError(
            f"{path}: only {count} frames decoded; a latency needs several periods of motion"
        )
    return np.stack(kept), count


def _regions(
    stack: np.ndarray, options: AnalyzeOptions
) -> tuple[dict[str, tracking.Region], np.ndarray | None]:
    h, w = stack.shape[1:]
    given = (options.roi_physical, options.roi_rendered)
    if all(r and r != "auto" for r in given):
        return {
            "physical": tracking.parse_region(str(options.roi_physical), w, h, "--roi-physical"),
            "rendered": tracking.parse_region(str(options.roi_rendered), w, h, "--roi-rendered"),
        }, None
    if any(r and r != "auto" for r in given):
        raise JitterlabError("give both --roi-physical and --roi-rendered, or neither (auto)")
    found, variance = tracking.motion_regions(stack)
    if len(found) < 2:
        raise JitterlabError(
            "only one moving object found; the video must show the physical object and its rendered "
            "counterpart (or give --roi-physical and --roi-rendered)"
        )
    # which is which is decided by the lag later (the rendered one follows)
    return {"physical": found[0], "rendered": found[1]}, variance


def _signal(
    times: np.ndarray, track: tracking.Track, readout_s: float, height: int
) -> tuple[np.ndarray, np.ndarray]:
    """(sample times, 1-D position): a rolling shutter reads row y at t + readout·y/H."""
    t = times + readout_s * np.nan_to_num(track.y) / height if readout_s else times.copy()
    x = tracking.project(track)
    order = np.argsort(t, kind="stable")  # a row-time correction may swap neighbouring frames
    return t[order], x[order]


def analyze(path: Path, options: AnalyzeOptions, warn: Callable[[str], None] = lambda _: None) -> Analysis:
    """Analyse ``path``; :class:`JitterlabError` with one line for every unusable input."""
    if options.tracker not in ("centroid", "kcf"):
        raise JitterlabError(f"--tracker is centroid or kcf, not '{options.tracker}'")
    if options.window_s <= 0 or options.max_latency_s <= 0:
        raise JitterlabError("--window and --max-latency must be greater than 0")
    started = time.monotonic()
    info = video.probe(path)
    stack, decoded = _sample_frames(path, options.capture_fps, info.frames)
    regions, variance = _regions(stack, options)
    trackers = tracking.make_trackers(regions, stack, options.tracker)
    bar = ProgressBar(f"tracking {path.name}", decoded, unit=" frames")

    def counted() -> Iterator[tuple[float, np.ndarray]]:
        for i, item in enumerate(video.frames(path, options.capture_fps)):
            if i % 32 == 0:
                bar.update(i)
            yield item

    try:
        times, tracks = tracking.track(counted(), trackers)
    finally:
        bar.close()
    warnings: list[dict[str, str]] = []

    def warning(code: str, detail: str) -> None:
        warnings.append({"code": code, "detail": detail})
        warn(detail)

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
    (tp, xp), (tr, xr) = signals["physical"], signals["rendered"]
    f0 = est.dominant_frequency(tp, xp)
    half_period = 0.5 / f0
    reach = min(options.max_latency_s, 0.98 * half_period)
    sign = est.align_signs(tp, xp, tr, xr, reach)
    signals["rendered"] = (tr, sign * xr)
    xr = sign * xr
    estimates = est.estimate(tp, xp, tr, xr, reach)
    if variance is not None and estimates.headline_s < 0:
        # automatic regions: the rendered object is the one that follows
        regions = {"physical": regions["rendered"], "rendered": regions["physical"]}
        tracks = {"physical": tracks["rendered"], "rendered": tracks["physical"]}
        signals = {"physical": (tr, xr), "rendered": (tp, xp)}
        lost = {"physical": lost["rendered"], "rendered": lost["physical"]}
        (tp, xp), (tr, xr) = signals["physical"], signals["rendered"]
        estimates = est.estimate(tp, xp, tr, xr, reach)
    _check(estimates, f0, reach, options)
    if estimates.spread_s > DISAGREEMENT_S:
        values = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in estimates.latency_s.items())
        warning(
            "estimators-disagree", f"the estimators disagree by {estimates.spread_s * 1e3:.2f} ms ({values})"
        )
    step = options.step_s or options.window_s / 5
    if options.window_s * estimates.freq_hz < 1:
        raise JitterlabError(
            f"--window {options.window_s:g}s is shorter than one period ({1 / estimates.freq_hz:.2f} s)"
        )
    centres, latencies = est.windowed(
        tp, xp, tr, xr, options.window_s, step, estimates.headline_s, 0.24 / estimates.freq_hz
    )
    if len(centres) == 0:
        raise JitterlabError(f"the video is shorter than one --window ({options.window_s:g}s)")
    return Analysis(
        path=path,
        info=info,
        options=options,
        regions=regions,
        auto_regions=variance is not None,
        times=times,
        tracks=tracks,
        signals=signals,
        estimates=estimates,
        window_centres=centres,
        window_latencies=latencies,
        lost=lost,
        seconds=time.monotonic() - started,
        snapshot=stack[len(stack) // 2],
        variance=variance,
        warnings=warnings,
    )


def _check(estimates: est.Estimates, f0: float, reach: float, options: AnalyzeOptions) -> None:
    fp, fr = estimates.extra["freq_physical_hz"], estimates.extra["freq_rendered_hz"]
    if abs(fp - fr) > FREQUENCY_TOLERANCE * 0.5 * (fp + fr):
        raise JitterlabError(
            f"the two objects move at different frequencies ({fp:.3f} Hz and {fr:.3f} Hz, more than "
            f"{FREQUENCY_TOLERANCE:.0%} apart): they are not the same motion"
        )
    latency = estimates.headline_s
    if abs(latency) >= 0.97 * reach:
        if reach < options.max_latency_s:
            raise JitterlabError(
                f"the latency is at or above half a period ({0.5e3 / f0:.0f} ms at {f0:.2f} Hz), where a phase "
                "cannot tell it apart from a shorter one; film a slower motion"
            )
        raise JitterlabError(
            f"the latency reaches the search limit --max-latency {options.max_latency_s * 1e3:g}ms; raise it"
        )


def headline_rows(analysis: Analysis) -> list[list[str]]:
    """One row per estimator: latency, and how it differs from the headline."""
    head = analysis.estimates.headline_s
    rows = []
    for name in est.ESTIMATORS:
        value = analysis.estimates.latency_s[name]
        mark = "headline" if name == est.HEADLINE else f"{(value - head) * 1e3:+.3f} ms"
        rows.append([name, f"{value * 1e3:.3f} ms", mark])
    return rows


def summary(analysis: Analysis) -> dict[str, Any]:
    """The machine-readable result (``--json`` and the run's ``mtp`` block)."""
    e = analysis.estimates
    w = analysis.window_latencies
    return {
        "method": "video-sine",
        "video": str(analysis.path.resolve()),
        "latency_ms": e.headline_s * 1e3,
        "headline": est.HEADLINE,
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
        "regions": {k: list(v) for k, v in analysis.regions.items()},
        "regions_found": "auto" if analysis.auto_regions else "given",
        "tracker": analysis.options.tracker,
        "lost_share": analysis.lost,
        "frames": len(analysis.times),
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
    )


def plan(path: Path, options: AnalyzeOptions) -> Plan:
    """``mtp analyze``: the video analysed and stored as a run."""
    return analysis_plan("mtp analyze", path.name, lambda warn: analyze(path, options, warn), store_run)
