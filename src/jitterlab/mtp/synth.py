"""Synthetic validation videos: a physical and a rendered object oscillating with a known
latency between them, written with a real encoder (libx264 through PyAV), with the truth
beside them as JSON.

The motion is a damped sine with an optional third harmonic,
``s(t) = e^(−d t) · (cos(2πft + φ0) + h·cos(3(2πft + φ0))) / (1 + h)``, or, with a release
time ``r``, an object held at the end of its swing until ``r`` and let go then (``φ0 = 0``,
``t`` counted from ``r``): a motion onset. The physical object shows ``s(t)``; the rendered
one shows ``s(t_k − L)`` (``L`` growing over the video with a drift), where ``t_k`` is the last display refresh at or before ``t`` (or
``t`` itself with no display rate): a sample-and-hold display adds the age of the held
picture, which is part of the latency (``display_hold_ms``). A rolling-shutter camera
samples row ``y`` at ``t + readout·y/H``. A shutter open for a share of the frame interval
integrates both objects over that time (motion blur), so a held picture that changes
during the exposure is captured as a blend of two pictures.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_json, open_output
from jitterlab.mtp.options import LAYOUTS

PTS_RATE = 90_000  # the MPEG clock: 11 µs resolution for frame timestamps
CONTAINERS = {".mkv": "matroska", ".mov": "mov", ".avi": "avi"}  # other names: MP4
NOISE_BANK = 24  # noise frames drawn once and reused in random order (noise costs more than encoding)
BACKGROUND, PANEL, PEAK = 28.0, 64.0, 225.0


@dataclasses.dataclass(frozen=True)
class SynthSpec:
    """What a synthetic video shows (times in seconds, sizes in pixels)."""

    fps: float = 60.0
    latency_s: float = 0.050
    duration_s: float = 4.0
    width: int = 320
    height: int = 240
    noise: float = 2.0
    freq_hz: float = 1.0
    decay: float = 0.05
    harmonic: float = 0.0
    vfr: float = 0.0
    rolling_shutter_s: float = 0.0
    display_hz: float | None = None
    lose: tuple[float, float] | None = None
    stored_fps: float | None = None
    rendered_freq_ratio: float = 1.0  # ≠ 1 makes a video of two different motions (a bad input)
    layout: str = "apart"  # "same-row": both objects on one row, their swings side by side
    shutter: float = 0.0  # exposure as a share of the frame interval (motion blur); 0: instantaneous
    release_s: float | None = None  # held still at the end of its swing until then (a motion onset)
    drift_s: float = 0.0  # the latency grows by this much from the first frame to the last
    bitrate_kbps: float | None = None  # a phone's way: a bitrate target instead of constant quality
    preset: str = "ultrafast"  # libx264's: slower ones use CABAC and B-frames, as phones do
    seed: int = 0

    def check(self) -> None:
        if not (self.fps > 0 and self.duration_s > 0 and self.freq_hz > 0):
            raise JitterlabError("--fps, --duration and --freq must be greater than 0")
        if self.width < 160 or self.height < 120 or self.width % 2 or self.height % 2:
            raise JitterlabError("--size must be at least 160x120 and even in both dimensions")
        if not 0 <= self.vfr < 1:
            raise JitterlabError("--vfr must be a percentage below 100")
        if self.latency_s < 0:
            raise JitterlabError("--latency must not be negative")
        if self.lose and not 0 <= self.lose[0] < self.lose[1]:
            raise JitterlabError("--lose wants START:END in seconds with START < END")
        if self.layout not in LAYOUTS:
            raise JitterlabError(f"--layout is one of {', '.join(LAYOUTS)}, not '{self.layout}'")
        if not 0 <= self.shutter <= 1:
            raise JitterlabError("--shutter is a share of the frame interval, from 0 to 1")
        if self.release_s is not None and not 0 <= self.release_s < self.duration_s:
            raise JitterlabError("--release must lie inside the video (0 to --duration)")


BLUR_SUBSAMPLES = 16  # instants averaged over an open shutter (the truth uses the same ones)


def _motion(spec: SynthSpec, t: np.ndarray, phase0: float, ratio: float = 1.0) -> np.ndarray:
    if spec.release_s is not None:  # held at the end of the swing, then let go
        t = np.maximum(t - spec.release_s, 0.0)
    w = 2 * math.pi * spec.freq_hz * ratio * t + phase0
    return np.exp(-spec.decay * t) * (np.cos(w) + spec.harmonic * np.cos(3 * w)) / (1 + spec.harmonic)


def frame_times(spec: SynthSpec, rng: np.random.Generator) -> np.ndarray:
    """Capture times of the frames, on the container's 90 kHz clock (so the truth and the
    file agree exactly); with ``vfr`` each interval is (1 ± U·vfr)/fps."""
    n = int(spec.duration_s * spec.fps)
    intervals = np.full(n, 1 / spec.fps)
    if spec.vfr:
        intervals *= 1 + rng.uniform(-spec.vfr, spec.vfr, n)
    t = np.concatenate(([0.0], np.cumsum(intervals[:-1])))
    return np.round(t * PTS_RATE) / PTS_RATE


@dataclasses.dataclass(frozen=True)
class _Object:
    centre: tuple[float, float]
    direction: tuple[float, float]
    amplitude: float
    radius: float


def _layout(spec: SynthSpec) -> tuple[_Object, _Object, tuple[int, int, int, int]]:
    """Physical object upper left, moving along a slanted line; rendered object on a display
    panel lower right, moving the mirrored way (so PCA's sign has to be fixed). With the
    ``same-row`` layout both sit on the middle row, their swings side by side, the ends a
    twentieth of the width apart (automatic regions must not take in the other's path)."""
    w, h = spec.width, spec.height
    radius = max(4.0, w / 40)
    amplitude = 0.17 * w
    angle = math.radians(12)
    if spec.layout == "same-row":
        # the ends of the two swings (object edges included) a twentieth of the width apart
        half_span = amplitude * math.cos(angle) + radius
        columns, rows = (0.5 * w - half_span - 0.025 * w, 0.5 * w + half_span + 0.025 * w), (0.5, 0.5)
    else:
        columns, rows = (0.25 * w, 0.75 * w), (0.32, 0.68)
    physical = _Object((columns[0], rows[0] * h), (math.cos(angle), math.sin(angle)), amplitude, radius)
    rendered = _Object((columns[1], rows[1] * h), (-math.cos(angle), math.sin(angle)), amplitude, radius)
    pad = radius + 6
    panel = (
        int(columns[1] - amplitude - pad),
        int(rows[1] * h - amplitude * math.sin(angle) - pad - 4),
        int(columns[1] + amplitude + pad),
        int(rows[1] * h + amplitude * math.sin(angle) + pad + 4),
    )
    return physical, rendered, panel


def _draw(image: np.ndarray, obj: _Object, positions: np.ndarray, rows: np.ndarray) -> None:
    """Draw a soft-edged disk whose displacement along its direction is ``positions[k, i]``
    on row ``rows[i]`` at the k-th instant of the exposure (one time per row: a rolling
    shutter), averaged over the instants (motion blur; one instant: a sharp picture). NaN
    positions are not drawn."""
    positions = np.atleast_2d(positions)
    cx = obj.centre[0] + obj.direction[0] * obj.amplitude * positions
    cy = obj.centre[1] + obj.direction[1] * obj.amplitude * positions
    if not np.isfinite(cx).any():
        return
    x0 = int(max(0, math.floor(np.nanmin(cx) - obj.radius - 4)))
    x1 = int(min(image.shape[1], math.ceil(np.nanmax(cx) + obj.radius + 4)))
    if x1 <= x0:
        return
    cols = np.arange(x0, x1, dtype=np.float32)
    d = np.hypot(cols[None, None, :] - cx[:, :, None], rows[None, :, None] - cy[:, :, None])
    disk = 1 / (1 + np.exp((d - obj.radius) / 0.8))
    disk[~np.isfinite(disk)] = 0
    coverage = disk.mean(axis=0)
    band = image[int(rows[0]) : int(rows[-1]) + 1, x0:x1]
    band += (PEAK - band) * coverage.astype(np.float32)


def write_video(path: Path, spec: SynthSpec) -> dict[str, Any]:
    """Write the video and ``<path>.truth.json``; returns the truth."""
    import av  # imported here: only the mtp commands need the decoder

    spec.check()
    rng = np.random.default_rng(spec.seed)
    times = frame_times(spec, rng)
    phase0 = rng.uniform(0, 2 * math.pi) if spec.release_s is None else 0.0
    display_phase = rng.uniform(0, 1 / spec.display_hz) if spec.display_hz else 0.0
    physical, rendered, panel = _layout(spec)
    w, h = spec.width, spec.height
    base = np.full((h, w), BACKGROUND, np.float32)
    base += rng.normal(0, 4, (h, w)).astype(np.float32)  # a faint static texture, for KCF
    base[panel[1] : panel[3], panel[0] : panel[2]] = PANEL
    noise = [rng.standard_normal((h, w), dtype=np.float32) * spec.noise for _ in range(NOISE_BANK)]
    buffer = np.full((h * 3 // 2, w), 128, np.uint8)  # yuv420p: grey chroma

    def band(obj: _Object) -> np.ndarray:
        reach = obj.amplitude * abs(obj.direction[1]) + obj.radius + 4
        return np.arange(max(0, int(obj.centre[1] - reach)), min(h, int(obj.centre[1] + reach) + 1))

    def shown_at(u: np.ndarray) -> np.ndarray:
        """The time of the picture on the display at ``u``: its last refresh (sample and hold)."""
        if not spec.display_hz:
            return u
        return np.floor((u - display_phase) * spec.display_hz) / spec.display_hz + display_phase

    rows_p, rows_r = band(physical), band(rendered)
    # the instants the shutter is open, from the frame's (row's) time: one, or spread over the exposure
    subsamples = BLUR_SUBSAMPLES if spec.shutter else 1
    exposure = (
        (np.arange(subsamples) + 0.5) / subsamples * spec.shutter / spec.fps if spec.shutter else np.zeros(1)
    )
    hold_ages: list[float] = []
    stored_rate = spec.stored_fps or spec.fps
    # written beside the target and renamed into place: an interrupted synth leaves no half video
    output = contextlib.ExitStack()
    muxer = CONTAINERS.get(path.suffix.lower(), "mp4")
    container = av.open(output.enter_context(open_output(path)), "w", format=muxer)
    try:
        stream = container.add_stream("libx264", rate=Fraction(stored_rate).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        if spec.bitrate_kbps:
            stream.bit_rate = int(spec.bitrate_kbps * 1000)
            stream.options = {"preset": spec.preset}
        else:
            stream.options = {"crf": "18", "preset": spec.preset}
        stream.codec_context.time_base = Fraction(1, PTS_RATE)
        for i, t in enumerate(times):
            image = base.copy()
            t_rows_p = t + spec.rolling_shutter_s * rows_p / h + exposure[:, None]
            _draw(image, physical, _motion(spec, t_rows_p, phase0), rows_p.astype(np.float32))
            t_rows_r = t + spec.rolling_shutter_s * rows_r / h + exposure[:, None]
            shown = shown_at(t_rows_r)
            centre = t + spec.rolling_shutter_s * rendered.centre[1] / h + exposure
            hold_ages.append(float(np.mean(centre - shown_at(centre))))
            latency = spec.latency_s + spec.drift_s * t / max(times[-1], 1e-9)
            positions = _motion(spec, shown - latency, phase0, spec.rendered_freq_ratio)
            if spec.lose and spec.lose[0] <= t < spec.lose[1]:
                positions = np.full_like(positions, np.nan)
            _draw(image, rendered, positions, rows_r.astype(np.float32))
            image += noise[int(rng.integers(NOISE_BANK))]
            np.clip(image, 0, 255, out=image)
            buffer[:h] = image
            frame = av.VideoFrame.from_ndarray(buffer, format="yuv420p")
            pts = i / stored_rate if spec.stored_fps else t
            frame.pts, frame.time_base = round(pts * PTS_RATE), Fraction(1, PTS_RATE)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    except BaseException as e:
        container.close()
        output.__exit__(type(e), e, e.__traceback__)  # the temporary file is removed
        raise
    container.close()
    output.close()  # renamed into place
    hold = float(np.mean(hold_ages)) if hold_ages else 0.0
    truth = {
        "video": path.name,
        "latency_ms": spec.latency_s * 1e3,
        "display_hold_ms": hold * 1e3,
        # what an exact analysis should report: the programmed delay plus the mean age of the
        # held picture (a real part of the latency; docs/mtp.md)
        "expected_ms": (spec.latency_s + spec.drift_s * float(np.mean(times)) / max(times[-1], 1e-9) + hold)
        * 1e3,
        "frames": len(times),
        "rolling_shutter_row_offset_ms": spec.rolling_shutter_s
        * (rendered.centre[1] - physical.centre[1])
        / h
        * 1e3,
        "regions": {
            "physical": _region(physical, w, h),
            "rendered": _region(rendered, w, h),
        },
        "spec": dataclasses.asdict(spec),
    }
    atomic_write_json(truth_path(path), truth)
    return truth


def _region(obj: _Object, w: int, h: int) -> list[int]:
    reach_x = obj.amplitude * abs(obj.direction[0]) + obj.radius + 6
    reach_y = obj.amplitude * abs(obj.direction[1]) + obj.radius + 6
    x0, y0 = max(0, int(obj.centre[0] - reach_x)), max(0, int(obj.centre[1] - reach_y))
    x1, y1 = min(w, int(obj.centre[0] + reach_x) + 1), min(h, int(obj.centre[1] + reach_y) + 1)
    return [x0, y0, x1 - x0, y1 - y0]


def truth_path(video: Path) -> Path:
    return video.with_name(video.name + ".truth.json")
