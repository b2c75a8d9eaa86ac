"""Per-frame motion-to-photon latency from sensor logs (seed 003 §4.3).

A stepper motor turns the tracker; the application encodes the step it rendered for in
the picture, and photodiodes read that code back when the frame lights up. The latency of
a frame is ``((motor step now − displayed step − offset) mod modulus) × step time``, with
step time ``1 / (steps per revolution × revolutions per second)`` (1.25 ms for the thesis'
400 steps at 2 rev/s) and codes sent modulo 200, so latencies alias at modulus × step time
(250 ms there): values near it are warned about.

Inputs: ``frames.csv`` (``t_us,motor_step,code[,valid]``), or the raw logs on one clock
(``motor.csv`` ``t_ns,step``; ``photo.csv`` ``t_ns,code[,valid]``; optionally
``tracker.csv`` ``t_ns,qw,qx,qy,qz``). Every frame becomes a sample with
``t_recv_ns`` = photon time and ``t_send_ns`` = photon time − latency.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jitterlab.core.csvtext import read_csv_text
from jitterlab.core.errors import JitterlabError
from jitterlab.core.fileio import atomic_write_bytes, atomic_write_json, make_dir
from jitterlab.core.tidy import counted
from jitterlab.core.warnings import Warn, from_stored
from jitterlab.measure.runner import Plan, analysis_plan
from jitterlab.mtp import quaternion as quat
from jitterlab.mtp.storing import store_latencies
from jitterlab.store.runs import ResultsStore, Run

ALIAS_WARNING_SHARE = 0.8  # warn when a latency reaches this share of the aliasing limit


@dataclass(frozen=True)
class Rig:
    steps_per_rev: int = 400
    rev_per_s: float = 2.0
    modulus: int = 200
    offset_steps: int = 0
    warmup_s: float = 0.0
    tick_wrap: int | None = None

    @property
    def step_s(self) -> float:
        return 1.0 / (self.steps_per_rev * self.rev_per_s)

    @property
    def alias_s(self) -> float:
        return self.modulus * self.step_s


# A rig whose numbers put a step under 1 ns, the aliasing limit over a day or an offset past
# exact float integers would store wrapped or zero latencies as a complete run (issue 24 item 12)
MAX_STEP_RATE = 1e9  # steps per second: one step is at least 1 ns
MAX_ALIAS_S = 86_400.0
MAX_WARMUP_S = 1e6
MAX_EXACT = 2**53  # steps and codes beyond this are not whole numbers in a float
MAX_TICKS = 2**62  # timestamps in ns (or µs times 1000) beyond this overflow int64


def check_rig(rig: Rig) -> Rig:
    """``rig`` when its numbers give meaningful latencies in ns; one line naming the first
    that does not otherwise."""
    rate = rig.steps_per_rev * rig.rev_per_s
    problems = [
        (
            not (rig.steps_per_rev >= 1 and rig.rev_per_s > 0 and math.isfinite(rate)),
            "steps per revolution and revolutions per second must be positive",
        ),
        (
            rate > MAX_STEP_RATE,
            f"{rate:g} steps/s is more than {MAX_STEP_RATE:g} (a step would be under 1 ns)",
        ),
        (not 2 <= rig.modulus <= MAX_EXACT, f"the code modulus must be 2 to {MAX_EXACT}"),
        (
            rig.alias_s > MAX_ALIAS_S,
            f"the aliasing limit {rig.alias_s:g} s is over a day (--rev-per-s too small?)",
        ),
        (abs(rig.offset_steps) > MAX_EXACT, f"the offset in steps must be at most {MAX_EXACT} in size"),
        (not 0 <= rig.warmup_s <= MAX_WARMUP_S, f"the warm-up must be 0 to {MAX_WARMUP_S:g} s"),
        (
            rig.tick_wrap is not None and not 2 <= rig.tick_wrap <= MAX_TICKS,
            f"the tick wrap must be 2 to {MAX_TICKS}",
        ),
    ]
    for bad, why in problems:
        if bad:
            raise JitterlabError(f"rig: {why}")
    return rig


def _in_range(values: np.ndarray, path: Path, column: str, limit: float) -> np.ndarray:
    """``values`` when every one is at most ``limit`` in size; one line naming the row otherwise."""
    bad = np.flatnonzero(np.abs(values) > limit)
    if len(bad):
        raise JitterlabError(
            f"{path}: row {int(bad[0]) + 2}, column {column}: {values[bad[0]]:g} is out of range (at most {limit:g})"
        )
    return values


@dataclass
class FrameLatencies:
    photon_ns: np.ndarray
    latency_ns: np.ndarray
    source: str
    source_format: str
    rig: Rig
    dropped_invalid: int = 0
    dropped_warmup: int = 0
    warnings: list[dict[str, str]] = field(default_factory=list)
    tracker: dict[str, Any] | None = None


def read_columns(
    path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """The named columns of a CSV as float arrays; one line naming the file, row and column
    for a missing column or a value that is not a number."""
    table = read_csv_text(path)
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise JitterlabError(
            f"{path}: missing column(s) {', '.join(missing)} (has: {', '.join(map(str, table.columns))})"
        )
    if len(table) == 0:
        raise JitterlabError(f"{path}: a header and no rows")
    out = {}
    for name in (*required, *(c for c in optional if c in table.columns)):
        values = pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise JitterlabError(
                f"{path}: row {int(bad[0]) + 2}, column {name}: '{table[name].iloc[bad[0]]}' is not a number"
            )
        out[name] = values
    return out


def _monotone(t: np.ndarray, path: Path, column: str, wrap: int | None) -> np.ndarray:
    """Timestamps unwrapped (a counter of ``wrap`` ticks that rolled over) and checked to
    increase strictly."""
    if wrap:
        steps = np.diff(t)
        rolled = np.concatenate(([0], np.cumsum(steps < -wrap / 2)))
        t = t + rolled * float(wrap)
    back = np.flatnonzero(np.diff(t) <= 0)
    if len(back):
        hint = "" if wrap else " (a counter that wraps? give --tick-wrap)"
        raise JitterlabError(
            f"{path}: row {int(back[0]) + 3}, column {column}: timestamps do not increase{hint}"
        )
    return t


def _latencies(motor_step: np.ndarray, code: np.ndarray, rig: Rig) -> np.ndarray:
    steps = np.mod(motor_step - code - rig.offset_steps, rig.modulus)
    return np.asarray(np.round(steps * rig.step_s * 1e9).astype(np.int64))


def _finish(
    photon_ns: np.ndarray,
    latency_ns: np.ndarray,
    valid: np.ndarray,
    source: str,
    source_format: str,
    rig: Rig,
) -> FrameLatencies:
    keep = valid.copy()
    dropped_invalid = int((~valid).sum())
    warm = photon_ns < photon_ns[0] + round(rig.warmup_s * 1e9)
    keep &= ~warm
    if not keep.any():
        raise JitterlabError(f"{source}: no frames left after the warm-up and invalid readings")
    result = FrameLatencies(
        photon_ns[keep],
        latency_ns[keep],
        source,
        source_format,
        rig,
        dropped_invalid,
        int((warm & valid).sum()),
    )
    near = result.latency_ns >= ALIAS_WARNING_SHARE * rig.alias_s * 1e9
    if near.any():
        result.warnings.append(
            {
                "code": "latency-aliasing",
                "detail": f"{counted(int(near.sum()), 'frame')} within {100 - ALIAS_WARNING_SHARE * 100:.0f} % of the "
                f"aliasing limit {rig.alias_s * 1e3:g} ms (codes modulo {rig.modulus}): a longer latency reads "
                "as a short one",
            }
        )
    return result


def from_frames_csv(path: Path, rig: Rig) -> FrameLatencies:
    check_rig(rig)
    c = read_columns(path, ("t_us", "motor_step", "code"), ("valid",))
    _in_range(c["t_us"], path, "t_us", MAX_TICKS / 1000)
    for column in ("motor_step", "code"):
        _in_range(c[column], path, column, MAX_EXACT)
    t_us = _monotone(c["t_us"], path, "t_us", rig.tick_wrap)
    _in_range(t_us, path, "t_us", MAX_TICKS / 1000)  # unwrapped
    valid = c["valid"] != 0 if "valid" in c else np.ones(len(t_us), bool)
    photon_ns = np.round(t_us * 1000).astype(np.int64)
    return _finish(
        photon_ns, _latencies(c["motor_step"], c["code"], rig), valid, str(path), "frames-csv", rig
    )


def from_raw_logs(motor: Path, photo: Path, tracker: Path | None, rig: Rig) -> FrameLatencies:
    """The motor's step at each photon time (its latest record at or before it) against the
    code the photodiodes read."""
    check_rig(rig)
    m = read_columns(motor, ("t_ns", "step"))
    p = read_columns(photo, ("t_ns", "code"), ("valid",))
    _in_range(m["step"], motor, "step", MAX_EXACT)
    _in_range(p["code"], photo, "code", MAX_EXACT)
    t_motor = _in_range(_monotone(m["t_ns"], motor, "t_ns", rig.tick_wrap), motor, "t_ns", MAX_TICKS)
    t_photo = _in_range(_monotone(p["t_ns"], photo, "t_ns", rig.tick_wrap), photo, "t_ns", MAX_TICKS)
    index = np.searchsorted(t_motor, t_photo, side="right") - 1
    valid = index >= 0
    if "valid" in p:
        valid &= p["valid"] != 0
    step_at_photon = m["step"][np.clip(index, 0, None)]
    result = _finish(
        np.round(t_photo).astype(np.int64),
        _latencies(step_at_photon, p["code"], rig),
        valid,
        str(photo),
        "raw-logs",
        rig,
    )
    if tracker is not None:
        result.tracker = tracker_check(tracker, rig)
    return result


def tracker_check(path: Path, rig: Rig) -> dict[str, Any]:
    """The tracker's angle by the thesis' method and exactly (quaternion.py), with how far
    the thesis' half angle is from the exact one and the rotation rate the tracker saw."""
    c = read_columns(path, ("t_ns", "qw", "qx", "qy", "qz"))
    t = _monotone(c["t_ns"], path, "t_ns", rig.tick_wrap)
    q = quat.normalised(np.column_stack([c[k] for k in ("qw", "qx", "qy", "qz")]), str(path))
    i0 = quat.thesis_q0(q)
    q_n = quat.multiply(q, quat.inverse(q[i0]))
    axis = quat.motor_axis(q_n)
    exact = quat.exact_angle(q_n, axis)
    half = quat.thesis_angle(q_n)
    folded = np.minimum(exact, 2 * np.pi - exact)  # what a correct unsigned angle would give
    rate = (
        float(np.polyfit((t - t[0]) / 1e9, np.unwrap(exact), 1)[0] / (2 * np.pi)) if len(t) > 2 else math.nan
    )
    return {
        "samples": len(t),
        "q0_row": i0 + 2,
        "axis": [float(v) for v in axis],
        "rev_per_s_seen": rate,
        "rev_per_s_rig": rig.rev_per_s,
        "thesis_half_angle_max_error_deg": float(np.degrees(np.max(np.abs(2 * half - folded)))),
        "thesis_uncorrected_max_error_deg": float(np.degrees(np.max(np.abs(half - folded)))),
    }


def plan(
    frames: Path | None,
    motor: Path | None,
    photo: Path | None,
    tracker: Path | None,
    rig: Rig,
    condition: str | None,
) -> Plan:
    """``mtp ingest``: per-frame latencies from frames.csv, or from the raw motor and
    photodiode logs, stored as a run."""
    if frames and (motor or photo):
        raise JitterlabError("give frames.csv, or --motor and --photo, not both")
    read: Callable[[], FrameLatencies]
    if frames:
        read = lambda: from_frames_csv(frames, rig)  # noqa: E731
    elif motor and photo:
        read = lambda: from_raw_logs(motor, photo, tracker, rig)  # noqa: E731
    else:
        raise JitterlabError("give frames.csv, or the raw logs --motor and --photo")

    def ingest(warn: Warn) -> FrameLatencies:
        result = read()
        for w in result.warnings:
            warn(from_stored(w))
        return result

    label = str(frames or motor)
    return analysis_plan(
        "mtp ingest", label, ingest, lambda result, store: store_run(result, store, condition)
    )


def store_run(result: FrameLatencies, store: ResultsStore, condition: str | None) -> Run:
    rig = result.rig
    return store_latencies(
        store,
        name=condition or Path(result.source).stem,
        technique="mtp-frame-log",
        variant=condition,
        source=Path(result.source),
        source_format=result.source_format,
        t_send_ns=result.photon_ns - result.latency_ns,
        t_recv_ns=result.photon_ns,
        warnings=result.warnings,
        mtp={
            "method": "frame-log",
            "condition": condition,
            "step_ms": rig.step_s * 1e3,
            "resolution_note": "latencies are whole motor steps",
            "steps_per_rev": rig.steps_per_rev,
            "rev_per_s": rig.rev_per_s,
            "modulus": rig.modulus,
            "aliasing_ms": rig.alias_s * 1e3,
            "offset_steps": rig.offset_steps,
            "warmup_s": rig.warmup_s,
            "dropped_invalid": result.dropped_invalid,
            "dropped_warmup": result.dropped_warmup,
            "tracker": result.tracker,
        },
    )


@dataclass(frozen=True)
class LogSpec:
    """A synthetic rig run: the frames a display at about ``fps`` shows, each with a known
    latency."""

    latency_s: float = 0.056
    duration_s: float = 30.0
    fps: float = 90.0
    drop_every: int = 0  # every n-th frame the pose is not updated ...
    drop_frames: int = 2  # ... for this many frames (the thesis: 2 every 16th)
    load: float = 0.0  # probability per frame that a load spike starts
    spike_s: float = 0.010  # mean extra latency of a load spike (exponential)
    jitter_s: float = 0.0005  # SD of the latency from frame to frame
    tracker_hz: float = 120.0
    runup_s: float = 0.0  # the motor's run-up: codes read in it say nothing (ingest --warmup drops them)
    tick_wrap: int | None = None  # frames.csv's t_us from a counter that rolls over at this value
    seed: int = 0


# A display's refresh is not its nominal rate (the Vive's "90 Hz" is 89.53 Hz) and runs on
# its own clock: drawn within this share of the nominal rate, with a random phase, so that
# photon times fall at every phase of the motor's steps (a display locked to the motor,
# 90 Hz against 800 steps/s = 80/9, samples 9 phases and biases the quantised mean).
DISPLAY_RATE_SPREAD = 0.005


def synth_latencies(spec: LogSpec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(photon times s, true latency s) for every frame."""
    rate = spec.fps * (1 + rng.uniform(-DISPLAY_RATE_SPREAD, DISPLAY_RATE_SPREAD))
    frame = 1.0 / rate
    n = int(spec.duration_s * rate)
    # the motor has turned for half a second (and its run-up) when the first frame lights up
    t = 0.5 + spec.runup_s + rng.uniform(0, frame) + np.arange(n) * frame
    latency = spec.latency_s + rng.normal(0, spec.jitter_s, n)
    if spec.drop_every:
        stale = np.arange(n) % spec.drop_every
        held = np.where((stale >= 1) & (stale <= spec.drop_frames), stale, 0)
        latency += held * frame  # a frame that kept the old pose is one frame older per repeat
    if spec.load:
        starts = np.flatnonzero(rng.random(n) < spec.load)
        for s in starts:
            extra = rng.exponential(spec.spike_s)
            length = int(rng.integers(1, 6))
            latency[s : s + length] += extra * np.linspace(1, 0.3, len(latency[s : s + length]))
    if spec.runup_s:  # frames during the run-up (it lasts at least runup_s), before the ones above
        early = np.arange(-math.ceil(spec.runup_s * rate), 0) * frame + t[0]
        t = np.concatenate((early, t))
        latency = np.concatenate((np.full(len(early), np.nan), latency))
    return t, np.clip(latency, 0, None)


def write_synth_logs(folder: Path, spec: LogSpec, rig: Rig, raw: bool) -> dict[str, Any]:
    """frames.csv (and with ``raw`` motor.csv, photo.csv, tracker.csv) plus truth.json.

    Every option round-trips: ``ingest`` with the same ``--steps-per-rev``, ``--rev-per-s``,
    ``--modulus``, ``--offset-steps``, ``--tick-wrap`` and a ``--warmup`` of the run-up
    gives the quantised truth exactly (the frames the truth counts)."""
    rng = np.random.default_rng(spec.seed)
    make_dir(folder)
    photon, latency = synth_latencies(spec, rng)
    rate = rig.steps_per_rev * rig.rev_per_s
    # one clock for every file: the motor's step times and the photon times in whole ns
    step_ns = np.round(np.arange(int(photon[-1] * rate) + 2) / rate * 1e9).astype(np.int64)
    photon_ns = np.round(photon * 1e9).astype(np.int64)
    motor_step = np.searchsorted(step_ns, photon_ns, side="right") - 1
    running = np.isfinite(latency)
    # in the run-up the code says nothing about the latency: any step the display showed
    shown_step = np.where(
        running,
        np.floor((photon - np.nan_to_num(latency)) * rate),
        rng.integers(0, rig.modulus, len(photon)),
    ).astype(np.int64)
    # ingest computes (motor − code − offset) mod modulus: the code carries the offset subtracted
    code = np.mod(shown_step - rig.offset_steps, rig.modulus)

    t_us = np.round(photon * 1e6).astype(np.int64)
    frames = pd.DataFrame(
        {
            "t_us": np.mod(t_us, spec.tick_wrap) if spec.tick_wrap else t_us,
            "motor_step": motor_step,
            "code": code,
        }
    )
    atomic_write_bytes(folder / "frames.csv", frames.to_csv(index=False).encode())
    if raw:
        motor = pd.DataFrame({"t_ns": step_ns, "step": np.arange(len(step_ns))})
        atomic_write_bytes(folder / "motor.csv", motor.to_csv(index=False).encode())
        photo = pd.DataFrame({"t_ns": photon_ns, "code": code})
        atomic_write_bytes(folder / "photo.csv", photo.to_csv(index=False).encode())
        t_tr = np.arange(0, photon[-1], 1 / spec.tracker_hz)
        tilt = math.radians(10)
        axis = np.array([0.0, math.sin(tilt), math.cos(tilt)])  # the motor stands on a slope
        base = quat.about_axis(np.array(tilt), np.array([1.0, 0.0, 0.0]))
        q = quat.multiply(quat.about_axis(2 * np.pi * rig.rev_per_s * (t_tr - 0.015), axis), base)
        q *= np.where(q[:, :1] < 0, -1.0, 1.0)  # the sign convention of an Euler-angle conversion
        tracker = pd.DataFrame(
            {
                "t_ns": np.round(t_tr * 1e9).astype(np.int64),
                "qw": q[:, 0],
                "qx": q[:, 1],
                "qy": q[:, 2],
                "qz": q[:, 3],
            }
        )
        atomic_write_bytes(folder / "tracker.csv", tracker.to_csv(index=False).encode())
    measured = (motor_step - shown_step)[running] * rig.step_s
    kept = latency[running]
    truth = {
        "frames": int(running.sum()),
        "runup_frames": int((~running).sum()),
        "display_hz": float(1 / np.median(np.diff(photon))),
        "latency_mean_ms": float(kept.mean() * 1e3),
        "latency_sd_ms": float(kept.std(ddof=1) * 1e3),
        "quantised_mean_ms": float(measured.mean() * 1e3),
        # the quantised mean estimates the true one within this (a step's rounding is uniform
        # over the frames, SD step/√12 each, as the display's clock is not the motor's)
        "quantised_se_ms": float(rig.step_s / math.sqrt(12 * len(kept)) * 1e3),
        "step_ms": rig.step_s * 1e3,
        "spec": spec.__dict__,
        "per_frame_latency_ms": [round(float(v) * 1e3, 6) for v in kept],
    }
    atomic_write_json(folder / "truth.json", truth)
    return truth


def describe_result(result: FrameLatencies) -> dict[str, Any]:
    lat = result.latency_ns / 1e6
    return {
        "frames": len(lat),
        "mean_ms": float(lat.mean()),
        "sd_ms": float(lat.std(ddof=1)) if len(lat) > 1 else 0.0,
        "min_ms": float(lat.min()),
        "max_ms": float(lat.max()),
        "step_ms": result.rig.step_s * 1e3,
        "dropped_invalid": result.dropped_invalid,
        "dropped_warmup": result.dropped_warmup,
        "tracker": result.tracker,
        "warnings": result.warnings,
    }
