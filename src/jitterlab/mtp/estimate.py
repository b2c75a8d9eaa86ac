"""The delay between two 1-D motion signals, three ways (docs/mtp.md has the formulas).

- ``separate``: the thesis' method with its gaps closed: each signal fitted on its own with
  ``x(t) = a·e^(−d(t−t0))·cos(2πf(t−t0) + φ) + c`` (amplitude and offset added to the
  printed model), latency = wrap(φ_p − φ_r) / (2π f̄).
- ``joint``: both signals fitted at once with shared f, d and φ and an explicit delay τ:
  ``x_r(t) = a_r·e^(−d(t−τ−t0))·cos(2πf(t−τ−t0) + φ) + c_r``.
- ``xcorr``: overlap-normalised cross-correlation (Pearson's r over the samples both signals
  have at that lag), the physical signal interpolated by a cubic spline and compared with
  the rendered samples as they are, the peak refined below one frame by a bounded scalar
  search. It assumes nothing about the waveform
  (harmonics, non-exponential damping), so it is the headline.

Every function is pure: arrays in (times in seconds, NaN where an object was lost), numbers
out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import interpolate, optimize

from jitterlab.core.errors import JitterlabError

HEADLINE = "xcorr"
ESTIMATORS = ("xcorr", "joint", "separate")


@dataclass(frozen=True)
class SineFit:
    amplitude: float
    decay: float
    freq_hz: float
    phase: float  # at t0
    offset: float
    t0: float
    rms_residual: float

    def __call__(self, t: np.ndarray) -> np.ndarray:
        u = t - self.t0
        return (
            self.amplitude * np.exp(-self.decay * u) * np.cos(2 * np.pi * self.freq_hz * u + self.phase)
            + self.offset
        )


@dataclass
class Estimates:
    """Latency by each estimator (seconds) with what a person checks them by."""

    latency_s: dict[str, float]
    freq_hz: float
    fits: dict[str, SineFit]
    lags_s: np.ndarray
    correlation: np.ndarray
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def headline_s(self) -> float:
        return self.latency_s[HEADLINE]

    @property
    def spread_s(self) -> float:
        values = list(self.latency_s.values())
        return max(values) - min(values)


def _valid(t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(x)
    return t[ok], x[ok]


def dominant_frequency(t: np.ndarray, x: np.ndarray) -> float:
    """The DFT peak of the signal resampled to a uniform grid (zero-padded 8×, the peak
    refined by a parabola through its three bins): the start value of the fits."""
    t, x = _valid(t, x)
    if len(t) < 8:
        raise JitterlabError("too few tracked frames to find a frequency")
    dt = float(np.median(np.diff(t)))
    grid = np.arange(t[0], t[-1], dt)
    y = np.interp(grid, t, x) - np.mean(x)
    y *= np.hanning(len(y))
    n = 8 * len(y)
    spectrum = np.abs(np.fft.rfft(y, n))
    spectrum[0] = 0
    k = int(np.argmax(spectrum[1:-1])) + 1
    a, b, c = spectrum[k - 1 : k + 2]
    shift = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c else 0.0
    return float((k + shift) / (n * dt))


def fit_damped_sine(t: np.ndarray, x: np.ndarray, f0: float) -> SineFit:
    """Least-squares fit of a·e^(−d(t−t0))·cos(2πf(t−t0)+φ)+c, t0 the centre of the span
    (so phase and frequency errors are not coupled), started from f0 and a linear fit of
    amplitude and phase at f0."""
    t, x = _valid(t, x)
    t0 = 0.5 * (t[0] + t[-1])
    u = t - t0
    w0 = 2 * np.pi * f0
    design = np.column_stack((np.cos(w0 * u), -np.sin(w0 * u), np.ones_like(u)))
    (cc, ss, c0), *_ = np.linalg.lstsq(design, x, rcond=None)
    start = np.array([math.hypot(cc, ss), 0.0, f0, math.atan2(ss, cc), c0])

    def residual(p: np.ndarray) -> np.ndarray:
        a, d, f, phi, c = p
        return np.asarray(a * np.exp(-d * u) * np.cos(2 * np.pi * f * u + phi) + c - x)

    result = optimize.least_squares(residual, start, method="lm", x_scale="jac")
    a, d, f, phi, c = result.x
    if a < 0:
        a, phi = -a, phi + np.pi
    return SineFit(
        float(a),
        float(d),
        float(f),
        float(_wrap(phi)),
        float(c),
        float(t0),
        float(np.sqrt(np.mean(result.fun**2))),
    )


def _wrap(phase: float) -> float:
    return (phase + np.pi) % (2 * np.pi) - np.pi


def separate(fit_p: SineFit, fit_r: SineFit) -> float:
    """Latency from two independent fits: the phase difference at the same t0."""
    f = 0.5 * (fit_p.freq_hz + fit_r.freq_hz)
    # each phase is at its own t0; carry the rendered one to the physical t0
    phi_r = fit_r.phase + 2 * np.pi * fit_r.freq_hz * (fit_p.t0 - fit_r.t0)
    return float(_wrap(fit_p.phase - phi_r) / (2 * np.pi * f))


def joint(
    tp: np.ndarray,
    xp: np.ndarray,
    tr: np.ndarray,
    xr: np.ndarray,
    fit_p: SineFit,
    fit_r: SineFit,
    tau0: float,
) -> tuple[float, SineFit]:
    """Latency τ from one fit of both signals with shared frequency, decay and phase."""
    tp, xp = _valid(tp, xp)
    tr, xr = _valid(tr, xr)
    sp, sr = np.std(xp) or 1.0, np.std(xr) or 1.0
    t0 = fit_p.t0

    def residual(p: np.ndarray) -> np.ndarray:
        f, d, phi, tau, ap, cp, ar, cr = p
        up, ur = tp - t0, tr - tau - t0
        mp = ap * np.exp(-d * up) * np.cos(2 * np.pi * f * up + phi) + cp
        mr = ar * np.exp(-d * ur) * np.cos(2 * np.pi * f * ur + phi) + cr
        return np.concatenate(((mp - xp) / sp, (mr - xr) / sr))

    start = np.array(
        [
            fit_p.freq_hz,
            fit_p.decay,
            fit_p.phase,
            tau0,
            fit_p.amplitude,
            fit_p.offset,
            fit_r.amplitude,
            fit_r.offset,
        ]
    )
    result = optimize.least_squares(residual, start, method="lm", x_scale="jac")
    f, d, phi, tau, ap, cp, _, _ = result.x
    rms = float(np.sqrt(np.mean(result.fun[: len(tp)] ** 2)) * sp)
    return float(tau), SineFit(float(ap), float(d), float(f), float(phi), float(cp), float(t0), rms)


class Interpolated:
    """The physical signal at any time: a cubic spline through its valid samples, refused
    (NaN) inside a gap longer than 2.5 frame intervals, where a spline would invent data.

    The physical motion is the clean reference: it is interpolated, and the rendered
    samples are compared with it as they are. A rendered picture held by the display or
    repeated by a dropped frame then counts with its own delay, so the estimate is the mean
    delay of the frames (interpolating the rendered signal instead would smear that)."""

    def __init__(self, t: np.ndarray, x: np.ndarray) -> None:
        self.t, self.x = _valid(t, x)
        self.spline = interpolate.CubicSpline(self.t, self.x)
        step = float(np.median(np.diff(self.t)))
        gaps = np.flatnonzero(np.diff(self.t) > 2.5 * step)
        self.gap_starts, self.gap_ends = self.t[gaps], self.t[gaps + 1]

    def __call__(self, q: np.ndarray) -> np.ndarray:
        y = self.spline(q)
        outside = (q < self.t[0]) | (q > self.t[-1])
        if len(self.gap_starts):
            i = np.searchsorted(self.gap_starts, q) - 1
            inside = (i >= 0) & (q < self.gap_ends[np.clip(i, 0, None)])
            outside |= inside
        y[outside] = np.nan
        return np.asarray(y)


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(b)
    if ok.sum() < 8:
        return np.nan
    a, b = a[ok] - a[ok].mean(), b[ok] - b[ok].mean()
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / denominator if denominator else np.nan


def correlation_at(tr: np.ndarray, xr: np.ndarray, physical: Interpolated, lag: float) -> float:
    """Pearson's r between the rendered samples and the physical motion ``lag`` earlier,
    over the samples where both exist (overlap-normalised)."""
    return _pearson(xr, physical(tr - lag))


def lag_grid(max_lag_s: float, step_s: float) -> np.ndarray:
    """Lags from −max_lag to +max_lag, both ends included, at most ``step_s`` apart."""
    count = max(2, math.ceil(2 * max_lag_s / step_s) + 1)
    return np.linspace(-max_lag_s, max_lag_s, count)


def scan(tr: np.ndarray, xr: np.ndarray, physical: Interpolated, lags: np.ndarray) -> np.ndarray:
    """Pearson's r at each lag (NaN where the signals do not overlap enough)."""
    tr, xr = _valid(tr, xr)
    corr = np.array([correlation_at(tr, xr, physical, lag) for lag in lags])
    if not np.isfinite(corr).any():
        raise JitterlabError("the two objects were never tracked at the same time")
    return corr


def refine(
    tr: np.ndarray, xr: np.ndarray, physical: Interpolated, low: float, high: float, sign: int = 1
) -> float:
    """The lag of the largest ``sign``·r between ``low`` and ``high`` (a bounded scalar
    search, Brent's method): below a frame interval."""
    tr, xr = _valid(tr, xr)
    result = optimize.minimize_scalar(
        lambda lag: -sign * correlation_at(tr, xr, physical, lag),
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-7},
    )
    return float(result.x)


def xcorr(
    tr: np.ndarray, xr: np.ndarray, physical: Interpolated, max_lag_s: float, step_s: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """(lag of the correlation peak, lags, correlation) with ``x_r(t) ~ x_p(t − lag)``:
    a grid at most ``step_s`` apart over ±max_lag (both ends included), then a bounded
    search around the best."""
    lags = lag_grid(max_lag_s, step_s)
    corr = scan(tr, xr, physical, lags)
    best = int(np.nanargmax(corr))
    low, high = lags[max(best - 1, 0)], lags[min(best + 1, len(lags) - 1)]
    return refine(tr, xr, physical, low, high), lags, corr


@dataclass(frozen=True)
class Peak:
    lag_s: float
    r: float  # signed: a negative peak is the motion with its axis the other way round

    @property
    def residual(self) -> float:
        """1 − r²: the share of the rendered motion's variance the delayed physical motion
        does not explain (noise, and whatever is not a pure delay)."""
        return max(1.0 - self.r * self.r, 1e-12)


def peaks(lags: np.ndarray, corr: np.ndarray) -> list[Peak]:
    """Local maxima of |r| (either sign: PCA's axis sign is arbitrary), strongest first;
    a maximum at either end of the scan is left out (the peak lies beyond it)."""
    a = np.abs(np.nan_to_num(corr, nan=0.0))
    inner = np.flatnonzero((a[1:-1] >= a[:-2]) & (a[1:-1] > a[2:])) + 1
    found = [Peak(float(lags[i]), float(corr[i])) for i in inner if a[i] > 0]
    return sorted(found, key=lambda p: -abs(p.r))


def refine_peak(tr: np.ndarray, xr: np.ndarray, physical: Interpolated, peak: Peak, step_s: float) -> Peak:
    """A grid peak moved to where |r| is largest within a grid step (between grid points r
    drops by about (2πf·step)²/2, far more than noise: peaks are compared refined)."""
    sign = 1 if peak.r > 0 else -1
    lag = refine(tr, xr, physical, peak.lag_s - step_s, peak.lag_s + step_s, sign)
    t, x = _valid(tr, xr)
    return Peak(lag, correlation_at(t, x, physical, lag))


def align_signs(tp: np.ndarray, xp: np.ndarray, tr: np.ndarray, xr: np.ndarray, max_lag_s: float) -> int:
    """+1 or −1: the sign that makes the rendered signal correlate positively with the
    physical one at the lag of strongest |correlation| within ±max_lag (PCA's axis sign is
    arbitrary; a wrong sign shows up as half a period of latency)."""
    physical = Interpolated(tp, xp)
    dt = float(np.median(np.diff(tp)))
    corr = scan(tr, xr, physical, lag_grid(max_lag_s, max(dt, max_lag_s / 200)))
    best = int(np.nanargmax(np.abs(np.nan_to_num(corr))))
    return 1 if corr[best] >= 0 else -1


def estimate(
    tp: np.ndarray,
    xp: np.ndarray,
    tr: np.ndarray,
    xr: np.ndarray,
    max_lag_s: float,
    around_s: float | None = None,
) -> Estimates:
    """All three estimators on signals whose signs are already aligned. With ``around_s``
    (a lag found by a wider search) the cross-correlation is refined within a frame of it,
    and the separate fits' phase difference, which is only known modulo a period, is put on
    the period nearest to it."""
    f0 = dominant_frequency(tp, xp)
    fit_p, fit_r = fit_damped_sine(tp, xp, f0), fit_damped_sine(tr, xr, f0)
    physical = Interpolated(tp, xp)
    dt = float(np.median(np.diff(tp)))
    if around_s is None:
        lag, lags, corr = xcorr(tr, xr, physical, max_lag_s, dt / 2)
    else:
        lags = lag_grid(max_lag_s, dt / 2)
        corr = scan(tr, xr, physical, lags)
        lag = refine(tr, xr, physical, around_s - dt, around_s + dt)
    tau, joint_fit = joint(tp, xp, tr, xr, fit_p, fit_r, lag)
    apart = separate(fit_p, fit_r)
    period = 2 / (fit_p.freq_hz + fit_r.freq_hz)
    apart += round((lag - apart) / period) * period
    return Estimates(
        latency_s={"xcorr": lag, "joint": tau, "separate": apart},
        freq_hz=joint_fit.freq_hz,
        fits={"physical": fit_p, "rendered": fit_r, "joint": joint_fit},
        lags_s=lags,
        correlation=corr,
        extra={"freq_physical_hz": fit_p.freq_hz, "freq_rendered_hz": fit_r.freq_hz},
    )


@dataclass(frozen=True)
class CopyCheck:
    """The sine fits on the rendered samples against the same fits on an exact copy of the
    physical motion delayed by the headline, at the same times."""

    deviations_s: dict[str, float]  # each fit's latency, real minus copy
    freq_hz: float  # the rendered motion's fitted frequency
    copy_freq_hz: float  # the copy's


def _fits(
    tp: np.ndarray, xp: np.ndarray, tr: np.ndarray, xr: np.ndarray, lag_s: float
) -> tuple[dict[str, float], float]:
    f0 = dominant_frequency(tp, xp)
    fit_p, fit_r = fit_damped_sine(tp, xp, f0), fit_damped_sine(tr, xr, f0)
    tau, _ = joint(tp, xp, tr, xr, fit_p, fit_r, lag_s)
    apart = separate(fit_p, fit_r)
    period = 2 / (fit_p.freq_hz + fit_r.freq_hz)
    apart += round((lag_s - apart) / period) * period
    return {"joint": tau, "separate": apart}, fit_r.freq_hz


def against_copy(tp: np.ndarray, xp: np.ndarray, tr: np.ndarray, xr: np.ndarray, lag_s: float) -> CopyCheck:
    """The fits on the rendered samples against the fits on an exact copy of the physical
    motion delayed by ``lag_s`` (the physical spline sampled at the same rendered times,
    those where it exists). The fits are biased by the waveform (harmonics, damping that is
    not exponential, a motion that starts part-way) and by which samples they see; the copy
    has the same bias, so what is left is noise, or a rendered motion that is not a delayed
    copy of the physical one: a region that takes in something else, or another motion."""
    physical = Interpolated(tp, xp)
    tr, xr = _valid(tr, xr)
    copy = physical(tr - lag_s)
    keep = np.isfinite(copy)
    real, freq = _fits(tp, xp, tr[keep], xr[keep], lag_s)
    exact, copy_freq = _fits(tp, xp, tr[keep], copy[keep], lag_s)
    return CopyCheck({k: real[k] - exact[k] for k in real}, freq, copy_freq)


def tracking_noise(t: np.ndarray, x: np.ndarray) -> float:
    """The SD of a tracked position's frame-to-frame noise: the residuals of a cubic fitted
    in time to each run of 7 neighbouring samples, scaled by their leverage
    (``r_i / sqrt(1 − h_ii)``), robustly (1.4826 · MAD). A motion that bends within 7
    frames (a fast harmonic at a low frame rate) leaks into it, so it errs on the high side."""
    t, x = _valid(t, x)
    if len(t) < 9:
        return float("nan")
    half = 3
    idx = np.arange(half, len(t) - half)
    window = idx[:, None] + np.arange(-half, half + 1)[None, :]
    u = t[window] - t[idx][:, None]
    scale = np.abs(u).max(axis=1, keepdims=True)
    u = u / np.where(scale > 0, scale, 1.0)
    design = np.stack([np.ones_like(u), u, u**2, u**3], axis=2)  # (n, 7, 4)
    pinv = np.linalg.pinv(design)  # (n, 4, 7)
    # the fitted value at the centre sample (index half) and its leverage
    hat_row = np.einsum("nk,nkj->nj", design[:, half, :], pinv)  # (n, 7)
    fitted = np.einsum("nj,nj->n", hat_row, x[window])
    leverage = hat_row[:, half]
    resid = (x[idx] - fitted) / np.sqrt(np.clip(1 - leverage, 1e-6, None))
    return float(1.4826 * np.median(np.abs(resid - np.median(resid))))


def delay_sd(
    tp: np.ndarray,
    xp: np.ndarray,
    tr: np.ndarray,
    xr: np.ndarray,
    lag_s: float,
    noise: tuple[float, float],
) -> float:
    """The SD of a delay estimated from these samples if tracking noise were all that
    disturbed them: ``σ_τ² = σ_p²/Σ ẋ_p(t_i)² + σ_r²/Σ ẋ_r(t_j)²`` (the Cramér–Rao bound
    of a time delay between two noisy copies of a known motion; each velocity from the
    physical spline, the rendered one scaled by the ratio of the amplitudes)."""
    tp, xp = _valid(tp, xp)
    tr, xr = _valid(tr, xr)
    if len(tp) < 4 or len(tr) < 4:
        return float("nan")
    spline = interpolate.CubicSpline(tp, xp)
    velocity = spline.derivative()
    inside = (tr - lag_s >= tp[0]) & (tr - lag_s <= tp[-1])
    ratio = float(np.std(xr)) / float(np.std(xp)) if np.std(xp) else 1.0
    sum_p = float(np.sum(velocity(tp) ** 2))
    sum_r = float(np.sum((ratio * velocity(tr[inside] - lag_s)) ** 2))
    if sum_p <= 0 or sum_r <= 0:
        return float("nan")
    return math.sqrt(noise[0] ** 2 / sum_p + noise[1] ** 2 / sum_r)


@dataclass
class Windows:
    """Latency over time: one xcorr estimate per window, with the SD that tracking noise
    alone would give it."""

    centres_s: np.ndarray
    latencies_s: np.ndarray
    noise_sd_s: np.ndarray


STILL = 5.0  # a window where an object moves less than this many noise SDs has no motion to match


def windowed(
    tp: np.ndarray,
    xp: np.ndarray,
    tr: np.ndarray,
    xr: np.ndarray,
    window_s: float,
    step_s: float,
    around_s: float,
    reach_s: float,
    noise: tuple[float, float],
) -> Windows:
    """The cross-correlation estimator in sliding windows of the rendered signal, each
    searched within ±reach of the whole-video latency. A window where either object is
    mostly lost, or does not move (before a motion starts), is left out."""
    physical = Interpolated(tp, xp)
    dt = float(np.median(np.diff(tr)))
    centres, values, sds = [], [], []
    start = tr[0]
    while start + window_s <= tr[-1] + dt / 2:
        inside = (tr >= start) & (tr < start + window_s)
        t_w, x_w = tr[inside], xr[inside]
        x_p = physical(t_w - around_s)
        usable = np.isfinite(x_w) & np.isfinite(x_p)
        moving = (
            usable.sum() >= 8 and min(np.std(x_w[usable]) / noise[1], np.std(x_p[usable]) / noise[0]) > STILL
        )
        if usable.sum() >= 0.8 * inside.sum() and moving:
            t_u, x_u = t_w[usable], x_w[usable]
            lag = refine(t_u, x_u, physical, around_s - reach_s, around_s + reach_s)
            in_p = (tp >= start - around_s) & (tp < start + window_s - around_s)
            centres.append(start + window_s / 2)
            values.append(lag)
            sds.append(delay_sd(tp[in_p], xp[in_p], t_u, x_u, lag, noise))
        start += step_s
    return Windows(np.array(centres), np.array(values), np.array(sds))
